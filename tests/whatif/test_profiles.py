"""Profiles as files: save and load, bad files as one-line errors, the profile and predict commands."""
import json
import os
import subprocess
import sys

import pytest

from gluon_suite.utils import UserError
from gluon_suite.whatif import StepProfile, load_profile, profile_record, save_profile
from gluon_suite.whatif.profiles import trainer_buckets

MB = 1e6
CLI = os.path.join(os.path.dirname(sys.executable), "gluon-suite")


def record(**over):
    p = StepProfile(0.03, 0.06, [10 * MB, 20 * MB, 30 * MB], 0.005, ready=[0.01, 0.03, 0.06])
    rec = profile_record(p, model="m", batch_size=8, image_size=32, dtype="float32",
                         device={"context": "cpu(0)", "name": "a CPU"}, bucket_mb=25)
    rec.update(over)
    return rec


def test_round_trip(tmp_path):
    path = tmp_path / "p.json"
    save_profile(path, record())
    prof, rec = load_profile(str(path))
    assert (prof.forward_s, prof.backward_s, prof.optimizer_s) == (0.03, 0.06, 0.005)
    assert prof.grad_bytes == [10 * MB, 20 * MB, 30 * MB] and prof.ready == [0.01, 0.03, 0.06]
    assert rec["format"] == "gluon-suite-whatif-profile" and rec["version"] == 1
    assert rec["device"] == {"context": "cpu(0)", "name": "a CPU"} and rec["versions"]["gluon_suite"]
    # the trainer's layout at 25 MB: 10 + 20 = 30 MB closes the first bucket (ready with the 20 MB
    # tensor at 0.03 s), the 30 MB tensor is the second
    assert [(b["bytes"], b["ready_s"], b["tensors"]) for b in rec["buckets"]] == [(30 * MB, 0.03, 2),
                                                                                   (30 * MB, 0.06, 1)]


def test_trainer_buckets_by_hand():
    assert trainer_buckets([4, 4, 4, 10], [1, 2, 3, 4], bucket_mb=8e-6) == [
        {"bytes": 8, "ready_s": 2, "tensors": 2}, {"bytes": 14, "ready_s": 4, "tensors": 2}]
    assert trainer_buckets([4, 4], [1, 2], bucket_mb=0) == [{"bytes": 4, "ready_s": 1, "tensors": 1},
                                                            {"bytes": 4, "ready_s": 2, "tensors": 1}]


@pytest.mark.parametrize("content, needle", [
    ("{not json", "not JSON"),
    (json.dumps({"format": "something else", "version": 1}), "'format' is not"),
    (json.dumps(record(version=2)), "format version 2, newer than this gluon-suite reads (1)"),
    (json.dumps(record(version="1")), "no integer 'version'"),
    (json.dumps(record(forward_s=-1)), "'forward_s' must be a number of seconds >= 0"),
    (json.dumps(record(tensors=[])), "'tensors' must be a non-empty list"),
    (json.dumps(record(tensors=[{"bytes": 0, "ready_s": 0.01}])), "tensor 0's 'bytes' must be a number > 0"),
    (json.dumps(record(tensors=[{"bytes": 1, "ready_s": 5.0}])), "tensor 0's 'ready_s' must be within backward"),
])
def test_bad_files_are_one_line_errors(tmp_path, content, needle):
    path = tmp_path / "bad.json"
    path.write_text(content)
    with pytest.raises(UserError) as e:
        load_profile(str(path))
    assert needle in str(e.value) and "\n" not in str(e.value)
    p = subprocess.run([CLI, "whatif", "predict", "--profile", str(path), "--workers", "2"],
                       capture_output=True, text=True)
    assert p.returncode == 2 and needle in p.stderr and "Traceback" not in p.stderr
    assert len(p.stderr.strip().splitlines()) == 1


def test_predict_from_a_file_by_hand(tmp_path):
    # one 100 MB tensor ready at the end of backward (30 + 60 ms), 2 workers at 8 Gbit/s (1 GB/s):
    # 0.1 s of wire after backward + 2 x 5 us latency: step 0.19001 s
    p = StepProfile(0.03, 0.06, [100 * MB], ready=[0.06])
    rec = profile_record(p, model="m", batch_size=8, image_size=32, dtype="float32",
                         device={"context": "cpu(0)", "name": "x"})
    path, out = tmp_path / "p.json", tmp_path / "out.json"
    save_profile(path, rec)
    r = subprocess.run([CLI, "whatif", "predict", "--profile", str(path), "--workers", "2", "--bandwidth-gbps", "8",
                        "--ratios", "1", "--json", str(out)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    row = json.loads(out.read_text())["rows"][0]
    assert row["step_s"] == pytest.approx(0.19001) and row["scaling_factor"] == pytest.approx(0.09 / 0.19001)


def test_profile_command_writes_a_profile_here(tmp_path):
    out = tmp_path / "prof.json"
    r = subprocess.run([CLI, "whatif", "profile", "--model", "cifar_resnet20_v1", "--batch-size", "4",
                        "--image-size", "32", "--repeats", "1", "--out", str(out)], capture_output=True, text=True,
                       timeout=600)
    assert r.returncode == 0, r.stderr[-2000:]
    rec = json.loads(out.read_text())
    prof, _ = load_profile(str(out))
    # GluonCV's cifar_resnet20_v1: 0.27M float32 parameters, the classifier (10 x 64 weights, 10
    # biases) last, so first in backward order
    assert 0.26e6 * 4 < sum(prof.grad_bytes) < 0.28e6 * 4
    assert sorted(prof.grad_bytes[:2]) == [10 * 4, 10 * 64 * 4]
    assert rec["device"]["context"] == "cpu(0)" and rec["dtype"] == "float32" and rec["source"] == "measured"
    assert rec["versions"]["mxnet"] == "1.9.1" and rec["batch_size"] == 4
    assert prof.forward_s > 0 and prof.backward_s > 0
    assert sum(b["bytes"] for b in rec["buckets"]) == pytest.approx(sum(prof.grad_bytes))


@pytest.mark.parametrize("args, needle", [
    (["--ctx", "gpu(0)"], "--ctx gpu(0): MXNet sees no GPU on this machine"),
    (["--ctx", "tpu"], "--ctx takes cpu, cpu(0) or gpu(N)"),
    (["--dtype", "float16"], "float16"),
])
def test_profile_command_one_line_errors(tmp_path, args, needle):
    import mxnet as mx
    if args[:2] == ["--ctx", "gpu(0)"] and mx.context.num_gpus() > 0:   # a GPU machine: ask for one it lacks
        args, needle = ["--ctx", "gpu(99)"], "--ctx gpu(99): MXNet sees"
    r = subprocess.run([CLI, "whatif", "profile", "--model", "cifar_resnet20_v1", "--batch-size", "2",
                        "--image-size", "32", "--out", str(tmp_path / "p.json"), *args], capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 2 and needle in r.stderr and "Traceback" not in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1 and not (tmp_path / "p.json").exists()
