"""Blocks for sampled training, as DGL's: a bipartite graph from ``num_src`` input nodes to
``num_dst`` output nodes, where the first ``num_dst`` input nodes are the output nodes themselves.
A layer run on a block reads ``srcdata`` and writes ``dstdata``; the output nodes of one block are
the input nodes of the next. ``to_block`` turns a sampled frontier into a block.
"""
import mxnet as mx
import numpy as np

from .base import EID, NID, GraphError, as_ids
from .digraph import Graph, _idtype


class Block(Graph):
    """A bipartite message-flow graph (DGL's ``DGLBlock``): edges go from source ids
    0..num_src-1 to destination ids 0..num_dst-1; ``srcdata``/``dstdata`` hold the two sides'
    features (``NID`` the original node ids) and ``edata[EID]`` the original edge ids.
    ``src_nodes`` / ``num_dst`` are the same ids and count as plain values."""

    is_block = True
    _two_sides = True
    _ntypes = ("_N", "_N")

    def __init__(self, edges, num_src, num_dst, idtype=None, device=None):
        self._idtype, self._ctx = _idtype(idtype, edges), device or mx.cpu()
        src, dst = as_ids(edges[0], "src"), as_ids(edges[1], "dst")
        if len(src) != len(dst):
            raise GraphError(f"src has {len(src)} entries but dst has {len(dst)}; give one (src, dst) pair per edge")
        self._setup(src, dst, int(num_src), int(num_dst))

    @property
    def ndata(self):
        """A block has two node sets: use ``srcdata`` or ``dstdata``."""
        raise GraphError("a block has source and destination nodes: use block.srcdata or block.dstdata, not ndata")

    def num_nodes(self, ntype=None):
        """As DGL counts a block's nodes: its sides are two node sets, so ``num_nodes()`` is
        ``num_src_nodes() + num_dst_nodes()``; ``'_N'`` or ``'SRC/_N'`` names the source side,
        ``'DST/_N'`` the destination side."""
        if ntype is None:
            return self._nsrc + self._ndst
        side = {"SRC/": "src", "DST/": "dst"}.get(str(ntype)[:4])
        name = str(ntype)[4:] if side else ntype
        if name != self._ntypes[0]:
            raise GraphError(f"node type {ntype!r} is not in this block; use {self._ntypes[0]!r} (the sources), "
                             f"'SRC/{self._ntypes[0]}' or 'DST/{self._ntypes[1]}'")
        return self._ndst if side == "dst" else self._nsrc

    number_of_nodes = num_nodes

    def nodes(self, ntype=None):
        """A block has no single node set: use ``srcdata[NID]`` or ``dstdata[NID]``."""
        raise GraphError("a block has source and destination nodes: use block.srcdata[NID] or block.dstdata[NID]")

    @property
    def src_nodes(self):
        """Original ids of the source nodes (int64 NumPy array; the first ``num_dst`` are the
        destination nodes)."""
        return self._get("src_ids", lambda: self.srcdata[NID].asnumpy().astype(np.int64))

    @property
    def num_dst(self):
        """Number of destination nodes (the same as ``num_dst_nodes()``)."""
        return self._ndst

    def is_homogeneous(self):
        """A block's two sides hold nodes of one type: True, as in DGL."""
        return True

    def _with_edges(self, src, dst):
        return Block((src, dst), self._nsrc, self._ndst, idtype=self._idtype, device=self._ctx)

    def __repr__(self):
        return (f"Block(num_src_nodes={self._nsrc}, num_dst_nodes={self._ndst}, "
                f"num_edges={self.num_edges()})")


def to_block(g, dst_nodes=None, include_dst_in_src=True, src_nodes=None):
    """DGL's ``dgl.to_block``: the block of frontier ``g``'s edges towards ``dst_nodes`` (default:
    every node with an incoming edge, in id order). Its source nodes are ``dst_nodes`` first
    (with ``include_dst_in_src``), then the other edge sources in order of first appearance in
    edge-id order (or ``src_nodes`` when given); edges keep ``g``'s order.
    ``srcdata[NID]``/``dstdata[NID]`` map back to ``g``'s node ids, ``edata[EID]`` to its edge ids
    (``g.edata[EID]`` when ``g`` is itself a sampled subgraph). Features are not copied. The block
    has ``g``'s id type and context. A heterograph frontier gives a ``HeteroBlock``
    (``hetero_block``), ``dst_nodes`` then being ``{node type: ids}``."""
    if type(g).__name__ == "HeteroGraph":
        from .hetero_block import to_block_hetero
        return to_block_hetero(g, dst_nodes, include_dst_in_src, src_nodes)
    if g._two_sides:
        raise GraphError("to_block takes a graph (a sampled frontier), not a block or a bipartite graph")
    dst = np.unique(g._dst) if dst_nodes is None else as_ids(dst_nodes, "dst_nodes")
    if len(np.unique(dst)) != len(dst):
        raise GraphError("to_block: dst_nodes must not repeat a node")
    if len(dst) and (dst.min() < 0 or dst.max() >= g.num_nodes()):
        raise GraphError(f"to_block: dst_nodes must lie in 0..{g.num_nodes() - 1}")
    dst_pos = np.full(g.num_nodes(), -1, np.int64)
    dst_pos[dst] = np.arange(len(dst))
    if len(g._dst) and (dst_pos[g._dst] < 0).any():
        bad = int(g._dst[dst_pos[g._dst] < 0][0])
        raise GraphError(f"to_block: node {bad} receives an edge but is not among dst_nodes; "
                         "pass every destination of the frontier's edges")
    if src_nodes is not None:
        src = as_ids(src_nodes, "src_nodes")
    else:
        first = g._src[np.sort(np.unique(g._src, return_index=True)[1])]     # first appearance order
        src = np.concatenate([dst, first[dst_pos[first] < 0]]) if include_dst_in_src else first
    src_pos = np.full(g.num_nodes(), -1, np.int64)
    src_pos[src] = np.arange(len(src))
    if len(g._src) and (src_pos[g._src] < 0).any():
        raise GraphError("to_block: src_nodes must hold every source of the frontier's edges")
    b = Block((src_pos[g._src], dst_pos[g._dst]), len(src), len(dst), idtype=g.idtype, device=g.device)
    b.srcdata[NID] = b._ids(src)
    b.dstdata[NID] = b._ids(dst)
    b.edata[EID] = g.edata[EID] if EID in g.edata else b._ids(np.arange(g.num_edges()))
    return b
