"""The float16-vs-float32 bench (bench/float16_digits.py): what its evidence() records for each
(dtype, seed) and its summary table, against hand-made runs (the training itself is replaced)."""

from ..bench_context import RecordingContext
from ..conftest import load_script

bench = load_script("bench/float16_digits.py")


def FakeContext(tmp_path):
    return RecordingContext({"epochs": 2, "batch_size": 64, "gpus": "-1"}, [0, 1, 2], ["float32", "float16"], tmp_path)


FINAL = {("float32", 0): 0.98, ("float32", 1): 0.99, ("float32", 2): 0.97,
         ("float16", 0): 0.975, ("float16", 1): 0.985, ("float16", 2): 0.965}


def test_every_run_is_measured_and_the_table_gives_mean_and_sample_std(tmp_path, monkeypatch):
    def fake_run(p, dtype, seed):
        a = FINAL[(dtype, seed)]
        return {"final_acc": a, "best_acc": a + 0.001, "test_acc": [0.5, a], "wall_s": 10.0 if dtype == "float32" else 40.0}
    monkeypatch.setattr(bench, "run_one", fake_run)
    ctx = FakeContext(tmp_path)
    bench.evidence(ctx)
    assert sorted((a, s) for a, s, _ in ctx.runs) == sorted(FINAL)
    cols, rows = ctx.tables["summary"]
    by = {r[0]: r for r in rows}
    # float32: 0.98, 0.99, 0.97 -> mean 0.98, sample std 0.01; float16: 0.975 mean, std 0.01
    assert by["float32"][1] == "0.9800 ± 0.0100" and by["float16"][1] == "0.9750 ± 0.0100"
    assert by["float32"][2] == "0.9810 ± 0.0100" and by["float32"][3] == "10 ± 0" and by["float16"][3] == "40 ± 0"
    assert ctx.notes["device"].startswith("CPU, float16 emulated")
    assert (tmp_path / "fig.png").exists()


def test_emulation_is_for_the_cpu_only():
    assert bench._emulated({"gpus": "-1"}) and bench._emulated({"gpus": ""}) and not bench._emulated({"gpus": "0"})
