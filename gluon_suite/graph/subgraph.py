"""Subgraphs and derived graphs, as DGL's ``dgl.node_subgraph`` (also ``g.subgraph``),
``dgl.edge_subgraph``, ``dgl.in_subgraph``, ``dgl.out_subgraph``, ``dgl.khop_adj``,
``dgl.khop_graph`` and ``dgl.line_graph`` (each also a method of ``Graph``).

Each returns a new graph with the input's id type and context (or ``output_device``) and copies
the features of the nodes and edges it keeps (``mx.nd.take`` of their rows; the whole tensors are
shared when all nodes are kept). With ``store_ids`` (the default) ``edata[EID]`` holds every edge's
id in the input and, when nodes are renumbered, ``ndata[NID]`` every node's id; ``NID`` and
``EID`` are both ``'_ID'``, as in DGL. Batch information is dropped, as in DGL. How nodes are
renumbered (``relabel_nodes=True``):

- ``node_subgraph``: node i is ``nodes[i]`` (a boolean mask gives the ids where it is true, in
  order); the edges are those with both ends among the nodes, in edge-id order.
- ``edge_subgraph``, ``in_subgraph``, ``out_subgraph``: the nodes the kept edges touch, in
  order of first appearance among the edges' sources, then their destinations (as DGL numbers
  them); a bipartite graph numbers each side on its own.

Blocks are refused, except ``edge_subgraph(..., relabel_nodes=False)``, as in DGL. A bipartite
graph takes node ids per side: ``{node type: ids}`` for ``node_subgraph`` (a missing type keeps
none of its nodes), destination ids for ``in_subgraph`` and source ids for ``out_subgraph``.
"""
import mxnet as mx
import numpy as np

from .base import EID, NID, GraphError, as_ids, take_rows
from .digraph import Graph
from .heterograph import BipartiteGraph

__all__ = ["node_subgraph", "edge_subgraph", "in_subgraph", "out_subgraph", "khop_adj", "khop_graph",
           "line_graph"]


def _no_block(g, what):
    if g.is_block:
        raise GraphError(f"{what}: extracting a subgraph of a block is not supported (as in DGL); build it from "
                         "the graph the block was sampled from")


def _homogeneous(g, what):
    if g._two_sides:
        raise GraphError(f"{what} needs a graph with one node set, not a block or bipartite graph")


def _is_mask(a):
    dt = getattr(a, "dtype", None)
    if dt is None:
        a = np.asarray(a)
        dt = a.dtype
    return np.dtype(dt) == np.bool_


def _select(a, n, what):
    """Ids (int64, host) from ids or a boolean mask of length ``n``; each id once, in 0..n-1."""
    if _is_mask(a):
        mask = np.asarray(a.asnumpy() if isinstance(a, mx.nd.NDArray) else a, bool).reshape(-1)
        if len(mask) != n:
            raise GraphError(f"{what}: a boolean mask needs one entry per item ({n}), got {len(mask)}")
        return np.flatnonzero(mask)
    ids = as_ids(a, what)
    if len(ids) and (ids.min() < 0 or ids.max() >= n):
        bad = int(ids[(ids < 0) | (ids >= n)][0])
        raise GraphError(f"{what} holds id {bad} but the graph's ids are 0..{n - 1}")
    if len(np.unique(ids)) != len(ids):
        raise GraphError(f"{what} repeats an id; give each id once")
    return ids


def _first_seen(*arrays):
    """The distinct values of the arrays in order of first appearance (sources before destinations)."""
    a = np.concatenate([np.asarray(x, np.int64) for x in arrays]) if arrays else np.zeros(0, np.int64)
    return a[np.sort(np.unique(a, return_index=True)[1])]


def _position(ids, n):
    pos = np.full(n, -1, np.int64)
    pos[ids] = np.arange(len(ids))
    return pos


def _build(g, eids, src_nodes, dst_nodes, store_ids, output_device):
    """The subgraph of ``g`` with edges ``eids`` whose sides are renumbered to ``src_nodes`` /
    ``dst_nodes`` (None: that side keeps all nodes, shared features and no ``NID``)."""
    src, dst = g._src[eids], g._dst[eids]
    same = not g._two_sides
    if src_nodes is not None:
        pos_s = _position(src_nodes, g._nsrc)
        pos_d = pos_s if same else _position(dst_nodes, g._ndst)
        src, dst = pos_s[src], pos_d[dst]
    ns = g._nsrc if src_nodes is None else len(src_nodes)
    nd = g._ndst if dst_nodes is None else len(dst_nodes)
    if same:
        out = Graph((src, dst), num_nodes=ns, idtype=g.idtype, device=g.device)
        out._ntypes, out._etype = g._ntypes, g._etype
    elif g.is_block:
        out = g._with_edges(src, dst)
    else:
        out = BipartiteGraph((src, dst), ns, nd, g._ntypes, g._etype, g.idtype, g.device)
    sides = [(g.srcdata, out.srcdata, src_nodes)] + ([] if same else [(g.dstdata, out.dstdata, dst_nodes)])
    for frame, target, rows in sides:
        for k, v in frame.items():
            target[k] = v if rows is None else take_rows(v, rows, g._ids)
        if rows is not None and store_ids:
            target[NID] = g._ids(rows)
    for k, v in g.edata.items():
        out.edata[k] = take_rows(v, eids, g._ids)
    if store_ids:
        out.edata[EID] = g._ids(eids)
    return out if output_device is None else out.to(output_device)


def node_subgraph(graph, nodes, *, relabel_nodes=True, store_ids=True, output_device=None):
    """DGL's ``node_subgraph`` (``g.subgraph``): the nodes ``nodes`` (ids or a boolean mask; on a
    bipartite graph a dict ``{node type: ids}``) and the edges between them, in edge-id order.
    ``relabel_nodes=False`` keeps all nodes (and their features) and only drops edges."""
    _no_block(graph, "node_subgraph")
    if graph._two_sides:
        if not isinstance(nodes, dict):
            raise GraphError(f"node_subgraph: this graph has two node types ({graph._ntypes[0]!r}, "
                             f"{graph._ntypes[1]!r}); pass a dict {{node type: ids}}")
        unknown = set(nodes) - set(graph._ntypes)
        if unknown:
            raise GraphError(f"node_subgraph: node types {sorted(unknown)} are not in this graph; it has "
                             f"{graph._ntypes[0]!r} and {graph._ntypes[1]!r}")
        none = np.zeros(0, np.int64)
        s = _select(nodes.get(graph._ntypes[0], none), graph._nsrc, "node_subgraph: nodes")
        d = _select(nodes.get(graph._ntypes[1], none), graph._ndst, "node_subgraph: nodes")
    else:
        if isinstance(nodes, dict):
            if set(nodes) != {graph._ntypes[0]}:
                raise GraphError(f"node_subgraph: the graph's one node type is {graph._ntypes[0]!r}, not "
                                 f"{sorted(nodes)}")
            nodes = nodes[graph._ntypes[0]]
        s = d = _select(nodes, graph._nsrc, "node_subgraph: nodes")
    in_s, in_d = np.zeros(graph._nsrc, bool), np.zeros(graph._ndst, bool)
    in_s[s], in_d[d] = True, True
    eids = np.flatnonzero(in_s[graph._src] & in_d[graph._dst])
    if not relabel_nodes:
        return _build(graph, eids, None, None, store_ids, output_device)
    return _build(graph, eids, s, d, store_ids, output_device)



def _relabelled(graph, eids, relabel_nodes, store_ids, output_device):
    if not relabel_nodes:
        return _build(graph, eids, None, None, store_ids, output_device)
    src, dst = graph._src[eids], graph._dst[eids]
    if graph._two_sides:
        return _build(graph, eids, _first_seen(src), _first_seen(dst), store_ids, output_device)
    nodes = _first_seen(src, dst)
    return _build(graph, eids, nodes, nodes, store_ids, output_device)


def edge_subgraph(graph, edges, *, relabel_nodes=True, store_ids=True, output_device=None):
    """DGL's ``edge_subgraph``: the edges ``edges`` (ids, in the order given, or a boolean mask)
    and the nodes they touch, renumbered in order of first appearance (sources, then
    destinations); ``relabel_nodes=False`` keeps all nodes (a block stays a block)."""
    if graph.is_block and relabel_nodes:
        raise GraphError("edge_subgraph: a block's nodes cannot be renumbered (as in DGL); pass "
                         "relabel_nodes=False to keep its source and destination nodes")
    eids = _select(edges, graph.num_edges(), "edge_subgraph: edges") if _is_mask(edges) else \
        _edge_ids(graph, edges, "edge_subgraph: edges")
    return _relabelled(graph, eids, relabel_nodes, store_ids, output_device)


def _edge_ids(g, edges, what):
    e = as_ids(edges, what)
    if len(e) and (e.min() < 0 or e.max() >= g.num_edges()):
        raise GraphError(f"{what}: edge ids must lie in 0..{g.num_edges() - 1}")
    return e


def _side_nodes(graph, nodes, side, what):
    if isinstance(nodes, dict):
        want = graph._ntypes[0 if side == "src" else 1]
        if set(nodes) != {want}:
            raise GraphError(f"{what}: give the nodes of type {want!r}, not {sorted(nodes)}")
        nodes = nodes[want]
    return _select(nodes, graph._nsrc if side == "src" else graph._ndst, what + ": nodes")


def in_subgraph(graph, nodes, *, relabel_nodes=False, store_ids=True, output_device=None):
    """DGL's ``in_subgraph``: every edge into ``nodes`` (node after node, each node's edges in id
    order). All nodes are kept unless ``relabel_nodes``, which keeps the nodes those edges touch."""
    _no_block(graph, "in_subgraph")
    eids = graph._edges_of("in", _side_nodes(graph, nodes, "dst", "in_subgraph"))
    return _relabelled(graph, eids, relabel_nodes, store_ids, output_device)


def out_subgraph(graph, nodes, *, relabel_nodes=False, store_ids=True, output_device=None):
    """DGL's ``out_subgraph``: every edge out of ``nodes``, as ``in_subgraph`` takes edges into them."""
    _no_block(graph, "out_subgraph")
    eids = graph._edges_of("out", _side_nodes(graph, nodes, "src", "out_subgraph"))
    return _relabelled(graph, eids, relabel_nodes, store_ids, output_device)


def _power(g, k, what):
    _homogeneous(g, what)
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1:
        raise GraphError(f"{what}: k is the number of hops, a whole number >= 1; got {k!r}")
    import scipy.sparse as sp
    n = g.num_nodes()
    a = sp.csr_matrix((np.ones(g.num_edges(), np.int64), (g._src, g._dst)), shape=(n, n))
    out = a
    for _ in range(int(k) - 1):
        out = out @ a
    out = out.tocoo()
    order = np.lexsort((out.col, out.row))
    return out.row[order].astype(np.int64), out.col[order].astype(np.int64), out.data[order]


def khop_adj(g, k):
    """DGL's ``khop_adj``: the dense A^k (rows the sources; an entry counts the walks of length
    ``k``) as a float32 NDArray on the graph's context."""
    row, col, count = _power(g, k, "khop_adj")
    n = g.num_nodes()
    dense = np.zeros((n, n), np.float32)
    dense[row, col] = count
    return mx.nd.array(dense, ctx=g.device)


def khop_graph(g, k, copy_ndata=True):
    """DGL's ``khop_graph``: an edge u -> v for every walk of length ``k`` from u to v in ``g``
    (so u -> v repeats once per walk), sorted by (u, v). Node features are shared with
    ``copy_ndata``; edge features are not carried."""
    row, col, count = _power(g, k, "khop_graph")
    out = Graph((np.repeat(row, count), np.repeat(col, count)), num_nodes=g.num_nodes(), idtype=g.idtype,
                device=g.device)
    if copy_ndata:
        out.ndata.update(g.ndata)
    return out


def line_graph(g, backtracking=True, shared=False):
    """DGL's ``line_graph``: node i is edge i of ``g``, and there is an edge i -> j whenever edge
    j leaves the node edge i enters (i != j), ordered by (i, j). ``backtracking=False`` drops
    j = v -> u after i = u -> v. ``shared=True`` makes ``g``'s edge features the node features."""
    _homogeneous(g, "line_graph")
    e = g.num_edges()
    follow = g._edges_of("out", g._dst)                     # edges out of each edge's head, edge after edge
    first = np.repeat(np.arange(e), np.bincount(g._src, minlength=g.num_nodes())[g._dst])
    keep = follow != first
    if not backtracking:
        keep &= g._dst[follow] != g._src[first]
    out = Graph((first[keep], follow[keep]), num_nodes=e, idtype=g.idtype, device=g.device)
    if shared:
        out.ndata.update(g.edata)
    return out


for _f in (node_subgraph, edge_subgraph, in_subgraph, out_subgraph, khop_graph, line_graph):
    setattr(Graph, _f.__name__, _f)
Graph.subgraph = node_subgraph
