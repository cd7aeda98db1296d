"""LANS, AdaAlter and LAMB (MXNet's, through our trainer) against float64 NumPy references written
from docs/methods.md (LANS, LAMB, AdaAlter), over 50 steps on tensors of several shapes, an all-zero weight and a zero gradient
included."""
import mxnet as mx
import numpy as np
import pytest
from mxnet import gluon

from gluon_suite.distributed import DistributedTrainer, LocalCommunicator
from gluon_suite.optim import LANS, AdaAlter, exclude_from_weight_decay

SHAPES = [(7,), (5, 3), (4, 3, 2, 2), (6,), (3, 4)]
ZERO_WEIGHT, ZERO_GRAD = 3, 4       # indices of the all-zero weight and the zero-gradient tensor
STEPS, BATCH = 50, 2                # rescale_grad = 1/BATCH


def setup(seed=0):
    rs = np.random.RandomState(seed)
    w0 = [rs.normal(size=s) for s in SHAPES]
    w0[ZERO_WEIGHT][:] = 0.0
    grads = [[rs.normal(size=s) * rs.uniform(0.1, 3) for s in SHAPES] for _ in range(STEPS)]
    for g in grads:
        g[ZERO_GRAD][:] = 0.0
    return w0, grads


def run_ours(optimizer, opt_params, w0, grads, wd_mult=None):
    params = []
    for i, w in enumerate(w0):
        p = gluon.Parameter(f"p{i}", shape=w.shape)
        p.initialize(ctx=mx.cpu())
        p.set_data(mx.nd.array(w))
        if wd_mult and i in wd_mult:
            p.wd_mult = wd_mult[i]
        params.append(p)
    tr = DistributedTrainer(params, optimizer, dict(opt_params), communicator=LocalCommunicator())
    by_name = {p.name: p for p in params}
    for step_grads in grads:
        for i, g in enumerate(step_grads):
            p = by_name[f"p{i}"]
            p.grad()[:] = mx.nd.array(g)
            p.list_data()[0]._fresh_grad = True
        tr.step(BATCH)
    return [by_name[f"p{i}"].data().asnumpy().astype(np.float64) for i in range(len(w0))]


def _ratio(wn, un):
    return wn / un if wn > 0 and un > 0 else 1.0


def ref_lamb(w0, grads, lr, wd, b1=0.9, b2=0.999, eps=1e-6, wd_mult=None):
    w = [x.astype(np.float64).copy() for x in w0]
    m = [np.zeros_like(x) for x in w]
    v = [np.zeros_like(x) for x in w]
    for t, gs in enumerate(grads, start=1):
        for i, g in enumerate(gs):
            g = g / BATCH
            wdi = wd * (wd_mult or {}).get(i, 1.0)
            m[i] = b1 * m[i] + (1 - b1) * g
            v[i] = b2 * v[i] + (1 - b2) * g * g
            mh, vh = m[i] / (1 - b1 ** t), v[i] / (1 - b2 ** t)
            u = mh / (np.sqrt(vh) + eps) + wdi * w[i]
            w[i] = w[i] - lr * _ratio(np.linalg.norm(w[i]), np.linalg.norm(u)) * u
    return w


def ref_lans(w0, grads, lr, wd, b1=0.9, b2=0.999, eps=1e-6, wd_mult=None):
    w = [x.astype(np.float64).copy() for x in w0]
    m = [np.zeros_like(x) for x in w]
    v = [np.zeros_like(x) for x in w]
    for t, gs in enumerate(grads, start=1):
        for i, g in enumerate(gs):
            g = g / BATCH
            wdi = wd * (wd_mult or {}).get(i, 1.0)
            gn = np.linalg.norm(g)
            gt = g / gn if gn > 0 else g
            m[i] = b1 * m[i] + (1 - b1) * gt
            v[i] = b2 * v[i] + (1 - b2) * gt * gt
            d = np.sqrt(v[i] / (1 - b2 ** t)) + eps
            um = (m[i] / (1 - b1 ** t)) / d + wdi * w[i]
            ug = gt / d + wdi * w[i]
            wn = np.linalg.norm(w[i])
            w[i] = (w[i] - lr * b1 * _ratio(wn, np.linalg.norm(um)) * um
                    - lr * (1 - b1) * _ratio(wn, np.linalg.norm(ug)) * ug)
    return w


def ref_adaalter(w0, grads, lr, wd, eps=1.0):
    w = [x.astype(np.float64).copy() for x in w0]
    B = [np.zeros_like(x) for x in w]
    for gs in grads:
        for i, g in enumerate(gs):
            g = g / BATCH
            w[i] = w[i] - lr * (g / np.sqrt(B[i] + eps) + wd * w[i])
            B[i] = B[i] + g * g
    return w


def max_rel_err(ours, ref):
    return max(np.abs(o - r).max() / max(np.abs(r).max(), 1e-12) for o, r in zip(ours, ref))


@pytest.mark.parametrize("wd", [0.0, 0.01])
def test_lans_matches_reference(wd):
    w0, grads = setup()
    ours = run_ours("lans", {"learning_rate": 0.01, "wd": wd}, w0, grads)
    ref = ref_lans(w0, grads, 0.01, wd)
    assert all(np.isfinite(o).all() for o in ours)
    assert max_rel_err(ours, ref) <= 1e-5
    assert np.abs(ours[ZERO_WEIGHT]).max() > 0  # the zero tensor moved (ratio 1), no NaN


@pytest.mark.parametrize("wd", [0.0, 0.01])
def test_lamb_through_our_trainer_matches_reference(wd):
    w0, grads = setup(1)
    ours = run_ours("lamb", {"learning_rate": 0.01, "wd": wd}, w0, grads)
    assert max_rel_err(ours, ref_lamb(w0, grads, 0.01, wd)) <= 1e-5


@pytest.mark.parametrize("wd", [0.0, 0.001])
def test_adaalter_matches_reference(wd):
    # the default epsilon is the published accumulator start, 1
    w0, grads = setup(2)
    ours = run_ours("adaalter", {"learning_rate": 0.05, "wd": wd}, w0, grads)
    assert max_rel_err(ours, ref_adaalter(w0, grads, 0.05, wd, eps=1.0)) <= 1e-5


def test_adaalter_epsilon_is_inside_the_root():
    w0, grads = setup(2)
    ours = run_ours("adaalter", {"learning_rate": 0.05, "epsilon": 1e-2}, w0, grads)
    assert max_rel_err(ours, ref_adaalter(w0, grads, 0.05, 0.0, eps=1e-2)) <= 1e-5


def test_wd_mult_excludes_parameters_from_decay():
    w0, grads = setup(3)
    ours = run_ours("lans", {"learning_rate": 0.01, "wd": 0.1}, w0, grads, wd_mult={0: 0.0, 2: 0.0})
    ref = ref_lans(w0, grads, 0.01, 0.1, wd_mult={0: 0.0, 2: 0.0})
    assert max_rel_err(ours, ref) <= 1e-5
    net = gluon.nn.HybridSequential()
    net.add(gluon.nn.Dense(4, in_units=3), gluon.nn.LayerNorm(in_channels=4), gluon.nn.BatchNorm(in_channels=4))
    excluded = exclude_from_weight_decay(net.collect_params())
    assert sorted(n.split("_", 1)[1] for n in excluded) == sorted(
        ["bias", "gamma", "beta", "gamma", "beta", "running_mean", "running_var"])
    assert [p.wd_mult for n, p in net.collect_params().items() if n.endswith("weight")] == [1.0]


def test_multi_precision_fp16_weights_with_fp32_master():
    w0, grads = setup(4)
    w0, grads = w0[:3], [g[:3] for g in grads[:10]]
    params = []
    for i, w in enumerate(w0):
        p = gluon.Parameter(f"q{i}", shape=w.shape, dtype="float16")
        p.initialize(ctx=mx.cpu())
        p.set_data(mx.nd.array(w, dtype="float16"))
        params.append(p)
    tr = DistributedTrainer(params, "lans", {"learning_rate": 0.01, "multi_precision": True},
                            communicator=LocalCommunicator())
    for gs in grads:
        for p, g in zip(params, gs):
            p.grad()[:] = mx.nd.array(g, dtype="float16")
            p.list_data()[0]._fresh_grad = True
        tr.step(BATCH)
    ref = ref_lans([w.astype(np.float16).astype(np.float64) for w in w0],
                   [[g.astype(np.float16).astype(np.float64) for g in gs] for gs in grads], 0.01, 0.0)
    got = [p.data().asnumpy().astype(np.float64) for p in params]
    assert all(p.data().dtype == np.float16 for p in params)
    assert max_rel_err(got, ref) <= 2e-3  # fp16 storage of the result; the master copy is fp32


@pytest.mark.parametrize("cls, kwargs, match", [
    (LANS, dict(learning_rate=-0.1), r"learning_rate must be >= 0"),
    (LANS, dict(beta1=1.0), r"beta1 must be in \[0, 1\)"),
    (LANS, dict(beta2=-0.1), r"beta2 must be in \[0, 1\)"),
    (LANS, dict(epsilon=0.0), r"epsilon must be > 0"),
    (AdaAlter, dict(epsilon=-1e-6), r"epsilon must be > 0"),
    (AdaAlter, dict(learning_rate=-1), r"learning_rate must be >= 0"),
])
def test_bad_hyperparameters(cls, kwargs, match):
    with pytest.raises(ValueError, match=match):
        cls(**kwargs)


def test_registered_by_name_for_plain_gluon_trainer():
    net = gluon.nn.Dense(2, in_units=3)
    net.initialize()
    for name in ("lans", "adaalter", "lamb"):
        tr = gluon.Trainer(net.collect_params(), name, {"learning_rate": 0.01})
        assert type(tr._optimizer).__name__.lower() == name


def test_lans_beats_sgd_at_a_very_large_batch():
    """Full-batch (1,438 images) MLP on digits, 40 steps of the LANS schedule: LANS at its usual
    peak rate ends lower than momentum SGD at any of several peak rates with the same schedule."""
    from mxnet import autograd
    from gluon_suite.cv.data import load_digits
    from gluon_suite.optim import WarmupConstantDecay
    x, y = load_digits("train")
    X, Y = mx.nd.array(x.reshape(len(x), -1)), mx.nd.array(y)

    def final_loss(opt, lr, extra=None, steps=40):
        mx.random.seed(0)
        net = gluon.nn.HybridSequential()
        net.add(gluon.nn.Dense(128, activation="relu"), gluon.nn.Dense(128, activation="relu"),
                gluon.nn.Dense(10))
        net.initialize(mx.init.Xavier())
        sched = WarmupConstantDecay(lr, steps, warmup_steps=5, constant_steps=15)
        tr = DistributedTrainer(net.collect_params(), opt, {"lr_scheduler": sched, **(extra or {})},
                                communicator=LocalCommunicator())
        loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
        for _ in range(steps):
            with autograd.record():
                loss = loss_fn(net(X), Y)
            loss.backward()
            tr.step(len(Y))
        return float(loss_fn(net(X), Y).mean().asscalar())

    lans = final_loss("lans", 0.1)
    sgd = {lr: final_loss("sgd", lr, {"momentum": 0.9}) for lr in (0.1, 0.3, 1.0)}
    assert lans < min(sgd.values()), (lans, sgd)
