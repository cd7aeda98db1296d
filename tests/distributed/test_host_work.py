"""No host round trip on the hot path: inside ``trainer.step()`` no algorithm or compressor copies
a tensor to the host (``asnumpy``, ``asscalar``) or uploads a host array the size of a tensor
(``mx.nd.array``: only look-up tables, built once, and a few numbers per tensor may be uploaded), for
every algorithm x compressor, on one context and on two."""
import contextlib

import mxnet as mx
import numpy as np
import pytest
from mxnet import autograd, gluon

from gluon_suite.distributed import DistributedTrainer, LocalCommunicator, native

SGD = ("sgd", {"learning_rate": 0.05, "momentum": 0.9, "wd": 1e-4})
CONFIGS = {
    "sync": (SGD, dict(algorithm="sync")),
    "sync_fp16": (SGD, dict(algorithm="sync", compressor="fp16")),
    "sync_grbs": (SGD, dict(algorithm="sync", compressor="grbs", ratio=8)),
    "sync_randomk": (SGD, dict(algorithm="sync", compressor="randomk", ratio=8)),
    "sync_grbs_per_tensor": (SGD, dict(algorithm="sync", compressor="grbs", ratio=8, bucket_mb=0)),
    "ef": (SGD, dict(algorithm="ef")),
    "ef_topk": (SGD, dict(algorithm="ef", compressor="topk", ratio=8)),
    "ef_sign": (SGD, dict(algorithm="ef", compressor="sign")),
    "ef_sign_min_size_warmup": (SGD, dict(algorithm="ef", compressor="sign", min_size=100,
                                          warmup_steps=2)),
    "local": (SGD, dict(algorithm="local", period=2)),
    "cser_grbs": (SGD, dict(algorithm="cser", compressor="grbs", ratio=8, period=2)),
    "cser_randomk": (SGD, dict(algorithm="cser", compressor="randomk", ratio=8, period=2)),
    "cser_pl": (SGD, dict(algorithm="cser", compressor="zero", compressor2="grbs", ratio2=4,
                          period=2)),
    "local_adaalter": (("adaalter", {"learning_rate": 0.01, "epsilon": 1.0}),
                       dict(algorithm="local_adaalter", period=2, warmup_steps=1)),
}
CONTEXTS = {"1ctx": [mx.cpu(0)], "2ctx": [mx.cpu(0), mx.cpu(1)]}


class HostCopy(AssertionError):
    pass


@contextlib.contextmanager
def no_host_copies(calls, uploads=None):
    """Within the block, any NDArray -> host copy raises (and is counted in ``calls``); the sizes
    of host arrays turned into NDArrays with ``mx.nd.array`` are appended to ``uploads``."""
    saved = {name: getattr(mx.nd.NDArray, name) for name in ("asnumpy", "asscalar")}
    upload = mx.nd.array

    def counted(source, *args, **kwargs):
        if uploads is not None:
            uploads.append(int(np.size(source)))
        return upload(source, *args, **kwargs)

    def forbidden(name):
        def raise_(self, *args, **kwargs):
            calls.append(name)
            raise HostCopy(f"NDArray.{name}() called inside trainer.step() (shape {self.shape})")
        return raise_
    try:
        for name in saved:
            setattr(mx.nd.NDArray, name, forbidden(name))
        mx.nd.array = counted
        yield
    finally:
        mx.nd.array = upload
        for name, fn in saved.items():
            setattr(mx.nd.NDArray, name, fn)


def test_the_guard_catches_a_host_copy():
    calls = []
    with pytest.raises(HostCopy):
        with no_host_copies(calls):
            mx.nd.ones((1,)).sum().asscalar()
    with pytest.raises(HostCopy):
        with no_host_copies(calls):
            mx.nd.ones((3,)).asnumpy()
    uploads = []
    with no_host_copies([], uploads):
        mx.nd.array(np.zeros(300))
    assert calls == ["asscalar", "asnumpy"] and uploads == [300]
    assert mx.nd.ones((2,)).asnumpy().tolist() == [1.0, 1.0]   # restored afterwards
    assert mx.nd.array is not None and mx.nd.array([1]).asnumpy().tolist() == [1.0]


@pytest.mark.parametrize("ctx", list(CONTEXTS))
@pytest.mark.parametrize("cfg", list(CONFIGS))
def test_step_makes_no_host_copy(cfg, ctx, monkeypatch):
    contexts = CONTEXTS[ctx]
    (opt, opt_params), kwargs = CONFIGS[cfg]
    mx.random.seed(0)
    net = gluon.nn.HybridSequential()
    net.add(gluon.nn.Conv2D(8, 3, in_channels=3), gluon.nn.Flatten(), gluon.nn.Dense(64), gluon.nn.Dense(5))
    net.initialize(mx.init.Xavier(), ctx=contexts)
    x = mx.nd.array(np.random.RandomState(0).normal(size=(4, 3, 8, 8)))
    y = mx.nd.array(np.random.RandomState(1).normal(size=(4, 5)))
    net(x.as_in_context(contexts[0]))   # deferred shapes
    tr = DistributedTrainer(net.collect_params(), opt, dict(opt_params),
                            communicator=LocalCommunicator(), **kwargs)
    loss_fn = gluon.loss.L2Loss()
    before = [p.data(contexts[0]).copy() for p in net.collect_params().values()]
    calls, uploads, late_uploads, shared = [], [], [], []
    host_array = native.host_array

    def counted_host_array(a, ctx):
        shared.append(int(np.size(a)))
        return host_array(a, ctx)
    monkeypatch.setattr(native, "host_array", counted_host_array)
    for step in range(6):   # past warm-up and across several synchronisation periods
        xs = gluon.utils.split_and_load(x, contexts)
        ys = gluon.utils.split_and_load(y, contexts)
        with autograd.record():
            losses = [loss_fn(net(a), b) for a, b in zip(xs, ys)]
        autograd.backward(losses)
        with no_host_copies(calls, uploads if step < 3 else late_uploads):
            tr.step(4)
            mx.nd.waitall()
    assert calls == []
    # once the look-up tables exist (built in the first steps: warm-up, first reset), a step makes
    # no synchronous upload: mx.nd.array's copy waits behind every operator already queued on the
    # engine, so the host would block for the queued kernels' time (a per-step index array goes up
    # with native.host_array: GRBS's slabs, 4 numbers per member, counted below)
    assert late_uploads == []
    members = max(len(b.members) for b in tr.algorithm.buckets)
    assert max(shared, default=0) <= 4 * members
    # the largest tensor has 64 x 288 = 18,432 elements: nothing near that size goes up; random-k's
    # table of k uniforms for a bucket (all parameters / the smallest ratio) and the sign table
    # (2,048) may, once
    ratio = min([c.ratio for c in tr.algorithm.compressors if 1 < c.ratio < np.inf] + [8])
    total = sum(p.data(contexts[0]).size for p in net.collect_params().values())
    largest_allowed = max(2048, int(np.ceil(total / ratio)))
    assert largest_allowed < 64 * 288
    assert max(uploads, default=0) <= largest_allowed
    after = [p.data(contexts[0]).asnumpy() for p in net.collect_params().values()]
    assert all(np.isfinite(a).all() for a in after)
    assert max(np.abs(a - b.asnumpy()).max() for a, b in zip(after, before)) > 0
