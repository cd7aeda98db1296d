"""The LANS-vs-LAMB bench (bench/lans_vs_lamb.py): its learning-rate choice, its noise verdict and
a tiny end-to-end run (sweep, seeds, statistics, JSON and plot)."""
import json

import pytest

from ..conftest import load_script

bench = load_script("bench/lans_vs_lamb.py")


def test_the_chosen_lr_has_the_lowest_final_loss_and_a_diverged_run_never_wins():
    sweep = {0.01: {"final_mlm_loss": 6.0}, 0.02: {"final_mlm_loss": 5.5}, 0.04: {"final_mlm_loss": float("nan")}}
    assert bench.choose_lr(sweep) == 0.02
    sweep[0.04]["final_mlm_loss"] = 5.4
    assert bench.choose_lr(sweep) == 0.04


def test_verdict_is_within_noise_when_the_difference_is_at_most_the_larger_std():
    a, b = {"mean": 5.0, "std": 0.1}, {"mean": 5.2, "std": 0.25}
    assert bench.verdict(a, b, "LANS", "LAMB")["verdict"] == "within noise"
    b["std"] = 0.05
    v = bench.verdict(a, b, "LANS", "LAMB")
    assert v["verdict"] == "LANS lower by more than the spread"
    assert v["difference"] == pytest.approx(-0.2) and v["spread"] == pytest.approx(0.1)
    assert bench.verdict(b, a, "LANS", "LAMB")["verdict"] == "LAMB lower by more than the spread"


def test_a_tiny_bench_sweeps_on_seed_0_then_runs_the_other_seeds_at_the_chosen_lr(tmp_path):
    argv = ["--steps", "3", "--batches", "8,16", "--micro-batch", "8", "--seeds", "2", "--lrs-lans", "0.01,0.02",
            "--lrs-lamb", "0.02", "--out", str(tmp_path), "--cache", str(tmp_path / "runs.jsonl")]
    res = bench.main(argv)
    saved = json.loads((tmp_path / "lans_vs_lamb.json").read_text())
    assert (tmp_path / "lans_vs_lamb.png").exists()
    assert saved["accumulation"] == {"8": 1, "16": 2}
    # per batch: 2 sweep runs + 1 seed for LANS, 1 + 1 for LAMB
    assert len(saved["runs"]) == 2 * (3 + 2)
    for b in ("8", "16"):
        lans = saved["results"][b]["lans"]
        assert lans["seeds"] == [0, 1]
        assert lans["chosen_lr"] == min((float(k) for k in lans["sweep"]), key=lambda lr: lans["sweep"][str(lr)])
        assert lans["final_mlm_loss_seeds"][0] == lans["sweep"][str(lans["chosen_lr"])]
        assert len(lans["curve_mean"]) == len(lans["curve_std"]) == 3
        assert saved["lans_vs_lamb"][b]["verdict"] in ("within noise", "LANS lower by more than the spread",
                                                       "LAMB lower by more than the spread")
    assert res["summary"] == saved["summary"]
    # a second call reuses every run from the cache: the same numbers
    again = bench.main(argv)
    assert again["results"] == res["results"] and again["runs"] == res["runs"]
    lines = [x for x in (tmp_path / "runs.jsonl").read_text().splitlines() if x.strip()]
    assert len(lines) == 10
    # a crash while the last run was written leaves half a line: that run alone is redone
    (tmp_path / "runs.jsonl").write_text("\n".join(lines[:-1] + [lines[-1][:len(lines[-1]) // 2]]))
    third = bench.main(argv)

    def losses(r):          # everything but the wall times, which differ from run to run
        return {b: {o: {k: v for k, v in cell.items() if k != "wall_s_per_run"} for o, cell in opts.items()}
                for b, opts in r["results"].items()}
    assert losses(third) == losses(res)
    redone = [x for x in (tmp_path / "runs.jsonl").read_text().splitlines() if x.strip()]
    assert len(redone) == 11 and json.loads(redone[-1])["key"] == json.loads(lines[-1])["key"]
