"""The compiled float16 decompression (``native.fp16_add``, csrc/half_kernels.cc) against float64
references, and the fp16 compressor's compiled decode against its MXNet path (docs/methods.md,
"Compression kernels")."""
import os

import mxnet as mx
import numpy as np
import pytest

from gluon_suite.distributed import native
from gluon_suite.distributed.compression import make_compressor

CTXS = [mx.cpu(0), mx.cpu(1)]
SIZES = [1, 7, 33, 1001, 65_537, 100_003]
BUILT = os.path.exists(native.DEFAULT_PATH) or os.environ.get("GLUON_SUITE_COMM_KERNELS")
pytestmark = pytest.mark.skipif(not BUILT, reason="compression kernels not built (make kernels)")

# float16 values of every kind: normal, subnormal (smallest and largest), the largest finite, +-0
SPECIAL = np.array([0x0001, 0x03ff, 0x0400, 0x7bff, 0x8000, 0x0000, 0x8001, 0x3c00, 0xfbff], np.uint16).view(np.float16)


def halves(n, rows, seed):
    rs = np.random.RandomState(seed + n)
    h = (rs.normal(size=(rows, n)) * 100).astype(np.float16)
    h[:, : min(n, len(SPECIAL))] = SPECIAL[: min(n, len(SPECIAL))]
    return h


@pytest.mark.parametrize("ctx", CTXS, ids=str)
@pytest.mark.parametrize("f16c", [True, False], ids=["f16c", "portable"])
@pytest.mark.parametrize("rows", [1, 3])
@pytest.mark.parametrize("n", SIZES)
def test_fp16_add_against_float64(n, rows, f16c, ctx):
    rs = np.random.RandomState(n)
    t = rs.normal(size=n).astype(np.float32)
    h = halves(n, rows, 0)
    for alpha in (1.0, -0.5, 0.3):
        T = mx.nd.array(t, ctx=ctx)
        native.fp16_add(T, mx.nd.array(h.reshape(-1), ctx=ctx, dtype="float16"), alpha, f16c=f16c)
        h64 = h.astype(np.float64)
        ref = t.astype(np.float64) + alpha * h64.sum(axis=0)
        # float32 rounding of alpha, and of each row's product and addition, relative to the terms
        bound = (2 * rows + 1) * 2.0 ** -24 * (np.abs(t) + abs(alpha) * np.abs(h64).sum(axis=0))
        assert (np.abs(T.asnumpy() - ref) <= bound).all()
        want = t.copy()   # the same float32 operations as MXNet's t += alpha * h.astype(float32), row by row
        for w in range(rows):
            want += np.float32(alpha) * h[w].astype(np.float32)
        np.testing.assert_array_equal(T.asnumpy().view(np.uint32), want.view(np.uint32))


@pytest.mark.parametrize("ctx", CTXS, ids=str)
@pytest.mark.parametrize("f16c", [True, False], ids=["f16c", "portable"])
@pytest.mark.parametrize("rows", [1, 3])
@pytest.mark.parametrize("n", SIZES)
def test_fp16_add_assign_writes_the_first_row(n, rows, f16c, ctx):
    h = halves(n, rows, 1)
    for alpha in (1.0, -0.5):
        T = mx.nd.array(np.full(n, np.nan, np.float32), ctx=ctx)   # never read
        native.fp16_add(T, mx.nd.array(h.reshape(-1), ctx=ctx, dtype="float16"), alpha, f16c=f16c, assign=True)
        want = np.float32(alpha) * h[0].astype(np.float64)      # float16 values widen exactly
        want = want.astype(np.float32)
        for w in range(1, rows):
            want += np.float32(alpha) * h[w].astype(np.float32)
        np.testing.assert_array_equal(T.asnumpy().view(np.uint32), want.view(np.uint32))
    # a dense payload's decode: exactly MXNet's cast
    one = mx.nd.array(h[0], ctx=ctx, dtype="float16")
    T = mx.nd.zeros((n,), ctx=ctx)
    native.fp16_add(T, one, f16c=f16c, assign=True)
    np.testing.assert_array_equal(T.asnumpy(), one.astype("float32").asnumpy())


@pytest.mark.parametrize("f16c", [True, False], ids=["f16c", "portable"])
def test_fp16_add_carries_inf_and_nan(f16c):
    h = np.array([np.inf, -np.inf, np.nan, 1.0] * 5, np.float16)
    T = mx.nd.zeros((h.size,))
    native.fp16_add(T, mx.nd.array(h, dtype="float16"), 2.0, f16c=f16c)
    got = T.asnumpy()
    assert (got[0::4] == np.inf).all() and (got[1::4] == -np.inf).all()
    assert np.isnan(got[2::4]).all() and (got[3::4] == 2.0).all()


def test_fp16_add_refuses_what_it_cannot_take():
    sym = mx.sym.gs_fp16_add(mx.sym.var("t"), mx.sym.var("h"))
    with pytest.raises(mx.base.MXNetError, match="larger than 2\\^31 bytes"):
        sym.infer_shape(t=(2 ** 29 + 1,), h=(2 ** 29 + 1,))
    with pytest.raises(mx.base.MXNetError, match="are not rows of"):
        sym.infer_shape(t=(10,), h=(15,))
    with pytest.raises(mx.base.MXNetError, match="float32 and the payload float16"):
        sym.infer_type(t=np.float32, h=np.float32)


@pytest.mark.parametrize("ctx", CTXS, ids=str)
@pytest.mark.parametrize("shape", [(1,), (7,), (30, 20), (101, 1001)])
def test_fp16_compressors_compiled_decode_equals_its_mxnet_path(shape, ctx, monkeypatch):
    v = np.random.RandomState(len(shape)).normal(size=shape).astype(np.float32)
    start = np.random.RandomState(1).normal(size=shape).astype(np.float32)
    comp = make_compressor("fp16")
    pl = comp.compress(mx.nd.array(v, ctx=ctx), 0, 0)
    sums = [mx.nd.array(start, ctx=ctx) for _ in range(2)]
    pl.add_to(sums[0], pl.tensors, -0.25)
    monkeypatch.setattr(native, "LOADED", False)   # MXNet's widening cast and add
    pl.add_to(sums[1], pl.tensors, -0.25)
    np.testing.assert_array_equal(sums[0].asnumpy(), sums[1].asnumpy())


@pytest.mark.parametrize("name", ["fp16", "sign"])
def test_payload_arrays_are_reused_only_when_nothing_holds_them(name):
    """Payload buffers come from a pool (native.reusable): a payload still held keeps its values
    whatever is compressed after it; one that was dropped gives its array to the next payload."""
    comp = make_compressor(name)
    a, b = (mx.nd.array(np.random.RandomState(s).normal(size=(1000,)).astype(np.float32)) for s in (0, 1))
    first = comp.compress(a, 0, 0)
    want = first.tensors[0].asnumpy().copy()
    second = comp.compress(b, 0, 0)   # the same key, shape and step: the first is still held
    assert second.tensors[0] is not first.tensors[0]
    np.testing.assert_array_equal(first.tensors[0].asnumpy(), want)
    kept = first.tensors[0]
    del first
    third = comp.compress(b, 0, 1)
    assert third.tensors[0] is not kept   # the dropped payload's tensor is still referred to here
    np.testing.assert_array_equal(kept.asnumpy(), want)
    view = second.tensors[0]
    del second, view, kept
    fourth = comp.compress(a, 0, 2)
    np.testing.assert_array_equal(fourth.tensors[0].asnumpy(), want)
    assert any(fourth.tensors[0] is x for arrays in native._POOL.values() for x in arrays)


def test_the_pool_is_bounded(monkeypatch):
    monkeypatch.setattr(native, "_POOL", {})
    held = [native.reusable((10,), "uint8", mx.cpu()) for _ in range(native.POOL_DEPTH + 3)]
    assert len({id(h) for h in held}) == len(held)   # all held: every call a new array
    assert len(native._POOL[((10,), "|u1", str(mx.cpu()))]) == native.POOL_DEPTH
    pooled = native._POOL[((10,), "|u1", str(mx.cpu()))]
    del held
    assert native.reusable((10,), "uint8", mx.cpu()) is pooled[0]
