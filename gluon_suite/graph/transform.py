"""Graph transforms, as DGL's ``dgl.add_self_loop`` & co.: each returns a new graph (with the
input's id type and context) and is also a method of ``Graph`` (``g.add_self_loop()``). Subgraphs
(``edge_subgraph``, ``node_subgraph``, ...) and derived graphs (``khop_graph``, ``line_graph``)
are in ``subgraph``."""
import mxnet as mx
import numpy as np

from . import function as fn
from .base import GraphError, zeros
from .digraph import Graph


def _homogeneous(g, what):
    if g._two_sides:
        kind = "a block" if g.is_block else "a bipartite graph"
        raise GraphError(f"{what} needs a graph with one node set, not {kind} (its sources and destinations differ)")


def add_self_loop(g, edge_feat_names=None, fill_data=1.0, etype=None):
    """A new graph with one self-loop appended per node (after the existing edges, whether or not
    the node already had one). Node features are shared; the new edges' features named in
    ``edge_feat_names`` (default: all) are ``fill_data`` (a number), or the ``'sum'``, ``'mean'``,
    ``'max'`` or ``'min'`` of the node's incoming edges' features. Batch information is dropped,
    as in DGL."""
    _homogeneous(g, "add_self_loop")
    n = g.num_nodes()
    loops = np.arange(n)
    out = g._with_edges(np.concatenate([g._src, loops]), np.concatenate([g._dst, loops]))
    out.ndata.update(g.ndata)
    names = list(g.edata) if edge_feat_names is None else list(edge_feat_names)
    for k, v in g.edata.items():
        if k not in names:
            new = mx.nd.zeros((n,) + v.shape[1:], dtype=v.dtype, ctx=v.context)
        elif isinstance(fill_data, str):
            if fill_data not in ("sum", "mean", "max", "min"):
                raise GraphError(f"add_self_loop(fill_data={fill_data!r}): use a number or sum, mean, max, min")
            with g.local_scope():
                g.update_all(fn.copy_e(k, "m"), getattr(fn, fill_data)("m", "h"))
                new = g.ndata["h"].astype(v.dtype)
        else:
            new = mx.nd.full((n,) + v.shape[1:], fill_data, dtype=v.dtype, ctx=v.context)
        out.edata[k] = mx.nd.concat(v, new, dim=0)
    return out


def remove_self_loop(g, etype=None):
    """A new graph without the edges u->u (all of them, for nodes with several); the remaining
    edges keep their order and features, node features are shared, batch sizes are updated."""
    _homogeneous(g, "remove_self_loop")
    keep = np.flatnonzero(g._src != g._dst)
    out = g._with_edges(g._src[keep], g._dst[keep])
    out.ndata.update(g.ndata)
    idx = g._ids(keep)
    for k, v in g.edata.items():
        out.edata[k] = mx.nd.take(v, idx) if len(keep) else zeros((0,) + v.shape[1:], v.dtype, v.context)
    if g._batch_num_nodes is not None:
        per_graph = np.repeat(np.arange(g.batch_size), g._batch_num_edges)
        out._batch_num_nodes = list(g._batch_num_nodes)
        out._batch_num_edges = np.bincount(per_graph[keep], minlength=g.batch_size).tolist()
    return out


def to_bidirected(g, copy_ndata=False, readonly=None):
    """A new simple graph with an edge u->v whenever ``g`` has u->v or v->u (parallel edges
    merged; edges sorted by (src, dst)); node features are shared only with ``copy_ndata=True``;
    edge features are dropped, as in DGL."""
    _homogeneous(g, "to_bidirected")
    n = g.num_nodes()
    key = np.unique(np.concatenate([g._src * n + g._dst, g._dst * n + g._src]))
    out = g._with_edges(key // n, key % n)
    if copy_ndata:
        out.ndata.update(g.ndata)
    return out


def reverse(g, copy_ndata=True, copy_edata=False):
    """A new graph with every edge reversed (edge i of the result is edge i of ``g`` turned
    around); node features shared unless ``copy_ndata=False``, edge features with ``copy_edata``."""
    _homogeneous(g, "reverse")
    out = g._with_edges(g._dst, g._src)
    if copy_ndata:
        out.ndata.update(g.ndata)
    if copy_edata:
        out.edata.update(g.edata)
    return out


for _f in (add_self_loop, remove_self_loop, to_bidirected, reverse):
    setattr(Graph, _f.__name__, _f)
