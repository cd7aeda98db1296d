"""CSER's step without whole-bucket copies (``csrc/bucket_kernels.cc``): ``native.cser_delta``
(u <- u - w, e <- e - u, reading the members in place) and ``native.members_block_add`` (GRBS's
slabs added into the members' own arrays), against float64 NumPy references on buckets of mixed
shapes (an empty member, one element, odd sizes, four axes) on cpu(0) and cpu(1), int32 and int64
slab rows; the refusals (a row across two members or past the end, 2^31 bytes) in one line; and a
CSER trainer on this path equal, bit for bit, to the gather-and-scatter path it replaces, for both
C1 operands, the C2-only reset, several buckets, and weights oneDNN had re-laid by an inference
forward (docs/methods.md, "CSER")."""
import mxnet as mx
import numpy as np
import pytest
from mxnet import autograd, gluon

from gluon_suite.distributed import DistributedTrainer, LocalCommunicator, make_algorithm, native
from gluon_suite.distributed.buckets import Bucket
from gluon_suite.distributed.compression import make_compressor

from .test_comm_kernels import needs_library
from .test_cser_kernel import CTXS, SHAPES, mixed_bucket


def _f64(a):
    return a.asnumpy().astype(np.float64)


@needs_library
@pytest.mark.parametrize("ctx", CTXS, ids=str)
def test_cser_delta_against_float64(ctx):
    bucket, values = mixed_bucket(ctx, seed=3)
    n = sum(v.size for v in values)
    rs = np.random.RandomState(5)
    u0, e0 = rs.normal(size=n).astype(np.float32), rs.normal(size=n).astype(np.float32)
    u, e = mx.nd.array(u0, ctx=ctx), mx.nd.array(e0, ctx=ctx)
    assert bucket.subtract_weights(u, e)
    w = np.concatenate([v.astype(np.float64).ravel() for v in values])
    # a float32 difference is the float64 one rounded once (both operands are float32)
    want_u = (u0.astype(np.float64) - w).astype(np.float32)
    want_e = (e0.astype(np.float64) - want_u.astype(np.float64)).astype(np.float32)
    np.testing.assert_array_equal(u.asnumpy(), want_u)
    np.testing.assert_array_equal(e.asnumpy(), want_e)
    for wt, v in zip(bucket.weights(), values):   # the members are only read
        np.testing.assert_array_equal(wt.asnumpy(), v)


def member_rows(shapes, seed):
    """Slab rows (origin, rows, row length, row stride) in the members' flat order: for each
    non-empty member of at least two elements a random rectangle of its (rows, rest) view, and the
    flat positions they cover, in order."""
    rs, rows, pos, at = np.random.RandomState(seed), [], [], 0
    for s in shapes:
        size = int(np.prod(s))
        if size >= 2:
            d0 = s[0]
            inner = size // d0
            r0 = rs.randint(d0)
            nr = rs.randint(1, d0 - r0 + 1)
            c0 = rs.randint(inner)
            ln = rs.randint(1, inner - c0 + 1)
            rows.append((at + r0 * inner + c0, nr, ln, inner))
            pos += [at + (r0 + r) * inner + c0 + k for r in range(nr) for k in range(ln)]
        at += size
    return np.array(rows, dtype=np.int64), np.array(pos, dtype=np.int64)


@needs_library
@pytest.mark.parametrize("ctx", CTXS, ids=str)
@pytest.mark.parametrize("index", ["int32", "int64"])
def test_members_block_add_against_float64(ctx, index):
    bucket, values = mixed_bucket(ctx, seed=6)
    rows, pos = member_rows(SHAPES, 7)
    vals = np.random.RandomState(8).normal(size=pos.size).astype(np.float32)
    blocks = mx.nd.array(rows, ctx=ctx, dtype=index)
    bucket.add_blocks(mx.nd.array(vals, ctx=ctx), blocks, -0.5)
    flat = np.concatenate([v.astype(np.float64).ravel() for v in values])
    want = flat.copy()
    want[pos] += -0.5 * vals.astype(np.float64)
    got = np.concatenate([_f64(w).ravel() for w in bucket.weights()])
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-7)
    untouched = np.ones(flat.size, bool)
    untouched[pos] = False
    np.testing.assert_array_equal(got[untouched], flat[untouched])
    # the same float32 additions as the flat-vector operator
    ref = mx.nd.array(flat.astype(np.float32), ctx=ctx)
    native.block_add(ref, mx.nd.array(vals, ctx=ctx), blocks, -0.5)
    np.testing.assert_array_equal(got.astype(np.float32), ref.asnumpy())


@needs_library
def test_a_block_row_runs_on_into_the_next_members():
    # GRBS over the whole bucket (structure "flat") draws slabs of the flat vector, not of a member
    shapes = [(3, 4), (0,), (2,), (5,)]
    ws = [mx.nd.zeros(s) for s in shapes if int(np.prod(s))]
    vals = np.arange(1, 9, dtype=np.float32)
    native.members_block_add(ws, mx.nd.array(vals), mx.nd.array([[9, 2, 4, 5]], dtype="int64"), 2.0)
    want = np.zeros(19)
    want[[9, 10, 11, 12, 14, 15, 16, 17]] = 2.0 * vals
    np.testing.assert_array_equal(np.concatenate([w.asnumpy().ravel() for w in ws]), want)


@needs_library
def test_members_block_add_refusals_are_one_line():
    ws = [mx.nd.zeros((3, 4)), mx.nd.zeros((5,))]
    vals = mx.nd.ones((6,))

    def add(rows):
        native.members_block_add(ws, vals, mx.nd.array(rows, dtype="int64"))
        mx.nd.waitall()
    with pytest.raises(mx.base.MXNetError, match="reaches past the members' 17 elements"):
        add([[14, 1, 6, 0]])
    with pytest.raises(mx.base.MXNetError, match="the blocks hold 4 elements, the values 6"):
        add([[0, 2, 2, 4]])
    with pytest.raises(mx.base.MXNetError, match=r"blocks must be \(m, 4\)"):
        mx.nd.gs_members_block_add(vals, mx.nd.zeros((1, 3), dtype="int64"), *ws, members="2", out=ws)
    # by the declared shapes: nothing is allocated
    xs = [mx.sym.var("a"), mx.sym.var("b")]
    delta = mx.sym.gs_cser_delta(mx.sym.var("u"), mx.sym.var("e"), *xs, members="2")
    add_sym = mx.sym.gs_members_block_add(mx.sym.var("v"), mx.sym.var("k"), *xs, members="2")
    with pytest.raises(mx.base.MXNetError, match="gs_cser_delta: a bucket of 2147483652 bytes is larger"):
        delta.infer_shape(u=(2 ** 29 + 1,), e=(2 ** 29 + 1,), a=(2 ** 28,), b=(2 ** 28 + 1,))
    with pytest.raises(mx.base.MXNetError, match="gs_members_block_add: a bucket of 2147483652 bytes"):
        add_sym.infer_shape(v=(4,), k=(1, 4), a=(2 ** 28,), b=(2 ** 28 + 1,))
    with pytest.raises(mx.base.MXNetError, match="gs_cser_delta: u has 10 elements, e 10, the members 9"):
        delta.infer_shape(u=(10,), e=(10,), a=(3, 2), b=(3,))


# ---- the trainer: the fused path against the gather-and-scatter path ------------------------------
def _net(ctx, conv):
    # the same parameter names in every run, whatever blocks were made before (a name-sorted
    # trainer index keys GRBS's choice of blocks: dense9/dense10 sort unlike dense11/dense12)
    net = gluon.nn.HybridSequential(prefix="cserfused_")
    with net.name_scope():
        if conv:
            net.add(gluon.nn.Conv2D(8, 3, padding=1), gluon.nn.BatchNorm(), gluon.nn.Activation("relu"),
                    gluon.nn.Conv2D(4, 3), gluon.nn.Flatten())
        net.add(gluon.nn.Dense(33), gluon.nn.Activation("tanh"), gluon.nn.Dense(5))
    mx.random.seed(11)
    net.initialize(mx.init.Xavier(), ctx=ctx)
    return net


def train(ctx, fused, monkeypatch, conv=False, steps=7, **cser):
    """Weights and residuals after each step of a one-worker CSER job; ``fused`` False sends the
    step through the gather-and-scatter path (compiled block operators on flat vectors)."""
    calls = []
    with monkeypatch.context() as m:
        if not fused:
            m.setattr(Bucket, "subtract_weights", lambda self, u, e, x=None: False)
        for name in ("members_gather", "members_scatter"):
            real = getattr(native, name)
            m.setattr(native, name, lambda *a, _real=real, _n=name: calls.append(_n) or _real(*a))
        net = _net(ctx, conv)
        rs = np.random.RandomState(4)
        x = mx.nd.array(rs.normal(size=(6, 2, 6, 6) if conv else (6, 12)), ctx=ctx)
        y = mx.nd.array(rs.randint(0, 5, size=6), ctx=ctx)
        net(x)
        algo = make_algorithm("cser", seed=9, **cser)
        tr = DistributedTrainer(net.collect_params(), "nag", {"learning_rate": 0.05, "momentum": 0.9},
                                communicator=LocalCommunicator(), algorithm=algo, bucket_mb=0.0005)
        loss_fn, out = gluon.loss.SoftmaxCrossEntropyLoss(), []
        for t in range(steps):
            with autograd.record():
                loss = loss_fn(net(x), y)
            loss.backward()
            if conv and t % 3 == 0:
                net(x)                       # an inference forward: oneDNN re-lays the conv weights
            # MXNet pushes those re-layouts (and the training forward's way back) from inside the
            # running operators, so they may still be queued after this step's operators and a host
            # read of a weight can race them (a crash or stale values in MXNet itself, with
            # gluon.Trainer too): drained here, so the step starts from blocked conv weights every time
            mx.nd.waitall()
            tr.step(6)
            mx.nd.waitall()
            out.append([p.data().asnumpy() for p in net.collect_params().values()] +
                       [e.asnumpy() for e in algo.err])
    return out, calls, algo.buckets


CONFIGS = {
    "update": dict(compressor="grbs", ratio=4, compressor2="grbs", ratio2=2, period=3),
    "model": dict(compressor="grbs", ratio=4, compressor2="grbs", ratio2=2, period=3, c1_operand="model"),
    "c2_only": dict(compressor="grbs", ratio=8, compressor2="none", period=2, c1_operand="model",
                    reset_step="c2_only"),
    "pl": dict(compressor="zero", compressor2="grbs", ratio2=4, period=3),
    "flat": dict(compressor=make_compressor("grbs", ratio=4, structure="flat", seed=9), compressor2="grbs",
                 ratio2=2, period=3),
}


@needs_library
@pytest.mark.parametrize("ctx", CTXS, ids=str)
@pytest.mark.parametrize("config", list(CONFIGS))
@pytest.mark.parametrize("conv", [False, True], ids=["dense", "conv"])
def test_cser_steps_without_bucket_copies_equal_the_gather_path(ctx, config, conv, monkeypatch):
    fused, calls, buckets = train(ctx, True, monkeypatch, conv, **CONFIGS[config])
    plain, plain_calls, _ = train(ctx, False, monkeypatch, conv, **CONFIGS[config])
    in_place = sum(b.writable_in_place for b in buckets)
    assert len(buckets) >= 2 and in_place >= 1 and (in_place < len(buckets)) == conv
    for t, (a, b) in enumerate(zip(fused, plain)):
        for x, y in zip(a, b):
            np.testing.assert_array_equal(x, y, err_msg=f"step {t}")
    assert np.count_nonzero(fused[-1][-1]) > 0        # a residual is kept
    # the weights are gathered before the update; after it only where the slabs cannot go into
    # them in place: a reset with a dense C2, or a bucket holding a convolution's weight (there the
    # one pass gathers them)
    period = CONFIGS[config]["period"]
    resets = sum((t + 1) % period == 0 for t in range(7)) if CONFIGS[config]["compressor2"] != "grbs" else 0
    assert calls.count("members_gather") == len(buckets) * 7 + in_place * resets
    assert plain_calls.count("members_gather") == len(buckets) * 14
    if not conv:
        assert calls.count("members_scatter") == len(buckets) * resets


@needs_library
def test_only_weights_without_a_blocked_layout_are_written_in_place():
    # oneDNN re-lays a convolution's weight after an inference forward, and an operator that writes
    # only part of it fails; dense and batch-norm weights stay plain. This is what
    # Bucket.writable_in_place assumes of MXNet: should it change, this test says so
    net = _net(mx.cpu(0), conv=True)
    net(mx.nd.ones((2, 2, 6, 6))).wait_to_read()
    failed = {}
    for p in net.collect_params().values():
        try:
            native.members_block_add([p.data()], mx.nd.ones((1,)), mx.nd.array([[0, 1, 1, 0]], dtype="int64"))
            p.data().asnumpy()
            failed[p.name] = False
        except mx.base.MXNetError:
            failed[p.name] = True
        assert Bucket(0, [(0, p)]).writable_in_place == (p.data().ndim < 3), p.name
    assert any(failed.values())
    for p in net.collect_params().values():
        assert not failed[p.name] or not Bucket(0, [(0, p)]).writable_in_place, p.name
