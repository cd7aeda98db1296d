#!/usr/bin/env python
"""Roofline of the compressors: their encode + decode time as passes over the gradient at the
machine's memory bandwidth.

1. Memory bandwidth: a copy and a sum of one large float32 buffer, with NumPy and with MXNet; the
   largest of the four rates (a copy counts the bytes it reads and writes) is the bandwidth.
2. Per shape set (ResNet-50 v1b's 161 tensors, BERT-base's 199, the 8-tensor MLP), laid out in
   the trainer's buckets, and per compressor (fp16, bf16, sign, top-k, GRBS, random-k; error
   feedback with top-k and with sign, ``compress_feedback``; and ``cser_grbs``, the CSER (GRBS, H 4)
   step's own work around its collective on buckets of weight arrays: encode = the snapshot of the
   weights, decode = ``after_update``): encode every bucket, then decode every payload into a
   target; the time in passes = seconds x bandwidth / gradient bytes. Arm ``compiled`` runs with the compiled
   compression kernels, arm ``mxnet`` with MXNet's generic operators (the kernels bypassed).

    .venv/bin/gluon-suite bench run compress_roofline [--quick]

The protocol (bench/protocols/compress_roofline.yaml) fixes the shape sets, steps, repeats and
criteria; the runner writes the result under bench/results/compress_roofline/.
"""
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ARMS = ("compiled", "mxnet")
ROWS = ("fp16", "bf16", "sign", "topk", "grbs", "randomk", "ef_topk", "ef_sign", "cser_grbs")


def shape_sets():
    """The shape sets by name: bench/comm.py's, and the quick check's small MLP."""
    if HERE not in sys.path:
        sys.path.insert(0, HERE)
    from comm import MODELS
    dims = [784, 256, 10]
    return dict(MODELS, mlp_small=lambda: sum([[(o, i), (o,)] for i, o in zip(dims, dims[1:])], []))


def median(xs):
    import numpy as np
    return float(np.median(xs))


def timed(fn, reps):
    """Median seconds of ``fn()`` over ``reps`` calls after one untimed call (the engine drained
    before and after each)."""
    import mxnet as mx
    fn()
    mx.nd.waitall()
    ts = []
    for _ in range(reps):
        mx.nd.waitall()
        t0 = time.perf_counter()
        fn()
        mx.nd.waitall()
        ts.append(time.perf_counter() - t0)
    return median(ts)


def bandwidth(mb, reps):
    """Bytes per second of a copy (bytes read + written) and a sum (bytes read) of an ``mb`` MB
    float32 buffer, with NumPy and with MXNet."""
    import mxnet as mx
    import numpy as np
    n = int(mb * 1e6) // 4
    a = np.random.RandomState(0).standard_normal(n).astype(np.float32)
    b = np.empty_like(a)
    x = mx.nd.array(a)
    y = mx.nd.empty(x.shape)
    nbytes = 4.0 * n
    rates = {"numpy_copy": 2 * nbytes / timed(lambda: np.copyto(b, a), reps),
             "numpy_sum": nbytes / timed(lambda: a.sum(), reps),
             "mxnet_copy": 2 * nbytes / timed(lambda: x.copyto(y), reps),
             "mxnet_sum": nbytes / timed(lambda: mx.nd.sum(x), reps)}
    return rates


class _Shape:
    """What ``layout_buckets`` reads of a parameter: its shape, dtype and contexts (and, for the
    CSER row, what a bucket reads of its weights: ``_data``)."""
    dtype = "float32"

    def __init__(self, shape, data=None):
        self.shape = tuple(shape)
        self._data = [] if data is None else [data]

    def list_ctx(self):
        import mxnet as mx
        return [mx.cpu()]


def buckets_of(shapes, bucket_mb):
    """The trainer's bucket layout of ``shapes`` (trainer index = position in the set)."""
    from gluon_suite.distributed.buckets import layout_buckets
    return layout_buckets([(i, _Shape(s)) for i, s in enumerate(shapes)], bucket_mb=bucket_mb)


def compressor_step(name, ratio):
    """(encode, decode) for one compressor over a list of buckets: ``encode(buckets, grads,
    step)`` returns the payloads, ``decode(payloads, targets)`` adds each into its target."""
    import mxnet as mx
    from gluon_suite.distributed.compression import make_compressor
    if name == "cser_grbs":
        return cser_step(ratio)
    comp = make_compressor({"ef_topk": "topk", "ef_sign": "sign"}.get(name, name), ratio=ratio)
    residuals = {}

    def encode(buckets, grads, step):
        if not name.startswith("ef_"):
            return [comp.compress(g, b.key, step, layout=b) for b, g in zip(buckets, grads)]
        out = []
        for b, g in zip(buckets, grads):
            r = residuals.get(b.key)
            if r is None:
                r = residuals[b.key] = mx.nd.zeros_like(g)
            out.append(comp.compress_feedback(g, r, b.key, step, layout=b))
        return out

    def decode(payloads, targets):
        for pl, t in zip(payloads, targets):
            pl.add_to(t, pl.tensors, 1.0)
    return encode, decode


def cser_step(ratio, period=4):
    """(encode, decode) for CSER (GRBS at ``ratio``, H ``period``) on one worker: ``encode`` lays
    the buckets out again with weight arrays (once) and takes the snapshot of the weights;
    ``decode`` runs ``after_update`` with it (the weights gathered, u, C1's payload, the residual
    and model bookkeeping, C2 every ``period``-th step, the weights written back)."""
    import mxnet as mx
    from gluon_suite.distributed import LocalCommunicator, make_algorithm
    from gluon_suite.distributed.buckets import Bucket
    algo = make_algorithm("cser", compressor="grbs", ratio=ratio, period=period)
    algo.comm = LocalCommunicator()
    at = {}

    def encode(buckets, grads, step):
        if not algo.buckets:
            algo.buckets = [Bucket(b.position, [(i, _Shape(p.shape, mx.nd.random.normal(shape=p.shape)))
                                                for i, p in b.members]) for b in buckets]
            algo.err = [b.zeros() for b in algo.buckets]
        at["step"] = step
        return algo.snapshot()

    def decode(before, targets):
        algo.after_update(before, at["step"])   # u = 0 here: GRBS's work does not depend on values
    return encode, decode


def measure_set(shapes, names, ratio, bucket_mb, warmup, steps):
    """Median encode and decode seconds per compressor on ``shapes``, and the set's elements."""
    import mxnet as mx
    buckets = buckets_of(shapes, bucket_mb)
    mx.random.seed(0)
    grads = [mx.nd.random.normal(scale=1e-3, shape=(b.size,)) for b in buckets]
    targets = [mx.nd.zeros((b.size,)) for b in buckets]
    out = {}
    for name in names:
        encode, decode = compressor_step(name, ratio)
        enc, dec = [], []
        for step in range(warmup + steps):
            mx.nd.waitall()
            t0 = time.perf_counter()
            payloads = encode(buckets, grads, step)
            mx.nd.waitall()
            t1 = time.perf_counter()
            decode(payloads, targets)
            mx.nd.waitall()
            t2 = time.perf_counter()
            if step >= warmup:
                enc.append(t1 - t0)
                dec.append(t2 - t1)
            del payloads
        out[name] = {"encode_s": median(enc), "decode_s": median(dec)}
    return out, sum(b.size for b in buckets), len(buckets)


def run_arm(arm, sets, p, bw):
    """One arm's metrics: per shape set and compressor the seconds and passes; per compressor
    its largest passes over the sets."""
    from gluon_suite.distributed import native
    loaded = native.LOADED
    if arm == "compiled" and not loaded:
        return {"kernels_loaded": 0}   # no compiled arm here: every criterion has no value
    m = {"kernels_loaded": int(arm == "compiled"), "bandwidth_gbs": bw / 1e9}
    native.LOADED = arm == "compiled"
    try:
        for model, shapes in sets.items():
            got, n, nb = measure_set(shapes, p["compressors"], float(p["ratio"]), float(p["bucket_mb"]),
                                     int(p["warmup"]), int(p["steps"]))
            m[f"buckets_{model}"] = nb
            for name, t in got.items():
                total = t["encode_s"] + t["decode_s"]
                m[f"encode_{name}_{model}_s"], m[f"decode_{name}_{model}_s"] = t["encode_s"], t["decode_s"]
                m[f"passes_{name}_{model}"] = total * bw / (4.0 * n)
    finally:
        native.LOADED = loaded
    for name in p["compressors"]:
        m[f"passes_{name}"] = max(m[f"passes_{name}_{model}"] for model in sets)
    return m


def evidence(ctx):
    """The protocol bench/protocols/compress_roofline.yaml. Each "seed" is a repeat: the memory
    bandwidth, then each arm over every shape set and compressor."""
    import mxnet as mx
    from gluon_suite.distributed import native
    from gluon_suite.utils.errors import UserError
    p = ctx.params
    known = shape_sets()
    unknown = [c for c in p["compressors"] if c not in ROWS]
    if unknown:
        raise UserError(f"compress_roofline: unknown compressor row(s) {', '.join(unknown)}; known: {', '.join(ROWS)}")
    bad = [m for m in p["models"] if m not in known]
    if bad:
        raise UserError(f"compress_roofline: unknown shape set(s) {', '.join(bad)}; known: {', '.join(sorted(known))}")
    sets = {m: known[m]() for m in p["models"]}
    ctx.note("shape_sets", {m: {"tensors": len(s), "params": int(sum(_numel(x) for x in s))} for m, s in sets.items()})
    ctx.note("threads", {"cpus": os.cpu_count(), "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS"),
                         "MXNET_CPU_WORKER_NTHREADS": os.environ.get("MXNET_CPU_WORKER_NTHREADS")})
    ctx.note("kernels", {"loaded": native.LOADED, "reason": native.REASON})
    for seed in ctx.progress(ctx.seeds, desc="compress_roofline repeats"):
        mx.random.seed(seed)
        rates = bandwidth(float(p["bandwidth_mb"]), int(p["bandwidth_reps"]))
        bw = max(rates.values())
        for arm in ctx.arms:
            def one(arm=arm):
                m = run_arm(arm, sets, p, bw)
                m.update({f"bw_{k}_gbs": v / 1e9 for k, v in rates.items()})
                return m
            ctx.measure(arm, seed, one)
    _tables(ctx, list(sets), list(p["compressors"]))


def _numel(shape):
    n = 1
    for d in shape:
        n *= int(d)
    return n


def _tables(ctx, models, names):
    """Passes and milliseconds per compressor and shape set, compiled beside MXNet's operators
    (medians over the repeats), and the bandwidth measurements."""
    runs = {}
    for r in ctx.runs:
        runs.setdefault(r["arm"], []).append(r["metrics"])

    def med(arm, key):
        xs = [m.get(key) for m in runs.get(arm, []) if m.get(key) is not None]
        return median(xs) if xs else None

    def cell(x, fmt):
        return "" if x is None else fmt.format(x)
    cols, rows = ["compressor"], []
    for model in models:
        cols += [f"{model}: compiled (passes)", f"{model}: MXNet (passes)", f"{model}: compiled (ms)",
                 f"{model}: MXNet (ms)"]
    for name in names:
        row = [name]
        for model in models:
            ms = [(med(a, f"encode_{name}_{model}_s") or 0) + (med(a, f"decode_{name}_{model}_s") or 0)
                  if med(a, f"encode_{name}_{model}_s") is not None else None for a in ARMS]
            row += [cell(med("compiled", f"passes_{name}_{model}"), "{:.2f}"),
                    cell(med("mxnet", f"passes_{name}_{model}"), "{:.2f}"),
                    cell(None if ms[0] is None else 1e3 * ms[0], "{:.1f}"),
                    cell(None if ms[1] is None else 1e3 * ms[1], "{:.1f}")]
        rows.append(row)
    ctx.table("passes", cols, rows, caption=f"encode + decode of every bucket, median over {len(ctx.seeds)} "
              "repeat(s) of the median step; passes = seconds x bandwidth / gradient bytes")
    arm = "mxnet" if "mxnet" in runs else next(iter(runs), None)
    rows = [[k.replace("_", " "), cell(med(arm, f"bw_{k}_gbs"), "{:.2f}")]
            for k in ("numpy_copy", "numpy_sum", "mxnet_copy", "mxnet_sum")]
    ctx.table("bandwidth", ["measurement", "GB/s"], rows,
              caption="a copy counts the bytes it reads and writes, a sum the bytes it reads; the largest is the "
                      "bandwidth the passes use")


def main():
    sys.path.insert(0, os.path.dirname(HERE))
    from gluon_suite.cli import entry
    sys.argv = ["gluon-suite", "bench", "run", "compress_roofline", *sys.argv[1:]]
    return entry()


if __name__ == "__main__":
    main()
