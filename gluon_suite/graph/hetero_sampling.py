"""Neighbour sampling on heterographs with several relations (DGL's ``dgl.sampling.sample_neighbors``
with a heterograph): every relation whose destination type (source type for ``edge_dir='out'``) has
seed nodes is sampled on its own, with the relation's own fan-out, by the same uniform draw as a
graph's (``sampling.pick``). The frontier keeps every node of every type, with the node features;
each relation keeps the drawn edges with their features and ``edata[EID]``, their ids in the
relation."""
import mxnet as mx
import numpy as np

from .base import EID, NID, GraphError, as_ids
from .hetero_graph import HeteroGraph
from .neighbors import pick


def _seeds(g, nodes):
    if not isinstance(nodes, dict):
        if len(g.ntypes) != 1:
            raise GraphError(f"sample_neighbors: give the seed nodes per type ({{ntype: ids}}); the graph has "
                             f"{len(g.ntypes)} node types ({', '.join(g.ntypes)})")
        nodes = {g.ntypes[0]: nodes}
    out = {}
    for t, ids in nodes.items():
        ids = as_ids(ids, f"nodes[{t!r}]")
        n = g.num_nodes(g._ntype(t))
        if len(ids) and (ids.min() < 0 or ids.max() >= n):
            raise GraphError(f"sample_neighbors: nodes[{t!r}] must lie in 0..{n - 1}")
        out[t] = ids
    return out


def _fanouts(g, fanout):
    if not isinstance(fanout, dict):
        return {c: int(fanout) for c in g.canonical_etypes}
    out = {g.to_canonical_etype(e): int(k) for e, k in fanout.items()}
    missing = [c for c in g.canonical_etypes if c not in out]
    if missing:
        raise GraphError(f"sample_neighbors: fanout names no number for {missing[0]}; give one per edge type "
                         "(0 for none, -1 for all)")
    return out


def sample_neighbors_hetero(g, nodes, fanout, edge_dir, replace, rng):
    """The frontier of heterograph ``g`` for seed ``nodes`` (see the module docstring)."""
    seeds, fanouts = _seeds(g, nodes), _fanouts(g, fanout)
    picked = {}
    for c in g.canonical_etypes:
        side = c[2] if edge_dir == "in" else c[0]
        k = fanouts[c]
        picked[c] = (pick(g[c], seeds[side], k, edge_dir, replace, rng) if side in seeds and k != 0
                     else np.zeros(0, np.int64))
    rels = {c: (g[c]._src[e], g[c]._dst[e]) for c, e in picked.items()}
    out = HeteroGraph(rels, {t: g.num_nodes(t) for t in g.ntypes}, g.ntypes, g.idtype, g.device)
    for t in g.ntypes:
        for k, v in g._node_frames[t].items():
            out._node_frames[t][k] = v
    for c, e in picked.items():
        idx = mx.nd.array(e, dtype="int64", ctx=g.device)
        for k, v in g[c].edata.items():
            if len(e):
                out[c].edata[k] = mx.nd.take(v, idx)
        out[c].edata[EID] = mx.nd.array(e, dtype=np.dtype(g.idtype).name, ctx=g.device)
    return out


def sample_blocks_hetero(g, seeds, fanouts, rng):
    """Blocks of heterograph ``g`` for a ``len(fanouts)``-layer model computing outputs at ``seeds``
    (``{node type: ids}``); ``fanouts[i]``: a number or ``{edge type: number}`` for layer i. Input
    layer first."""
    from .hetero_block import to_block_hetero
    dst = _seeds(g, seeds)
    if not sum(len(v) for v in dst.values()):
        raise GraphError("sample_blocks needs at least one seed node")
    blocks = []
    for fanout in reversed(list(fanouts)):
        block = to_block_hetero(sample_neighbors_hetero(g, dst, fanout, "in", False, rng), dst)
        blocks.append(block)
        dst = {t: block._src_frames[t][NID].asnumpy().astype(np.int64) for t in g.ntypes}
    return blocks[::-1]


def seed_batches(indices, batch_size, shuffle, drop_last, rng):
    """Mini-batches ``{node type: ids}`` over ``indices`` (``{node type: ids}``): every (type, id)
    pair once per pass, in type order then id order, or shuffled together with ``shuffle``."""
    pairs = [(t, int(i)) for t in sorted(indices) for i in as_ids(indices[t], f"indices[{t!r}]")]
    order = rng.permutation(len(pairs)) if shuffle else np.arange(len(pairs))
    n = len(pairs) // batch_size if drop_last else -(-len(pairs) // batch_size)
    for b in range(n):
        out = {}
        for k in order[b * batch_size:(b + 1) * batch_size]:
            t, i = pairs[k]
            out.setdefault(t, []).append(i)
        yield {t: np.asarray(v, np.int64) for t, v in out.items()}
