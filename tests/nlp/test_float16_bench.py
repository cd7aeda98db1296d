"""The float16-vs-float32 BERT bench (bench/float16_bert.py): its final loss, its summary table
against hand-computed figures, and what evidence(ctx) records (every (seed, dtype) run through
measure), with the training run replaced by a stand-in."""
import pytest

from ..bench_context import RecordingContext
from ..conftest import load_script

bench = load_script("bench/float16_bert.py")


def test_the_final_loss_is_the_mean_of_the_last_steps():
    assert bench.final_loss([9.0, 8.0, 6.0, 5.0, 4.0], 3) == pytest.approx(5.0)
    assert bench.final_loss([7.0, 5.0], 10) == pytest.approx(6.0)     # fewer steps than the tail


def test_summary_rows_are_mean_and_sample_std_per_dtype():
    runs = {"float32": [{"final_mlm_loss": a, "skipped_steps": 0, "wall_s": w} for a, w in ((5.0, 40), (5.2, 44), (5.4, 48))],
            "float16": [{"final_mlm_loss": a, "skipped_steps": s, "wall_s": 70} for a, s in ((5.1, 0), (5.3, 2), (5.2, 0))]}
    rows = bench.summary_rows(runs)
    # float32: mean 5.2, sample std sqrt((0.04 + 0 + 0.04) / 2) = 0.2; float16: mean 5.2, std 0.1
    assert rows[0] == ["float32", "5.200 ± 0.200", "5.000, 5.200, 5.400", "0, 0, 0", "44"]
    assert rows[1] == ["float16", "5.200 ± 0.100", "5.100, 5.300, 5.200", "0, 2, 0", "70"]
    assert bench._emulated({"gpus": "-1"}) and not bench._emulated({"gpus": "0"})


def FakeCtx(tmp_path):
    return RecordingContext({"steps": 3, "seq_len": 16, "batch_size": 4, "lr": 0.02, "gpus": "-1",
                             "corpus": "gensim:lee_background", "tail": 2}, [0, 1], ["float32", "float16"], tmp_path)


def test_evidence_measures_every_seed_and_dtype(tmp_path, monkeypatch):
    def fake(p, dtype, seed):
        loss = [8.0, 6.0, 5.0 + seed + (0.5 if dtype == "float16" else 0.0)]
        return {"final_mlm_loss": bench.final_loss(loss, p["tail"]), "mlm_loss": loss, "loss_scale_final": 1024.0
                if dtype == "float16" else None, "skipped_steps": 0, "wall_s": 1.0}
    monkeypatch.setattr(bench, "run_one", fake)
    ctx = FakeCtx(tmp_path)
    bench.evidence(ctx)
    assert [(a, s) for a, s, _ in ctx.runs] == [("float32", 0), ("float16", 0), ("float32", 1), ("float16", 1)]
    # float32 finals (6 + 5)/2 = 5.5 and (6 + 6)/2 = 6.0; float16 5.75 and 6.25
    assert ctx.tables["summary"][1][0][:3] == ["float32", "5.750 ± 0.354", "5.500, 6.000"]
    assert ctx.tables["summary"][1][1][:3] == ["float16", "6.000 ± 0.354", "5.750, 6.250"]
    assert ctx.notes["loss_scale_final"] == {"float32": [None, None], "float16": [1024.0, 1024.0]}
    assert (tmp_path / "fig.png").exists()
