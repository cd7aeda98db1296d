"""The registry's extension point: an algorithm (``every_other``) and a compressor (``strided``)
registered in a test module outside the package (plugin_algorithms.py) train through
``DistributedTrainer`` on 2 real Horovod workers, matching float64 NumPy references of their rules
at every step, and through a training script's ``--algorithm``/``--compressor``, where the bytes
they put on the wire match a count made by hand; an unregistered name is a one-line error that
lists the registered ones (docs/distributed.md, "Your own algorithm or compressor")."""
import ast
import json
import os
import subprocess
import sys

import numpy as np
import pytest

from ..conftest import HOROVODRUN, REPO, job_output, run_horovod

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import _plugin_job as job  # noqa: E402

N = 2
MODULE = "tests.distributed.plugin_algorithms"


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    with open(os.path.join(HERE, "_plugin_job.py"), encoding="utf-8") as f:
        return run_horovod(f.read(), np_=N, tmp_path=tmp_path_factory.mktemp("plugin"), timeout=400)


def grad(x, rank):
    """The gradient of the mean over the batch of L2Loss = 0.5 mean_o (xW+b-y)^2, float64."""
    X, Y = (a.astype(np.float64) for a in job.data(rank))
    b, W = x[:job.O], x[job.O:].reshape(job.O, job.D)
    gp = (X @ W.T + b - Y) / job.O / job.B
    return np.concatenate([gp.sum(0), (gp.T @ X).ravel()])


def reference_every_other(x0, offset):
    """Per worker: x_i <- x_i - lr mean_j g_j(x_j) on steps offset, offset+2, ...; else
    x_i <- x_i - lr g_i(x_i)."""
    xs, hist = [x0.copy() for _ in range(N)], [[x0.copy()] for _ in range(N)]
    for t in range(job.STEPS):
        gs = [grad(x, i) for i, x in enumerate(xs)]
        mean = sum(gs) / N
        xs = [x - job.LR * (mean if (t - offset) % 2 == 0 else g) for x, g in zip(xs, gs)]
        for i in range(N):
            hist[i].append(xs[i].copy())
    return hist


def reference_strided(x0, ratio=2):
    """x <- x - lr mean_i C_t(g_i), C_t keeping coordinates j = t (mod ratio) of the flat vector."""
    x, hist = x0.copy(), [x0.copy()]
    for t in range(job.STEPS):
        keep = (np.arange(x.size) % ratio == t % ratio).astype(np.float64)
        x = x - job.LR * keep * sum(grad(x, i) for i in range(N)) / N
        hist.append(x.copy())
    return hist


@pytest.mark.parametrize("name, offset", [("every_other", 0), ("every_other_offset1", 1)])
def test_registered_algorithm_matches_its_rule(runs, name, offset):
    x0 = np.array(runs[0][name][0], dtype=np.float64)
    want = reference_every_other(x0, offset)
    for rank in range(N):
        got = np.array(runs[rank][name])
        np.testing.assert_allclose(got, np.array(want[rank]), rtol=1e-5, atol=1e-6)
        assert runs[rank][name + ".config"] == {"name": "every_other", "offset": offset}
    # the local steps took the workers' models apart
    assert not np.allclose(runs[0][name][-1], runs[1][name][-1])


@pytest.mark.parametrize("name", ["strided", "strided_by_name"])
def test_registered_compressor_matches_its_rule(runs, name):
    x0 = np.array(runs[0][name][0], dtype=np.float64)
    want = np.array(reference_strided(x0))
    for rank in range(N):
        np.testing.assert_allclose(np.array(runs[rank][name]), want, rtol=1e-5, atol=1e-6)
        assert runs[rank][name + ".config"]["compressor"]["name"] == "strided"


def test_unregistered_names_are_one_line_errors():
    from gluon_suite.distributed import DistributedTrainer, make_algorithm, make_compressor
    from mxnet import gluon
    net = gluon.nn.Dense(2, in_units=3)
    net.initialize()
    want = "unknown algorithm 'every_second'; registered: auto, cser, ef"
    with pytest.raises(ValueError, match=want):
        DistributedTrainer(net.collect_params(), "sgd", {"learning_rate": 0.1}, algorithm="every_second")
    with pytest.raises(ValueError, match="unknown compressor 'stride'.*registered: bf16, fp16, grbs"):
        make_compressor("stride")
    with pytest.raises(ValueError, match="cannot import module 'no_such_module'"):
        make_algorithm("no_such_module:every_other")
    with pytest.raises(ValueError, match="algorithm 'every_other' takes no option period"):
        make_algorithm(f"{MODULE}:every_other", period=4)


def _digits(tmp_path, *flags):
    tmp_path.mkdir(parents=True, exist_ok=True)
    out = tmp_path / "run"
    env = dict(os.environ, OMP_NUM_THREADS="1", MXNET_CPU_WORKER_NTHREADS="1", GLUON_SUITE_QUIET="1",
               PYTHONPATH=REPO + os.pathsep + os.environ.get("PYTHONPATH", ""))
    cmd = [HOROVODRUN, "-np", str(N), "-H", f"localhost:{N}", "--gloo", sys.executable,
           os.path.join(REPO, "scripts/cv/train_digits.py"), "--epochs", "1", "--no-progress", "--out", str(out),
           *flags]
    proc = subprocess.run(cmd, env=env, cwd=str(tmp_path), capture_output=True, text=True, timeout=400)
    assert proc.returncode == 0, job_output(proc, 4000)
    with open(out / "log.jsonl") as f:
        rec = [json.loads(line) for line in f][-1]
    with open(out / "config.json") as f:
        return rec, json.load(f)


def _gradient_values():
    """The trainable values of the script's network, counted here from its parameters."""
    import mxnet as mx
    from gluon_suite.cv.quickstart import digits_cnn
    net = digits_cnn()
    net.initialize()
    net(mx.nd.zeros((1, 1, 8, 8)))
    return sum(int(np.prod(p.shape)) for p in net.collect_params().values() if p.grad_req != "null")


def test_registered_names_through_a_training_script(tmp_path):
    """``--algorithm module:every_other`` sends the dense gradients on every other step, and
    ``--compressor module:strided --ratio 4`` a quarter of the coordinates each step: the bytes on
    this worker's link, against a count by hand (2 workers: a ring allreduce puts 2(n-1)/n = 1 times
    the payload on the link; the network's gradients fit one bucket)."""
    n_values = _gradient_values()
    rec, cfg = _digits(tmp_path / "algo", "--algorithm", f"{MODULE}:every_other")
    assert cfg["algorithm"] == f"{MODULE}:every_other"
    steps = round(rec["dense_wire_bytes"] / (4.0 * n_values))
    assert steps > 10 and rec["dense_wire_bytes"] == 4.0 * n_values * steps
    assert rec["train_wire_bytes"] == 4.0 * n_values * ((steps + 1) // 2)
    rec, cfg = _digits(tmp_path / "comp", "--algorithm", "sync", "--compressor", f"{MODULE}:strided", "--ratio", "4")
    assert cfg["compressor"] == f"{MODULE}:strided" and cfg["ratio"] == 4
    sent = sum(len(range(t % 4, n_values, 4)) for t in range(steps))
    assert rec["train_wire_bytes"] == 4.0 * sent


def test_an_unregistered_name_on_the_command_line_is_one_line(tmp_path):
    proc = subprocess.run([sys.executable, os.path.join(REPO, "scripts/cv/train_digits.py"), "--algorithm",
                           "every_second", "--out", str(tmp_path / "x")], capture_output=True, text=True,
                          timeout=120, env=dict(os.environ, PYTHONPATH=REPO))
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "unknown algorithm 'every_second'" in lines[0], proc.stderr
    assert "registered: auto, cser, ef, local, local_adaalter, sync" in lines[0]
    assert "Traceback" not in proc.stderr and not (tmp_path / "x").exists()


# ---- nothing outside the registry knows a name ------------------------------------------------------
PKG = os.path.join(REPO, "gluon_suite")
ABOUT = ("algo", "compressor", "c1", "c2", ".name", "['name']", '["name"]', "spec")


def name_comparisons(source, names):
    """``(line, text)`` of every comparison in ``source`` between a registered name (a string
    literal, or a tuple/list/set of them) and an expression about an algorithm or a compressor
    (its source mentions one of ``ABOUT``)."""
    def literals(node):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            return {node.value.lower()}
        if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
            return set().union(*(literals(e) for e in node.elts)) if node.elts else set()
        if isinstance(node, ast.Dict):
            return set().union(*(literals(v) for v in node.values)) if node.values else set()
        return set()
    found = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.Compare):
            continue
        sides = [node.left, *node.comparators]
        for a, b in zip(sides, sides[1:]):
            for lit, other in ((a, b), (b, a)):
                text = ast.unparse(other).lower()
                bare = isinstance(other, ast.Name) and other.id == "name"
                if literals(lit) & names and (bare or any(w in text for w in ABOUT)):
                    found.append((node.lineno, ast.unparse(node)))
    return found


def test_the_name_check_finds_what_the_old_code_did():
    names = {"sync", "cser", "none", "zero", "grbs"}
    old = ('if comm.size > 1 and trainer.algorithm.name != "sync":\n    pass\n'
           'if spec == {"name": "sync"}:\n    pass\n'
           'if name in ("grbs", "randomk", "topk") and c1.name == "zero":\n    pass\n'
           'if str(cfg["algorithm"]).lower() != "cser":\n    pass\n')
    assert sorted({line for line, _ in name_comparisons(old, names)}) == [1, 3, 5, 7]
    assert len(name_comparisons(old, names)) == 5   # line 5 twice: name in (...) and c1.name == ...
    assert name_comparisons('if resume == "auto":\n    pass\nif choice == "local":\n    pass\n', names) == []


def test_no_name_comparisons_outside_the_registry():
    from gluon_suite.distributed import ALGORITHMS, COMPRESSORS
    names = set(ALGORITHMS) | set(COMPRESSORS)
    found = []
    for root, _, files in os.walk(PKG):
        for fn in files:
            path = os.path.join(root, fn)
            if fn.endswith(".py") and path != os.path.join(PKG, "distributed", "registry.py"):
                with open(path, encoding="utf-8") as f:
                    found += [f"{os.path.relpath(path, REPO)}:{line}: {text}"
                              for line, text in name_comparisons(f.read(), names)]
    assert not found, "compare a name outside the registry (ask the object instead):\n" + "\n".join(found)


# ---- the trainer's signature and the keywords of earlier versions ------------------------------------
def test_the_trainer_takes_at_most_eight_keyword_arguments():
    import inspect
    from gluon_suite.distributed import DistributedTrainer
    params = inspect.signature(DistributedTrainer.__init__).parameters
    keywords = [p for p in params.values() if p.default is not inspect.Parameter.empty]
    assert len(keywords) <= 8, [p.name for p in keywords]
    assert [p.name for p in keywords] == ["optimizer_params", "algorithm", "compressor", "communicator",
                                          "bucket_mb", "profile_comm", "prefix"]


def test_old_keywords_build_the_same_algorithm_with_one_notice():
    import warnings
    from mxnet import gluon
    from gluon_suite.distributed import DistributedTrainer, make_algorithm
    from gluon_suite.distributed import registry
    registry._warned.clear()
    net = gluon.nn.Dense(2, in_units=3)
    net.initialize()
    old = dict(algorithm="cser", compressor="grbs", ratio=16, period=4, seed=3, min_size=5, ratio2=2)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        a = DistributedTrainer(net.collect_params(), "sgd", {"learning_rate": 0.1}, **old).algorithm
        DistributedTrainer(net.collect_params(), "sgd", {"learning_rate": 0.1}, **old)
    notices = [w for w in caught if issubclass(w.category, FutureWarning)]
    assert len(notices) == 1 and "\n" not in str(notices[0].message)
    assert "min_size=, period=, ratio=, ratio2=, seed=" in str(notices[0].message)
    b = make_algorithm("cser", compressor="grbs", ratio=16, period=4, seed=3, min_size=5, ratio2=2)
    assert a.config() == b.config()
    assert a.config()["c2"] == {"name": "grbs", "ratio": 2.0, "min_size": 5, "warmup_steps": 0, "seed": 3 + 7919,
                                "structure": "tensor"}
    with warnings.catch_warnings(record=True):
        warnings.simplefilter("always")
        t = DistributedTrainer(net.collect_params(), "sgd", {"learning_rate": 0.1}, algorithm="auto",
                               target_sf=0.8, auto_candidates=["sync", "cser"], auto_ratios=[8], auto_periods=[4])
    assert (t.algorithm.target_sf, t.algorithm.kinds, t.algorithm.cser_ratios) == (0.8, ("sync", "cser"), (8.0,))
    with pytest.raises(TypeError, match="unexpected keyword argument.*learning_rate"):
        DistributedTrainer(net.collect_params(), "sgd", learning_rate=0.1)


def test_a_registered_algorithm_is_a_candidate_of_auto_where_it_says_so():
    """``every_other`` offers one candidate: a dense step, then one that sends nothing. Its predicted
    step is the mean of the two (hand-computed below), auto takes it as a candidate by its kind, and
    the rule picks it when sync cannot reach the target and it can."""
    import importlib
    importlib.import_module(MODULE)
    from gluon_suite.distributed.auto import AutoAlgorithm
    from gluon_suite.distributed.costmodel import candidate_kinds, candidate_list, choose, predict_candidates
    assert "every_other" in candidate_kinds()
    cands = candidate_list(("sync", "every_other"))
    assert [c["name"] for c in cands] == ["sync", "every_other"] and cands[0]["reference"]
    compute, t0, s_per_byte, n = 0.1, 0.001, 1e-8, 4
    buckets = [4e6, 2e6]
    rows = predict_candidates(cands, compute, buckets, n, t0, s_per_byte)
    comm = 2 * t0 + 2.0 * (n - 1) / n * sum(buckets) * s_per_byte      # K = 2 buckets, one message each
    assert rows[0]["step_s"] == pytest.approx(compute + comm)
    assert rows[1]["step_s"] == pytest.approx(compute + comm / 2) and rows[1]["ratio"] == pytest.approx(2.0)
    sf_sync, sf_other = compute / (compute + comm), compute / (compute + comm / 2)
    assert choose(rows, (sf_sync + sf_other) / 2) == (1, True)
    auto = AutoAlgorithm(candidates=("sync", "every_other"))
    assert type(auto._build(cands[1]["algorithm"])).__name__ == "EveryOtherSync"
