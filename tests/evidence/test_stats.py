"""The statistics module against hand-computed intervals and a textbook example (docs/benchmarks.md,
"Statistics")."""
import math

import numpy as np
import pytest

from gluon_suite.evidence import stats

# Student (1908), "The probable error of a mean": the Cushny-Peebles sleep data, extra hours of
# sleep of 10 patients under two drugs; the paired 95% interval of drug 2 - drug 1 is
# (0.7001, 2.4599) (the textbook value; also what R's t.test(paired = TRUE) prints).
DRUG1 = [0.7, -1.6, -0.2, -1.2, -0.1, 3.4, 3.7, 0.8, 0.0, 2.0]
DRUG2 = [1.9, 0.8, 1.1, 0.1, -0.1, 4.4, 5.5, 1.6, 4.6, 3.4]


def test_textbook_sleep_data_paired_interval():
    iv = stats.paired_interval(DRUG2, DRUG1)
    assert iv["mean"] == pytest.approx(1.58)
    assert iv["std"] == pytest.approx(1.229995, abs=1e-6)
    assert (iv["low"], iv["high"]) == (pytest.approx(0.7001142, abs=1e-6), pytest.approx(2.4598858, abs=1e-6))
    assert stats.verdict(iv) == "better"
    # the other way round: the same interval, negated, and "worse"
    iv2 = stats.paired_interval(DRUG1, DRUG2)
    assert (iv2["low"], iv2["high"]) == (pytest.approx(-2.4598858, abs=1e-6), pytest.approx(-0.7001142, abs=1e-6))
    assert stats.verdict(iv2) == "worse"


def test_hand_computed_three_seeds():
    # d = 1, 2, 3: mean 2, sd 1, t(0.975, 2) = 4.302653 (tables: 4.303), half width 4.302653 / sqrt(3)
    iv = stats.paired_interval([11.0, 12.0, 13.0], [10.0, 10.0, 10.0])
    half = 4.302652729749464 / math.sqrt(3)
    assert iv["half_width"] == pytest.approx(half, rel=1e-9)
    assert (iv["low"], iv["high"]) == (pytest.approx(2 - half), pytest.approx(2 + half))
    assert stats.verdict(iv) == "within noise"          # the interval holds 0: -0.484 .. 4.484
    assert stats.t_quantile(0.975, 4) == pytest.approx(2.776445, abs=1e-6)    # 5 seeds: table value 2.776


def test_one_value_has_no_interval():
    iv = stats.paired_interval([0.9], [0.8])
    assert iv["low"] is None and iv["high"] is None and iv["mean"] == pytest.approx(0.1)
    assert stats.verdict(iv) == "one seed: no interval"
    assert stats.decide("better", iv) == "inconclusive"


def test_relative_and_log_scales():
    iv = stats.paired_interval([2.0, 4.0, 8.0], [1.0, 2.0, 4.0], scale="log")
    assert iv["ratio"] == pytest.approx(2.0) and iv["ratio_low"] == pytest.approx(2.0)
    assert iv["ratio_high"] == pytest.approx(2.0)
    rel = stats.paired_interval([1.1, 2.2], [1.0, 2.0], scale="relative")
    assert rel["mean"] == pytest.approx(0.1)
    with pytest.raises(ValueError, match="positive"):
        stats.paired_interval([1.0, -1.0], [1.0, 1.0], scale="log")
    with pytest.raises(ValueError, match="one per seed"):
        stats.paired_interval([1.0, 2.0], [1.0])


def test_bootstrap_matches_t_for_many_normal_seeds_and_is_reproducible():
    d = np.random.default_rng(5).normal(0.3, 1.0, size=400)
    t = stats.t_interval(d)
    b = stats.bootstrap_interval(d, resamples=4000, seed=1)
    assert b["low"] == pytest.approx(t["low"], abs=0.1 * t["half_width"])
    assert b["high"] == pytest.approx(t["high"], abs=0.1 * t["half_width"])
    assert stats.bootstrap_interval(d, resamples=4000, seed=1) == b
    flat = stats.bootstrap_interval([0.5, 0.5, 0.5])
    assert flat["low"] == flat["high"] == pytest.approx(0.5)


@pytest.mark.parametrize("low, high, hib, want", [
    (0.1, 0.3, True, "better"), (-0.3, -0.1, True, "worse"), (-0.1, 0.2, True, "within noise"),
    (0.1, 0.3, False, "worse"), (-0.3, -0.1, False, "better")])
def test_verdict_words_come_from_the_interval(low, high, hib, want):
    assert stats.verdict({"low": low, "high": high}, higher_is_better=hib) == want


@pytest.mark.parametrize("test, low, high, kw, want", [
    ("not_worse", -0.005, 0.02, {"margin": 0.01}, "holds"),
    ("not_worse", -0.02, 0.0, {"margin": 0.01}, "inconclusive"),
    ("not_worse", -0.05, -0.02, {"margin": 0.01}, "fails"),
    ("within", -0.01, 0.015, {"margin": 0.02}, "holds"),
    ("within", -0.01, 0.03, {"margin": 0.02}, "inconclusive"),
    ("within", 0.03, 0.05, {"margin": 0.02}, "fails"),
    ("better", 0.01, 0.05, {}, "holds"),
    ("better", -0.05, -0.01, {}, "fails"),
    ("better", -0.01, 0.05, {}, "inconclusive"),
    ("at_most", 0.02, 0.08, {"value": 0.1}, "holds"),
    ("at_most", 0.12, 0.2, {"value": 0.1}, "fails"),
    ("at_least", 0.5, 0.7, {"value": 0.4}, "holds"),
])
def test_decide(test, low, high, kw, want):
    assert stats.decide(test, {"low": low, "high": high, "scale": "absolute"}, **kw) == want


def test_decide_on_the_log_scale_takes_ratios():
    # a ratio interval [1.01, 1.04]: within 5% holds, at_most 1.02 is inconclusive, at_most 1.1 holds
    iv = {"low": math.log(1.01), "high": math.log(1.04), "scale": "log"}
    assert stats.decide("within", iv, margin=0.05) == "holds"
    assert stats.decide("at_most", iv, value=1.02) == "inconclusive"
    assert stats.decide("at_most", iv, value=1.1) == "holds"
    # lower is better (a time): a ratio above 1.05 is worse than the margin allows
    assert stats.decide("not_worse", {"low": math.log(1.06), "high": math.log(1.2), "scale": "log"},
                        higher_is_better=False, margin=0.05) == "fails"


def test_time_to_target_interpolates_between_evaluations():
    # 0.8 at t=2, 0.96 at t=3: 0.9 is reached 0.1 / 0.16 of the way, at 2.625
    assert stats.time_to_target([1, 2, 3], [0.5, 0.8, 0.96], 0.9) == pytest.approx(2.625)
    assert stats.time_to_target([1, 2, 3], [0.95, 0.96, 0.97], 0.9) == 1.0
    assert stats.time_to_target([1, 2, 3], [0.5, 0.6, 0.7], 0.9) is None
    # a loss going down to a target of 2.0: 3.0 at 10 s, 1.0 at 20 s -> 15 s
    assert stats.time_to_target([10, 20], [3.0, 1.0], 2.0, higher_is_better=False) == pytest.approx(15.0)
    # a flat step reaching the target exactly
    assert stats.time_to_target([1, 2], [0.9, 0.9], 0.9) == 1.0


def test_summary():
    s = stats.summary([1.0, 2.0, 4.0])
    assert s["n"] == 3 and s["mean"] == pytest.approx(7 / 3)
    assert s["std"] == pytest.approx(math.sqrt(((1 - 7 / 3) ** 2 + (2 - 7 / 3) ** 2 + (4 - 7 / 3) ** 2) / 2))
    assert stats.summary([3.0])["std"] is None
