"""Compressors against NumPy: what C(v) is for each, and the shared options."""
import mxnet as mx
import numpy as np
import pytest

from gluon_suite.distributed.compression import COMPRESSORS, make_compressor


def c_of(comp, v, key=0, step=0):
    """C(v) as a dense NumPy array, through the payload's own add_to."""
    x = mx.nd.array(v)
    pl = comp.compress(x, key, step)
    out = mx.nd.zeros(x.shape)
    pl.add_to(out, pl.tensors, 1.0)
    return out.asnumpy(), pl


def test_none_and_fp16():
    v = np.random.RandomState(0).normal(size=(5, 7)).astype(np.float32)
    c, pl = c_of(make_compressor("none"), v)
    assert np.array_equal(c, v) and pl.nbytes == v.nbytes
    c, pl = c_of(make_compressor("fp16"), v)
    np.testing.assert_allclose(c, v.astype(np.float16).astype(np.float32))
    assert pl.nbytes * 2 == v.nbytes and pl.summable


def test_zero_sends_nothing():
    c, pl = c_of(make_compressor("zero"), np.ones((4, 4), np.float32))
    assert not c.any() and pl.nbytes == 0


def test_grbs_keeps_exactly_one_block_slab():
    comp = make_compressor("grbs", ratio=8, seed=3)
    v = np.arange(16 * 12, dtype=np.float32).reshape(16, 12) + 1
    seen = 0
    for step in range(20):
        c, pl = c_of(comp, v, key=2, step=step)
        nz = np.argwhere(c != 0)
        if len(nz) == 0:
            continue
        seen += 1
        (r0, c0), (r1, c1) = nz.min(0), nz.max(0) + 1
        # a rectangular slab of whole blocks: 16/8 = 2 rows, all 12 columns (8 blocks on axis 0)
        assert (r1 - r0, c1 - c0) == (2, 12) and r0 % 2 == 0
        np.testing.assert_array_equal(c[r0:r1, c0:c1], v[r0:r1, c0:c1])
        assert (c != 0).sum() == (r1 - r0) * (c1 - c0)
    assert seen == 20  # 8 blocks <= ratio 8: the tensor takes part every step


def test_grbs_same_choice_for_same_seed_key_step_whatever_the_global_rng():
    a, b = make_compressor("grbs", ratio=16, seed=1), make_compressor("grbs", ratio=16, seed=1)
    np.random.seed(0)
    ra = [a.region((64, 32, 3, 3), k, s) for s in range(10) for k in range(3)]
    np.random.seed(99)
    np.random.rand(17)
    rb = [b.region((64, 32, 3, 3), k, s) for s in range(10) for k in range(3)]
    assert ra == rb
    assert make_compressor("grbs", ratio=16, seed=2).region((64, 32, 3, 3), 0, 0) != ra[0] or \
        make_compressor("grbs", ratio=16, seed=2).region((64, 32, 3, 3), 1, 0) != ra[1]


def test_randomk_keeps_k_coordinates_shared_by_seed():
    v = np.random.RandomState(1).normal(size=(40, 25)).astype(np.float32)
    c1, _ = c_of(make_compressor("randomk", ratio=10, seed=4), v, key=1, step=3)
    c2, _ = c_of(make_compressor("randomk", ratio=10, seed=4), v + 1, key=1, step=3)
    mask = c1 != 0
    assert mask.sum() == 100
    np.testing.assert_array_equal(c1[mask], v[mask])
    assert np.array_equal(mask, c2 != 0)  # same mask for another worker's values


def test_topk_keeps_the_largest_magnitudes():
    v = np.random.RandomState(2).normal(size=(30, 20)).astype(np.float32)
    c, pl = c_of(make_compressor("topk", ratio=10), v)
    k = round(600 / 20)
    keep = np.argsort(-np.abs(v).ravel())[:k]
    ref = np.zeros(600, np.float32)
    ref[keep] = v.ravel()[keep]
    np.testing.assert_array_equal(c.ravel(), ref)
    assert not pl.summable and pl.nbytes == k * 8


def test_sign_is_scaled_sign():
    v = np.random.RandomState(3).normal(size=(13, 7)).astype(np.float32)
    c, pl = c_of(make_compressor("sign"), v)
    ref = np.where(v >= 0, 1.0, -1.0) * np.abs(v.astype(np.float64)).mean()
    np.testing.assert_allclose(c, ref, rtol=1e-6)
    assert not pl.summable and pl.nbytes == int(np.ceil(91 / 8)) + 4


def test_min_size_and_warmup_send_dense():
    comp = make_compressor("grbs", ratio=32, min_size=100, warmup_steps=2)
    small = np.ones((5, 5), np.float32)
    big = np.ones((64, 64), np.float32)
    assert np.array_equal(c_of(comp, small, step=10)[0], small)
    assert np.array_equal(c_of(comp, big, step=1)[0], big)     # warm-up
    assert (c_of(comp, big, step=2)[0] != 0).sum() < big.size   # compressed afterwards


@pytest.mark.parametrize("bad, match", [
    (dict(name="gzip"), "unknown compressor 'gzip'; registered: bf16, fp16, grbs, none, randomk, sign, (strided, )?topk, zero"),
    (dict(name="grbs", ratio=0.5), "ratio must be >= 1"),
    (dict(name="grbs", min_size=-1), "min_size"),
])
def test_bad_compressor_arguments(bad, match):
    with pytest.raises(ValueError, match=match):
        make_compressor(**bad)


def test_every_compressor_reports_ratio_and_summability():
    for name, cls in COMPRESSORS.items():
        c = make_compressor(name, ratio=8)
        assert c.ratio >= 1 and isinstance(c.summable, bool)
    assert not make_compressor("topk").summable and make_compressor("grbs").summable
