"""The prediction table of ``gluon-suite whatif`` and ``whatif predict``: step time, scaling factor,
network utilisation and the least compression ratio reaching the target, per worker count,
bandwidth and ratio; optionally written as JSON and plotted (scaling factor against bandwidth)."""
import os


def set_costs(prof, args):
    """Set the profile's per-byte CPU and local-allreduce costs from the flags given in ns/byte."""
    prof.comm_cpu_s_per_byte = args.comm_cpu_ns_per_byte * 1e-9
    prof.allreduce_local_s_per_byte = args.allreduce_local_ns_per_byte * 1e-9


def cluster_options(args):
    """The cluster the flags describe, as the keyword arguments of ``whatif.predict``/``advise``
    (latency in s, fusion buffer in bytes, GPUs per host, intra-host bandwidth in bytes/s, topology)."""
    return {"latency": args.latency_us * 1e-6, "fusion_bytes": int(args.fusion_mb * 1e6),
            "gpus_per_host": args.gpus_per_host, "intra_bandwidth": args.intra_host_gbps * 1e9 / 8,
            "topology": args.topology}


def prediction_table(prof, source, args):
    """Print the prediction table for the step profile ``prof`` (described as ``source``) over the
    flags' worker counts, bandwidths and compression ratios; write it as JSON with ``--json`` and
    plot scaling factor against bandwidth with ``--plot``. Returns the exit status, 0."""
    from ..whatif import min_ratio, predict
    set_costs(prof, args)
    grad_mb = sum(prof.grad_bytes) / 1e6
    print(f"{source}: forward {prof.forward_s * 1e3:.1f} ms, backward {prof.backward_s * 1e3:.1f} ms, "
          f"optimizer {prof.optimizer_s * 1e3:.1f} ms, {len(prof.grad_bytes)} gradient tensors, {grad_mb:.1f} MB")
    cl = cluster_options(args)
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
        from ..utils import write_json
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
        from ..utils.fileio import atomic_path
        ext = os.path.splitext(args.plot)[1].lstrip(".") or "png"
        with atomic_path(args.plot) as tmp:   # the folder is made; nothing half-written is left
            fig.savefig(tmp, dpi=100, format=ext)
        print(f"plot: {args.plot}")
    return 0
