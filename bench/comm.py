#!/usr/bin/env python
"""Communication benchmark of the distributed layer on real models' parameter shapes.

What one trainer step costs (``trainer.step`` with the gradients given, so that the layer's own
cost is not hidden behind a model's compute), per algorithm x compressor:

1. 1 worker, each shape set (ResNet-50 v1b: 161 tensors, 25.6M; BERT-base: 199 tensors, 110M;
   the 8-tensor MLP): DistributedTrainer vs plain ``gluon.Trainer``.
2. Tensor-count fit: the same total size (ResNet-50's) cut into 8 / 161 / 800 equal tensors;
   step time = a + b x tensors, per configuration, and the same for the extra time over
   ``gluon.Trainer``.
3. Compute floor of each compressor: the bare MXNet operators of its definition on one flat
   vector of ResNet-50's size, against our compressor (compress + decompress) on the same vector.
4. 2 workers on loopback (horovodrun --gloo), each shape set: every configuration against stock
   ``horovod.mxnet.DistributedTrainer`` and against ``sync``; wire bytes from the counters.

    .venv/bin/python bench/comm.py [--models resnet50_v1b,mlp] [--two-worker-models resnet50_v1b]

Writes bench/results/comm.json and prints tables. Times are medians over the measured steps.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
RESULTS = os.path.join(HERE, "results", "comm.json")
OPT = {"learning_rate": 0.01, "momentum": 0.9}

CONFIGS = [
    ("sync", dict(algorithm="sync")),
    ("sync+fp16", dict(algorithm="sync", compressor="fp16")),
    ("ef+topk32", dict(algorithm="ef", compressor="topk", ratio=32)),
    ("ef+sign", dict(algorithm="ef", compressor="sign")),
    ("local H=8", dict(algorithm="local", period=8)),
    ("cser grbs 32/H4", dict(algorithm="cser", compressor="grbs", ratio=32, period=4)),
    ("cser randomk 32/H4", dict(algorithm="cser", compressor="randomk", ratio=32, period=4)),
    ("cser-pl grbs 16/H4", dict(algorithm="cser", compressor="zero", compressor2="grbs", ratio2=16, period=4)),
]


# ---- shape sets ------------------------------------------------------------------------------
def resnet50_shapes():
    """Trainable parameter shapes of GluonCV's resnet50_v1b, in network order."""
    import mxnet as mx
    from gluoncv.model_zoo import get_model
    net = get_model("resnet50_v1b", pretrained=False)
    net.initialize()
    net(mx.nd.zeros((1, 3, 224, 224)))
    return [tuple(p.shape) for p in net.collect_params().values() if p.grad_req != "null"]


def bert_base_shapes(vocab=30522, units=768, hidden=3072, layers=12, max_len=512):
    """BERT-base's trainable shapes (GluonNLP's bert_12_768_12 encoder with pooler): embeddings,
    12 x (Q, K, V, output projection, 2 layer norms, 2 FFN layers), pooler."""
    s = [(vocab, units), (2, units), (max_len, units), (units,), (units,)]
    for _ in range(layers):
        s += [(units, units), (units,)] * 4 + [(units,), (units,)]
        s += [(hidden, units), (hidden,), (units, hidden), (units,), (units,), (units,)]
    return s + [(units, units), (units,)]


def mlp_shapes():
    """The 8-tensor MLP 784-2048-2048-2048-10 (10.1M parameters)."""
    dims = [784, 2048, 2048, 2048, 10]
    return sum([[(o, i), (o,)] for i, o in zip(dims, dims[1:])], [])


def equal_shapes(total, count, cols=100):
    """``count`` tensors of equal size (rows x cols), together about ``total`` elements."""
    return [(max(1, round(total / count / cols)), cols)] * count


MODELS = {"resnet50_v1b": resnet50_shapes, "bert_base": bert_base_shapes, "mlp": mlp_shapes}


def numel(shapes):
    import numpy as np
    return int(sum(np.prod(s) for s in shapes))


# ---- timing ----------------------------------------------------------------------------------
def make_params(shapes, seed=0):
    import mxnet as mx
    from mxnet import gluon
    mx.random.seed(seed)
    params = [gluon.Parameter(f"p{k:04d}", shape=s) for k, s in enumerate(shapes)]
    for p in params:
        p.initialize(mx.init.Normal(0.05))
    grads = [mx.nd.random.normal(scale=1e-3, shape=s) for s in shapes]
    return params, grads


def time_trainer(params, grads, trainer, steps, warmup=2):
    """Median seconds of ``trainer.step`` with the given gradients (written before the clock)."""
    import mxnet as mx
    import numpy as np
    times = []
    for s in range(warmup + steps):
        for p, g in zip(params, grads):
            g.copyto(p.grad())
            p.data()._fresh_grad = True
        mx.nd.waitall()
        t0 = time.perf_counter()
        trainer.step(32)
        mx.nd.waitall()
        if s >= warmup:
            times.append(time.perf_counter() - t0)
    return float(np.median(times)) if times else float("nan")


def build(kind, params, comm=None):
    from mxnet import gluon
    if kind == "gluon.Trainer":
        return gluon.Trainer(params, "sgd", dict(OPT))
    if kind == "horovod DistributedTrainer":
        import horovod.mxnet as hvd
        return hvd.DistributedTrainer({p.name: p for p in params}, "sgd", dict(OPT))
    from gluon_suite.distributed import DistributedTrainer
    spec = dict(dict(CONFIGS)[kind])
    spec["name"] = spec.pop("algorithm")
    return DistributedTrainer(params, "sgd", dict(OPT), communicator=comm, algorithm=spec)


def single_worker(shapes, kinds, steps):
    """1 worker: median step seconds of each trainer kind on ``shapes``."""
    from gluon_suite.distributed import LocalCommunicator
    out = {}
    for kind in kinds:
        params, grads = make_params(shapes)
        out[kind] = time_trainer(params, grads, build(kind, params, LocalCommunicator()), steps)
    return out


def fit(xs, ys):
    import numpy as np
    b, a = np.polyfit(np.asarray(xs, float), np.asarray(ys, float), 1)
    return float(a), float(b)


def compute_floors(n, reps=5):
    """Each compressor's bare operators on one flat vector of ``n`` elements (compress, then add
    the decompressed payload into a target) vs our compressor doing the same."""
    import math
    import mxnet as mx
    import numpy as np
    from gluon_suite.distributed.bitpack import mean_abs
    from gluon_suite.distributed.compression import make_compressor
    v = mx.nd.random.normal(shape=(n,))
    t = mx.nd.zeros((n,))
    k32 = int(math.ceil(n / 32))
    ridx = mx.nd.array(np.sort(np.random.RandomState(0).choice(n, k32, replace=False)), dtype="int64")
    where = ridx.reshape((1, -1))

    def fp16():
        t.__iadd__(v.astype("float16").astype("float32"))

    def grbs():
        b, e = n // 2, n // 2 + k32
        mx.nd._internal._slice_assign(t, mx.nd.slice(t, begin=(b,), end=(e,)) +
                                      mx.nd.slice(v, begin=(b,), end=(e,)), begin=(b,), end=(e,), out=t)

    def randomk():
        mx.nd._internal._scatter_set_nd(t, mx.nd.take(t, ridx) + mx.nd.take(v, ridx), where,
                                        shape=(n,), out=t)

    def topk():
        idx = mx.nd.topk(mx.nd.abs(v), k=int(round(n / 64)), ret_typ="indices", dtype="int32")
        w = idx.astype("int64").reshape((1, -1))
        mx.nd._internal._scatter_set_nd(t, mx.nd.gather_nd(t, w) + mx.nd.take(v, idx), w, shape=(n,), out=t)

    def sign():  # the minimum: signs and one scale (the fastest mean |v| we found), no bit packing
        t.__iadd__(mx.nd.broadcast_mul((v >= 0) * 2 - 1, mean_abs(v)))

    def ours(name):
        comp = make_compressor(name, ratio=32)
        step = [0]

        def run():
            pl = comp.compress(v, 0, step[0])
            step[0] += 1
            pl.add_to(t, pl.tensors, 1.0)
        return run

    def med(fn):
        fn()
        mx.nd.waitall()
        ts = []
        for _ in range(reps):
            t0 = time.perf_counter()
            fn()
            mx.nd.waitall()
            ts.append(time.perf_counter() - t0)
        return float(np.median(ts))
    out = {}
    for name, floor in (("fp16", fp16), ("grbs", grbs), ("randomk", randomk), ("topk", topk), ("sign", sign)):
        f, o = med(floor), med(ours(name))
        out[name] = {"floor_s": f, "ours_s": o, "ratio": o / f}
    return out


def host_work(shapes, kinds, steps, shrink=16, warmup=5):
    """Host (Python) time of ``trainer.step`` per configuration: from the call to its return, the
    MXNet operators it pushed running on the engine's own thread off the clock. The same tensors
    at full size and with the first axis cut ``shrink`` times: host work that grows with tensor
    size (a NumPy copy, a per-element loop) shows as a ratio well above 1. The first ``warmup``
    steps (a whole CSER period and its first reset, where compressors build their look-up tables)
    are off the clock."""
    import mxnet as mx
    import numpy as np
    from gluon_suite.distributed import LocalCommunicator
    small = [(max(1, s[0] // shrink),) + tuple(s[1:]) for s in shapes]
    out = {}
    for kind in kinds:
        row = {}
        for label, shp in (("small", small), ("full", shapes)):
            params, grads = make_params(shp)
            tr = build(kind, params, LocalCommunicator())
            times = []
            for s in range(warmup + steps):
                for p, g in zip(params, grads):
                    g.copyto(p.grad())
                    p.data()._fresh_grad = True
                mx.nd.waitall()
                t0 = time.perf_counter()
                tr.step(32)
                t1 = time.perf_counter()
                mx.nd.waitall()
                if s >= warmup:
                    times.append(t1 - t0)
            row[f"{label}_host_s"] = float(np.median(times))
            row[f"{label}_params"] = numel(shp)
        row["full_vs_small"] = row["full_host_s"] / row["small_host_s"]
        out[kind] = row
    return out


# ---- 2 workers -------------------------------------------------------------------------------
def worker(args):
    """Runs under horovodrun: every configuration and stock Horovod on each shape set."""
    import mxnet as mx
    import horovod.mxnet as hvd
    from gluon_suite.distributed import get_communicator
    comm = get_communicator()
    with open(os.environ["BENCH_SHAPES"]) as f:
        shape_sets = json.load(f)
    out = {}
    for model, shapes in shape_sets.items():
        shapes = [tuple(s) for s in shapes]
        rows = {}
        for kind in ["horovod DistributedTrainer"] + [k for k, _ in CONFIGS]:
            params, grads = make_params(shapes)
            tr = build(kind, params, comm)
            time_trainer(params, grads, tr, 0, warmup=2)
            comm.stats.reset()
            t = time_trainer(params, grads, tr, args.steps, warmup=0)
            rows[kind] = {"step_s": t, "wire_bytes_per_step": comm.stats.total_wire / args.steps}
            del params, grads, tr
            mx.nd.waitall()
        sync = rows["sync"]
        for row in rows.values():
            row["time_vs_sync"] = row["step_s"] / sync["step_s"]
            row["bytes_vs_sync"] = row["wire_bytes_per_step"] / sync["wire_bytes_per_step"]
        rows["sync"]["time_vs_horovod"] = sync["step_s"] / rows["horovod DistributedTrainer"]["step_s"]
        out[model] = {"tensors": len(shapes), "params": numel(shapes), "configs": rows}
    hvd.allreduce(mx.nd.zeros((1,)), name="bench.done").wait_to_read()
    if comm.rank == 0:
        with open(os.environ["BENCH_OUT"], "w") as f:
            json.dump(out, f)


def two_workers(shape_sets, steps):
    with tempfile.TemporaryDirectory() as tmp:
        out, shp = os.path.join(tmp, "w.json"), os.path.join(tmp, "shapes.json")
        with open(shp, "w") as f:
            json.dump(shape_sets, f)
        env = dict(os.environ, BENCH_OUT=out, BENCH_SHAPES=shp, OMP_NUM_THREADS="1",
                   MXNET_CPU_WORKER_NTHREADS="1")
        hvdrun = os.path.join(os.path.dirname(sys.executable), "horovodrun")
        subprocess.run([hvdrun, "-np", "2", "-H", "localhost:2", "--gloo", sys.executable,
                        os.path.abspath(__file__), "--worker", "--steps", str(steps)], env=env, check=True)
        with open(out) as f:
            return json.load(f)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--models", default="resnet50_v1b,bert_base,mlp", help="1-worker shape sets")
    p.add_argument("--two-worker-models", default="resnet50_v1b,mlp")
    p.add_argument("--steps", type=int, default=5)
    p.add_argument("--fit-total", type=int, default=0, help="elements of the 8/161/800 sets and the "
                   "compute floors (default: ResNet-50's)")
    p.add_argument("--only", choices=["host", "floors"], help="run one section only and put it "
                   "into the existing results (host: host work per step at two tensor sizes; "
                   "floors: each compressor vs its bare operators)")
    p.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.worker:
        return worker(args)
    sys.path.insert(0, os.path.dirname(HERE))
    from gluon_suite.utils import write_json
    kinds = ["gluon.Trainer"] + [k for k, _ in CONFIGS]
    shapes = {m: MODELS[m]() for m in set(args.models.split(",")) | set(args.two_worker_models.split(","))}
    result = {"benchmark": "comm", "date": time.strftime("%Y-%m-%d"), "cpu_count": os.cpu_count(),
              "what": "median seconds of trainer.step() with the gradients given (no model compute)",
              "shape_sets": {m: {"tensors": len(s), "params": numel(s)} for m, s in shapes.items()},
              "load_average_at_start": os.getloadavg()}

    if args.only:
        with open(RESULTS) as f:
            result = json.load(f)
        if args.only == "floors":
            total = args.fit_total or numel(shapes.get("resnet50_v1b") or resnet50_shapes())
            result["compute_floor"] = floors_section(total)
            write_json(RESULTS, result)
            print(f"results: {os.path.relpath(RESULTS)}")
            return
    else:
        result = run_all(args, kinds, shapes, result)
    m = "resnet50_v1b"
    rn = shapes.get(m) or resnet50_shapes()
    result["host_work"] = {"shapes": f"{m} ({len(rn)} tensors), full and first axis / 16",
                           "configs": host_work(rn, kinds, args.steps),
                           "load_average": os.getloadavg()}
    print(f"\nhost (Python) time of one step, {m} tensors: 1/16 size vs full size")
    for k, r in result["host_work"]["configs"].items():
        print(f"  {k:<28}{r['small_host_s'] * 1e3:>8.2f} ms {r['full_host_s'] * 1e3:>8.2f} ms"
              f"{r['full_vs_small']:>7.2f}x")
    write_json(RESULTS, result)
    print(f"results: {os.path.relpath(RESULTS)}")


def floors_section(total):
    out = {"elements": total, "compressors": compute_floors(total), "load_average": os.getloadavg()}
    print(f"\ncompressors on one flat vector of {total / 1e6:.1f}M: ours vs bare operators")
    for k, f in out["compressors"].items():
        print(f"  {k:<10}{f['ours_s'] * 1e3:>9.1f} ms vs {f['floor_s'] * 1e3:>8.1f} ms: {f['ratio']:.2f}x")
    return out


def run_all(args, kinds, shapes, result):
    # the 2-worker section first: the in-process sections leave this process holding MXNet's
    # memory pool (about 17 GB after BERT-base), and two workers beside it ran out of memory
    two = [m for m in args.two_worker_models.split(",") if m]
    if two:
        result["two_workers"] = two_workers({m: shapes[m] for m in two}, args.steps)
        for m, r in result["two_workers"].items():
            print(f"\n2 workers on loopback, {m} ({r['tensors']} tensors, {r['params'] / 1e6:.1f}M)")
            for k, row in r["configs"].items():
                print(f"  {k:<28}{row['step_s'] * 1e3:>10.1f} ms{row['time_vs_sync']:>8.2f}x sync"
                      f"{row['bytes_vs_sync']:>9.4f}x sync bytes")
    single = {}
    for m in args.models.split(","):
        t = single_worker(shapes[m], kinds, args.steps)
        single[m] = {k: {"step_s": v, "vs_gluon_trainer": v / t["gluon.Trainer"]} for k, v in t.items()}
        print(f"\n1 worker, {m} ({len(shapes[m])} tensors, {numel(shapes[m]) / 1e6:.1f}M)")
        for k, row in single[m].items():
            print(f"  {k:<28}{row['step_s'] * 1e3:>10.1f} ms{row['vs_gluon_trainer']:>8.2f}x gluon.Trainer")
    result["single_worker"] = single

    total = args.fit_total or numel(shapes.get("resnet50_v1b") or resnet50_shapes())
    counts = [8, 161, 800]
    per_count = {c: single_worker(equal_shapes(total, c), kinds, args.steps) for c in counts}
    fits = {}
    for k in kinds:
        ys = [per_count[c][k] for c in counts]
        extra = [per_count[c][k] - per_count[c]["gluon.Trainer"] for c in counts]
        a, b = fit(counts, ys)
        ea, eb = fit(counts, extra)
        fits[k] = {"step_s": dict(zip(map(str, counts), ys)), "a_s": a, "b_us_per_tensor": b * 1e6,
                   "extra_over_gluon_a_s": ea, "extra_over_gluon_b_us_per_tensor": eb * 1e6}
    result["tensor_count_fit"] = {"total_params": total, "counts": counts, "configs": fits}
    print(f"\n1 worker, {total / 1e6:.1f}M parameters in 8/161/800 equal tensors: a + b x tensors")
    for k, f in fits.items():
        print(f"  {k:<28} b = {f['b_us_per_tensor']:>7.1f} us/tensor, extra over gluon.Trainer "
              f"b = {f['extra_over_gluon_b_us_per_tensor']:>7.1f} us/tensor")

    result["compute_floor"] = floors_section(total)

    result["load_average_at_end"] = os.getloadavg()  # other jobs on the machine skew the times
    return result


if __name__ == "__main__":
    main()
