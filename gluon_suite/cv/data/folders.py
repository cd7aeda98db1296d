"""ImageNet-style data at a local path: RecordIO (``.rec`` + ``.idx``) and image folders (one
sub-folder per class), through Gluon's own readers, with their layouts checked up front."""
import os

from ...utils.errors import UserError

_IMAGE_EXT = (".jpg", ".jpeg", ".png")   # what ImageFolderDataset reads; it skips others with a warning


def record_dataset(path, idx=None):
    """``gluon.data.vision.ImageRecordDataset`` for ``path`` (a .rec file) with its index ``idx``
    (default: the .idx beside it)."""
    from mxnet import recordio
    from mxnet.gluon.data.vision import ImageRecordDataset
    rec = os.path.expanduser(path)
    if not rec.endswith(".rec") or not os.path.isfile(rec):
        raise UserError(f"RecordIO file {path} does not exist (give the .rec path; the .idx goes beside it)")
    index = os.path.expanduser(idx) if idx else rec[:-4] + ".idx"
    if not os.path.isfile(index):
        raise UserError(f"index {index} is missing; make it with im2rec (MXNet's tools/im2rec.py)")
    if idx is None:
        return ImageRecordDataset(rec)
    data = ImageRecordDataset.__new__(ImageRecordDataset)   # the same reader, the index named
    data.idx_file, data.filename, data._flag, data._transform = index, rec, 1, None
    data._record = recordio.MXIndexedRecordIO(index, rec, "r")
    return data


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


def folder_dataset(root):
    """``gluon.data.vision.ImageFolderDataset`` for ``root``, after checking it has one sub-folder
    per class holding images."""
    from mxnet.gluon.data.vision import ImageFolderDataset
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
    return ImageFolderDataset(root)
