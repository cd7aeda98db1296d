"""The segmentation recipe's pixel loss and its median-frequency class weights, against float64
NumPy computations written here from the definitions in docs/cv.md ("Segmentation")."""
import mxnet as mx
import numpy as np
import pytest

from gluon_suite.cv.segmentation import median_frequency_weights, pixel_loss


def _reference_loss(scores, target, weights=None, ignore=255):
    """Per image: sum over valid pixels of w[label] * -log softmax[label], over the sum of w."""
    out = []
    for s, t in zip(scores.astype(np.float64), target):
        num = den = 0.0
        for i in range(t.shape[0]):
            for j in range(t.shape[1]):
                lab = int(t[i, j])
                if lab == ignore:
                    continue
                z = s[:, i, j]
                nll = -(z[lab] - z.max() - np.log(np.exp(z - z.max()).sum()))
                w = 1.0 if weights is None else float(weights[lab])
                num += w * nll
                den += w
        out.append(num / den if den > 0 else 0.0)
    return np.array(out)


@pytest.mark.parametrize("ctx", [mx.cpu(0), mx.cpu(1)])
@pytest.mark.parametrize("weighted", [False, True])
def test_pixel_loss_is_the_weighted_mean_cross_entropy(ctx, weighted):
    rng = np.random.RandomState(3)
    scores = rng.randn(3, 4, 5, 6).astype(np.float32) * 2
    target = rng.randint(0, 4, size=(3, 5, 6)).astype(np.float32)
    target[0, :2, :3] = 255          # some ignored pixels
    target[2] = 255                  # an image without a valid pixel: loss 0
    weights = np.array([0.05, 1.0, 2.5, 0.7]) if weighted else None
    got = pixel_loss(mx.nd.array(scores, ctx=ctx), mx.nd.array(target, ctx=ctx),
                     weights=None if weights is None else mx.nd.array(weights, ctx=ctx)).asnumpy()
    np.testing.assert_allclose(got, _reference_loss(scores, target, weights), rtol=1e-5, atol=1e-6)
    assert got[2] == 0


def test_median_frequency_weights_by_hand():
    # two 2x4 masks, classes 0..3 (class 3 never appears), 255 ignored
    a = np.array([[0, 0, 0, 0], [0, 0, 1, 1]])
    b = np.array([[0, 0, 2, 255], [255, 0, 0, 0]])
    # class 0: 6 + 5 = 11 pixels in masks of 8 + 6 valid pixels -> 11/14
    # class 1: 2 pixels, in mask a only (8 pixels) -> 2/8; class 2: 1 pixel in mask b (6) -> 1/6
    freq = np.array([11 / 14, 2 / 8, 1 / 6])
    med = np.median(freq)            # 2/8
    want = np.array([med / freq[0], med / freq[1], med / freq[2], 1.0])
    got = median_frequency_weights([a, mx.nd.array(b, dtype="int32")], 4)
    np.testing.assert_allclose(got, want, rtol=1e-12)
    assert got[1] == 1.0             # the median class weighs 1


def test_prior_correction_sets_the_offset_and_trains_on_the_uncorrected_scores():
    """--prior-correction: the zoo FPN's score_offset becomes -log(w) of the training masks, its
    scores are the head's plus that offset, and the recipe's loss on (scores - offset) equals the
    weighted loss of a network without the offset (the same weights)."""
    from types import SimpleNamespace

    from gluon_suite.cv.segmentation import class_weighting
    from gluon_suite.distributed import LocalCommunicator
    from gluon_suite.model_zoo import get_model
    masks = [np.array([[0, 0, 0, 1], [0, 0, 2, 2]]), np.array([[0, 1, 1, 1], [0, 0, 0, 0]])]
    train = [(None, m) for m in masks]
    # by hand: class 0 10 of 16, class 1 4 of 16, class 2 2 of 8 pixels; median 0.25
    want = np.array([0.25 / (10 / 16), 1.0, 1.0])
    net = get_model("fpn_resnet18_canvas", classes=3)
    net.initialize()
    x = mx.nd.array(np.random.RandomState(0).rand(2, 3, 32, 32))
    before = net(x).asnumpy()
    cfg = SimpleNamespace(class_weight="median-frequency", prior_correction=True)
    w, offset, inside = class_weighting(cfg, net, train, 3, [mx.cpu()], LocalCommunicator(), lambda *_: None)
    assert inside
    np.testing.assert_allclose(w.asnumpy(), want, rtol=1e-6)
    np.testing.assert_allclose(net.score_offset.data().asnumpy(), -np.log(want), rtol=1e-6)
    after = net(x).asnumpy()
    np.testing.assert_allclose(after - before, np.broadcast_to(-np.log(want)[None, :, None, None], after.shape),
                               atol=1e-5)
    cfg_off = SimpleNamespace(class_weight="median-frequency", prior_correction=False)
    fresh = get_model("fpn_resnet18_canvas", classes=3)
    fresh.initialize()
    _, none_offset, none_inside = class_weighting(cfg_off, fresh, train, 3, [mx.cpu()], LocalCommunicator(),
                                                  lambda *_: None)
    assert none_offset is None and not none_inside
    assert np.all(fresh.score_offset.data().asnumpy() == 0)
