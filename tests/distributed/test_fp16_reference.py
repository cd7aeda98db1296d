"""Synchronous SGD with float16 gradients and dynamic loss scaling on 2 real Horovod workers against
a float64 NumPy reference of the rule (docs/methods.md): each worker's gradient of the scaled loss,
S g_i, is cast to float16, Horovod sums the two float16 payloads in float16, and the update divides
the sum by the workers, the batch and S: w <- w - lr fp16(fp16(S g_0) + fp16(S g_1)) / (N B S). The
scale doubles after every ``window`` finite steps. On the compiled kernels (when loaded) and on
MXNet's cast.

The gradients are of the size where the scale matters: about 1e-7, below float16's smallest normal
number (6.1e-5) and near its smallest subnormal step (6e-8), so a float16 cast of the unscaled
gradient keeps almost nothing of it. The inputs are multiples of 2^-34 (with 13 significant bits), so
every float32 gradient and every sum of two float16 values is exact and the reference rounds the
same numbers the workers round. A worker path that lost the scale before the cast, or forgot to divide
by it, or sent float32 instead of float16, is far from the reference (each is computed and checked to
be far)."""
import numpy as np
import pytest

N, B, STEPS, LR, WINDOW = 2, 5, 4, 1e5, 2
V = np.array([1.0, 0.5, 0.25])        # loss = S * sum(net(x) * V): rows of W get V_j times the gradient
INIT_SCALE = 2.0 ** 16

JOB = """
import json, os
import numpy as np, mxnet as mx
from mxnet import autograd, gluon
from gluon_suite.distributed import DistributedTrainer, get_communicator, make_algorithm, native
from gluon_suite.distributed.loss_scale import DynamicLossScaler
comm = get_communicator()
out = {"loaded": bool(native.LOADED)}
V = mx.nd.array([[1.0, 0.5, 0.25]])
for path in (["compiled", "mxnet"] if native.LOADED else ["mxnet"]):
    native.LOADED = path == "compiled"
    mx.random.seed(comm.rank)          # different on each worker: the broadcast must fix it
    net = gluon.nn.Dense(3, in_units=4, use_bias=False)
    net.initialize(mx.init.Uniform(0.5))
    tr = DistributedTrainer(net.collect_params(), "sgd", {"learning_rate": %(lr)r}, communicator=comm,
                            algorithm=make_algorithm("sync", compressor="fp16", min_size=0),
                            prefix=path + ".")
    scaler = DynamicLossScaler(init_scale=%(scale)r, window=%(window)d)
    ws, scales, taken = [], [], []
    for step in range(%(steps)d):
        x = np.random.RandomState(10 * step + comm.rank).randint(-4096, 4097, size=(%(b)d, 4)) * 2.0 ** -34
        with autograd.record():
            loss = (net(mx.nd.array(x)) * V).sum() * scaler.scale
        loss.backward()
        if step == 0:
            ws.append(net.weight.data().asnumpy().astype(np.float64).tolist())
        scales.append(scaler.scale)
        taken.append(scaler.step(tr, %(b)d))
        ws.append(net.weight.data().asnumpy().astype(np.float64).tolist())
    out[path] = {"w": ws, "scales": scales, "taken": taken}
json.dump(out, open(os.path.join(os.environ["OUT"], f"rank{comm.rank}.json"), "w"))
""" % dict(lr=LR, scale=INIT_SCALE, window=WINDOW, steps=STEPS, b=B)


def inputs(step, rank):
    return np.random.RandomState(10 * step + rank).randint(-4096, 4097, size=(B, 4)) * 2.0 ** -34


def f16(a):
    return np.asarray(a, np.float64).astype(np.float16).astype(np.float64)


def reference(w0, scale_loss=True, unscale=True, cast=True):
    """The weights after each step and the scale used at each, in float64. ``scale_loss=False``:
    the gradient reaches the cast unscaled (and the update does not divide by the scale);
    ``unscale=False``: the update forgets to divide by the scale; ``cast=False``: float32 sent."""
    w, S, good = np.array(w0, np.float64), INIT_SCALE, 0
    ws, scales = [w.copy()], []
    for step in range(STEPS):
        s = S if scale_loss else 1.0
        payloads = []
        for r in range(N):
            g = s * np.outer(V, inputs(step, r).sum(axis=0))     # exact: powers of two and small integers
            payloads.append(f16(g) if cast else g)
        total = f16(payloads[0] + payloads[1]) if cast else payloads[0] + payloads[1]
        w = w - LR * total / (N * B * (s if unscale else 1.0))
        ws.append(w.copy())
        scales.append(S)
        good += 1
        if good >= WINDOW:
            S, good = S * 2.0, 0
    return np.array(ws), scales


@pytest.mark.horovod
def test_fp16_sync_with_a_loss_scale_matches_its_float64_reference_on_two_workers(horovod):
    ranks = horovod(JOB)
    paths = ["compiled", "mxnet"] if ranks[0]["loaded"] else ["mxnet"]
    for path in paths:
        w0 = ranks[0][path]["w"][0]
        want, scales = reference(w0)
        assert scales == [2.0 ** 16, 2.0 ** 16, 2.0 ** 17, 2.0 ** 17]
        # the gradients are where float16 alone would lose them
        g = np.abs(np.outer(V, inputs(0, 0).sum(axis=0)))
        assert g.max() < 6.1e-5 and np.median(g) < 1e-6
        # float32 weights: within a few float32 steps of the float64 reference (one rounding a step)
        atol = 4 * float(np.spacing(np.float32(np.abs(want).max())))
        for r in range(N):
            got = ranks[r][path]
            assert got["taken"] == [True] * STEPS and got["scales"] == scales, (path, r)
            w = np.array(got["w"])
            np.testing.assert_array_equal(w[0], np.array(ranks[0][path]["w"][0]))   # broadcast
            np.testing.assert_allclose(w, want, rtol=0, atol=atol, err_msg=f"{path} rank {r}")
            for what, kw in (("the scale lost before the cast", dict(scale_loss=False)),
                             ("the update not divided by the scale", dict(unscale=False)),
                             ("float32 sent instead of float16", dict(cast=False))):
                other, _ = reference(w0, **kw)
                assert np.abs(w - other).max() > 10 * atol, (path, what)
        # the steps move the weights by up to about 0.1: the updates are visible in float32
        assert 1e-2 < np.abs(np.diff(want, axis=0)).max() < 1.0
