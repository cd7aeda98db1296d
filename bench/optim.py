#!/usr/bin/env python
"""Optimizer step time on a BERT-base-sized set of parameter tensors (about 110M parameters):
LANS (ours, on MXNet's LAMB kernels) vs MXNet's fused multi-tensor LAMB vs Adam, and AdaAlter.
Also the host (Python) time of a step at full size and with every tensor's first axis cut 16
times: host work must not grow with tensor size. The protocol (bench/protocols/optim.yaml) fixes
the optimizers, the repeats (its "seeds": one timed step each, after an untimed one) and the
criterion.

    gluon-suite bench run optim [--quick]
"""
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))


def bert_base_shapes(vocab=30522, hidden=768, ffn=3072, layers=12, max_len=512):
    """Parameter shapes of BERT-base (embeddings, 12 encoder layers, pooler), in order."""
    shapes = [(vocab, hidden), (max_len, hidden), (2, hidden), (hidden,), (hidden,)]
    for _ in range(layers):
        shapes += [(hidden, hidden), (hidden,)] * 4            # q, k, v, output projection
        shapes += [(hidden,), (hidden,)]                        # attention LayerNorm
        shapes += [(ffn, hidden), (ffn,), (hidden, ffn), (hidden,)]
        shapes += [(hidden,), (hidden,)]                        # FFN LayerNorm
    shapes += [(hidden, hidden), (hidden,)]
    return shapes


def make_trainer(opt, shapes):
    """A trainer of optimizer ``opt`` over fresh parameters of ``shapes`` (lr 1e-4, wd 0.01, one
    process) and a fixed random gradient per tensor; returns a function doing one timed step."""
    import mxnet as mx
    from mxnet import gluon
    from gluon_suite.distributed import DistributedTrainer, LocalCommunicator
    params = []
    for i, s in enumerate(shapes):
        p = gluon.Parameter(f"w{i}", shape=s)
        p.initialize(mx.init.Normal(0.02))
        params.append(p)
    tr = DistributedTrainer(params, opt, {"learning_rate": 1e-4, "wd": 0.01}, communicator=LocalCommunicator())
    grads = [mx.nd.random.normal(shape=s, scale=1e-3) for s in shapes]

    def step():
        """Seconds of one step, and its host (Python) seconds: the call's own time, the MXNet
        operators it pushed running on the engine's thread off that clock."""
        for p, g in zip(params, grads):
            g.copyto(p.grad())
            p.list_data()[0]._fresh_grad = True
        mx.nd.waitall()
        t0 = time.perf_counter()
        tr.step(1)
        t1 = time.perf_counter()
        mx.nd.waitall()
        return time.perf_counter() - t0, t1 - t0
    return step


OPTIMIZERS = {"lamb": "lamb", "lans": "lans", "adam": "adam", "adaalter": "adaalter"}
LABELS = {"lamb": "LAMB (MXNet fused multi-tensor)", "lans": "LANS", "adam": "Adam", "adaalter": "AdaAlter"}


def rows_of(step_s, host_s, host_small_s, arms):
    """The two tables' rows from per-repeat values (``arm -> list``, repeats in the same order):
    median step seconds and the ratio to fused LAMB (geometric mean of the per-repeat ratios with
    its 95% interval, evidence.stats on the log scale); median host milliseconds at 1/16 and full
    size and their ratio."""
    import statistics
    from gluon_suite.evidence import stats
    steps, host = [], []
    for a in arms:
        if a == "lamb" or "lamb" not in step_s:
            ratio = "1.00" if a == "lamb" else "n/a"
        else:
            iv = stats.paired_interval(step_s[a], step_s["lamb"], scale="log")
            ratio = f"{iv['ratio']:.2f}" + (f" [{iv['ratio_low']:.2f}, {iv['ratio_high']:.2f}]"
                                             if iv["ratio_low"] is not None else "")
        steps.append([LABELS[a], f"{statistics.median(step_s[a]):.2f} s", ratio])
        hs, hf = statistics.median(host_small_s[a]) * 1e3, statistics.median(host_s[a]) * 1e3
        host.append([LABELS[a], f"{hs:.1f}", f"{hf:.1f}", f"{hf / hs:.2f}x"])
    return steps, host


def worker(opt, repeats, warmup, size_div):
    """The ``--worker`` role: one optimizer's trainers over the BERT-base shapes (each first axis
    cut ``size_div`` times; 1 in the protocol) and over those cut 16 times more, ``warmup`` untimed
    steps on each, then per repeat one timed step on each, printed as a JSON line as it finishes."""
    import json
    shapes = [(max(1, s[0] // size_div),) + tuple(s[1:]) for s in bert_base_shapes()]
    small = [(max(1, s[0] // 16),) + tuple(s[1:]) for s in shapes]   # the same tensors, 1/16 size
    full, cut = make_trainer(opt, shapes), make_trainer(opt, small)
    for _ in range(warmup):
        full()
        cut()
    print(json.dumps({"ready": True}), flush=True)
    for _ in range(repeats):
        s, h = full()
        _, hs = cut()
        print(json.dumps({"step_s": s, "host_s": h, "host_s_small": hs}), flush=True)


def evidence(ctx):
    """The protocol bench/protocols/optim.yaml: per optimizer (arm) one process with one thread
    (OMP_NUM_THREADS=1, MXNET_CPU_WORKER_NTHREADS=1) doing the untimed step(s), then one timed step
    per repeat ("seed") at full and 1/16 size, each read through ``ctx.measure`` as it finishes;
    tables of step times against fused LAMB and of host times."""
    import json
    import subprocess
    import numpy as np
    p = ctx.params
    div = int(p.get("size_div", 1))
    shapes = [(max(1, s[0] // div),) + tuple(s[1:]) for s in bert_base_shapes()]
    nparams = sum(int(np.prod(s)) for s in shapes)
    env = dict(os.environ, OMP_NUM_THREADS="1", MXNET_CPU_WORKER_NTHREADS="1", PYTHONPATH=os.path.dirname(HERE))
    step_s, host_s, host_small_s = {}, {}, {}
    for arm in ctx.progress(ctx.arms, desc="optimizers"):
        proc = subprocess.Popen([sys.executable, os.path.abspath(__file__), "--worker", OPTIMIZERS[arm],
                                 "--repeats", str(len(ctx.seeds)), "--warmup", str(p["warmup_steps"]),
                                 "--size-div", str(div)], env=env, stdout=subprocess.PIPE, text=True)

        def read():
            line = proc.stdout.readline()
            if not line:
                raise RuntimeError(f"bench/optim.py --worker {arm} ended early (exit {proc.wait()})")
            return json.loads(line)
        try:
            read()                    # set up and the untimed steps, off the repeats' clocks
            for rep in ctx.seeds:
                m = ctx.measure(arm, rep, read)
                for d, k in ((step_s, "step_s"), (host_s, "host_s"), (host_small_s, "host_s_small")):
                    d.setdefault(arm, []).append(m[k])
        finally:
            proc.stdout.close()
            if proc.wait():
                raise RuntimeError(f"bench/optim.py --worker {arm} failed (exit {proc.returncode})")
    steps, host = rows_of(step_s, host_s, host_small_s, ctx.arms)
    size = "BERT-base-sized" if div == 1 else f"BERT-base/{div}-sized"
    ctx.table("steps", ["optimizer", "step (median)", "vs fused LAMB [95% interval]"], steps,
              caption=f"One step on {size} parameters ({len(shapes)} tensors, {nparams / 1e6:.1f}M parameters), "
                      f"one thread, {len(ctx.seeds)} repeats after {p['warmup_steps']} untimed step.")
    ctx.table("host", ["optimizer", "host ms, 1/16 size", "host ms, full size", "full / small"], host,
              caption="Python time of trainer.step() (kernels run on the engine's threads, off the clock), "
                      "median over the repeats.")
    ctx.note("tensors", len(shapes))
    ctx.note("parameters", nparams)


def _worker_main(argv):
    import argparse
    ap = argparse.ArgumentParser(description="one optimizer's timed steps (a process of bench/optim.py)",
                                 allow_abbrev=False)
    ap.add_argument("--worker", required=True, choices=sorted(OPTIMIZERS.values()))
    ap.add_argument("--repeats", type=int, required=True)
    ap.add_argument("--warmup", type=int, default=1)
    ap.add_argument("--size-div", type=int, default=1)
    a = ap.parse_args(argv)
    worker(a.worker, a.repeats, a.warmup, a.size_div)


if __name__ == "__main__":
    if "--worker" in sys.argv[1:]:
        _worker_main(sys.argv[1:])
        sys.exit(0)
    from gluon_suite.cli import entry
    sys.argv = ["gluon-suite", "bench", "run", "optim", *sys.argv[1:]]
    entry()
