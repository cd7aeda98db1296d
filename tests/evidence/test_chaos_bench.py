"""The chaos bench's pure parts (bench/_chaos_analysis.py, bench/_chaos_testbed.py's link faults)
and its protocol: the fault schedule drawn from a seed, recovery and steps lost read from a
hand-written step log, crash signs in hand-written output, the half-written-file check on
hand-made good and bad files. The bench itself runs in the long tier (test_quick_runs.py)."""
import json
import math
import socket

import mxnet as mx
import pytest

from gluon_suite.evidence import protocols

from ..conftest import REPO, load_script

analysis = load_script("bench/_chaos_analysis.py")
testbed = load_script("bench/_chaos_testbed.py")

DURATIONS = {"lossy": 7.0, "slow": 5.0, "partition": 11.0}
SETTLE = {"kill": 3.0, "add": 4.0, "lossy": 2.0, "slow": 1.0, "partition": 6.0}


def draw(kinds, seed=0, gap_s=(1.0, 5.0), end_s=1000.0, hosts=4, min_workers=2):
    return analysis.draw_schedule(kinds, seed, 55, hosts, min_workers, 10.0, list(gap_s), DURATIONS, SETTLE, end_s)


def test_a_schedule_with_a_fixed_gap_has_hand_computed_times():
    s = draw(["kill", "add", "lossy", "partition"], gap_s=(2.0, 2.0))
    # 10 + 2 = 12; + settle 3 + 2 = 17; + settle 4 + 2 = 23; + 7 lasting + settle 2 + 2 = 34
    assert [f["at_s"] for f in s] == [12.0, 17.0, 23.0, 34.0]
    assert [f["duration_s"] for f in s] == [0.0, 0.0, 7.0, 11.0]
    assert [f["kind"] for f in s] == ["kill", "add", "lossy", "partition"] and s[1]["host"] is None


def test_the_schedule_is_the_same_for_the_same_seeds_and_stays_within_its_bounds():
    kinds = ["kill", "add", "lossy", "kill", "add", "slow", "partition", "add", "kill", "add"]
    for seed in range(20):
        a, b = draw(kinds, seed), draw(kinds, seed)
        assert a == b
        t, up = 10.0, {0, 1, 2, 3}
        for f in a:
            gap = f["at_s"] - t
            assert 1.0 - 1e-6 <= gap <= 5.0 + 1e-6, (seed, f)
            if f["kind"] == "kill":
                assert f["host"] in up and len(up) > 2
                up.discard(f["host"])
            elif f["kind"] == "add":
                up = {0, 1, 2, 3}
            else:
                assert f["host"] in up   # a link fault hits a host that has a worker
            t = f["at_s"] + f["duration_s"] + SETTLE[f["kind"]]
        assert t <= 1000.0
    assert len({tuple(f["at_s"] for f in draw(kinds, seed)) for seed in range(20)}) == 20


def test_a_kill_takes_the_next_host_up_when_the_drawn_one_is_down():
    # two hosts, min 0 workers: the second kill must take the host the first one left
    for seed in range(10):
        s = draw(["kill", "kill"], seed=seed, hosts=2, min_workers=0)
        assert {s[0]["host"], s[1]["host"]} == {0, 1}


@pytest.mark.parametrize("kinds, kwargs, words", [
    (["kill", "reboot"], {}, "unknown kind 'reboot'"),
    (["kill", "kill", "kill"], {}, "fewer than 2"),
    (["partition"] * 5, {"end_s": 60.0}, "does not fit"),
])
def test_a_bad_schedule_is_refused_in_one_line(kinds, kwargs, words):
    with pytest.raises(ValueError, match=words):
        draw(kinds, **kwargs)


def test_every_host_name_spells_the_same_address():
    names = analysis.host_names("10.201.3.2", 8)
    assert len(set(names)) == 8 and names[0] == "10.201.3.2"
    assert {socket.inet_ntoa(socket.inet_aton(n)) for n in names} == {"10.201.3.2"}
    with pytest.raises(ValueError, match="only 8 spellings"):
        analysis.host_names("10.201.3.2", 9)


def steps(*spans):
    """Step records from (first step, last step, first time, workers) spans, one step a second."""
    out = []
    for first, last, t, workers in spans:
        out += [{"t": t + k, "step": s, "workers": workers} for k, s in enumerate(range(first, last + 1))]
    return out


def test_a_kill_costs_the_steps_since_the_last_commit_and_recovers_at_the_new_count():
    # steps 1..15 at t 1..15 on 4 workers; killed at 15.5; the last commit was step 10, so the
    # survivors log 11.. again from t 20 on 3 workers
    log = steps((1, 15, 1.0, 4), (11, 30, 20.0, 3))
    o = analysis.fault_outcome({"kind": "kill", "t0": 15.5, "expected_workers": 3}, log, until=35.0)
    assert o["steps_lost"] == 5 and o["resets"] == 1
    assert o["recovery_s"] == pytest.approx(4.5) and o["longest_stall_s"] == pytest.approx(5.0)
    assert (o["workers_before"], o["workers_after"]) == (4, 3) and o["steps_during"] is None


def test_an_add_at_a_commit_loses_nothing():
    log = steps((1, 20, 1.0, 3), (21, 30, 27.0, 4))   # a commit at 20, then 4 workers after a 7 s pause
    o = analysis.fault_outcome({"kind": "add", "t0": 18.2, "expected_workers": 4}, log)
    assert (o["steps_lost"], o["resets"]) == (0, 0)
    assert o["recovery_s"] == pytest.approx(27.0 - 18.2) and o["longest_stall_s"] == pytest.approx(7.0)


def test_two_resets_in_one_fault_add_up():
    log = steps((1, 14, 1.0, 4), (11, 13, 20.0, 3), (11, 20, 30.0, 3))
    o = analysis.fault_outcome({"kind": "kill", "t0": 14.5, "expected_workers": 3}, log)
    assert (o["steps_lost"], o["resets"]) == ((14 - 11 + 1) + (13 - 11 + 1), 2)
    assert o["recovery_s"] == pytest.approx(5.5)


def test_a_link_fault_recovers_at_the_first_step_after_the_repair():
    log = steps((1, 10, 1.0, 4)) + [{"t": t, "step": s, "workers": 4} for t, s in
                                    ((12.5, 11), (16.0, 12), (21.25, 13), (22.0, 14))]
    o = analysis.fault_outcome({"kind": "slow", "t0": 10.5, "t1": 20.5}, log, until=100.0)
    assert o["recovery_s"] == pytest.approx(0.75) and o["steps_during"] == 2
    assert o["longest_stall_s"] == pytest.approx(21.25 - 16.0) and o["steps_lost"] == 0


def test_a_fault_never_recovered_from_before_the_next_one_says_so():
    log = steps((1, 10, 1.0, 4), (11, 20, 12.0, 4))   # still 4 workers after the kill
    o = analysis.fault_outcome({"kind": "kill", "t0": 10.5, "expected_workers": 3}, log, until=25.0)
    assert o["recovery_s"] is None and o["workers_after"] == 4


def test_crash_signs_tell_native_crashes_from_the_bench_own_kills():
    out = "\n".join([
        "[0]<stdout>:epoch 1",
        "Process 1 exit with status code 137.",        # the bench's SIGKILL (expected)
        "Process 2 exit with status code 139.",        # SIGSEGV
        "[3]<stderr>:Fatal Python error: Aborted",
        "Process 3 exit with status code -6.",         # SIGABRT seen from Python
        "Process 0 exit with status code 143.",        # Horovod stopping a removed worker
        "Process 2 exit with status code 1.",
        "Process 1 exit with status code 137.",        # a second SIGKILL nobody sent
        "[1]<stderr>:horovod.common.exceptions.HorovodInternalError: ring broken",
    ])
    crashes, unexpected = analysis.crash_signs(out, expected_kills=1)
    assert crashes == ["[3]<stderr>:Fatal Python error: Aborted",
                       "[1]<stderr>:horovod.common.exceptions.HorovodInternalError: ring broken",
                       "worker 2 exited by SIGSEGV (code 139)", "worker 3 exited by SIGABRT (code -6)"]
    assert unexpected == ["worker 2 exited with code 1", "worker 1 exited with code 137"]
    assert analysis.crash_signs("Process 1 exit with status code 137.\nall good\n", expected_kills=1) == ([], [])


def test_the_file_check_finds_every_half_written_file(tmp_path):
    (tmp_path / "ok.json").write_text(json.dumps({"a": 1}))
    (tmp_path / "cut.json").write_text(json.dumps({"a": [1, 2, 3]})[:-3])
    (tmp_path / "log.jsonl").write_text('{"step": 1}\n{"step": 2}\n')
    (tmp_path / "cutlog.jsonl").write_text('{"step": 1}\n{"st')
    (tmp_path / "badline.jsonl").write_text('{"step": 1}\nnot json\n')
    mx.nd.save(str(tmp_path / "ok.params"), {"w": mx.nd.arange(1000)})
    whole = (tmp_path / "ok.params").read_bytes()
    (tmp_path / "cut.params").write_bytes(whole[:len(whole) // 2])
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / ".tmp-ckpt.params.x1y2").write_bytes(whole[:10])
    (tmp_path / "notes.txt").write_text("anything")
    r = analysis.check_run_files(str(tmp_path))
    assert r["checked"] == 7
    assert sorted(p for p, _ in r["half_written"]) == ["badline.jsonl", "cut.json", "cut.params", "cutlog.jsonl"]
    assert dict(r["half_written"])["cutlog.jsonl"].startswith("the last line is cut short")
    assert dict(r["half_written"])["badline.jsonl"].startswith("line 2:")
    assert r["temporary"] == ["sub/.tmp-ckpt.params.x1y2"] and r["unchecked"] == ["notes.txt"]


def test_the_link_faults_are_qdiscs_this_kernel_has():
    links = {"loss_period_ms": 250, "loss_share": 0.2, "slow_mbit": 2, "slow_queue_ms": 400}
    assert testbed.link_spec("partition", links, 100.0) == ["pfifo", "limit", "0"]
    slow = testbed.link_spec("slow", links, 100.0)
    assert slow[:3] == ["tbf", "rate", "2.0mbit"] and slow[-2:] == ["latency", "400.0ms"]
    assert int(slow[4][:-4]) * 1000 / 8 >= 1514   # the bucket holds a full Ethernet frame
    assert testbed.link_spec("slow", links, 1.0)[2] == "1.0mbit"   # never faster than the link
    with pytest.raises(ValueError, match="no whole-duration link fault"):
        testbed.link_spec("lossy", links, 100.0)


def test_a_lossy_link_is_cut_for_the_first_share_of_every_period():
    def flat(windows):
        return [x for w in windows for x in w]
    assert flat(testbed.flap_windows(1.0, 0.25, 0.2)) == pytest.approx([0.0, 0.05, 0.25, 0.3, 0.5, 0.55, 0.75, 0.8])
    assert flat(testbed.flap_windows(0.6, 0.25, 0.5)) == pytest.approx([0.0, 0.125, 0.25, 0.375, 0.5, 0.6])
    assert testbed.flap_windows(0.0, 0.25, 0.2) == []
    for bad in ((1.0, 0.25, 1.0), (1.0, 0.0, 0.2), (-1.0, 0.25, 0.2)):
        with pytest.raises(ValueError, match="0 < share < 1"):
            testbed.flap_windows(*bad)


def test_the_protocol_runs_over_ten_minutes_and_its_quick_schedule_has_a_kill_and_a_link_fault():
    proto = protocols.load(REPO, "chaos")
    assert proto.arms() == ["chaos", "baseline"] and len(proto.seeds()) >= 2
    for quick in (False, True):
        p = proto.params(quick)
        steps_per_epoch = math.ceil(1438 / (p["batch"] * p["hosts"]))
        paced = p["epochs"] * steps_per_epoch * p["pace_s"]   # at full strength, the shortest it can be
        assert paced > p["end_s"]   # the job outlasts its schedule
        assert p["durations"]["partition"] > p["gloo_timeout_s"]
        for seed in proto.seeds(quick):
            analysis.draw_schedule(p["faults"], seed, p["schedule_seed"], p["hosts"], p["min_workers"],
                                   p["warmup_s"], p["gap_s"], p["durations"], p["settle_s"], p["end_s"])
    full, quick = proto.params(False), proto.params(True)
    assert full["epochs"] * math.ceil(1438 / 32) * full["pace_s"] >= 600
    assert set(full["faults"]) == {"kill", "add", "lossy", "slow", "partition"}
    assert quick["faults"].count("kill") == 1 and set(quick["faults"]) & {"lossy", "slow", "partition"}
    assert {c["id"] for c in proto.criteria} >= {"no_hangs", "no_native_crashes", "nothing_half_written",
                                                  "steps_lost_within_one_commit", "accuracy_within_fault_free"}


def test_the_follower_reads_whole_lines_only(tmp_path):
    chaos = load_script("bench/chaos.py")
    path = tmp_path / "log.jsonl"
    follow = chaos.Follower(str(path))
    follow.poll()
    assert follow.first_t is None   # no log yet
    path.write_text('{"t": 5.0, "step": 1, "workers": 4}\n{"t": 6.0, "st')
    follow.poll()
    assert (follow.first_t, follow.last["step"]) == (5.0, 1)
    with open(path, "a", encoding="utf-8") as f:
        f.write('ep": 2, "workers": 3}\n')
    follow.poll()
    assert (follow.first_t, follow.last) == (5.0, {"t": 6.0, "step": 2, "workers": 3})


def test_the_tables_and_the_plot_from_hand_made_runs(tmp_path):
    from ..bench_context import RecordingContext
    chaos = load_script("bench/chaos.py")
    fault = {"kind": "lossy", "host": 2, "at_s": 40.0, "duration_s": 10.0, "expected_workers": None,
             "link": {"sent": 75, "dropped": 25}, "recovery_s": 0.25, "steps_lost": 0, "resets": 0,
             "longest_stall_s": 1.5, "workers_before": 4, "workers_after": 4, "steps_during": 12}
    add = dict(fault, kind="add", host=[], link=None, duration_s=0.0, recovery_s=None)
    base = {"final_acc": 0.95, "steps": 100, "train_s": 50.0, "hangs": 0, "native_crashes": 0, "unexpected_exits": [],
            "half_written": 0, "temporary_files": [], "job_failed": 0, "trace": [[0.0, 1, 4], [60.0, 100, 4]]}
    runs = [{"arm": "chaos", "seed": 0, "metrics": dict(base, faults=[fault, add], faults_injected=2, faults_planned=3,
                                                        temporary_files=[".tmp-ckpt.params.x"])},
            {"arm": "baseline", "seed": 0, "metrics": dict(base, final_acc=None)}]
    ctx = RecordingContext({"commit_every": 10}, [0], ["chaos", "baseline"], tmp_path)
    chaos.tables(ctx, runs)
    cols, rows = ctx.tables["faults"]
    assert len(cols) == len(rows[0]) == 12
    assert rows[0] == [0, 0, "lossy", 2, "40.0", "10.0", "4 -> 4", "0.2", 0, 0, "1.5", "25.0%"]
    assert rows[1][2:4] == ["add", "none down"] and rows[1][7] == "n/a" and rows[1][-1] == "-"
    _, summary = ctx.tables["runs"]
    assert summary[0] == ["chaos", 0, "95.00", 100, "50", "2/3", 0, 0, 0, 0, 1, 0]
    assert summary[1][:3] == ["baseline", 0, "n/a"] and summary[1][5] == "0/0"
    chaos.plot(runs, str(tmp_path / "fig.png"))
    assert (tmp_path / "fig.png").stat().st_size > 1000
