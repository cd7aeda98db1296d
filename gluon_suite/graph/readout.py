"""Per-graph readouts of a batched graph, with DGL's signatures: ``readout_nodes(graph, feat,
weight=None, op='sum')`` and ``readout_edges``, their ``sum/mean/max/min_nodes|edges`` forms,
``softmax_nodes|edges``, ``broadcast_nodes|edges`` and ``topk_nodes|edges``.

A batch keeps each graph's nodes (and edges) contiguous, so graph ``b`` owns rows
``offsets[b]:offsets[b + 1]``. Sums are one product with a (graphs x rows) CSR matrix of ones;
max, min, softmax and top-k gather the rows into a padded (graphs, largest graph, ...) tensor.
Both are built once per graph and context and run on the graph's context; autograd flows to the
features (and weights). A graph without nodes (edges) reads 0.
"""
import mxnet as mx
import numpy as np

from .base import GraphError

_OPS = ("sum", "mean", "max", "min")


class _Segments:
    """Index structures of one kind of row (nodes or edges) split into the batch's graphs."""

    def __init__(self, sizes, ctx, idtype):
        self.sizes = np.asarray(sizes, np.int64)
        self.offsets = np.concatenate([[0], np.cumsum(self.sizes)])
        n, b = int(self.offsets[-1]), len(self.sizes)
        self.n, self.b, self.width, self.ctx, self.idtype = n, b, int(self.sizes.max(initial=0)), ctx, idtype
        self.owner = mx.nd.array(np.repeat(np.arange(b), self.sizes), dtype=idtype, ctx=ctx)
        self.count = mx.nd.array(np.maximum(self.sizes, 1), ctx=ctx)
        self.nonempty = mx.nd.array((self.sizes > 0).astype(np.float32), ctx=ctx)
        self.matrix = mx.nd.sparse.csr_matrix((np.ones(n, np.float32), np.arange(n), self.offsets), shape=(b, n),
                                              ctx=ctx)
        self._layouts = {}

    def check(self, x, what):
        if x.shape[0] != self.n:
            raise GraphError(f"{what} has {x.shape[0]} rows but the graph has {self.n}; give one row per item")

    def per_graph(self, v, ndim):
        """Per-graph values (graphs,) shaped to broadcast against (graphs, ...) of ``ndim`` axes."""
        return v.reshape((-1,) + (1,) * (ndim - 1))

    def sum(self, x):
        """(graphs, ...) sums of ``x``'s rows per graph."""
        flat = x if x.ndim == 2 else x.reshape((x.shape[0], -1))
        out = mx.nd.sparse.dot(self.matrix, flat)
        return out if x.ndim == 2 else out.reshape((self.b,) + x.shape[1:])

    def layout(self, width):
        """``(rows, valid)`` of the padded layout ``width`` wide: row b, column j holds row
        offsets[b] + j, or n (a padding row) past the graph's end; ``valid`` (graphs, width) is 1
        where a real row sits."""
        if width not in self._layouts:
            j = np.arange(width)
            inside = j[None, :] < self.sizes[:, None]
            rows = np.where(inside, self.offsets[:-1, None] + j[None, :], self.n)
            self._layouts[width] = (mx.nd.array(rows.reshape(-1), dtype=self.idtype, ctx=self.ctx),
                                    mx.nd.array(inside.astype(np.float32), ctx=self.ctx))
        return self._layouts[width]

    def pad(self, x, fill, width):
        """(graphs, width, ...) rows of ``x`` per graph, ``fill`` past each graph's end."""
        rows, _ = self.layout(width)
        filler = mx.nd.full((1,) + x.shape[1:], fill, dtype=x.dtype, ctx=x.context)
        return mx.nd.take(mx.nd.concat(x, filler, dim=0), rows).reshape((self.b, width) + x.shape[1:])

    def extreme(self, x, op):
        """Per-graph ``max``/``min`` of ``x`` (0 for an empty graph)."""
        if self.width == 0:
            return mx.nd.zeros((self.b,) + x.shape[1:], dtype=x.dtype, ctx=x.context)
        big = float(np.finfo(np.float32).max)
        out = self.pad(x, -big if op == "max" else big, self.width)
        out = out.max(axis=1) if op == "max" else out.min(axis=1)
        return mx.nd.broadcast_mul(out, self.per_graph(self.nonempty, out.ndim))

    def broadcast(self, y):
        """Per-graph values ``y`` (graphs, ...) repeated over each graph's rows."""
        return mx.nd.take(y, self.owner)


def _segments(graph, kind):
    """The cached ``_Segments`` of ``graph``'s nodes or edges on its context."""
    if graph._two_sides:
        raise GraphError("readouts need a graph or a batch of graphs, not a block or a bipartite graph")
    nodes, edges = graph._batch_sizes()
    sizes = nodes if kind == "nodes" else edges
    return graph._get(("readout", kind, str(graph.device)), lambda: _Segments(sizes, graph.device, graph.idtype))


def _view(graph, kind, t):
    """``(frame, segments)`` of ``graph``'s nodes (node type ``t``) or edges (relation ``t``): for a
    heterograph (a batch of them too) the type's frame and per-graph counts; ``t`` may be left out
    when there is one type."""
    if type(graph).__name__ != "HeteroGraph":
        return (graph.ndata if kind == "nodes" else graph.edata), _segments(graph, kind)
    from .hetero_views import batch_sizes
    nodes, edges = batch_sizes(graph)
    if kind == "nodes":
        if t is None and len(graph.ntypes) != 1:
            raise GraphError(f"name the node type (ntype=...): the graph has {len(graph.ntypes)} "
                             f"({', '.join(graph.ntypes)})")
        key = graph.ntypes[0] if t is None else graph._ntype(t)
        frame, sizes = graph._node_frames[key], nodes[key]
    else:
        key = graph.to_canonical_etype(t)
        frame, sizes = graph[key].edata, edges[key]
    cache = graph.__dict__.setdefault("_readout_cache", {})
    if (kind, key, str(graph.device)) not in cache:
        cache[kind, key, str(graph.device)] = _Segments(sizes, graph.device, graph.idtype)
    return frame, cache[kind, key, str(graph.device)]


def _feature(graph, frame, feat, what):
    if isinstance(feat, mx.nd.NDArray):
        return feat
    if feat not in frame:
        raise GraphError(f"{what} has no feature {feat!r} (has: {', '.join(frame) or 'none'})")
    return frame[feat]


def _readout(seg, kind, x, op, w=None):
    """Per-graph ``op`` of the rows of ``x`` (multiplied by ``w`` first when given)."""
    if op not in _OPS:
        raise GraphError(f"unknown readout op {op!r}; choose one of {', '.join(_OPS)}")
    seg.check(x, kind[:-1] + " feature")
    if w is not None:
        seg.check(w, "weight")
        x = mx.nd.broadcast_mul(x, w.reshape(w.shape + (1,) * (x.ndim - w.ndim)) if w.ndim < x.ndim else w)
    if op in ("max", "min"):
        return seg.extreme(x, op)
    out = seg.sum(x)
    if op == "mean":
        out = mx.nd.broadcast_div(out, seg.count.reshape((-1,) + (1,) * (x.ndim - 1)))
    return out


def readout_nodes(graph, feat, weight=None, op="sum", ntype=None):
    """DGL's ``readout_nodes``: per graph of the batch, the ``op`` (sum, mean, max, min) of node
    feature ``feat`` (a name in ``ndata``; an NDArray is taken as the feature itself), each row
    multiplied first by node feature ``weight`` (a name, shape (N, 1) or (N,)) when given.
    Returns (graphs, ...). On a heterograph ``ntype`` names the node type."""
    frame, seg = _view(graph, "nodes", ntype)
    x = _feature(graph, frame, feat, "ndata")
    w = None if weight is None else _feature(graph, frame, weight, "ndata")
    return _readout(seg, "nodes", x, op, w)


def readout_edges(graph, feat, weight=None, op="sum", etype=None):
    """DGL's ``readout_edges``: as ``readout_nodes`` over edge features (``edata``; relation
    ``etype`` on a heterograph)."""
    frame, seg = _view(graph, "edges", etype)
    x = _feature(graph, frame, feat, "edata")
    w = None if weight is None else _feature(graph, frame, weight, "edata")
    return _readout(seg, "edges", x, op, w)


def _named(kind, op):
    base = readout_nodes if kind == "nodes" else readout_edges

    def f(graph, feat, weight=None, **kwargs):
        return base(graph, feat, weight, op, kwargs.get("ntype" if kind == "nodes" else "etype"))
    f.__name__ = f"{op}_{kind}"
    f.__doc__ = f"DGL's ``{op}_{kind}(graph, feat, weight=None)``: ``readout_{kind}`` with ``op='{op}'``."
    return f


sum_nodes, mean_nodes, max_nodes, min_nodes = (_named("nodes", op) for op in _OPS)
sum_edges, mean_edges, max_edges, min_edges = (_named("edges", op) for op in _OPS)


def _softmax(seg, kind, x):
    seg.check(x, kind[:-1] + " feature")
    shift = seg.broadcast(mx.nd.stop_gradient(seg.extreme(x, "max")))
    e = mx.nd.exp(x - shift)
    return e / seg.broadcast(seg.sum(e))


def softmax_nodes(graph, feat, ntype=None):
    """DGL's ``softmax_nodes``: softmax of node feature ``feat`` over the nodes of each graph,
    element-wise: out[v] = exp(x[v]) / sum over nodes u of v's graph of exp(x[u]). Shape of ``feat``."""
    frame, seg = _view(graph, "nodes", ntype)
    return _softmax(seg, "nodes", _feature(graph, frame, feat, "ndata"))


def softmax_edges(graph, feat, etype=None):
    """DGL's ``softmax_edges``: as ``softmax_nodes`` over the edges of each graph."""
    frame, seg = _view(graph, "edges", etype)
    return _softmax(seg, "edges", _feature(graph, frame, feat, "edata"))


def _broadcast(seg, kind, graph_feat):
    if graph_feat.shape[0] != seg.b:
        raise GraphError(f"broadcast_{kind}: graph_feat has {graph_feat.shape[0]} rows for a batch of {seg.b} "
                         "graphs; give one row per graph")
    return seg.broadcast(graph_feat)


def broadcast_nodes(graph, graph_feat, ntype=None):
    """DGL's ``broadcast_nodes``: per-graph values (graphs, ...) repeated on every node of their
    graph -> (nodes, ...)."""
    return _broadcast(_view(graph, "nodes", ntype)[1], "nodes", graph_feat)


def broadcast_edges(graph, graph_feat, etype=None):
    """DGL's ``broadcast_edges``: per-graph values repeated on every edge of their graph."""
    return _broadcast(_view(graph, "edges", etype)[1], "edges", graph_feat)


def _topk(seg, kind, x, k, descending, sortby):
    seg.check(x, kind[:-1] + " feature")
    if x.ndim != 2:
        raise GraphError(f"topk_{kind} takes a (rows, features) feature, got shape {x.shape}")
    k, (B, D) = int(k), (seg.b, x.shape[1])
    if k < 1:
        raise GraphError(f"topk_{kind}: k must be at least 1, got {k}")
    width = max(seg.width, k)
    big = float(np.finfo(np.float32).max)
    padded = seg.pad(x, -big if descending else big, width)                          # (B, W, D)
    valid = seg.layout(width)[1]                                                      # (B, W)
    if sortby is None:
        idx = mx.nd.topk(padded, axis=1, k=k, ret_typ="indices", is_ascend=not descending, dtype="int64")
        b = mx.nd.arange(B, ctx=x.context, dtype="int64").reshape((B, 1, 1))
        d = mx.nd.arange(D, ctx=x.context, dtype="int64").reshape((1, 1, D))
        flat = mx.nd.broadcast_add(mx.nd.broadcast_add(b * (width * D), idx * D), d).reshape(-1)
        vals = mx.nd.take(padded.reshape(-1), flat).reshape((B, k, D))
        keep = mx.nd.take(valid.reshape(-1), mx.nd.broadcast_add(b.reshape((B, 1)) * width,
                                                                    idx.reshape((B, k * D))).reshape(-1))
        keep = keep.reshape((B, k, D))
    else:
        if not -D <= int(sortby) < D:
            raise GraphError(f"topk_{kind}: sortby={sortby} but the feature has {D} columns; give a column "
                             f"0..{D - 1}, or -1..-{D} counting from the last")
        col = int(sortby) % D
        key = mx.nd.slice_axis(padded, axis=2, begin=col, end=col + 1).reshape((B, width))
        idx = mx.nd.topk(key, axis=1, k=k, ret_typ="indices", is_ascend=not descending, dtype="int64")  # (B, K)
        rows = mx.nd.broadcast_add(idx, (mx.nd.arange(B, ctx=x.context, dtype="int64") * width).reshape((B, 1)))
        vals = mx.nd.take(padded.reshape((-1, D)), rows.reshape(-1)).reshape((B, k, D))
        keep = mx.nd.take(valid.reshape(-1), rows.reshape(-1)).reshape((B, k, 1))
    return mx.nd.broadcast_mul(vals, keep), idx.astype(np.dtype(seg.idtype).name)


def topk_nodes(graph, feat, k, descending=True, sortby=None, ntype=None):
    """DGL's ``topk_nodes``: per graph, the ``k`` largest (``descending``) or smallest node
    feature values. ``sortby=None``: each feature column on its own -> values and node positions
    within the graph, both (graphs, k, D); ``sortby=j``: the rows of the k nodes ranked by column j
    (negative j counts from the end, ``-1`` the last column, as in DGL) -> values (graphs, k, D)
    and positions (graphs, k). A graph with fewer than k nodes gets zero rows at the end (their
    positions are >= its node count)."""
    frame, seg = _view(graph, "nodes", ntype)
    return _topk(seg, "nodes", _feature(graph, frame, feat, "ndata"), k, descending, sortby)


def topk_edges(graph, feat, k, descending=True, sortby=None, etype=None):
    """DGL's ``topk_edges``: as ``topk_nodes`` over the edges of each graph."""
    frame, seg = _view(graph, "edges", etype)
    return _topk(seg, "edges", _feature(graph, frame, feat, "edata"), k, descending, sortby)


__all__ = ["readout_nodes", "readout_edges", "sum_nodes", "mean_nodes", "max_nodes", "min_nodes", "sum_edges",
           "mean_edges", "max_edges", "min_edges", "softmax_nodes", "softmax_edges", "broadcast_nodes",
           "broadcast_edges", "topk_nodes", "topk_edges"]
