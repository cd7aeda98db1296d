"""The part of DGL's heterogeneous graphs that has one edge type: ``heterograph`` with one
relation. A relation between two node types is a *bipartite* graph (``BipartiteGraph``: separate
source and destination node sets, ``srcdata``/``dstdata``, ``num_src_nodes``/``num_dst_nodes``),
on which message passing and the layers run as on a block; a relation within one node type is an
ordinary ``Graph`` that keeps the type names. Several relations are out of scope and an error.

    g = dgl.heterograph({("user", "rates", "item"): (u, v)})   # bipartite: user -> item
    g.srcdata["h"], g.dstdata["h"] = user_feat, item_feat
    h = GraphConv(8, 4, norm="both")(g, (g.srcdata["h"], g.dstdata["h"]))
"""
import mxnet as mx

from .base import GraphError, as_ids
from .block import Block
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


def _relation(key):
    """``(source type, edge type, destination type)`` from a canonical triple or an edge type name."""
    if isinstance(key, str):
        return "_N", key, "_N"
    if isinstance(key, tuple) and len(key) == 3 and all(isinstance(k, str) for k in key):
        return key
    raise GraphError(f"heterograph: relation {key!r} must be a (source type, edge type, destination type) "
                     "triple such as ('_U', '_E', '_V')")


def _pair(data, what):
    if isinstance(data, tuple) and len(data) == 2 and isinstance(data[0], str):
        if data[0] != "coo":
            raise GraphError(f"heterograph: {what} is given as {data[0]!r}; only (src, dst) or ('coo', (src, dst))")
        data = data[1]
    if not isinstance(data, (tuple, list)) or len(data) != 2:
        raise GraphError(f"heterograph: {what} must be a pair (src, dst) of node-id sequences")
    return data


def heterograph(data_dict, num_nodes_dict=None, idtype=None, device=None):
    """DGL's ``dgl.heterograph`` for one relation: ``{(srctype, etype, dsttype): (src, dst)}``.
    Two different node types give a ``BipartiteGraph`` (``('_U', '_E', '_V')`` is DGL's usual
    unnamed one), one node type a ``Graph``. ``num_nodes_dict`` gives node counts per type (default:
    the largest id + 1). More than one relation is a GraphError: multi-relation graphs (and with them
    ``HeteroGraphConv``, per-type ``g.nodes[ntype].data`` dictionaries and relation slicing
    ``g[etype]``) are not supported."""
    if not isinstance(data_dict, dict) or not data_dict:
        raise GraphError("heterograph takes a dict {(srctype, etype, dsttype): (src, dst)}")
    if len(data_dict) > 1:
        raise GraphError(f"heterograph: {len(data_dict)} relations ({', '.join(map(str, data_dict))}); only graphs "
                         "with one edge type are supported. Build one graph per relation, or one homogeneous "
                         "graph with a type feature")
    (key, data), = data_dict.items()
    stype, etype, dtype = _relation(key)
    src, dst = _pair(data, str(key))
    counts = dict(num_nodes_dict or {})
    unknown = set(counts) - {stype, dtype}
    if unknown:
        raise GraphError(f"heterograph: num_nodes_dict names node types {sorted(unknown)} that no relation uses; "
                         "multi-relation graphs are not supported")
    s, d = as_ids(src, "src"), as_ids(dst, "dst")
    if stype == dtype:
        n = counts.get(stype, int(max(s.max(initial=-1), d.max(initial=-1)) + 1))
        g = Graph((src, dst), num_nodes=n, idtype=idtype, device=device)
        g._ntypes, g._etype = (stype, stype), etype
        return g
    return BipartiteGraph((src, dst), counts.get(stype, int(s.max(initial=-1) + 1)),
                          counts.get(dtype, int(d.max(initial=-1) + 1)), (stype, dtype), etype, idtype, device)


def create_block(data_dict, num_src_nodes=None, num_dst_nodes=None, idtype=None, device=None):
    """DGL's ``dgl.create_block``: a block from ``(src, dst)`` (or a one-relation dict) with
    ``num_src_nodes`` sources and ``num_dst_nodes`` destinations (ints, or dicts of one type; default:
    the largest id + 1 on each side). No ``NID``/``EID`` features are set."""
    if isinstance(data_dict, dict):
        if len(data_dict) != 1:
            raise GraphError("create_block: only blocks with one edge type are supported")
        (key, data_dict), = data_dict.items()
        stype, _, dtype = _relation(key)
        num_src_nodes = num_src_nodes.get(stype) if isinstance(num_src_nodes, dict) else num_src_nodes
        num_dst_nodes = num_dst_nodes.get(dtype) if isinstance(num_dst_nodes, dict) else num_dst_nodes
    src, dst = _pair(data_dict, "create_block's data")
    s, d = as_ids(src, "src"), as_ids(dst, "dst")
    ns = int(num_src_nodes) if num_src_nodes is not None else int(s.max(initial=-1) + 1)
    nd = int(num_dst_nodes) if num_dst_nodes is not None else int(d.max(initial=-1) + 1)
    return Block((src, dst), ns, nd, idtype=idtype, device=device)


__all__ = ["BipartiteGraph", "heterograph", "create_block"]
