"""Shared test helpers: running real ``horovodrun --gloo`` jobs on loopback."""
import importlib.util
import json
import os
import subprocess
import sys
import textwrap

import pytest

from .unit_tier import reaches

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HOROVODRUN = os.path.join(os.path.dirname(sys.executable), "horovodrun")
_SCRIPTS = {}


def load_script(relpath):
    """The program at ``relpath`` (from the repository root: ``scripts/cv/evaluate.py``,
    ``bench/comm.py``) imported as a module, once per test session; its ``main`` is not run."""
    if relpath not in _SCRIPTS:
        path = os.path.join(REPO, relpath)
        name = "script_" + os.path.splitext(relpath)[0].replace(os.sep, "_").replace("/", "_")
        spec = importlib.util.spec_from_file_location(name, path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        _SCRIPTS[relpath] = module
    return _SCRIPTS[relpath]


# what a test's code names when it starts Horovod workers (read from its source, as the quick tier does)
WORKER_LAUNCHES = {"HOROVODRUN", "horovodrun", "run_horovod", "horovod"}


def pytest_collection_modifyitems(config, items):
    """Mark ``horovod`` every test whose code starts ``horovodrun``, so that ``-m "not horovod"``
    never starts a worker; ``_workers_only_under_the_horovod_marker`` fails one that slips past."""
    for item in items:
        if not item.get_closest_marker("horovod") and reaches(item, WORKER_LAUNCHES):
            item.add_marker(pytest.mark.horovod)


@pytest.fixture(autouse=True)
def _workers_only_under_the_horovod_marker(request, monkeypatch):
    """A test that is not marked ``horovod`` fails if it starts a ``horovodrun`` process."""
    if request.node.get_closest_marker("horovod"):
        yield
        return
    real_init = subprocess.Popen.__init__

    def guarded(self, args, *a, **kw):
        text = args if isinstance(args, (str, bytes)) else " ".join(map(str, args))
        if "horovodrun" in str(text):
            raise AssertionError(f"{request.node.nodeid} starts horovodrun workers but is not marked "
                                 "horovod: add @pytest.mark.horovod to it")
        real_init(self, args, *a, **kw)

    monkeypatch.setattr(subprocess.Popen, "__init__", guarded)
    yield


@pytest.fixture(autouse=True)
def _block_names_as_when_run_alone():
    """Every test names its Gluon blocks from ``dense0``/``conv0`` on, as it does when run alone:
    the trainer orders parameters by name and keys shared randomness (GRBS, random-k) by that
    order, so with counters left by earlier tests two runs in one test could name their layers
    dense9/dense10 and dense11/dense12, sort them differently and draw different blocks."""
    mx = sys.modules.get("mxnet")
    if mx is not None:
        mx.name.NameManager._current.value = mx.name.NameManager()
    yield


def run_horovod(script_text, np_=2, tmp_path=None, timeout=300, extra_args=()):
    """Run ``script_text`` as a Python file under ``horovodrun -np N --gloo`` on localhost.

    The script gets ``OUT`` (a folder) in its environment and writes ``rank{R}.json`` there; the
    parsed per-rank results are returned in rank order. Fails the test with the job's output when a
    worker fails.
    """
    assert tmp_path is not None
    script = tmp_path / "job.py"
    script.write_text(textwrap.dedent(script_text))
    out = tmp_path / "out"
    out.mkdir(exist_ok=True)
    env = dict(os.environ, OUT=str(out), OMP_NUM_THREADS="1", MXNET_CPU_WORKER_NTHREADS="1",
               PYTHONPATH=REPO + os.pathsep + os.environ.get("PYTHONPATH", ""))
    cmd = [HOROVODRUN, "-np", str(np_), "-H", f"localhost:{np_}", "--gloo", *extra_args,
           sys.executable, str(script)]
    proc = subprocess.run(cmd, env=env, cwd=str(tmp_path), capture_output=True, text=True,
                          timeout=timeout)
    if proc.returncode != 0:
        pytest.fail(f"horovodrun failed ({proc.returncode}):\n{job_output(proc, 4000)}")
    results = []
    for r in range(np_):
        with open(out / f"rank{r}.json") as f:
            results.append(json.load(f))
    return results


def job_output(proc, tail=3000):
    """What a failed job printed, for the assertion message: every native-crash dump
    (faulthandler's "Fatal Python error" with the Python stacks under it, which a worker prints long
    before the job ends) in full, then the last ``tail`` characters of stdout and of stderr."""
    text = (proc.stdout or "") + "\n" + (proc.stderr or "")
    dumps, lines = [], text.splitlines()
    for i, line in enumerate(lines):
        if "Fatal Python error" in line:
            prefix = line.split("Fatal Python error")[0]   # the rank's "[0]<stderr>:" prefix
            block = [ln for ln in lines[i:i + 400] if ln.startswith(prefix)][:120]
            dumps.append("\n".join(block))
    head = ("native crash dump(s):\n" + "\n---\n".join(dumps) + "\n=== tail ===\n") if dumps else ""
    return head + (proc.stdout or "")[-tail:] + (proc.stderr or "")[-tail:]


@pytest.fixture
def horovod(tmp_path):
    """Fixture form of ``run_horovod`` bound to the test's temp folder."""
    def _run(script_text, np_=2, **kw):
        return run_horovod(script_text, np_=np_, tmp_path=tmp_path, **kw)
    return _run


def max_param_diff(a, b):
    """The largest absolute difference between two MXNet parameter files holding the same names."""
    import mxnet as mx
    import numpy as np
    pa, pb = mx.nd.load(str(a)), mx.nd.load(str(b))
    assert pa.keys() == pb.keys(), sorted(set(pa) ^ set(pb))
    return max(float(np.abs(pa[k].asnumpy() - pb[k].asnumpy()).max()) for k in pa)
