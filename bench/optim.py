#!/usr/bin/env python
"""Optimizer step time on a BERT-base-sized set of parameter tensors (about 110M parameters):
LANS (ours, on MXNet's LAMB kernels) vs MXNet's fused multi-tensor LAMB vs Adam, and AdaAlter.
Also the host (Python) time of a step at full size and with every tensor's first axis cut 16
times: host work must not grow with tensor size. Writes bench/results/optim.json and prints a
table.

    .venv/bin/python bench/optim.py [--steps 5]
"""
import argparse
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


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--steps", type=int, default=5)
    args = ap.parse_args()
    import mxnet as mx
    import numpy as np
    from mxnet import gluon
    from gluon_suite.distributed import DistributedTrainer, LocalCommunicator
    from gluon_suite.utils import write_json

    shapes = bert_base_shapes()
    small = [(max(1, s[0] // 16),) + tuple(s[1:]) for s in shapes]   # the same tensors, 1/16 size
    nparams = sum(int(np.prod(s)) for s in shapes)

    def timed(opt, shp):
        """Median step seconds and median host (Python) seconds: the call's own time, the
        MXNet operators it pushed running on the engine's thread off that clock."""
        params = []
        for i, s in enumerate(shp):
            p = gluon.Parameter(f"w{i}", shape=s)
            p.initialize(mx.init.Normal(0.02))
            params.append(p)
        tr = DistributedTrainer(params, opt, {"learning_rate": 1e-4, "wd": 0.01},
                                communicator=LocalCommunicator())
        grads = [mx.nd.random.normal(shape=s, scale=1e-3) for s in shp]
        times, host = [], []
        for step in range(args.steps + 1):
            for p, g in zip(params, grads):
                g.copyto(p.grad())
                p.list_data()[0]._fresh_grad = True
            mx.nd.waitall()
            t0 = time.perf_counter()
            tr.step(1)
            t1 = time.perf_counter()
            mx.nd.waitall()
            if step:
                times.append(time.perf_counter() - t0)
                host.append(t1 - t0)
        return float(np.median(times)), float(np.median(host))

    rows = {}
    for name, opt in [("lamb (MXNet fused)", "lamb"), ("lans", "lans"), ("adam", "adam"),
                      ("adaalter", "adaalter")]:
        step_s, host_s = timed(opt, shapes)
        _, host_small = timed(opt, small)
        rows[name] = {"step_s": step_s, "host_s": host_s, "host_s_at_1_16_size": host_small,
                      "host_full_vs_small": host_s / host_small}
    base = rows["lamb (MXNet fused)"]["step_s"]
    for r in rows.values():
        r["vs_lamb"] = r["step_s"] / base
    result = {"benchmark": "optim", "date": time.strftime("%Y-%m-%d"), "cpu_count": os.cpu_count(),
              "tensors": len(shapes), "parameters": nparams, "steps": args.steps, "results": rows}
    write_json(os.path.join(HERE, "results", "optim.json"), result)
    print(f"BERT-base-sized parameters: {len(shapes)} tensors, {nparams / 1e6:.1f}M parameters, "
          f"{os.cpu_count()} cores")
    print(f"{'optimizer':<22}{'step ms':>10}{'x LAMB':>9}{'host ms':>10}{'host 1/16':>11}{'ratio':>7}")
    for name, r in rows.items():
        print(f"{name:<22}{r['step_s'] * 1e3:>10.1f}{r['vs_lamb']:>9.2f}{r['host_s'] * 1e3:>10.2f}"
              f"{r['host_s_at_1_16_size'] * 1e3:>11.2f}{r['host_full_vs_small']:>7.2f}")
    print("target: LANS <= 1.5x fused LAMB; results: bench/results/optim.json")


if __name__ == "__main__":
    main()
