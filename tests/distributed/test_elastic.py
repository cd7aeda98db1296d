"""Elastic training on real `horovodrun` elastic jobs on loopback: a worker killed with SIGKILL
mid-epoch (the job finishes on the survivors with every sample of every epoch seen once) and a
worker added by the discovery script mid-run (it starts from the current state)."""
import json
import os
import subprocess
import sys

import numpy as np
import pytest

from ..conftest import HOROVODRUN, REPO, job_output

HERE = os.path.dirname(os.path.abspath(__file__))


def run_job(tmp_path, kill=False, add=False, algo="sync"):
    out = tmp_path / ("killed" if kill else "added" if add else "full")
    out.mkdir()
    # one slot per host name: Horovod blacklists a failed *host*, so the names must differ (three
    # spellings of the loopback address, local on any machine)
    names = ["localhost", "127.0.0.1", "127.0.1"]
    start = names[:2] if add else names
    (out / "hosts.txt").write_text("".join(f"{h}:1\n" for h in start))
    disc = out / "discover.sh"
    disc.write_text(f"#!/bin/sh\ncat {out / 'hosts.txt'}\n")
    disc.chmod(0o755)
    env = dict(os.environ, OUT=str(out), KILL="1" if kill else "0", ADD="1" if add else "0",
               ADD_HOST=names[2], ALGO=algo, OMP_NUM_THREADS="1", MXNET_CPU_WORKER_NTHREADS="1", PYTHONPATH=REPO)
    p = subprocess.run([HOROVODRUN, "-np", str(len(start)), "--min-np", "2", "--max-np", "3",
                        "--host-discovery-script", str(disc), "--network-interface", "lo", "--gloo",
                        sys.executable, os.path.join(HERE, "_elastic_job.py")], env=env,
                       capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, job_output(p)
    return out, [json.load(open(f)) for f in sorted(out.glob("rank*.json"))]


@pytest.mark.horovod
@pytest.mark.parametrize("algo", ["sync", "cser", "fp16"])
def test_worker_added_mid_run_starts_from_the_current_state(tmp_path, algo):
    # fp16: Adam's moments sit in a tuple beside the float32 master weights; the newcomer must get
    # both, and the loss scale, or the copies drift apart after the join
    # cser: local models differ between synchronisations; the join folds each residual in first
    out, res = run_job(tmp_path, add=True, algo=algo)
    assert len(res) == 3 and all(r["size"] == 3 for r in res)          # the job grew to 3
    new = res[2]
    assert len(new["joins"]) == 1                                      # the newcomer started once ...
    join = new["joins"][0]
    old_join = res[0]["joins"][-1]                                     # ... where the others resumed
    assert join["size"] == old_join["size"] == 3
    # the state it received before its first step: epoch (mid epoch 2), sample position, updates
    assert (join["epoch"], join["processed"], join["num_update"]) == \
        (old_join["epoch"], old_join["processed"], old_join["num_update"])
    assert join["epoch"] == 1 and 0 < join["processed"] < 1438 and join["num_update"] == join["steps_done"] > 0
    for r in res:
        assert all(j["max_param_diff_to_rank0"] == 0.0 for j in r["joins"])   # identical after each reset
        if algo != "cser":  # (CSER's local models differ between synchronisations by design)
            assert r["max_param_diff_to_rank0"] == 0.0                        # and at the end
        assert len(r["seen"]) == 3                                            # epoch counter right
        for epoch in r["seen"]:
            assert sorted(epoch) == list(range(1438))                         # every sample once
    # the learning rate ramps from the 2- to the 3-worker value over K = 5 steps
    lrs = np.array(res[0]["lrs"])
    small, big, K = 0.05 * 2 / 3, 0.05, 5
    t = join["steps_done"]
    assert np.allclose(lrs[:t], small) and np.allclose(lrs[t + K - 1:], big)
    ramp = lrs[t - 1:t + K]
    assert np.all(np.diff(ramp) > 0) and np.diff(ramp).max() <= (big - small) / K + 1e-9
    assert np.allclose(new["lrs"], lrs)                                        # the newcomer's too
    if algo == "fp16":   # each parameter: float32 master, mean, variance; one loss scale everywhere
        assert all(r["opt_arrays"] == 3 * 4 for r in res)
        assert all(r["loss_scale"] == res[0]["loss_scale"] for r in res)
        assert res[0]["loss_scale"]["loss_scale"] > 2.0 ** 8          # it grew (window 20) ...
        assert np.isfinite(res[0]["acc"]) and res[0]["acc"] > 0.5      # ... and the MLP learned


@pytest.mark.long
@pytest.mark.horovod
def test_sigkill_mid_epoch_finishes_on_two_with_every_sample_once(tmp_path):
    full_dir, full = run_job(tmp_path)
    out, res = run_job(tmp_path, kill=True)
    assert (out / "killed").exists()
    assert len(res) == 2 and all(r["size"] == 2 for r in res)          # finished on the survivors
    for r in res:
        assert r["max_param_diff_to_rank0"] == 0.0                     # identical parameters ...
        assert len(r["joins"]) == 2 and all(j["max_param_diff_to_rank0"] == 0.0 for j in r["joins"])  # ... after the reset too
        assert len(r["seen"]) == 3
        for epoch in r["seen"]:                                        # committed steps: each sample once
            assert sorted(epoch) == list(range(1438))
        assert set(r["sizes"]) == {2, 3}
    # the learning rate dropped to the smaller global batch's target at once (0.05 x n/3 for n
    # workers at every step), never above it
    lrs, sizes = np.array(res[0]["lrs"]), np.array(res[0]["sizes"])
    assert lrs[0] == pytest.approx(0.05) and lrs[-1] == pytest.approx(0.05 * 2 / 3)
    assert np.allclose(lrs, 0.05 * sizes / 3)
    assert abs(res[0]["acc"] - full[0]["acc"]) <= 0.01 + 1e-9, (res[0]["acc"], full[0]["acc"])
