"""GRBS on the compiled block kernels (``gs_block_gather``/``gs_block_add``, one call each per
bucket) against MXNet's path (slice, take and scatter operators) and a float64 NumPy reference of
the published rule (``reference_mask`` of tests/distributed/test_algorithms.py): the payload bit
for bit, its decompression bit for bit at several alphas, on a bucket of mixed shapes, on one
tensor and with ``structure='flat'``, on cpu(0) and cpu(1); and a CSER (GRBS) trainer gives the
same weights with and without the kernels."""
import mxnet as mx
import numpy as np
import pytest
from mxnet import autograd, gluon

from gluon_suite.distributed import DistributedTrainer, LocalCommunicator, make_algorithm, native
from gluon_suite.distributed.buckets import layout_buckets
from gluon_suite.distributed.compression import make_compressor

from .test_algorithms import reference_mask
from .test_comm_kernels import needs_library

CTXS = [mx.cpu(0), mx.cpu(1)]
SHAPES = [(16, 12, 3, 3), (1,), (7,), (5, 3), (33, 7), (4097,), (64, 3), (2, 1, 5)]
ALPHAS = [1.0, -1.0, 0.5, 1.0 / 3.0]
STEPS = 10


def bucket_of(ctx):
    params = []
    for i, shape in enumerate(SHAPES):
        p = gluon.Parameter(f"g{i}", shape=shape)
        p.initialize(mx.init.Zero(), ctx=ctx)
        params.append((i + 2, p))
    (bucket,) = layout_buckets(params, bucket_mb=25)
    return bucket


def both_paths(monkeypatch, fn):
    """``fn()`` with the compiled kernels (which it must call), then with MXNet's operators."""
    calls = []
    for name in ("block_gather", "block_add"):
        real = getattr(native, name)
        monkeypatch.setattr(native, name, lambda *a, _real=real, _name=name, **kw: calls.append(_name) or _real(*a, **kw))
    compiled = fn()
    monkeypatch.setattr(native, "LOADED", False)
    generic = fn()
    monkeypatch.setattr(native, "LOADED", True)
    assert set(calls) == {"block_gather", "block_add"} or not compiled_sends(compiled), calls
    return compiled, generic


def compiled_sends(result):
    """Whether a run sent anything (a payload with elements, or weights: a trainer)."""
    return not isinstance(result, tuple) or result[0][0].size > 0


def run_payload(comp, v, key, step, target, layout=None):
    """(payload values, target + alpha * C(v) for each alpha, and on a float64 target)."""
    pl = comp.compress(mx.nd.array(v, ctx=target.context), key, step, layout=layout)
    out = [np.concatenate([t.asnumpy().ravel() for t in pl.tensors]) if pl.tensors else np.zeros(0, np.float32)]
    for alpha in ALPHAS:
        t = target.copy()
        pl.add_to(t, pl.tensors, alpha)
        out.append(t.asnumpy())
    t64 = target.astype("float64")
    pl.add_to(t64, pl.tensors, -1.0)
    out.append(t64.asnumpy())
    return out, [tuple(t.shape) for t in pl.tensors]


def check_against_reference(got, v, target, mask):
    m = mask.astype(bool)
    np.testing.assert_array_equal(got[0], v[m])                      # the slab's elements, in order
    for alpha, t in zip(ALPHAS, got[1:]):
        want = target.astype(np.float64) + alpha * np.where(m, v.astype(np.float64), 0.0)
        np.testing.assert_allclose(t, want, rtol=1e-6, atol=1e-6)
    np.testing.assert_array_equal(got[-1], target.astype(np.float64) - np.where(m, v, 0).astype(np.float64))


@needs_library
@pytest.mark.parametrize("ctx", CTXS, ids=str)
@pytest.mark.parametrize("ratio", [4, 32])
def test_grbs_bucket_on_the_block_kernels_equals_mxnet_path_and_float64_reference(ratio, ctx, monkeypatch):
    bucket = bucket_of(ctx)
    comp = make_compressor("grbs", ratio=ratio, seed=11)
    rs = np.random.RandomState(ratio)
    sent = 0
    for step in range(STEPS):
        v = rs.normal(size=bucket.size).astype(np.float32)
        target = mx.nd.array(rs.normal(size=bucket.size).astype(np.float32), ctx=ctx)
        compiled, generic = both_paths(monkeypatch, lambda: run_payload(comp, v, bucket.key, step, target, bucket))
        assert compiled[1] == generic[1]
        for a, b in zip(compiled[0], generic[0]):
            np.testing.assert_array_equal(a, b)
        mask = np.concatenate([reference_mask(s, ratio, 11, i, step).ravel()
                               for s, i in zip(bucket.shapes, bucket.indices)])
        check_against_reference(compiled[0], v, target.asnumpy(), mask)
        sent += int(mask.sum())
    assert sent > 0


@needs_library
@pytest.mark.parametrize("ctx", CTXS, ids=str)
@pytest.mark.parametrize("shape,structure", [((16, 12, 3, 3), "tensor"), ((33, 7), "tensor"), ((4097,), "tensor"),
                                             ((1000,), "flat")])
def test_grbs_one_tensor_on_the_block_kernels_equals_mxnet_path_and_float64_reference(shape, structure, ctx,
                                                                                       monkeypatch):
    comp = make_compressor("grbs", ratio=8, seed=3, structure=structure)
    rs = np.random.RandomState(len(shape))
    sent = 0
    for step in range(STEPS):
        v = rs.normal(size=shape).astype(np.float32)
        target = mx.nd.array(rs.normal(size=shape).astype(np.float32), ctx=ctx)
        compiled, generic = both_paths(monkeypatch, lambda: run_payload(comp, v, 5, step, target))
        assert compiled[1] == generic[1]          # the slab's shape, as MXNet's slice gives it
        for a, b in zip(compiled[0], generic[0]):
            np.testing.assert_array_equal(a, b)
        mask = reference_mask(shape, 8, 3, 5, step)
        check_against_reference([c.ravel() for c in compiled[0]], v.ravel(), target.asnumpy().ravel(), mask.ravel())
        sent += int(mask.sum())
    assert sent > 0


def train_cser_grbs(steps=6):
    mx.random.seed(3)
    net = gluon.nn.HybridSequential()
    net.add(gluon.nn.Conv2D(4, 3, in_channels=2), gluon.nn.Flatten(), gluon.nn.Dense(5, in_units=64))
    net.initialize(mx.init.Normal(0.3))
    tr = DistributedTrainer(net.collect_params(), "sgd", {"learning_rate": 0.05, "momentum": 0.9},
                            communicator=LocalCommunicator(),
                            algorithm=make_algorithm("cser", compressor="grbs", ratio=4, compressor2="grbs", ratio2=2,
                                                     period=3))
    rs = np.random.RandomState(0)
    x, y = mx.nd.array(rs.normal(size=(6, 2, 6, 6))), mx.nd.array(rs.normal(size=(6, 5)))
    for _ in range(steps):
        with autograd.record():
            loss = gluon.loss.L2Loss()(net(x), y)
        loss.backward()
        tr.step(6)
    return [p.data().asnumpy() for _, p in sorted(net.collect_params().items())]


@needs_library
def test_a_cser_grbs_trainer_gives_the_same_weights_with_and_without_the_kernels(monkeypatch):
    compiled, generic = both_paths(monkeypatch, train_cser_grbs)
    for a, b in zip(compiled, generic):
        np.testing.assert_array_equal(a, b)
