"""bench/cser_speedup.py and bench/comm.py: the metrics and table cells their protocols' results
hold, against hand-computed values (the runs themselves need the testbed or minutes of timing)."""
import math

import pytest

from ..conftest import load_script

cser = load_script("bench/cser_speedup.py")
comm = load_script("bench/comm.py")


def _record(times, accs, steps=440):
    return {"curve": [{"epoch": i + 1, "time_s": t, "test_acc": a, "test_acc_default_bn": a, "wire_bytes": 10 * (i + 1)}
                      for i, (t, a) in enumerate(zip(times, accs))],
            "final": {}, "steps": steps, "auto": None}


def test_run_metrics_interpolates_the_time_to_each_target():
    cfg = cser.CONFIGS["cser (grbs 128/8, H 16: 64x)"]
    m = cser.run_metrics(_record([1.0, 2.0, 3.5], [0.5, 0.9, 0.97]), [0.95, 0.99], cfg)
    # 0.95 lies between (2.0, 0.9) and (3.5, 0.97): 2 + 1.5 * 0.05 / 0.07
    assert m["time_to_0.95_s"] == pytest.approx(2.0 + 1.5 * 0.05 / 0.07)
    assert m["epoch_to_0.95"] == 3
    assert m["time_to_0.99_s"] is None and m["epoch_to_0.99"] is None
    assert m["final_acc"] == 0.97 and m["total_s"] == 3.5 and m["wire_bytes"] == 30
    assert m["first_epoch_s"] == 1.0
    assert m["later_epoch_s"] == 1.5          # epochs of 1.0 and 1.5 s after the first: the upper median
    assert m["resets_per_coordinate"] == pytest.approx(440 / 16 / 8)
    assert cser.run_metrics(_record([1.0], [0.2]), [0.95], cser.CONFIGS["sync"])["resets_per_coordinate"] is None


def test_summary_table_ratio_is_the_geometric_mean_of_paired_ratios():
    class Proto:
        data = {}

        @staticmethod
        def arms():
            return ["sync", "cser (grbs 64/4, H 16: 32x)"]
    tabs = {}

    class Ctx:
        protocol, notes = Proto, {}

        @staticmethod
        def table(name, columns, rows, caption=None):
            tabs[name] = rows
    runs = [{"arm": "sync", "seed": 0, "metrics": {"final_acc": 0.99, "time_to_0.95_s": 4.0, "total_s": 80.0}},
            {"arm": "sync", "seed": 1, "metrics": {"final_acc": 0.97, "time_to_0.95_s": 9.0, "total_s": 81.0}},
            {"arm": "cser (grbs 64/4, H 16: 32x)", "seed": 1, "metrics": {"final_acc": 0.98, "time_to_0.95_s": 3.0}},
            {"arm": "cser (grbs 64/4, H 16: 32x)", "seed": 0, "metrics": {"final_acc": 0.98, "time_to_0.95_s": 2.0}}]
    cser.tables(Ctx, runs, {}, [0.95])
    sync, c = tabs["summary"]
    assert sync[2] == "0.9800 ± 0.0141"          # mean 0.98, sample std sqrt(2) * 0.01
    assert sync[3] == "6.50 ± 3.54 s"             # mean 6.5, sample std 5 / sqrt(2)
    assert sync[4] == "-"
    assert c[4] == f"{math.sqrt(2 * 3):.2f}x"     # seed 0: 4 / 2, seed 1: 9 / 3
    runs[2]["metrics"]["time_to_0.95_s"] = None
    cser.tables(Ctx, runs, {}, [0.95])
    assert tabs["summary"][1][3] == "not reached by 1 of 2" and tabs["summary"][1][4] == "-"


def test_comm_median_and_fit():
    assert comm._median([3.0, 1.0, 2.0]) == 2.0
    assert comm._median([4.0, 1.0, 2.0, 3.0]) == 2.5
    assert comm._median([None]) is None
    a, b = comm.fit([8, 161, 800], [1 + 0.5 * 8, 1 + 0.5 * 161, 1 + 0.5 * 800])
    assert a == pytest.approx(1.0) and b == pytest.approx(0.5)
    assert comm.equal_shapes(1000, 8) == [(1, 100)] * 8
    assert comm.numel(comm.mlp_shapes()) == 784 * 2048 + 2048 + 2 * (2048 * 2048 + 2048) + 2048 * 10 + 10
