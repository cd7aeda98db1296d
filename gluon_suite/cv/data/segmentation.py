"""Semantic segmentation data in the layouts users hold: Pascal VOC (``SegmentationClass`` PNGs)
and a pair of folders (images, and masks with the same stem).

Items are ``(image, mask)``: ``image`` an ``mx.nd`` uint8 HxWx3 RGB array, ``mask`` an ``mx.nd``
int32 HxW array of class indices, 255 where the pixel is to be ignored (VOC's object boundaries).
A mask file is a palette PNG (the palette index is the class, as VOC stores them) or a plain 8-bit
grey PNG of indices. GluonCV's own segmentation sets turn 255 into -1 (its losses ignore -1 by
default): give such a loss ``ignore_label=255``, or map 255 to -1, and cast to float32 where a loss
wants it.

Every pair is checked when the set is built: both files exist, the mask is an 8-bit index PNG of
its image's size, and (with ``scan=True``, the default: every mask is decoded once) no pixel holds
a class >= ``num_classes`` other than 255. With ``scan=False`` (large sets) the values are checked
when an item is loaded. Each problem is a one-line ``UserError`` naming the file.
"""
import os

import mxnet as mx
import numpy as np

from ...utils.errors import UserError
from ...utils.readers import data_reader
from .detection import image_size, read_image, read_split_list

IGNORE = 255
_IMAGE_EXT = (".jpg", ".jpeg", ".png")
_MASK_MODES = ("P", "L")


def _check_num_classes(num_classes, classes):
    if not 1 <= int(num_classes) < IGNORE:
        raise UserError(f"num_classes must be in 1..254 (255 marks ignored pixels), got {num_classes}")
    if classes is not None and len(classes) != int(num_classes):
        raise UserError(f"{len(classes)} class names given for num_classes={num_classes}; give one "
                        "name per class")
    return int(num_classes), None if classes is None else tuple(str(c) for c in classes)


@data_reader("segmentation mask PNG", checks=("decodes as an image", "classes below num_classes or 255"),
             path="path")
def read_mask(path, num_classes):
    """The mask PNG at ``path`` as an int32 numpy HxW array, checked: a class >= ``num_classes``
    other than 255 is a UserError naming the file."""
    from PIL import Image
    with Image.open(path) as im:
        mask = np.array(im).astype(np.int32)
    bad = (mask >= num_classes) & (mask != IGNORE)
    if bad.any():
        raise UserError(f"mask {path} has the class {int(mask[bad].max())} in {int(bad.sum())} pixels, but "
                        f"num_classes is {num_classes} (255 = ignore); fix the mask or num_classes")
    return mask


@data_reader("segmentation mask PNG", path="mask",
             checks=("image and mask exist", "the mask is an 8-bit palette or grey image of its image's size",
                     "with scan, classes below num_classes or 255"))
def check_pair(image, mask, num_classes, scan, where):
    """UserError naming the file when ``image`` or ``mask`` is missing, the mask is not an 8-bit
    index PNG, differs in size from its image, or (``scan``) holds a class out of range."""
    from PIL import Image
    real = image_size(image, where)
    if not os.path.isfile(mask):
        raise UserError(f"{where}: mask {mask} is missing; add it or remove the image")
    try:
        with Image.open(mask) as im:
            mode, size = im.mode, im.size
    except OSError as exc:
        raise UserError(f"{where}: mask {mask} is not a readable image ({exc}); replace it") from None
    if mode not in _MASK_MODES:
        raise UserError(f"mask {mask} is a {mode} image; it must be a palette or 8-bit grey PNG of class "
                        "indices")
    if tuple(size) != tuple(real):
        raise UserError(f"mask {mask} is {size[0]}x{size[1]} but its image {image} is {real[0]}x{real[1]}; "
                        "give them the same size")
    if scan:
        read_mask(mask, num_classes)


class _PairSet(mx.gluon.data.Dataset):
    """Items ``(image, mask)`` from the lists ``self._images`` and ``self._masks``."""

    def _check(self, scan, where):
        self._scanned = bool(scan)
        for image, mask in zip(self._images, self._masks):
            check_pair(image, mask, self.num_classes, scan, where(image, mask))

    def image_path(self, i):
        """The image file of item ``i``."""
        return self._images[i]

    def mask_path(self, i):
        """The mask file of item ``i``."""
        return self._masks[i]

    def __len__(self):
        return len(self._images)

    @data_reader("segmentation mask PNG", path=lambda self, i: self._masks[i],
                 checks=("decodes as an image", "without a scan, classes below num_classes or 255"))
    def __getitem__(self, i):
        if self._scanned:
            from PIL import Image
            with Image.open(self._masks[i]) as im:
                mask = np.array(im).astype(np.int32)
        else:
            mask = read_mask(self._masks[i], self.num_classes)
        return read_image(self._images[i]), mx.nd.array(mask, dtype=np.int32)


class VOCSegmentationSet(_PairSet):
    """Pascal VOC segmentation data under ``root``: ``JPEGImages/<id>.jpg``,
    ``SegmentationClass/<id>.png`` and the ids of ``split`` in ``ImageSets/Segmentation/<split>.txt``.
    ``num_classes`` counts the background (VOC: 21); ``classes`` optional names, one per class."""

    LAYOUT = ("VOC segmentation needs root/ImageSets/Segmentation/<split>.txt, root/JPEGImages/<id>.jpg, "
              "root/SegmentationClass/<id>.png")

    def __init__(self, root, split="train", num_classes=21, classes=None, scan=True):
        self.num_classes, self.classes = _check_num_classes(num_classes, classes)
        self.root = os.path.expanduser(os.fspath(root))
        if not os.path.isdir(self.root):
            raise UserError(f"VOC folder {self.root} does not exist")
        for sub in ("JPEGImages", "SegmentationClass"):
            if not os.path.isdir(os.path.join(self.root, sub)):
                raise UserError(f"folder {os.path.join(self.root, sub)} is missing; {self.LAYOUT}")
        self.split = split
        listing = os.path.join(self.root, "ImageSets", "Segmentation", f"{split}.txt")
        self.names = tuple(read_split_list(listing, self.LAYOUT))
        self._images = [os.path.join(self.root, "JPEGImages", f"{n}.jpg") for n in self.names]
        self._masks = [os.path.join(self.root, "SegmentationClass", f"{n}.png") for n in self.names]
        self._check(scan, lambda image, mask: f"{listing}: {os.path.basename(image)[:-4]}")


class FolderSegmentationSet(_PairSet):
    """Images in ``image_dir`` (.jpg, .jpeg, .png) and their masks in ``mask_dir``: ``<stem>.png``
    for the image ``<stem>.<ext>``; items in the order of the sorted stems. ``num_classes`` counts
    every class the masks hold (background included); ``classes`` optional names."""

    def __init__(self, image_dir, mask_dir, num_classes, classes=None, scan=True):
        self.num_classes, self.classes = _check_num_classes(num_classes, classes)
        self.image_dir = os.path.expanduser(os.fspath(image_dir))
        self.mask_dir = os.path.expanduser(os.fspath(mask_dir))
        for what, folder in (("image", self.image_dir), ("mask", self.mask_dir)):
            if not os.path.isdir(folder):
                raise UserError(f"{what} folder {folder} does not exist")
        stems = {}
        for f in sorted(os.listdir(self.image_dir)):
            stem, ext = os.path.splitext(f)
            if ext.lower() in _IMAGE_EXT:
                if stem in stems:
                    raise UserError(f"{os.path.join(self.image_dir, f)} and {stems[stem]} share the stem "
                                    f"{stem!r}; keep one image per mask")
                stems[stem] = os.path.join(self.image_dir, f)
        if not stems:
            raise UserError(f"image folder {self.image_dir} holds no .jpg or .png images")
        for f in sorted(os.listdir(self.mask_dir)):
            stem, ext = os.path.splitext(f)
            if ext.lower() == ".png" and stem not in stems:
                raise UserError(f"mask {os.path.join(self.mask_dir, f)} has no image {stem}.jpg or "
                                f"{stem}.png in {self.image_dir}; add the image or remove the mask")
        self.names = tuple(sorted(stems))
        self._images = [stems[s] for s in self.names]
        self._masks = [os.path.join(self.mask_dir, f"{s}.png") for s in self.names]
        self._check(scan, lambda image, mask: f"image {image}")
