"""The float16-vs-float32 BERT bench (bench/float16_bert.py): its statistics and its verdicts
(lower loss is better)."""

import pytest

from ..conftest import load_script

bench = load_script("bench/float16_bert.py")


def runs(dtype, *loss):
    return [{"dtype": dtype, "seed": k, "final_mlm_loss": a, "mlm_loss": [8.0, a], "skipped_steps": 0,
             "wall_s": 10.0 if dtype == "float32" else 15.0} for k, a in enumerate(loss)]


def test_statistics_and_a_difference_inside_the_spread():
    rows, cmp = bench.compare({"float32": runs("float32", 5.0, 5.2, 5.4), "float16": runs("float16", 5.1, 5.3, 5.2)})
    assert rows["float32"]["final_mlm_loss"]["mean"] == pytest.approx(5.2)
    assert rows["float32"]["final_mlm_loss"]["std"] == pytest.approx(0.2)      # sample std
    assert cmp["difference"] == pytest.approx(0.0) and cmp["spread"] == pytest.approx(0.2)
    assert cmp["verdict"] == "within noise" and cmp["time_ratio"] == pytest.approx(1.5)


def test_a_clear_gap_names_the_lower_dtype():
    _, worse = bench.compare({"float32": runs("float32", 5.0, 5.01), "float16": runs("float16", 5.5, 5.51)})
    assert worse["verdict"] == "float32 lower by more than the spread"
    assert worse["relative"] == pytest.approx(0.5 / 5.005)
    _, better = bench.compare({"float32": runs("float32", 5.5, 5.51), "float16": runs("float16", 5.0, 5.01)})
    assert better["verdict"] == "float16 lower by more than the spread"
