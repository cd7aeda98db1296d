#!/usr/bin/env python
"""Heterograph R-GCN and link prediction: training-epoch time and peak memory of gluon_suite.graph
against DGL 2.1 (PyTorch), CPU, the same thread count, on the graph of bench/graph.py (100k nodes,
1M random edges, 64 features, 16 classes).

- ``rgcn``: the graph's nodes split into two types (ids below N/2 are ``a``, the rest ``b``), its
  edges into the four relations between them (``aa``, ``ab``, ``ba``, ``bb``, local ids), as a
  heterograph. The model is DGL's heterograph R-GCN layer shape: ``HeteroGraphConv({relation:
  GraphConv(in, out, norm='right')}, aggregate='sum')``, a ReLU, and a second such layer to the 16
  classes; every node of both types is labelled; full graph, Adam.
- ``link``: link prediction on the homogeneous graph: a two-layer GraphSAGE-mean encoder (64 -> 64
  -> 64) on the whole graph, a dot-product scorer, and per epoch one step over 20,000 of the
  graph's edges with 5 uniform negative destinations each (binary cross-entropy; the batch and
  negatives drawn from a seeded NumPy generator, the same on both sides).

Protocol: bench/protocols/graph_hetero.yaml. Each (framework, model) runs in a fresh process
(``--worker``), measured as bench/graph.py measures (median epoch after a warm-up, process CPU time,
peak memory above the import baseline); DGL from .cache/dgl-venv (``make bench-deps``).

    gluon-suite bench run graph_hetero [--quick]
"""
import argparse
import json
import os
import resource
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import graph as gb  # noqa: E402  the shared graph, timing, memory and worker plumbing of bench/graph.py

MODELS = {"rgcn": "HeteroGraphConv({4 relations: GraphConv(64, 64, norm='right')}, 'sum'), ReLU, "
                  "HeteroGraphConv({4 relations: GraphConv(64, 16, norm='right')}, 'sum'); 2 node types",
          "link": "SAGEConv(64, 64, 'mean'), ReLU, SAGEConv(64, 64, 'mean'), dot scorer; 20,000 edges x 5 "
                  "uniform negatives a step"}
LINK_BATCH, LINK_NEG = 20_000, 5
RELS = (("a", "aa", "a"), ("a", "ab", "b"), ("b", "ba", "a"), ("b", "bb", "b"))


def hetero_parts():
    """The relations of the two-type split: ``{canonical: (local src, local dst)}``, counts per type,
    the features and labels per type."""
    import numpy as np
    src, dst, x, y = gb.make_graph()
    half = gb.N // 2
    kind = lambda v: np.where(v < half, 0, 1)   # noqa: E731
    local = lambda v: np.where(v < half, v, v - half)   # noqa: E731
    ks, kd = kind(src), kind(dst)
    rels = {}
    for c in RELS:
        m = (ks == (c[0] == "b")) & (kd == (c[2] == "b"))
        rels[c] = (local(src[m]), local(dst[m]))
    counts = {"a": half, "b": gb.N - half}
    return rels, counts, {"a": x[:half], "b": x[half:]}, {"a": y[:half], "b": y[half:]}


def link_batches(src, dst, epochs, seed=0):
    """Per epoch (warm-up included): the positive edge ids' ends and the negatives' ends."""
    import numpy as np
    rs = np.random.RandomState(seed)
    out = []
    for _ in range(epochs + 1):
        e = rs.randint(0, len(src), LINK_BATCH)
        nu = np.repeat(src[e], LINK_NEG)
        out.append((src[e], dst[e], nu, rs.randint(0, gb.N, LINK_BATCH * LINK_NEG)))
    return out


def run_ours(model, epochs):
    import mxnet as mx
    from mxnet import autograd, gluon
    sys.path.insert(0, gb.REPO)
    import gluon_suite.graph as dgl
    from gluon_suite.graph.nn import GraphConv, HeteroGraphConv, SAGEConv
    base = gb.rss_mb()
    res = {}
    if model == "rgcn":
        rels, counts, xs, ys = hetero_parts()
        g = dgl.heterograph(rels, num_nodes_dict=counts)
        X = {t: mx.nd.array(v) for t, v in xs.items()}
        Y = {t: mx.nd.array(v) for t, v in ys.items()}

        class Net(gluon.Block):
            def __init__(self):
                super().__init__()
                with self.name_scope():
                    self.l1 = HeteroGraphConv({c[1]: GraphConv(gb.F, gb.HID, norm="right") for c in RELS}, "sum")
                    self.l2 = HeteroGraphConv({c[1]: GraphConv(gb.HID, gb.C, norm="right") for c in RELS}, "sum")

            def forward(self, x):
                h = {t: mx.nd.relu(v) for t, v in self.l1(g, x).items()}
                return self.l2(g, h)
        net = Net()
        net.initialize(mx.init.Xavier())
        loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()

        def loss_of():
            out = net(X)
            return mx.nd.add_n(*[loss_fn(out[t], Y[t]).sum() for t in out]) / gb.N
    else:
        src, dst, x, _ = gb.make_graph()
        g = dgl.graph((src, dst), num_nodes=gb.N)
        X = mx.nd.array(x)
        batches = iter(link_batches(src, dst, epochs))

        class Net(gluon.Block):
            def __init__(self):
                super().__init__()
                with self.name_scope():
                    self.l1 = SAGEConv(gb.F, gb.HID, "mean", activation=mx.nd.relu)
                    self.l2 = SAGEConv(gb.HID, gb.HID, "mean")

            def forward(self, x):
                return self.l2(g, self.l1(g, x))
        net = Net()
        net.initialize(mx.init.Xavier())
        bce = gluon.loss.SigmoidBinaryCrossEntropyLoss()

        def score(h, u, v):
            pair = dgl.graph((u, v), num_nodes=gb.N)
            pair.ndata["h"] = h
            pair.apply_edges(dgl.function.u_dot_v("h", "h", "s"))
            return pair.edata["s"].reshape((-1,))

        def loss_of():
            pu, pv, nu, nv = next(batches)
            h = net(X)
            pos, neg = score(h, pu, pv), score(h, nu, nv)
            return (bce(pos, mx.nd.ones_like(pos)).sum() + bce(neg, mx.nd.zeros_like(neg)).sum()) / len(pu)
    tr = gluon.Trainer(net.collect_params(), "adam", {"learning_rate": 0.01})

    def step():
        with autograd.record():
            loss = loss_of()
        loss.backward()
        tr.step(1)
    res["epoch_s"] = gb.timed(step, epochs, mx.nd.waitall, cpu=res)
    return base, res


def run_dgl(model, epochs, threads):
    import torch
    torch.set_num_threads(threads)
    import dgl
    import dgl.function as fn
    import dgl.nn as dglnn
    base = gb.rss_mb()
    res = {}
    if model == "rgcn":
        rels, counts, xs, ys = hetero_parts()
        g = dgl.heterograph({c: (torch.tensor(s), torch.tensor(d)) for c, (s, d) in rels.items()},
                            num_nodes_dict=counts)
        X = {t: torch.tensor(v) for t, v in xs.items()}
        Y = {t: torch.tensor(v) for t, v in ys.items()}

        class Net(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.l1 = dglnn.HeteroGraphConv({c[1]: dglnn.GraphConv(gb.F, gb.HID, norm="right") for c in RELS}, "sum")
                self.l2 = dglnn.HeteroGraphConv({c[1]: dglnn.GraphConv(gb.HID, gb.C, norm="right") for c in RELS}, "sum")

            def forward(self, x):
                h = {t: torch.relu(v) for t, v in self.l1(g, x).items()}
                return self.l2(g, h)
        net = Net()

        def loss_of():
            out = net(X)
            return sum(torch.nn.functional.cross_entropy(out[t], Y[t], reduction="sum") for t in out) / gb.N
    else:
        src, dst, x, _ = gb.make_graph()
        g = dgl.graph((torch.tensor(src), torch.tensor(dst)), num_nodes=gb.N)
        X = torch.tensor(x)
        batches = iter(link_batches(src, dst, epochs))

        class Net(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.l1, self.l2 = dglnn.SAGEConv(gb.F, gb.HID, "mean"), dglnn.SAGEConv(gb.HID, gb.HID, "mean")

            def forward(self, x):
                return self.l2(g, torch.relu(self.l1(g, x)))
        net = Net()

        def score(h, u, v):
            pair = dgl.graph((torch.tensor(u), torch.tensor(v)), num_nodes=gb.N)
            pair.ndata["h"] = h
            pair.apply_edges(fn.u_dot_v("h", "h", "s"))
            return pair.edata["s"].reshape(-1)

        def loss_of():
            pu, pv, nu, nv = next(batches)
            h = net(X)
            pos, neg = score(h, pu, pv), score(h, nu, nv)
            bce = torch.nn.functional.binary_cross_entropy_with_logits
            return (bce(pos, torch.ones_like(pos), reduction="sum") + bce(neg, torch.zeros_like(neg), reduction="sum")
                    ) / len(pu)
    opt = torch.optim.Adam(net.parameters(), lr=0.01)

    def step():
        opt.zero_grad()
        loss_of().backward()
        opt.step()
    res["epoch_s"] = gb.timed(step, epochs, cpu=res)
    return base, res


def worker(args):
    base = gb.rss_mb()
    if args.worker == "ours":
        base, res = run_ours(args.model, args.epochs)
    else:
        base, res = run_dgl(args.model, args.epochs, args.threads)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps({**res, "peak_rss_mb": peak, "import_rss_mb": base, "peak_above_import_mb": peak - base,
                      "epochs": args.epochs, "versions": gb._versions(args.worker)}))


def _run_worker(python, fw, model, epochs, threads, env):
    import subprocess
    p = subprocess.run([python, os.path.abspath(__file__), "--worker", fw, "--model", model, "--epochs", str(epochs),
                        "--threads", str(threads)], capture_output=True, text=True, env=env)
    if p.returncode != 0:
        return None, (p.stderr.strip().splitlines() or ["failed"])[-1]
    return json.loads(p.stdout.strip().splitlines()[-1]), None


def evidence(ctx):
    """Protocol bench/protocols/graph_hetero.yaml: every repeat ("seed") runs both arms, in an order
    rotated by the repeat, each model in a worker process; a table of epoch times, ratios and memory."""
    from gluon_suite.utils.errors import UserError
    p = ctx.params
    models, epochs, threads = list(p["models"]), int(p["epochs"]), int(p["threads"])
    pythons = {"ours": sys.executable}
    dgl_python = os.path.join(ctx.root, gb.VENVS["dgl"])
    if os.path.exists(dgl_python):
        pythons["dgl"] = dgl_python
    elif ctx.quick:
        ctx.note("absent", {"dgl": f"{gb.VENVS['dgl']} not found (make bench-deps builds it): not measured"})
    else:
        raise UserError(f"protocol {ctx.protocol.name} compares against DGL, whose environment {gb.VENVS['dgl']} "
                        "does not exist; run 'make bench-deps' first (a --quick run measures ours only)")
    arms = [a for a in ctx.arms if a in pythons]
    env = dict(os.environ, OMP_NUM_THREADS=str(threads), MXNET_CPU_WORKER_NTHREADS="1", MKL_NUM_THREADS=str(threads))
    runs, failures, versions = {a: [] for a in arms}, {}, {}

    def one_arm(arm):
        metrics = {}
        for model in models:
            out, err = _run_worker(pythons[arm], arm, model, epochs, threads, env)
            if err:
                failures.setdefault(f"{arm} {model}", err)
            else:
                versions[arm] = out["versions"]
            metrics.update(gb.worker_metrics(model, out))
        return metrics
    plan = [(seed, arm) for i, seed in enumerate(ctx.seeds) for arm in gb.rotated(arms, i)]
    for seed, arm in ctx.progress(plan, desc=f"{ctx.protocol.name} runs"):
        runs[arm].append(ctx.measure(arm, seed, lambda: one_arm(arm)))
    ctx.note("framework_versions", versions)
    if failures:
        ctx.note("failures", failures)

    def col(arm, key):
        return [r.get(key) for r in runs.get(arm, [])]
    rows = []
    for m in models:
        t, c, mem = f"{m}_epoch_s", f"{m}_epoch_cpu_s", f"{m}_memory_mb"
        rows.append([m, MODELS[m], f"{gb.mean_cell(col('ours', t), '{:.3f}')} / {gb.mean_cell(col('ours', c))}",
                     f"{gb.mean_cell(col('dgl', t), '{:.3f}')} / {gb.mean_cell(col('dgl', c))}",
                     gb.ratio_cell(col("ours", t), col("dgl", t)), gb.ratio_cell(col("ours", c), col("dgl", c)),
                     f"{gb.mean_cell(col('ours', mem), '{:.0f}')} / {gb.mean_cell(col('dgl', mem), '{:.0f}')} "
                     f"({gb.ratio_cell(col('ours', mem), col('dgl', mem)).split(' ')[0]})"])
    ctx.table("models", ["model", "what", "ours epoch / CPU", "DGL epoch / CPU", "ours / DGL time (per-repeat range)",
                         "ours / DGL CPU time (range)", "memory MB ours / DGL (ratio)"], rows,
              caption=f"seconds per training epoch, mean over repeats of each repeat's median of {epochs} epochs")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0], allow_abbrev=False)
    ap.add_argument("--worker", choices=("ours", "dgl"), help="run one (framework, model) and print its JSON line")
    ap.add_argument("--model", choices=list(MODELS))
    ap.add_argument("--epochs", type=int, default=3)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--nodes", type=int, default=gb.N, help=argparse.SUPPRESS)
    ap.add_argument("--edges", type=int, default=gb.E, help=argparse.SUPPRESS)
    args, rest = ap.parse_known_args()
    gb.N, gb.E = args.nodes, args.edges
    if args.worker:
        if rest or not args.model:
            ap.error("--worker needs --model and takes no other arguments")
        return worker(args)
    from gluon_suite.cli import entry
    sys.argv = ["gluon-suite", "bench", "run", "graph_hetero", *rest]
    entry()


if __name__ == "__main__":
    sys.path.insert(0, gb.REPO)
    main()
