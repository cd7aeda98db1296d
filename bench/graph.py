#!/usr/bin/env python
"""GCN, GAT and GraphSAGE training-epoch time and peak memory: gluon_suite.graph on its compiled
kernels and on its Python kernels, DGL and PyTorch Geometric, side by side in one run, on the same
synthetic graph (100k nodes, 1M random edges plus self-loops, 64 features, hidden 64 for GCN and
GraphSAGE-mean, 8 heads x 8 for GAT, 16 classes, Adam, full graph), CPU, same thread count; plus
one kernel micro-bench (forward + backward) per built-in: copy_u+sum, u_mul_e+sum, edge softmax,
u_dot_v. Beside them, the newer layers against their DGL (PyTorch) counterparts with the same
constructor arguments and sizes (``LAYERS``: GINConv, SGConv, TAGConv, APPNPConv, ChebConv,
GatedGraphConv, EdgeConv, AGNNConv, RelGraphConv), ours and DGL only (``--layer-epochs`` and
``--layer-repeats`` may shorten them). A ReLU between two layers is Gluon's ``nn.Activation('relu')``
block on our side and ``torch.relu`` on DGL's; ``gin_ndrelu`` repeats GIN with ``mx.nd.relu`` there,
which MXNet 1.9.1 runs about five times slower on CPU (runs before 2026-12-05's third used
``mx.nd.relu`` in every layer model).

DGL and PyG run from their own virtual environments, so the suite's pins stay untouched. DGL 2.1.0
(the newest on the registry for Python 3.11) ships its graphbolt library, which ``import dgl``
loads, only for torch 2.0.0-2.2.1, so it gets torch 2.2.1 (the registry's build runs on CPU), with
NumPy 1, setuptools < 70 (it imports ``setuptools.extern``) and torchdata 0.7.1 (still has
datapipes); PyG gets torch 2.13.0 CPU:

    python3.11 -m venv .cache/dgl-venv && .cache/dgl-venv/bin/pip install torch==2.2.1 dgl==2.1.0 \
        "numpy<2" "setuptools<70" pandas pydantic pyyaml psutil \
        && .cache/dgl-venv/bin/pip install --no-deps torchdata==0.7.1
    python3.11 -m venv .cache/pyg-venv && .cache/pyg-venv/bin/pip install torch==2.13.0 torch_geometric psutil
    .venv/bin/python bench/graph.py [--dgl-python ...] [--pyg-python ...] [--models gcn,gat,sage]

Each (framework, model) runs in a fresh process. Peak memory is reported above the process's
import baseline: its maximum RSS minus its RSS once the framework is imported, before the graph is
built. ``--repeats`` runs every framework that many times, rotating which goes first, so that
load from other jobs on the machine hits all alike; the table gives medians and the range of the
per-repeat time ratios, and the epochs' process CPU time beside their wall time. ``--large`` adds one GCN and one GAT epoch of ours and DGL's on 1M nodes
and 10M edges: memory must grow with the edges, not with edges x features. Writes
bench/results/graph.json and prints a table.

Threads: ``OMP_NUM_THREADS`` (and torch's intra-op threads) = ``--threads``; MXNet's engine keeps
its default of one CPU worker thread, each operator using the OpenMP threads. (Runs before
2026-12-05's second run gave the engine ``--threads`` workers as well: two operators of two
OpenMP threads each then shared the two cores, and short operators waited on each other.)
"""
import argparse
import json
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
                      "epochs": args.epochs}))


def ratios(res, num, den, by_fw):
    """Median ratios num/den of time and memory, and the per-repeat time-ratio range."""
    if num not in res or den not in res:
        return
    a, b = res[num], res[den]
    out = {}
    for key in [k for k in a if k.endswith("_s")]:
        per = [x[key] / y[key] for x, y in zip(by_fw[num], by_fw[den])]
        out[key[:-2]] = {"ratio": a[key] / b[key], "per_repeat": [min(per), max(per)]}
    out["memory_above_import"] = a["peak_above_import_mb"] / b["peak_above_import_mb"]
    res[f"{num}_over_{den}"] = out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--epochs", type=int, default=5)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--repeats", type=int, default=3, help="runs of each (framework, model), interleaved")
    ap.add_argument("--layer-epochs", type=int, help="epochs for the newer layers (default: --epochs)")
    ap.add_argument("--layer-repeats", type=int, help="repeats for the newer layers (default: --repeats)")
    ap.add_argument("--models", default="gcn,gat,sage,kernels," + ",".join(LAYERS),
                    help="any of gcn, gat, sage, kernels, " + ", ".join(LAYERS))
    ap.add_argument("--frameworks", default=",".join(FRAMEWORKS))
    ap.add_argument("--dgl-python", default=os.path.join(REPO, ".cache", "dgl-venv", "bin", "python"))
    ap.add_argument("--pyg-python", default=os.path.join(REPO, ".cache", "pyg-venv", "bin", "python"))
    ap.add_argument("--out", default=os.path.join(HERE, "results", "graph.json"))
    ap.add_argument("--large", action="store_true", help="also one epoch on 1M nodes / 10M edges")
    ap.add_argument("--nodes", type=int, default=N, help=argparse.SUPPRESS)
    ap.add_argument("--edges", type=int, default=E, help=argparse.SUPPRESS)
    ap.add_argument("--worker", choices=FRAMEWORKS, help=argparse.SUPPRESS)
    ap.add_argument("--model", choices=["gcn", "gat", "sage", "kernels", *LAYERS], help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        return worker(args)
    models = args.models.split(",")
    unknown = [m for m in models if m not in ("gcn", "gat", "sage", "kernels", *LAYERS)]
    if unknown:
        ap.error(f"unknown model(s) {', '.join(unknown)}")
    env = dict(os.environ, OMP_NUM_THREADS=str(args.threads), MXNET_CPU_WORKER_NTHREADS="1",
               MKL_NUM_THREADS=str(args.threads), MXNET_STORAGE_FALLBACK_LOG_VERBOSE="0")
    pythons = {"ours": sys.executable, "ours_python": sys.executable, "dgl": args.dgl_python,
               "pyg": args.pyg_python}
    pythons = {k: v for k, v in pythons.items() if k in args.frameworks.split(",")}
    for fw in ("dgl", "pyg"):
        if fw in pythons and not os.path.exists(pythons[fw]):
            print(f"skipping {fw}: {pythons[fw]} not found (see the module docstring)")
            del pythons[fw]
    runs, failures, skipped, plan = {}, {}, {}, {}
    for model in models:
        fws = list(pythons)
        if model == "kernels":
            fws = [f for f in fws if f != "pyg"]
        if model in LAYERS:
            fws = [f for f in fws if f in ("ours", "dgl")]
            left = [f for f in pythons if f not in fws]
            if left:
                skipped[model] = {f: "not run: the newer layers are compared with DGL's only" for f in left}
        epochs = args.layer_epochs or args.epochs if model in LAYERS else args.epochs
        repeats = args.layer_repeats or args.repeats if model in LAYERS else args.repeats
        plan[model] = {"epochs": epochs, "repeats": repeats}
        for rep in range(repeats):
            order = fws[rep % len(fws):] + fws[:rep % len(fws)] if fws else []
            for fw in order:
                load = os.getloadavg()[0]
                fenv = dict(env, GLUON_SUITE_GRAPH_KERNELS="off") if fw == "ours_python" else env
                p = subprocess.run([pythons[fw], os.path.abspath(__file__), "--worker", fw, "--model", model,
                                    "--epochs", str(epochs), "--threads", str(args.threads)],
                                   capture_output=True, text=True, env=fenv)
                if p.returncode != 0:
                    failures.setdefault(model, {})[fw] = p.stderr.strip().splitlines()[-1:] or ["failed"]
                    print(f"{fw} {model} failed:\n{p.stderr[-2000:]}")
                    continue
                r = json.loads(p.stdout.strip().splitlines()[-1])
                r["load_before"] = round(load, 2)
                runs.setdefault(model, {}).setdefault(fw, []).append(r)
                print(f"{model} {fw} #{rep + 1}: {r}", flush=True)
    large = {}
    for model in ("gcn", "gat") if args.large else ():
        for fw in [f for f in ("ours", "dgl") if f in pythons]:
            p = subprocess.run([pythons[fw], os.path.abspath(__file__), "--worker", fw, "--model", model,
                                "--epochs", "1", "--threads", str(args.threads), "--nodes", "1000000",
                                "--edges", "10000000"], capture_output=True, text=True, env=env)
            if p.returncode != 0:
                failures.setdefault("large_" + model, {})[fw] = p.stderr.strip().splitlines()[-1:] or ["failed"]
                continue
            r = json.loads(p.stdout.strip().splitlines()[-1])
            r["edges_x_features_mb"] = 10_000_000 * F * 4 / 2 ** 20
            large.setdefault(model, {})[fw] = r
            print(f"large {model} {fw}: {r}", flush=True)
    results = {"large_graph_1M_nodes_10M_edges": large} if large else {}
    today = time.strftime("%Y-%m-%d")
    for model, by_fw in runs.items():
        res = results[model] = {}
        for fw, rs in by_fw.items():
            keys = [k for k in rs[0] if k.endswith("_s") or k.endswith("_mb")]
            res[fw] = {k: statistics.median(r[k] for r in rs) for k in keys}
            res[fw]["runs"] = rs
        for num, den in (("ours", "dgl"), ("ours", "pyg"), ("ours", "ours_python"), ("ours_python", "dgl")):
            ratios(res, num, den, by_fw)
        loads = [r["load_before"] for rs in by_fw.values() for r in rs]
        res["load_before_range"] = [min(loads), max(loads)]
        res["date"], res["epochs_measured"], res["repeats"] = today, plan[model]["epochs"], plan[model]["repeats"]
        if model in LAYERS:
            res["model"] = LAYERS[model]
        if model in skipped:
            res["skipped"] = skipped[model]
    # models not run this time keep their last measured entry (each entry carries its own date)
    previous = {}
    if os.path.exists(args.out):
        with open(args.out) as f:
            previous = json.load(f)
    merged = dict(previous.get("results", {}))
    for model, res in results.items():
        old = merged.get(model, {})
        left = [fw for fw in FRAMEWORKS if fw in old and fw not in res]
        if left:   # frameworks not rerun: their last entry stays, whole, beside the new one
            res["earlier_run"] = old.get("earlier_run", old)
        elif "earlier_run" in old:     # a partial rerun of a partial rerun keeps the first entry
            res["earlier_run"] = old["earlier_run"]
        merged[model] = res
    old_failures = {k: v for k, v in previous.get("failures", {}).items() if k not in runs and k not in results}
    out = {**previous, "benchmark": "graph", "date": today, "nodes": N, "edges": E,
           "features": F, "hidden": HID, "classes": C, "gat_heads": HEADS, "threads": args.threads,
           "epochs_measured": args.epochs, "repeats": args.repeats, "results": merged,
           "failures": {**old_failures, **failures}}
    sys.path.insert(0, REPO)
    from gluon_suite.utils import write_json
    write_json(args.out, out)
    print(f"\n{N} nodes, {E} edges (+ self-loops), {F} features, {args.threads} threads; medians over repeats "
          f"(each the median of its epochs); memory: peak above import, MB; load: 1-minute load average "
          f"before each run")
    nan = float("nan")
    fws = [fw for fw in FRAMEWORKS if fw in pythons]
    print(f"{'model':<26}" + "".join(f"{fw:>12}" for fw in fws) + f"{'ours/dgl':>10}{'range':>12}"
          f"{'ours/old':>10}{'load':>12}{'reps x ep':>10}")
    for model, r in results.items():
        if model.startswith("large"):
            continue
        keys = [k for k in r.get("ours", r.get("dgl", {})) if k.endswith("_s")]
        lo, hi = r["load_before_range"]
        reps = f"{r['repeats']}x{r['epochs_measured']}"
        for key in keys + (["peak_above_import_mb"] if model != "kernels" else []):
            vs = r.get("ours_over_dgl", {}).get(key[:-2], {})
            old = r.get("ours_over_ours_python", {}).get(key[:-2], {})
            if key.endswith("_mb"):
                vs = {"ratio": r.get("ours_over_dgl", {}).get("memory_above_import", nan), "per_repeat": [nan, nan]}
                old = {"ratio": r.get("ours_over_ours_python", {}).get("memory_above_import", nan)}
            per = vs.get("per_repeat", [nan, nan])
            print(f"{model + ' ' + key:<26}" + "".join(f"{r.get(fw, {}).get(key, nan):>12.3f}" for fw in fws)
                  + f"{vs.get('ratio', nan):>10.2f}{f'{per[0]:.2f}-{per[1]:.2f}':>12}{old.get('ratio', nan):>10.2f}"
                  + f"{f'{lo:.1f}-{hi:.1f}':>12}{reps:>10}")
    for model, f in failures.items():
        print(f"failed: {model}: {f}")
    print(f"results: {os.path.relpath(args.out, REPO)}")


if __name__ == "__main__":
    main()
