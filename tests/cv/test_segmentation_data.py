"""The VOC and folder segmentation readers: masks read back exactly from the files the writer
makes (palette and plain 8-bit index PNGs), 255 kept as ignore, GluonCV's transforms on the items,
and a one-line error naming the file for each kind of broken input."""
import os

import mxnet as mx
import numpy as np
import pytest
from PIL import Image

from gluon_suite.cv.data import (CANVAS_SEG_CLASSES, FolderSegmentationSet, VOCSegmentationSet,
                                 canvas_dataset, make_canvases, write_voc)
from gluon_suite.cv.data.canvases import voc_palette
from gluon_suite.utils import UserError


@pytest.fixture
def voc(tmp_path):
    root = tmp_path / "voc"
    write_voc(str(root), train=3, val=2, size=64)
    return root


def one_line_error(build, *names):
    """The message of the UserError ``build()`` raises: one line, naming each of ``names``."""
    with pytest.raises(UserError) as info:
        build()
    msg = str(info.value)
    assert "\n" not in msg
    for name in names:
        assert str(name) in msg, msg
    return msg


def folders(tmp_path, canvases, mode="L"):
    """``images/<name>.jpg`` and ``masks/<name>.png`` (8-bit grey or palette) for ``canvases``."""
    images, masks = tmp_path / "images", tmp_path / "masks"
    images.mkdir()
    masks.mkdir()
    for c in canvases:
        Image.fromarray(c.image).save(images / f"{c.name}.jpg", quality=95)
        m = Image.fromarray(c.mask)
        if mode == "P":
            m.putpalette(voc_palette())
        m.save(masks / f"{c.name}.png")
    return images, masks


def test_voc_masks_round_trip_exactly(voc):
    cs = make_canvases("train", 3, size=64)
    ds = VOCSegmentationSet(str(voc), "train", num_classes=11, classes=CANVAS_SEG_CLASSES)
    assert len(ds) == 3 and ds.num_classes == 11 and ds.classes == CANVAS_SEG_CLASSES
    with Image.open(ds.mask_path(0)) as im:
        assert im.mode == "P" and im.getpalette()[3:9] == [128, 0, 0, 0, 128, 0]   # VOC's colours
    for i, c in enumerate(cs):
        image, mask = ds[i]
        assert image.dtype == np.uint8 and image.shape == (64, 64, 3)
        assert mask.dtype == np.int32 and mask.shape == (64, 64)
        np.testing.assert_array_equal(mask.asnumpy(), c.mask)
        assert np.abs(image.asnumpy().astype(int) - c.image).mean() < 6
    assert VOCSegmentationSet(str(voc), "val", num_classes=11).classes is None


@pytest.mark.parametrize("mode", ["L", "P"])
def test_folder_set_reads_grey_and_palette_masks(tmp_path, mode):
    cs = make_canvases("val", 3, size=48)
    images, masks = folders(tmp_path, cs, mode)
    ds = FolderSegmentationSet(str(images), str(masks), num_classes=11)
    assert ds.names == tuple(c.name for c in cs) and len(ds) == 3
    for i, c in enumerate(cs):
        np.testing.assert_array_equal(ds[i][1].asnumpy(), c.mask)
        assert ds.image_path(i) == str(images / f"{c.name}.jpg")


def test_255_is_ignore_not_a_class(voc):
    path = voc / "SegmentationClass" / "val_00000.png"
    mask = np.array(Image.open(path))
    mask[:4] = 255
    Image.fromarray(mask).save(path)          # a plain 8-bit index PNG this time
    ds = VOCSegmentationSet(str(voc), "val", num_classes=11)
    assert (ds[0][1].asnumpy()[:4] == 255).all()


def test_gluoncv_segmentation_transforms_accept_the_items(voc):
    from gluoncv.data.transforms.presets.segmentation import test_transform
    from mxnet.gluon.data.vision import transforms
    for ds in (VOCSegmentationSet(str(voc), "train", num_classes=11), canvas_dataset("val", 2, 64).segmentation):
        image, mask = ds[0]
        assert test_transform(image, mx.cpu()).shape == (1, 3, 64, 64)
        pipeline = transforms.Compose([transforms.ToTensor(), transforms.Normalize([.485, .456, .406],
                                                                                   [.229, .224, .225])])
        loader = mx.gluon.data.DataLoader(ds.transform_first(pipeline), batch_size=2)
        x, y = next(iter(loader))
        assert x.shape == (2, 3, 64, 64) and y.shape == (2, 64, 64) and y.dtype == np.int32


def test_missing_image(voc):
    (voc / "JPEGImages" / "train_00002.jpg").unlink()
    one_line_error(lambda: VOCSegmentationSet(str(voc), num_classes=11), "train_00002.jpg", "missing")


def test_missing_mask(voc, tmp_path):
    (voc / "SegmentationClass" / "train_00001.png").unlink()
    one_line_error(lambda: VOCSegmentationSet(str(voc), num_classes=11), "train_00001.png", "missing")
    images, masks = folders(tmp_path, make_canvases("val", 2, size=40))
    os.unlink(masks / "val_00001.png")
    one_line_error(lambda: FolderSegmentationSet(str(images), str(masks), 11), "val_00001.png", "missing")


def test_mask_without_image(tmp_path):
    images, masks = folders(tmp_path, make_canvases("val", 2, size=40))
    os.unlink(images / "val_00000.jpg")
    one_line_error(lambda: FolderSegmentationSet(str(images), str(masks), 11), "val_00000.png", "has no image")


def test_mask_size_differs(voc):
    path = voc / "SegmentationClass" / "train_00000.png"
    Image.fromarray(np.zeros((64, 60), np.uint8)).save(path)
    one_line_error(lambda: VOCSegmentationSet(str(voc), num_classes=11), str(path), "60x64", "64x64")


def test_label_out_of_range(voc):
    path = voc / "SegmentationClass" / "val_00001.png"
    mask = np.array(Image.open(path))
    mask[0, :3] = 11
    Image.fromarray(mask).save(path)
    one_line_error(lambda: VOCSegmentationSet(str(voc), "val", num_classes=11), str(path), "class 11",
                   "num_classes is 11")
    lazy = VOCSegmentationSet(str(voc), "val", num_classes=11, scan=False)   # checked on load instead
    lazy[0]
    one_line_error(lambda: lazy[1], str(path), "class 11")
    assert len(VOCSegmentationSet(str(voc), "val", num_classes=12)) == 2


def test_rgb_mask_is_refused(voc):
    path = voc / "SegmentationClass" / "train_00000.png"
    Image.open(path).convert("RGB").save(path)
    one_line_error(lambda: VOCSegmentationSet(str(voc), num_classes=11), str(path), "palette or 8-bit grey")


def test_missing_or_empty_split_list_and_folders(voc, tmp_path):
    (voc / "ImageSets" / "Segmentation" / "val.txt").write_text("")
    one_line_error(lambda: VOCSegmentationSet(str(voc), "val", num_classes=11), "val.txt", "empty")
    one_line_error(lambda: VOCSegmentationSet(str(voc), "test", num_classes=11), "test.txt", "missing")
    one_line_error(lambda: VOCSegmentationSet(str(tmp_path / "nope")), "nope", "does not exist")
    one_line_error(lambda: FolderSegmentationSet(str(tmp_path / "a"), str(voc), 11), "a", "does not exist")
    one_line_error(lambda: FolderSegmentationSet(str(voc), str(voc), 11), str(voc), "holds no")
    os.rename(voc / "SegmentationClass", tmp_path / "aside")
    one_line_error(lambda: VOCSegmentationSet(str(voc), num_classes=11), "SegmentationClass", "missing")
    one_line_error(lambda: VOCSegmentationSet(str(tmp_path / "aside"), num_classes=300), "num_classes")
