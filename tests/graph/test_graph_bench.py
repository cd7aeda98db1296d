"""The graph bench (bench/graph.py) as its protocols run it: the arms' models, the rotation of arms
over repeats, the worker's JSON line turned into metrics, the table cells against hand-computed
ratios, and what a run does without DGL's and PyG's environments. Workers are stubbed: no
processes, no timing."""
import pytest

from gluon_suite.evidence import protocols
from gluon_suite.utils.errors import UserError

from ..conftest import REPO, load_script


def bench():
    return load_script("bench/graph.py")


def test_arm_models_pyg_runs_the_three_models_and_python_kernels_no_layers():
    b = bench()
    models = ["gcn", "gat", "sage", "kernels", "gin", "sgc"]
    assert b.arm_models("ours", models) == models
    assert b.arm_models("dgl", models) == models
    assert b.arm_models("pyg", models) == ["gcn", "gat", "sage"]
    assert b.arm_models("ours_python", models) == ["gcn", "gat", "sage", "kernels"]


def test_rotated_starts_at_the_repeat_index():
    b = bench()
    arms = ["ours", "ours_python", "dgl", "pyg"]
    assert b.rotated(arms, 0) == arms
    assert b.rotated(arms, 1) == ["ours_python", "dgl", "pyg", "ours"]
    assert b.rotated(arms, 5) == ["ours_python", "dgl", "pyg", "ours"]
    assert b.rotated([], 3) == []


def test_worker_metrics_names_and_failed_worker():
    b = bench()
    out = {"epoch_s": 0.5, "epoch_cpu_s": 0.9, "peak_above_import_mb": 300.0}
    assert b.worker_metrics("gcn", out) == {"gcn_epoch_s": 0.5, "gcn_epoch_cpu_s": 0.9, "gcn_memory_mb": 300.0}
    assert b.worker_metrics("gcn", None) == {"gcn_epoch_s": None, "gcn_epoch_cpu_s": None, "gcn_memory_mb": None}
    k = {"copy_u_sum_s": 1, "u_mul_e_sum_s": 2, "edge_softmax_s": 3, "u_dot_v_s": 4, "peak_above_import_mb": 5}
    assert b.worker_metrics("kernels", k) == {"copy_u_sum_s": 1, "u_mul_e_sum_s": 2, "edge_softmax_s": 3,
                                              "u_dot_v_s": 4, "kernels_memory_mb": 5}
    assert set(b.worker_metrics("kernels", None).values()) == {None}


def test_ratio_cell_is_the_geometric_mean_of_per_repeat_ratios_and_their_range():
    b = bench()
    # ratios 0.5 and 2.0: geometric mean 1.0, range 0.50-2.00
    assert b.ratio_cell([1.0, 4.0], [2.0, 2.0]) == "1.00x (0.50-2.00)"
    # ratios 0.8, 0.9 (1 against 0 is left out); geometric mean sqrt(0.72) = 0.8485
    assert b.ratio_cell([0.8, 0.9, None], [1.0, 1.0, 1.0]) == "0.85x (0.80-0.90)"
    assert b.ratio_cell([0.3], [0.4]) == "0.75x"
    assert b.ratio_cell([None], [1.0]) == "n/a"
    assert b.mean_cell([0.1, 0.2, None]) == "0.150 s"
    assert b.mean_cell([]) == "n/a"


class Ctx:
    """What evidence() uses of the runner's Context, recording measure() calls."""

    def __init__(self, name, quick, root):
        self.protocol = protocols.load(REPO, name)
        self.quick, self.root = quick, root
        self.params, self.seeds = self.protocol.params(quick), self.protocol.seeds(quick)
        self.arms = self.protocol.arms()
        self.calls, self.tables, self.notes = [], {}, {}

    def progress(self, it, desc=None):
        return it

    def measure(self, arm, seed, fn):
        m = fn()
        self.calls.append((arm, seed, m))
        return m

    def table(self, name, columns, rows, caption=None):
        self.tables[name] = {"columns": columns, "rows": rows}

    def note(self, key, value):
        self.notes[key] = value


def test_quick_run_without_the_environments_measures_ours_and_notes_the_absent(monkeypatch, tmp_path):
    b = bench()
    times = {"ours": 0.08, "ours_python": 0.2}

    def fake(python, fw, model, epochs, threads, env):
        assert epochs == 1 and threads == 2 and model == "gcn" and env["MXNET_CPU_WORKER_NTHREADS"] == "1"
        return {"epoch_s": times[fw], "epoch_cpu_s": 2 * times[fw], "peak_above_import_mb": 100.0,
                "versions": {"mxnet": "1.9.1"}}, None
    monkeypatch.setattr(b, "_run_worker", fake)
    ctx = Ctx("graph_models", True, str(tmp_path))        # no .cache/dgl-venv, .cache/pyg-venv there
    b.evidence(ctx)
    assert [(a, s) for a, s, _ in ctx.calls] == [("ours", 0), ("ours_python", 0)]
    assert set(ctx.notes["absent"]) == {"dgl", "pyg"}
    row = ctx.tables["models"]["rows"][0]
    assert row[:5] == ["GCN (hidden 64)", "0.080 s", "0.200 s", "n/a", "n/a"]


def test_full_run_without_dgl_refuses_to_start(tmp_path):
    b = bench()
    with pytest.raises(UserError, match="make bench-deps"):
        b.evidence(Ctx("graph_layers", False, str(tmp_path)))


def test_layer_run_rotates_arms_and_tabulates_ratios(monkeypatch, tmp_path):
    b = bench()
    (tmp_path / ".cache" / "dgl-venv" / "bin").mkdir(parents=True)
    (tmp_path / ".cache" / "dgl-venv" / "bin" / "python").write_text("")
    epoch = {("ours", 0): 0.3, ("dgl", 0): 0.6, ("ours", 1): 0.4, ("dgl", 1): 0.5, ("ours", 2): 0.5, ("dgl", 2): 1.0}
    state = {}

    def fake(python, fw, model, epochs, threads, env):
        t = epoch[(fw, state["seed"])]
        return {"epoch_s": t, "epoch_cpu_s": t, "peak_above_import_mb": 200.0 if fw == "ours" else 400.0,
                "versions": {}}, None
    monkeypatch.setattr(b, "_run_worker", fake)
    ctx = Ctx("graph_layers", False, str(tmp_path))
    ctx.params = dict(ctx.params, models=["sgc"])
    measure = ctx.measure

    def seeded(arm, seed, fn):
        state["seed"] = seed
        return measure(arm, seed, fn)
    ctx.measure = seeded
    b.evidence(ctx)
    assert [(a, s) for a, s, _ in ctx.calls] == [("ours", 0), ("dgl", 0), ("dgl", 1), ("ours", 1), ("ours", 2),
                                                  ("dgl", 2)]
    row = ctx.tables["layers"]["rows"][0]
    # ratios 0.5, 0.8, 0.5: geometric mean (0.2)^(1/3) = 0.5848
    assert row[0] == "sgc" and row[4] == "0.58x (0.50-0.80)"
    assert row[2] == "0.400 / 0.400 s" and row[3] == "0.700 / 0.700 s"
    assert row[6] == "200 / 400 (0.50x)"
