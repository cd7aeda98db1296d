"""The Local AdaAlter bench on the Wikipedia excerpt (bench/local_adaalter_wiki.py): its protocol,
the kind of each step, and the time to a perplexity target composed from measured step times,
against hand-computed values."""
import pytest

from gluon_suite.evidence import protocols

from ..conftest import REPO, load_script

bench = load_script("bench/local_adaalter_wiki.py")
H4 = bench.CONFIGS["local adaalter H=4"]
SYNC = bench.CONFIGS["sync adaalter"]


def test_the_protocol_names_the_bench_s_configurations_and_fixes_the_recipe():
    p = protocols.load(REPO, "local_adaalter_wiki")
    assert p.bench == "local_adaalter_wiki" and set(p.arms()) == set(bench.CONFIGS)
    assert p.seeds() == [0, 1, 2, 3, 4] and p.params()["offsets"] == 5
    assert p.params()["links_mbit"] == [100, 1000] and p.params()["workers"] == 2
    assert (bench.lal.LR, bench.lal.EPS, bench.lal.CLIP, bench.lal.WARMUP) == (0.5, 1.0, 10.0, 20)
    assert {c["id"] for c in p.criteria} >= {"h4_within_2_percent", "h4_3x_fewer_bytes", "h4_faster_100mbit"}


def test_step_kinds_follow_the_warm_up_and_the_period():
    kinds = [bench.step_kind(H4, s) for s in range(28)]
    assert kinds[:20] == ["sync"] * 20
    assert kinds[20:28] == ["local", "local", "local", "local+sync"] * 2
    assert {bench.step_kind(SYNC, s) for s in range(100)} == {"sync"}


def test_the_composed_time_sums_each_step_s_measured_time():
    t = {"sync": 0.5, "local": 0.1, "local+sync": 1.1}
    # 20 warm-up steps at 0.5 s, then two periods of 3 local steps and one with a synchronisation
    assert bench.composed_time(H4, 28, t) == pytest.approx(20 * 0.5 + 2 * (3 * 0.1 + 1.1))
    # half of step 29 (a local step)
    assert bench.composed_time(H4, 28.5, t) == pytest.approx(20 * 0.5 + 2 * (3 * 0.1 + 1.1) + 0.05)
    assert bench.composed_time(SYNC, 10.25, {"sync": 0.4}) == pytest.approx(4.1)


def test_run_metrics_read_the_target_between_evaluations():
    curve = {"curve": [{"step": 100, "time_s": 9.0, "valid_ppl": 400.0, "bytes_sent": 10},
                       {"step": 200, "time_s": 18.0, "valid_ppl": 300.0, "bytes_sent": 20},
                       {"step": 300, "time_s": 27.0, "valid_ppl": 250.0, "bytes_sent": 30}],
             "bytes": {"total_payload": 30, "total_wire": 30.0, "calls": {"allreduce": 7}}}
    links = {100: {"sync adaalter": {"sync": 0.5}}}
    m = bench.run_metrics("sync adaalter", curve, 350.0, links)
    assert m["steps_to_target"] == pytest.approx(150.0)        # halfway from 400 (step 100) to 300 (step 200)
    assert m["time_to_target_100mbit_s"] == pytest.approx(75.0)
    # final: the median of the last 5 evaluations (here all 3); the last one and the best kept apart
    assert (m["final_ppl"], m["last_ppl"], m["best_ppl"], m["bytes_sent"]) == (300.0, 250.0, 250.0, 30)
    assert bench.run_metrics("sync adaalter", curve, 200.0, links)["time_to_target_100mbit_s"] is None
    # no target given: the run's own final (the median of 300 and 250) is its target, reached halfway
    # from step 200 to step 300
    own = bench.run_metrics("sync adaalter", curve, None, links, last=2)
    assert own["final_ppl"] == own["target_ppl"] == 275.0 and own["steps_to_target"] == pytest.approx(250.0)


def test_the_final_perplexity_is_the_median_of_the_last_evaluations():
    # version 1's seed 0 of synchronous AdaAlter: a spike at the last evaluation
    ppl = [93.63, 90.01, 89.87, 89.16, 87.11, 95.72]
    assert bench.end_perplexity(ppl) == 89.87                  # of 90.01, 89.87, 89.16, 87.11, 95.72
    assert bench.end_perplexity(ppl, last=1) == 95.72
    assert bench.end_perplexity(ppl, last=4) == pytest.approx((89.16 + 89.87) / 2)
    assert bench.end_perplexity([120.0], last=5) == 120.0


def test_kind_times_leave_out_each_kind_s_first_steps():
    rec = {"step_times": {"sync": [9.0] * 5 + [1.0] * 20, "local": [5.0, 2.0, 2.0], "local+sync": [7.0]}}
    assert bench.kind_times(rec) == {"sync": 1.0, "local": 2.0, "local+sync": 7.0}


def test_combined_tables_pair_each_seed_with_sync_adaalter():
    def run(arm, seed, ppl, sent, t100):
        return {"arm": arm, "seed": seed, "metrics": {"final_ppl": ppl, "bytes_sent": sent,
                                                      "time_to_target_100mbit_s": t100}}
    runs = [run("sync adaalter", 0, 100.0, 4e9, 50.0), run("sync adaalter", 1, 110.0, 4e9, 60.0),
            run("local adaalter H=4", 0, 101.0, 2e9, 30.0), run("local adaalter H=4", 1, 99.0, 2e9, None)]
    notes = [{"step_times_s": {"100mbit": {"sync adaalter": {"sync": 0.5},
                                           "local adaalter H=4": {"sync": 0.5, "local": 0.1, "local+sync": 1.1}}}}]
    t = bench.combined_tables(runs, {"links_mbit": [100], "steps": 10}, notes)
    rows = {r[0]: r for r in t["summary"]["rows"]}
    assert rows["local adaalter H=4"][2] == "1.010, 0.900"       # 101/100 and 99/110
    assert rows["local adaalter H=4"][4] == "2.00x" and rows["local adaalter H=4"][3] == "2.00"
    assert rows["local adaalter H=4"][5] == "30 (1/2)" and rows["sync adaalter"][5] == "55 (2/2)"
    assert t["step_times"]["rows"][1] == ["local adaalter H=4", "500", "100", "1100"]
