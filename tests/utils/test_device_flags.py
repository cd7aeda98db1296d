"""``--gpus`` and ``--dtype`` on every training script: bad values, a GPU this (CPU-only) machine
lacks and float16 on the CPU end in one line naming the flag and the fix, exit 2, before any work;
``--gpus -1`` trains on the CPU; under horovodrun a worker takes its local rank's GPU only where
MXNet sees GPUs."""
import json
import os
import sys

import mxnet as mx
import numpy as np
import pytest

from gluon_suite.utils import UserError, run_cli
from gluon_suite.utils.devices import resolve_devices

from ..test_bad_inputs import SCRIPTS, _main, check_one_line, leftovers

TRAINING = ["cls", "digits", "bert", "ftc", "squad", "node", "graph"]
VISION_BERT = ["cls", "digits", "bert", "ftc", "squad"]
GRAPHS = ["node", "graph"]
NO_GPU = mx.context.num_gpus() == 0


@pytest.fixture
def run(capfd, monkeypatch, tmp_path):
    """``run(entry, *args)`` -> ``(code, stdout, stderr)``: the script's ``main`` through
    ``run_cli``; the NLP fine-tuning scripts get valid --train/--dev files, all get --out in
    ``tmp_path/o``."""
    (tmp_path / "ok.tsv").write_text("sentence\tlabel\nthe cat\t1\na dog\t0\n")
    squad = {"data": [{"title": "t", "paragraphs": [{"context": "the cat sat", "qas": [
        {"id": "1", "question": "who sat", "answers": [{"text": "the cat", "answer_start": 0}]}]}]}]}
    (tmp_path / "squad.json").write_text(json.dumps(squad))
    files = {"ftc": ["--train", str(tmp_path / "ok.tsv"), "--dev", str(tmp_path / "ok.tsv")],
             "squad": ["--train", str(tmp_path / "squad.json"), "--dev", str(tmp_path / "squad.json")]}

    def _run(entry, *args):
        argv = [*files.get(entry, []), *args, "--out", str(tmp_path / "o")]
        monkeypatch.setattr(sys, "argv", [os.path.basename(SCRIPTS[entry]), *argv])
        capfd.readouterr()
        with pytest.raises(SystemExit) as ei:
            run_cli(_main(entry), argv)
        out, err = capfd.readouterr()
        assert not os.path.exists(tmp_path / "o") and leftovers(tmp_path) == []   # refused before any work
        return ei.value.code, out, err
    return _run


@pytest.mark.parametrize("entry", TRAINING)
@pytest.mark.parametrize("value, words", [("a,b", ["--gpus", "a,b", "0,1"]), ("0,0", ["--gpus", "distinct"]),
                                          ("-3", ["--gpus", "-3"])])
def test_bad_gpus_value_is_one_line(run, entry, value, words):
    check_one_line(*run(entry, "--gpus", value), 2, words)


@pytest.mark.parametrize("entry", TRAINING)
def test_unknown_dtype_is_one_line(run, entry):
    check_one_line(*run(entry, "--dtype", "float64"), 2, ["--dtype", "float64", "float32"])


@pytest.mark.skipif(not NO_GPU, reason="checks the message of a machine without GPUs")
@pytest.mark.parametrize("entry", TRAINING)
def test_gpu_request_on_a_machine_without_gpus_names_the_flag_and_the_install(run, entry):
    line = check_one_line(*run(entry, "--gpus", "0"), 2,
                          ["--gpus", "GPU 0", "sees 0 GPU", "drop --gpus", "make setup CUDA=117"])
    assert "Traceback" not in line


@pytest.mark.skipif(not NO_GPU, reason="checks the message of a machine without GPUs")
@pytest.mark.parametrize("entry", VISION_BERT)
def test_float16_on_the_cpu_is_one_line_naming_the_missing_gemm(run, entry):
    check_one_line(*run(entry, "--dtype", "float16"), 2,
                   ["--dtype float16", "FP16 gemm on cpu not implemented", "drop --dtype float16"])


@pytest.mark.parametrize("entry", GRAPHS)
def test_graph_scripts_accept_float32_only(run, entry):
    check_one_line(*run(entry, "--dtype", "float16"), 2, ["--dtype", "float16", "not supported", "float32"])


def test_resolve_devices(monkeypatch):
    monkeypatch.delenv("HOROVOD_LOCAL_RANK", raising=False)
    assert resolve_devices(None, "float32") == ([mx.cpu()], "float32")
    assert resolve_devices("-1", "FLOAT32") == ([mx.cpu()], "float32")
    assert resolve_devices("", None) == ([mx.cpu()], "float32")
    monkeypatch.setenv("HOROVOD_LOCAL_RANK", "1")   # a Horovod worker: -1 still means the CPU
    assert resolve_devices("-1", "float32") == ([mx.cpu()], "float32")
    if NO_GPU:                                      # ... and no GPU here: the CPU by default too
        assert resolve_devices(None, "float32") == ([mx.cpu()], "float32")
        with pytest.raises(UserError, match="drop --gpus"):
            resolve_devices([0, 1], "float32")      # a YAML list
    with pytest.raises(UserError, match="unknown dtype"):
        resolve_devices(None, "bfloat16")


def test_gpus_minus_one_trains_on_the_cpu(tmp_path, capfd, monkeypatch):
    out = tmp_path / "digits"
    argv = ["--gpus", "-1", "--dtype", "float32", "--epochs", "1", "--no-progress", "--out", str(out)]
    monkeypatch.setattr(sys, "argv", ["train_digits.py", *argv])
    with pytest.raises(SystemExit) as ei:
        run_cli(_main("digits"), argv)
    assert ei.value.code == 0, capfd.readouterr()
    result = json.loads((out / "result.json").read_text())
    assert result["test_acc"] > 0.5          # 10 classes: chance is 0.1


def test_vision_recipe_on_two_contexts_trains_and_keeps_copies_identical(tmp_path, monkeypatch):
    """The classification recipe with two CPU contexts per worker: it learns, evaluates, writes its
    checkpoint, and every trainable parameter's two copies are identical. (16 per device: the
    worker's batch of 32, as before the batch became per device.)"""
    from gluon_suite.cv import recipe
    from gluon_suite.distributed import LocalCommunicator
    nets, real = [], recipe.get_model

    def spy(*args, **kwargs):
        nets.append(real(*args, **kwargs))
        return nets[-1]
    monkeypatch.setattr(recipe, "get_model", spy)
    res = recipe.train_classification(
        {"model": "digits_cnn", "image_size": 16, "epochs": 2, "out": str(tmp_path / "o"), "progress": False,
         "warmup_epochs": 0, "batch_size": 16}, LocalCommunicator(), log=lambda m: None, ctx=[mx.cpu(0), mx.cpu(1)])
    assert res["best_acc"] > 0.5
    assert os.path.exists(tmp_path / "o" / "best.params")
    for p in nets[0].collect_params().values():
        assert [d.context for d in p.list_data()] == [mx.cpu(0), mx.cpu(1)]
        if p.grad_req != "null":
            a, b = (d.asnumpy() for d in p.list_data())
            assert (a == b).all(), p.name


@pytest.mark.parametrize("fused_activation", [False, True])
def test_float16_emulation_computes_each_layer_in_float32_and_rounds_its_output(fused_activation):
    """Dense -> relu -> Dense in float16 on the CPU: each layer's output is its float64 value from
    float16 inputs and weights, rounded to float16 (a GPU's float16 GEMM accumulates in float32;
    float32 vs float64 accumulation differs by far less than a float16 step here). Gradients are
    float16 and match the float64 chain rule of the same rounded network to float16 precision."""
    import numpy as np
    from mxnet import autograd, gluon
    from gluon_suite.utils.devices import emulate_float16_kernels
    net = gluon.nn.HybridSequential()
    if fused_activation:     # a dense layer with its activation as a child block
        net.add(gluon.nn.Dense(16, in_units=24, activation="relu"), gluon.nn.Dense(5, in_units=16))
    else:
        net.add(gluon.nn.Dense(16, in_units=24), gluon.nn.Activation("relu"), gluon.nn.Dense(5, in_units=16))
    net.initialize(mx.init.Uniform(0.5))
    net.cast("float16")
    units = 2 if fused_activation else 3   # a dense layer and its activation child are one unit
    assert emulate_float16_kernels(net) == units and emulate_float16_kernels(net) == 0    # once only
    net.hybridize()
    rng = np.random.RandomState(0)
    x = rng.uniform(-1, 1, (8, 24)).astype(np.float16)
    with pytest.raises(mx.base.MXNetError, match="float16 fully connected"):   # what it is for
        mx.nd.FullyConnected(mx.nd.array(x, dtype="float16"), mx.nd.ones((4, 24), dtype="float16"),
                             no_bias=True, num_hidden=4).asnumpy()
    xs = mx.nd.array(x, dtype="float16")
    xs.attach_grad()
    with autograd.record():
        y = net(xs)
        loss = (y.astype("float32") ** 2).sum()
    loss.backward()
    assert y.dtype == np.float16
    p = [q.data().asnumpy().astype(np.float64) for q in net.collect_params().values()]
    w1, b1, w2, b2 = p
    r16 = lambda a: a.astype(np.float16).astype(np.float64)       # noqa: E731
    h = r16(x.astype(np.float64) @ w1.T + b1)
    a = r16(np.maximum(h, 0))
    ref = r16(a @ w2.T + b2)
    assert np.abs(y.asnumpy().astype(np.float64) - ref).max() <= np.abs(ref).max() * 2 ** -10
    g_y = 2 * ref
    g_w2 = g_y.T @ a
    g_x = ((g_y @ w2) * (h > 0)) @ w1
    grads = [q.grad().asnumpy() for q in net.collect_params().values()]
    assert all(g.dtype == np.float16 for g in grads)
    assert np.allclose(grads[2].astype(np.float64), g_w2, rtol=2e-2, atol=2e-2 * np.abs(g_w2).max())
    assert np.allclose(xs.grad.asnumpy().astype(np.float64), g_x, rtol=2e-2, atol=2e-2 * np.abs(g_x).max())


def test_float16_on_the_cpu_trains_the_vision_recipe_when_emulation_is_asked_for(tmp_path, monkeypatch):
    """GLUON_SUITE_EMULATE_FLOAT16=1: the classification recipe trains a float16 network with
    float32 master weights on the CPU (without it: the one-line error above)."""
    from gluon_suite.cv import recipe
    from gluon_suite.distributed import LocalCommunicator
    cfg = {"model": "digits_cnn", "image_size": 16, "epochs": 2, "out": str(tmp_path / "o"), "progress": False,
           "warmup_epochs": 0, "dtype": "float16"}
    with pytest.raises(UserError, match="GLUON_SUITE_EMULATE_FLOAT16=1"):
        recipe.train_classification(cfg, LocalCommunicator(), log=lambda m: None)
    nets, trainers, real_net, real_tr = [], [], recipe.get_model, recipe.DistributedTrainer
    monkeypatch.setattr(recipe, "get_model", lambda *a, **k: nets.append(real_net(*a, **k)) or nets[-1])
    monkeypatch.setattr(recipe, "DistributedTrainer", lambda *a, **k: trainers.append(real_tr(*a, **k)) or trainers[-1])
    monkeypatch.setenv("GLUON_SUITE_EMULATE_FLOAT16", "1")
    res = recipe.train_classification(cfg, LocalCommunicator(), log=lambda m: None)
    assert res["best_acc"] > 0.5
    weights = [p for p in nets[0].collect_params().values() if p.name.endswith("weight")]
    assert weights and all(p.data().dtype == np.float16 for p in weights)
    assert trainers[0]._optimizer.multi_precision
