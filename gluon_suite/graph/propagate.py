"""Message passing on part of a graph, as DGL's ``g.pull``, ``g.send_and_recv``,
``g.prop_nodes`` and ``g.prop_edges``, and the traversals that drive propagation in order
(``bfs_nodes_generator``, ``bfs_edges_generator``, ``topological_nodes_generator``,
``prop_nodes_bfs``, ``prop_nodes_topo``).

``send_and_recv(edges, ...)`` and ``pull(v, ...)`` run the message and reduce functions on a
*compute block*: the chosen edges from their sources to their receiving nodes, with the rows of
those nodes' and edges' features (``mx.nd.take``, so gradients flow back). Only the receivers'
rows of the features the reduce (and ``apply_node_func``) writes change; the other nodes keep
theirs, or get the graph's initializer's (zeros by default) when the feature is new. The
receivers of ``pull`` that have no incoming edge get 0 from a built-in reducer, as in DGL.
"""
import mxnet as mx
import numpy as np

from .base import GraphError, as_ids, take_rows
from .block import Block
from .digraph import Graph

__all__ = ["bfs_nodes_generator", "bfs_edges_generator", "topological_nodes_generator", "prop_nodes_bfs",
           "prop_nodes_topo"]


def _edge_arg(g, edges):
    """Edge ids from DGL's forms: an id, ids (list, NumPy array, NDArray) or a pair (u, v) of
    node ids, looked up with ``edge_ids``."""
    if isinstance(edges, tuple):
        if len(edges) != 2:
            raise GraphError("send_and_recv: edges is an id, a sequence of edge ids or a pair (u, v) of node ids")
        edges = g.edge_ids(*edges)
    e = as_ids(edges, "edges")
    if len(e) and (e.min() < 0 or e.max() >= g.num_edges()):
        raise GraphError(f"send_and_recv: edge ids must lie in 0..{g.num_edges() - 1}")
    return e


def _run_on(g, eids, receivers, message_func, reduce_func, apply_node_func):
    """Message passing along edges ``eids`` (host ids) into ``receivers`` (unique host ids of the
    destination side); the results are written into those rows of ``g.dstdata``."""
    src = g._src[eids]
    senders = np.unique(src)
    spos = np.zeros(g._nsrc, np.int64)
    spos[senders] = np.arange(len(senders))
    dpos = np.full(g._ndst, -1, np.int64)
    dpos[receivers] = np.arange(len(receivers))
    cb = Block((spos[src], dpos[g._dst[eids]]), len(senders), len(receivers), idtype=g.idtype, device=g.device)
    cb._parent_dst = receivers                         # what NodeBatch.nodes() reports
    for frame, target, rows in ((g.srcdata, cb.srcdata, senders), (g.dstdata, cb.dstdata, receivers),
                                (g.edata, cb.edata, eids)):
        for k, v in frame.items():
            target[k] = take_rows(v, rows, g._ids)
    before = dict(cb.dstdata)
    cb.update_all(message_func, reduce_func, apply_node_func)
    for k, new in cb.dstdata.items():
        if before.get(k) is not new:
            _write_rows(g, k, new, receivers)


def _write_rows(g, name, new, rows):
    """``g.dstdata[name]`` with rows ``rows`` replaced by ``new`` (one gather: differentiable)."""
    n = g._ndst
    old = g.dstdata.get(name)
    if old is None:
        old = g._initializer("n", name)((n,) + new.shape[1:], new.dtype, g.device, slice(0, n))
    elif old.shape[1:] != new.shape[1:]:
        raise GraphError(f"the reduce writes {name!r} with rows of shape {new.shape[1:]} but the graph's feature has "
                         f"{old.shape[1:]}; write another name or give it the same shape")
    if len(rows) == n and np.array_equal(rows, np.arange(n)):
        g.dstdata[name] = new.astype(old.dtype, copy=False)
        return
    pick = np.arange(n)
    pick[rows] = n + np.arange(len(rows))
    g.dstdata[name] = mx.nd.take(mx.nd.concat(old, new.astype(old.dtype, copy=False), dim=0), g._ids(pick))


def send_and_recv(g, edges, message_func, reduce_func, apply_node_func=None, etype=None):
    """DGL's ``send_and_recv``: messages along ``edges`` only (edge ids, or a pair ``(u, v)`` of
    node-id sequences), reduced at their destinations, then ``apply_node_func`` on those nodes.
    Only the destinations' rows change; no edges: nothing runs."""
    e = _edge_arg(g, edges)
    if len(e) == 0:
        return
    _run_on(g, e, np.unique(g._dst[e]), message_func, reduce_func, apply_node_func)


def pull(g, v, message_func, reduce_func, apply_node_func=None, etype=None):
    """DGL's ``pull``: the nodes ``v`` gather messages along all their incoming edges, reduce
    them and run ``apply_node_func``; only their rows change (a node of ``v`` without incoming
    edges gets 0 from a built-in reducer)."""
    nodes = np.unique(g._node_ids(v, "dst", "pull: v"))
    if len(nodes) == 0:
        return
    _run_on(g, g._edges_of("in", nodes), nodes, message_func, reduce_func, apply_node_func)


def prop_nodes(g, nodes_generator, message_func, reduce_func, apply_node_func=None, etype=None):
    """DGL's ``prop_nodes``: ``pull`` on each node frontier the generator gives, in order."""
    for frontier in nodes_generator:
        pull(g, frontier, message_func, reduce_func, apply_node_func)


def prop_edges(g, edges_generator, message_func, reduce_func, apply_node_func=None, etype=None):
    """DGL's ``prop_edges``: ``send_and_recv`` on each edge frontier the generator gives, in order."""
    for frontier in edges_generator:
        send_and_recv(g, frontier, message_func, reduce_func, apply_node_func)


for _f in (send_and_recv, pull, prop_nodes, prop_edges):
    setattr(Graph, _f.__name__, _f)


def _one_node_set(g, what):
    if g._two_sides:
        raise GraphError(f"{what} traverses a graph with one node set, not a block or bipartite graph")


def _first_each(a):
    """``a`` without repeats, each value where it first occurs."""
    return a[np.sort(np.unique(a, return_index=True)[1])]


def _bfs(g, source, reverse):
    """Breadth-first layers from ``source``: node frontiers and, per later layer, the edges that
    reached its nodes first (sources in frontier order, their edges in edge-id order)."""
    _one_node_set(g, "bfs")
    seen = np.zeros(g.num_nodes(), bool)
    frontier = _first_each(g._node_ids(source, "src", "bfs: source"))
    seen[frontier] = True
    nodes, edges = [frontier], []
    far = g._src if reverse else g._dst
    while True:
        out = g._edges_of("in" if reverse else "out", frontier)
        out = out[~seen[far[out]]]
        first = np.sort(np.unique(far[out], return_index=True)[1])
        if not len(first):
            return nodes, edges
        frontier = far[out[first]]
        seen[frontier] = True
        nodes.append(frontier)
        edges.append(out[first])


def bfs_nodes_generator(graph, source, reverse=False):
    """DGL's ``bfs_nodes_generator``: the node frontiers of a breadth-first search from
    ``source`` (ids; along in-edges with ``reverse``), as a list of NDArrays: the sources, then
    each layer's new nodes in the order they were reached."""
    return [graph._ids(f) for f in _bfs(graph, source, reverse)[0]]


def bfs_edges_generator(graph, source, reverse=False):
    """DGL's ``bfs_edges_generator``: per breadth-first layer, the edges that reached its new
    nodes first (a list of edge-id NDArrays)."""
    return [graph._ids(f) for f in _bfs(graph, source, reverse)[1]]


def topological_nodes_generator(graph, reverse=False):
    """DGL's ``topological_nodes_generator``: frontiers in topological order (nodes without
    incoming edges first, in id order; along in-edges with ``reverse``); a cycle is an error."""
    _one_node_set(graph, "topological_nodes_generator")
    far, kind = (graph._src, "in") if reverse else (graph._dst, "out")
    left = np.bincount(far, minlength=graph.num_nodes())
    frontier, out, done = np.flatnonzero(left == 0), [], 0
    while len(frontier):
        out.append(graph._ids(frontier))
        done += len(frontier)
        reached = far[graph._edges_of(kind, frontier)]
        np.subtract.at(left, reached, 1)
        last = len(reached) - 1 - np.unique(reached[::-1], return_index=True)[1]   # a node is freed by its last edge
        last = np.sort(last[left[reached[last]] == 0])
        frontier = reached[last]
    if done < graph.num_nodes():
        raise GraphError("topological_nodes_generator: the graph has a cycle, so it has no topological order; "
                         "remove the cycle's edges (self-loops included) first")
    return out


def prop_nodes_bfs(graph, source, message_func, reduce_func, reverse=False, apply_node_func=None):
    """DGL's ``prop_nodes_bfs``: ``prop_nodes`` over the breadth-first frontiers from ``source``."""
    prop_nodes(graph, bfs_nodes_generator(graph, source, reverse), message_func, reduce_func, apply_node_func)


def prop_nodes_topo(graph, message_func, reduce_func, reverse=False, apply_node_func=None):
    """DGL's ``prop_nodes_topo``: ``prop_nodes`` over the topological frontiers."""
    prop_nodes(graph, topological_nodes_generator(graph, reverse), message_func, reduce_func, apply_node_func)
