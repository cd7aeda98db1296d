"""ImageNet-style data at a local path: RecordIO (``.rec`` + ``.idx``) and image folders (one
sub-folder per class), through Gluon's own readers, with their layouts checked up front."""
import os

from ...utils.errors import UserError
from ...utils.readers import data_reader

_IMAGE_EXT = (".jpg", ".jpeg", ".png")   # what ImageFolderDataset reads; it skips others with a warning


@data_reader("RecordIO file and index", path="path",
             checks=("the .rec and .idx files exist", "each index line is '<key> <offset>'", "records decode"))
def record_dataset(path, idx=None):
    """``gluon.data.vision.ImageRecordDataset`` for ``path`` (a .rec file) with its index ``idx``
    (default: the .idx beside it). An index line that is not a key and an offset (two whole numbers
    and a tab between) is a UserError naming the index and the line."""
    from mxnet import recordio
    from mxnet.gluon.data.vision import ImageRecordDataset
    rec = os.path.expanduser(path)
    if not rec.endswith(".rec") or not os.path.isfile(rec):
        raise UserError(f"RecordIO file {path} does not exist (give the .rec path; the .idx goes beside it)")
    index = os.path.expanduser(idx) if idx else rec[:-4] + ".idx"
    if not os.path.isfile(index):
        raise UserError(f"index {index} is missing; make it with im2rec (MXNet's tools/im2rec.py)")
    _check_index(index)
    if idx is None:
        return ImageRecordDataset(rec)
    data = ImageRecordDataset.__new__(ImageRecordDataset)   # the same reader, the index named
    data.idx_file, data.filename, data._flag, data._transform = index, rec, 1, None
    data._record = recordio.MXIndexedRecordIO(index, rec, "r")
    return data


def _check_index(index):
    """Every line of ``index`` is a key, a tab and an offset, whole numbers (what MXNet's reader parses)."""
    with open(index, encoding="utf-8") as f:
        for no, line in enumerate(f, start=1):
            parts = line.strip().split("\t")
            if len(parts) < 2 or not all(p.strip().isdigit() for p in parts[:2]):
                raise UserError(f"{index}:{no}: {line.strip()[:40]!r} is not a key, a tab and an offset; "
                                "make the index again with im2rec (MXNet's tools/im2rec.py)")


@data_reader("RecordIO file", path=lambda data: data.filename,
             checks=("every record has a readable header",))
def record_labels(data):
    """The first label of every record of a ``record_dataset``, read from the record headers
    (no image is decoded)."""
    from mxnet import recordio
    out = []
    for key in data._record.keys:
        header, _ = recordio.unpack(data._record.read_idx(key))
        label = header.label
        out.append(float(label if isinstance(label, (int, float)) else label[0]))
    return out


_MAGIC = (b"\xff\xd8\xff", b"\x89PNG\r\n\x1a\n")   # JPEG, PNG (OpenCV reads either whatever the name)


def check_image_file(path):
    """A one-line UserError when ``path`` is empty or does not start like a JPEG or PNG file (8
    bytes read; a file that starts right but is corrupt further in is caught when it is decoded)."""
    try:
        with open(path, "rb") as f:
            head = f.read(8)
    except OSError as exc:
        raise UserError(f"image file {path} cannot be read ({exc.strerror}); fix its permissions or remove it") from None
    if not head:
        raise UserError(f"image file {path} is empty (0 bytes); remove it or replace it with the image")
    if not head.startswith(_MAGIC):
        raise UserError(f"image file {path} is not a JPEG or PNG image (it starts with {head[:4]!r}); remove it "
                        "or replace it with the image")


def _decode_error(exc):
    """The reason in MXNet's multi-line decoding error (its last non-empty line)."""
    lines = [ln.strip() for ln in str(exc).splitlines() if ln.strip()]
    return lines[-1] if lines else type(exc).__name__


@data_reader("image folder of one sub-folder per class", path="root",
             checks=("one sub-folder per class, each with images", "every image starts like a JPEG or PNG file",
                     "an image decodes when it is read"))
def folder_dataset(root):
    """``gluon.data.vision.ImageFolderDataset`` for ``root``, after checking it has one sub-folder
    per class holding images and that every image file starts like a JPEG or PNG file
    (``check_image_file``). An image that cannot be decoded when it is read is a one-line
    UserError naming the file, not OpenCV's traceback."""
    import mxnet as mx
    from mxnet.gluon.data.vision import ImageFolderDataset

    class CheckedImageFolder(ImageFolderDataset):
        def __getitem__(self, idx):
            try:
                return super().__getitem__(idx)
            except mx.base.MXNetError as exc:
                raise UserError(f"image file {self.items[idx][0]} cannot be decoded ({_decode_error(exc)}); "
                                "remove it or replace it with the image") from None
    root = os.path.expanduser(root)
    if not os.path.isdir(root):
        raise UserError(f"image folder {root} does not exist")
    classes = sorted(d for d in os.listdir(root) if os.path.isdir(os.path.join(root, d)))
    loose = [f for f in os.listdir(root) if f.lower().endswith(_IMAGE_EXT)]
    if not classes or loose:
        raise UserError(f"image folder {root} must hold one sub-folder per class with the images inside "
                        f"(root/<class>/<image>.jpg); found {len(classes)} sub-folders and {len(loose)} "
                        "loose images")
    empty = [c for c in classes if not any(f.lower().endswith(_IMAGE_EXT)
                                           for f in os.listdir(os.path.join(root, c)))]
    if empty:
        raise UserError(f"class folder(s) {', '.join(empty[:5])} in {root} hold no images")
    data = CheckedImageFolder(root)
    for path, _ in data.items:
        check_image_file(path)
    return data
