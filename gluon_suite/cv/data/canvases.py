"""Digit canvases: a small detection and segmentation data set made from real pixels, with no
download. MNIST-5k digits (``mnist5k``) are pasted onto larger dark RGB canvases, in colour, at
varied scales, sometimes over one another.

One canvas is fixed by ``(split, seed, index)`` alone (``numpy.random.RandomState([seed, split,
index])``), so the same arguments give identical bytes and canvas 7 does not depend on how many
canvases were asked for. 'train' canvases take their digits only from MNIST-5k's train split,
'val' canvases only from its test split: held-out canvases of held-out digits.

How one canvas is made:

- background: a random dark tint (each channel 0-49), a mild per-channel gradient and Gaussian
  noise (sigma 6), clipped to 0-90;
- 1 to 4 digits, each cropped to its ink and resized bilinearly (PIL) to a height of 20-56 pixels
  (at most the canvas size), keeping its aspect ratio, at a random place inside the canvas, in a
  random bright colour (HSV: any hue, saturation 0.35-1, value 0.85-1), alpha-blended by the digit's
  grey level; later digits are pasted over earlier ones;
- ink: a pixel of a digit whose resized grey level is > 127; a digit's *visible* ink is its ink
  not covered by the ink of a later digit. A digit whose visible ink is under 30% of its ink is
  dropped before painting (it is neither drawn nor labelled);
- box: the extent of the visible ink, as pixel indices of the first and last ink column and row
  (inclusive, as GluonCV's VOC and COCO readers give boxes: width = xmax - xmin + 1);
- mask: 0 background, ``c + 1`` on the visible ink of a digit of class ``c``; 255 (the ignore
  value) is never used.
"""
import collections
import colorsys
import functools
import json
import os
import xml.etree.ElementTree as ET
from dataclasses import dataclass

import mxnet as mx
import numpy as np

from ...utils.errors import UserError
from ...utils.fileio import atomic_path, atomic_write
from .mnist5k import load_mnist5k

CANVAS_CLASSES = tuple(str(d) for d in range(10))            # detection: the digit classes
CANVAS_SEG_CLASSES = ("background",) + CANVAS_CLASSES        # segmentation: 11 classes
SPLITS = {"train": (0, "train"), "val": (1, "test")}         # canvas split -> (seed code, MNIST-5k split)
MIN_VISIBLE = 0.3
_INK = 127


@dataclass(frozen=True)
class Canvas:
    """One canvas. ``image`` uint8 (size, size, 3) RGB; ``boxes`` float32 (N, 4) ``[xmin, ymin,
    xmax, ymax]`` (inclusive pixel indices); ``labels`` int32 (N,) digit classes 0-9; ``mask``
    uint8 (size, size): 0 background, c+1 on the ink of class c; ``instances`` uint8 (size, size):
    0 background, k+1 on the visible ink of digit k (the k-th box); ``sources`` the index of each
    digit in ``load_mnist5k(source_split)``; ``source_split`` 'train' or 'test'; ``name`` the id
    the writers give its files (``<split>_<index>``)."""
    image: np.ndarray
    boxes: np.ndarray
    labels: np.ndarray
    mask: np.ndarray
    instances: np.ndarray
    sources: tuple
    source_split: str
    name: str


@functools.lru_cache(maxsize=2)
def _digit_pool(source_split):
    """The MNIST-5k ``source_split`` as uint8 (N, 28, 28) grey images and int32 labels."""
    images, labels = load_mnist5k(source_split)
    return np.rint(images[:, 0] * 255.0).astype(np.uint8), labels


def _check(split, count, size, seed):
    if split not in SPLITS:
        raise UserError(f"unknown canvas split {split!r}; choose 'train' or 'val'")
    if int(count) < 0:
        raise UserError(f"canvas count must be >= 0, got {count}")
    if int(size) < 32:
        raise UserError(f"canvas size must be >= 32 pixels, got {size}")
    if not 0 <= int(seed) < 2 ** 32:
        raise UserError(f"canvas seed must be in 0..2**32-1, got {seed}")


def _digit_patch(grey, height, size):
    """``grey`` (28x28 uint8) cropped to its ink and resized to ``height`` rows (aspect kept)."""
    from PIL import Image
    rows, cols = np.nonzero(grey)
    crop = grey[rows.min():rows.max() + 1, cols.min():cols.max() + 1]
    width = int(min(size, max(4, round(height * crop.shape[1] / crop.shape[0]))))
    return np.asarray(Image.fromarray(crop).resize((width, height), Image.BILINEAR))


def _draw(rs, pool, size):
    """The random choices of one canvas: background and digits (patch, place, colour, source)."""
    tint = rs.randint(0, 50, size=3).astype(np.float64)
    slope = rs.uniform(-20.0, 20.0, size=(2, 3))
    ramp = np.linspace(0.0, 1.0, size)
    bg = (tint + ramp[:, None, None] * slope[0] + ramp[None, :, None] * slope[1]
          + rs.normal(0.0, 6.0, size=(size, size, 3)))
    digits = []
    for _ in range(rs.randint(1, 5)):
        src = int(rs.randint(len(pool)))
        patch = _digit_patch(pool[src], int(rs.randint(20, min(56, size) + 1)), size)
        h, w = patch.shape
        y0, x0 = int(rs.randint(0, size - h + 1)), int(rs.randint(0, size - w + 1))
        colour = 255.0 * np.array(colorsys.hsv_to_rgb(rs.uniform(), rs.uniform(0.35, 1.0), rs.uniform(0.85, 1.0)))
        digits.append((src, patch, y0, x0, colour))
    return np.clip(bg, 0.0, 90.0), digits


def _visible(digits, size):
    """Indices of the digits kept: from the last (always whole) back to the first, a digit is kept
    when at least MIN_VISIBLE of its ink is not covered by the ink of a later kept digit."""
    covered = np.zeros((size, size), bool)
    kept = []
    for k in range(len(digits) - 1, -1, -1):
        _, patch, y0, x0, _ = digits[k]
        ink = patch > _INK
        h, w = patch.shape
        shown = ink & ~covered[y0:y0 + h, x0:x0 + w]
        if ink.any() and shown.sum() >= MIN_VISIBLE * ink.sum():
            kept.append(k)
            covered[y0:y0 + h, x0:x0 + w] |= ink
    return kept[::-1]


def make_canvas(split, index, size=128, seed=0):
    """Canvas number ``index`` of ``split`` ('train' or 'val') for ``seed`` (see the module)."""
    _check(split, 0, size, seed)
    if int(index) < 0:
        raise UserError(f"canvas index must be >= 0, got {index}")
    code, source_split = SPLITS[split]
    pool, pool_labels = _digit_pool(source_split)
    size = int(size)
    rs = np.random.RandomState([int(seed), code, int(index)])
    image, digits = _draw(rs, pool, size)
    instances = np.zeros((size, size), np.uint8)
    kept = _visible(digits, size)
    for n, k in enumerate(kept):
        _, patch, y0, x0, colour = digits[k]
        h, w = patch.shape
        alpha = (patch.astype(np.float64) / 255.0)[:, :, None]
        region = image[y0:y0 + h, x0:x0 + w]
        image[y0:y0 + h, x0:x0 + w] = region * (1.0 - alpha) + colour * alpha
        instances[y0:y0 + h, x0:x0 + w][patch > _INK] = n + 1
    sources = tuple(digits[k][0] for k in kept)
    labels = pool_labels[list(sources)].astype(np.int32)
    boxes = np.zeros((len(kept), 4), np.float32)
    for n in range(len(kept)):
        rows, cols = np.nonzero(instances == n + 1)
        boxes[n] = (cols.min(), rows.min(), cols.max(), rows.max())
    lookup = np.concatenate([[0], labels + 1]).astype(np.uint8)
    return Canvas(image=np.clip(np.rint(image), 0, 255).astype(np.uint8), boxes=boxes, labels=labels,
                  mask=lookup[instances], instances=instances, sources=sources,
                  source_split=source_split, name=f"{split}_{int(index):05d}")


def make_canvases(split, count, size=128, seed=0):
    """Canvases ``0 .. count-1`` of ``split`` ('train' or 'val'): a list of ``Canvas``."""
    _check(split, count, size, seed)
    return [make_canvas(split, i, size, seed) for i in range(int(count))]


def detection_label(canvas):
    """The canvas's boxes as a GluonCV detection label: float32 (N, 6) ``[xmin, ymin, xmax, ymax,
    class, difficult=0]``."""
    n = len(canvas.labels)
    return np.concatenate([canvas.boxes, canvas.labels[:, None].astype(np.float32),
                           np.zeros((n, 1), np.float32)], axis=1).astype(np.float32)


class CanvasDetection(mx.gluon.data.Dataset):
    """Canvases in memory as a detection data set: items ``(image, label)`` as the file readers
    (``VOCDetectionSet``, ``COCODetectionSet``) give them: ``mx.nd`` uint8 HxWx3 RGB and a float32
    numpy (N, 6) ``[xmin, ymin, xmax, ymax, class, difficult]``."""

    def __init__(self, canvases):
        self.canvases = list(canvases)
        self.classes = CANVAS_CLASSES
        self.names = tuple(c.name for c in self.canvases)

    def __len__(self):
        return len(self.canvases)

    def __getitem__(self, i):
        c = self.canvases[i]
        return mx.nd.array(c.image, dtype=np.uint8), detection_label(c)


class CanvasSegmentation(mx.gluon.data.Dataset):
    """Canvases in memory as a segmentation data set: items ``(image, mask)`` as the file readers
    (``VOCSegmentationSet``, ``FolderSegmentationSet``) give them: ``mx.nd`` uint8 HxWx3 RGB and
    ``mx.nd`` int32 HxW (0 background, c+1 for digit c; 255 would be ignore, never used here)."""

    def __init__(self, canvases):
        self.canvases = list(canvases)
        self.classes = CANVAS_SEG_CLASSES
        self.num_classes = len(CANVAS_SEG_CLASSES)
        self.names = tuple(c.name for c in self.canvases)

    def __len__(self):
        return len(self.canvases)

    def __getitem__(self, i):
        c = self.canvases[i]
        return mx.nd.array(c.image, dtype=np.uint8), mx.nd.array(c.mask, dtype=np.int32)


CanvasDatasets = collections.namedtuple("CanvasDatasets", ["detection", "segmentation"])


def canvas_dataset(split, count, size=128, seed=0):
    """``CanvasDatasets(detection, segmentation)``: the same ``count`` canvases of ``split`` as a
    ``CanvasDetection`` and a ``CanvasSegmentation`` (unpack it: ``det, seg = canvas_dataset(...)``)."""
    canvases = make_canvases(split, count, size, seed)
    return CanvasDatasets(CanvasDetection(canvases), CanvasSegmentation(canvases))


# ---- the files of the real layouts ----------------------------------------------------------

def voc_palette():
    """VOC's colour map (768 values: R, G, B of indices 0-255): the bits of an index, three at a
    time, go to the high bits of R, G and B in turn (index 1 is dark red, 255 cream)."""
    palette = []
    for index in range(256):
        rgb, c = [0, 0, 0], index
        for bit in range(7, -1, -1):
            for ch in range(3):
                rgb[ch] |= ((c >> ch) & 1) << bit
            c >>= 3
        palette.extend(rgb)
    return palette


def _save_image(path, array, **options):
    from PIL import Image
    with atomic_path(path) as tmp:
        im = Image.fromarray(array)
        if options.pop("palette", None):
            im.putpalette(voc_palette())
        im.save(tmp, **options)


def _voc_xml(canvas):
    """The VOC annotation of ``canvas``: 1-based inclusive pixel coordinates (box + 1)."""
    h, w = canvas.mask.shape
    root = ET.Element("annotation")
    ET.SubElement(root, "folder").text = "JPEGImages"
    ET.SubElement(root, "filename").text = f"{canvas.name}.jpg"
    size = ET.SubElement(root, "size")
    for tag, value in (("width", w), ("height", h), ("depth", 3)):
        ET.SubElement(size, tag).text = str(value)
    ET.SubElement(root, "segmented").text = "1"
    for box, label in zip(canvas.boxes, canvas.labels):
        obj = ET.SubElement(root, "object")
        ET.SubElement(obj, "name").text = CANVAS_CLASSES[label]
        ET.SubElement(obj, "pose").text = "Unspecified"
        ET.SubElement(obj, "truncated").text = "0"
        ET.SubElement(obj, "difficult").text = "0"
        bndbox = ET.SubElement(obj, "bndbox")
        for tag, value in zip(("xmin", "ymin", "xmax", "ymax"), box):
            ET.SubElement(bndbox, tag).text = str(int(value) + 1)
    ET.indent(root)
    return ET.tostring(root, encoding="unicode") + "\n"


def write_voc(root, train=40, val=20, size=128, seed=0):
    """Pascal VOC files of ``train`` + ``val`` canvases under ``root``: ``JPEGImages/<id>.jpg``
    (quality 95), ``Annotations/<id>.xml``, ``SegmentationClass/<id>.png`` (palette PNG, index =
    class: 0 background, c+1 digit c), ``ImageSets/Main`` and ``ImageSets/Segmentation``
    ``train.txt``/``val.txt``; ids ``train_00000``, ``val_00000``, ... Read back with
    ``VOCDetectionSet(root, split, classes=CANVAS_CLASSES)`` and ``VOCSegmentationSet(root, split,
    num_classes=11)``. Returns ``root``."""
    for split, count in (("train", train), ("val", val)):
        canvases = make_canvases(split, count, size, seed)
        for c in canvases:
            _save_image(os.path.join(root, "JPEGImages", f"{c.name}.jpg"), c.image, format="JPEG",
                        quality=95, subsampling=0)
            atomic_write(os.path.join(root, "Annotations", f"{c.name}.xml"), _voc_xml(c))
            _save_image(os.path.join(root, "SegmentationClass", f"{c.name}.png"), c.mask, format="PNG",
                        palette=True)
        listing = "".join(f"{c.name}\n" for c in canvases)
        for task in ("Main", "Segmentation"):
            atomic_write(os.path.join(root, "ImageSets", task, f"{split}.txt"), listing)
    return root


def _rle(binary):
    """COCO's uncompressed RLE of a boolean HxW mask: run lengths in column-major order, zeros first."""
    flat = binary.T.ravel().astype(np.int8)
    bounds = np.concatenate([[0], np.flatnonzero(np.diff(flat)) + 1, [flat.size]])
    runs = np.diff(bounds).tolist()
    return {"size": list(binary.shape), "counts": ([0] if flat[0] else []) + runs}


def write_coco(root, train=40, val=20, size=128, seed=0):
    """COCO files of ``train`` + ``val`` canvases under ``root``: ``annotations/instances_train.json``
    and ``instances_val.json``, images ``train/<id>.jpg`` and ``val/<id>.jpg`` (quality 95).
    Categories 1-10 named "0"-"9"; image ids and annotation ids count from 1 in each file; each
    annotation has ``bbox [x, y, w, h]`` (w = xmax - xmin + 1), ``area`` (visible ink pixels),
    ``iscrowd`` 0 and its visible ink as an uncompressed RLE ``segmentation``. Read back with
    ``COCODetectionSet(root/annotations/instances_<split>.json)``. Returns ``root``."""
    categories = [{"id": d + 1, "name": name, "supercategory": "digit"} for d, name in enumerate(CANVAS_CLASSES)]
    for split, count in (("train", train), ("val", val)):
        images, annotations = [], []
        for image_id, c in enumerate(make_canvases(split, count, size, seed), start=1):
            _save_image(os.path.join(root, split, f"{c.name}.jpg"), c.image, format="JPEG", quality=95,
                        subsampling=0)
            images.append({"id": image_id, "file_name": f"{c.name}.jpg", "width": int(c.image.shape[1]),
                           "height": int(c.image.shape[0])})
            for k, (box, label) in enumerate(zip(c.boxes, c.labels)):
                ink = c.instances == k + 1
                x0, y0, x1, y1 = (int(v) for v in box)
                annotations.append({"id": len(annotations) + 1, "image_id": image_id,
                                    "category_id": int(label) + 1,
                                    "bbox": [x0, y0, x1 - x0 + 1, y1 - y0 + 1], "area": int(ink.sum()),
                                    "iscrowd": 0, "segmentation": _rle(ink)})
        atomic_write(os.path.join(root, "annotations", f"instances_{split}.json"),
                     json.dumps({"images": images, "annotations": annotations, "categories": categories}) + "\n")
    return root
