"""Every built-in message function (copy_u/copy_e, their copy_src/copy_edge aliases, and the full
{u, v, e} x {add, sub, mul, div, dot} x {u, v, e} table) with every built-in reducer (sum, mean,
max, min, prod), against float64 loops over the edge list; and apply_edges for every message."""
import itertools

import mxnet as mx
import numpy as np
import pytest

import gluon_suite.graph as dgl
from gluon_suite.graph import function as fn

# parallel edges (0->1 twice), a self-loop (2->2), node 5 receives nothing
SRC = np.array([0, 0, 1, 2, 2, 3, 5, 1, 4])
DST = np.array([1, 1, 2, 2, 0, 4, 3, 4, 0])
N, F = 6, 3
RS = np.random.RandomState(0)
X = {"u": RS.uniform(0.5, 1.5, (N, F)), "v": RS.uniform(0.5, 1.5, (N, F)), "e": RS.uniform(0.5, 1.5, (len(SRC), F))}
BINARY = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.divide,
          "dot": lambda a, b: (a * b).sum(-1, keepdims=True)}
MESSAGES = [("copy_u", "u", None, None), ("copy_src", "u", None, None), ("copy_e", "e", None, None),
            ("copy_edge", "e", None, None)] + \
    [(f"{l}_{o}_{r}", l, o, r) for l, r in itertools.permutations("uve", 2) for o in BINARY]
REDUCERS = {"sum": np.sum, "mean": np.mean, "max": np.max, "min": np.min, "prod": np.prod}


def edge_values(lhs, op, rhs):
    """The message on every edge, by a loop over the edge list."""
    def at(target, i):
        return X[target][{"u": SRC[i], "v": DST[i], "e": i}[target]]
    rows = [at(lhs, i) if op is None else BINARY[op](at(lhs, i), at(rhs, i)) for i in range(len(SRC))]
    return np.array(rows)


def graph(ctx=mx.cpu(), idtype="int64"):
    g = dgl.graph((SRC, DST), num_nodes=N, idtype=idtype, device=ctx)
    g.ndata["u"] = mx.nd.array(X["u"], ctx=ctx)
    g.ndata["v"] = mx.nd.array(X["v"], ctx=ctx)
    g.edata["e"] = mx.nd.array(X["e"], ctx=ctx)
    return g


def message(name, lhs, op, rhs):
    if op is None:
        return getattr(fn, name)(lhs, "m")
    return getattr(fn, name)(lhs, rhs, "m")


@pytest.mark.parametrize("name, lhs, op, rhs", MESSAGES, ids=[m[0] for m in MESSAGES])
@pytest.mark.parametrize("reducer", sorted(REDUCERS))
def test_builtin_pair_matches_loop(name, lhs, op, rhs, reducer):
    g = graph()
    g.update_all(message(name, lhs, op, rhs), getattr(fn, reducer)("m", "out"))
    m = edge_values(lhs, op, rhs)
    ref = np.zeros((N, m.shape[1]))
    for v in range(N):
        mine = m[DST == v]
        if len(mine):
            ref[v] = REDUCERS[reducer](mine, axis=0)
    np.testing.assert_allclose(g.ndata["out"].asnumpy(), ref, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("name, lhs, op, rhs", [m for m in MESSAGES if m[2]], ids=[m[0] for m in MESSAGES if m[2]])
def test_apply_edges_builtin_matches_loop(name, lhs, op, rhs):
    g = graph()
    g.apply_edges(message(name, lhs, op, rhs))
    np.testing.assert_allclose(g.edata["m"].asnumpy(), edge_values(lhs, op, rhs), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("ctx", [mx.cpu(0), mx.cpu(1)], ids=["cpu0", "cpu1"])
@pytest.mark.parametrize("idtype", ["int32", "int64"])
def test_table_runs_on_the_graphs_context_and_id_type(ctx, idtype):
    g = graph(ctx, idtype)
    for name, lhs, op, rhs in (("u_mul_e", "u", "mul", "e"), ("v_sub_u", "v", "sub", "u"), ("copy_e", "e", None, None)):
        for reducer in ("sum", "max", "prod"):
            g.update_all(message(name, lhs, op, rhs), getattr(fn, reducer)("m", "out"))
            out = g.ndata["out"]
            assert out.context == ctx
            m = edge_values(lhs, op, rhs)
            ref = np.array([REDUCERS[reducer](m[DST == v], axis=0) if (DST == v).any() else np.zeros(F)
                            for v in range(N)])
            np.testing.assert_allclose(out.asnumpy(), ref, rtol=1e-5, atol=1e-5)


def test_prod_reduce_gradient_matches_product_rule():
    g = graph()
    x = mx.nd.array(X["u"])
    x.attach_grad()
    with mx.autograd.record():
        g.ndata["x"] = x
        g.update_all(fn.copy_u("x", "m"), fn.prod("m", "p"))
        loss = g.ndata["p"].sum()
    loss.backward()
    ref = np.zeros((N, F))
    for v in range(N):
        idx = np.flatnonzero(DST == v)
        for k in idx:                       # d prod / d x[src[k]] = prod of the other messages
            ref[SRC[k]] += np.prod(X["u"][SRC[np.setdiff1d(idx, [k])]], axis=0)
    np.testing.assert_allclose(x.grad.asnumpy(), ref, rtol=1e-5, atol=1e-5)


def test_aliases_are_the_same_builtins():
    assert fn.copy_src("h", "m") == fn.copy_u("h", "m")
    assert fn.copy_edge("w", "m") == fn.copy_e("w", "m")
    assert fn.copy_src(src="h", out="m") == fn.copy_u("h", "m")
    assert fn.copy_edge(edge="w", out="m") == fn.copy_e("w", "m")
