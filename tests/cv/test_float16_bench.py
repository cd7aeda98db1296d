"""The float16-vs-float32 bench (bench/float16_digits.py): its statistics and its verdicts."""

import pytest

from ..conftest import load_script

bench = load_script("bench/float16_digits.py")


def runs(dtype, *acc):
    return [{"dtype": dtype, "seed": k, "final_acc": a, "best_acc": a + 0.001, "test_acc": [0.5, a],
             "wall_s": 10.0 if dtype == "float32" else 40.0} for k, a in enumerate(acc)]


def test_float16_within_a_point_of_float32_and_the_noise_verdict():
    rows, cmp = bench.compare({"float32": runs("float32", 0.98, 0.99, 0.97), "float16": runs("float16", 0.975, 0.985, 0.965)})
    assert rows["float32"]["final_acc"]["mean"] == pytest.approx(0.98)
    assert rows["float32"]["final_acc"]["std"] == pytest.approx(0.01)          # sample std
    assert cmp["difference"] == pytest.approx(-0.005) and cmp["spread"] == pytest.approx(0.01)
    assert cmp["within_1_point"] and cmp["verdict"] == "within noise"
    assert cmp["time_ratio"] == pytest.approx(4.0)


def test_more_than_a_point_below_is_reported_and_a_clear_gap_is_not_noise():
    rows, cmp = bench.compare({"float32": runs("float32", 0.98, 0.981), "float16": runs("float16", 0.95, 0.951)})
    assert not cmp["within_1_point"]
    assert cmp["verdict"] == "float32 higher by more than the spread"
    _, up = bench.compare({"float32": runs("float32", 0.95, 0.951), "float16": runs("float16", 0.98, 0.981)})
    assert up["within_1_point"] and up["verdict"] == "float16 higher by more than the spread"
