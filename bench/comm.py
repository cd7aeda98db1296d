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

    .venv/bin/gluon-suite bench run comm [--quick]

The protocol (bench/protocols/comm.yaml) fixes the shape sets, steps and repeats and the criteria;
the runner writes the result under bench/results/comm/. Times are medians over the measured steps.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
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


FLOORS = "compressor floors"


def evidence(ctx):
    """The protocol bench/protocols/comm.yaml. Each "seed" is a repeat of the whole measurement:
    the 2-worker section first (one horovodrun job timing every kind), then per arm its 1-worker
    step on each shape set, on 8 / 161 / 800 equal tensors and its host time at two tensor sizes,
    and the compressors against their bare operators (the arm ``compressor floors``). Times are
    medians over ``steps`` steps."""
    p = ctx.params
    steps = int(p["steps"])
    models, two = list(p["models"]), list(p.get("two_worker_models") or [])
    need_rn = not p.get("fit_total") or (not p.get("host_total") and p.get("host_model", "resnet50_v1b") == "resnet50_v1b")
    shapes = {m: MODELS[m]() for m in set(models) | set(two) | ({"resnet50_v1b"} if need_rn else set())}
    total = int(p.get("fit_total") or numel(shapes["resnet50_v1b"]))
    counts = [8, 161, 800]
    count_shapes = {c: equal_shapes(total, c) for c in counts}
    host_shapes = shapes[p.get("host_model", "resnet50_v1b")] if not p.get("host_total") else \
        equal_shapes(int(p["host_total"]), 161)
    ctx.note("shape_sets", {m: {"tensors": len(s), "params": numel(s)} for m, s in shapes.items()})
    ctx.note("fit_total_params", total)
    for seed in ctx.progress(ctx.seeds, desc="comm repeats"):
        w2 = two_workers({m: shapes[m] for m in two}, steps) if two else {}
        for arm in ctx.arms:
            def one(arm=arm):
                m = {}
                if arm == FLOORS:
                    fl = compute_floors(total)
                    for name, f in fl.items():
                        m[f"floor_{name}_s"], m[f"ours_{name}_s"], m[f"floor_ratio_{name}"] = f["floor_s"], f["ours_s"], f["ratio"]
                    m["floor_ratio_max"] = max(f["ratio"] for f in fl.values())
                    return m
                for model, r in w2.items():
                    row = r["configs"].get(arm)
                    if row:
                        m[f"step_2w_{model}_s"] = row["step_s"]
                        # stock Horovod's bytes do not pass our communicator's counters
                        m[f"wire_2w_{model}_bytes"] = None if arm == "horovod DistributedTrainer" else row["wire_bytes_per_step"]
                if arm == "horovod DistributedTrainer":
                    return m
                for model in models:
                    m[f"step_1w_{model}_s"] = single_worker(shapes[model], [arm], steps)[arm]
                for c in counts:
                    m[f"step_1w_{c}_tensors_s"] = single_worker(count_shapes[c], [arm], steps)[arm]
                h = host_work(host_shapes, [arm], steps, shrink=int(p.get("host_shrink", 16)))[arm]
                m.update(host_small_s=h["small_host_s"], host_full_s=h["full_host_s"],
                         host_full_vs_small=h["full_vs_small"])
                return m
            ctx.measure(arm, seed, one)
    _tables(ctx, models, two, counts)


def _median(xs):
    xs = sorted(x for x in xs if x is not None)
    return xs[len(xs) // 2] if len(xs) % 2 else 0.5 * (xs[len(xs) // 2 - 1] + xs[len(xs) // 2]) if xs else None


def _tables(ctx, models, two, counts):
    """The docs' tables: step time against gluon.Trainer (1 worker) and against sync (2 workers),
    wire bytes, the tensor-count fit, host time and the compressors' floors; the median over the
    repeats of each repeat's median step, and the ratio of those medians."""
    runs = {}
    for r in ctx.runs:
        runs.setdefault(r["arm"], []).append(r["metrics"])

    def med(arm, key):
        return _median([m.get(key) for m in runs.get(arm, [])])

    def ratio(a, b):
        return "" if a is None or b is None else f"{a / b:.2f}x"
    arms = [a for a in ctx.protocol.arms() if a != FLOORS and a in runs]
    cols, rows = ["configuration"], []
    cols += [f"1 worker, {m}: vs gluon.Trainer" for m in models]
    cols += [f"2 workers, {m}: vs sync" for m in two] + [f"2 workers, {m}: wire bytes vs sync" for m in two]
    for a in arms:
        row = [a]
        row += [ratio(med(a, f"step_1w_{m}_s"), med("gluon.Trainer", f"step_1w_{m}_s")) for m in models]
        row += [ratio(med(a, f"step_2w_{m}_s"), med("sync", f"step_2w_{m}_s")) +
                (f" ({1e3 * med(a, f'step_2w_{m}_s'):.0f} ms)" if a == "sync" and med(a, f"step_2w_{m}_s") else "")
                for m in two]
        for m in two:
            w, ws = med(a, f"wire_2w_{m}_bytes"), med("sync", f"wire_2w_{m}_bytes")
            row.append("" if w is None or not ws else f"{w / ws:.4f}")
        rows.append(row)
    ctx.table("steps", cols, rows, caption=f"median over {len(ctx.seeds)} repeat(s) of the median of "
              f"{ctx.params['steps']} steps; 1 worker: this configuration's step / gluon.Trainer's; 2 workers on "
              "loopback: / our sync's")
    rows = []
    for a in arms:
        ys = [med(a, f"step_1w_{c}_tensors_s") for c in counts]
        gs = [med("gluon.Trainer", f"step_1w_{c}_tensors_s") for c in counts]
        if None in ys or None in gs:
            continue
        _, b = fit(counts, ys)
        _, eb = fit(counts, [y - g for y, g in zip(ys, gs)])
        h = [med(a, k) for k in ("host_small_s", "host_full_s", "host_full_vs_small")]
        rows.append([a, *(f"{1e3 * y:.1f}" for y in ys), f"{1e6 * b:.1f}", f"{1e6 * eb:.1f}",
                     f"{1e3 * h[0]:.2f}", f"{1e3 * h[1]:.2f}", f"{h[2]:.2f}x"])
    ctx.table("tensor_count", ["configuration", *(f"{c} tensors (ms)" for c in counts), "b (us per tensor)",
                               "extra over gluon.Trainer, b (us per tensor)", "host time, 1/16 size (ms)",
                               "host time, full size (ms)", "full / small"], rows,
              caption="1 worker, the same total size cut into equal tensors; step = a + b x tensors fitted to the "
                      "medians; host time: from the call of step() to its return")
    if FLOORS in runs:
        rows = [[n, f"{1e3 * med(FLOORS, f'ours_{n}_s'):.1f}", f"{1e3 * med(FLOORS, f'floor_{n}_s'):.1f}",
                 f"{med(FLOORS, f'floor_ratio_{n}'):.2f}x"] for n in ("fp16", "grbs", "randomk", "topk", "sign")]
        ctx.table("floors", ["compressor", "ours (ms)", "bare operators (ms)", "ours / floor"], rows,
                  caption=f"one flat vector of {ctx.notes.get('fit_total_params', 0) / 1e6:.1f}M elements, compress "
                          "and add the decompressed payload into a target; median over repeats")


def main():
    """``--worker`` (under horovodrun, the 2-worker section); anything else runs the protocol."""
    if "--worker" in sys.argv:
        p = argparse.ArgumentParser(allow_abbrev=False)
        p.add_argument("--worker", action="store_true")
        p.add_argument("--steps", type=int, default=5)
        return worker(p.parse_args())
    sys.path.insert(0, os.path.dirname(HERE))
    from gluon_suite.cli import entry
    sys.argv = ["gluon-suite", "bench", "run", "comm", *sys.argv[1:]]
    return entry()


if __name__ == "__main__":
    main()
