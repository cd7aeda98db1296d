"""Object detection data in the layouts users hold: Pascal VOC (XML per image) and COCO (one JSON of
instances). Items are exactly what GluonCV's ``VOCDetection`` gives, so GluonCV's detection
transforms (``SSDDefaultTrainTransform``, ``YOLO3DefaultTrainTransform``, ...) apply unchanged:
``(image, label)``, ``image`` an ``mx.nd`` uint8 HxWx3 RGB array, ``label`` a float32 numpy array
(N, 6) ``[xmin, ymin, xmax, ymax, class_index, difficult]``.

Box convention (GluonCV's): pixel indices of the first and last column/row of the object, 0-based
and inclusive. A VOC file's coordinates are 1-based, so 1 is subtracted from all four (as
GluonCV's ``VOCDetection`` does); a COCO ``bbox [x, y, w, h]`` becomes ``[x, y, x + w - 1, y + h -
1]`` (GluonCV's ``bbox_xywh_to_xyxy``).

Every record is parsed and checked when the set is built (image sizes from the image file headers,
without decoding); a bad one is a ``UserError`` naming the file and the record. Images are decoded
in ``__getitem__``.
"""
import json
import os
import xml.etree.ElementTree as ET

import mxnet as mx
import numpy as np

from ...utils.errors import UserError
from ...utils.readers import data_reader

_COCO_EDGE = 1.0     # a COCO box may pass the image edge by this much (float rounding); it is clipped


@data_reader("image file header", checks=("the file exists", "a header PIL can read"), path="path",
             fix="replace the file")
def image_size(path, what):
    """``(width, height)`` of the image file ``path`` from its header (UserError naming ``what``
    when it is missing or not an image)."""
    from PIL import Image
    if not os.path.isfile(path):
        raise UserError(f"{what}: image file {path} is missing; add it or remove the record")
    try:
        with Image.open(path) as im:
            return im.size
    except OSError as exc:
        raise UserError(f"{what}: {path} is not a readable image ({exc}); replace the file") from None


@data_reader("JPEG or PNG image", checks=("decodes as an image",), path="path",
             fix="remove the image or replace it")
def read_image(path):
    """The image at ``path`` as an ``mx.nd`` uint8 HxWx3 RGB array."""
    return mx.image.imread(path, flag=1, to_rgb=True)


@data_reader("split list of image ids", checks=("the file exists", "utf-8 text", "at least one id"),
             path="path")
def read_split_list(path, layout):
    """The ids listed one per line in ``path`` (UserError when it is missing or empty)."""
    if not os.path.isfile(path):
        raise UserError(f"split list {path} is missing; {layout}")
    with open(path, encoding="utf-8") as f:
        ids = [line.split()[0] for line in f if line.strip()]
    if not ids:
        raise UserError(f"split list {path} is empty; list one image id per line")
    return ids


def check_box(box, width, height, where):
    """UserError naming ``where`` when ``box`` (inclusive xyxy) is outside a ``width`` x ``height``
    image (GluonCV's bounds: 0 <= xmin, xmax <= width) or has no area."""
    xmin, ymin, xmax, ymax = box
    if xmax <= xmin or ymax <= ymin:
        raise UserError(f"{where}: box {list(box)} has zero or negative area (need xmin < xmax and "
                        "ymin < ymax); fix or remove it")
    if xmin < 0 or ymin < 0 or xmax > width or ymax > height:
        raise UserError(f"{where}: box {list(box)} is outside the {width}x{height} image; fix or "
                        "remove it")


def _labels(rows):
    return np.array(rows, np.float32).reshape(-1, 6)


class VOCDetectionSet(mx.gluon.data.Dataset):
    """Pascal VOC detection data under ``root``: ``Annotations/<id>.xml``, ``JPEGImages/<id>.jpg``
    and the ids of ``split`` in ``ImageSets/Main/<split>.txt``.

    ``classes``: the class names in index order; None takes the sorted names found in the split's
    annotations (give the train set's ``.classes`` to a val set, so that indices agree). An object
    whose name is not in ``classes`` is an error (names are compared after stripping spaces).
    ``difficult`` defaults to 0 when missing. The annotated ``<size>`` must match the image file.
    """

    LAYOUT = "VOC needs root/ImageSets/Main/<split>.txt, root/Annotations/<id>.xml, root/JPEGImages/<id>.jpg"

    @data_reader("Pascal VOC detection folder", path="root",
                 checks=("every listed id has its annotation and image", "well-formed XML", "<size> is the image's",
                         "boxes are numbers inside the image with an area", "class names among the classes"))
    def __init__(self, root, split="train", classes=None):
        self.root = os.path.expanduser(os.fspath(root))
        if not os.path.isdir(self.root):
            raise UserError(f"VOC folder {self.root} does not exist")
        for sub in ("Annotations", "JPEGImages"):
            if not os.path.isdir(os.path.join(self.root, sub)):
                raise UserError(f"folder {os.path.join(self.root, sub)} is missing; {self.LAYOUT}")
        self.split = split
        self.names = tuple(read_split_list(os.path.join(self.root, "ImageSets", "Main", f"{split}.txt"),
                                           self.LAYOUT))
        records = [self._parse(name) for name in self.names]
        found = sorted({obj[0] for rec in records for obj in rec})
        self.classes = tuple(found) if classes is None else tuple(str(c) for c in classes)
        index = {c: i for i, c in enumerate(self.classes)}
        self._labels = []
        for name, rec in zip(self.names, records):
            rows = []
            for k, (cls, box, difficult) in enumerate(rec):
                if cls not in index:
                    raise UserError(f"{self._xml(name)}: object {k + 1} has the class {cls!r}, which is "
                                    f"not one of the {len(self.classes)} classes given; add it to classes "
                                    "or remove the object")
                rows.append([*box, index[cls], difficult])
            self._labels.append(_labels(rows))

    def _xml(self, name):
        return os.path.join(self.root, "Annotations", f"{name}.xml")

    def image_path(self, i):
        """The image file of item ``i``."""
        return os.path.join(self.root, "JPEGImages", f"{self.names[i]}.jpg")

    def _parse(self, name):
        """``[(class name, box, difficult)]`` of image ``name``, checked against its image file."""
        xml = self._xml(name)
        if not os.path.isfile(xml):
            raise UserError(f"annotation {xml} is missing (listed in ImageSets/Main/{self.split}.txt); "
                            "add it or remove the id from the list")
        try:
            root = ET.parse(xml).getroot()
            real = image_size(os.path.join(self.root, "JPEGImages", f"{name}.jpg"), xml)
            size = root.find("size")
            width, height = ((int(float(size.find("width").text)), int(float(size.find("height").text)))
                             if size is not None else real)
            if (width, height) != tuple(real):
                raise UserError(f"{xml}: <size> says {width}x{height} but the image is "
                                f"{real[0]}x{real[1]}; fix <size>")
            objects = []
            for k, obj in enumerate(root.iter("object")):
                where = f"{xml}: object {k + 1}"
                cls = (obj.findtext("name") or "").strip()
                if not cls:
                    raise UserError(f"{where} has no <name>; add the class name")
                try:
                    difficult = int(obj.findtext("difficult") or 0)
                except ValueError:
                    difficult = 0
                bb = obj.find("bndbox")
                if bb is None:
                    raise UserError(f"{where} has no <bndbox>; add xmin, ymin, xmax, ymax")
                box = tuple(float(bb.find(t).text) - 1.0 for t in ("xmin", "ymin", "xmax", "ymax"))
                check_box(box, width, height, where)
                objects.append((cls, box, difficult))
        except ET.ParseError as exc:
            raise UserError(f"{xml} is not valid XML ({exc}); fix or replace it") from None
        except UserError:
            raise
        except (AttributeError, TypeError, ValueError) as exc:
            raise UserError(f"{xml}: a <size> or <bndbox> field is missing or not a number ({exc}); "
                            "fix the file") from None
        return objects

    def __len__(self):
        return len(self.names)

    def __getitem__(self, i):
        return read_image(self.image_path(i)), self._labels[i].copy()


def default_image_dir(annotation_file):
    """COCO's layout: ``<root>/annotations/instances_<split>.json`` holds the boxes of the images in
    ``<root>/<split>/``, so the image folder is ``<split>`` beside the annotation file's folder."""
    base = os.path.basename(annotation_file)
    if not (base.startswith("instances_") and base.endswith(".json")):
        raise UserError(f"cannot tell the image folder of {annotation_file} (not named "
                        "instances_<split>.json); pass image_dir")
    split = base[len("instances_"):-len(".json")]
    return os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(annotation_file))), split)


class COCODetectionSet(mx.gluon.data.Dataset):
    """COCO detection data: ``annotation_file`` an ``instances_*.json`` (``images``, ``annotations``
    with ``bbox [x, y, w, h]``, ``categories``), the images in ``image_dir`` (default: see
    ``default_image_dir``: ``annotations/instances_val2017.json`` -> ``val2017/``).

    ``classes``: names in index order; None takes the categories' names ordered by category id.
    With ``classes`` given, each must name a category and every annotation's category must be
    among them. Crowd annotations (``iscrowd`` 1) are checked but left out of the labels (as GluonCV
    does by default); COCO evaluation counts them as regions to ignore. Every image is kept, also
    one with no box (its label is (0, 6)). A box may cross the image edge by up to 1 pixel (float
    rounding; it is clipped); more is an error.

    For COCO evaluation: ``annotation_file``, ``image_id(i)`` (the COCO id of item ``i``) and
    ``category_id(class_index)``.
    """

    @data_reader("COCO instances JSON", path="annotation_file",
                 checks=("utf-8 JSON with images, annotations and categories", "image ids unique, sizes the files'",
                         "annotations name known images and categories", "bbox 4 numbers inside the image"))
    def __init__(self, annotation_file, image_dir=None, classes=None):
        self.annotation_file = os.path.expanduser(os.fspath(annotation_file))
        if not os.path.isfile(self.annotation_file):
            raise UserError(f"COCO annotation file {self.annotation_file} does not exist")
        self.image_dir = (default_image_dir(self.annotation_file) if image_dir is None
                          else os.path.expanduser(os.fspath(image_dir)))
        if not os.path.isdir(self.image_dir):
            raise UserError(f"COCO image folder {self.image_dir} does not exist; pass image_dir")
        data = self._load()
        cats = self._categories(data)
        if classes is None:
            self.classes = tuple(cats[c] for c in sorted(cats))
        else:
            self.classes = tuple(str(c) for c in classes)
            missing = [c for c in self.classes if c not in cats.values()]
            if missing:
                raise UserError(f"{self.annotation_file}: class {missing[0]!r} is not a category of the "
                                f"file (it has {len(cats)}); check the class names")
        by_name = {name: cid for cid, name in cats.items()}
        self._category_ids = tuple(by_name[c] for c in self.classes)
        self._images = self._image_records(data)
        index = {cid: self._category_ids.index(cid) for cid in self._category_ids}
        rows = {img["id"]: [] for img in self._images}
        sizes = {img["id"]: (img["width"], img["height"]) for img in self._images}
        for k, ann in enumerate(data["annotations"]):
            box, cid, crowd = self._annotation(ann, k, sizes, cats)
            if cid not in index:
                raise UserError(f"{self.annotation_file}: annotation {ann.get('id', k)} has category "
                                f"{cid} ({cats[cid]!r}), which is not among the classes given; add it "
                                "to classes or remove the annotation")
            if not crowd:
                rows[ann["image_id"]].append([*box, index[cid], 0])
        self.names = tuple(img["file_name"] for img in self._images)
        self._labels = [_labels(rows[img["id"]]) for img in self._images]

    def _load(self):
        try:
            with open(self.annotation_file, encoding="utf-8") as f:
                data = json.load(f)
        except (ValueError, UnicodeDecodeError) as exc:
            raise UserError(f"{self.annotation_file} is not valid JSON ({exc}); fix or replace it") from None
        if not isinstance(data, dict) or not all(isinstance(data.get(k), list)
                                                 for k in ("images", "annotations", "categories")):
            raise UserError(f"{self.annotation_file} is not a COCO instances file (needs the lists "
                            "images, annotations and categories)")
        if not data["images"]:
            raise UserError(f"{self.annotation_file} lists no images; add them under \"images\"")
        return data

    def _categories(self, data):
        cats = {}
        for k, cat in enumerate(data["categories"]):
            if not isinstance(cat, dict) or not isinstance(cat.get("id"), int) or "name" not in cat:
                raise UserError(f"{self.annotation_file}: category {k + 1} needs an integer id and a name")
            cats[cat["id"]] = str(cat["name"])
        return cats

    def _image_records(self, data):
        images, seen = [], set()
        for k, img in enumerate(data["images"]):
            if not isinstance(img, dict) or not all(key in img for key in ("id", "file_name", "width", "height")):
                raise UserError(f"{self.annotation_file}: image record {k + 1} needs id, file_name, width "
                                "and height")
            where = f"{self.annotation_file}: image {img['id']}"
            if img["id"] in seen:
                raise UserError(f"{where} is listed twice; give each image its own id")
            seen.add(img["id"])
            real = image_size(os.path.join(self.image_dir, img["file_name"]), where)
            if (img["width"], img["height"]) != tuple(real):
                raise UserError(f"{where} ({img['file_name']}) says {img['width']}x{img['height']} but "
                                f"the image is {real[0]}x{real[1]}; fix width and height")
            images.append(img)
        return images

    def _annotation(self, ann, k, sizes, cats):
        """``(xyxy box, category id, iscrowd)`` of annotation ``ann`` (the ``k``-th), checked."""
        where = f"{self.annotation_file}: annotation {ann.get('id', k + 1) if isinstance(ann, dict) else k + 1}"
        if not isinstance(ann, dict) or not all(key in ann for key in ("image_id", "category_id", "bbox")):
            raise UserError(f"{where} needs image_id, category_id and bbox")
        if ann["image_id"] not in sizes:
            raise UserError(f"{where} is for image {ann['image_id']}, which is not in images; add the image "
                            "or remove the annotation")
        if ann["category_id"] not in cats:
            raise UserError(f"{where} has the unknown category id {ann['category_id']}; add it to "
                            "categories or fix the id")
        bbox = ann["bbox"]
        if not (isinstance(bbox, list) and len(bbox) == 4
                and all(isinstance(v, (int, float)) for v in bbox)):
            raise UserError(f"{where}: bbox {bbox!r} must be 4 numbers [x, y, w, h]")
        x, y, w, h = (float(v) for v in bbox)
        width, height = sizes[ann["image_id"]]
        if w <= 0 or h <= 0:
            raise UserError(f"{where}: bbox {bbox} has zero or negative area; fix or remove it")
        if x < -_COCO_EDGE or y < -_COCO_EDGE or x + w > width + _COCO_EDGE or y + h > height + _COCO_EDGE:
            raise UserError(f"{where}: bbox {bbox} is outside the {width}x{height} image "
                            f"{ann['image_id']}; fix or remove it")
        box = (max(x, 0.0), max(y, 0.0), min(x + max(w - 1.0, 0.0), width - 1.0),
               min(y + max(h - 1.0, 0.0), height - 1.0))
        return box, ann["category_id"], bool(ann.get("iscrowd", 0))

    def image_id(self, i):
        """The COCO image id of item ``i``."""
        return self._images[i]["id"]

    def category_id(self, class_index):
        """The COCO category id of class ``class_index``."""
        return self._category_ids[int(class_index)]

    def image_path(self, i):
        """The image file of item ``i``."""
        return os.path.join(self.image_dir, self._images[i]["file_name"])

    def __len__(self):
        return len(self._images)

    def __getitem__(self, i):
        return read_image(self.image_path(i)), self._labels[i].copy()
