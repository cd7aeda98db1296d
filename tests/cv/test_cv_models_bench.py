"""The ResNeSt-vs-ResNet bench (bench/cv_models.py): its noise verdict against hand-made numbers and
a tiny end-to-end run (seeds, statistics, cache, JSON and plot)."""
import json

import numpy as np

from ..conftest import load_script

bench = load_script("bench/cv_models.py")


def test_verdict_is_within_noise_when_the_difference_is_at_most_the_larger_std():
    assert bench.verdict({"mean": 0.95, "std": 0.01}, {"mean": 0.94, "std": 0.02})["verdict"] == "within noise"
    v = bench.verdict({"mean": 0.95, "std": 0.01}, {"mean": 0.90, "std": 0.02})
    assert v["verdict"] == "ResNeSt higher by more than the spread" and abs(v["difference"] - 0.05) < 1e-12
    assert bench.verdict({"mean": 0.90, "std": 0.0}, {"mean": 0.95, "std": 0.01})["verdict"] == \
        "ResNet higher by more than the spread"


def test_a_tiny_bench_reports_mean_and_std_over_seeds(tmp_path):
    argv = ["--dataset", "digits", "--epochs", "1", "--seeds", "2", "--image-size", "8", "--out", str(tmp_path),
            "--cache", str(tmp_path / "runs.jsonl")]
    res = bench.main(argv)
    saved = json.loads((tmp_path / "cv_models.json").read_text())
    assert (tmp_path / "cv_models.png").exists()
    for model in bench.MODELS:
        r = saved["results"][model]
        finals = [x["final_acc"] for x in r["runs"]]
        assert [x["seed"] for x in r["runs"]] == [0, 1]
        assert abs(r["final_acc"]["mean"] - np.mean(finals)) < 1e-12
        assert abs(r["final_acc"]["std"] - np.std(finals, ddof=1)) < 1e-12
    assert saved["summary"] == res["summary"]
    again = bench.main(argv)          # every run from the cache
    assert again["results"] == res["results"]
    assert len([x for x in (tmp_path / "runs.jsonl").read_text().splitlines() if x.strip()]) == 4
