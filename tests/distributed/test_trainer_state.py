"""DistributedTrainer.state_dict()/load_state_dict(): one state for checkpoints and elastic jobs.

The expectations are independent of the state code: a trainer that never stopped, and a file
written by the trainer before state_dict existed."""
import ast
import os
import pathlib
import re

import mxnet as mx
import numpy as np
import pytest
from mxnet import autograd, gluon

from gluon_suite.distributed import DistributedTrainer

DATA = os.path.join(os.path.dirname(__file__), "data")
ROOT = pathlib.Path(__file__).resolve().parents[2]


class Elementwise(gluon.Block):
    """Two float16-capable layers (MXNet's CPU dot has no float16): y = sum_j(x_j * w1_j) * w2 + b."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.w1 = self.params.get("w1", shape=(1, 4))
        self.w2 = self.params.get("w2", shape=(1, 2))
        self.b = self.params.get("b", shape=(1, 2))

    def forward(self, x):
        h = mx.nd.tanh((x * self.w1.data()).sum(axis=1, keepdims=True))
        return h * self.w2.data() + self.b.data()


def make_net(dtype="float32", seed=3):
    if dtype == "float16":
        net = Elementwise()
    else:
        net = gluon.nn.HybridSequential()
        net.add(gluon.nn.Dense(3, in_units=4, activation="tanh"), gluon.nn.Dense(2, in_units=3))
    net.initialize(mx.init.Constant(0.0))
    rs = np.random.RandomState(seed)
    for p in net.collect_params().values():
        p.set_data(mx.nd.array(rs.uniform(-0.5, 0.5, size=p.shape)))
    net.cast(dtype)
    return net


def data(k, dtype="float32"):
    rs = np.random.RandomState(10 + k)
    return (mx.nd.array(rs.normal(size=(4, 4)), dtype=dtype),
            mx.nd.array(rs.normal(size=(4, 2)), dtype=dtype))


def step(net, trainer, k, dtype="float32"):
    x, y = data(k, dtype)
    with autograd.record():
        loss = ((net(x) - y) ** 2).sum()
    loss.backward()
    trainer.step(4)


def weights(net):
    return [p.data().asnumpy().astype(np.float64) for p in net.collect_params().values()]


CASES = {
    "sgd momentum, ef residuals": ("sgd", {"learning_rate": 0.1, "momentum": 0.9},
                                   dict(algorithm="ef", compressor="topk", ratio=4), "float32"),
    "adam, schedule, cser": ("adam", {"learning_rate": 0.05,
                                      "lr_scheduler": mx.lr_scheduler.FactorScheduler(2, 0.5, base_lr=0.05)},
                             dict(algorithm="cser", compressor="grbs", ratio=2, period=3), "float32"),
    "float16 masters, nested moments": ("adam", {"learning_rate": 0.01, "multi_precision": True},
                                        dict(algorithm="sync"), "float16"),
}


@pytest.mark.parametrize("case", list(CASES))
def test_a_loaded_state_steps_like_the_trainer_that_never_stopped(case):
    optimizer, opt, algo, dtype = CASES[case]

    def fresh_opt():
        o = dict(opt)
        if "lr_scheduler" in o:   # a schedule object belongs to one optimizer
            o["lr_scheduler"] = mx.lr_scheduler.FactorScheduler(2, 0.5, base_lr=0.05)
        return o
    net = make_net(dtype)
    tr = DistributedTrainer(net.collect_params(), optimizer, fresh_opt(), **algo)
    for k in range(5):
        step(net, tr, k, dtype)
    state = tr.state_dict()
    if dtype == "float16":   # multi_precision nests (master copy, (mean, var)) per parameter
        assert all(isinstance(s, tuple) and len(s) == 2 and isinstance(s[1], tuple)
                   for s in tr.updater.states.values())
        assert any(k.count(".") == 3 for k in state["arrays"])

    net2 = make_net(dtype, seed=9)   # other weights: the state and the parameters are loaded
    for dst, src in zip(net2.collect_params().values(), net.collect_params().values()):
        dst.set_data(src.data())
    tr2 = DistributedTrainer(net2.collect_params(), optimizer, fresh_opt(), **algo)
    tr2.load_state_dict(state)
    assert tr2.step_count == 5 and tr2.optimizer.num_update == 5
    assert tr2.learning_rate == tr.learning_rate
    for k in (5, 6):   # both go on with the same data
        step(net, tr, k, dtype)
        step(net2, tr2, k, dtype)
    for a, b in zip(weights(net), weights(net2)):
        np.testing.assert_array_equal(a, b)


def test_load_state_dict_copies_so_a_snapshot_stays_a_snapshot():
    net = make_net()
    tr = DistributedTrainer(net.collect_params(), "sgd", {"learning_rate": 0.1, "momentum": 0.9},
                            algorithm="ef", compressor="topk", ratio=4)
    step(net, tr, 0)
    snap = {k: a.copy() for k, a in tr.state_dict()["arrays"].items()}
    before = {k: a.asnumpy() for k, a in snap.items()}
    tr.load_state_dict({"meta": tr.state_dict()["meta"], "arrays": snap})
    step(net, tr, 1)
    for k, a in snap.items():
        np.testing.assert_array_equal(a.asnumpy(), before[k])


def test_a_file_written_before_state_dict_still_resumes_exactly():
    """tests/distributed/data/v2_ef_sgd.*: make_net(), sgd momentum 0.9 lr 0.1, ef + topk 4,
    three steps of data(0..2), written by the trainer of the version before state_dict."""
    ref = make_net()
    tr_ref = DistributedTrainer(ref.collect_params(), "sgd", {"learning_rate": 0.1, "momentum": 0.9},
                                algorithm="ef", compressor="topk", ratio=4)
    for k in range(5):
        step(ref, tr_ref, k)

    net = make_net(seed=1)
    net.load_parameters(os.path.join(DATA, "v2_ef_sgd.params"))
    tr = DistributedTrainer(net.collect_params(), "sgd", {"learning_rate": 0.1, "momentum": 0.9},
                            algorithm="ef", compressor="topk", ratio=4)
    tr.load_states(os.path.join(DATA, "v2_ef_sgd.states"))
    assert tr.step_count == 3
    for k in (3, 4):
        step(net, tr, k)
    for a, b in zip(weights(ref), weights(net)):
        np.testing.assert_allclose(a, b, rtol=0, atol=1e-6)


def test_save_states_keeps_its_file_layout(tmp_path):
    net = make_net()
    tr = DistributedTrainer(net.collect_params(), "sgd", {"learning_rate": 0.1, "momentum": 0.9},
                            algorithm="ef", compressor="topk", ratio=4)
    step(net, tr, 0)
    tr.save_states(str(tmp_path / "t.states"))
    keys = set(mx.nd.load(str(tmp_path / "t.states")))
    old = set(mx.nd.load(os.path.join(DATA, "v2_ef_sgd.states")))
    assert keys == old == {"__meta_json__", "algo.err.b0", "opt.0", "opt.1", "opt.2", "opt.3"}


_TRAINER_NAMES = re.compile(r"^(trainer|tr\d*|.*_trainer)$")


def _private_names():
    net = make_net()
    tr = DistributedTrainer(net.collect_params(), "sgd", {"learning_rate": 0.1})
    names = {k for k in vars(tr) if k.startswith("_")}
    names |= {k for cls in type(tr).__mro__ for k in vars(cls) if k.startswith("_") and not k.startswith("__")}
    return names


def test_no_module_but_the_trainer_touches_its_private_attributes():
    private = _private_names()
    assert {"_updaters", "_optimizer", "_params", "_algo", "_step_count", "_comm"} <= private
    bad = []
    files = [*ROOT.joinpath("gluon_suite").rglob("*.py"), *ROOT.joinpath("scripts").rglob("*.py")]
    for path in files:
        if path.name in ("trainer.py",) and path.parent.name == "distributed":
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if (isinstance(node, ast.Attribute) and node.attr in private
                    and _TRAINER_NAMES.match(ast.unparse(node.value).split(".")[-1])):
                bad.append(f"{path.relative_to(ROOT)}:{node.lineno} {ast.unparse(node)}")
    assert not bad, "private trainer attributes used outside distributed/trainer.py:\n" + "\n".join(bad)
