#!/usr/bin/env python
"""GCN, GAT and GraphSAGE training-epoch time and peak memory: gluon_suite.graph on its compiled
kernels and on its Python kernels, DGL and PyTorch Geometric, on the same synthetic graph (100k
nodes, 1M random edges plus self-loops, 64 features, hidden 64 for GCN and GraphSAGE-mean, 8 heads x
8 for GAT, 16 classes, Adam, full graph), CPU, same thread count; plus one kernel micro-bench
(forward + backward) per built-in: copy_u+sum, u_mul_e+sum, edge softmax, u_dot_v. Beside them, the
newer layers against their DGL (PyTorch) counterparts with the same constructor arguments and sizes
(``LAYERS``: GINConv, SGConv, TAGConv, APPNPConv, ChebConv, GatedGraphConv, EdgeConv, AGNNConv,
RelGraphConv), ours and DGL only. A ReLU between two layers is Gluon's ``nn.Activation('relu')``
block on our side and ``torch.relu`` on DGL's; ``gin_ndrelu`` repeats GIN with ``mx.nd.relu``
there, which MXNet 1.9.1 runs about five times slower on CPU.

Two protocols run this file: bench/protocols/graph_models.yaml (GCN, GAT, GraphSAGE and the
kernels; ours, ours on the Python kernels, DGL, PyG) and bench/protocols/graph_layers.yaml (the
newer layers; ours and DGL). A protocol's "seed" is a repeat index: every repeat runs every arm once,
rotating which arm goes first, so that load from other jobs on the machine hits all alike; the
graph is the same in every repeat.

    gluon-suite bench run graph_models [--quick]
    gluon-suite bench run graph_layers [--quick]

DGL and PyG run from their own virtual environments, .cache/dgl-venv and .cache/pyg-venv, so the
suite's pins stay untouched; ``make bench-deps`` builds both from the registry. DGL 2.1.0 (the
newest on the registry for Python 3.11) ships its graphbolt library, which ``import dgl`` loads,
only for torch 2.0.0-2.2.1, so it gets torch 2.2.1 (the registry's build runs on CPU), with NumPy 1,
setuptools < 70 (it imports ``setuptools.extern``) and torchdata 0.7.1 (still has datapipes); PyG
gets torch 2.13.0 CPU. A quick run (``--quick``) without them measures ours only and notes which
arms are absent; a full run refuses to start without them.

Each (arm, model) runs in a fresh process (``--worker``). Peak memory is reported above the
process's import baseline: its maximum RSS minus its RSS once the framework is imported, before the
graph is built. An epoch's time is the median over the timed epochs (after one warm-up), with the
process CPU time beside the wall time.

Threads: ``OMP_NUM_THREADS`` (and torch's intra-op threads) = ``threads``; MXNet's engine keeps
its default of one CPU worker thread, each operator using the OpenMP threads.
"""
import argparse
import json
import math
import os
import resource
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
N, E, F, HID, C, HEADS = 100_000, 1_000_000, 64, 64, 16, 8
FRAMEWORKS = ("ours", "ours_python", "dgl", "pyg")
RELS, BASES, STEPS = 4, 2, 2        # RelGraphConv relations and bases, GatedGraphConv steps and edge types
# the newer layers: model name -> what the model is (the same on both sides)
LAYERS = {
    "gin": "GINConv(Linear(F, HID), 'sum'), ReLU, GINConv(Linear(HID, C), 'sum')",
    "gin_ndrelu": "as gin, with mx.nd.relu between the layers on our side instead of Gluon's Activation block",
    "sgc": "SGConv(F, C, k=2)",
    "tag": "TAGConv(F, HID, k=2), ReLU, TAGConv(HID, C, k=2)",
    "appnp": "Linear(F, HID), ReLU, Linear(HID, C), APPNPConv(k=10, alpha=0.1)",
    "cheb": "ChebConv(F, HID, k=3), ReLU, ChebConv(HID, C, k=3), lambda_max 2",
    "ggnn": f"GatedGraphConv(F, HID, n_steps={STEPS}, n_etypes={RELS}), Linear(HID, C)",
    "edgeconv": "EdgeConv(F, HID), ReLU, EdgeConv(HID, C)",
    "agnn": "Linear(F, HID), ReLU, AGNNConv(), AGNNConv(), Linear(HID, C)",
    "rgcn": f"RelGraphConv(F, HID, {RELS}, 'basis', num_bases={BASES}), ReLU, RelGraphConv(HID, C, {RELS}, "
            f"'basis', num_bases={BASES})",
}


def make_graph(seed=0):
    import numpy as np
    rs = np.random.RandomState(seed)
    src, dst = rs.randint(0, N, E), rs.randint(0, N, E)
    x = rs.normal(size=(N, F)).astype(np.float32)
    y = rs.randint(0, C, N)
    return src, dst, x, y


def edge_types(num_edges, seed=1):
    """Edge types for the typed-edge layers, one per edge of the graph with its self-loops."""
    import numpy as np
    return np.random.RandomState(seed).randint(0, RELS, num_edges)


def rss_mb():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2 ** 20


def timed(step, epochs, sync=lambda: None, cpu=None):
    """Median seconds of ``step`` over ``epochs`` runs after one warm-up; with a dict ``cpu``,
    also the median process CPU seconds (all threads) in ``cpu['epoch_cpu_s']``: less swayed by
    other jobs than the wall clock, though threads that spin while they wait count too."""
    times, cpus = [], []
    for ep in range(epochs + 1):
        sync()
        t0, c0 = time.perf_counter(), time.process_time()
        step()
        sync()
        if ep:
            times.append(time.perf_counter() - t0)
            cpus.append(time.process_time() - c0)
    if cpu is not None:
        cpu["epoch_cpu_s"] = statistics.median(cpus)
    return statistics.median(times)


def run_ours(model, epochs, threads, base):
    import mxnet as mx
    from mxnet import autograd, gluon
    sys.path.insert(0, REPO)
    from gluon_suite.graph import Graph
    from gluon_suite.graph.nn import GATConv, GraphConv, SAGEConv
    base = rss_mb()
    src, dst, x, y = make_graph()
    g = Graph((src, dst), num_nodes=N).add_self_loop()
    X, Y = mx.nd.array(x), mx.nd.array(y)
    del x
    if model == "kernels":
        return base, kernels_ours(g, X, epochs)
    if model in LAYERS:
        net = layer_net_ours(model, g)
    else:
        net = None

    class Net(gluon.Block):
        def __init__(self):
            super().__init__()
            with self.name_scope():
                if model == "gcn":
                    self.l1, self.l2 = GraphConv(F, HID, activation=mx.nd.relu), GraphConv(HID, C)
                elif model == "sage":
                    self.l1, self.l2 = SAGEConv(F, HID, "mean", activation=mx.nd.relu), SAGEConv(HID, C, "mean")
                else:
                    self.l1 = GATConv(F, HID // HEADS, HEADS, activation=lambda h: mx.nd.LeakyReLU(h, act_type="elu"))
                    self.l2 = GATConv(HID, C, 1)

        def forward(self, g, h):
            h = self.l1(g, h).reshape((N, -1))
            return self.l2(g, h).reshape((N, -1))

    net = Net() if net is None else net
    net.initialize(mx.init.Xavier())
    tr = gluon.Trainer(net.collect_params(), "adam", {"learning_rate": 0.01})
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()

    def step():
        with autograd.record():
            loss = loss_fn(net(g, X), Y).mean()
        loss.backward()
        tr.step(1)
    res = {}
    res["epoch_s"] = timed(step, epochs, mx.nd.waitall, cpu=res)
    return base, res


def layer_net_ours(model, g):
    """One of ``LAYERS`` on gluon_suite.graph.nn, as a block ``forward(g, x)`` -> (N, C)."""
    import mxnet as mx
    from mxnet import gluon
    from mxnet.gluon import nn as gnn
    from gluon_suite.graph import nn as gn
    types = mx.nd.array(edge_types(g.num_edges()), dtype="int64")
    variant, model = model, model.replace("_ndrelu", "")

    class Net(gluon.Block):
        def __init__(self):
            super().__init__()
            with self.name_scope():
                # the ReLU between layers is Gluon's block (nd.Activation, as GluonCV's models use);
                # the *_ndrelu variant calls mx.nd.relu, a slower MXNet CPU kernel (see docs/graph.md)
                self.act = mx.nd.relu if variant.endswith("_ndrelu") else gnn.Activation("relu")
                if model == "gin":
                    self.l1 = gn.GINConv(gnn.Dense(HID, in_units=F), "sum")
                    self.l2 = gn.GINConv(gnn.Dense(C, in_units=HID), "sum")
                elif model == "sgc":
                    self.l1 = gn.SGConv(F, C, k=2)
                elif model == "tag":
                    self.l1, self.l2 = gn.TAGConv(F, HID, k=2), gn.TAGConv(HID, C, k=2)
                elif model == "appnp":
                    self.d1, self.d2 = gnn.Dense(HID, in_units=F), gnn.Dense(C, in_units=HID)
                    self.l1 = gn.APPNPConv(10, 0.1)
                elif model == "cheb":
                    self.l1, self.l2 = gn.ChebConv(F, HID, 3), gn.ChebConv(HID, C, 3)
                elif model == "ggnn":
                    self.l1, self.d2 = gn.GatedGraphConv(F, HID, STEPS, RELS), gnn.Dense(C, in_units=HID)
                elif model == "edgeconv":
                    self.l1, self.l2 = gn.EdgeConv(F, HID), gn.EdgeConv(HID, C)
                elif model == "agnn":
                    self.d1, self.d2 = gnn.Dense(HID, in_units=F), gnn.Dense(C, in_units=HID)
                    self.l1, self.l2 = gn.AGNNConv(), gn.AGNNConv()
                elif model == "rgcn":
                    self.l1 = gn.RelGraphConv(F, HID, RELS, "basis", BASES)
                    self.l2 = gn.RelGraphConv(HID, C, RELS, "basis", BASES)

        def forward(self, g, h):
            relu = self.act
            if model in ("gin", "tag", "edgeconv"):
                return self.l2(g, relu(self.l1(g, h)))
            if model == "sgc":
                return self.l1(g, h)
            if model == "appnp":
                return self.l1(g, self.d2(relu(self.d1(h))))
            if model == "cheb":
                return self.l2(g, relu(self.l1(g, h, [2.0])), [2.0])
            if model == "ggnn":
                return self.d2(self.l1(g, h, types))
            if model == "agnn":
                return self.d2(self.l2(g, self.l1(g, relu(self.d1(h)))))
            return self.l2(g, relu(self.l1(g, h, types)), types)
    return Net()


def layer_net_dgl(model, g):
    """One of ``LAYERS`` on dgl.nn.pytorch, as a module ``forward(x)`` -> (N, C) over ``g``."""
    import torch
    import dgl.nn.pytorch as dn
    lin = torch.nn.Linear
    types = torch.tensor(edge_types(g.num_edges()))
    relu = torch.relu
    model = model.replace("_ndrelu", "")    # the variant differs on our side only

    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            if model == "gin":
                self.l1, self.l2 = dn.GINConv(lin(F, HID), "sum"), dn.GINConv(lin(HID, C), "sum")
            elif model == "sgc":
                self.l1 = dn.SGConv(F, C, k=2)
            elif model == "tag":
                self.l1, self.l2 = dn.TAGConv(F, HID, k=2), dn.TAGConv(HID, C, k=2)
            elif model == "appnp":
                self.d1, self.d2, self.l1 = lin(F, HID), lin(HID, C), dn.APPNPConv(10, 0.1)
            elif model == "cheb":   # DGL's PyTorch layer applies ReLU inside by default; ours has none
                self.l1, self.l2 = dn.ChebConv(F, HID, 3, activation=None), dn.ChebConv(HID, C, 3, activation=None)
            elif model == "ggnn":
                self.l1, self.d2 = dn.GatedGraphConv(F, HID, STEPS, RELS), lin(HID, C)
            elif model == "edgeconv":
                self.l1, self.l2 = dn.EdgeConv(F, HID), dn.EdgeConv(HID, C)
            elif model == "agnn":
                self.d1, self.d2, self.l1, self.l2 = lin(F, HID), lin(HID, C), dn.AGNNConv(), dn.AGNNConv()
            elif model == "rgcn":
                self.l1 = dn.RelGraphConv(F, HID, RELS, "basis", BASES)
                self.l2 = dn.RelGraphConv(HID, C, RELS, "basis", BASES)

        def forward(self, h):
            lam = torch.tensor([2.0])
            if model in ("gin", "tag", "edgeconv"):
                return self.l2(g, relu(self.l1(g, h)))
            if model == "sgc":
                return self.l1(g, h)
            if model == "appnp":
                return self.l1(g, self.d2(relu(self.d1(h))))
            if model == "cheb":
                return self.l2(g, relu(self.l1(g, h, lam)), lam)
            if model == "ggnn":
                return self.d2(self.l1(g, h, types))
            if model == "agnn":
                return self.d2(self.l2(g, self.l1(g, relu(self.d1(h)))))
            return self.l2(g, relu(self.l1(g, h, types)), types)
    return Net()


def kernels_ours(g, X, epochs):
    """Forward + backward of each built-in on 8 heads x 8 features (copy_u: 64 features)."""
    import mxnet as mx
    from mxnet import autograd
    from gluon_suite.graph import edge_softmax
    from gluon_suite.graph import function as fn
    Eg = g.num_edges()
    h = X.reshape((N, HEADS, F // HEADS))
    w = mx.nd.random.uniform(shape=(Eg, HEADS, 1))
    for a in (X, h, w):
        a.attach_grad()

    def fb(f):
        def step():
            with autograd.record():
                out = f()
            out.backward(mx.nd.ones_like(out))
        return step

    def update(msg):
        def f():
            with g.local_scope():
                g.ndata["h"], g.edata["w"] = (X if msg == "copy_u" else h), w
                m = fn.copy_u("h", "m") if msg == "copy_u" else fn.u_mul_e("h", "w", "m")
                g.update_all(m, fn.sum("m", "o"))
                return g.ndata["o"]
        return f

    def dot():
        with g.local_scope():
            g.ndata["h"] = h
            g.apply_edges(fn.u_dot_v("h", "h", "s"))
            return g.edata["s"]
    cases = {"copy_u_sum_s": update("copy_u"), "u_mul_e_sum_s": update("u_mul_e"),
             "edge_softmax_s": lambda: edge_softmax(g, w), "u_dot_v_s": dot}
    return {k: timed(fb(f), epochs, mx.nd.waitall) for k, f in cases.items()}


def run_torch(fw, model, epochs, threads, base):
    import numpy as np
    import torch
    torch.set_num_threads(threads)
    if fw == "dgl":
        import dgl
        import dgl.nn as dglnn
    else:
        from torch_geometric.nn import GATConv, GCNConv, SAGEConv
    base = rss_mb()
    src, dst, x, y = make_graph()
    X, Y = torch.tensor(x), torch.tensor(y)
    del x
    if fw == "dgl":
        g = dgl.add_self_loop(dgl.graph((torch.tensor(src), torch.tensor(dst)), num_nodes=N))
        if model == "kernels":
            return base, kernels_dgl(dgl, g, X, epochs)
    elif model in LAYERS:
        raise SystemExit(f"{model}: only ours and DGL run the newer layers")
    else:
        ei = torch.tensor(np.stack([src, dst]), dtype=torch.long)

    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            if fw == "dgl":
                if model == "gcn":
                    self.l1, self.l2 = dglnn.GraphConv(F, HID), dglnn.GraphConv(HID, C)
                elif model == "sage":
                    self.l1, self.l2 = dglnn.SAGEConv(F, HID, "mean"), dglnn.SAGEConv(HID, C, "mean")
                else:
                    self.l1, self.l2 = dglnn.GATConv(F, HID // HEADS, HEADS), dglnn.GATConv(HID, C, 1)
            elif model == "gcn":
                self.l1, self.l2 = GCNConv(F, HID), GCNConv(HID, C)
            elif model == "sage":
                self.l1, self.l2 = SAGEConv(F, HID), SAGEConv(HID, C)
            else:
                self.l1, self.l2 = GATConv(F, HID // HEADS, heads=HEADS), GATConv(HID, C, heads=1)

        def forward(self, x):
            h = self.l1(g, x) if fw == "dgl" else self.l1(x, ei)
            h = h.reshape(N, -1)
            h = torch.nn.functional.elu(h) if model == "gat" else torch.relu(h)
            h = self.l2(g, h) if fw == "dgl" else self.l2(h, ei)
            return h.reshape(N, -1)

    net = layer_net_dgl(model, g) if model in LAYERS else Net()
    opt = torch.optim.Adam(net.parameters(), lr=0.01)

    def step():
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(net(X), Y)
        loss.backward()
        opt.step()
    res = {}
    res["epoch_s"] = timed(step, epochs, cpu=res)
    return base, res


def kernels_dgl(dgl, g, X, epochs):
    import dgl.function as dfn
    import torch
    from dgl.nn.functional import edge_softmax
    Eg = g.num_edges()
    X = X.clone().requires_grad_()
    h = X.detach().reshape(N, HEADS, F // HEADS).clone().requires_grad_()
    w = torch.rand(Eg, HEADS, 1, requires_grad=True)

    def fb(f):
        def step():
            out = f()
            out.backward(torch.ones_like(out))
        return step

    def update(msg):
        def f():
            with g.local_scope():
                g.ndata["h"], g.edata["w"] = (X if msg == "copy_u" else h), w
                m = dfn.copy_u("h", "m") if msg == "copy_u" else dfn.u_mul_e("h", "w", "m")
                g.update_all(m, dfn.sum("m", "o"))
                return g.ndata["o"]
        return f

    def dot():
        with g.local_scope():
            g.ndata["h"] = h
            g.apply_edges(dfn.u_dot_v("h", "h", "s"))
            return g.edata["s"]
    cases = {"copy_u_sum_s": update("copy_u"), "u_mul_e_sum_s": update("u_mul_e"),
             "edge_softmax_s": lambda: edge_softmax(g, w), "u_dot_v_s": dot}
    return {k: timed(fb(f), epochs) for k, f in cases.items()}


def worker(args):
    global N, E
    N, E = args.nodes, args.edges
    base = rss_mb()
    if args.worker.startswith("ours"):
        base, res = run_ours(args.model, args.epochs, args.threads, base)
    else:
        base, res = run_torch(args.worker, args.model, args.epochs, args.threads, base)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps({**res, "peak_rss_mb": peak, "import_rss_mb": base, "peak_above_import_mb": peak - base,
                      "epochs": args.epochs, "versions": _versions(args.worker)}))


def _versions(fw):
    """The framework versions a worker ran with."""
    if fw.startswith("ours"):
        import mxnet
        return {"mxnet": mxnet.__version__}
    import torch
    out = {"torch": torch.__version__}
    if fw == "dgl":
        import dgl
        out["dgl"] = dgl.__version__
    else:
        import torch_geometric
        out["torch_geometric"] = torch_geometric.__version__
    return out


# ---- the protocols (bench/protocols/graph_models.yaml, graph_layers.yaml) ----

KERNELS = ("copy_u_sum", "u_mul_e_sum", "edge_softmax", "u_dot_v")
VENVS = {"dgl": os.path.join(".cache", "dgl-venv", "bin", "python"),
         "pyg": os.path.join(".cache", "pyg-venv", "bin", "python")}


def arm_models(arm, models):
    """The models an arm runs: PyG has no kernel micro-bench and no newer layers; the Python kernels
    run the three models and the kernels only."""
    if arm == "pyg":
        return [m for m in models if m in ("gcn", "gat", "sage")]
    if arm == "ours_python":
        return [m for m in models if m not in LAYERS]
    return list(models)


def worker_metrics(model, out):
    """A worker's JSON line as the protocol's metrics: ``<model>_epoch_s``, ``<model>_epoch_cpu_s``,
    ``<model>_memory_mb`` (peak above import), or ``<kernel>_s`` for the kernels; None for a failed
    worker (``out`` None)."""
    if model == "kernels":
        keys = [f"{k}_s" for k in KERNELS] + ["kernels_memory_mb"]
        if out is None:
            return dict.fromkeys(keys)
        return {**{f"{k}_s": out[f"{k}_s"] for k in KERNELS}, "kernels_memory_mb": out["peak_above_import_mb"]}
    if out is None:
        return dict.fromkeys([f"{model}_epoch_s", f"{model}_epoch_cpu_s", f"{model}_memory_mb"])
    return {f"{model}_epoch_s": out["epoch_s"], f"{model}_epoch_cpu_s": out["epoch_cpu_s"],
            f"{model}_memory_mb": out["peak_above_import_mb"]}


def rotated(items, k):
    """``items`` starting at position k mod len: repeat k's order of the arms."""
    items = list(items)
    if not items:
        return items
    k %= len(items)
    return items[k:] + items[:k]


def ratio_cell(a, b, digits=2):
    """Geometric mean of the per-repeat ratios a_i / b_i and their range, e.g. "0.83x (0.74-0.91)";
    "n/a" without a pair."""
    pairs = [(x, y) for x, y in zip(a, b) if x is not None and y is not None and x > 0 and y > 0]
    if not pairs:
        return "n/a"
    rs = [x / y for x, y in pairs]
    gm = math.exp(sum(math.log(r) for r in rs) / len(rs))
    return f"{gm:.{digits}f}x" + (f" ({min(rs):.{digits}f}-{max(rs):.{digits}f})" if len(rs) > 1 else "")


def mean_cell(xs, fmt="{:.3f} s"):
    xs = [x for x in xs if x is not None]
    return fmt.format(sum(xs) / len(xs)) if xs else "n/a"


def _run_worker(python, fw, model, epochs, threads, env):
    """One worker process; its JSON line, or (None, the last line of its stderr) when it failed."""
    fenv = dict(env, GLUON_SUITE_GRAPH_KERNELS="off") if fw == "ours_python" else env
    p = subprocess.run([python, os.path.abspath(__file__), "--worker", fw, "--model", model,
                        "--epochs", str(epochs), "--threads", str(threads)], capture_output=True, text=True, env=fenv)
    if p.returncode != 0:
        return None, (p.stderr.strip().splitlines() or ["failed"])[-1]
    return json.loads(p.stdout.strip().splitlines()[-1]), None


def evidence(ctx):
    """The protocols graph_models and graph_layers: every repeat ("seed") runs every arm once, in an
    order rotated by the repeat, each arm's models one worker process each; tables of epoch times,
    ratios to DGL (and PyG) and memory."""
    from gluon_suite.utils.errors import UserError
    p = ctx.params
    models, epochs, threads = list(p["models"]), int(p["epochs"]), int(p["threads"])
    unknown = [m for m in models if m not in ("gcn", "gat", "sage", "kernels", *LAYERS)]
    if unknown:
        raise UserError(f"protocol {ctx.protocol.name}: unknown model(s) {', '.join(unknown)}")
    pythons = {"ours": sys.executable, "ours_python": sys.executable}
    absent = {}
    for fw, rel in VENVS.items():
        if fw not in ctx.arms:
            continue
        path = os.path.join(ctx.root, rel)
        if os.path.exists(path):
            pythons[fw] = path
        elif ctx.quick:
            absent[fw] = f"{rel} not found (make bench-deps builds it): not measured"
        else:
            raise UserError(f"protocol {ctx.protocol.name} compares against {fw}, whose environment {rel} does not "
                            f"exist; run 'make bench-deps' first (a --quick run measures ours only)")
    if absent:
        ctx.note("absent", absent)
    arms = [a for a in ctx.arms if a in pythons]
    env = dict(os.environ, OMP_NUM_THREADS=str(threads), MXNET_CPU_WORKER_NTHREADS="1",
               MKL_NUM_THREADS=str(threads), MXNET_STORAGE_FALLBACK_LOG_VERBOSE="0")
    runs, failures, versions = {a: [] for a in arms}, {}, {}

    def one_arm(arm):
        metrics = {}
        for model in arm_models(arm, models):
            out, err = _run_worker(pythons[arm], arm, model, epochs, threads, env)
            if err:
                failures.setdefault(f"{arm} {model}", err)
            else:
                versions[arm] = out["versions"]
            metrics.update(worker_metrics(model, out))
        return metrics
    plan = [(seed, arm) for i, seed in enumerate(ctx.seeds) for arm in rotated(arms, i)]
    for seed, arm in ctx.progress(plan, desc=f"{ctx.protocol.name} runs"):
        runs[arm].append(ctx.measure(arm, seed, lambda: one_arm(arm)))
    ctx.note("framework_versions", versions)
    if failures:
        ctx.note("failures", failures)
    ctx.note("graph", {"nodes": N, "edges": E, "self_loops": True, "features": F, "hidden": HID, "classes": C,
                       "gat_heads": HEADS})

    def col(arm, key):
        return [r.get(key) for r in runs.get(arm, [])]
    model_rows = [m for m in models if m in ("gcn", "gat", "sage")]
    names = {"gcn": "GCN (hidden 64)", "gat": "GAT (8 heads x 8)", "sage": "GraphSAGE-mean (hidden 64)"}
    if model_rows:
        rows = []
        for m in model_rows:
            t, c, mem = f"{m}_epoch_s", f"{m}_epoch_cpu_s", f"{m}_memory_mb"
            rows.append([names[m], *(mean_cell(col(a, t)) for a in ("ours", "ours_python", "dgl", "pyg")),
                         ratio_cell(col("ours", t), col("dgl", t)), ratio_cell(col("ours", c), col("dgl", c)),
                         ratio_cell(col("ours", t), col("pyg", t)),
                         " / ".join(mean_cell(col(a, mem), "{:.0f}") for a in ("ours", "dgl", "pyg"))])
        ctx.table("models", ["model", "ours", "ours, Python kernels", "DGL", "PyG",
                             "ours / DGL time (per-repeat range)", "ours / DGL CPU time (range)",
                             "ours / PyG time (range)", "memory MB ours / DGL / PyG"], rows,
                  caption=f"seconds per training epoch, mean over repeats of each repeat's median of {epochs} epochs; "
                          "ratios: geometric mean of the per-repeat ratios")
    if "kernels" in models:
        rows = [[k.replace("_sum", " + sum").replace("_", " "),
                 *(mean_cell(col(a, f"{k}_s")) for a in ("ours", "ours_python", "dgl")),
                 ratio_cell(col("ours", f"{k}_s"), col("dgl", f"{k}_s"))] for k in KERNELS]
        ctx.table("kernels", ["kernel", "ours", "ours, Python kernels", "DGL", "ours / DGL (per-repeat range)"], rows,
                  caption="one forward + backward on 8 heads x 8 features (copy_u: 64 features)")
    layer_rows = [m for m in models if m in LAYERS]
    if layer_rows:
        rows = []
        for m in layer_rows:
            t, c, mem = f"{m}_epoch_s", f"{m}_epoch_cpu_s", f"{m}_memory_mb"
            rows.append([m, LAYERS[m], f"{mean_cell(col('ours', t), '{:.3f}')} / {mean_cell(col('ours', c))}",
                         f"{mean_cell(col('dgl', t), '{:.3f}')} / {mean_cell(col('dgl', c))}",
                         ratio_cell(col("ours", t), col("dgl", t)), ratio_cell(col("ours", c), col("dgl", c)),
                         f"{mean_cell(col('ours', mem), '{:.0f}')} / {mean_cell(col('dgl', mem), '{:.0f}')} "
                         f"({ratio_cell(col('ours', mem), col('dgl', mem)).split(' ')[0]})"])
        ctx.table("layers", ["model", "layers", "ours epoch / CPU", "DGL epoch / CPU",
                             "ours / DGL time (per-repeat range)", "ours / DGL CPU time (range)",
                             "memory MB ours / DGL (ratio)"], rows,
                  caption=f"seconds per training epoch, mean over repeats of each repeat's median of {epochs} epochs")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0], allow_abbrev=False)
    ap.add_argument("--worker", choices=FRAMEWORKS, help="run one (framework, model) and print its JSON line")
    ap.add_argument("--model", choices=["gcn", "gat", "sage", "kernels", *LAYERS])
    ap.add_argument("--epochs", type=int, default=3)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--nodes", type=int, default=N, help=argparse.SUPPRESS)
    ap.add_argument("--edges", type=int, default=E, help=argparse.SUPPRESS)
    args, rest = ap.parse_known_args()
    if args.worker:
        if rest or not args.model:
            ap.error("--worker needs --model and takes no other arguments")
        return worker(args)
    # not a worker: the protocols run through the runner (default graph_models)
    from gluon_suite.cli import entry
    name = rest[0] if rest and not rest[0].startswith("-") else "graph_models"
    sys.argv = ["gluon-suite", "bench", "run", name, *[a for a in rest if a != name]]
    entry()


if __name__ == "__main__":
    sys.path.insert(0, REPO)
    main()
