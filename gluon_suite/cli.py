"""The ``gluon-suite`` command: ``info`` about the installed stack, ``zoo`` to list, download,
verify, publish, remove and purge model checkpoints, ``launch`` to start a (possibly elastic) Horovod
job, ``samples`` to write small data sets in every documented format, and ``whatif`` to predict how
a model scales on a network."""
import argparse
import json
import os
import platform
import sys

from . import __version__
from .utils.cli_run import run_cli
from .utils.errors import GluonSuiteError, UserError
from .utils.validate import (ArgumentParser, choice_of, existing_dir, existing_file, float_range, nonneg_float,
                             output_dir, output_file, positive_float, positive_int, ratio, retype)

_PACKAGES = ("mxnet", "numpy", "gluoncv", "gluonnlp", "horovod")

HOROVOD_FIX = ("rebuild it with `make setup` (or: HOROVOD_WITH_MXNET=1 HOROVOD_WITH_GLOO=1 "
               "HOROVOD_WITHOUT_MPI=1 pip install --no-build-isolation --no-cache-dir --force-reinstall "
               "horovod==0.28.1 after mxnet is installed)")


class HorovodBroken(GluonSuiteError):
    """Horovod is missing, or was built without its MXNet extension or without Gloo."""


def _version(dist):
    from importlib import metadata
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None


def horovod_build():
    """Return ``{'mxnet': bool, 'gloo': bool, 'mpi': bool}`` for the installed Horovod.

    Raises ``HorovodBroken`` with a one-line fix when Horovod or its MXNet extension cannot be loaded:
    importing ``horovod.mxnet`` loads the compiled extension, which is what breaks when Horovod was
    built before MXNet was installed, or against another MXNet.
    """
    try:
        import horovod  # noqa: F401
    except ImportError as exc:
        raise HorovodBroken(f"Horovod is not installed ({exc}); {HOROVOD_FIX}") from None
    try:
        import horovod.mxnet as hvd
    except Exception as exc:  # the extension raises ImportError, OSError or its own errors
        first = " ".join(str(exc).split())[:200]
        raise HorovodBroken(f"Horovod's MXNet extension cannot be loaded ({first}); {HOROVOD_FIX}") from None
    # the import above loaded the compiled MXNet extension: that is what "built with MXNet" means
    build = {"mxnet": True, "gloo": bool(hvd.gloo_built()), "mpi": bool(hvd.mpi_built())}
    if not (build["mxnet"] and build["gloo"]):
        missing = " and ".join(k for k in ("mxnet", "gloo") if not build[k])
        raise HorovodBroken(f"Horovod was built without {missing}; {HOROVOD_FIX}")
    return build


def info():
    """Collect versions of the stack, Horovod's build and the CPU count; raise HorovodBroken when
    Horovod cannot run MXNet jobs over Gloo."""
    facts = {
        "gluon_suite": __version__,
        "python": platform.python_version(),
        **{name: _version(name) for name in _PACKAGES},
        "cpu_count": os.cpu_count(),
    }
    try:
        import mxnet as mx
        facts["mxnet_features"] = sorted(f.name for f in mx.runtime.Features().values() if f.enabled)
    except Exception as exc:  # a broken mxnet is reported, not hidden
        raise GluonSuiteError(f"MXNet cannot be imported ({' '.join(str(exc).split())[:200]}); "
                              "reinstall the pinned stack with `make setup`") from None
    facts["horovod_build"] = horovod_build()
    from .utils.devices import device_facts
    facts["devices"] = device_facts()
    return facts


def _cmd_info(args):
    facts = info()
    if args.json:
        print(json.dumps(facts, indent=2, sort_keys=True))
        return 0
    hb = facts["horovod_build"]
    frameworks = ", ".join(n for n, k in (("MXNet", "mxnet"),) if hb[k]) or "none"
    controllers = ", ".join(n for n, k in (("Gloo", "gloo"), ("MPI", "mpi")) if hb[k]) or "none"
    rows = [("gluon_suite", facts["gluon_suite"]), ("python", facts["python"])]
    rows += [(n, facts[n] or "not installed") for n in _PACKAGES]
    dev = facts["devices"]
    gpu_ops = ", ".join(n for n, k in (("NCCL", "nccl"), ("CUDA", "cuda")) if dev["horovod_gpu_ops"][k])
    rows += [("horovod frameworks", frameworks), ("horovod controllers", controllers),
             ("horovod gpu operations", gpu_ops or "none (CPU collectives only)"),
             ("cpu count", facts["cpu_count"]),
             ("gpus", f"{len(dev['gpus_visible'])} visible, {dev['mxnet_gpus']} usable by MXNet"
              + (f" ({', '.join(dev['gpus_visible'])})" if dev["gpus_visible"] else "")),
             ("mxnet cuda / cudnn / nccl", " / ".join("yes" if dev[k] else "no" for k in
                                                      ("mxnet_cuda", "mxnet_cudnn", "mxnet_nccl")))]
    width = max(len(k) for k, _ in rows)
    for k, v in rows:
        print(f"{k:<{width}}  {v}")
    if dev["advice"]:
        print(f"note: {dev['advice']}")
    return 0


def _cmd_zoo_list(args):
    from .model_zoo import list_models
    from .model_zoo.registry import resolve
    names = list_models(args.pattern, pretrained=True if args.pretrained else None)
    if args.pattern and not names:
        from .utils.validate import suggest
        hint = suggest(args.pattern, list_models())
        which = "with published weights " if args.pretrained else ""
        raise UserError(f"no registered model {which}matches {args.pattern!r}{hint}; use a shell pattern "
                        "such as 'resnest*', or `gluon-suite zoo list` for all names")
    for n in names:
        e = resolve(n)
        print(f"{n:<28} {e.task:<16} {e.description}")
    _print_layers(args.pattern)
    return 0


def _print_layers(pattern=None):
    """The checkpoint records of both zoo layers (shipped, local) and which one each name uses."""
    import fnmatch
    from .model_zoo.registry import split_tag
    from .model_zoo.store import layered_records
    rows = [r for r in layered_records() if not r[2].get("companion")
            and (not pattern or fnmatch.fnmatch(r[0], pattern) or fnmatch.fnmatch(split_tag(r[0])[0].name, pattern))]
    if not rows:
        return
    print("\ncheckpoints (layer: shipped = the suite's catalogue, local = published on this machine):")
    for model, layer, rec, status in rows:
        note = {"shadowed": "shadowed by the local --replace record",
                "ignored": "not used: the shipped one is (published without --replace)"}.get(status, status)
        if layer == "local" and rec.get("replaces"):
            note += f", replaces shipped {rec['replaces'][:8]}"
        print(f"  {model:<28} {layer:<8} {rec.get('sha256', rec.get('sha1', ''))[:8]:<9} {note}")
    if any(r[1] == "local" for r in rows):
        print("`gluon-suite zoo remove NAME` deletes a local record (a shadowed shipped checkpoint is used again)")


def _cmd_zoo_remove(args):
    from .model_zoo.store import remove_record, shipped_records
    rec = remove_record(args.name)
    shipped = shipped_records().get(args.name)
    after = f"the shipped checkpoint ({shipped['sha256'][:8]}) is used again" if shipped \
        else "no checkpoint of this name is left on this machine"
    print(f"removed the local record of '{args.name}' ({rec['sha256'][:8]}); {after}")
    return 0


def _cmd_zoo_download(args):
    from .model_zoo.registry import split_tag
    from .model_zoo.store import checkpoint_path, fetch, gluoncv_record
    entry, key = split_tag(args.name)
    path = fetch(gluoncv_record(entry.name), args.root) if entry.weights == "gluoncv" and key is None \
        else checkpoint_path(key or entry.name, args.root)
    print(path)
    return 0


def _cmd_zoo_verify(args):
    from .model_zoo.store import cache_root, verify_cache
    results = verify_cache(args.root)
    bad = [f for f, ok in results if not ok]
    for f, ok in results:
        print(f"{'ok' if ok else 'CORRUPT'}  {f}")
    print(f"{len(results)} checkpoint(s) in {cache_root(args.root)}, {len(bad)} corrupt"
          + (" (run `gluon-suite zoo download NAME` to fetch them again)" if bad else ""))
    return 1 if bad else 0


def _cmd_zoo_publish(args):
    from .model_zoo.publish import publish
    rec = publish(args.checkpoint, args.name, args.card, args.store, url=args.url, catalogue=args.catalogue,
                  tag=args.tag, replace=args.replace)
    print(f"published {rec['file_name']} (sha256 {rec['sha256']}, {rec['size']} bytes) into {args.store}")
    return 0


def _cmd_zoo_table(args):
    from .model_zoo.table import render_markdown, render_text, write_into, zoo_rows
    rows = zoo_rows()
    if args.write:
        write_into(args.write, rows)
        print(f"wrote the table of {len(rows)} checkpoint(s) into {args.write}")
    else:
        print(render_markdown(rows) if args.markdown else render_text(rows), end="")
    return 0


def _cmd_zoo_purge(args):
    from .model_zoo.store import cache_root, purge
    n = purge(args.root)
    print(f"removed {n} file(s) from {cache_root(args.root)}")
    return 0


def _cmd_whatif(args):
    from .whatif import StepProfile, profile_model
    if args.model:
        from .model_zoo import resolve
        resolve(args.model)  # an unknown name fails now, with the closest names, before profiling
        print(f"profiling {args.model} at batch {args.batch_size} on this machine's CPU ...", flush=True)
        from .model_zoo import get_model
        prof = profile_model(get_model(args.model), args.batch_size, args.image_size, show_progress=True)
        source = f"{args.model}, batch {args.batch_size}, measured here"
    else:
        if args.forward_ms is None or args.backward_ms is None or args.param_mb is None:
            raise UserError("whatif needs a model: give --model NAME, or all of --forward-ms, --backward-ms "
                            "and --param-mb (or predict from a saved profile: whatif predict --profile FILE)")
        n = max(1, args.tensors)
        prof = StepProfile(args.forward_ms / 1e3, args.backward_ms / 1e3,
                           [args.param_mb * 1e6 / n] * n, args.optimizer_ms / 1e3)
        source = "given compute times and sizes"
    return _whatif_table(prof, source, args)


def _cmd_whatif_profile(args):
    from .model_zoo import get_model, resolve
    from .whatif.profiler import device_name, make_context, profile_model
    from .whatif.profiles import profile_record, save_profile
    resolve(args.model)
    ctx = make_context(args.ctx)   # a GPU this machine lacks fails here, before the model is built
    print(f"profiling {args.model} at batch {args.batch_size} ({args.dtype}) on {ctx} ...", flush=True)
    prof = profile_model(get_model(args.model), args.batch_size, args.image_size, repeats=args.repeats, ctx=ctx,
                         dtype=args.dtype, show_progress=True)
    rec = profile_record(prof, model=args.model, batch_size=args.batch_size, image_size=args.image_size,
                         dtype=args.dtype, device={"context": str(ctx), "name": device_name(ctx)},
                         bucket_mb=args.bucket_mb)
    save_profile(args.out, rec)
    print(f"forward {prof.forward_s * 1e3:.1f} ms, backward {prof.backward_s * 1e3:.1f} ms, optimizer "
          f"{prof.optimizer_s * 1e3:.1f} ms, {len(prof.grad_bytes)} gradient tensors in {len(rec['buckets'])} "
          f"buckets, {sum(prof.grad_bytes) / 1e6:.1f} MB; wrote {args.out}")
    return 0


def _describe(rec):
    where = rec.get("device", {}).get("name") if isinstance(rec.get("device"), dict) else None
    kind = "derived from published figures" if rec.get("source") == "derived" else "measured"
    return (f"{rec.get('model', 'a model')}, batch {rec.get('batch_size', '?')} {rec.get('dtype', '')} on "
            f"{where or 'an unnamed device'} ({kind})")


def _cmd_whatif_predict(args):
    from .whatif.profiles import load_profile
    prof, rec = load_profile(args.profile)
    return _whatif_table(prof, _describe(rec), args)


def _cmd_whatif_advise(args):
    from .whatif.advise import advise, candidate_list
    from .whatif.profiles import load_profile
    prof, rec = load_profile(args.profile)
    _set_costs(prof, args)
    cands = candidate_list(args.candidates, grad_dtype=rec.get("dtype", "float32"), ratios=args.cser_ratios,
                           period=args.period)
    print(f"{_describe(rec)}; target scaling factor {args.target_sf}")
    out = []
    for w in args.workers:
        for b in args.bandwidth_gbps:
            a = advise(prof, w, b * 1e9 / 8, args.target_sf, cands, **_cluster(args))
            out.append({**a, "bandwidth_gbps": b})
            c = a["choice"]
            verdict = "reaches" if a["reached"] else "does NOT reach (best possible)"
            print(f"{w} GPUs ({w // args.gpus_per_host} hosts), {b:g} Gbit/s: {c['name']} {verdict} SF "
                  f"{c['scaling_factor']:.3f} (ratio {c['ratio']:.2f}); flags: {c['flags'] or '(none)'}")
    if args.json:
        from .utils import write_json
        write_json(args.json, {"profile": rec, "target_sf": args.target_sf, "advice": out})
    return 0


def _set_costs(prof, args):
    prof.comm_cpu_s_per_byte = args.comm_cpu_ns_per_byte * 1e-9
    prof.allreduce_local_s_per_byte = args.allreduce_local_ns_per_byte * 1e-9


def _cluster(args):
    return {"latency": args.latency_us * 1e-6, "fusion_bytes": int(args.fusion_mb * 1e6),
            "gpus_per_host": args.gpus_per_host, "intra_bandwidth": args.intra_host_gbps * 1e9 / 8,
            "topology": args.topology}


def _whatif_table(prof, source, args):
    from .whatif import min_ratio, predict
    _set_costs(prof, args)
    grad_mb = sum(prof.grad_bytes) / 1e6
    print(f"{source}: forward {prof.forward_s * 1e3:.1f} ms, backward {prof.backward_s * 1e3:.1f} ms, "
          f"optimizer {prof.optimizer_s * 1e3:.1f} ms, {len(prof.grad_bytes)} gradient tensors, {grad_mb:.1f} MB")
    cl = _cluster(args)
    lat, fusion = cl.pop("latency"), cl.pop("fusion_bytes")
    hosts = args.gpus_per_host > 1
    rows = []
    print(f"{'workers':>7} {'Gbit/s':>7} {'ratio':>6} {'step ms':>9} {'scaling':>8} {'net util':>9} "
          f"{'min ratio for SF ' + str(args.target_sf):>22}" + ("  allreduce" if hosts else ""))
    for w in args.workers:
        for b in args.bandwidth_gbps:
            bw = b * 1e9 / 8
            need = min_ratio(prof, w, bw, args.target_sf, lat, fusion, **cl)
            for c in args.ratios:
                r = predict(prof, w, bw, lat, c, fusion, **cl)
                rows.append({**r, "bandwidth_gbps": b, "min_ratio": need})
                print(f"{w:>7} {b:>7g} {c:>6g} {r['step_s'] * 1e3:>9.1f} {r['scaling_factor']:>8.3f} "
                      f"{r['network_utilisation']:>9.3f} {('%.1f' % need) if need else 'not reachable':>22}"
                      + (f"  {r['topology']}" if hosts else ""))
    if args.json:
        from .utils import write_json
        write_json(args.json, {"profile": {"forward_s": prof.forward_s, "backward_s": prof.backward_s,
                                           "optimizer_s": prof.optimizer_s, "grad_bytes": prof.grad_bytes,
                                           "comm_cpu_s_per_byte": prof.comm_cpu_s_per_byte,
                                           "allreduce_local_s_per_byte": prof.allreduce_local_s_per_byte},
                               "source": source, "latency_s": lat, "fusion_bytes": fusion,
                               "gpus_per_host": args.gpus_per_host, "intra_host_gbps": args.intra_host_gbps,
                               "topology": args.topology, "rows": rows})
    if args.plot:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        w = max(args.workers)
        grid = [10 ** (i / 10) for i in range(-10, 31)]  # 0.1 .. 1000 Gbit/s
        fig, ax = plt.subplots(figsize=(6, 4))
        for c in args.ratios:
            ax.plot(grid, [predict(prof, w, g * 1e9 / 8, lat, c, fusion, **cl)["scaling_factor"] for g in grid],
                    label=f"ratio {c:g}")
        ax.set_xscale("log")
        ax.set_xlabel("bandwidth (Gbit/s)")
        ax.set_ylabel(f"scaling factor, {w} workers")
        ax.set_ylim(0, 1.05)
        ax.legend()
        fig.tight_layout()
        from .utils.fileio import atomic_path
        ext = os.path.splitext(args.plot)[1].lstrip(".") or "png"
        with atomic_path(args.plot) as tmp:   # the folder is made; nothing half-written is left
            fig.savefig(tmp, dpi=100, format=ext)
        print(f"plot: {args.plot}")
    return 0


def _cmd_samples(args):
    """Write the sample data sets under ``args.out`` and print what each folder holds."""
    from .cv.samples import write_image_folder
    from .graph.samples import write_linqs, write_reddit, write_tu
    from .nlp.samples import write_glue_pairs, write_squad
    out = args.out
    try:
        write_squad(os.path.join(out, "squad"))
        write_glue_pairs(os.path.join(out, "glue"))
        write_linqs(os.path.join(out, "cora"))
        write_tu(os.path.join(out, "tu"))
        write_reddit(os.path.join(out, "reddit"))
        write_image_folder(os.path.join(out, "images"))
    except OSError as exc:
        raise UserError(f"cannot write the samples under {out}: {exc.strerror or exc}") from None
    for sub, what in (("squad", "train-v1.1.json, dev-v1.1.json (SQuAD v1.1)"),
                      ("glue", "train.tsv, dev.tsv (GLUE-style: label, sentence1, sentence2)"),
                      ("cora", "cora.content, cora.cites (LINQS citation graph)"),
                      ("tu", "SHAPES_*.txt (TU graph classification)"),
                      ("reddit", "reddit_graph.npz, reddit_data.npz (Reddit's arrays)"),
                      ("images", "train/<class>/, val/<class>/ (image folder)")):
        print(f"{os.path.join(out, sub)}: {what}")
    return 0


def _cmd_launch(args):
    from .distributed.launch import launch
    return launch(args)


def plot_file(text):
    """An argparse type: a writable image path whose suffix matplotlib can write."""
    path = output_file(text)
    if os.path.splitext(path)[1].lower() not in (".png", ".pdf", ".svg", ".jpg", ".jpeg"):
        raise argparse.ArgumentTypeError(f"{text} must end in .png, .pdf, .svg or .jpg (the image format); "
                                         "use e.g. scaling.png")
    return path


def _whatif_cluster_args(p):
    """The cluster a prediction is for: workers, links, hosts, collective costs."""
    p.add_argument("--workers", type=positive_int, nargs="+", default=[2, 4, 8, 16], help="GPUs (workers) in all")
    p.add_argument("--bandwidth-gbps", type=positive_float, nargs="+", default=[1, 10, 25, 100],
                   help="network bandwidth of each host, Gbit/s")
    p.add_argument("--gpus-per-host", type=positive_int, default=1,
                   help="GPUs per host (workers must be a multiple); > 1 models the intra-host link and the "
                        "allreduce --topology")
    p.add_argument("--intra-host-gbps", type=positive_float, default=1200.0,
                   help="intra-host link per GPU, Gbit/s (default 1200: V100 NVLink, 150 GB/s each way; PCIe 3.0 "
                        "x16: about 100)")
    p.add_argument("--topology", type=choice_of(("best", "flat", "hierarchical"), "topology"), default="best",
                   help="allreduce across hosts: flat ring, hierarchical (reduce in the host, ring across hosts, "
                        "broadcast in the host), or best: the faster (default)")
    p.add_argument("--latency-us", type=positive_float, default=5.0, help="per-message latency")
    p.add_argument("--fusion-mb", type=positive_float, default=64.0, help="tensor fusion buffer")
    p.add_argument("--comm-cpu-ns-per-byte", type=nonneg_float, default=0.0,
                   help="CPU time communication takes from compute per byte a worker sends (0: the workers "
                        "have spare cores for it; bench/whatif_validation.py measures it on the testbed)")
    p.add_argument("--allreduce-local-ns-per-byte", type=nonneg_float, default=0.0,
                   help="time an allreduce takes per byte of a bucket beyond its wire time (copies, reductions; "
                        "measured with the link unthrottled, see docs/whatif.md; 0: none)")


def _whatif_table_args(p):
    """What the prediction table shows and writes."""
    p.add_argument("--ratios", type=ratio, nargs="+", default=[1, 2, 4, 8],
                   help="compression ratios to predict for (1: dense)")
    p.add_argument("--target-sf", type=float_range(0, 1, low_open=True, what="a scaling factor"), default=0.9,
                   help="scaling factor to reach: the table names the least ratio reaching it")
    p.add_argument("--plot", type=plot_file, help="PNG: scaling factor vs bandwidth per ratio")
    p.add_argument("--json", type=output_file, help="write the predictions as JSON")


def build_parser():
    """The argument parser of ``gluon-suite``."""
    p = ArgumentParser(prog="gluon-suite", description=" ".join(__doc__.split()).replace("``", "'"))
    p.add_argument("--version", action="version", version=f"gluon-suite {__version__}")
    sub = p.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    pi = sub.add_parser("info", help="versions of the stack and Horovod's build (MXNet, Gloo)")
    pi.add_argument("--json", action="store_true", help="print the facts as JSON")
    pi.set_defaults(func=_cmd_info)

    pz = sub.add_parser("zoo", help="list, download, verify, publish, remove, tabulate or purge model checkpoints")
    zsub = pz.add_subparsers(dest="zoo_command", metavar="ZOO_COMMAND")
    zsub.required = True
    root_help = "checkpoint cache (default: $GLUON_SUITE_HOME/models)"
    zl = zsub.add_parser("list", help="registered models, and the checkpoint records of each layer")
    zl.add_argument("pattern", nargs="?", help="shell-style filter, e.g. 'resnest*'")
    zl.add_argument("--pretrained", action="store_true", help="only models with published weights")
    zl.set_defaults(func=_cmd_zoo_list)
    zd = zsub.add_parser("download", help="fetch and verify a model's checkpoint into the cache")
    zd.add_argument("name")
    zd.add_argument("--root", type=output_dir, help=root_help)
    zd.set_defaults(func=_cmd_zoo_download)
    zv = zsub.add_parser("verify", help="re-hash every cached checkpoint")
    zv.add_argument("--root", type=existing_dir, help=root_help)
    zv.set_defaults(func=_cmd_zoo_verify)
    zp = zsub.add_parser("publish", help="put a trained checkpoint into a zoo store")
    zp.add_argument("checkpoint", type=existing_file, help="a .params file written by net.save_parameters")
    zp.add_argument("--name", required=True, help="registered model name")
    zp.add_argument("--card", required=True, type=existing_file, help="the model card, e.g. model_zoo/NAME.json")
    zp.add_argument("--store", required=True, type=output_dir, help="the store folder to publish into")
    zp.add_argument("--url", help="base URL the store is served from (default: file:// of --store)")
    zp.add_argument("--catalogue", action="store_true",
                    help="maintainers: also record it in the suite's own catalogue (with --store model_zoo/store "
                    "--url repo:model_zoo/store for a checkpoint shipped in the source tree)")
    zp.add_argument("--tag", help="publish as NAME.TAG, a checkpoint name of its own (loaded with "
                    "get_model('NAME.TAG', pretrained=True)); the way to publish beside a shipped checkpoint")
    zp.add_argument("--replace", action="store_true",
                    help="make this checkpoint win over the shipped one of the same name on this machine "
                    "(`zoo remove NAME` undoes it)")
    zp.set_defaults(func=_cmd_zoo_publish)
    zx = zsub.add_parser("remove", help="delete a record published on this machine (restores a shipped one it shadowed)")
    zx.add_argument("name", help="the record's name (NAME or NAME.TAG), as `zoo list` shows it")
    zx.set_defaults(func=_cmd_zoo_remove)
    zt = zsub.add_parser("table", help="one row per published checkpoint: metric, hash, size, command, log")
    zt.add_argument("--markdown", action="store_true", help="print the Markdown table of docs/model_zoo.md")
    zt.add_argument("--write", metavar="FILE", help="replace the table between FILE's zoo-table markers")
    zt.set_defaults(func=_cmd_zoo_table)
    zr = zsub.add_parser("purge", help="delete the checkpoint cache")
    zr.add_argument("--root", type=existing_dir, help=root_help)
    zr.set_defaults(func=_cmd_zoo_purge)

    pl = sub.add_parser("launch", help="start a (possibly elastic) Horovod job, with checks and one-line errors",
                        description="Start a Horovod job over Gloo; elastic with --min-np/--max-np and a "
                        "host-discovery script. Example: gluon-suite launch --min-np 2 --max-np 3 "
                        "--host-discovery-script scripts/distributed/discover_hosts.sh --network-interface lo "
                        "-- python scripts/cv/train_classification.py --elastic")
    from .distributed.launch import add_arguments
    add_arguments(pl)
    retype(pl, np=positive_int, min_np=positive_int, max_np=positive_int, elastic_timeout=positive_int)
    pl.set_defaults(func=_cmd_launch)

    ps = sub.add_parser("samples", help="write small data sets in every documented file format (SQuAD, GLUE "
                        "TSV, LINQS citations, TU graphs, Reddit arrays, image folder)")
    ps.add_argument("--out", type=output_dir, default="data", help="folder to fill (default: data, which git ignores)")
    ps.set_defaults(func=_cmd_samples)

    pw = sub.add_parser("whatif", help="predict scaling factor and needed compression for a model on a network",
                        description="Predict how a model scales on a cluster. Profile a zoo model on this CPU "
                        "(--model) or give its compute times; or use the subcommands: 'profile' saves a profile "
                        "(here, or on a GPU machine), 'predict' predicts from a saved or bundled profile, "
                        "'advise' picks the compression that reaches a target scaling factor.")
    pw.add_argument("--model", help="zoo model to profile on this CPU (or give the compute times)")
    pw.add_argument("--batch-size", type=positive_int, default=32, help="images per step per worker (with --model)")
    pw.add_argument("--image-size", type=positive_int, default=224, help="input height and width (with --model)")
    pw.add_argument("--forward-ms", type=positive_float, help="forward time of one step (instead of --model)")
    pw.add_argument("--backward-ms", type=positive_float, help="backward time of one step (instead of --model)")
    pw.add_argument("--optimizer-ms", type=nonneg_float, default=0.0, help="optimizer update time of one step")
    pw.add_argument("--param-mb", type=positive_float, help="gradient megabytes per step")
    pw.add_argument("--tensors", type=positive_int, default=100, help="number of gradient tensors (with --param-mb)")
    _whatif_cluster_args(pw)
    _whatif_table_args(pw)
    pw.set_defaults(func=_cmd_whatif)
    wsub = pw.add_subparsers(dest="whatif_command", metavar="WHATIF_COMMAND")
    wsub.required = False
    wp = wsub.add_parser("profile", help="measure one training step of a zoo model and save it as a profile file")
    wp.add_argument("--model", required=True, help="zoo model name, e.g. resnet50_v1b")
    wp.add_argument("--ctx", default="cpu", help="device to profile on: cpu or gpu(N) (default: cpu)")
    wp.add_argument("--dtype", type=choice_of(("float32", "float16"), "dtype"), default="float32",
                    help="float32, or float16 (float32 master weights; needs a GPU)")
    wp.add_argument("--batch-size", type=positive_int, default=32, help="images per step on this device")
    wp.add_argument("--image-size", type=positive_int, default=224, help="input height and width")
    wp.add_argument("--repeats", type=positive_int, default=3, help="measured steps (the median is kept)")
    wp.add_argument("--bucket-mb", type=nonneg_float, default=25.0,
                    help="bucket size of the recorded trainer layout (the trainer's default: 25)")
    wp.add_argument("--out", required=True, type=output_file, help="the profile file to write (JSON)")
    wp.set_defaults(func=_cmd_whatif_profile)
    wpr = wsub.add_parser("predict", help="predict from a saved (or bundled) profile")
    wpr.add_argument("--profile", required=True,
                     help="a file from `whatif profile`, or a bundled profile's name (e.g. v100_resnet50_v1b_fp32)")
    _whatif_cluster_args(wpr)
    _whatif_table_args(wpr)
    wpr.set_defaults(func=_cmd_whatif_predict)
    wa = wsub.add_parser("advise", help="the least compression (none, fp16, CSER at a ratio) that reaches a target "
                         "scaling factor, with the training flags")
    wa.add_argument("--profile", required=True, help="a file from `whatif profile`, or a bundled profile's name")
    _whatif_cluster_args(wa)
    wa.add_argument("--candidates", nargs="+", type=choice_of(("sync", "fp16", "cser"), "candidate"),
                    default=["sync", "fp16", "cser"], help="algorithms to choose from (default: all)")
    wa.add_argument("--cser-ratios", nargs="+", type=ratio, default=[4, 8, 16, 32, 64, 128, 256],
                    help="GRBS ratios R1 of CSER's update to consider")
    wa.add_argument("--period", type=positive_int, default=8, help="CSER's error-reset period H")
    wa.add_argument("--target-sf", type=float_range(0, 1, low_open=True, what="a scaling factor"), default=0.9,
                    help="scaling factor the advice must reach")
    wa.add_argument("--json", type=output_file, help="write the advice as JSON")
    wa.set_defaults(func=_cmd_whatif_advise)
    return p


def main(argv=None):
    """Entry point of ``gluon-suite``; returns the exit status."""
    args = build_parser().parse_args(argv)
    return args.func(args)


def entry():
    """Console-script entry: run ``main`` with one-line errors."""
    run_cli(main)


if __name__ == "__main__":
    entry()
