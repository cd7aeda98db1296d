"""The Local AdaAlter language-model bench (bench/local_adaalter_lm.py): its fixed reference
recipe, its verdicts against synchronous AdaAlter and a tiny end-to-end run under horovodrun
(paired seeds with distinct data offsets, both paddings, cache reuse)."""
import json

import pytest

from ..conftest import load_script

bench = load_script("bench/local_adaalter_lm.py")


def curve(*ppl, syncs=10, time_s=1.0):
    return [{"step": i + 1, "valid_ppl": p, "syncs": syncs, "time_s": time_s} for i, p in enumerate(ppl)]


def test_the_recipe_is_the_reference_one_and_the_same_for_every_config():
    # epsilon 1 ("initial history accumulation"), lr 0.5 for AdaGrad and AdaAlter alike, clipping
    # of the LSTM's gradients at global norm 10 (docs/methods.md)
    assert (bench.LR, bench.EPS, bench.CLIP) == (0.5, 1.0, 10.0)
    pads = {n: c.get("pad") for n, c in bench.CONFIGS.items() if c["algorithm"] == "local_adaalter"}
    assert pads["local adaalter H=4"] == "constant" and pads["local adaalter H=4 per-step"] == "per_step"


def test_every_run_warms_the_learning_rate_up_linearly_over_the_first_20_steps():
    assert bench.WARMUP == 20
    assert [bench.warmup_lr(0.3, s) for s in (0, 1, 9, 19, 20, 599)] == pytest.approx(
        [0.015, 0.03, 0.15, 0.3, 0.3, 0.3])


def test_ratios_verdicts_and_the_2_percent_target_against_synchronous_adaalter():
    curves = {"sync adaalter": [curve(100.0, syncs=600, time_s=10.0), curve(104.0, syncs=600, time_s=12.0)],
              "local adaalter H=4": [curve(101.0, syncs=150, time_s=8.0), curve(105.0, syncs=150, time_s=8.0)],
              "local adaalter H=8": [curve(120.0, syncs=75), curve(121.0, syncs=75)]}
    rows = bench.summarise(curves)
    base = rows["sync adaalter"]
    assert base["final_ppl"]["mean"] == pytest.approx(102.0)
    assert base["final_ppl"]["std"] == pytest.approx(2 ** 0.5 * 2.0)        # sample std of 100, 104
    assert "vs_sync_adaalter" not in base
    h4 = rows["local adaalter H=4"]["vs_sync_adaalter"]
    assert h4["ppl_ratio"] == pytest.approx(103.0 / 102.0) and h4["within_2_percent"]
    assert h4["sync_ratio"] == pytest.approx(4.0) and h4["time_ratio"] == pytest.approx(8.0 / 11.0)
    assert h4["verdict"] == "within noise"
    assert h4["paired_ratios"] == pytest.approx([101.0 / 100.0, 105.0 / 104.0])
    assert h4["paired_ratio_median"] == pytest.approx((1.01 + 105.0 / 104.0) / 2)
    h8 = rows["local adaalter H=8"]["vs_sync_adaalter"]
    assert not h8["within_2_percent"] and h8["verdict"] == "worse than sync beyond the spread"


@pytest.mark.horovod
def test_a_tiny_bench_runs_paired_seeds_against_synchronous_adaalter_and_reuses_its_cache(tmp_path):
    argv = ["--steps", "24", "--seeds", "2", "--only", "local adaalter H=4 per-step",
            "--out", str(tmp_path), "--cache", str(tmp_path / "runs.jsonl")]
    res = bench.main(argv)
    saved = json.loads((tmp_path / "local_adaalter_lm.json").read_text())
    assert (tmp_path / "local_adaalter_lm.png").exists()
    rows = saved["results"]
    assert set(rows) == {"sync adaalter", "local adaalter H=4 per-step"}
    assert len(saved["runs"]) == 2 * 2
    # 20 synchronous warm-up steps, then one synchronisation per 4 local steps
    assert rows["sync adaalter"]["syncs"] == 24 and rows["local adaalter H=4 per-step"]["syncs"] == 21
    # the seeds start at different places in the stream and from different weights: different runs
    assert len(set(rows["sync adaalter"]["final_ppl_seeds"])) == 2
    # a second call takes every run from the cache
    lines = [x for x in (tmp_path / "runs.jsonl").read_text().splitlines() if x.strip()]
    assert len(lines) == 4
    again = bench.main(argv)
    assert res["curves"] == again["curves"]
    assert len([x for x in (tmp_path / "runs.jsonl").read_text().splitlines() if x.strip()]) == 4
