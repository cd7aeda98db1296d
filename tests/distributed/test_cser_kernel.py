"""The CSER step's per-tensor work as whole-bucket calls (``csrc/bucket_kernels.cc``): the members'
copies into a bucket's flat vector and back (``native.members_gather``/``members_scatter``, used by
``Bucket.gather_weights``/``scatter``) and GRBS's draws and slabs for a bucket
(``native.grbs_rows``), against float64 NumPy references on buckets of mixed shapes (an empty
member, one element, odd sizes, four axes) on cpu(0) and cpu(1); the 2^31-byte guard by declared
shapes; the compiled and MXNet paths agreeing; and a one-worker CSER (GRBS) trainer against a
float64 reference of its residual, on both paths."""
import mxnet as mx
import numpy as np
import pytest
from mxnet import gluon

from gluon_suite.distributed import DistributedTrainer, LocalCommunicator, make_algorithm, native
from gluon_suite.distributed.buckets import Bucket
from gluon_suite.distributed.compression import make_compressor

from .test_algorithms import reference_grbs_region, reference_mask
from .test_comm_kernels import _Fake, needs_library

CTXS = [mx.cpu(0), mx.cpu(1)]
SHAPES = [(16, 12, 3, 3), (0,), (1,), (7,), (5, 3), (33, 7), (4097,), (2, 1, 5), (70001,), (3, 0)]


class _Member:
    """What a bucket reads of a parameter (shape, dtype, contexts, its arrays): a stand-in that may
    be empty, which a Gluon parameter of MXNet 1.9 cannot."""

    def __init__(self, array):
        self.shape, self.dtype, self._data = array.shape, array.dtype, [array]

    def list_ctx(self):
        return [self._data[0].context]


def mixed_bucket(ctx, shapes=SHAPES, seed=0):
    """A bucket of members of ``shapes`` holding N(0, 1) float32 values, and those values."""
    rs = np.random.RandomState(seed)
    values = [rs.normal(size=s).astype(np.float32) for s in shapes]
    arrays = [mx.nd.array(v, ctx=ctx) if v.size else mx.nd.empty(v.shape, ctx=ctx) for v in values]
    return Bucket(0, [(i + 3, _Member(a)) for i, a in enumerate(arrays)]), values


def on_both_paths(monkeypatch, fn):
    """``fn()`` with the compiled kernels, then with MXNet's operators."""
    compiled = fn()
    monkeypatch.setattr(native, "LOADED", False)
    generic = fn()
    monkeypatch.setattr(native, "LOADED", True)
    return compiled, generic


# ---- members to a flat vector and back ------------------------------------------------------------
@needs_library
@pytest.mark.parametrize("ctx", CTXS, ids=str)
def test_members_gather_and_scatter_against_float64(ctx, monkeypatch):
    bucket, values = mixed_bucket(ctx)
    calls = []
    for name in ("members_gather", "members_scatter"):
        real = getattr(native, name)
        monkeypatch.setattr(native, name, lambda *a, _real=real, _n=name: calls.append(_n) or _real(*a))
    flat = bucket.gather_weights("after")
    want = np.concatenate([v.astype(np.float64).ravel() for v in values])
    assert flat.shape == (want.size,) and flat.context == ctx
    np.testing.assert_array_equal(flat.asnumpy().astype(np.float64), want)
    new = np.random.RandomState(1).normal(size=want.size)
    bucket.scatter(mx.nd.array(new, ctx=ctx), bucket.weights())
    at = 0
    for w, v in zip(bucket.weights(), values):
        assert w.shape == v.shape
        np.testing.assert_array_equal(w.asnumpy().ravel(), new[at:at + v.size].astype(np.float32))
        at += v.size
    assert calls == ["members_gather", "members_scatter"]


@needs_library
@pytest.mark.parametrize("ctx", CTXS, ids=str)
def test_members_copies_equal_the_mxnet_path(ctx, monkeypatch):
    shapes = [s for s in SHAPES if int(np.prod(s))]    # MXNet's copies take no empty array

    def run():
        bucket, _ = mixed_bucket(ctx, shapes, seed=4)
        flat = bucket.gather_weights()
        bucket.scatter(flat * 3 - 1, bucket.weights())
        return [flat.asnumpy()] + [w.asnumpy() for w in bucket.weights()]
    compiled, generic = on_both_paths(monkeypatch, run)
    for a, b in zip(compiled, generic):
        np.testing.assert_array_equal(a, b)


@needs_library
def test_members_buffers_over_2_31_bytes_are_refused_in_one_line():
    # by the declared shapes: nothing is allocated
    for shapes, bad in ((((2 ** 28,), (2 ** 28,)), False), (((2 ** 28,), (2 ** 28 + 1,)), True)):
        xs = [mx.sym.var(f"x{j}") for j in range(len(shapes))]
        gather = mx.sym.gs_members_gather(*xs, members=str(len(xs)))
        scatter = mx.sym.gs_members_scatter(mx.sym.var("f"), shapes=native.shapes_text(shapes))
        if not bad:
            assert gather.infer_shape(**{f"x{j}": s for j, s in enumerate(shapes)})[1] == [(2 ** 29,)]
            assert scatter.infer_shape(f=(2 ** 29,))[1] == list(shapes)
            continue
        with pytest.raises(mx.base.MXNetError, match="gs_members_gather: a bucket of 2147483652 bytes is larger"):
            gather.infer_shape(**{f"x{j}": s for j, s in enumerate(shapes)})
        with pytest.raises(mx.base.MXNetError, match="larger than 2\\^31 bytes"):
            scatter.infer_shape(f=(2 ** 29 + 1,))
    for fn in (lambda f: native.members_gather([], f), lambda f: native.members_scatter(f, [], "")):
        with pytest.raises(ValueError) as e:
            fn(_Fake(2 ** 29 + 1))
        assert "\n" not in str(e.value) and "larger than 2^31 bytes" in str(e.value)


@needs_library
def test_members_scatter_refuses_shapes_that_do_not_cover_the_vector():
    f = mx.nd.zeros((10,))
    with pytest.raises(mx.base.MXNetError, match="the flat vector has 10 elements, the members 9"):
        mx.nd.gs_members_scatter(f, shapes="3x3", out=[mx.nd.zeros((3, 3))]).wait_to_read()
    with pytest.raises(mx.base.MXNetError, match="shapes must read"):
        mx.nd.gs_members_scatter(f, shapes="3,3")


# ---- GRBS's draws and slabs for a bucket ----------------------------------------------------------
def reference_rows(shapes, offsets, keys, ratio, seed, step):
    """The slabs (origin, rows, row length, row stride) of the members taking part, from the
    float64 reference rule; an empty member never takes part, a 0-d one is read as (1,)."""
    rows = []
    for shape, off, key in zip(shapes, offsets, keys):
        shape = tuple(shape) or (1,)
        if not int(np.prod(shape)):
            continue
        reg = reference_grbs_region(shape, ratio, seed, key, step)
        if reg is None:
            continue
        (b, e), inner = reg, int(np.prod(shape[len(reg[0]):]))
        if len(b) == 1:
            rows.append((off + b[0] * inner, 1, (e[0] - b[0]) * inner, 0))
        else:
            rows.append((off + (b[0] * shape[1] + b[1]) * inner, e[0] - b[0], (e[1] - b[1]) * inner, shape[1] * inner))
    return rows


@needs_library
@pytest.mark.parametrize("ratio,seed", [(4, 0), (32, 11), (3.5, 2 ** 40)])
def test_grbs_rows_of_a_bucket_equal_the_reference_draws(ratio, seed):
    shapes = SHAPES + [(), (1, 1), (64, 3), (9, 1000, 2)]
    bucket, _ = mixed_bucket(mx.cpu(), shapes)
    comp = make_compressor("grbs", ratio=ratio, seed=seed)
    sent = 0
    for step in (0, 1, 2, 7, 123_456, 9_000_000_000):
        tab = comp._bucket_table(bucket)
        rows, total = native.grbs_rows(seed, tab[0] + np.uint64(step * 1_000_003), tab[2], tab[3])
        want = reference_rows(bucket.shapes, bucket.offsets, bucket.indices, ratio, seed, step)
        assert [tuple(r) for r in rows.tolist()] == want
        assert total == sum(r[1] * r[2] for r in want)
        sent += len(want)
    assert sent > 0


@needs_library
@pytest.mark.parametrize("ctx", CTXS, ids=str)
def test_grbs_payload_of_a_bucket_with_an_empty_member_on_both_paths(ctx, monkeypatch):
    shapes = [(16, 12, 3, 3), (0,), (1,), (7,), (33, 7), (4097,)]
    bucket, values = mixed_bucket(ctx, shapes, seed=7)
    v = np.concatenate([x.ravel() for x in values])
    comp = make_compressor("grbs", ratio=4, seed=5)
    for step in range(6):
        def run():
            pl = comp.compress(mx.nd.array(v, ctx=ctx), bucket.key, step, layout=bucket)
            t = mx.nd.zeros((v.size,), ctx=ctx)
            pl.add_to(t, pl.tensors, -0.5)
            return [x.asnumpy() for x in pl.tensors], t.asnumpy()
        compiled, generic = on_both_paths(monkeypatch, run)
        mask = np.concatenate([reference_mask(s, 4, 5, i, step).ravel() if int(np.prod(s)) else np.zeros(0)
                               for s, i in zip(shapes, bucket.indices)]).astype(bool)
        for got in (compiled, generic):
            np.testing.assert_array_equal(np.concatenate(got[0] or [np.zeros(0, np.float32)]), v[mask])
            np.testing.assert_array_equal(got[1].astype(np.float64), np.where(mask, -0.5 * v.astype(np.float64), 0))


# ---- a CSER (GRBS) trainer ------------------------------------------------------------------------
TRAIN_SHAPES = [(16, 12, 3, 3), (1,), (7,), (5, 3), (33, 7), (4097,), (2, 1, 5)]


def train_cser(ctx, steps, period=3, lr=0.1):
    """Plain SGD through a one-worker CSER (GRBS 4, C2 GRBS 2, H period) on parameters of
    TRAIN_SHAPES with fixed gradients; the weights and residual after each step."""
    rs = np.random.RandomState(2)
    params = []
    for i, s in enumerate(TRAIN_SHAPES):
        p = gluon.Parameter(f"c{i}", shape=s)
        p.initialize(mx.init.Constant(0), ctx=ctx)
        p.set_data(mx.nd.array(rs.normal(size=s), ctx=ctx))
        params.append(p)
    grads = [rs.normal(size=s).astype(np.float32) for s in TRAIN_SHAPES]
    algo = make_algorithm("cser", compressor="grbs", ratio=4, compressor2="grbs", ratio2=2, period=period, seed=9)
    tr = DistributedTrainer(params, "sgd", {"learning_rate": lr, "wd": 0.0}, communicator=LocalCommunicator(),
                            algorithm=algo)
    out = []
    for _ in range(steps):
        for p, g in zip(params, grads):
            p.grad()[:] = g
            p.data()._fresh_grad = True
        tr.step(1)
        (bucket,) = algo.buckets
        err = {i: v.asnumpy().ravel() for i, v in zip(bucket.indices, bucket.views(algo.err[0]))}
        out.append(([p.data().asnumpy() for p in params], np.concatenate([err[i] for i in range(len(params))])))
    return out, [p.data().asnumpy() for p in params], grads


@needs_library
@pytest.mark.parametrize("ctx", CTXS, ids=str)
def test_a_one_worker_cser_grbs_step_against_float64_on_both_paths(ctx, monkeypatch):
    steps, period, lr = 7, 3, 0.1
    compiled, generic = on_both_paths(monkeypatch, lambda: train_cser(ctx, steps, period, lr))
    for (cw, ce), (gw, ge) in zip(compiled[0], generic[0]):
        for a, b in zip(cw, gw):
            np.testing.assert_array_equal(a, b)
        np.testing.assert_array_equal(ce, ge)
    # float64: one worker's average is its own payload, so x_i follows plain SGD and
    # e <- e - u + C1(u) every step, e <- e - C2(e) on every period-th step (docs/methods.md)
    rs = np.random.RandomState(2)
    w = [rs.normal(size=s).astype(np.float32).astype(np.float64) for s in TRAIN_SHAPES]
    grads = [g.astype(np.float64) for g in compiled[2]]
    e = [np.zeros(s) for s in TRAIN_SHAPES]
    for t in range(steps):
        for j, s in enumerate(TRAIN_SHAPES):
            u = lr * grads[j]
            w[j] = w[j] - u
            e[j] = e[j] - u + reference_mask(s, 4, 9, j, t) * u
            if (t + 1) % period == 0:
                e[j] = e[j] - reference_mask(s, 2, 9 + 7919, j, t) * e[j]
        cw, ce = compiled[0][t]
        for a, b in zip(cw, w):
            np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(ce, np.concatenate([x.ravel() for x in e]), rtol=1e-4, atol=1e-5)
    assert np.count_nonzero(compiled[0][-1][1]) > 0
