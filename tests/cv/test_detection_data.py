"""Digit canvases (the generator) and the VOC and COCO detection readers: determinism, held-out
digits, boxes against the ink, round trips through the files the writers make, the samples command,
and a one-line error naming the file for each kind of broken input."""
import argparse
import json
import os
import xml.etree.ElementTree as ET

import numpy as np
import pytest

from gluon_suite.cv.data import (CANVAS_CLASSES, COCODetectionSet, VOCDetectionSet, VOCSegmentationSet,
                                 canvas_dataset, load_mnist5k, make_canvases, write_coco, write_voc)
from gluon_suite.cv.data import canvases as canvases_module
from gluon_suite.cv.data.canvases import detection_label
from gluon_suite.utils import UserError


@pytest.fixture(scope="module")
def written(tmp_path_factory):
    """VOC and COCO files of 6 train and 4 val canvases, and the val canvases themselves."""
    root = tmp_path_factory.mktemp("canvases")
    write_voc(str(root / "voc"), train=6, val=4)
    write_coco(str(root / "coco"), train=6, val=4)
    return root, make_canvases("val", 4)


def one_line_error(build, *names):
    """The message of the UserError ``build()`` raises: one line, naming each of ``names``."""
    with pytest.raises(UserError) as info:
        build()
    msg = str(info.value)
    assert "\n" not in msg
    for name in names:
        assert str(name) in msg, msg
    return msg


def test_canvases_are_fixed_by_split_seed_and_index():
    a, b = make_canvases("train", 5), make_canvases("train", 5)
    for x, y in zip(a, b):
        for field in ("image", "boxes", "labels", "mask", "instances"):
            assert getattr(x, field).tobytes() == getattr(y, field).tobytes()
    # canvas i does not depend on how many were asked for
    assert [c.image.tobytes() for c in make_canvases("train", 3)] == [c.image.tobytes() for c in a[:3]]
    assert a[0].image.tobytes() != make_canvases("train", 1, seed=1)[0].image.tobytes()
    assert a[0].image.tobytes() != make_canvases("val", 1)[0].image.tobytes()
    assert [c.name for c in a] == [f"train_{i:05d}" for i in range(5)]


def test_canvas_fields_and_colour():
    cs = make_canvases("train", 40)
    counts = [len(c.labels) for c in cs]
    assert min(counts) >= 1 and max(counts) <= 4 and len(set(counts)) > 2
    heights = []
    for c in cs:
        assert c.image.dtype == np.uint8 and c.image.shape == (128, 128, 3)
        assert c.boxes.dtype == np.float32 and c.boxes.shape == (len(c.labels), 4)
        assert c.labels.dtype == np.int32 and c.mask.dtype == np.uint8 and c.mask.shape == (128, 128)
        assert set(np.unique(c.mask)) <= set(range(11)) and not (c.mask == 255).any()
        # the mask is the class (+1) of the digit each visible ink pixel belongs to
        lookup = np.concatenate([[0], c.labels + 1])
        np.testing.assert_array_equal(c.mask, lookup[c.instances])
        # the labels are the MNIST-5k labels of the digits pasted
        np.testing.assert_array_equal(c.labels, load_mnist5k(c.source_split)[1][list(c.sources)])
        ink = c.image[c.mask > 0].astype(int)
        assert (ink.max(axis=1) - ink.min(axis=1)).mean() > 30        # coloured digits, not grey
        assert c.image[c.mask == 0].mean() < 60                        # on a dark background
        heights.extend(c.boxes[:, 3] - c.boxes[:, 1] + 1)
    assert min(heights) < 28 and max(heights) > 45 and max(heights) <= 56


def test_boxes_are_the_extent_of_the_visible_ink():
    for c in make_canvases("val", 20):
        for k, box in enumerate(c.boxes):
            rows, cols = np.nonzero(c.instances == k + 1)
            assert list(box) == [cols.min(), rows.min(), cols.max(), rows.max()]
        # from the mask alone, for a class that occurs once on the canvas
        for label, box in zip(c.labels, c.boxes):
            if (c.labels == label).sum() == 1:
                rows, cols = np.nonzero(c.mask == label + 1)
                assert list(box) == [cols.min(), rows.min(), cols.max(), rows.max()]


def test_val_canvases_use_only_held_out_digits(monkeypatch):
    before = make_canvases("val", 10)
    assert {c.source_split for c in before} == {"test"}
    assert {c.source_split for c in make_canvases("train", 3)} == {"train"}
    real = canvases_module.load_mnist5k

    def test_split_only(split="train", size=28):
        assert split == "test", "a val canvas read the MNIST-5k train split"
        return real(split, size)
    canvases_module._digit_pool.cache_clear()
    monkeypatch.setattr(canvases_module, "load_mnist5k", test_split_only)
    try:
        after = make_canvases("val", 10)
    finally:
        canvases_module._digit_pool.cache_clear()
    assert [c.image.tobytes() for c in after] == [c.image.tobytes() for c in before]


def test_voc_round_trip(written):
    root, cs = written
    ds = VOCDetectionSet(str(root / "voc"), "val", classes=CANVAS_CLASSES)
    assert len(ds) == 4 and ds.classes == CANVAS_CLASSES and ds.names == tuple(c.name for c in cs)
    for i, c in enumerate(cs):
        image, label = ds[i]
        assert image.dtype == np.uint8 and image.shape == (128, 128, 3)
        assert label.dtype == np.float32
        np.testing.assert_array_equal(label, detection_label(c))
        assert np.abs(image.asnumpy().astype(int) - c.image).mean() < 6
        assert os.path.isfile(ds.image_path(i))
    found = VOCDetectionSet(str(root / "voc"), "train")
    assert found.classes == tuple(sorted(found.classes)) and set(found.classes) <= set(CANVAS_CLASSES)


def test_coco_round_trip(written):
    from pycocotools import mask as mask_utils
    root, cs = written
    ann = root / "coco" / "annotations" / "instances_val.json"
    ds = COCODetectionSet(str(ann))
    assert ds.classes == CANVAS_CLASSES and ds.annotation_file == str(ann) and len(ds) == 4
    assert [ds.category_id(i) for i in range(10)] == list(range(1, 11))
    data = json.loads(ann.read_text())
    for i, c in enumerate(cs):
        image, label = ds[i]
        np.testing.assert_array_equal(label, detection_label(c))
        assert np.abs(image.asnumpy().astype(int) - c.image).mean() < 6
        assert ds.image_path(i) == str(root / "coco" / "val" / f"{c.name}.jpg")
        anns = [a for a in data["annotations"] if a["image_id"] == ds.image_id(i)]
        for k, a in enumerate(anns):
            rle = mask_utils.frPyObjects(a["segmentation"], 128, 128)
            np.testing.assert_array_equal(mask_utils.decode(rle), c.instances == k + 1)
            assert a["area"] == (c.instances == k + 1).sum() and a["iscrowd"] == 0


def test_in_memory_sets_give_the_readers_items(written):
    root, cs = written
    det, seg = canvas_dataset("val", 4)
    voc = VOCDetectionSet(str(root / "voc"), "val", classes=CANVAS_CLASSES)
    vseg = VOCSegmentationSet(str(root / "voc"), "val", num_classes=11)
    assert len(det) == len(seg) == 4 and det.classes == CANVAS_CLASSES and seg.num_classes == 11
    for i in range(4):
        (image, label), (vimage, vlabel) = det[i], voc[i]
        assert image.dtype == vimage.dtype and image.shape == vimage.shape
        np.testing.assert_array_equal(image.asnumpy(), cs[i].image)
        assert label.dtype == vlabel.dtype and label.shape == vlabel.shape
        np.testing.assert_array_equal(label, vlabel)
        (simage, mask), (_, vmask) = seg[i], vseg[i]
        assert mask.dtype == vmask.dtype == np.int32
        np.testing.assert_array_equal(mask.asnumpy(), vmask.asnumpy())


def test_gluoncv_detection_transforms_accept_the_items(written):
    from gluoncv.data.transforms.presets.ssd import SSDDefaultTrainTransform, SSDDefaultValTransform
    root, _ = written
    for ds in (VOCDetectionSet(str(root / "voc"), "val", classes=CANVAS_CLASSES),
               COCODetectionSet(str(root / "coco" / "annotations" / "instances_val.json")),
               canvas_dataset("val", 2).detection):
        image, bbox = ds.transform(SSDDefaultValTransform(96, 96))[0]
        assert image.shape == (3, 96, 96) and bbox.shape[1] == 6
        image, bbox = ds.transform(SSDDefaultTrainTransform(96, 96))[1]
        assert image.shape == (3, 96, 96)


def test_the_samples_command_writes_both_layouts(tmp_path, capsys):
    from gluon_suite.cli.samples import _cmd_samples
    assert _cmd_samples(argparse.Namespace(out=str(tmp_path))) == 0
    printed = capsys.readouterr().out
    assert "detection_voc" in printed and "detection_coco" in printed
    squad = next(line for line in printed.splitlines() if line.startswith(str(tmp_path / "squad") + ":"))
    assert sorted(os.listdir(tmp_path / "squad")) == \
        ["README.txt", "dev-v1.1.json", "dev-v2.0.json", "train-v1.1.json", "train-v2.0.json"]
    assert all(name in squad for name in os.listdir(tmp_path / "squad")), squad   # the listing names every file
    voc = VOCDetectionSet(str(tmp_path / "detection_voc"), "train", classes=CANVAS_CLASSES)
    coco = COCODetectionSet(str(tmp_path / "detection_coco" / "annotations" / "instances_val.json"))
    seg = VOCSegmentationSet(str(tmp_path / "detection_voc"), "val", num_classes=11)
    assert (len(voc), len(coco), len(seg)) == (40, 20, 20)
    np.testing.assert_array_equal(coco[3][1], detection_label(make_canvases("val", 4)[3]))


# ---- broken VOC files -----------------------------------------------------------------------

@pytest.fixture
def voc(tmp_path):
    root = tmp_path / "voc"
    write_voc(str(root), train=2, val=1, size=64)
    return root


def edit_xml(path, change):
    tree = ET.parse(path)
    change(tree.getroot())
    tree.write(path)


def test_voc_missing_image(voc):
    (voc / "JPEGImages" / "train_00001.jpg").unlink()
    one_line_error(lambda: VOCDetectionSet(str(voc)), "train_00001.xml", "train_00001.jpg", "missing")


def test_voc_missing_annotation(voc):
    (voc / "Annotations" / "train_00000.xml").unlink()
    one_line_error(lambda: VOCDetectionSet(str(voc)), "train_00000.xml", "missing")


def test_voc_box_outside_the_image(voc):
    xml = voc / "Annotations" / "train_00000.xml"
    edit_xml(xml, lambda r: setattr(r.find("object/bndbox/xmax"), "text", "70"))
    one_line_error(lambda: VOCDetectionSet(str(voc)), str(xml), "object 1", "outside the 64x64 image")


def test_voc_box_of_zero_area(voc):
    xml = voc / "Annotations" / "train_00000.xml"
    edit_xml(xml, lambda r: setattr(r.find("object/bndbox/ymax"), "text", r.find("object/bndbox/ymin").text))
    one_line_error(lambda: VOCDetectionSet(str(voc)), str(xml), "object 1", "zero or negative area")


def test_voc_unknown_class(voc):
    xml = voc / "Annotations" / "train_00001.xml"
    edit_xml(xml, lambda r: setattr(r.find("object/name"), "text", "cat"))
    one_line_error(lambda: VOCDetectionSet(str(voc), classes=CANVAS_CLASSES), str(xml), "'cat'")
    assert "cat" in VOCDetectionSet(str(voc)).classes       # found names when none are given


def test_voc_size_differs_from_the_image(voc):
    xml = voc / "Annotations" / "val_00000.xml"
    edit_xml(xml, lambda r: setattr(r.find("size/width"), "text", "80"))
    one_line_error(lambda: VOCDetectionSet(str(voc), "val"), str(xml), "80x64", "64x64")


def test_voc_empty_or_missing_split_list_and_folder(voc, tmp_path):
    (voc / "ImageSets" / "Main" / "val.txt").write_text("\n")
    one_line_error(lambda: VOCDetectionSet(str(voc), "val"), "val.txt", "empty")
    one_line_error(lambda: VOCDetectionSet(str(voc), "test"), "test.txt", "missing")
    one_line_error(lambda: VOCDetectionSet(str(tmp_path / "nope")), "nope", "does not exist")
    os.rename(voc / "Annotations", tmp_path / "Annotations")
    one_line_error(lambda: VOCDetectionSet(str(voc)), "Annotations", "missing")


# ---- broken COCO files ----------------------------------------------------------------------

@pytest.fixture
def coco(tmp_path):
    root = tmp_path / "coco"
    write_coco(str(root), train=2, val=1, size=64)
    return root / "annotations" / "instances_train.json"


def edit_json(path, change):
    data = json.loads(path.read_text())
    change(data)
    path.write_text(json.dumps(data))


def test_coco_missing_image(coco):
    (coco.parent.parent / "train" / "train_00001.jpg").unlink()
    one_line_error(lambda: COCODetectionSet(str(coco)), str(coco), "image 2", "train_00001.jpg", "missing")


def test_coco_box_outside_the_image(coco):
    edit_json(coco, lambda d: d["annotations"][0].update(bbox=[50, 10, 20, 10]))
    one_line_error(lambda: COCODetectionSet(str(coco)), str(coco), "annotation 1", "outside the 64x64 image")


def test_coco_box_of_zero_area(coco):
    edit_json(coco, lambda d: d["annotations"][0].update(bbox=[5, 5, 0, 10]))
    one_line_error(lambda: COCODetectionSet(str(coco)), str(coco), "annotation 1", "zero or negative area")


def test_coco_unknown_category_id(coco):
    edit_json(coco, lambda d: d["annotations"][-1].update(category_id=99))
    one_line_error(lambda: COCODetectionSet(str(coco)), str(coco), "unknown category id 99")


def test_coco_category_not_among_the_classes(coco):
    labels = {a["category_id"] for a in json.loads(coco.read_text())["annotations"]}
    keep = [n for n in CANVAS_CLASSES if int(n) + 1 not in labels]
    one_line_error(lambda: COCODetectionSet(str(coco), classes=keep), str(coco), "not among the classes given")
    one_line_error(lambda: COCODetectionSet(str(coco), classes=["cat"]), str(coco), "'cat'")


def test_coco_size_differs_from_the_image(coco):
    edit_json(coco, lambda d: d["images"][0].update(height=50))
    one_line_error(lambda: COCODetectionSet(str(coco)), str(coco), "image 1", "64x50")


def test_coco_missing_files_and_folders(coco, tmp_path):
    one_line_error(lambda: COCODetectionSet(str(tmp_path / "instances_x.json")), "instances_x.json",
                   "does not exist")
    other = tmp_path / "elsewhere" / "boxes.json"
    other.parent.mkdir()
    other.write_text(coco.read_text())
    one_line_error(lambda: COCODetectionSet(str(other)), "boxes.json", "pass image_dir")
    assert len(COCODetectionSet(str(other), image_dir=str(coco.parent.parent / "train"))) == 2
    os.rename(coco.parent.parent / "train", tmp_path / "aside")
    one_line_error(lambda: COCODetectionSet(str(coco)), os.path.join("coco", "train"), "does not exist")
    edit_json(coco, lambda d: d.update(images=[]))
    os.rename(tmp_path / "aside", coco.parent.parent / "train")
    one_line_error(lambda: COCODetectionSet(str(coco)), str(coco), "lists no images")


def test_coco_crowd_boxes_are_left_out_of_the_labels(coco):
    full = COCODetectionSet(str(coco))
    edit_json(coco, lambda d: d["annotations"][0].update(iscrowd=1))
    crowd = COCODetectionSet(str(coco))
    np.testing.assert_array_equal(crowd[0][1], full[0][1][1:])
