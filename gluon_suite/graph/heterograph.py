"""DGL's ``dgl.heterograph`` and ``dgl.create_block``. ``heterograph`` with one relation gives
what the single-relation code has always got: a ``BipartiteGraph`` for a relation between two node
types (separate source and destination node sets, ``srcdata``/``dstdata``, on which message
passing and the layers run as on a block), an ordinary ``Graph`` that keeps the type names for a
relation within one node type. Several relations (or node types beyond those of the one
relation) give a ``HeteroGraph``, one relation graph of those kinds per canonical edge type.

    g = dgl.heterograph({("user", "rates", "item"): (u, v)})   # bipartite: user -> item
    g.srcdata["h"], g.dstdata["h"] = user_feat, item_feat
    h = GraphConv(8, 4, norm="both")(g, (g.srcdata["h"], g.dstdata["h"]))

    hg = dgl.heterograph({("user", "follows", "user"): (u1, v1), ("user", "plays", "game"): (u2, v2)})
    hg.nodes["user"].data["h"] = user_feat                      # per-type features
"""

from .base import GraphError, as_ids
from .block import Block
from .digraph import Graph, _idtype
from .hetero_bipartite import BipartiteGraph
from .hetero_graph import HeteroGraph


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
    """DGL's ``dgl.heterograph``: a graph from ``{(srctype, etype, dsttype): (src, dst)}`` (each
    value also ``('coo', (src, dst))``; a bare edge type name stands for ``('_N', name, '_N')``).
    ``num_nodes_dict`` gives node counts per type; a type it leaves out gets its largest id + 1
    over every relation it takes part in, and a type it names that no relation uses exists with
    no edges. ``idtype`` int32 or int64 (default: int32 when every id array is int32, else int64),
    ``device`` an MXNet context (default the CPU).

    One relation and no other node type gives a ``BipartiteGraph`` (two different types) or a
    ``Graph`` keeping the names (one type), as before; otherwise a ``HeteroGraph`` whose node
    types and canonical edge types are sorted, as DGL sorts them."""
    if not isinstance(data_dict, dict) or not data_dict:
        raise GraphError("heterograph takes a dict {(srctype, etype, dsttype): (src, dst)}")
    edges = {}
    for key, data in data_dict.items():
        c = _relation(key)
        if c in edges:
            raise GraphError(f"heterograph: relation {c} is given twice")
        src, dst = _pair(data, str(key))
        edges[c] = (src, dst)
    counts = dict(num_nodes_dict or {})
    inferred = {}
    ends = {c: (as_ids(s, f"{c} src"), as_ids(d, f"{c} dst")) for c, (s, d) in edges.items()}
    for (stype, _, dtype), (s, d) in ends.items():
        inferred[stype] = max(inferred.get(stype, 0), int(s.max(initial=-1) + 1))
        inferred[dtype] = max(inferred.get(dtype, 0), int(d.max(initial=-1) + 1))
    for t, n in counts.items():
        if not isinstance(t, str) or int(n) < 0:
            raise GraphError(f"heterograph: num_nodes_dict maps node type names to counts >= 0, got {t!r}: {n!r}")
    inferred.update({t: int(n) for t, n in counts.items()})
    (stype, etype, dtype), (src, dst) = next(iter(edges.items()))
    if len(edges) == 1 and set(inferred) == {stype, dtype}:
        if stype == dtype:
            g = Graph((src, dst), num_nodes=inferred[stype], idtype=idtype, device=device)
            g._ntypes, g._etype = (stype, stype), etype
            return g
        return BipartiteGraph((src, dst), inferred[stype], inferred[dtype], (stype, dtype), etype, idtype, device)
    arrays = [a for pair in edges.values() for a in pair]
    return HeteroGraph({c: ends[c] for c in sorted(edges)}, inferred, sorted(inferred), _idtype(idtype, arrays),
                       device)


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


__all__ = ["BipartiteGraph", "HeteroGraph", "heterograph", "create_block"]
