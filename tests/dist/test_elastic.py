"""Elastic training on real `horovodrun` elastic jobs on loopback: a worker killed with SIGKILL
mid-epoch, the job finishes on the survivors with every sample of every epoch seen once."""
import json
import os
import socket
import subprocess
import sys

import numpy as np
import pytest

from ..conftest import HOROVODRUN, REPO

HERE = os.path.dirname(os.path.abspath(__file__))


def run_job(tmp_path, kill):
    out = tmp_path / ("killed" if kill else "full")
    out.mkdir()
    # one slot per host name: Horovod blacklists a failed *host*, so the names must differ
    (out / "hosts.txt").write_text(f"localhost:1\n127.0.0.1:1\n{socket.gethostname()}:1\n")
    disc = out / "discover.sh"
    disc.write_text(f"#!/bin/sh\ncat {out / 'hosts.txt'}\n")
    disc.chmod(0o755)
    env = dict(os.environ, OUT=str(out), KILL="1" if kill else "0", OMP_NUM_THREADS="1",
               MXNET_CPU_WORKER_NTHREADS="1", PYTHONPATH=REPO)
    p = subprocess.run([HOROVODRUN, "-np", "3", "--min-np", "2", "--max-np", "3", "--host-discovery-script",
                        str(disc), "--network-interface", "lo", "--gloo", sys.executable,
                        os.path.join(HERE, "_elastic_job.py")], env=env, capture_output=True, text=True,
                       timeout=600)
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    return out, [json.load(open(f)) for f in sorted(out.glob("rank*.json"))]


@pytest.mark.long
@pytest.mark.horovod
def test_sigkill_mid_epoch_finishes_on_two_with_every_sample_once(tmp_path):
    full_dir, full = run_job(tmp_path, kill=False)
    out, res = run_job(tmp_path, kill=True)
    assert (out / "killed").exists()
    assert len(res) == 2 and all(r["size"] == 2 for r in res)          # finished on the survivors
    for r in res:
        assert r["max_param_diff_to_rank0"] == 0.0                     # identical parameters
        assert len(r["seen"]) == 3
        for epoch in r["seen"]:                                        # committed steps: each sample once
            assert sorted(epoch) == list(range(1438))
        assert set(r["sizes"]) == {2, 3}
    # the learning rate moved to the smaller global batch without jumping
    lrs = np.array(res[0]["lrs"])
    big, small = 0.05, 0.05 * 2 / 3
    assert lrs[0] == pytest.approx(big) and lrs[-1] == pytest.approx(small)
    assert np.abs(np.diff(lrs)).max() <= (big - small) / 5 + 1e-9
    assert abs(res[0]["acc"] - full[0]["acc"]) <= 0.01 + 1e-9, (res[0]["acc"], full[0]["acc"])
