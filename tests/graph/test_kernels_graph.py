"""The graph API on the compiled kernels: every built-in (message, reduce) pair and edge message
goes through them and matches a float64 per-edge loop; no kernel copies features to the host
(``asnumpy``) in forward or backward; a failed build or load falls back with one line."""
import os
import subprocess
import sys

import mxnet as mx
import numpy as np
import pytest
from mxnet import autograd

from gluon_suite.graph import Graph, edge_softmax, native
from gluon_suite.graph import function as fn
from gluon_suite.graph.nn import GATConv, GraphConv, SAGEConv

from ..conftest import REPO

N, H, F = 7, 2, 3
SRC = np.array([0, 0, 1, 2, 2, 3, 3, 0, 5, 5, 1, 3, 2])     # parallel 0->1, self-loops 2, 3
DST = np.array([1, 1, 2, 2, 3, 3, 4, 4, 0, 4, 0, 1, 4])     # 5 and 6 receive nothing


def message(op, x, e, u, v, k):
    """One edge's message in float64 (lower-rank side padded with trailing 1s)."""
    if op == "copy_u":
        return x[u]
    if op == "copy_e":
        return e[k]
    lt, o, rt = op.split("_")
    side = {"u": x[u], "v": x[v], "e": e[k]}
    a, b = side[lt], side[rt]
    a = a.reshape(a.shape + (1,) * (b.ndim - a.ndim)) if a.ndim < b.ndim else a
    b = b.reshape(b.shape + (1,) * (a.ndim - b.ndim)) if b.ndim < a.ndim else b
    if o == "dot":
        return (a * b).sum(-1, keepdims=True)
    return {"add": a + b, "sub": a - b, "mul": a * b, "div": a / b}[o]


def reference(op, red, x, e):
    msgs = [message(op, x, e, u, v, k) for k, (u, v) in enumerate(zip(SRC, DST))]
    shape = np.broadcast_shapes(*[m.shape for m in msgs])
    out = np.zeros((N,) + shape)
    for v in range(N):
        box = np.stack([np.broadcast_to(msgs[k], shape) for k in np.flatnonzero(DST == v)] or [np.zeros(shape)])
        if (DST == v).any():
            out[v] = {"sum": np.sum, "mean": np.mean, "max": np.max, "min": np.min}[red](box, axis=0)
    return out


PAIRS = ["copy_u", "copy_e"] + [f"{a}_{o}_{b}" for a, b in (("u", "e"), ("e", "u"), ("u", "v"), ("v", "e"))
                                for o in ("add", "sub", "mul", "div")] + ["u_dot_v", "u_dot_e"]


@pytest.mark.parametrize("red", ["sum", "mean", "max", "min"])
@pytest.mark.parametrize("op", PAIRS)
def test_every_builtin_pair_runs_on_the_compiled_kernels(op, red, monkeypatch):
    calls = []
    for name in ("gspmm", "gsddmm"):
        real = getattr(native, name)
        monkeypatch.setattr(native, name, lambda *a, _real=real, _n=name, **k: calls.append(_n) or _real(*a, **k))
    rs = np.random.RandomState(len(op) * 7 + len(red))
    x = rs.uniform(0.5, 1.5, size=(N, H, F)) * rs.choice([-1, 1], size=(N, H, F))
    e = rs.uniform(0.5, 1.5, size=(len(SRC), H, 1 if "dot" not in op else F))
    g = Graph((SRC, DST), num_nodes=N)
    X, E = mx.nd.array(x), mx.nd.array(e)
    X.attach_grad(), E.attach_grad()
    with autograd.record():
        g.ndata["x"], g.edata["e"] = X, E
        if op in ("copy_u", "copy_e"):
            msg = getattr(fn, op)("x" if op == "copy_u" else "e", "m")
        else:     # the first and last letters name the operands' sides
            msg = getattr(fn, op)("x" if op[0] in "uv" else "e", "x" if op[-1] in "uv" else "e", "m")
        g.update_all(msg, getattr(fn, red)("m", "out"))
        out = g.ndata["out"]
        out.backward(mx.nd.ones_like(out))
    np.testing.assert_allclose(out.asnumpy(), reference(op, red, x, e), rtol=1e-5, atol=1e-5)
    assert calls and "gspmm" in calls
    # gradient: central differences of the float64 reference
    for arr, nd in ((x, X), (e, E)):
        num = np.zeros_like(arr)
        for j in np.ndindex(arr.shape):
            arr[j] += 1e-6
            up = reference(op, red, x, e).sum()
            arr[j] -= 2e-6
            num[j] = (up - reference(op, red, x, e).sum()) / 2e-6
            arr[j] += 1e-6
        np.testing.assert_allclose(nd.grad.asnumpy(), num, rtol=1e-4, atol=1e-4)


def test_edge_softmax_by_source_on_the_compiled_kernels():
    g = Graph((SRC, DST), num_nodes=N)
    s = np.random.RandomState(0).normal(size=(len(SRC), H))
    a = edge_softmax(g, mx.nd.array(s), norm_by="src").asnumpy()
    for u in range(N):
        k = np.flatnonzero(SRC == u)
        if len(k):
            z = np.exp(s[k] - s[k].max(0))
            np.testing.assert_allclose(a[k], z / z.sum(0), rtol=1e-5)


def test_no_kernel_copies_features_to_the_host(monkeypatch):
    """Forward and backward of GraphConv, SAGEConv (mean, max), GATConv (with attention dropout)
    and the built-in messages, with NDArray.asnumpy raising."""
    rs = np.random.RandomState(0)
    g = Graph((SRC, DST), num_nodes=N).add_self_loop()
    layers = [GraphConv(F, 4), SAGEConv(F, 4, "mean"), SAGEConv(F, 4, "pool"), GATConv(F, 2, H, attn_drop=0.5)]
    for layer in layers:
        layer.initialize()
    x = mx.nd.array(rs.normal(size=(N, F)))
    w = mx.nd.array(rs.normal(size=(g.num_edges(), H, 1)))
    x.attach_grad(), w.attach_grad()

    def boom(self):
        raise AssertionError("a graph kernel called asnumpy()")
    monkeypatch.setattr(mx.nd.NDArray, "asnumpy", boom)
    with autograd.record():
        outs = [layer(g, x).sum() for layer in layers]
        g.ndata["h"] = x.reshape((N, 1, F)).broadcast_to((N, H, F))
        g.edata["w"] = w
        g.apply_edges(fn.u_dot_v("h", "h", "d"))
        g.edata["a"] = edge_softmax(g, g.edata["d"] * w)
        for red in ("sum", "mean", "max", "min"):
            g.update_all(fn.u_mul_e("h", "a", "m"), getattr(fn, red)("m", "o"))
            outs.append(g.ndata["o"].sum())
        g.update_all(fn.copy_e("a", "m"), fn.max("m", "o"))
        outs.append(g.ndata["o"].sum())
        loss = mx.nd.add_n(*outs)
    loss.backward()
    mx.nd.waitall()
    monkeypatch.undo()
    assert np.isfinite(x.grad.asnumpy()).all() and np.abs(w.grad.asnumpy()).sum() > 0


def python_snippet(env_value):
    code = ("import mxnet as mx, numpy as np\n"
            "from gluon_suite.graph import Graph, function as fn\n"
            "g = Graph(([0, 1, 2], [1, 2, 1]), num_nodes=3)\n"
            "g.ndata['x'] = mx.nd.array([[1.], [2.], [4.]])\n"
            "g.update_all(fn.copy_u('x', 'm'), fn.sum('m', 'y'))\n"
            "print(g.ndata['y'].asnumpy().ravel().tolist())\n")
    env = dict(os.environ, GLUON_SUITE_GRAPH_KERNELS=env_value)
    return subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=600,
                          cwd=REPO)


def fallback_lines(stderr):
    return [ln for ln in stderr.splitlines() if "compiled kernels unavailable" in ln]


def test_failed_build_says_so_and_naming_the_missing_library_is_refused(tmp_path):
    """A compiler that fails: ``make kernels`` still succeeds and says so; pointing the package at
    the library that was not built is refused in one line naming the variable (a file that
    GLUON_SUITE_GRAPH_KERNELS names must exist), and no kernel runs."""
    p = subprocess.run(["make", "-s", "kernels", f"KERNELS_DIR={tmp_path}", "CXX=false"], cwd=REPO,
                       capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "graph kernels not built" in p.stdout + p.stderr
    lib = tmp_path / "libgs_graph_kernels.so"
    assert not lib.exists()
    r = python_snippet(str(lib))
    assert r.returncode != 0 and r.stdout.strip() == "" and not fallback_lines(r.stderr)
    last = r.stderr.strip().splitlines()[-1]
    assert last.startswith(f"gluon_suite.utils.errors.UserError: environment variable GLUON_SUITE_GRAPH_KERNELS={str(lib)!r} "
                           "names no file"), r.stderr[-2000:]


def test_off_uses_the_python_kernels_without_a_word():
    r = python_snippet("off")
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "[0.0, 5.0, 2.0]" and not fallback_lines(r.stderr)


def test_library_that_does_not_load_falls_back_with_one_line(tmp_path):
    bad = tmp_path / "libbroken.so"
    bad.write_bytes(b"not a shared library")
    r = python_snippet(str(bad))
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "[0.0, 5.0, 2.0]"
    lines = fallback_lines(r.stderr)
    assert len(lines) == 1 and "did not load" in lines[0]


def test_built_library_loads_without_a_word():
    r = python_snippet("")
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "[0.0, 5.0, 2.0]" and not fallback_lines(r.stderr)


def test_kernels_run_after_horovod_made_libmxnet_global():
    """Horovod loads libmxnet.so with global symbols; the kernels must still call their own copy
    of MXNet's extension API (they aborted in free() when they did not)."""
    code = ("import horovod.mxnet\n"
            "import mxnet as mx\n"
            "from gluon_suite.graph import Graph, native, function as fn\n"
            "assert native.LOADED, native.REASON\n"
            "g = Graph(([0, 1, 2], [1, 2, 1]), num_nodes=3)\n"
            "g.ndata['x'] = mx.nd.array([[1.], [2.], [4.]])\n"
            "g.update_all(fn.copy_u('x', 'm'), fn.max('m', 'y'))\n"
            "print(g.ndata['y'].asnumpy().ravel().tolist())\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600, cwd=REPO)
    assert r.returncode == 0, r.stderr[-2000:]
    assert r.stdout.strip().splitlines()[-1] == "[0.0, 4.0, 2.0]"


@pytest.mark.parametrize("compiled", [True, False])
@pytest.mark.parametrize("reducer", ["sum", "mean", "max", "min"])
def test_segment_reduce_matches_numpy_per_segment(reducer, compiled, monkeypatch):
    from gluon_suite.graph import ops
    if not compiled:
        monkeypatch.setattr(native, "LOADED", False)
    lens = np.array([3, 0, 1, 4, 0])
    v = np.random.RandomState(1).normal(size=(lens.sum(), 2, 3))
    V = mx.nd.array(v)
    V.attach_grad()
    w = np.random.RandomState(2).normal(size=(len(lens), 2, 3))
    with autograd.record():
        out = ops.segment_reduce(mx.nd.array(lens), V, reducer)
        (out * mx.nd.array(w)).sum().backward()
    starts = np.r_[0, np.cumsum(lens)]
    f = {"sum": np.sum, "mean": np.mean, "max": np.max, "min": np.min}[reducer]
    want = np.stack([f(v[a:b], axis=0) if b > a else np.zeros((2, 3)) for a, b in zip(starts[:-1], starts[1:])])
    np.testing.assert_allclose(out.asnumpy(), want, rtol=1e-5, atol=1e-6)
    grad = np.zeros_like(v)
    for i, (a, b) in enumerate(zip(starts[:-1], starts[1:])):
        if b == a:
            continue
        if reducer in ("sum", "mean"):
            grad[a:b] = w[i] / (b - a if reducer == "mean" else 1)
        else:
            pick = (np.argmax if reducer == "max" else np.argmin)(v[a:b], axis=0)
            for idx in np.ndindex(pick.shape):
                grad[(a + pick[idx],) + idx] = w[i][idx]
    np.testing.assert_allclose(V.grad.asnumpy(), grad, rtol=1e-5, atol=1e-6)
