"""One result from several partial runs of a protocol: ``gluon-suite bench combine NAME FILE...``.

A protocol whose full run takes longer than one sitting is run a few seeds at a time (``bench run NAME
--seeds 0,1``), each slice into its own result file marked partial. ``combine`` writes a NEW result
file whose runs are the slices' runs, each tagged with the file it came from, and whose criteria are
evaluated over all of them. Nothing is rewritten: the slices stay as they are, and the combined file
names each by path, sha256, commit and seeds. Slices combine only when they ran the same protocol
text (sha256), none is quick, dirty or itself combined, their seeds do not overlap, and the bench file
is the same at every slice's commit; the files of the package and of bench/ that changed between the
slices' commits are listed in the result, so a reader sees what else moved between them.

The bench may define ``combined_tables(runs, params, notes)`` (``notes``: the slices' notes, in
order) to rebuild its tables from the union of runs; otherwise the combined result has only the
criteria table, and the slices keep their own tables and figures. A bench whose metrics compare
runs across seeds (e.g. auto against the fixed configuration that is best over all seeds) may define
``combined_metrics(runs, params)``, which recomputes them over the union before the criteria."""
import os
import subprocess
import time

from ..utils.errors import UserError
from . import protocols, store
from .runner import _criteria_table, _finite, _load_bench, evaluate, find_root, git_state, versions


def _git(root, *args):
    p = subprocess.run(["git", *args], cwd=root, capture_output=True, text=True)
    return p.stdout.strip() if p.returncode == 0 else None


def _check_slice(path, res, proto):
    rel = os.path.basename(path)
    if res.get("name") != proto.name:
        raise UserError(f"{rel} is a result of {res.get('name')!r}, not of {proto.name}")
    if res.get("quick"):
        raise UserError(f"{rel} is a --quick run; only runs of the protocol's schedule combine")
    if res.get("dirty"):
        raise UserError(f"{rel} ran on uncommitted changes; it cannot be part of a combined result")
    if res.get("combined_from"):
        raise UserError(f"{rel} is itself combined; give the slices it was made from")
    if res["protocol"]["sha256"] != proto.sha256:
        raise UserError(f"{rel} ran protocol text {res['protocol']['sha256'][:12]}, not the current "
                        f"{proto.path} ({proto.sha256[:12]}); slices of different protocol versions do not combine")


def combine(name, files, root=None, results_dir=None, log=print):
    """Write the combined result of protocol ``name`` from the result ``files``; returns (path, result)."""
    root = root or find_root()
    proto = protocols.load(root, name)
    if len(files) < 2:
        raise UserError("combine needs at least two result files (slices of the same protocol)")
    slices, seen = [], {}
    for path in files:
        if not os.path.isfile(path):
            raise UserError(f"{path} does not exist")
        res = store.read_result(path)
        _check_slice(path, res, proto)
        for s in res["seeds"]:
            if s in seen:
                raise UserError(f"seed {s} is in both {os.path.basename(seen[s])} and {os.path.basename(path)}; "
                                "slices must not overlap")
            seen[s] = path
        slices.append((path, res))
    bench_file = f"bench/{proto.bench}.py"
    blobs = {res["commit"]: _git(root, "rev-parse", f"{res['commit']}:{bench_file}") for _, res in slices}
    if None in blobs.values():
        raise UserError(f"cannot read {bench_file} at commit {next(c for c, b in blobs.items() if b is None)[:7]} "
                        "in this checkout; combine where the slices' commits are known")
    if len(set(blobs.values())) > 1:
        raise UserError(f"{bench_file} differs between the slices' commits ({', '.join(c[:7] for c in blobs)}); "
                        "slices combine only when they ran the same bench")
    commits = list(dict.fromkeys(res["commit"] for _, res in slices))
    changed = sorted({f for a, b in zip(commits, commits[1:])
                      for f in (_git(root, "diff", "--name-only", a, b, "--", "gluon_suite", "bench") or "").split()})
    runs, nonfinite = [], []
    for path, res in slices:
        runs += [dict(r, part=os.path.relpath(path, root)) for r in res["runs"]]
    runs = _finite(runs, "runs", nonfinite)
    mod = _load_bench(root, proto.bench)
    params = slices[0][1]["params"]
    if hasattr(mod, "combined_metrics"):   # metrics that compare runs across seeds, over the union
        mod.combined_metrics(runs, params)
    criteria = [evaluate(c, runs) for c in proto.criteria]
    outcomes = [c["outcome"] for c in criteria]
    overall = ("holds" if all(o == "holds" for o in outcomes) else
               "fails" if any(o == "fails" for o in outcomes) else "inconclusive")
    tables = {}
    if hasattr(mod, "combined_tables"):
        tables = _finite(mod.combined_tables(runs, params, [res["notes"] for _, res in slices]), "tables", nonfinite)
    tables["criteria"] = _criteria_table(criteria)
    seeds = sorted(seen)
    git = git_state(root, proto.path)
    result = {"name": name, "quick": False, "partial": seeds != proto.seeds(), "protocol_seeds": proto.seeds(),
              "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "duration_s": sum(
                  res.get("duration_s", 0.0) for _, res in slices), "commit": git["commit"], "dirty": git["dirty"],
              "protocol": {"file": proto.path, "version": proto.version, "sha256": proto.sha256,
                           "claim": proto.data["claim"], "text": proto.text},
              "params": params, "seeds": seeds, "versions": versions(),
              "combined_from": [{"file": os.path.relpath(p, root), "sha256": store.file_sha256(p),
                                 "commit": r["commit"], "seeds": r["seeds"], "date": r["date"]} for p, r in slices],
              "changed_between_slices": changed, "machine": slices[0][1].get("machine"),
              "runs": runs, "reused": {}, "criteria": criteria, "verdict": overall, "tables": tables,
              "notes": {"slices": [res["notes"] for _, res in slices]}, "nonfinite_values": nonfinite}
    out = store.write_result(results_dir or os.path.join(root, "bench", "results"), name, result, git["commit"])
    said = ", ".join(f"{c['id']}: {c['outcome']}" for c in criteria)
    log(f"{name}: {overall} over seeds {seeds} ({said}); combined {len(slices)} slices into {os.path.relpath(out)}")
    return out, result
