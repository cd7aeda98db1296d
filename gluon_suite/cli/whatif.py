"""``gluon-suite whatif``: predict how a model scales on a network from a profile measured here
(``--model``), given compute times, or a saved profile (``whatif profile`` / ``predict``), and
``whatif advise``: the least compression that reaches a target scaling factor, with its flags."""
import argparse
import os

from ..utils.errors import UserError
from ..utils.validate import (choice_of, float_range, nonneg_float, output_file, positive_float, positive_int,
                              ratio)
from .whatif_table import cluster_options, prediction_table, set_costs


def _cmd_whatif(args):
    from ..whatif import StepProfile, profile_model
    if args.model:
        from ..model_zoo import resolve
        resolve(args.model)  # an unknown name fails now, with the closest names, before profiling
        print(f"profiling {args.model} at batch {args.batch_size} on this machine's CPU ...", flush=True)
        from ..model_zoo import get_model
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
    return prediction_table(prof, source, args)


def _cmd_whatif_profile(args):
    from ..model_zoo import get_model, resolve
    from ..whatif.profiler import device_name, make_context, profile_model
    from ..whatif.profiles import profile_record, save_profile
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
    from ..whatif.profiles import load_profile
    prof, rec = load_profile(args.profile)
    return prediction_table(prof, _describe(rec), args)


def _cmd_whatif_advise(args):
    from ..whatif.advise import advise, candidate_list
    from ..whatif.profiles import load_profile
    prof, rec = load_profile(args.profile)
    set_costs(prof, args)
    cands = candidate_list(args.candidates, grad_dtype=rec.get("dtype", "float32"), ratios=args.cser_ratios,
                           period=args.period)
    print(f"{_describe(rec)}; target scaling factor {args.target_sf}")
    out = []
    for w in args.workers:
        for b in args.bandwidth_gbps:
            a = advise(prof, w, b * 1e9 / 8, args.target_sf, cands, **cluster_options(args))
            out.append({**a, "bandwidth_gbps": b})
            c = a["choice"]
            verdict = "reaches" if a["reached"] else "does NOT reach (best possible)"
            print(f"{w} GPUs ({w // args.gpus_per_host} hosts), {b:g} Gbit/s: {c['name']} {verdict} SF "
                  f"{c['scaling_factor']:.3f} (ratio {c['ratio']:.2f}); flags: {c['flags'] or '(none)'}")
    if args.json:
        from ..utils import write_json
        write_json(args.json, {"profile": rec, "target_sf": args.target_sf, "advice": out})
    return 0


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


def add_parser(sub):
    """Add the ``whatif`` command and its subcommands to the subparsers ``sub`` of ``gluon-suite``."""
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
