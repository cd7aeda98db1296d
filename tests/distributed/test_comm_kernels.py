"""The compiled compression kernels (``gluon_suite.distributed.native``) against float64 NumPy
references, on buffers of mixed sizes (empty, one element, odd sizes, 1e5: the radix-selection
path), on cpu(0) and cpu(1), int32 and int64 indices; the compressors' compiled path against their
MXNet path; the fused error feedback against the unfused one; the 2^31-byte guard; and the
fallback when the library does not load. The kernel tests skip only when the library was not built,
and ``test_library_is_built_where_a_compiler_is`` fails when it should have been."""
import os
import shutil
import subprocess
import sys

import mxnet as mx
import numpy as np
import pytest

from gluon_suite.distributed import native
from gluon_suite.distributed.compression import make_compressor
from gluon_suite.utils.env import env
from gluon_suite.utils.errors import UserError

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CTXS = [mx.cpu(0), mx.cpu(1)]
SIZES = [0, 1, 7, 33, 1001, 4097, 100_003]
INDEX = ["int32", "int64"]
BUILT = os.path.exists(native.DEFAULT_PATH) or os.environ.get("GLUON_SUITE_COMM_KERNELS")
needs_library = pytest.mark.skipif(not BUILT, reason="compression kernels not built (make kernels)")


def test_library_is_built_where_a_compiler_is():
    """``make kernels`` (run by ``make setup``) builds the library wherever a C++ compiler and
    MXNet's headers are present, and it loads: a skipped kernel test cannot hide a broken build."""
    mxnet_include = os.path.join(os.path.dirname(mx.__file__), "include", "mxnet", "lib_api.h")
    if not (shutil.which(os.environ.get("CXX", "g++")) and os.path.exists(mxnet_include)):
        pytest.skip("no C++ compiler or MXNet headers here: the library cannot be built")
    assert os.path.exists(native.DEFAULT_PATH), "run make kernels: " + native.REASON
    if env("GLUON_SUITE_COMM_KERNELS") != "off":
        assert native.LOADED, native.REASON


def test_a_failed_compile_leaves_make_kernels_successful_with_one_line(tmp_path):
    p = subprocess.run(["make", "-s", "kernels", f"KERNELS_DIR={tmp_path}/g", f"COMM_KERNELS_DIR={tmp_path}/c",
                        "CXX=false"], cwd=REPO, capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stdout + p.stderr
    notes = [ln for ln in (p.stdout + p.stderr).splitlines() if ln.startswith("compression kernels not built")]
    assert len(notes) == 1 and "MXNet's operators" in notes[0]
    assert not (tmp_path / "c" / "libgs_comm_kernels.so").exists()


def data(n, kind, seed=0):
    """float32 test data: normal values, or few distinct values (many ties, with -0 and +0)."""
    rs = np.random.RandomState(seed + n)
    if kind == "normal":
        return rs.normal(size=n).astype(np.float32)
    x = rs.randint(-3, 4, size=n).astype(np.float32)
    x[rs.rand(n) < 0.2] = -0.0
    return x


def ref_topk(x, k):
    """Indices of the k largest |x| in float64, ties to the lowest index, in ascending order."""
    mag = np.abs(x.astype(np.float64))
    order = np.lexsort((np.arange(len(x)), -mag))
    return np.sort(order[:k])


def ks(n):
    return sorted({0, min(1, n), n // 3, n // 64, n})


# ---- operators against float64 references ------------------------------------------------------------
@needs_library
@pytest.mark.parametrize("ctx", CTXS, ids=str)
@pytest.mark.parametrize("index", INDEX)
@pytest.mark.parametrize("kind", ["normal", "ties"])
@pytest.mark.parametrize("n", SIZES)
def test_topk_selects_the_largest_magnitudes_ties_to_the_lowest_index(n, kind, index, ctx):
    x = data(n, kind)
    for k in ks(n):
        vals, idx = native.topk(mx.nd.array(x, ctx=ctx), k, index)
        assert vals.context == ctx and idx.dtype == np.dtype(index) and vals.shape == (k,)
        want = ref_topk(x, k)
        np.testing.assert_array_equal(idx.asnumpy(), want)
        np.testing.assert_array_equal(vals.asnumpy().view(np.uint32), x[want].view(np.uint32))


@needs_library
def test_topk_ranks_nan_above_inf_and_counts_minus_zero_as_zero():
    x = np.array([1.0, np.nan, -np.inf, 0.0, -0.0, 2.0, np.inf], np.float32)
    _, idx = native.topk(mx.nd.array(x), 2)
    assert idx.asnumpy().tolist() == [1, 2]            # NaN, then the first inf
    _, idx = native.topk(mx.nd.array(x), 6)
    assert idx.asnumpy().tolist() == [0, 1, 2, 3, 5, 6]  # of the equal zeros, the first


@needs_library
@pytest.mark.parametrize("ctx", CTXS, ids=str)
@pytest.mark.parametrize("index", INDEX)
@pytest.mark.parametrize("kind", ["normal", "ties"])
@pytest.mark.parametrize("n", SIZES)
def test_fused_error_feedback_against_float64(n, kind, index, ctx):
    g, r = data(n, kind, 1), data(n, kind, 2)
    v = (g.astype(np.float64) + r.astype(np.float64)).astype(np.float32)
    for k in ks(n):
        R = mx.nd.array(r, ctx=ctx)
        vals, idx = native.ef_topk(mx.nd.array(g, ctx=ctx), R, k, index)
        want = ref_topk(v, k)
        np.testing.assert_array_equal(idx.asnumpy(), want)
        np.testing.assert_array_equal(vals.asnumpy(), v[want])
        rest = v.copy()
        rest[want] = 0
        np.testing.assert_array_equal(R.asnumpy(), rest)
        R = mx.nd.array(v, ctx=ctx)                     # no gradient: v is the residual itself
        native.ef_topk(None, R, k, index)
        np.testing.assert_array_equal(R.asnumpy(), rest)


@needs_library
@pytest.mark.parametrize("ctx", CTXS, ids=str)
@pytest.mark.parametrize("simd", [True, False], ids=["simd", "portable"])
@pytest.mark.parametrize("n", SIZES)
def test_sign_pack_and_unpack_against_float64(n, simd, ctx):
    x = data(n, "normal")
    if n:
        x[0] = -0.0                                     # -0 >= 0: bit 1, as numpy.packbits(x >= 0)
    bits, scale = native.sign_pack(mx.nd.array(x, ctx=ctx), simd=simd)
    np.testing.assert_array_equal(bits.asnumpy(), np.packbits(x >= 0))
    want = np.abs(x.astype(np.float64)).mean() if n else 0.0
    np.testing.assert_allclose(scale.asnumpy()[0], want, rtol=1e-6)
    rs = np.random.RandomState(n)
    rows = [data(n, "normal", s) for s in range(3)]
    b = np.concatenate([np.packbits(w >= 0) for w in rows])
    s = rs.uniform(0.5, 2.0, size=3).astype(np.float32)
    t = rs.normal(size=n).astype(np.float32)
    T = mx.nd.array(t, ctx=ctx)
    native.sign_unpack_add(T, mx.nd.array(b, ctx=ctx, dtype="uint8"), mx.nd.array(s, ctx=ctx), -0.5, simd=simd)
    ref = t + sum(-0.5 * float(sw) * np.where(w >= 0, 1.0, -1.0) for sw, w in zip(s, rows))
    np.testing.assert_allclose(T.asnumpy(), ref, rtol=1e-6, atol=1e-6)


@needs_library
@pytest.mark.parametrize("rows", [1, 2, 3])
@pytest.mark.parametrize("n", [0, 1, 7, 8, 15, 16, 17, 31, 33, 4099, 300_007])
def test_sign_vector_path_equals_the_portable_path_bit_for_bit(n, rows):
    """The AVX-512 pack and unpack (where the processor has them) give the portable code's bits,
    scale and sums exactly: the scale's additions keep their lanes and order."""
    rs = np.random.RandomState(n + rows)
    x = rs.normal(size=n).astype(np.float32)
    x[rs.rand(n) < 0.1] = -0.0
    x[rs.rand(n) < 0.01] = np.nan
    got = [native.sign_pack(mx.nd.array(x), simd=simd) for simd in (True, False)]
    np.testing.assert_array_equal(got[0][0].asnumpy(), got[1][0].asnumpy())
    assert got[0][1].asnumpy().view(np.uint32)[0] == got[1][1].asnumpy().view(np.uint32)[0]
    b = rs.randint(0, 256, size=rows * ((n + 7) // 8)).astype(np.uint8)
    s = np.concatenate([[0.0], rs.uniform(0.5, 2.0, size=rows - 1)]).astype(np.float32)   # a zero scale too
    t = rs.normal(size=n).astype(np.float32)
    t[: n // 4] = -0.0
    out = []
    for simd in (True, False):
        T = mx.nd.array(t)
        native.sign_unpack_add(T, mx.nd.array(b, dtype="uint8"), mx.nd.array(s), 0.75, simd=simd)
        out.append(T.asnumpy().view(np.uint32))
    np.testing.assert_array_equal(out[0], out[1])


@needs_library
@pytest.mark.parametrize("ctx", CTXS, ids=str)
@pytest.mark.parametrize("f16c", [True, False], ids=["f16c", "portable"])
@pytest.mark.parametrize("n", SIZES)
def test_float16_cast_and_its_finite_flag_against_float64(n, f16c, ctx):
    x = (data(n, "normal") * np.float32(3e4)).astype(np.float32)
    edge = np.array([65504, 65519.99, 65520, 6.0e-8, 2.9802322e-08, 2.9802326e-08, 1e-45, -0.0, 6.1e-05],
                    np.float32)
    cases = [x, np.concatenate([x, edge[:2]]), np.concatenate([x, edge]), np.concatenate([x, [np.nan]]),
             np.concatenate([x, [-np.inf]]), np.concatenate([edge, x])]
    if n == SIZES[-1]:   # every exponent and rounding case: random bit patterns, NaNs and infs among them
        cases.append(np.random.RandomState(1).randint(0, 2 ** 32, size=n, dtype=np.uint64).astype(np.uint32)
                     .view(np.float32))
    for c in cases:
        c = c.astype(np.float32)
        y, finite = native.cast_fp16(mx.nd.array(c, ctx=ctx), f16c)
        want = c.astype(np.float64).astype(np.float16)
        got = y.asnumpy()
        same = (got.view(np.uint16) == want.view(np.uint16)) | (np.isnan(got) & np.isnan(want))
        assert same.all(), c[~same][:5]
        assert finite.asnumpy()[0] == float(np.isfinite(want).all())


@needs_library
@pytest.mark.parametrize("ctx", CTXS, ids=str)
@pytest.mark.parametrize("index", INDEX)
@pytest.mark.parametrize("n", [1, 33, 100_003])
def test_scatter_add_sums_each_segment(n, index, ctx):
    rs = np.random.RandomState(n)
    t = rs.normal(size=n).astype(np.float32)
    segs, k = 3, max(1, n // 10)
    idx = np.concatenate([rs.choice(n, k, replace=False) for _ in range(segs)])
    vals = rs.normal(size=segs * k).astype(np.float32)
    T = mx.nd.array(t, ctx=ctx)
    native.scatter_add(T, mx.nd.array(vals, ctx=ctx), mx.nd.array(idx, ctx=ctx, dtype=index), 0.25, segs)
    ref = t.astype(np.float64)
    np.add.at(ref, idx, 0.25 * vals.astype(np.float64))
    np.testing.assert_allclose(T.asnumpy(), ref, rtol=1e-6, atol=1e-6)


BUCKET = [(0,), (1,), (7,), (5, 3), (16, 12, 3, 3), (33, 7), (4097,)]


def bucket_blocks(seed):
    """One slab per member of BUCKET (rows x columns on the first two axes, whole trailing axes),
    as (origin, rows, row length, row stride) rows of the bucket's flat offsets, and the flat
    positions each covers (the reference)."""
    rs = np.random.RandomState(seed)
    blocks, where, offset = [], [], 0
    for shape in BUCKET:
        size = int(np.prod(shape))
        if size:
            pos = np.arange(size).reshape(shape) + offset
            b0 = rs.randint(shape[0])
            e0 = rs.randint(b0, shape[0]) + 1
            if len(shape) == 1:
                blocks.append((offset + b0, 1, e0 - b0, 0))
                where.append(pos[b0:e0].ravel())
            else:
                inner = int(np.prod(shape[2:]))
                b1 = rs.randint(shape[1])
                e1 = rs.randint(b1, shape[1]) + 1
                blocks.append((offset + (b0 * shape[1] + b1) * inner, e0 - b0, (e1 - b1) * inner, shape[1] * inner))
                where.append(pos[b0:e0, b1:e1].ravel())
        offset += size
    return np.array(blocks), np.concatenate(where), offset


@needs_library
@pytest.mark.parametrize("ctx", CTXS, ids=str)
@pytest.mark.parametrize("index", INDEX)
def test_block_gather_and_add_over_a_bucket_of_mixed_shapes(index, ctx):
    for seed in range(3):
        blocks, where, n = bucket_blocks(seed)
        rs = np.random.RandomState(seed)
        x = rs.normal(size=n).astype(np.float32)
        B = mx.nd.array(blocks, ctx=ctx, dtype=index)
        got = native.block_gather(mx.nd.array(x, ctx=ctx), B, len(where))
        np.testing.assert_array_equal(got.asnumpy(), x[where])
        vals = rs.normal(size=len(where)).astype(np.float32)
        T = mx.nd.array(x, ctx=ctx)
        native.block_add(T, mx.nd.array(vals, ctx=ctx), B, -2.0)
        ref = x.astype(np.float64)
        ref[where] += -2.0 * vals
        np.testing.assert_allclose(T.asnumpy(), ref, rtol=1e-6, atol=1e-6)
    with pytest.raises(mx.base.MXNetError, match="reaches past the buffer"):
        bad = mx.nd.array([[8, 1, 5, 0]], ctx=ctx, dtype=index)   # 8..12 of a 10-element buffer
        native.block_gather(mx.nd.zeros((10,), ctx=ctx), bad, 5).wait_to_read()


# ---- the 2^31-byte guard, without allocating --------------------------------------------------------
class _Fake:
    context, dtype = mx.cpu(), np.float32

    def __init__(self, size):
        self.size = size


@needs_library
def test_buffers_over_2_31_bytes_are_refused_in_one_line():
    assert native.check_size(2 ** 29, 4) == 2 ** 31
    with pytest.raises(ValueError) as e:
        native.check_size(2 ** 29 + 1, 4, "tensor")
    assert "\n" not in str(e.value) and "larger than 2^31 bytes" in str(e.value)
    assert native.usable(_Fake(2 ** 29)) and not native.usable(_Fake(2 ** 29 + 1))
    # the operators' own guard, reached through shape inference (nothing allocated)
    for op, kw in (("gs_topk", {"k": "1"}), ("gs_cast_fp16", {}), ("gs_sign_pack", {})):
        sym = getattr(mx.sym, op)(mx.sym.var("x"), **kw)
        with pytest.raises(mx.base.MXNetError, match="larger than 2\\^31 bytes"):
            sym.infer_shape(x=(2 ** 29 + 1,))
        sym.infer_shape(x=(2 ** 29,))


# ---- the compressors: compiled path against their MXNet path ------------------------------------------
def dense_c(comp, v, ctx):
    """0.5 C(v) through the payload's add_to, and 0.5 of three workers' C(v) through add_gathered."""
    x = mx.nd.array(v, ctx=ctx)
    pl = comp.compress(x, 0, 0)
    out = mx.nd.zeros(x.shape, ctx=ctx)
    pl.add_to(out, pl.tensors, 0.5)
    both = mx.nd.zeros(x.shape, ctx=ctx)
    # three workers' payloads as allgather concatenates them
    tensors = [mx.nd.concat(*[t] * 3, dim=0) for t in pl.tensors] if pl.tensors else []
    if tensors:
        pl.add_gathered(both, tensors, 3, 0.5)
    return out.asnumpy(), both.asnumpy(), pl


def generic(monkeypatch):
    monkeypatch.setattr(native, "LOADED", False)


@needs_library
@pytest.mark.parametrize("ctx", CTXS, ids=str)
@pytest.mark.parametrize("name", ["topk", "sign", "fp16"])
@pytest.mark.parametrize("shape", [(1,), (7,), (30, 20), (101, 1001)])
def test_compressors_compiled_path_equals_their_mxnet_path(name, shape, ctx, monkeypatch):
    v = np.random.RandomState(len(shape)).normal(size=shape).astype(np.float32)
    comp = make_compressor(name, ratio=8)
    compiled = dense_c(comp, v, ctx) if name != "fp16" else None
    if name == "fp16":
        x = mx.nd.array(v, ctx=ctx)
        pl = comp.compress(x, 0, 0)
        assert pl.finite is not None and pl.finite.asscalar() == 1.0
        half = pl.tensors[0].asnumpy()
        generic(monkeypatch)
        pl2 = comp.compress(x, 0, 0)
        assert pl2.finite is None
        np.testing.assert_array_equal(half.view(np.uint16), pl2.tensors[0].asnumpy().view(np.uint16))
        return
    generic(monkeypatch)
    reference = dense_c(comp, v, ctx)
    tol = dict(rtol=0, atol=0) if name == "topk" else dict(rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(compiled[0], reference[0], **tol)
    np.testing.assert_allclose(compiled[1], reference[1], rtol=1e-6, atol=1e-6)
    assert compiled[2].nbytes == reference[2].nbytes


@needs_library
@pytest.mark.parametrize("ctx", CTXS, ids=str)
@pytest.mark.parametrize("n", [1, 33, 100_003])
def test_fused_error_feedback_equals_the_unfused_mxnet_path(n, ctx, monkeypatch):
    rs = np.random.RandomState(n)
    g, r = rs.normal(size=n).astype(np.float32), rs.normal(size=n).astype(np.float32)
    comp = make_compressor("topk", ratio=16)

    def run():
        R = mx.nd.array(r, ctx=ctx)
        pl = comp.compress_feedback(mx.nd.array(g, ctx=ctx), R, 0, 0)
        c = mx.nd.zeros((n,), ctx=ctx)
        pl.add_to(c, pl.tensors, 1.0)
        return R.asnumpy(), c.asnumpy()

    fused = run()
    generic(monkeypatch)
    unfused = run()
    for a, b in zip(fused, unfused):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(fused[0] + fused[1], g + r)     # nothing lost: r' + C(v) = v


# ---- the fallback ---------------------------------------------------------------------------------
SNIPPET = """
import sys, numpy as np, mxnet as mx
from gluon_suite.distributed import native
from gluon_suite.distributed.compression import make_compressor
v = np.random.RandomState(5).normal(size=(37, 11)).astype(np.float32)
out = {"loaded": np.array(native.LOADED)}
for name in ("topk", "sign", "fp16", "randomk", "bf16"):
    x = mx.nd.array(v)
    pl = make_compressor(name, ratio=8).compress(x, 0, 0)
    c = mx.nd.zeros(x.shape)
    pl.add_to(c, pl.tensors, 1.0)
    out[name] = c.asnumpy()
R = mx.nd.array(v)
make_compressor("topk", ratio=8).compress_feedback(mx.nd.array(v * 0.5), R, 0, 0)
out["ef"] = R.asnumpy()
np.savez(sys.argv[1], **out)
"""


def run_snippet(tmp_path, setting):
    envs = dict(os.environ, GLUON_SUITE_COMM_KERNELS=setting)
    out = tmp_path / "out.npz"
    p = subprocess.run([sys.executable, "-c", SNIPPET, str(out)], env=envs, cwd=REPO, capture_output=True,
                       text=True, timeout=600)
    assert p.returncode == 0, p.stderr[-3000:]
    return dict(np.load(out)), [ln for ln in p.stderr.splitlines() if "compression kernels" in ln]


def test_a_library_that_does_not_load_falls_back_with_one_line(tmp_path, monkeypatch):
    bad = tmp_path / "libgs_comm_kernels.so"
    bad.write_bytes(b"not a shared library")
    got, lines = run_snippet(tmp_path, str(bad))
    assert not got["loaded"]
    assert len(lines) == 1 and lines[0].startswith("gluon_suite.distributed: compiled compression kernels "
                                                   "unavailable, using MXNet's operators: ") and str(bad) in lines[0]
    off, quiet = run_snippet(tmp_path, "off")
    assert not off["loaded"] and not quiet
    # the fallback is MXNet's path exactly: the same numbers as this process with the kernels bypassed
    generic(monkeypatch)
    v = np.random.RandomState(5).normal(size=(37, 11)).astype(np.float32)
    for name in ("topk", "sign", "fp16", "randomk", "bf16"):
        x = mx.nd.array(v)
        pl = make_compressor(name, ratio=8).compress(x, 0, 0)
        c = mx.nd.zeros(x.shape)
        pl.add_to(c, pl.tensors, 1.0)
        assert np.count_nonzero(c.asnumpy()) == {"randomk": 51, "topk": 25}.get(name, v.size)
        np.testing.assert_array_equal(got[name], c.asnumpy())
        np.testing.assert_array_equal(off[name], c.asnumpy())
    R = mx.nd.array(v)
    make_compressor("topk", ratio=8).compress_feedback(mx.nd.array(v * 0.5), R, 0, 0)
    np.testing.assert_array_equal(got["ef"], R.asnumpy())


def test_naming_a_missing_library_is_refused_in_one_line(tmp_path):
    with pytest.raises(UserError, match="GLUON_SUITE_COMM_KERNELS=.* names no file"):
        env("GLUON_SUITE_COMM_KERNELS", {"GLUON_SUITE_COMM_KERNELS": str(tmp_path / "missing.so")})
