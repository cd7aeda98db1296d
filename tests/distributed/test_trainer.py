"""DistributedTrainer on one process: drop-in for gluon.Trainer, validation before training, and
save/load of states without pickle."""
import mxnet as mx
import numpy as np
import pytest
from mxnet import autograd, gluon

from gluon_suite.distributed import DistributedTrainer, LocalCommunicator


def make_net(seed=0):
    mx.random.seed(seed)
    net = gluon.nn.HybridSequential()
    net.add(gluon.nn.Dense(16, activation="relu"), gluon.nn.Dense(3))
    net.initialize(mx.init.Xavier())
    net(mx.nd.zeros((1, 5)))  # finish deferred initialisation
    return net


def batches(n, seed=1):
    rs = np.random.RandomState(seed)
    for _ in range(n):
        yield mx.nd.array(rs.normal(size=(8, 5))), mx.nd.array(rs.randint(0, 3, size=8))


def train(net, trainer, data):
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
    for x, y in data:
        with autograd.record():
            loss = loss_fn(net(x), y)
        loss.backward()
        trainer.step(8)


def params(net):
    # the network's order: names differ between instances (Gluon's global block counter)
    return np.concatenate([p.data().asnumpy().ravel() for p in net.collect_params().values()])


def test_single_worker_sync_equals_gluon_trainer():
    a, b = make_net(), make_net()
    opt = {"learning_rate": 0.1, "momentum": 0.9, "wd": 1e-4}
    train(a, gluon.Trainer(a.collect_params(), "sgd", dict(opt)), batches(10))
    train(b, DistributedTrainer(b.collect_params(), "sgd", dict(opt)), batches(10))
    assert np.array_equal(params(a), params(b))


@pytest.mark.parametrize("optimizer", ["lamb", "adam", "sgd"])
def test_a_schedule_keeps_its_rates_and_nothing_is_printed(optimizer, capfd):
    # LAMB and Adam have a default learning rate; given with a schedule, MXNet printed that the
    # schedule's rate "has been overwritten". The rates must be the schedule's, from step 1
    net = make_net()
    sched = mx.lr_scheduler.FactorScheduler(step=2, factor=0.5, base_lr=0.3)
    trainer = DistributedTrainer(net.collect_params(), optimizer, {"lr_scheduler": sched})
    seen = []
    for x, y in batches(5):
        with autograd.record():
            loss = gluon.loss.SoftmaxCrossEntropyLoss()(net(x), y)
        loss.backward()
        trainer.step(8)
        seen.append(trainer.learning_rate)
    out, err = capfd.readouterr()
    assert "overwritten" not in out + err
    # FactorScheduler by hand: 0.3 halved after every 2 updates (update counts 1..5)
    assert np.allclose(seen, [0.3, 0.3, 0.15, 0.15, 0.075])


@pytest.mark.parametrize("optimizer, opt", [("sgd", {"learning_rate": 0.1, "momentum": 0.9}),
                                            ("adam", {"learning_rate": 0.01})])
@pytest.mark.parametrize("algo", [dict(algorithm="sync"),
                                  dict(algorithm="cser", compressor="grbs", ratio=4, period=3),
                                  dict(algorithm="ef", compressor="topk", ratio=4)])
def test_save_load_states_resumes_exactly(tmp_path, optimizer, opt, algo):
    ref = make_net()
    tr = DistributedTrainer(ref.collect_params(), optimizer, dict(opt), **algo)
    train(ref, tr, batches(20))

    net = make_net()
    tr1 = DistributedTrainer(net.collect_params(), optimizer, dict(opt), **algo)
    data = list(batches(20))
    train(net, tr1, data[:10])
    net.save_parameters(str(tmp_path / "net.params"))
    tr1.save_states(str(tmp_path / "trainer.states"))

    net2 = make_net(seed=5)  # different init, overwritten by the checkpoint
    net2.load_parameters(str(tmp_path / "net.params"))
    tr2 = DistributedTrainer(net2.collect_params(), optimizer, dict(opt), **algo)
    tr2.load_states(str(tmp_path / "trainer.states"))
    assert tr2.step_count == 10
    train(net2, tr2, data[10:])
    assert np.abs(params(net2) - params(ref)).max() <= 1e-6


def test_load_states_rejects_foreign_file(tmp_path):
    net = make_net()
    tr = DistributedTrainer(net.collect_params(), "sgd", {"learning_rate": 0.1})
    bad = tmp_path / "x.states"
    bad.write_bytes(b"\x80\x04not an ndarray file")
    with pytest.raises(ValueError, match="not a trainer state file"):
        tr.load_states(str(bad))


@pytest.mark.parametrize("kwargs, match", [
    (dict(algorithm="allreduce"), "unknown algorithm 'allreduce'; registered: auto, cser, ef, (every_other, )?local, local_adaalter, sync"),
    (dict(algorithm="cser", compressor="lz4"), "unknown compressor 'lz4'; registered: bf16, fp16, grbs, none"),
    (dict(algorithm="cser", compressor="grbs", ratio=0.5), "option ratio: must be a compression ratio .* >= 1, got 0.5"),
    (dict(algorithm="cser", compressor="grbs", period=0), "period must be an integer >= 1"),
    (dict(algorithm="local", period=-2), "period must be an integer >= 1"),
    (dict(algorithm="cser", compressor="topk"), "needs an allreduce-summable"),
    (dict(algorithm="cser", compressor="grbs", compressor2="sign"), "needs an allreduce-summable"),
    (dict(algorithm="sync", compressor="sign"), "choose one of: none, fp16, grbs, randomk"),
    (dict(algorithm="local", compressor="grbs"), "CSER-PL"),
])
def test_bad_configuration_raises_before_any_step(kwargs, match):
    net = make_net()
    with pytest.raises(ValueError, match=match):
        DistributedTrainer(net.collect_params(), "sgd", {"learning_rate": 0.1}, **kwargs)


def test_cser_default_error_compressor_follows_the_ratio_over_period():
    net = make_net()
    tr = DistributedTrainer(net.collect_params(), "sgd", {"learning_rate": 0.1},
                            algorithm="cser", compressor="grbs", ratio=64, period=16)
    cfg = tr.algorithm.config()
    assert cfg["c1"]["ratio"] == 64 and cfg["c2"]["name"] == "grbs" and cfg["c2"]["ratio"] == 4
    tr = DistributedTrainer(net.collect_params(), "sgd", {"learning_rate": 0.1},
                            algorithm="cser", compressor="grbs", ratio=8, period=16)
    assert tr.algorithm.config()["c2"]["name"] == "none"  # R1/H <= 1: dense error reset
    # the object form derives the same error compressor (it used to default to none)
    from gluon_suite.distributed.algorithms import CSER
    from gluon_suite.distributed.compression import ZeroCompressor
    from gluon_suite.distributed.shared_random import GRBSCompressor
    tr = DistributedTrainer(net.collect_params(), "sgd", {"learning_rate": 0.1},
                            algorithm=CSER(GRBSCompressor(ratio=64), period=16))
    cfg = tr.algorithm.config()
    assert cfg["c2"]["name"] == "grbs" and cfg["c2"]["ratio"] == 4
    assert tr.algorithm.c2.seed != tr.algorithm.c1.seed   # its own shared randomness
    assert CSER(ZeroCompressor(), period=4).c2.name == "none"   # CSER-PL without C2: plain local SGD


def test_averaged_is_noop_on_one_worker():
    net = make_net()
    tr = DistributedTrainer(net.collect_params(), "sgd", {"learning_rate": 0.1},
                            communicator=LocalCommunicator())
    before = params(net)
    with tr.averaged():
        assert np.array_equal(params(net), before)


def make_named_net(first, second, seed=0):
    """A net whose parameter names sort in another order than the network's (as Gluon's global
    block counter produces for a second instance: 'dense10' sorts before 'dense9')."""
    mx.random.seed(seed)
    net = gluon.nn.HybridSequential(prefix="")
    net.add(gluon.nn.Dense(16, activation="relu", prefix=first), gluon.nn.Dense(3, prefix=second))
    net.initialize(mx.init.Xavier())
    net(mx.nd.zeros((1, 5)))
    return net


@pytest.mark.parametrize("old_format", [False, True], ids=["current", "file without positions"])
def test_states_resume_into_a_net_whose_names_sort_differently(tmp_path, old_format):
    opt, algo = {"learning_rate": 0.1, "momentum": 0.9}, dict(algorithm="ef", compressor="topk", ratio=4)
    data = list(batches(20))
    ref = make_named_net("dense20_", "dense21_")
    train(ref, DistributedTrainer(ref.collect_params(), "sgd", dict(opt), **algo), data)

    net = make_named_net("dense9_", "dense10_")  # sorted names: dense10 before dense9
    tr1 = DistributedTrainer(net.collect_params(), "sgd", dict(opt), **algo)
    train(net, tr1, data[:10])
    path = str(tmp_path / "trainer.states")
    tr1.save_states(path)
    if old_format:
        # a file as trainers wrote it before they recorded network positions (format 1, state
        # per parameter): read as it is
        rewrite_as_format1(path, keep_positions=False)

    # a file without positions can only be read by a network with the writer's names (a resumed
    # process builds them again); with positions the names do not matter
    net2 = make_named_net(*(("dense9_", "dense10_") if old_format else ("dense11_", "dense12_")), seed=5)
    for dst, src in zip(net2.collect_params().values(), net.collect_params().values()):
        dst.set_data(src.data())
    tr2 = DistributedTrainer(net2.collect_params(), "sgd", dict(opt), **algo)
    tr2.load_states(path)
    train(net2, tr2, data[10:])
    assert np.abs(params(net2) - params(ref)).max() <= 1e-6


def rewrite_as_format1(path, keep_positions=True):
    """Rewrite a state file as trainers wrote it before buckets: format 1, algorithm state per
    parameter ('algo.err.<index>'), no bucket layout (and, without positions, none either)."""
    import json

    from gluon_suite.distributed.trainer import _per_parameter
    arrays = mx.nd.load(path)
    meta = json.loads(arrays.pop("__meta_json__").asnumpy().tobytes().decode())
    arrays = _per_parameter(meta, arrays, path)
    meta["format"] = "gluon_suite.trainer_states/1"
    del meta["buckets"]
    if not keep_positions:
        del meta["network_position"], meta["param_shapes"]
    arrays["__meta_json__"] = mx.nd.array(np.frombuffer(json.dumps(meta).encode(), dtype=np.uint8),
                                          dtype="uint8")
    mx.nd.save(path, arrays)


@pytest.mark.parametrize("writer, reader, fmt", [(25, 25, 2), (25, 0, 2), (0, 25, 2), (25, 25, 1),
                                                 (0, 25, 1)])
@pytest.mark.parametrize("algo", [dict(algorithm="ef", compressor="topk", ratio=4),
                                  dict(algorithm="cser", compressor="grbs", ratio=4, period=3)])
def test_states_resume_across_bucket_layouts_and_from_format_1(tmp_path, writer, reader, fmt, algo):
    """Residuals saved per bucket (format 2) resume into any bucket layout; files of format 1
    (residuals per parameter, before buckets) still load."""
    opt = {"learning_rate": 0.1, "momentum": 0.9}
    data = list(batches(20))
    ref = make_net()
    train(ref, DistributedTrainer(ref.collect_params(), "sgd", dict(opt), bucket_mb=writer, **algo), data)
    net = make_net()
    tr1 = DistributedTrainer(net.collect_params(), "sgd", dict(opt), bucket_mb=writer, **algo)
    train(net, tr1, data[:10])
    path = str(tmp_path / "trainer.states")
    tr1.save_states(path)
    if fmt == 1:
        rewrite_as_format1(path)
    tr2 = DistributedTrainer(net.collect_params(), "sgd", dict(opt), bucket_mb=reader, **algo)
    tr2.load_states(path)
    train(net, tr2, data[10:])
    if writer == reader:  # the same layout: exactly the uninterrupted run
        assert np.abs(params(net) - params(ref)).max() <= 1e-6
    else:  # another layout changes the compressor's draws (GRBS) or selection (top-k) from here on
        assert np.isfinite(params(net)).all()
    for i in range(len(tr1._params)):
        np.testing.assert_array_equal(tr2.algorithm.view("err", i).shape, tr1._params[i].shape)


def test_states_of_an_unknown_format_are_refused_in_one_line(tmp_path):
    import json
    net = make_net()
    tr = DistributedTrainer(net.collect_params(), "sgd", {"learning_rate": 0.1})
    train(net, tr, batches(1))
    path = str(tmp_path / "s")
    tr.save_states(path)
    arrays = mx.nd.load(path)
    meta = json.loads(arrays.pop("__meta_json__").asnumpy().tobytes().decode())
    meta["format"] = "gluon_suite.trainer_states/9"
    arrays["__meta_json__"] = mx.nd.array(np.frombuffer(json.dumps(meta).encode(), dtype=np.uint8),
                                          dtype="uint8")
    mx.nd.save(path, arrays)
    with pytest.raises(ValueError, match=r"format 'gluon_suite.trainer_states/9'; this version reads"):
        tr.load_states(path)


def test_load_states_of_another_network_is_refused(tmp_path):
    a = make_named_net("x0_", "x1_")
    tr = DistributedTrainer(a.collect_params(), "sgd", {"learning_rate": 0.1})
    train(a, tr, batches(1))
    tr.save_states(str(tmp_path / "s"))
    mx.random.seed(0)
    b = gluon.nn.Dense(4, in_units=5)
    b.initialize()
    with pytest.raises(ValueError, match="another network"):
        DistributedTrainer(b.collect_params(), "sgd", {"learning_rate": 0.1}).load_states(str(tmp_path / "s"))
