"""Mini-batches for link prediction, as DGL's edge data loader (``EdgeDataLoader`` in DGL 0.x,
``DataLoader`` with ``as_edge_prediction_sampler`` in 1.x), on a graph or a heterograph.

    sampler = as_edge_prediction_sampler(MultiLayerNeighborSampler([10, 10]), exclude="reverse_id",
                                         reverse_eids=rev, negative_sampler=Uniform(5))
    for input_nodes, pair, neg_pair, blocks in EdgeDataLoader(g, train_eids, sampler, batch_size=64):
        h = encoder(blocks, g.ndata["feat"][input_nodes])      # one row per pair-graph node
        loss = link_loss(scorer(pair, h), scorer(neg_pair, h))

A batch is ``batch_size`` positive edges given by id (each edge once per pass, shuffled with
``shuffle``). For it the loader builds:

- ``pair``: a graph of the positive edges alone, and ``neg_pair`` one of the negatives
  (``negative_sampler(g, eids)``: ``k`` per positive, see ``negative_sampler``). Both have the same
  nodes, the distinct end nodes of the two sets, sorted by id (per type on a heterograph, per side
  on a bipartite graph); ``ndata[NID]`` gives their ids in ``g``. Edge i of ``pair`` is positive
  i of the batch; edges ``i*k .. i*k + k - 1`` of ``neg_pair`` are its negatives.
- the message-passing graph: ``g`` without the excluded edges (``exclude``), which keeps every
  node, shares ``g``'s node features and has ``edata[EID]`` (ids in ``g``). With a graph sampler
  (``MultiLayerNeighborSampler``) the batch's last item is its blocks, sampled from that graph
  for the pair graph's nodes (the last block's destinations are ``pair``'s nodes, in order) and
  ``input_nodes`` the first block's sources; without one (``graph_sampler=None``) it is that
  graph itself and ``input_nodes`` every node: run the encoder on it and take the rows
  ``pair.ndata[NID]``. Blocks need a graph with one relation; a heterograph trains full-graph.

``exclude``: which edges the message-passing graph drops, so that the model cannot read a
positive edge off its own input. None (keep all), ``'self'`` (the batch's edges),
``'reverse_id'`` (those and ``reverse_eids[eids]``: the reverse of edge e is edge
``reverse_eids[e]``; on a heterograph ``{edge type: array}`` within each relation),
``'reverse_types'`` (heterograph: those and the edges with the same ids in relation
``reverse_etypes[etype]``, as ``link_data.linqs_heterograph`` numbers its reverse relations), or a
callable from the batch's edge ids to the ids (dict on a heterograph) to drop. Without a negative
sampler the batch is ``(input_nodes, pair, blocks)``."""
import math

import mxnet as mx
import numpy as np

from .base import EID, NID, GraphError, as_ids, take_rows
from .digraph import Graph
from .hetero_bipartite import BipartiteGraph
from .hetero_graph import HeteroGraph
from .sampling import default_rng, sample_blocks
from .subgraph import edge_subgraph

__all__ = ["EdgePredictionSampler", "as_edge_prediction_sampler", "EdgeDataLoader", "edge_batch", "excluded_edges",
           "without_edges"]

EXCLUDE = (None, "self", "reverse_id", "reverse_types")


def _ids_in(rel, eids, what):
    e = as_ids(eids, what)
    if len(e) and (e.min() < 0 or e.max() >= rel.num_edges()):
        raise GraphError(f"{what}: edge ids must lie in 0..{rel.num_edges() - 1}")
    return e


def _by_relation(g, eids, what):
    """``{canonical etype: int64 ids}`` for a heterograph, or the ids for a graph."""
    if isinstance(g, HeteroGraph):
        if not isinstance(eids, dict):
            raise GraphError(f"{what}: a heterograph's edge ids come as a dict {{edge type: ids}}")
        out = {}
        for e, ids in eids.items():
            c = g.to_canonical_etype(e)
            out[c] = np.concatenate([out.get(c, np.zeros(0, np.int64)), _ids_in(g[c], ids, what)])
        return out
    if isinstance(eids, dict):
        if len(eids) != 1:
            raise GraphError(f"{what}: the graph has one relation; pass its edge ids")
        eids = next(iter(eids.values()))
    return _ids_in(g, eids, what)


def excluded_edges(g, eids, exclude=None, reverse_eids=None, reverse_etypes=None):
    """The edge ids (a dict ``{canonical etype: ids}`` on a heterograph) that ``exclude`` drops for
    a batch of edges ``eids`` (the module docstring)."""
    if callable(exclude):
        return _by_relation(g, exclude(eids), "exclude(eids)")
    if exclude not in EXCLUDE:
        raise GraphError(f"exclude={exclude!r}: choose None, 'self', 'reverse_id', 'reverse_types' or a callable")
    eids = _by_relation(g, eids, "eids")
    hetero = isinstance(g, HeteroGraph)
    if exclude is None:
        return {c: np.zeros(0, np.int64) for c in eids} if hetero else np.zeros(0, np.int64)
    if exclude == "self":
        return eids
    if exclude == "reverse_id":
        if reverse_eids is None:
            raise GraphError("exclude='reverse_id' needs reverse_eids (edge e's reverse is reverse_eids[e])")
        if not hetero:
            rev = _ids_in(g, reverse_eids, "reverse_eids")
            if len(rev) != g.num_edges():
                raise GraphError(f"reverse_eids has {len(rev)} entries; give one per edge ({g.num_edges()})")
            return np.concatenate([eids, rev[eids]])
        revs = {g.to_canonical_etype(e): _ids_in(g[e], r, "reverse_eids") for e, r in reverse_eids.items()}
        return {c: np.concatenate([ids, revs[c][ids]]) if c in revs else ids for c, ids in eids.items()}
    if not hetero or not reverse_etypes:
        raise GraphError("exclude='reverse_types' takes a heterograph and reverse_etypes {edge type: its reverse}")
    out = dict(eids)
    rev_types = {g.to_canonical_etype(a): g.to_canonical_etype(b) for a, b in reverse_etypes.items()}
    for c, ids in eids.items():
        if c in rev_types:
            r = rev_types[c]
            if len(ids) and ids.max() >= g.num_edges(r):
                raise GraphError(f"reverse_types: relation {r} has {g.num_edges(r)} edges, fewer than {c}; a "
                                 "reverse relation must number its edges as the relation it reverses")
            out[r] = np.concatenate([out.get(r, np.zeros(0, np.int64)), ids])
    return out


def _kept(rel, drop):
    keep = np.ones(rel.num_edges(), bool)
    keep[drop] = False
    return np.flatnonzero(keep)


def without_edges(g, drop):
    """``g`` without the edges ``drop`` (ids, or ``{canonical etype: ids}``): every node kept, node
    features shared, edge features of the kept edges, ``edata[EID]`` their ids in ``g``. ``g``
    itself when nothing is dropped."""
    if not isinstance(g, HeteroGraph):
        return g if not len(drop) else edge_subgraph(g, _kept(g, drop), relabel_nodes=False)
    if not any(len(d) for d in drop.values()):
        return g
    keep = {c: _kept(g[c], drop.get(c, np.zeros(0, np.int64))) for c in g.canonical_etypes}
    out = HeteroGraph({c: (g[c]._src[k], g[c]._dst[k]) for c, k in keep.items()},
                      {t: g.num_nodes(t) for t in g.ntypes}, g.ntypes, g.idtype, g.device)
    for t in g.ntypes:
        out.nodes[t].data.update(g.nodes[t].data)
    for c, k in keep.items():
        rel, new = g[c], out[c]
        for name, v in rel.edata.items():
            new.edata[name] = take_rows(v, k, rel._ids)
        new.edata[EID] = rel.edata[EID][rel._ids(k)] if EID in rel.edata and len(k) else rel._ids(k)
    return out


def _compact(ids_lists, n):
    nodes = np.unique(np.concatenate(ids_lists)) if ids_lists else np.zeros(0, np.int64)
    pos = np.full(n, -1, np.int64)
    pos[nodes] = np.arange(len(nodes))
    return nodes, pos


def _pair_graphs(g, pos, neg):
    """``(pair, neg_pair)`` over the same compacted nodes (module docstring)."""
    if isinstance(g, HeteroGraph):
        ends = {t: [] for t in g.ntypes}
        for part in (pos, neg) if neg is not None else (pos,):
            for (s, _, d), (u, v) in part.items():
                ends[s].append(u)
                ends[d].append(v)
        comp = {t: _compact(ends[t], g.num_nodes(t)) for t in g.ntypes}
        graphs = []
        for part in (pos, neg) if neg is not None else (pos,):
            pg = HeteroGraph({c: (comp[c[0]][1][u], comp[c[2]][1][v]) for c, (u, v) in part.items()},
                             {t: len(comp[t][0]) for t in g.ntypes}, g.ntypes, g.idtype, g.device)
            for t in g.ntypes:
                pg.nodes[t].data[NID] = mx.nd.array(comp[t][0], dtype=g.idtype, ctx=g.device)
            graphs.append(pg)
        return graphs[0], graphs[1] if neg is not None else None
    parts = [pos] + ([neg] if neg is not None else [])
    if g._two_sides:
        (ns, ps), (nd, pd) = (_compact([p[0] for p in parts], g.num_src_nodes()),
                              _compact([p[1] for p in parts], g.num_dst_nodes()))
        graphs = [BipartiteGraph((ps[u], pd[v]), len(ns), len(nd), g._ntypes, g._etype, g.idtype, g.device)
                  for u, v in parts]
        for pg in graphs:
            pg.srcdata[NID], pg.dstdata[NID] = g._ids(ns), g._ids(nd)
    else:
        nodes, p = _compact([a for uv in parts for a in uv], g.num_nodes())
        graphs = [Graph((p[u], p[v]), num_nodes=len(nodes), idtype=g.idtype, device=g.device) for u, v in parts]
        for pg in graphs:
            pg._ntypes, pg._etype = g._ntypes, g._etype
            pg.ndata[NID] = g._ids(nodes)
    return graphs[0], graphs[1] if neg is not None else None


def edge_batch(g, eids, negative_sampler=None, graph_sampler=None, exclude=None, reverse_eids=None,
               reverse_etypes=None, rng=None):
    """One batch of positive edges ``eids`` (ids, or ``{edge type: ids}`` on a heterograph) as the
    module docstring describes: ``(input_nodes, pair, neg_pair, blocks_or_graph)``, or without a
    negative sampler ``(input_nodes, pair, blocks_or_graph)``. ``rng`` (a NumPy ``RandomState``)
    drives the negative sampler and the graph sampler (default: theirs, or the sampling module's
    generator)."""
    hetero = isinstance(g, HeteroGraph)
    eids = _by_relation(g, eids, "eids")
    if hetero:
        pos = {c: (g[c]._src[e], g[c]._dst[e]) for c, e in eids.items()}
    else:
        pos = (g._src[eids], g._dst[eids])
    neg = None
    if negative_sampler is not None:
        neg = negative_sampler.sample(g, eids, rng=rng)
    pair, neg_pair = _pair_graphs(g, pos, neg)
    mp = without_edges(g, excluded_edges(g, eids, exclude, reverse_eids, reverse_etypes))
    if graph_sampler is None:
        input_nodes = {t: mp.nodes(t) for t in mp.ntypes} if hetero else mp.nodes()
        out = mp
    else:
        if hetero:
            raise GraphError("sampled blocks take a graph with one relation; train a heterograph full-graph "
                             "(graph_sampler=None)")
        blocks = sample_blocks(mp, pair.ndata[NID].asnumpy(), graph_sampler.fanouts,
                               rng or graph_sampler.rng or default_rng())
        if mp is not g:   # the blocks number mp's edges: give them g's ids
            orig = mp.edata[EID].asnumpy().astype(np.int64)
            for b in blocks:
                b.edata[EID] = b._ids(orig[b.edata[EID].asnumpy().astype(np.int64)])
        input_nodes, out = blocks[0].srcdata[NID], blocks
    return (input_nodes, pair, out) if neg_pair is None else (input_nodes, pair, neg_pair, out)


class EdgePredictionSampler:
    """DGL's edge-prediction sampler (``as_edge_prediction_sampler``): a node sampler (or None for
    full-graph message passing) with the exclusion and negative sampling of the module docstring;
    ``sample(g, eids)`` is ``edge_batch``."""

    def __init__(self, sampler=None, exclude=None, reverse_eids=None, reverse_etypes=None, negative_sampler=None,
                 rng=None):
        if not callable(exclude) and exclude not in EXCLUDE:
            raise GraphError(f"exclude={exclude!r}: choose None, 'self', 'reverse_id', 'reverse_types' or a callable")
        if exclude == "reverse_id" and reverse_eids is None:
            raise GraphError("exclude='reverse_id' needs reverse_eids (edge e's reverse is reverse_eids[e])")
        if exclude == "reverse_types" and not reverse_etypes:
            raise GraphError("exclude='reverse_types' needs reverse_etypes {edge type: its reverse edge type}")
        self.sampler, self.exclude, self.reverse_eids, self.reverse_etypes = sampler, exclude, reverse_eids, reverse_etypes
        self.negative_sampler, self.rng = negative_sampler, rng

    def sample(self, g, eids, rng=None):
        """One batch (``edge_batch``)."""
        return edge_batch(g, eids, self.negative_sampler, self.sampler, self.exclude, self.reverse_eids,
                          self.reverse_etypes, rng or self.rng)


def as_edge_prediction_sampler(sampler, exclude=None, reverse_eids=None, reverse_etypes=None, negative_sampler=None,
                               rng=None):
    """DGL 1.x's ``as_edge_prediction_sampler``: an ``EdgePredictionSampler``."""
    return EdgePredictionSampler(sampler, exclude, reverse_eids, reverse_etypes, negative_sampler, rng)


class EdgeDataLoader:
    """Batches of ``batch_size`` positive edges ``eids`` (ids or a boolean mask; on a heterograph
    ``{edge type: ids}``, batched across relations) of ``g``, each edge once per pass, in a new
    order each pass with ``shuffle`` (from ``rng`` or the sampling module's generator), the last
    short batch dropped with ``drop_last``. ``graph_sampler``: an ``EdgePredictionSampler``, or a
    node sampler / None completed by ``exclude``, ``reverse_eids``, ``reverse_etypes`` and
    ``negative_sampler`` (DGL 0.x's arguments). ``device``: an MXNet context to move each batch's
    graphs to. Yields ``edge_batch``'s tuples."""

    def __init__(self, g, eids, graph_sampler=None, batch_size=1, shuffle=False, drop_last=False, rng=None,
                 device=None, exclude=None, reverse_eids=None, reverse_etypes=None, negative_sampler=None, **kwargs):
        if int(batch_size) < 1:
            raise GraphError(f"batch_size must be at least 1, got {batch_size}")
        if not isinstance(graph_sampler, EdgePredictionSampler):
            graph_sampler = EdgePredictionSampler(graph_sampler, exclude, reverse_eids, reverse_etypes,
                                                  negative_sampler)
        self.g, self.sampler, self.device, self.rng = g, graph_sampler, device, rng
        self.batch_size, self.shuffle, self.drop_last = int(batch_size), shuffle, drop_last
        if not isinstance(g, HeteroGraph) and not isinstance(eids, dict):
            arr = np.asarray(eids.asnumpy() if isinstance(eids, mx.nd.NDArray) else eids)
            eids = np.flatnonzero(arr) if arr.dtype == bool else arr
        ids = _by_relation(g, eids, "eids")
        ids = ids if isinstance(ids, dict) else {None: ids}
        self._types = list(ids)
        self._flat = np.concatenate([np.stack([np.full(len(e), i), e], 1) for i, e in enumerate(ids.values())]
                                    + [np.zeros((0, 2), np.int64)]).astype(np.int64)

    def __len__(self):
        n = len(self._flat) / self.batch_size
        return int(n) if self.drop_last else math.ceil(n)

    def __iter__(self):
        flat = self._flat
        if self.shuffle:
            flat = flat[(self.rng or default_rng()).permutation(len(flat))]
        for i in range(len(self)):
            chunk = flat[i * self.batch_size:(i + 1) * self.batch_size]
            if self._types == [None]:
                eids = chunk[:, 1]
            else:
                eids = {c: chunk[chunk[:, 0] == j, 1] for j, c in enumerate(self._types)}
            out = self.sampler.sample(self.g, eids, rng=self.rng)
            if self.device is not None:
                out = _to(out, self.device)
            yield out


def _to(batch, device):
    *graphs, last = batch[1:]
    moved = [g.to(device) for g in graphs]
    last = [b.to(device) for b in last] if isinstance(last, list) else last.to(device)
    first = last[0].srcdata[NID] if isinstance(last, list) else (
        {t: last.nodes(t) for t in last.ntypes} if isinstance(last, HeteroGraph) else last.nodes())
    return (first, *moved, last)
