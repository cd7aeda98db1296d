"""The compiled random-k and bfloat16 kernels (``native.randomk_gather``/``randomk_add``,
``native.cast_bf16``/``bf16_add``) against float64 NumPy references, on buffers of mixed sizes and
on a bucket of mixed shapes (an empty tensor, a one-element one, odd sizes), on cpu(0) and
cpu(1); the ``randomk`` and ``bf16`` compressors' compiled path against their MXNet path. These
operators take no offsets or indices (random-k computes its indices inside), so there is no
int32/int64 variant. The fallback for these compressors is checked in test_comm_kernels.py."""
import mxnet as mx
import numpy as np
import pytest

from gluon_suite.distributed import native
from gluon_suite.distributed.bfloat16 import decode, encode
from gluon_suite.distributed.compression import make_compressor
from gluon_suite.distributed.registry import make_algorithm

from .test_comm_kernels import BUCKET, CTXS, SIZES, generic, needs_library

UNDER = 1.0 - 2.0 ** -40


def bucket_vector(seed=0, scale=1.0):
    """The flat vector of a bucket holding BUCKET's tensors (its members flattened, end to end)."""
    rs = np.random.RandomState(seed)
    parts = [rs.normal(size=shape).astype(np.float32).ravel() * np.float32(scale) for shape in BUCKET]
    return np.concatenate(parts).astype(np.float32)


LENGTHS = [n for n in SIZES if n] + [bucket_vector().size]


# ---- random-k --------------------------------------------------------------------------------------
def strata_reference(n, table, rotation, shift):
    """Random-k's indices in float64 NumPy: stratum j of k spans [floor(j n / k), floor((j+1) n /
    k)) and keeps start_j + floor(frac(T[(j + rotation) mod k] + shift) * width_j (1 - 2^-40))."""
    k = len(table)
    starts = np.arange(k + 1, dtype=np.int64) * n // k
    u = np.mod(table[(np.arange(k) + rotation) % k] + shift, 1.0)
    idx = starts[:-1] + np.floor(u * (np.diff(starts).astype(np.float64) * UNDER)).astype(np.int64)
    assert ((idx >= starts[:-1]) & (idx < starts[1:])).all()
    return idx


@needs_library
@pytest.mark.parametrize("ctx", CTXS, ids=str)
@pytest.mark.parametrize("ratio", [1, 3, 32])
@pytest.mark.parametrize("n", LENGTHS)
def test_randomk_gather_and_add_against_float64(n, ratio, ctx):
    rs = np.random.RandomState(n + ratio)
    x = rs.normal(size=n).astype(np.float32)
    k = max(1, int(np.ceil(n / ratio)))
    table = rs.random_sample(k)
    for rotation, shift in [(0, 0.0), (k - 1, 0.999999), (int(rs.randint(k)), float(rs.random_sample()))]:
        want = strata_reference(n, table, rotation, shift)
        T = mx.nd.array(np.tile(table, 2), ctx=ctx, dtype="float64")
        vals = native.randomk_gather(mx.nd.array(x, ctx=ctx), T, rotation, shift)
        assert vals.context == ctx and vals.shape == (k,)
        np.testing.assert_array_equal(vals.asnumpy().view(np.uint32), x[want].view(np.uint32))
        add = rs.normal(size=k).astype(np.float32)
        target = mx.nd.array(x, ctx=ctx)
        native.randomk_add(target, mx.nd.array(add, ctx=ctx), T, rotation, shift, -0.5)
        ref = x.astype(np.float64)
        ref[want] += -0.5 * add.astype(np.float64)
        np.testing.assert_allclose(target.asnumpy(), ref, rtol=1e-6, atol=1e-7)


@needs_library
def test_randomk_operators_refuse_a_bad_rotation_or_table_in_one_line():
    x, table = mx.nd.zeros((10,)), mx.nd.zeros((6,), dtype="float64")
    with pytest.raises(mx.base.MXNetError, match="rotation 3 must be within 0..2"):
        native.randomk_gather(x, table, 3, 0.5).wait_to_read()
    with pytest.raises(mx.base.MXNetError, match="input 1 must be float64"):
        native.randomk_gather(x, table.astype("float32"), 0, 0.5).wait_to_read()
    with pytest.raises(mx.base.MXNetError, match="a table of 24 numbers"):
        native.randomk_gather(x, mx.nd.zeros((24,), dtype="float64"), 0, 0.5).wait_to_read()


def randomk_run(comp, x, ctx, key, step):
    """(payload values, 0.5 C(v) added to zeros, payload bytes) of ``comp`` on ``x``."""
    v = mx.nd.array(x, ctx=ctx)
    pl = comp.compress(v, key, step)
    out = mx.nd.zeros(v.shape, ctx=ctx)
    pl.add_to(out, pl.tensors, 0.5)
    return pl.tensors[0].asnumpy(), out.asnumpy(), pl.nbytes


@needs_library
@pytest.mark.parametrize("ctx", CTXS, ids=str)
@pytest.mark.parametrize("n", LENGTHS)
def test_randomk_compiled_path_equals_its_mxnet_path(n, ctx, monkeypatch):
    x = bucket_vector(n) if n == LENGTHS[-1] else np.random.RandomState(n).normal(size=n).astype(np.float32)
    comp = make_compressor("randomk", ratio=8, seed=5)
    steps = [(0, 0), (3, 1), (7, 12)]
    compiled = [randomk_run(comp, x, ctx, key, step) for key, step in steps]
    generic(monkeypatch)
    for (key, step), got in zip(steps, compiled):
        want = randomk_run(comp, x, ctx, key, step)
        np.testing.assert_array_equal(got[0].view(np.uint32), want[0].view(np.uint32))
        np.testing.assert_array_equal(got[1], want[1])
        assert got[2] == want[2] == 4 * int(np.ceil(n / 8))
        # the float64 reference: C(v) at the documented indices, from the seed's table and the
        # step's two draws (docs of RandomKCompressor)
        k = int(np.ceil(n / 8))
        table = np.random.Generator(np.random.Philox(key=[5, 2 ** 62 + n])).random(k)
        g = np.random.Generator(np.random.Philox(key=[5, step * 1_000_003 + key]))
        idx = strata_reference(n, table, int(g.integers(k)), float(g.random()))
        ref = np.zeros(n)
        ref[idx] = 0.5 * x[idx].astype(np.float64)
        np.testing.assert_array_equal(got[1], ref.astype(np.float32))


@needs_library
def test_randomk_compiled_selection_is_the_same_on_every_worker_for_the_same_step():
    n = bucket_vector().size
    where = np.arange(n, dtype=np.float32)          # each value names its index (exact below 2^24)
    a, b = make_compressor("randomk", ratio=16, seed=9), make_compressor("randomk", ratio=16, seed=9)
    seen = set()
    for step in range(5):
        va = a.compress(mx.nd.array(where), 2, step).tensors[0].asnumpy()
        vb = b.compress(mx.nd.array(where + 1), 2, step).tensors[0].asnumpy()   # another worker's data
        np.testing.assert_array_equal(va + 1, vb)
        assert len(set(va.tolist())) == len(va) == int(np.ceil(n / 16))
        seen.add(tuple(va.tolist()))
    assert len(seen) == 5                           # a new selection every step


def test_randomk_of_an_empty_tensor_sends_nothing():
    pl = make_compressor("randomk", ratio=4).compress(mx.nd.empty((0,)), 0, 0)
    assert pl.nbytes == 0


# ---- bfloat16 --------------------------------------------------------------------------------------
def bf16_values():
    """Every bfloat16 bit pattern's value in float64, from its fields: (-1)^s M 2^-133 (E = 0),
    (-1)^s (1 + M/128) 2^(E-127), inf (E = 255, M = 0), NaN (E = 255, M != 0)."""
    h = np.arange(2 ** 16)
    s, E, M = h >> 15, (h >> 7) & 0xFF, (h & 0x7F).astype(np.float64)
    mag = np.where(E == 0, M * 2.0 ** -133, (1 + M / 128) * 2.0 ** (E.astype(np.float64) - 127))
    mag = np.where(E == 255, np.where(M == 0, np.inf, np.nan), mag)
    return np.where(s == 1, -mag, mag)


VALUES = bf16_values()
# the non-negative finite bfloat16 values in increasing order (0x0000..0x7f7f), then 2^128 standing
# for inf, where a rounding past the largest value goes
LADDER = np.concatenate([VALUES[:0x7F80], [2.0 ** 128]])


def bf16_reference(x):
    """The bfloat16 bit patterns of float32 ``x`` by search in float64: the nearest of the two
    neighbouring values, a tie to the even pattern; NaN as 0x7fc0."""
    a = np.abs(x.astype(np.float64))
    hi = np.searchsorted(LADDER, np.where(np.isfinite(a), a, 0.0))
    lo = np.maximum(hi - 1, 0)
    hi = np.minimum(hi, len(LADDER) - 1)
    d_lo, d_hi = a - LADDER[lo], LADDER[hi] - a
    h = np.where((d_hi < d_lo) | ((d_hi == d_lo) & (hi % 2 == 0)), hi, lo)
    h = np.where(a == LADDER[hi], hi, h)
    h = np.where(np.isinf(a), 0x7F80, h) | (np.signbit(x).astype(np.int64) << 15)
    return np.where(np.isnan(x), 0x7FC0, h).astype(np.uint16)


def bits32(words):
    return np.array(words, dtype=np.uint32).view(np.float32)


# ties (low half 0x8000) above odd and even patterns, normal and subnormal, the edges of the range,
# NaNs of both signs and payloads, infinities, zeros, float32 subnormals
EDGES = np.concatenate([
    bits32([0x3F808000, 0x3F818000, 0x3F807FFF, 0x3F808001, 0x00008000, 0x00018000, 0x80018000, 0x00000001,
            0x007FFFFF, 0x00800000, 0x7F7F7FFF, 0x7F7F8000, 0x7F7FFFFF, 0xFF7F8000, 0x7F800001, 0xFFC00000,
            0x7FC00000, 0x7F800000, 0xFF800000, 0x80000000, 0x00000000]),
    np.array([1e-45, 1e-40, -3e-39, 1.17549435e-38, 3.38e38, 1e-30, 1e30], np.float32)])


def bf16_cases(n):
    rs = np.random.RandomState(n)
    x = rs.normal(size=n).astype(np.float32)
    cases = [x, x * np.float32(1e-36), x * np.float32(1e36), np.concatenate([x, EDGES]), bucket_vector(n, 1e3)]
    ties = (rs.randint(0, 0x7F7F, size=n).astype(np.uint32) << 16) | 0x8000   # every value a tie
    cases.append(ties.view(np.float32))
    if n == SIZES[-1]:   # every exponent: random bit patterns, NaNs and infs among them
        cases.append(rs.randint(0, 2 ** 32, size=n, dtype=np.uint64).astype(np.uint32).view(np.float32))
    return [c.astype(np.float32) for c in cases]


@needs_library
@pytest.mark.parametrize("ctx", CTXS, ids=str)
@pytest.mark.parametrize("n", SIZES)
def test_bf16_cast_rounds_to_nearest_even_against_float64(n, ctx):
    for c in bf16_cases(n):
        data, finite = native.cast_bf16(mx.nd.array(c, ctx=ctx))
        assert data.dtype == np.uint8 and data.shape == (2 * c.size,) and data.context == ctx
        got = data.asnumpy().view("<u2")
        want = bf16_reference(c)
        bad = got != want
        assert not bad.any(), (c[bad][:5], got[bad][:5], want[bad][:5])
        assert finite.asnumpy()[0] == float(np.isfinite(VALUES[want]).all())


@needs_library
@pytest.mark.parametrize("ctx", CTXS, ids=str)
@pytest.mark.parametrize("n", LENGTHS)
def test_bf16_add_against_float64(n, ctx):
    rs = np.random.RandomState(n)
    every = rs.randint(0, 0x7F80, size=n) | (rs.randint(0, 2, size=n) << 15)     # any finite pattern
    T = mx.nd.zeros((n,), ctx=ctx)
    native.bf16_add(T, mx.nd.array(every.astype("<u2").view(np.uint8), ctx=ctx, dtype="uint8"), -0.5)
    np.testing.assert_array_equal(T.asnumpy(), (-0.5 * VALUES[every]).astype(np.float32))   # exact
    # three workers' rows added to a target, exponents within 2^-15..2^15 (no cancellation to 0)
    rows = ((rs.randint(112, 142, size=(3, n)) << 7) | rs.randint(0, 128, size=(3, n))
            | (rs.randint(0, 2, size=(3, n)) << 15))
    t = rs.normal(size=n).astype(np.float32)
    T = mx.nd.array(t, ctx=ctx)
    native.bf16_add(T, mx.nd.array(rows.astype("<u2").view(np.uint8).ravel(), ctx=ctx, dtype="uint8"), 0.25)
    ref = t.astype(np.float64) + 0.25 * VALUES[rows].sum(axis=0)
    scale = np.abs(t) + 0.25 * np.abs(VALUES[rows]).sum(axis=0)    # float32 adds: error relative to it
    assert (np.abs(T.asnumpy() - ref) <= 4 * 2.0 ** -24 * scale).all()


@needs_library
@pytest.mark.parametrize("ctx", CTXS, ids=str)
@pytest.mark.parametrize("n", SIZES)
def test_bf16_mxnet_operators_give_the_compiled_bytes_and_values(n, ctx):
    for c in bf16_cases(n):
        x = mx.nd.array(c, ctx=ctx)
        compiled = native.cast_bf16(x)[0]
        mxnet_bytes = encode(x)
        np.testing.assert_array_equal(mxnet_bytes.asnumpy(), compiled.asnumpy())
        if not n:
            continue
        got, want = decode(compiled).asnumpy(), VALUES[bf16_reference(c)].astype(np.float32)
        np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
        ok = ~np.isnan(got)
        np.testing.assert_array_equal(got[ok].view(np.uint32), want[ok].view(np.uint32))   # -0 too


def bf16_run(x, ctx, workers=3):
    """(payload bytes, finite flag, 0.5 C(v) through add_to, 0.5 of ``workers`` payloads through
    add_gathered) of the bf16 compressor."""
    comp = make_compressor("bf16")
    v = mx.nd.array(x, ctx=ctx)
    pl = comp.compress(v, 0, 0)
    one, many = mx.nd.zeros(v.shape, ctx=ctx), mx.nd.zeros(v.shape, ctx=ctx)
    pl.add_to(one, pl.tensors, 0.5)
    pl.add_gathered(many, [mx.nd.concat(*[pl.tensors[0]] * workers, dim=0)], workers, 0.5)
    return pl.tensors[0].asnumpy(), pl.finite, one.asnumpy(), many.asnumpy(), pl


@needs_library
@pytest.mark.parametrize("ctx", CTXS, ids=str)
@pytest.mark.parametrize("n", LENGTHS)
def test_bf16_compressor_compiled_path_equals_its_mxnet_path_and_float64(n, ctx, monkeypatch):
    x = bucket_vector(n) if n == LENGTHS[-1] else np.random.RandomState(n).normal(size=n).astype(np.float32)
    comp = make_compressor("bf16")
    assert comp.ratio == 2.0 and not comp.summable
    compiled = bf16_run(x, ctx)
    assert compiled[1] is not None and compiled[1].asscalar() == 1.0
    assert compiled[4].nbytes == 2 * n and not compiled[4].summable
    c = VALUES[bf16_reference(x)]                                  # C(v) in float64
    np.testing.assert_array_equal(compiled[2], (0.5 * c).astype(np.float32))
    np.testing.assert_allclose(compiled[3], 1.5 * c, rtol=1e-6)
    generic(monkeypatch)
    reference = bf16_run(x, ctx)
    assert reference[1] is None
    for j in (0, 2, 3):                              # bytes, one payload added, three gathered added
        np.testing.assert_array_equal(compiled[j], reference[j])


@needs_library
@pytest.mark.parametrize("ctx", CTXS, ids=str)
def test_bf16_flags_a_value_that_rounds_to_inf(ctx):
    x = bucket_vector(3)
    x[5] = bits32([0x7F7F8000])[0]                   # below float32's max, rounds to inf
    _, finite, *_ = bf16_run(x, ctx)
    assert finite.asscalar() == 0.0


@needs_library
@pytest.mark.parametrize("ctx", CTXS, ids=str)
def test_bf16_error_feedback_keeps_the_rounding_error(ctx):
    rs = np.random.RandomState(0)
    g, r = bucket_vector(1), rs.normal(size=bucket_vector().size).astype(np.float32) * np.float32(1e-3)
    R = mx.nd.array(r, ctx=ctx)
    pl = make_compressor("bf16").compress_feedback(mx.nd.array(g, ctx=ctx), R, 0, 0)
    v = (g.astype(np.float64) + r).astype(np.float32)                 # float32's g + r
    c = VALUES[bf16_reference(v)]
    np.testing.assert_allclose(R.asnumpy(), v.astype(np.float64) - c, rtol=1e-6, atol=1e-12)
    assert np.abs(R.asnumpy()).max() <= np.abs(v).max() * 2.0 ** -8


def test_bf16_goes_through_allgather_so_sync_refuses_it_in_one_line():
    with pytest.raises(ValueError, match="'bf16' goes through allgather; choose one of: none, fp16"):
        make_algorithm("sync", compressor="bf16")
    assert make_algorithm("ef", compressor="bf16").config()["compressor"]["name"] == "bf16"


def test_bf16_of_an_empty_tensor_sends_nothing():
    assert make_compressor("bf16").compress(mx.nd.empty((0,)), 0, 0).nbytes == 0


@needs_library
def test_bf16_and_randomk_operators_refuse_buffers_over_2_31_bytes():
    sym = mx.sym.gs_cast_bf16(mx.sym.var("x"))
    with pytest.raises(mx.base.MXNetError, match="larger than 2\\^31 bytes"):
        sym.infer_shape(x=(2 ** 29 + 1,))
    sym.infer_shape(x=(2 ** 29,))
    sym = mx.sym.gs_randomk_gather(mx.sym.var("x"), mx.sym.var("t"), rotation="0", shift="0.5")
    with pytest.raises(mx.base.MXNetError, match="larger than 2\\^31 bytes"):
        sym.infer_shape(x=(2 ** 29 + 1,), t=(8,))


# ---- error feedback with sign, fused ----------------------------------------------------------------
@needs_library
@pytest.mark.parametrize("ctx", CTXS, ids=str)
@pytest.mark.parametrize("simd", [True, False], ids=["simd", "portable"])
@pytest.mark.parametrize("n", LENGTHS)
def test_fused_sign_error_feedback_against_float64(n, simd, ctx):
    rs = np.random.RandomState(n)
    g, r = rs.normal(size=n).astype(np.float32), rs.normal(size=n).astype(np.float32)
    r[: n // 5] = -g[: n // 5]                                    # v = +0 there: sign +1
    for gradient in (True, False):
        v = (g.astype(np.float64) + r).astype(np.float32) if gradient else r
        R = mx.nd.array(r, ctx=ctx)
        bits, scale = native.ef_sign(mx.nd.array(g, ctx=ctx) if gradient else None, R, simd=simd)
        np.testing.assert_array_equal(bits.asnumpy(), np.packbits(v >= 0))
        s = np.abs(v.astype(np.float64)).mean()
        np.testing.assert_allclose(scale.asnumpy()[0], s, rtol=1e-6)
        np.testing.assert_allclose(R.asnumpy(), v - s * np.where(v >= 0, 1.0, -1.0), rtol=1e-5, atol=1e-6)


@needs_library
@pytest.mark.parametrize("ctx", CTXS, ids=str)
@pytest.mark.parametrize("n", LENGTHS)
def test_fused_sign_error_feedback_equals_the_three_steps(n, ctx, monkeypatch):
    """The compressor's fused call leaves the residual and payload of r += g, compress, add_to(r, -1)
    bit for bit on the compiled path, and within rounding of MXNet's path."""
    rs = np.random.RandomState(n + 1)
    g, r = rs.normal(size=n).astype(np.float32), rs.normal(size=n).astype(np.float32)
    comp = make_compressor("sign")
    base = type(comp).__mro__[1].compress_feedback                 # Compressor's: the three steps

    def run(feedback, grad=True):
        R = mx.nd.array(r, ctx=ctx)
        pl = feedback(comp, mx.nd.array(g, ctx=ctx) if grad else None, R, 0, 0)
        c = mx.nd.zeros((n,), ctx=ctx)
        pl.add_to(c, pl.tensors, 1.0)
        return [R.asnumpy(), c.asnumpy()] + [t.asnumpy() for t in pl.tensors]

    for grad in (False, True):
        fused, steps = run(type(comp).compress_feedback, grad), run(base, grad)
        for a, b in zip(fused, steps):
            np.testing.assert_array_equal(a, b)
    generic(monkeypatch)                                           # with the gradient, as fused is now
    mxnet_path = run(type(comp).compress_feedback)
    np.testing.assert_array_equal(fused[2], mxnet_path[2])          # the bits
    for a, b in zip(fused[:2] + fused[3:], mxnet_path[:2] + mxnet_path[3:]):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
