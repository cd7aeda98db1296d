"""``gluon-suite bench run NAME``: run a protocol and write a new result file.

The protocol names a bench module, ``bench/<bench>.py``, whose ``evidence(ctx)`` runs every
(arm, seed) it is asked for through :meth:`Context.measure` and may add tables and plots. The runner
owns everything else: the checks that the protocol is committed and the checkout clean, the seeds and
parameters (shortened by the protocol's ``quick`` section under ``--quick``), arms reused from another
protocol's result (named by file and hash), the machine's load during each run, the statistics and
verdict of every criterion, and the one new result file."""
import contextlib
import importlib.util
import math
import os
import platform
import subprocess
import sys
import tempfile
import threading
import time

from ..utils.errors import UserError
from . import protocols, stats, store

__all__ = ["Context", "run", "evaluate", "find_root", "git_state", "versions"]


def find_root(start=None):
    """The checkout that holds bench/protocols: ``start`` (or the working directory) or a folder
    above it, else the folder above the installed package."""
    here = os.path.abspath(start or os.getcwd())
    while True:
        if os.path.isdir(protocols.protocols_dir(here)):
            return here
        up = os.path.dirname(here)
        if up == here:
            break
        here = up
    pkg_root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    if os.path.isdir(protocols.protocols_dir(pkg_root)):
        return pkg_root
    raise UserError("no bench/protocols folder here or above, nor beside the installed package; run from a "
                    "checkout of gluon_suite or pass --root")


def _git(root, *args):
    try:
        r = subprocess.run(["git", "-C", root, *args], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return r.stdout.strip() if r.returncode == 0 else None


def git_state(root, protocol_path=None):
    """Commit, whether tracked files differ from it, and whether the protocol file is committed
    unchanged."""
    commit = _git(root, "rev-parse", "HEAD")
    dirty = _git(root, "status", "--porcelain", "--untracked-files=no")
    state = {"commit": commit or "unknown", "dirty": bool(dirty) if dirty is not None else True}
    if protocol_path:
        tracked = _git(root, "ls-files", "--error-unmatch", protocol_path) is not None
        changed = _git(root, "status", "--porcelain", "--", protocol_path)
        state["protocol_committed"] = bool(tracked and commit and changed == "")
    return state


def versions():
    from importlib import metadata
    out = {"python": platform.python_version()}
    for dist in ("gluon_suite", "mxnet", "numpy", "scipy", "gluoncv", "gluonnlp", "horovod"):
        try:
            out[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            out[dist] = None
    return out


class _LoadSampler:
    """The machine's 1-minute load average, sampled every ``every`` seconds in a thread."""

    def __init__(self, every=2.0):
        self.every, self.samples, self._stop = every, [], threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)

    def _loop(self):
        while True:
            self.samples.append((time.time(), os.getloadavg()[0]))
            if self._stop.wait(self.every):
                return

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()

    def between(self, t0, t1):
        xs = [v for t, v in self.samples if t0 <= t <= t1] or [os.getloadavg()[0]]
        return {"mean": sum(xs) / len(xs), "max": max(xs), "samples": len(xs)}


class Context:
    """What a bench's ``evidence(ctx)`` gets: ``params``, ``seeds``, ``arms`` (the ones to run:
    reused arms are left out), ``quick``, ``workdir`` (scratch, removed afterwards), ``root``; and
    :meth:`measure`, :meth:`table`, :meth:`figure`, :meth:`note`, :meth:`progress`."""

    def __init__(self, protocol, quick, workdir, root, sampler, show_progress=True):
        self.protocol, self.quick, self.workdir, self.root = protocol, quick, workdir, root
        self.params = protocol.params(quick)
        self.seeds = protocol.seeds(quick)
        reused = protocol.data.get("reuses") or {}
        self.arms = [a for a in protocol.arms() if a not in reused]
        self.runs, self.tables, self.notes, self.figures = [], {}, {}, []
        self._sampler, self._show = sampler, show_progress

    def progress(self, iterable, desc=None, total=None):
        from ..utils.progress import progress
        return progress(iterable, total=total, desc=desc or self.protocol.name, enabled=self._show)

    def measure(self, arm, seed, fn):
        """Run ``fn()`` (one arm on one seed), which returns a dict of metrics (numbers, lists, or
        None for "not reached"); recorded with its wall time and the machine's load meanwhile."""
        if arm not in self.protocol.arms():
            raise ValueError(f"arm {arm!r} is not in the protocol's compared list {self.protocol.arms()}")
        t0 = time.time()
        load0 = os.getloadavg()[0]
        metrics = fn()
        t1 = time.time()
        if not isinstance(metrics, dict):
            raise TypeError(f"{self.protocol.bench}: a run must return a dict of metrics, got {type(metrics).__name__}")
        self.runs.append({"arm": arm, "seed": seed, "metrics": metrics, "wall_s": t1 - t0,
                          "load": {"start": load0, **self._sampler.between(t0, t1)}})
        return metrics

    def table(self, name, columns, rows, caption=None):
        """A table for the docs (``bench render``): column headers and rows of cells (strings or
        numbers, written as given)."""
        self.tables[name] = {"columns": list(columns), "rows": [[c for c in r] for r in rows],
                             "caption": caption}

    def figure(self, suffix):
        """A path in the scratch folder for a plot; it is kept beside the result as
        ``<stem><suffix>`` (e.g. ``.png``)."""
        path = os.path.join(self.workdir, f"figure{len(self.figures)}{suffix}")
        self.figures.append((suffix, path))
        return path

    def note(self, key, value):
        self.notes[key] = value

    def values(self, arm, metric):
        return {r["seed"]: r["metrics"].get(metric) for r in self.runs if r["arm"] == arm}


def _fmt(x):
    if x is None:
        return "n/a"
    if isinstance(x, float):
        return f"{x:.4g}"
    return str(x)


def evaluate(criterion, runs):
    """The statistics and outcome of one criterion over ``runs`` (records with arm, seed,
    metrics): values paired by seed; a seed where either side has no value (e.g. a target never
    reached) is counted, and the outcome is then inconclusive."""
    c = criterion
    metric, a, b = c["metric"], c["a"], c.get("b")
    va = {r["seed"]: r["metrics"].get(metric) for r in runs if r["arm"] == a}
    vb = {r["seed"]: r["metrics"].get(metric) for r in runs if r["arm"] == b} if b is not None else None
    seeds = sorted(set(va) & set(vb)) if vb is not None else sorted(va)
    missing = [s for s in seeds if va[s] is None or (vb is not None and vb[s] is None)]
    use = [s for s in seeds if s not in missing]
    xa = [va[s] for s in use]
    xb = [vb[s] for s in use] if vb is not None else None
    level, method, scale = c.get("level", 0.95), c.get("interval", "t"), c.get("scale", "absolute")
    hib = c.get("higher_is_better", True)
    out = {"id": c["id"], "statement": c["statement"], "metric": metric, "a": a, "b": b, "seeds": use,
           "missing": missing, "test": c["test"], "margin": c.get("margin"), "value": c.get("value"),
           "a_summary": stats.summary(xa), "b_summary": stats.summary(xb) if xb is not None else None}
    if not use:
        out.update(interval=None, verdict="no values", outcome="inconclusive")
        return out
    iv = stats.paired_interval(xa, xb, level=level, method=method, scale=scale)
    null = 0.0
    if xb is None and c["test"] in ("at_most", "at_least"):
        null = c["value"]
    out["interval"] = iv
    out["verdict"] = stats.verdict(iv, higher_is_better=hib, null=null)
    out["outcome"] = "inconclusive" if missing else stats.decide(c["test"], iv, higher_is_better=hib,
                                                                   margin=c.get("margin"), value=c.get("value"))
    return out


def _criteria_table(results):
    rows = []
    for r in results:
        iv = r["interval"] or {}
        a, b = r["a_summary"], r["b_summary"]

        def ms(s):
            if not s or s["n"] == 0:
                return "n/a"
            return _fmt(s["mean"]) + (f" ± {_fmt(s['std'])}" if s["std"] is not None else "")
        if iv.get("scale") == "log" and iv.get("paired"):
            diff = f"x{_fmt(iv.get('ratio'))} [{_fmt(iv.get('ratio_low'))}, {_fmt(iv.get('ratio_high'))}]"
        else:
            diff = f"{_fmt(iv.get('mean'))} [{_fmt(iv.get('low'))}, {_fmt(iv.get('high'))}]" if iv else "n/a"
        rows.append([r["id"], r["metric"], f"{r['a']}: {ms(a)}", f"{r['b']}: {ms(b)}" if r["b"] else "-",
                     diff, r["verdict"], r["outcome"]])
    return {"columns": ["criterion", "metric", "a (mean ± sd)", "b (mean ± sd)",
                        "paired difference [95% interval]", "verdict", "criterion outcome"],
            "rows": rows, "caption": None}


def _load_bench(root, bench):
    path = os.path.join(root, "bench", f"{bench}.py")
    if not os.path.isfile(path):
        raise UserError(f"the protocol's bench {bench!r} has no file bench/{bench}.py")
    bench_dir = os.path.dirname(path)
    if bench_dir not in sys.path:
        sys.path.insert(0, bench_dir)
    spec = importlib.util.spec_from_file_location(f"_bench_{bench}", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    if not hasattr(mod, "evidence"):
        raise UserError(f"bench/{bench}.py has no evidence(ctx) function; it cannot run a protocol")
    return mod


def _reused_runs(root, results_dir, protocol, seeds):
    runs, named = [], {}
    for arm, src in (protocol.data.get("reuses") or {}).items():
        path, res = store.latest(results_dir, src["protocol"])
        if res is None:
            raise UserError(f"protocol {protocol.name} reuses arm {src.get('arm', arm)!r} of {src['protocol']}, "
                            f"which has no result yet; run 'gluon-suite bench run {src['protocol']}' first")
        got = [dict(r, arm=arm, reused_from=src.get("arm", arm)) for r in res["runs"]
               if r["arm"] == src.get("arm", arm) and r["seed"] in seeds]
        named[arm] = {"file": os.path.relpath(path, root), "sha256": store.file_sha256(path),
                      "arm": src.get("arm", arm), "protocol": src["protocol"], "seeds": [r["seed"] for r in got]}
        runs += got
    return runs, named


def run(name, quick=False, root=None, results_dir=None, allow_dirty=False, show_progress=True, log=print,
        only_seeds=None):
    """Run protocol ``name``; returns (path of the new result file, result). ``only_seeds``: a subset of
    the protocol's seeds, for a claim whose full run does not fit (the result is marked partial)."""
    root = root or find_root()
    proto = protocols.load(root, name)
    if proto.retired:
        raise UserError(f"protocol {name} is retired and is not run: {' '.join(proto.retired.split())}")
    git = git_state(root, proto.path)
    if not quick and not allow_dirty:
        if not git.get("protocol_committed"):
            raise UserError(f"{proto.path} is not committed as it stands: a protocol is committed before its first "
                            f"run (commit it, or use --quick to try it)")
        if git["dirty"]:
            raise UserError("the checkout has uncommitted changes: a result names the commit it ran on; commit or "
                            "stash them (or pass --allow-dirty, which marks the result as such)")
    if results_dir is None:
        results_dir = os.path.join(root, "runs", "bench-quick") if quick else os.path.join(root, "bench", "results")
    mod = _load_bench(root, proto.bench)
    seeds = proto.seeds(quick)
    partial = bool(only_seeds) and not quick
    if partial:
        bad = [s for s in only_seeds if s not in seeds]
        if bad:
            raise UserError(f"--seeds {','.join(map(str, bad))}: not among protocol {name}'s seeds {seeds}")
        seeds = [s for s in seeds if s in only_seeds]
    reused_runs, reused = _reused_runs(root, results_dir if not quick else os.path.join(root, "bench", "results"),
                                       proto, seeds)
    started = time.time()
    with _LoadSampler() as sampler, tempfile.TemporaryDirectory(prefix=f"bench-{name}-") as work:
        ctx = Context(proto, quick, work, root, sampler, show_progress)
        ctx.seeds = seeds
        with _cwd(root):
            mod.evidence(ctx)
        nonfinite = []
        runs = _finite(reused_runs + ctx.runs, "runs", nonfinite)
        criteria = [evaluate(c, runs) for c in proto.criteria]
        outcomes = [c["outcome"] for c in criteria]
        overall = ("holds" if all(o == "holds" for o in outcomes) else
                   "fails" if any(o == "fails" for o in outcomes) else "inconclusive")
        tables = _finite(dict(ctx.tables), "tables", nonfinite)
        tables["criteria"] = _criteria_table(criteria)
        load = sampler.between(started, time.time())
        result = {"name": name, "quick": quick, "partial": partial, "protocol_seeds": proto.seeds(quick), "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(started)),
                  "duration_s": time.time() - started, "commit": git["commit"], "dirty": git["dirty"],
                  "protocol": {"file": proto.path, "version": proto.version, "sha256": proto.sha256,
                               "claim": proto.data["claim"], "text": proto.text},
                  "params": ctx.params, "seeds": seeds, "versions": versions(),
                  "machine": {"cpus": os.cpu_count(), "platform": platform.platform(terse=True),
                              "processor": platform.machine(), "load": load},
                  "runs": runs, "reused": reused, "criteria": criteria, "verdict": overall,
                  "tables": tables, "notes": _finite(ctx.notes, "notes", nonfinite),
                  "nonfinite_values": nonfinite}
        extra = []
        for suffix, path in ctx.figures:
            if os.path.isfile(path):
                with open(path, "rb") as f:
                    extra.append((suffix, f.read()))
        out = store.write_result(results_dir, name, result, git["commit"], extra)
    said = ", ".join(f"{c['id']}: {c['outcome']}" for c in criteria)
    log(f"{name}: {overall} ({said}); wrote {os.path.relpath(out)}")
    return out, result


def _finite(obj, path, found):
    """``obj`` with every infinite or NaN float replaced by None (JSON has no such numbers, and a
    statistic cannot use them: a criterion over a missing value is inconclusive); the replaced
    values' paths are added to ``found``."""
    if isinstance(obj, float) and not math.isfinite(obj):
        found.append(f"{path}: {obj}")
        return None
    if isinstance(obj, dict):
        return {k: _finite(v, f"{path}.{k}", found) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_finite(v, f"{path}[{i}]", found) for i, v in enumerate(obj)]
    return obj


@contextlib.contextmanager
def _cwd(path):
    old = os.getcwd()
    os.chdir(path)
    try:
        yield
    finally:
        os.chdir(old)
