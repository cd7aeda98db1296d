"""The pure parts of the chaos bench (bench/chaos.py), testable without a testbed or a job:

- :func:`draw_schedule`: the fault schedule of one job, drawn from (schedule seed, training seed)
  by the protocol's rules: the faults in the protocol's order, each after a random gap, link faults
  lasting their fixed duration, each followed by its settling time; the targets a simulation of
  which hosts are up would pick. The same seeds give the same schedule on any machine.
- :func:`host_names`: distinct spellings of one IPv4 address (``10.201.3.2``, ``10.201.770``,
  ``0xa.0xc9.0x3.0x2``, ...). Horovod blacklists a failed host by name for good, so a host that was
  killed comes back under its next spelling, as a replaced machine would come back under a new
  name.
- :func:`fault_outcome`: a fault's recovery time, the steps it cost and the resets it caused, read
  from the job's step log (rank 0's one line per step: time, step, workers).
- :func:`crash_signs` and :func:`exit_codes`: native crashes and worker exits in a job's output.
- :func:`check_run_files`: every file a run left parses (JSON, JSON lines, MXNet's NDArray format).
"""
import json
import os
import re

import numpy as np

KILL, ADD = "kill", "add"
LINK_KINDS = ("lossy", "slow", "partition")
KINDS = (KILL, ADD) + LINK_KINDS

# exit statuses of a worker killed by a signal, as the shell (128 + n) or Python (-n) reports them
SIGNAL_NAMES = {4: "SIGILL", 6: "SIGABRT", 7: "SIGBUS", 8: "SIGFPE", 9: "SIGKILL", 11: "SIGSEGV", 15: "SIGTERM"}
CRASH_SIGNALS = (4, 6, 7, 8, 11)
CRASH_TEXT = re.compile(r"Segmentation fault|core dumped|Fatal Python error|terminate called|double free|"
                        r"corrupted (size|double-linked)|^\S*\s*Aborted|"
                        r"^(\[\d+\]<std(out|err)>:)?horovod\.common\.exceptions\.HorovodInternalError")
EXIT_LINE = re.compile(r"Process (\d+) exit with status code (-?\d+)")


def _gap(rng, gap_s):
    low, high = float(gap_s[0]), float(gap_s[1])
    if not 0 <= low <= high:
        raise ValueError(f"gap_s must be [low, high] with 0 <= low <= high, got {gap_s}")
    return float(rng.uniform(low, high))


def draw_schedule(kinds, seed, schedule_seed, hosts, min_workers, warmup_s, gap_s, durations, settle_s, end_s):
    """The faults of one job: a list of ``{"index", "kind", "at_s", "duration_s", "host"}`` (times
    from the job's first step; ``host`` the planned target, None for ``add``, which brings back
    every host that is down). Draws come from NumPy's PCG64 seeded with ``[schedule_seed, seed]``:
    per fault a gap uniform in ``gap_s`` after the previous fault's settling time, then a host
    uniform over ``hosts``; a kill or link fault whose drawn host is down takes the next host up
    (cyclically). A link fault lasts ``durations[kind]``; every fault is followed by
    ``settle_s[kind]`` seconds before the next may start. Raises ``ValueError`` for an unknown kind,
    a kill that would leave fewer than ``min_workers`` hosts, or a schedule that ends after
    ``end_s``."""
    rng = np.random.Generator(np.random.PCG64([int(schedule_seed), int(seed)]))
    up, t, out = list(range(hosts)), float(warmup_s), []
    for i, kind in enumerate(kinds):
        if kind not in KINDS:
            raise ValueError(f"fault {i}: unknown kind {kind!r}; known: {', '.join(KINDS)}")
        at = t + _gap(rng, gap_s)
        drawn = int(rng.integers(hosts))
        duration = float(durations[kind]) if kind in LINK_KINDS else 0.0
        host = None
        if kind == ADD:
            up = list(range(hosts))
        else:
            if kind == KILL and len(up) <= min_workers:
                raise ValueError(f"fault {i}: a kill with {len(up)} hosts up would leave fewer than {min_workers}")
            host = next(h for h in ((drawn + k) % hosts for k in range(hosts)) if h in up)
            if kind == KILL:
                up.remove(host)
        out.append({"index": i, "kind": kind, "at_s": round(at, 3), "duration_s": duration, "host": host})
        t = at + duration + float(settle_s[kind])
        if t > end_s:
            raise ValueError(f"the schedule does not fit: fault {i} ({kind}) settles at {t:.0f} s, after "
                             f"end_s {end_s}; shorten the gaps or settling times, or lengthen the job")
    return out


def host_names(address, count):
    """``count`` distinct names that all resolve to IPv4 ``address`` (``socket.inet_aton``'s
    forms): dotted decimal, then three-, two- and one-part decimal, then the same four in hex."""
    a, b, c, d = (int(x) for x in address.split("."))
    forms = [[a, b, c, d], [a, b, c * 256 + d], [a, b * 65536 + c * 256 + d], [((a * 256 + b) * 256 + c) * 256 + d]]
    names = [".".join(str(x) for x in f) for f in forms] + [".".join(hex(x) for x in f) for f in forms]
    if count > len(names):
        raise ValueError(f"only {len(names)} spellings of {address}; a host cannot come back {count - 1} times")
    return names[:count]


def read_log(path):
    """The step and epoch records of a job's log (JSON lines); a line that does not parse is
    skipped here (``check_run_files`` reports it)."""
    steps, epochs = [], []
    if not os.path.exists(path):
        return steps, epochs
    with open(path, encoding="utf-8") as f:
        for line in f:
            try:
                rec = json.loads(line)
            except ValueError:
                continue
            (epochs if "test_acc" in rec else steps).append(rec)
    return steps, epochs


def fault_outcome(fault, steps, until=None):
    """What one fault did, from ``steps`` (rank 0's step records ``{"t", "step", "workers"}`` in
    log order) between the fault's start ``fault["t0"]`` and ``until`` (the next fault's start).

    - ``steps_lost``: steps taken again: each time the step count goes back (a restore of the last
      commit), the steps from the restored one to the last one logged before; ``resets``: how often.
    - ``recovery_s``: kill / add: from the fault to the first step at the worker count expected
      after it (``fault["expected_workers"]``); link faults: from the link's repair (``t1``) to the
      first step after it. None when that step never came before ``until``.
    - ``longest_stall_s``: the longest time without a step from the last step before the fault to
      the recovery (to the last step before ``until`` when there was none); ``workers_after``: the
      count of the last step before ``until``; ``steps_during``: steps logged while a link fault
      lasted."""
    t0, t1 = float(fault["t0"]), float(fault.get("t1", fault["t0"]))
    until = float("inf") if until is None else float(until)
    before = [r for r in steps if r["t"] < t0]
    window = [r for r in steps if t0 <= r["t"] < until]
    prev = before[-1] if before else None
    lost = resets = 0
    for r in window:
        if prev is not None and r["step"] <= prev["step"]:
            lost += prev["step"] - r["step"] + 1
            resets += 1
        prev = r
    if fault["kind"] in (KILL, ADD):
        hit = next((r for r in window if r["workers"] == fault["expected_workers"]), None)
        recovery = hit["t"] - t0 if hit else None
    else:
        hit = next((r for r in window if r["t"] >= t1), None)
        recovery = hit["t"] - t1 if hit else None
    upto = [r["t"] for r in window if hit is None or r["t"] <= hit["t"]]
    times = [before[-1]["t"] if before else t0] + upto
    stall = max((b - a for a, b in zip(times, times[1:])), default=0.0)
    return {"recovery_s": recovery, "steps_lost": lost, "resets": resets, "longest_stall_s": max(stall, 0.0),
            "workers_before": before[-1]["workers"] if before else None,
            "workers_after": window[-1]["workers"] if window else None,
            "steps_during": sum(1 for r in window if r["t"] < t1) if fault["kind"] in LINK_KINDS else None}


def exit_codes(output):
    """``[(worker index, exit code)]`` of every worker exit Horovod reported in ``output``."""
    return [(int(m.group(1)), int(m.group(2))) for m in EXIT_LINE.finditer(output)]


def crash_signs(output, expected_kills=0):
    """Native crashes in a job's ``output``: lines that say so (segmentation fault, core dumped,
    abort, an uncaught ``HorovodInternalError``) and worker exits by a crash signal (SIGSEGV,
    SIGABRT, SIGBUS, SIGILL, SIGFPE, as 128 + n or -n). Returns ``(crashes, unexpected)``:
    ``crashes`` lists the lines and exits; ``unexpected`` the other non-zero exits beyond the
    ``expected_kills`` SIGKILLs the bench sent itself (and SIGTERMs: Horovod stops a removed
    worker)."""
    crashes = [line.strip()[:200] for line in output.splitlines() if CRASH_TEXT.search(line)]
    unexpected, kills = [], 0
    for worker, code in exit_codes(output):
        sig = code - 128 if code > 128 else -code if code < 0 else None
        if sig in CRASH_SIGNALS:
            crashes.append(f"worker {worker} exited by {SIGNAL_NAMES[sig]} (code {code})")
        elif sig == 9 and kills < expected_kills:
            kills += 1
        elif code != 0 and sig != 15:
            unexpected.append(f"worker {worker} exited with code {code}")
    return crashes, unexpected


def _check_ndarray(path):
    import mxnet as mx
    mx.nd.load(path)


def _check_json(path):
    with open(path, encoding="utf-8") as f:
        json.load(f)


def _check_jsonl(path):
    with open(path, encoding="utf-8") as f:
        text = f.read()
    if text and not text.endswith("\n"):
        raise ValueError("the last line is cut short (no newline)")
    for no, line in enumerate(text.splitlines(), 1):
        try:
            json.loads(line)
        except ValueError as exc:
            raise ValueError(f"line {no}: {exc}") from None


CHECKERS = {".json": _check_json, ".jsonl": _check_jsonl, ".params": _check_ndarray, ".nd": _check_ndarray,
            ".states": _check_ndarray}


def check_run_files(folder):
    """Check every file under ``folder``: ``.json`` parses, each line of ``.jsonl`` parses and the
    last ends, ``.params``/``.nd``/``.states`` load as MXNet NDArray files. Returns ``{"checked",
    "half_written": [(path, why)], "temporary": [paths], "unchecked": [paths]}``; a ``.tmp-*`` file
    is a temporary one a writer killed before its rename left (the real file is untouched)."""
    out = {"checked": 0, "half_written": [], "temporary": [], "unchecked": []}
    for root, _, files in os.walk(folder):
        for name in sorted(files):
            path = os.path.join(root, name)
            rel = os.path.relpath(path, folder)
            if name.startswith(".tmp-"):
                out["temporary"].append(rel)
                continue
            check = CHECKERS.get(os.path.splitext(name)[1])
            if check is None:
                out["unchecked"].append(rel)
                continue
            out["checked"] += 1
            try:
                check(path)
            except Exception as exc:  # noqa: BLE001  (any failure to read is the finding)
                out["half_written"].append((rel, " ".join(str(exc).split())[:200] or type(exc).__name__))
    return out
