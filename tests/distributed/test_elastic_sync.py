"""GluonState.sync, which Horovod's elastic loop calls before the training function (outside
``run``'s translation of errors): a peer that dies during it must make the survivors restore and
reset, not exit."""
import subprocess
import sys

import pytest

from ..conftest import REPO

pytestmark = pytest.mark.horovod

SCRIPT = """
import mxnet as mx
from mxnet import gluon
import horovod.mxnet as hvd
from horovod.common.exceptions import HorovodInternalError
from gluon_suite.distributed import DistributedTrainer
from gluon_suite.distributed.elastic import GluonState
hvd.init()
net = gluon.nn.Dense(2, in_units=3)
net.initialize()
state = GluonState(net, DistributedTrainer(net.collect_params(), "sgd", {"learning_rate": 0.1}), batch_size=4)
state.sync()                              # a healthy sync goes through
calls = []
def dead_peer():
    calls.append(1)
    raise mx.base.MXNetError("MXNetError: Horovod has been shut down. This was caused by an exception on one of "
                             "the ranks or an attempt to allreduce, allgather or broadcast a tensor after one of "
                             "the ranks finished execution.")
state._sync = dead_peer
try:
    state.sync()
    print("no error")
except HorovodInternalError as exc:
    print("translated", "shut down" in str(exc))
def other():
    raise mx.base.MXNetError("Check failed: shape mismatch")
state._sync = other
try:
    state.sync()
except HorovodInternalError:
    print("wrongly translated")
except mx.base.MXNetError:
    print("kept")
"""


def test_a_peer_dying_during_sync_becomes_horovod_internal_error_and_other_errors_stay():
    p = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=120, cwd=REPO,
                       env={"PYTHONPATH": REPO, "PATH": "/usr/bin:/bin", "OMP_NUM_THREADS": "1"})
    assert p.returncode == 0, p.stderr[-3000:]
    assert p.stdout.split() == ["translated", "True", "kept"]


def test_elastic_start_up_sync_makes_two_workers_identical(tmp_path):
    """Horovod's first GluonState.sync in a real elastic job, then three committed steps: both
    workers end with the same parameters although they were initialised differently. This is the
    job `.ci/stress` repeats to count native crashes at start-up (docs/elastic.md)."""
    import json
    import os
    from ..conftest import HOROVODRUN, job_output
    (tmp_path / "hosts.txt").write_text("localhost:1\n127.0.0.1:1\n")
    disc = tmp_path / "discover.sh"
    disc.write_text(f"#!/bin/sh\ncat {tmp_path / 'hosts.txt'}\n")
    disc.chmod(0o755)
    env = dict(os.environ, OUT=str(tmp_path), OMP_NUM_THREADS="1", MXNET_CPU_WORKER_NTHREADS="1", PYTHONPATH=REPO)
    p = subprocess.run([HOROVODRUN, "-np", "2", "--min-np", "2", "--max-np", "2", "--host-discovery-script", str(disc),
                        "--network-interface", "lo", "--gloo", sys.executable,
                        os.path.join(REPO, "tests", "distributed", "_first_sync_job.py")],
                       env=env, capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, job_output(p)
    res = [json.load(open(tmp_path / f"rank{r}.json")) for r in range(2)]
    assert all(r["size"] == 2 and r["diff"] == 0.0 for r in res)
