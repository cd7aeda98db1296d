"""``gluon-suite bench``: ``list`` the protocols with their latest verdicts, ``run`` one (a new result
file under bench/results/NAME/), ``combine`` partial runs into one result, ``show`` a result, ``render`` the docs tables from the results
(``--check`` fails when one differs). docs/benchmarks.md explains it."""
import os
import sys

from ..utils.errors import UserError


def _root(args):
    from ..evidence.runner import find_root
    return find_root(args.root)


def _results_dir(args, root):
    return os.path.abspath(args.results) if args.results else os.path.join(root, "bench", "results")


def _cmd_list(args):
    from ..evidence import protocols, store
    root = _root(args)
    rdir = _results_dir(args, root)
    for name in protocols.names(root):
        p = protocols.load(root, name)
        path, res = store.latest(rdir, name)
        said = f"{res['verdict']} ({os.path.relpath(path, root)})" if res else "not run yet"
        if p.retired:
            said = f"retired ({said})"
        print(f"{name:<28} v{p.version}  {said}\n    {p.data['claim']}")
    return 0


def _cmd_run(args):
    from ..evidence import runner
    root = _root(args)
    results = os.path.abspath(args.results) if args.results else None
    only = None
    if args.seeds:
        try:
            only = [int(x) for x in args.seeds.split(",")]
        except ValueError:
            raise UserError(f"--seeds {args.seeds!r}: give seeds as comma-separated integers, e.g. --seeds 0") from None
    runner.run(args.name, quick=args.quick, root=root, results_dir=results, allow_dirty=args.allow_dirty,
               only_seeds=only)
    return 0


def _cmd_combine(args):
    from ..evidence.combine import combine
    root = _root(args)
    combine(args.name, [os.path.abspath(f) for f in args.files], root=root,
            results_dir=os.path.abspath(args.results) if args.results else None)
    return 0


def _cmd_show(args):
    from ..evidence import store
    from ..evidence.render import table_markdown
    root = _root(args)
    rdir = _results_dir(args, root)
    if args.file:
        path, res = args.file, store.read_result(args.file)
    else:
        path, res = store.latest(rdir, args.name)
        if res is None:
            raise UserError(f"no result for {args.name} under {rdir}; run 'gluon-suite bench run {args.name}'")
    print(f"{os.path.relpath(path, root)}: protocol {res['name']} v{res['protocol']['version']}, commit "
          f"{res['commit'][:7]}{' (dirty)' if res['dirty'] else ''}, {res['date']}, seeds {res['seeds']}"
          f"{', QUICK' if res['quick'] else ''}")
    print(f"claim: {res['protocol']['claim']}\nverdict: {res['verdict']}")
    for tname, t in res["tables"].items():
        print(f"\n{tname}:")
        print("\n".join(table_markdown(t)))
    return 0


def _cmd_render(args):
    from ..evidence.render import render_files
    root = _root(args)
    changed, blocks = render_files(root, _results_dir(args, root), check=args.check)
    rel = [os.path.relpath(p, root) for p in changed]
    if args.check:
        if changed:
            print(f"{len(changed)} file(s) differ from the results: {', '.join(rel)}; run 'gluon-suite bench "
                  f"render' and commit them", file=sys.stderr)
            return 1
        print(f"{blocks} rendered block(s) match the results")
        return 0
    print(f"{blocks} block(s) rendered; {len(changed)} file(s) changed{': ' + ', '.join(rel) if rel else ''}")
    return 0


def add_parser(sub):
    """Add the ``bench`` command to the subparsers ``sub`` of ``gluon-suite``."""
    pb = sub.add_parser("bench", help="run a bench protocol into a new result file, list the claims and their "
                        "verdicts, render the docs tables from the results")
    bs = pb.add_subparsers(dest="bench_command", metavar="ACTION")
    bs.required = True

    def common(p):
        p.add_argument("--root", help="the checkout holding bench/protocols (default: found from here)")
        p.add_argument("--results", help="results folder (default: bench/results; runs/bench-quick for --quick)")
    p = bs.add_parser("list", help="every protocol with its claim and latest verdict")
    common(p)
    p.set_defaults(func=_cmd_list)
    p = bs.add_parser("run", help="run a protocol; writes bench/results/NAME/<date>-<commit>.json")
    p.add_argument("name", help="protocol name (bench/protocols/NAME.yaml)")
    p.add_argument("--quick", action="store_true", help="one seed on the protocol's shortened schedule, to check "
                   "that it still works (written under runs/bench-quick, not bench/results)")
    p.add_argument("--seeds", help="run only these of the protocol's seeds (comma-separated), for a claim whose "
                   "full run does not fit; the result is marked partial")
    p.add_argument("--allow-dirty", action="store_true", help="run on uncommitted changes (the result says so)")
    common(p)
    p.set_defaults(func=_cmd_run)
    p = bs.add_parser("combine", help="one new result from partial runs (--seeds slices) of a protocol, its "
                      "criteria over all their seeds; the slices stay as they are")
    p.add_argument("name", help="protocol name")
    p.add_argument("files", nargs="+", help="the slices' result files")
    common(p)
    p.set_defaults(func=_cmd_combine)
    p = bs.add_parser("show", help="a result's claim, verdict and tables")
    p.add_argument("name", nargs="?", help="protocol name (its latest result)")
    p.add_argument("--file", help="a result file instead of the latest")
    common(p)
    p.set_defaults(func=_cmd_show)
    p = bs.add_parser("render", help="write the marked tables in README.md and docs/ from the latest results")
    p.add_argument("--check", action="store_true", help="write nothing; exit 1 when a rendered table differs")
    common(p)
    p.set_defaults(func=_cmd_render)
