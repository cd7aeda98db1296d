"""The what-if model against closed-form cases computed by hand."""
import json
import os
import subprocess
import sys

import pytest

from gluon_suite.whatif import StepProfile, fuse, min_ratio, predict, ring_allreduce_s
from gluon_suite.utils import UserError

MB = 1e6


def test_ring_allreduce_formula():
    # 4 workers, 100 MB at 1 GB/s, 10 us latency: 2*3/4*0.1 s + 6*10 us
    assert ring_allreduce_s(100 * MB, 4, 1e9, 10e-6) == pytest.approx(0.15 + 60e-6)
    assert ring_allreduce_s(100 * MB, 1, 1e9, 10e-6) == 0.0
    # gamma (local copies and reductions) adds 0.3 ns per byte of the bucket: + 0.03 s
    assert ring_allreduce_s(100 * MB, 4, 1e9, 10e-6, 0.3e-9) == pytest.approx(0.15 + 60e-6 + 0.03)
    assert ring_allreduce_s(100 * MB, 1, 1e9, 10e-6, 0.3e-9) == 0.0


def test_allreduce_local_cost_lengthens_every_transfer():
    # backward 1 s; a 100 MB bucket ready at 0.2 s and a 10 MB one at the end; 2 workers at 1 GB/s:
    # wires 0.1 s and 0.01 s. gamma = 9 ns per bucket byte: + 0.9 s and + 0.09 s. The first transfer
    # runs [0.2, 1.2], past backward's end (1.0); the second [1.2, 1.3]. With kappa = 0 backward is
    # not slowed. Step 1.3 s; SF 1/1.3.
    p = StepProfile(0.0, 1.0, [100 * MB, 10 * MB], ready=[0.2, 1.0], allreduce_local_s_per_byte=9e-9)
    r = predict(p, 2, 1e9, latency=0.0, fusion_bytes=1)
    assert r["step_s"] == pytest.approx(1.3) and r["scaling_factor"] == pytest.approx(1 / 1.3)
    # the wire bytes (utilisation) do not change: 2(n-1)/n of each bucket
    assert r["wire_bytes"] == pytest.approx(110 * MB)


def test_no_overlap_all_gradients_ready_at_the_end():
    # every tensor ready at the end of backward: step = compute + sum of bucket times + t_opt
    p = StepProfile(0.1, 0.2, [10 * MB] * 3, optimizer_s=0.05, ready=[0.2, 0.2, 0.2])
    r = predict(p, 2, 1e9, latency=0.0, fusion_bytes=10 * MB)
    comm = 3 * (2 * 1 / 2 * 10 * MB / 1e9)          # three 10 MB buckets, 0.01 s each
    assert r["step_s"] == pytest.approx(0.3 + comm + 0.05)
    assert r["scaling_factor"] == pytest.approx(0.35 / (0.35 + comm))


def test_full_overlap_when_communication_hides_in_backward():
    # tensors ready early in backward; comm of each far shorter than what remains
    p = StepProfile(0.1, 1.0, [1 * MB] * 4, ready=[0.1, 0.2, 0.3, 0.4])
    r = predict(p, 8, 10e9, latency=1e-6, fusion_bytes=1 * MB)
    assert r["step_s"] == pytest.approx(1.1) and r["scaling_factor"] == pytest.approx(1.0)


def test_communication_cpu_cost_slows_the_backward_it_overlaps():
    # backward 1 s; a 100 MB bucket ready at 0.2 s and a 10 MB one at the end; 2 workers at 1 GB/s
    # (wire 0.1 s and 0.01 s). kappa = 0.5 ns per byte sent: the first transfer takes 0.05 s of CPU,
    # half the core while it runs, so by its end (t = 0.3) backward has done 0.25 s; the rest
    # (0.75 s) ends at 1.05 s, then the last bucket: 0.01 s. Step 1.06 s (1.01 s without kappa).
    p = StepProfile(0.0, 1.0, [100 * MB, 10 * MB], ready=[0.2, 1.0])
    assert predict(p, 2, 1e9, latency=0.0, fusion_bytes=1)["step_s"] == pytest.approx(1.01)
    p.comm_cpu_s_per_byte = 0.5e-9
    r = predict(p, 2, 1e9, latency=0.0, fusion_bytes=1)
    assert r["step_s"] == pytest.approx(1.06) and r["scaling_factor"] == pytest.approx(1.0 / 1.06)
    # CPU-bound transfers (2 ns per byte: 0.2 s of CPU for 0.1 s of wire) take their CPU time and
    # stop backward while they run: 0.2 + 0.2, then 0.8 s of backward, then 0.02 s
    p.comm_cpu_s_per_byte = 2e-9
    assert predict(p, 2, 1e9, latency=0.0, fusion_bytes=1)["step_s"] == pytest.approx(1.22)
    # nothing overlaps backward (every bucket ready at the end): only the transfers' length counts
    q = StepProfile(0.0, 1.0, [100 * MB], ready=[1.0], comm_cpu_s_per_byte=0.5e-9)
    assert predict(q, 2, 1e9, latency=0.0)["step_s"] == pytest.approx(1.1)
    # 4 workers send 2(n-1)/n = 1.5 times the bucket: 150 MB at 0.5 ns = 0.075 s of CPU in 0.15 s
    q4 = StepProfile(0.0, 1.0, [100 * MB, 10 * MB], ready=[0.2, 1.0], comm_cpu_s_per_byte=0.5e-9)
    # first transfer [0.2, 0.35], backward at half speed: w = 0.275; rest ends at 1.075; + 0.015
    assert predict(q4, 4, 1e9, latency=0.0, fusion_bytes=1)["step_s"] == pytest.approx(1.09)


def test_one_worker_and_infinite_bandwidth():
    p = StepProfile(0.1, 0.2, [50 * MB] * 2, ready=[0.2, 0.2])
    assert predict(p, 1, 1e6)["scaling_factor"] == 1.0
    r = predict(p, 4, float("inf"), latency=1e-3, fusion_bytes=50 * MB)
    # only latency is left: two buckets of 2(n-1)*alpha = 6 ms each, after backward ends
    assert r["step_s"] == pytest.approx(0.3 + 2 * 6e-3)
    assert r["network_utilisation"] == 0.0


def test_compression_divides_bytes_and_fusion_groups_tensors():
    assert fuse([4, 4, 4, 10], [1, 2, 3, 4], 8) == [(8, 2), (4, 3), (10, 4)]
    p = StepProfile(0.0, 0.1, [80 * MB], ready=[0.1])
    t1 = predict(p, 2, 1e9, latency=0.0)["step_s"] - 0.1
    t8 = predict(p, 2, 1e9, latency=0.0, ratio=8)["step_s"] - 0.1
    assert t1 == pytest.approx(0.08) and t8 == pytest.approx(0.01)


def test_min_ratio_reaches_the_target():
    p = StepProfile(0.03, 0.06, [1 * MB] * 100)
    c = min_ratio(p, 8, 1.25e8, 0.9)                 # 1 Gbit/s
    assert predict(p, 8, 1.25e8, ratio=c)["scaling_factor"] >= 0.9
    assert predict(p, 8, 1.25e8, ratio=c / 1.05)["scaling_factor"] < 0.9
    assert min_ratio(p, 8, 1.25e10, 0.9) == 1.0       # 100 Gbit/s: none needed


@pytest.mark.parametrize("kwargs, match", [(dict(workers=0, bandwidth=1e9), "workers must be an integer >= 1"),
                                           (dict(workers=2, bandwidth=0), "bandwidth must be > 0"),
                                           (dict(workers=2, bandwidth=1e9, ratio=0.5), "ratio must be >= 1")])
def test_bad_input(kwargs, match):
    with pytest.raises(UserError, match=match):
        predict(StepProfile(0.1, 0.1, [MB]), **kwargs)


def test_cli_one_line_errors_and_table(tmp_path):
    cli = os.path.join(os.path.dirname(sys.executable), "gluon-suite")
    ok = subprocess.run([cli, "whatif", "--forward-ms", "30", "--backward-ms", "60", "--param-mb", "100",
                         "--workers", "8", "--bandwidth-gbps", "1", "100", "--plot", str(tmp_path / "p.png")],
                        capture_output=True, text=True)
    assert ok.returncode == 0 and "scaling" in ok.stdout and (tmp_path / "p.png").exists()
    for args, needle in ((["--bandwidth-gbps", "-1"], "--bandwidth-gbps: must be a number > 0"),
                         (["--workers", "0"], "--workers: must be a whole number >= 1"),
                         (["--model", "resnet19"], "unknown model 'resnet19'")):
        base = [] if "--model" in args else ["--forward-ms", "1", "--backward-ms", "1", "--param-mb", "1"]
        p = subprocess.run([cli, "whatif", *base, *args], capture_output=True, text=True)
        assert p.returncode == 2 and "Traceback" not in p.stderr and needle in p.stderr



def test_cli_takes_the_allreduce_local_cost(tmp_path):
    # one 100 MB tensor ready at the end of backward (30 + 60 ms), 2 workers at 8 Gbit/s (1 GB/s):
    # wire 0.1 s, latency 2 x 5 us, gamma 1 ns per byte: + 0.1 s. Step 0.29001 s.
    cli = os.path.join(os.path.dirname(sys.executable), "gluon-suite")
    out = tmp_path / "w.json"
    p = subprocess.run([cli, "whatif", "--forward-ms", "30", "--backward-ms", "60", "--param-mb", "100", "--tensors",
                        "1", "--workers", "2", "--bandwidth-gbps", "8", "--ratios", "1",
                        "--allreduce-local-ns-per-byte", "1", "--json", str(out)], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    row = json.loads(out.read_text())["rows"][0]
    assert row["step_s"] == pytest.approx(0.29001)
    bad = subprocess.run([cli, "whatif", "--forward-ms", "1", "--backward-ms", "1", "--param-mb", "1",
                          "--allreduce-local-ns-per-byte", "-1"], capture_output=True, text=True)
    assert bad.returncode == 2 and "--allreduce-local-ns-per-byte" in bad.stderr and "Traceback" not in bad.stderr


PROFILE = """
import json
from mxnet import gluon
from gluon_suite.whatif import profile_model
net = gluon.nn.HybridSequential()
net.add(gluon.nn.Conv2D(64, 3, padding=1, in_channels=3), gluon.nn.Conv2D(64, 3, padding=1, in_channels=64),
        gluon.nn.GlobalAvgPool2D(), gluon.nn.Dense(10, in_units=64))
p = profile_model(net, batch_size=8, image_size=32, repeats=5)
print(json.dumps({"ready": p.ready, "backward": p.backward_s, "bytes": p.grad_bytes}))
"""


@pytest.mark.parametrize("bulk", ["0", None])
def test_profile_measures_when_each_gradient_is_ready(bulk):
    # a heavy convolution first and a tiny classifier last, with MXNet's bulk execution off and at
    # its default: either way the profile has one ready time per gradient, in backward order (the
    # classifier's first), none before the one before it and none after backward ends. How far
    # apart they are depends on the machine and its load, so it is not asserted here; that they
    # are the moments each gradient was written is checked with a stand-in clock below.
    env = {k: v for k, v in os.environ.items() if k != "MXNET_EXEC_BULK_EXEC_TRAIN"}
    if bulk is not None:
        env["MXNET_EXEC_BULK_EXEC_TRAIN"] = bulk
    out = subprocess.run([sys.executable, "-c", PROFILE], env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    p = json.loads(out.stdout.strip().splitlines()[-1])
    ready = p["ready"]
    assert len(ready) == len(p["bytes"]) == 6
    assert p["bytes"][0] == 10 * 4 and p["bytes"][1] == 10 * 64 * 4   # last layer first
    assert all(a <= b for a, b in zip(ready, ready[1:]))
    # each step's ready times are taken before its backward time ends, so their medians are too
    assert 0 < ready[-1] <= p["backward"] * 1.01


def test_ready_times_are_read_when_each_gradient_is_written(monkeypatch):
    """``grad_ready_times`` waits for the gradients in backward order and reads the clock as each
    wait returns: with a clock that advances only inside the waits, the times are exactly the
    moments the stand-in gradients were written, one per parameter, in the order given."""
    import time as time_module
    from gluon_suite.whatif.profiler import grad_ready_times
    clock = {"now": 100.0}
    waited = []

    class Grad:
        def __init__(self, name, written_at):
            self.name, self.written_at = name, written_at

        def wait_to_read(self):
            waited.append(self.name)
            clock["now"] = max(clock["now"], self.written_at)

    class Param:
        def __init__(self, *grads):
            self.grads = list(grads)

        def list_grad(self):
            return self.grads

    monkeypatch.setattr(time_module, "perf_counter", lambda: clock["now"])
    # backward order: the classifier's (written at +1), then a layer on two devices whose second
    # copy is written last (+3 and +5), then one written before its predecessor (+2: read at +5)
    params = [Param(Grad("dense", 101.0)), Param(Grad("conv2@0", 103.0), Grad("conv2@1", 105.0)),
              Param(Grad("conv1", 102.0))]
    assert grad_ready_times(params, 100.0) == [1.0, 5.0, 5.0]
    assert waited == ["dense", "conv2@0", "conv2@1", "conv1"]
