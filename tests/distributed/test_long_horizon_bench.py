"""bench/long_horizon.py: the metrics, auto's comparison with the best fixed choice and the ratios to
the floor its protocols' results hold, against hand-computed values (the runs need the testbed)."""
import math

import pytest

from ..conftest import load_script

lh = load_script("bench/long_horizon.py")


def _record(steps, times, accs, auto=None):
    return {"curve": [{"step": s, "time_s": t, "test_acc": a, "loss": 0.1, "wire_bytes": 7 * s}
                      for s, t, a in zip(steps, times, accs)], "steps": steps[-1], "auto": auto}


def test_run_metrics_interpolate_time_and_step_to_each_target():
    m = lh.run_metrics(_record([10, 20, 30, 40], [1.0, 2.5, 3.5, 5.5], [0.90, 0.96, 0.99, 0.95]), [0.98, 0.995])
    # 0.98 lies between (2.5 s, step 20, 0.96) and (3.5 s, step 30, 0.99): two thirds of the way
    assert m["time_to_0.98_s"] == pytest.approx(2.5 + 1.0 * 0.02 / 0.03)
    assert m["step_to_0.98"] == pytest.approx(20 + 10 * 0.02 / 0.03)
    assert m["time_to_0.995_s"] is None and m["step_to_0.995"] is None
    assert m["final_acc"] == 0.95 and m["final_acc_median5"] == 0.96   # sorted 0.90 0.95 0.96 0.99: upper median
    # per-step times 0.15, 0.10, 0.20 s: the median
    assert m["step_s"] == pytest.approx(0.15)
    assert m["wire_bytes"] == 280 and m["total_s"] == 5.5 and m["steps"] == 40
    assert "auto_compressing" not in m


def test_run_metrics_record_autos_decision_and_its_share_of_the_run():
    d = {"choice": "cser R1=32 H=8", "step": 36, "candidates": [{"name": "cser R1=32 H=8", "scaling_factor": 0.93}]}
    m = lh.run_metrics(_record([300, 600, 900], [1, 2, 3], [0.9, 0.95, 0.99], auto=d), [0.98])
    assert m["auto_compressing"] == 1 and m["auto_switched"] == 0
    assert m["auto_decided_at_step"] == 36 and m["auto_measuring_fraction"] == pytest.approx(36 / 900)


def _run(arm, seed, t):
    return {"arm": arm, "seed": seed, "metrics": {"time_to_0.98_s": t}}


def test_auto_is_compared_with_the_fixed_choice_of_the_lowest_geometric_mean():
    runs = [_run("sync", 0, 10.0), _run("sync", 1, 12.0),
            _run("cser", 0, 4.0), _run("cser", 1, 9.0),        # geometric mean 6
            _run("local", 0, 5.0), _run("local", 1, 8.0),      # sqrt(40) = 6.32
            _run("ef", 0, 1.0), _run("ef", 1, None),           # misses a seed: not a candidate
            _run("auto", 0, 5.0), _run("auto", 1, None)]
    best = lh.compare_auto(runs, "time_to_0.98_s")
    assert best["arm"] == "cser" and best["geometric_mean_s"] == pytest.approx(6.0)
    assert runs[8]["metrics"]["time_over_best_fixed"] == pytest.approx(5.0 / 4.0)
    assert runs[9]["metrics"]["time_over_best_fixed"] is None
    assert runs[8]["metrics"]["best_fixed"] == "cser"
    assert lh.compare_auto(runs[:4], "time_to_0.98_s") is None    # no auto arm


def test_summary_puts_each_arm_beside_sync_and_the_floor():
    class Proto:
        data = {"reuses": {"sync at the floor": {"protocol": "long_horizon_floor", "arm": "sync"}}}

        @staticmethod
        def arms():
            return ["sync", "cser-pl (grbs 4, H 8: 32x)", "sync at the floor"]
    tabs = {}

    class Ctx:
        protocol, notes = Proto, {}

        @staticmethod
        def table(name, columns, rows, caption=None):
            tabs[name] = rows

        @staticmethod
        def note(key, value):
            Ctx.notes[key] = value

    def run(arm, seed, t, step_s):
        return {"arm": arm, "seed": seed, "metrics": {"final_acc": 0.98, "time_to_0.98_s": t, "step_to_0.98": 400,
                                                      "step_s": step_s, "wire_bytes": 2e6}}
    runs = [run("sync", 0, 40.0, 0.5), run("sync", 1, 90.0, 0.7),
            run("cser-pl (grbs 4, H 8: 32x)", 0, 10.0, 0.1), run("cser-pl (grbs 4, H 8: 32x)", 1, 12.0, 0.1),
            run("sync at the floor", 0, 8.0, 0.1), run("sync at the floor", 1, 12.0, 0.1)]
    lh.tables(Ctx, runs, [0.98])
    sync, pl, floor = tabs["summary"]
    assert pl[-2] == f"{math.sqrt(10 / 40 * 12 / 90):.2f}x"     # paired ratios to sync, geometric mean
    assert pl[-1] == f"{math.sqrt(10 / 8 * 12 / 12):.2f}x"      # and to the floor
    assert sync[-1] == f"{math.sqrt(40 / 8 * 90 / 12):.2f}x" and floor[-1] == "-"
    # sync's step at this link against the floor's (medians: upper of two): 1 - 0.1 / 0.7
    assert Ctx.notes["sync_step_decomposition"]["communication_fraction"] == pytest.approx(1 - 0.1 / 0.7)


def test_reused_runs_are_not_a_fixed_choice_and_combined_tables_cover_every_slice():
    runs = [_run("sync", 0, 10.0), _run("sync", 1, 12.0), _run("auto", 0, 11.0), _run("auto", 1, 12.0),
            dict(_run("sync at the floor", 0, 2.0), reused_from="sync"),
            dict(_run("sync at the floor", 1, 3.0), reused_from="sync")]
    for r in runs:
        r["metrics"].update({"final_acc": 0.98, "step_to_0.98": 300, "step_s": 0.1, "wire_bytes": 1e6})
    lh.combined_metrics(runs, {"targets": [0.98]})
    assert runs[2]["metrics"]["best_fixed"] == "sync"            # not the reused floor, which is faster
    assert runs[3]["metrics"]["time_over_best_fixed"] == pytest.approx(1.0)
    tabs = lh.combined_tables(runs, {"targets": [0.98]}, [{"auto_decisions": {}}, {}])
    rows = tabs["summary"]["rows"]
    assert [r[0] for r in rows] == ["sync", "auto", "sync at the floor"] and rows[0][1] == "2"
    assert rows[1][-1] == f"{math.sqrt(11 / 2 * 12 / 3):.2f}x"   # auto against the floor, paired by seed
