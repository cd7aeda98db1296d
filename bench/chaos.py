#!/usr/bin/env python
"""The chaos bench: an elastic Horovod job on the namespace testbed (4 hosts) while a seeded
schedule kills workers with SIGKILL, adds them back and degrades links (loss, delay, and a link
down for longer than Gloo's timeout), against the same job without faults.

The protocol bench/protocols/chaos.yaml fixes the job (the digits MLP, bench/_chaos_worker.py,
paced so it spans the schedule), the fault schedule's rules and seeds (bench/_chaos_analysis.py,
``draw_schedule``), the watchdog and the criteria. Per job the bench

- launches ``gluon-suite launch`` with a discovery script over a hosts file it edits, and an
  ``ssh`` that runs workers in the hosts' namespaces (bench/_chaos_testbed.py);
- applies the schedule from a controller thread, timed from the job's first logged step: a kill
  SIGKILLs the host's worker and takes the host out of the hosts file, an add lists every host
  without a worker again under a new name (Horovod blacklists a failed host's name for good), a
  link fault replaces both ends' qdisc for its duration;
- watches the step log: no new step for ``hang_s`` seconds (or no first step within
  ``startup_s``) is a hang, recorded, and the job is killed;
- afterwards reads per fault the recovery time and the steps lost from the step log, native
  crashes and unexpected exits from the job's output, and checks that every file of the run
  folder parses.

The testbed is removed at the end, on error and on SIGINT/SIGTERM (exit 130 / 143, no result).

    gluon-suite bench run chaos [--quick]
"""
import json
import os
import signal
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, HERE)
sys.path.insert(0, REPO)

import _chaos_analysis as analysis  # noqa: E402
from _chaos_testbed import ChaosTestbed, link_spec, write_ssh_shim  # noqa: E402

WORKER = os.path.join(HERE, "_chaos_worker.py")
NAMES_PER_HOST = 8


class Follower:
    """The job's step log read as it grows: the first step's time, the last new step's time and the
    last record."""

    def __init__(self, path):
        self.path, self.offset, self.first_t, self.last_seen, self.last = path, 0, None, None, None

    def poll(self):
        if not os.path.exists(self.path):
            return
        with open(self.path, "rb") as f:
            f.seek(self.offset)
            chunk = f.read()
        whole = chunk[:chunk.rfind(b"\n") + 1]
        self.offset += len(whole)
        for line in whole.decode("utf-8", "replace").splitlines():
            try:
                rec = json.loads(line)
            except ValueError:
                continue
            self.last, self.last_seen = rec, time.time()
            if self.first_t is None:
                self.first_t = rec["t"]


class Job:
    """One elastic job on the testbed and, for the chaos arm, its fault schedule."""

    def __init__(self, tb, p, seed, folder, schedule):
        self.tb, self.p, self.seed, self.schedule = tb, p, seed, schedule
        self.run_dir, self.ctl = os.path.join(folder, "run"), os.path.join(folder, "ctl")
        os.makedirs(self.run_dir)
        os.makedirs(os.path.join(self.ctl, "names"))
        self.names = [analysis.host_names(tb.address(i), NAMES_PER_HOST) for i in range(tb.hosts)]
        for i, names in enumerate(self.names):
            for name in names:
                with open(os.path.join(self.ctl, "names", name), "w", encoding="utf-8") as f:
                    f.write(tb.netns(i))
        self.incarnation, self.down = [0] * tb.hosts, set()
        self.faults, self.stop, self.kills = [], threading.Event(), 0
        self.follow = Follower(os.path.join(self.run_dir, "log.jsonl"))

    # ---- the hosts file and the workers ----------------------------------------------------
    def write_hosts(self):
        from gluon_suite.utils.fileio import atomic_write
        lines = [f"{self.names[i][self.incarnation[i]]}:1" for i in range(self.tb.hosts) if i not in self.down]
        atomic_write(os.path.join(self.ctl, "hosts.txt"), "\n".join(lines) + "\n")

    def alive(self, i):
        return bool(self.tb.worker_pids(i, WORKER))

    def pick(self, planned):
        """The planned host if its worker runs, else the next host whose worker does."""
        n = self.tb.hosts
        return next((h for h in ((planned + k) % n for k in range(n)) if self.alive(h)), None)

    def workers_now(self):
        return self.follow.last["workers"] if self.follow.last else None

    # ---- faults --------------------------------------------------------------------------
    def apply(self, fault):
        rec = dict(fault, injected=True, workers_logged=self.workers_now())
        kind = fault["kind"]
        if kind == analysis.KILL:
            host = self.pick(fault["host"])
            if host is None:
                return dict(rec, injected=False, why="no worker alive")
            rec["t0"] = time.time()
            for pid in self.tb.worker_pids(host, WORKER):
                os.kill(pid, signal.SIGKILL)
            self.kills += 1
            self.down.add(host)
            self.write_hosts()   # the scheduler saw the machine die
            rec.update(host=host, expected_workers=(rec["workers_logged"] or self.tb.hosts) - 1)
        elif kind == analysis.ADD:
            back = sorted(self.down | {i for i in range(self.tb.hosts) if not self.alive(i)})
            for i in back:
                self.incarnation[i] += 1
            self.down.clear()
            rec["t0"] = time.time()
            self.write_hosts()
            rec.update(host=back, names=[self.names[i][self.incarnation[i]] for i in back],
                       expected_workers=min(self.tb.hosts, (rec["workers_logged"] or 0) + len(back)))
        else:
            host = self.pick(fault["host"])
            host = fault["host"] if host is None else host
            rec.update(host=host, t0=time.time())
            links = self.p["links"]
            if kind == "lossy":
                link = self.tb.flap(host, self.stop, fault["duration_s"], links["loss_period_ms"] / 1000.0,
                                    links["loss_share"])
            else:
                self.tb.set_link(host, link_spec(kind, links, self.tb.rate))
                start = self.tb.link_counts(host)   # a tbf changed in place keeps its counters
                self.stop.wait(fault["duration_s"])
                end = self.tb.link_counts(host)
                link = {k: end[k] - start[k] for k in end}
            rec.update(link=link, t1=time.time())
            self.tb.restore_link(host)
        return rec

    def control(self):
        """The controller thread: each fault at its time from the first step, until stopped."""
        try:
            while self.follow.first_t is None:
                if self.stop.wait(0.2):
                    return
            for k, fault in enumerate(self.schedule):
                if self.stop.wait(max(0.0, self.follow.first_t + fault["at_s"] - time.time())):
                    self.faults += [dict(f, injected=False, why="the job ended first") for f in self.schedule[k:]]
                    return
                self.faults.append(self.apply(fault))
        except Exception as exc:  # noqa: BLE001  (recorded; the job goes on and the run reports it)
            self.faults.append({"kind": "controller error", "injected": False, "why": str(exc)[:300]})

    # ---- the job -------------------------------------------------------------------------
    def run(self, pace_s):
        """Run the job to its end (or a hang); returns the metrics of the run."""
        p, tb = self.p, self.tb
        cfg = {"out": self.run_dir, "lr": p["lr"], "ramp": p["ramp"], "epochs": p["epochs"], "batch": p["batch"],
               "seed": self.seed, "commit_every": p["commit_every"], "pace_s": pace_s, "ref_workers": tb.hosts}
        cfg_path = os.path.join(self.run_dir, "config.json")
        with open(cfg_path, "w", encoding="utf-8") as f:
            json.dump(cfg, f)
        self.write_hosts()
        disc = os.path.join(self.ctl, "discover.sh")
        with open(disc, "w", encoding="utf-8") as f:
            f.write(f"#!/bin/sh\ncat {self.ctl}/hosts.txt\n")
        os.chmod(disc, 0o755)
        shim = write_ssh_shim(os.path.join(self.ctl, "bin"), os.path.join(self.ctl, "names"))
        env = dict(os.environ, PATH=os.path.dirname(shim) + os.pathsep + os.environ.get("PATH", ""),
                   HOROVOD_GLOO_TIMEOUT_SECONDS=str(p["gloo_timeout_s"]), OMP_NUM_THREADS="1",
                   MXNET_CPU_WORKER_NTHREADS="1", PYTHONPATH=REPO, PYTHONUNBUFFERED="1")
        cli = os.path.join(os.path.dirname(sys.executable), "gluon-suite")
        cmd = [cli, "launch", "-np", str(tb.hosts), "--min-np", str(p["min_workers"]), "--max-np", str(tb.hosts),
               "--host-discovery-script", disc, "--network-interface", tb.nic,
               "--elastic-timeout", str(p["elastic_timeout_s"]), "--", sys.executable, WORKER, cfg_path]
        out_path = os.path.join(self.ctl, "output.txt")
        controller = threading.Thread(target=self.control, daemon=True)
        hang, started = None, time.time()
        with open(out_path, "wb") as out:
            proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, cwd=REPO, env=env,
                                    start_new_session=True)
            controller.start()
            try:
                hang = self.watch(proc, started)
            finally:
                self.stop.set()
                if proc.poll() is None:
                    os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
                controller.join()
                for i in range(tb.hosts):
                    tb.restore_link(i)
                tb.kill_all()
        with open(out_path, encoding="utf-8", errors="replace") as f:
            output = f.read()
        return self.metrics(proc.returncode, hang, output, time.time() - started)

    def watch(self, proc, started):
        """Wait for the job; a hang (no first step within ``startup_s``, no new step for ``hang_s``
        seconds) is returned as a dict, else None."""
        p = self.p
        while proc.poll() is None:
            time.sleep(0.5)
            self.follow.poll()
            now = time.time()
            if self.follow.first_t is None and now - started > p["startup_s"]:
                return {"after_s": round(now - started, 1), "why": f"no step within {p['startup_s']} s"}
            if self.follow.last_seen is not None and now - self.follow.last_seen > p["hang_s"]:
                return {"after_s": round(now - started, 1), "last_step": self.follow.last.get("step"),
                        "why": f"no new step for {p['hang_s']} s"}
        self.follow.poll()
        return None

    def metrics(self, code, hang, output, wall):
        steps, epochs = analysis.read_log(self.follow.path)
        done = [f for f in self.faults if f.get("injected")]
        per_fault = []
        for k, f in enumerate(done):
            until = done[k + 1]["t0"] if k + 1 < len(done) else None
            o = analysis.fault_outcome(f, steps, until)
            first = self.follow.first_t or f["t0"]
            per_fault.append({"kind": f["kind"], "host": f["host"], "at_s": round(f["t0"] - first, 1),
                              "duration_s": round(f.get("t1", f["t0"]) - f["t0"], 1),
                              "expected_workers": f.get("expected_workers"), "link": f.get("link"), **o})
        crashes, unexpected = analysis.crash_signs(output, expected_kills=self.kills)
        files = analysis.check_run_files(self.run_dir)
        result_path = os.path.join(self.run_dir, "result.json")
        final = None
        if os.path.exists(result_path) and not any(p == "result.json" for p, _ in files["half_written"]):
            with open(result_path, encoding="utf-8") as f:
                final = json.load(f)["final_acc"]
        limit = self.p["commit_every"]
        return {"final_acc": final, "hangs": int(hang is not None), "hang": hang,
                "native_crashes": len(crashes), "crash_lines": crashes[:20], "unexpected_exits": unexpected[:20],
                "half_written": len(files["half_written"]), "half_written_files": files["half_written"],
                "temporary_files": files["temporary"], "files_checked": files["checked"],
                "job_failed": int(code != 0 or final is None), "exit_code": code,
                "faults_planned": len(self.schedule), "faults_injected": len(done),
                "not_injected": [f for f in self.faults if not f.get("injected")],
                "unrecovered": sum(1 for f in per_fault if f["recovery_s"] is None),
                "steps_lost_max": max((f["steps_lost"] for f in per_fault), default=0),
                "steps_lost_over": sum(1 for f in per_fault if f["steps_lost"] > limit),
                "recovery_s_max": max((f["recovery_s"] for f in per_fault if f["recovery_s"] is not None),
                                      default=None),
                "steps": steps[-1]["step"] if steps else 0, "epochs_logged": len(epochs),
                "train_s": (steps[-1]["t"] - steps[0]["t"]) if steps else None, "wall_s": wall, "faults": per_fault,
                "trace": [[round(r["t"] - steps[0]["t"], 2), r["step"], r["workers"]] for r in steps]}


def schedule_for(p, seed):
    """The seed's fault schedule under the protocol's parameters ``p``."""
    return analysis.draw_schedule(p["faults"], seed, p["schedule_seed"], p["hosts"], p["min_workers"],
                                  p["warmup_s"], p["gap_s"], p["durations"], p["settle_s"], p["end_s"])


def _s(x, fmt=".1f"):
    return "n/a" if x is None else format(x, fmt)


def tables(ctx, runs):
    """The per-fault table and the per-run summary."""
    rows = []
    for r in runs:
        m = r["metrics"]
        for k, f in enumerate(m.get("faults") or []):
            link = f.get("link") or {}
            drop = f"{100 * link['dropped'] / max(link['sent'] + link['dropped'], 1):.1f}%" if link else "-"
            host = f["host"] if not isinstance(f["host"], list) else ",".join(map(str, f["host"])) or "none down"
            rows.append([r["seed"], k, f["kind"], host, _s(f["at_s"]), _s(f["duration_s"]),
                         f"{f['workers_before']} -> {f['workers_after']}", _s(f["recovery_s"]), f["steps_lost"],
                         f["resets"], _s(f["longest_stall_s"]), drop])
    ctx.table("faults", ["seed", "#", "fault", "host", "at (s)", "lasted (s)", "workers", "recovery (s)",
                         "steps lost", "resets", "longest stall (s)", "packets dropped"], rows,
              caption="recovery: kill/add from the fault to the first step at the expected worker count; link "
                      "faults from the repair to the next step. Steps lost: steps taken again after restoring "
                      f"the last commit (at most {ctx.params['commit_every']} per fault).")
    summary = [[r["arm"], r["seed"], _s(100 * r["metrics"]["final_acc"], ".2f") if r["metrics"]["final_acc"] is not None
                else "n/a", r["metrics"]["steps"], _s(r["metrics"]["train_s"], ".0f"),
                f"{r['metrics'].get('faults_injected', 0)}/{r['metrics'].get('faults_planned', 0)}",
                r["metrics"]["hangs"], r["metrics"]["native_crashes"], len(r["metrics"]["unexpected_exits"]),
                r["metrics"]["half_written"], len(r["metrics"]["temporary_files"]), r["metrics"]["job_failed"]]
               for r in runs]
    ctx.table("runs", ["arm", "seed", "final test acc (%)", "steps", "training (s)", "faults injected", "hangs",
                       "native crashes", "unexpected exits", "half-written files", "temporary files left",
                       "job failed"], summary)


def plot(runs, path):
    """The first seed's chaos job: the step count and the worker count over time, each fault's
    window shaded, beside the fault-free job's step count."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    first = {a: next((r for r in runs if r["arm"] == a and r["metrics"].get("trace")), None)
             for a in ("chaos", "baseline")}
    if first["chaos"] is None:
        return
    fig, (a1, a2) = plt.subplots(2, 1, figsize=(11, 6), sharex=True)
    colours = {"kill": "tab:red", "add": "tab:green", "lossy": "tab:orange", "slow": "tab:purple",
               "partition": "tab:gray"}
    for arm, r in first.items():
        if r is not None:
            tr = r["metrics"]["trace"]
            a1.plot([x[0] for x in tr], [x[1] for x in tr], lw=1, label=f"{arm} (seed {r['seed']})")
    tr = first["chaos"]["metrics"]["trace"]
    a2.step([x[0] for x in tr], [x[2] for x in tr], where="post", color="k")
    for f in first["chaos"]["metrics"]["faults"]:
        for ax in (a1, a2):
            ax.axvspan(f["at_s"], f["at_s"] + max(f["duration_s"], 1.0), color=colours.get(f["kind"], "b"), alpha=0.3,
                       label=f["kind"] if ax is a1 else None)
    handles, labels = a1.get_legend_handles_labels()
    seen = {}
    for h, lab in zip(handles, labels):
        seen.setdefault(lab, h)
    a1.legend(seen.values(), seen.keys(), fontsize=8)
    a1.set_ylabel("steps logged")
    a2.set_ylabel("workers")
    a2.set_ylim(0, max(x[2] for x in tr) + 0.5)
    a2.yaxis.get_major_locator().set_params(integer=True)
    a2.set_xlabel("seconds from the first step")
    a1.set_title("chaos job: steps over time (a restore shows as a step back), faults shaded")
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def evidence(ctx):
    """The protocol bench/protocols/chaos.yaml: per seed the chaos job and the fault-free job on
    one testbed; the per-fault and per-run tables."""
    import tempfile
    from gluon_suite.utils.errors import UserError
    from gluon_suite.whatif.testbed import TestbedUnavailable, stop_on_signal
    p = ctx.params
    schedules = {seed: schedule_for(p, seed) for seed in ctx.seeds}
    ctx.note("schedules", {str(s): v for s, v in schedules.items()})
    try:
        with stop_on_signal(), ChaosTestbed(p["hosts"], p["rate_mbit"]) as tb, \
                tempfile.TemporaryDirectory(prefix="chaos-", dir=ctx.workdir) as tmp:
            jobs = [(seed, arm) for seed in ctx.seeds for arm in ctx.arms]
            for seed, arm in ctx.progress(jobs, desc="chaos jobs"):
                chaos = arm == "chaos"
                job = Job(tb, p, seed, os.path.join(tmp, f"{arm}-{seed}"), schedules[seed] if chaos else [])
                m = ctx.measure(arm, seed, lambda: job.run(p["pace_s"] if chaos else 0.0))
                print(f"seed {seed} {arm}: final acc {_s(m['final_acc'], '.4f')}, {m['steps']} steps, faults "
                      f"{m['faults_injected']}/{m['faults_planned']}, hangs {m['hangs']}, crashes "
                      f"{m['native_crashes']}, half-written {m['half_written']}", flush=True)
    except TestbedUnavailable as exc:
        raise UserError(f"chaos: {exc}") from None
    tables(ctx, ctx.runs)
    plot(ctx.runs, ctx.figure(".png"))


if __name__ == "__main__":
    from gluon_suite.cli import entry
    sys.argv = ["gluon-suite", "bench", "run", "chaos", *sys.argv[1:]]
    entry()
