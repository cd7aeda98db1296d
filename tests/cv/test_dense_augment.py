"""``--augment upright``: the detection and segmentation recipes' training transforms without
GluonCV's random mirror (docs/cv.md, "Augmentation"), checked against GluonCV's own transforms."""
import random

import mxnet as mx
import numpy as np

from gluon_suite.cv.detection_families import upright_ssd_transform
from gluon_suite.cv.segmentation import _Augment


def test_upright_ssd_transform_is_gluoncvs_without_the_mirror():
    # with the same random state, GluonCV's transform draws its mirror last: its output is ours,
    # mirrored or not, and its targets are ours when it did not mirror
    from gluoncv.data.transforms.presets.ssd import SSDDefaultTrainTransform
    # anchors in GluonCV's centre format (cx, cy, w, h): a 4x4 grid of centres, sides 16 and 32
    grid = [(cx, cy, side, side) for cy in (8, 24, 40, 56) for cx in (8, 24, 40, 56) for side in (16, 32)]
    a = mx.nd.array(np.array(grid, dtype=np.float32)[np.newaxis])
    rng = np.random.RandomState(0)
    img = mx.nd.array(rng.randint(0, 255, size=(64, 80, 3)), dtype="uint8")
    label = np.array([[5, 8, 30, 40, 3], [40, 20, 70, 60, 7]], dtype=np.float32)
    ours, theirs = upright_ssd_transform(64, a), SSDDefaultTrainTransform(64, 64, a)
    kinds = set()
    for seed in range(24):
        np.random.seed(seed)
        random.seed(seed)
        x, c, b = ours(img, label.copy())
        np.random.seed(seed)
        random.seed(seed)
        gx, gc, gb = theirs(img, label.copy())
        if np.array_equal(gx.asnumpy(), x.asnumpy()):
            kinds.add("same")
            np.testing.assert_array_equal(gc.asnumpy(), c.asnumpy())
            np.testing.assert_array_equal(gb.asnumpy(), b.asnumpy())
        else:
            np.testing.assert_array_equal(gx.asnumpy(), x.asnumpy()[:, :, ::-1])
            kinds.add("mirrored")
    assert kinds == {"same", "mirrored"}


def test_upright_augmentation_never_mirrors():
    # an image whose left half is bright and right half dark, with the mask marking the left half:
    # GluonCV's mirror would swap them; the upright transform keeps bright pixels labelled 1
    img = np.zeros((64, 64, 3), np.uint8)
    img[:, :32] = 250
    mask = np.zeros((64, 64), np.int32)
    mask[:, :32] = 1
    aug = _Augment(64, 64, train=True, mirror=False)
    random.seed(0)
    for _ in range(30):
        x, m = aug(mx.nd.array(img, dtype="uint8"), mx.nd.array(mask, dtype="int32"))
        x, m = x.asnumpy(), m.asnumpy()
        bright = x[0] > 1.0          # normalised red channel of a 250-level pixel is about 2.2
        labelled = m == 1
        # a rescale blurs the seam by a pixel or two: the two regions agree almost everywhere
        assert (bright == labelled).mean() > 0.95
        if labelled.any():
            cols = np.nonzero(labelled.any(axis=0))[0]
            assert cols.min() == 0   # the labelled half stays on the left
    mirrored = _Augment(64, 64, train=True, mirror=True)
    random.seed(0)
    lefts = [np.nonzero((mirrored(mx.nd.array(img, dtype="uint8"), mx.nd.array(mask, dtype="int32"))[1].asnumpy()
                         == 1).any(axis=0))[0] for _ in range(30)]
    assert any(c.size and c.min() > 0 for c in lefts)   # GluonCV's transform does mirror some
