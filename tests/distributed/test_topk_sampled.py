"""Top-k on large buffers (docs/methods.md, "The compressors' compiled path"): the sampled bound
and its fallback to the histogram passes select exactly what a float64 reference selects, for data
the sample describes well and data it misleads on, with and without error feedback."""
import os

import mxnet as mx
import numpy as np
import pytest

from gluon_suite.distributed import native

BUILT = os.path.exists(native.DEFAULT_PATH) or os.environ.get("GLUON_SUITE_COMM_KERNELS")
pytestmark = pytest.mark.skipif(not BUILT, reason="compression kernels not built (make kernels)")
N = 300_007


def ref_topk(x, k):
    """Indices of the k largest |x| (NaN above inf, -0 equal to +0) in float64, ties to the lowest
    index, ascending."""
    nan = np.isnan(x)
    mag = np.where(nan, np.inf, np.abs(x.astype(np.float64)))
    order = np.lexsort((np.arange(len(x)), -mag, -nan.astype(np.int64)))   # last key first: NaN, |x|, index
    return np.sort(order[:k])


def cases():
    rs = np.random.RandomState(0)
    normal = rs.normal(size=N).astype(np.float32)
    ties = rs.randint(-3, 4, size=N).astype(np.float32)
    clustered = (rs.normal(size=N) * 1e-3).astype(np.float32)
    clustered[1000:1000 + N // 16] = rs.normal(size=N // 16) * 10   # the large values in one run
    spiky = (rs.normal(size=N) * 1e-3).astype(np.float32)
    spiky[rs.choice(N, 50, replace=False)] = 1e3                      # 50 equal, far above the rest
    special = rs.normal(size=N).astype(np.float32)
    special[rs.choice(N, 40, replace=False)] = np.nan
    special[rs.choice(N, 40, replace=False)] = -np.inf
    special[rs.rand(N) < 0.3] = -0.0
    return {"normal": normal, "ties": ties, "clustered": clustered, "spiky": spiky, "special": special}


# the sampled bound with the processor's vector candidates' pass (AVX-512 where it has it), with the
# portable pass, and the histogram passes
MODES = {"sampled": (True, True), "sampled-portable": (True, False), "histogram": (False, True)}


@pytest.mark.parametrize("mode", list(MODES))
@pytest.mark.parametrize("index", ["int32", "int64"])
@pytest.mark.parametrize("name", list(cases()))
def test_topk_on_large_buffers_matches_float64(name, index, mode):
    x = cases()[name]
    sampled, simd = MODES[mode]
    for k in (1, 37, N // 64, N // 32, N // 3, N - 1):
        want = ref_topk(x, k)
        vals, idx = native.topk(mx.nd.array(x), k, index, sampled=sampled, simd=simd)
        np.testing.assert_array_equal(idx.asnumpy(), want)
        np.testing.assert_array_equal(vals.asnumpy().view(np.uint32), x[want].view(np.uint32))


@pytest.mark.parametrize("mode", list(MODES))
@pytest.mark.parametrize("name", list(cases()))
def test_error_feedback_topk_on_large_buffers_matches_float64(name, mode):
    x = cases()[name]
    sampled, simd = MODES[mode]
    g = np.random.RandomState(1).normal(size=N).astype(np.float32)
    g[np.isnan(x)] = 0.0
    v = x + g
    for k in (1, N // 32):
        want = ref_topk(v, k)
        r = mx.nd.array(x)
        vals, idx = native.ef_topk(mx.nd.array(g), r, k, sampled=sampled, simd=simd)
        np.testing.assert_array_equal(idx.asnumpy(), want)
        np.testing.assert_array_equal(vals.asnumpy().view(np.uint32), v[want].view(np.uint32))
        left = v.copy()
        left[want] = 0.0
        np.testing.assert_array_equal(r.asnumpy().view(np.uint32), left.view(np.uint32))
