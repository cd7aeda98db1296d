"""``import gluon_suite.graph`` turns MXNet's bulked backward off in its own process (a bulked
segment keeps every gradient buffer it frees alive until the segment ends), unless the user set
``MXNET_EXEC_BULK_EXEC_TRAIN``, and processes started afterwards keep MXNet's default.

Observed through memory, in fresh processes: the backward of twelve multiplications of a 40 MB
array. Without bulking each gradient is freed as soon as the next one is made (two or three alive
at once, about 120 MB); with it, a whole segment's are alive until it ends (380-500 MB). Arrays
above 32 MB are mapped and unmapped on their own, so the peak RSS follows what is alive; the
probe resets the kernel's peak-RSS mark (``/proc/self/clear_refs``) just before the backward, so
that a higher peak earlier in the process cannot hide it."""
import json
import os
import subprocess
import sys

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

PROBE = r"""
import json, os, subprocess, sys
if sys.argv[1] == "graph":
    import gluon_suite.graph
import mxnet as mx
from mxnet import autograd
def status_mb(field):
    for line in open("/proc/self/status"):
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024

x = mx.nd.ones((10_000_000,))
x.attach_grad()
mx.nd.waitall()
with open("/proc/self/clear_refs", "w") as f:   # the peak (VmHWM) starts again from the RSS now
    f.write("5")
base = status_mb("VmRSS")
with autograd.record():
    y = x
    for _ in range(12):
        y = y * 1.5
y.backward()
mx.nd.waitall()
out = {"backward_mb": status_mb("VmHWM") - base,
       "variable": os.environ.get("MXNET_EXEC_BULK_EXEC_TRAIN")}
if len(sys.argv) > 2:   # a process started after the import
    child = subprocess.run([sys.executable, "-c", sys.argv[2], "plain"], capture_output=True, text=True)
    out["child"] = json.loads(child.stdout.strip().splitlines()[-1])
print(json.dumps(out))
"""


def _probe(mode, child=False, **env):
    full = {k: v for k, v in os.environ.items() if k != "MXNET_EXEC_BULK_EXEC_TRAIN"}
    full.update(env)
    args = [sys.executable, "-c", PROBE, mode] + ([PROBE] if child else [])
    r = subprocess.run(args, capture_output=True, text=True, env=full, cwd=REPO)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout.strip().splitlines()[-1])


def test_without_the_package_a_bulked_backward_holds_a_segment_of_gradients():
    assert _probe("plain")["backward_mb"] > 300


def test_graph_import_frees_each_gradient_and_leaves_no_variable_for_child_processes():
    out = _probe("graph", child=True)
    assert out["backward_mb"] < 200
    assert out["variable"] is None
    assert out["child"]["backward_mb"] > 300          # a process started later: MXNet's default


def test_the_users_own_setting_wins():
    out = _probe("graph", MXNET_EXEC_BULK_EXEC_TRAIN="1")
    assert out["backward_mb"] > 300 and out["variable"] == "1"
    assert _probe("plain", MXNET_EXEC_BULK_EXEC_TRAIN="0")["backward_mb"] < 200
