"""The what-if validation bench's pieces against hand-computed values: the balanced regime's
calibration of gamma (the allreduce's local time per byte), the points, and the worst error a
repeat is judged on."""

import pytest

from ..conftest import load_script

bench = load_script("bench/whatif_validation.py")


def test_gamma_is_the_time_beyond_the_wire_per_bucket_byte():
    # 2 hosts, buckets of 6 MB and 1 MB at 1 GB/s: wire 6 ms + 1 ms, latency 2 x 0.1 ms per bucket:
    # 7.4 ms. An allreduce of 14.4 ms leaves 7 ms for 7 MB: 1 ns per byte.
    gamma, wire = bench.gamma_from(0.0144, [6e6, 1e6], 2, 1e9)
    assert wire == pytest.approx(0.0074) and gamma == pytest.approx(1e-9)
    # 4 hosts send 2(n-1)/n = 1.5 times each bucket: wire 10.5 ms + 6 x 0.1 ms x 2 buckets
    gamma, wire = bench.gamma_from(0.0187, [6e6, 1e6], 4, 1e9)
    assert wire == pytest.approx(0.0117) and gamma == pytest.approx(1e-9)
    # an allreduce faster than the socket's wire time gives 0, not a negative cost
    assert bench.gamma_from(0.001, [6e6, 1e6], 2, 1e9)[0] == 0.0


def test_points_are_hosts_at_mbit():
    assert bench.parse_points(["2@50", "4@1000", "2@2e3"]) == [(2, 50.0), (4, 1000.0), (2, 2000.0)]


def test_worst_error_counts_only_the_jobs_in_range():
    rows = [{"in_range": True, "bulk": "default", "rel_error": 0.04, "rel_error_without_gamma": 0.2},
            {"in_range": True, "bulk": "off", "rel_error": 0.07, "rel_error_without_gamma": 0.1},
            {"in_range": False, "bulk": "off", "rel_error": 0.5, "rel_error_without_gamma": 0.6}]
    assert bench._worst(rows) == 0.07
    assert bench._worst(rows, bulk="default") == 0.04
    assert bench._worst(rows, "rel_error_without_gamma") == 0.2
    assert bench._worst(rows[2:]) is None


def test_a_sweep_is_judged_on_its_worst_point_and_not_at_all_when_a_point_failed(monkeypatch):
    errors = {(2, 50.0): 0.03, (2, 1000.0): 0.09, (4, 50.0): 0.05}
    monkeypatch.setattr(bench, "comm_point", lambda h, r, steps: {"hosts": h, "rate_mbit": r,
                                                                  "rel_error": errors[(h, r)]})
    sweep = bench.comm_sweep({"points": ["2@50", "2@1000", "4@50"], "steps": 3})
    assert sweep["max_rel_error"] == 0.09 and sweep["failed_points"] == []
    monkeypatch.setattr(bench, "comm_point", lambda h, r, steps: None if h == 4 else {"hosts": h, "rate_mbit": r,
                                                                                     "rel_error": 0.01})
    sweep = bench.comm_sweep({"points": ["2@50", "4@50"], "steps": 3})
    assert sweep["max_rel_error"] is None and sweep["failed_points"] == ["4@50"]


class _Ctx:
    """What evidence() uses of the runner's context, recording tables."""

    def __init__(self, params, seeds, tmp):
        self.params, self.seeds, self.tmp, self.tables, self.runs = params, seeds, tmp, {}, []

    def progress(self, xs, desc=None):
        return xs

    def measure(self, arm, seed, fn):
        m = fn()
        self.runs.append((arm, seed, m))
        return m

    def note(self, *a):
        pass

    def table(self, name, columns, rows, caption=None):
        assert all(len(r) == len(columns) for r in rows)
        self.tables[name] = rows

    def figure(self, suffix):
        return str(self.tmp / f"fig{suffix}")


def test_balanced_evidence_tables_from_its_repeats(monkeypatch, tmp_path):
    # gamma calibrated once per host count; each repeat one job per point and bulk setting
    monkeypatch.setattr(bench, "allreduce_local_cost", lambda h, steps, reps: {
        "hosts": h, "socket_MBps": 800.0, "allreduce_s": 0.0144, "wire_s": 0.0074, "bucket_bytes": [6e6, 1e6],
        "gamma_ns_per_byte": 1.0})

    def sweep(p, calib):
        assert set(calib) == {2}
        row = {"hosts": 2, "rate_mbit": 1000.0, "bulk": "off", "measured_sf": 0.5, "predicted_sf": 0.55,
               "predicted_sf_without_gamma": 0.6, "rel_error": 0.1, "in_range": True, "comm_cpu_ns_per_byte": 1.2}
        return {"points_in_range": 1, "jobs": 1, "failed_points": [], "worst_error_in_range": 0.1,
                "worst_error_in_range_without_gamma": 0.2, "worst_error_in_range_free_comm": 0.3,
                "worst_error_in_range_bulk_off": 0.1, "points": [row]}
    monkeypatch.setattr(bench, "balanced_sweep", sweep)
    params = {"regime": "balanced", "points": ["2@1000"], "bulk": ["off"], "steps": 4, "range": [0.3, 0.95],
              "calibration_repeats": 1, "calibration_steps": 4}
    ctx = _Ctx(params, [0, 1], tmp_path)
    bench.evidence(ctx)
    assert [s for _, s, _ in ctx.runs] == [0, 1]
    assert ctx.tables["gamma"] == [["2", "800 MB/s", "14.4 ms for 7.00 MB", "7.4 ms", "1.00 ns/B"]]
    # error of the means: |0.55 - 0.5| / 0.5 = 10%; without gamma 20%
    assert ctx.tables["points"] == [["2", "1000 Mbit/s", "off", "0.500 ± 0.000", "0.550 ± 0.000", "10.0%",
                                     "10.0%", "2 of 2", "20.0%", "1.20 ± 0.00"]]
    assert ctx.tables["repeats"][1] == ["1", "1 of 1", "10.0%", "n/a", "10.0%", "20.0%", "30.0%"]
    assert (tmp_path / "fig.png").exists()
