"""DGL's uni-bipartite graph: one relation between two node types, with separate source and
destination node sets (``srcdata``/``dstdata``, ``num_src_nodes``/``num_dst_nodes``). Message
passing and the layers run on it as on a block. ``heterograph`` builds one for a relation between
two different node types, and a ``HeteroGraph`` holds one per such relation."""
import mxnet as mx

from .base import GraphError, as_ids
from .digraph import Graph, _idtype


class BipartiteGraph(Graph):
    """A graph whose edges go from ``num_src`` source nodes (type ``ntypes[0]``) to ``num_dst``
    destination nodes (type ``ntypes[1]``): DGL's uni-bipartite heterograph. Features live in
    ``srcdata``/``dstdata`` (there is no single ``ndata``); unlike a block, the destination nodes
    are not among the sources."""

    _two_sides = True

    def __init__(self, edges, num_src, num_dst, ntypes=("_U", "_V"), etype="_E", idtype=None, device=None):
        if not isinstance(edges, (tuple, list)) or len(edges) != 2:
            raise GraphError("a bipartite graph is built from a pair (src, dst) of node-id sequences")
        self._idtype, self._ctx = _idtype(idtype, edges), device or mx.cpu()
        self._ntypes, self._etype = tuple(ntypes), etype
        src, dst = as_ids(edges[0], "src"), as_ids(edges[1], "dst")
        if len(src) != len(dst):
            raise GraphError(f"src has {len(src)} entries but dst has {len(dst)}; give one (src, dst) pair per edge")
        self._setup(src, dst, int(num_src), int(num_dst))

    @property
    def ndata(self):
        """A bipartite graph has two node sets: use ``srcdata`` or ``dstdata``."""
        raise GraphError(f"this graph has two node types ({self._ntypes[0]!r} -> {self._ntypes[1]!r}): use "
                         "g.srcdata or g.dstdata, not g.ndata")

    def _side(self, ntype):
        if ntype == self._ntypes[0]:
            return "src"
        if ntype == self._ntypes[1]:
            return "dst"
        raise GraphError(f"node type {ntype!r} is not in this graph (it has {self._ntypes[0]!r} and "
                         f"{self._ntypes[1]!r})")

    def num_nodes(self, ntype=None):
        """Nodes of type ``ntype``, or of both types together (as DGL) when None."""
        if ntype is None:
            return self._nsrc + self._ndst
        return self._nsrc if self._side(ntype) == "src" else self._ndst

    number_of_nodes = num_nodes

    def nodes(self, ntype=None):
        """The ids 0..n-1 of the nodes of type ``ntype`` (required: the two types have separate ids)."""
        if ntype is None:
            raise GraphError(f"g.nodes(): name the node type, {self._ntypes[0]!r} or {self._ntypes[1]!r}")
        return mx.nd.arange(self.num_nodes(ntype), dtype=self._idtype, ctx=self._ctx)

    def _with_edges(self, src, dst):
        return BipartiteGraph((src, dst), self._nsrc, self._ndst, self._ntypes, self._etype, self._idtype, self._ctx)

    def __repr__(self):
        return (f"BipartiteGraph({self._ntypes[0]!r} -> {self._ntypes[1]!r}: num_src_nodes={self._nsrc}, "
                f"num_dst_nodes={self._ndst}, num_edges={self.num_edges()})")


__all__ = ["BipartiteGraph"]
