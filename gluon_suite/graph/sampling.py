"""Uniform neighbour sampling into mini-batch blocks (GraphSAGE-style training on large graphs).

A block is a ``Graph`` over its *source* nodes whose first ``num_dst`` nodes are its destination
nodes (DGL's convention): a layer run on it gives valid rows for the first ``num_dst`` nodes, which
are exactly the source nodes of the next block. ``src_nodes`` holds the global ids.
"""
import numpy as np

from .graph import Graph, GraphError


def _in_csr(g):
    def build():
        order = np.argsort(g._dst, kind="stable")
        indptr = np.zeros(g.num_nodes() + 1, np.int64)
        np.add.at(indptr, g._dst[order] + 1, 1)
        return np.cumsum(indptr), g._src[order]
    return g._get("in_csr", build)


def sample_neighbors(g, nodes, fanout, rng):
    """For each node in ``nodes``, up to ``fanout`` incoming edges drawn uniformly without
    replacement (all of them when it has fewer); returns ``(src, dst)`` global ids."""
    indptr, srcs = _in_csr(g)
    out_s, out_d = [], []
    for v in nodes:
        a, b = indptr[v], indptr[v + 1]
        deg = b - a
        if deg == 0:
            continue
        pick = np.arange(a, b) if fanout < 0 or deg <= fanout else a + rng.choice(deg, fanout, replace=False)
        out_s.append(srcs[pick])
        out_d.append(np.full(len(pick), v))
    if not out_s:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    return np.concatenate(out_s), np.concatenate(out_d)


def sample_blocks(g, seeds, fanouts, rng=None):
    """Blocks for a ``len(fanouts)``-layer model computing outputs at ``seeds``; ``fanouts[i]`` is
    the number of neighbours sampled for layer i (-1: all). Returned input layer first."""
    rng = rng or np.random.RandomState()
    seeds = np.asarray(seeds, np.int64)
    if len(seeds) == 0:
        raise GraphError("sample_blocks needs at least one seed node")
    if seeds.min() < 0 or seeds.max() >= g.num_nodes():
        raise GraphError(f"seed node ids must lie in 0..{g.num_nodes() - 1}")
    blocks, dst = [], seeds
    for fanout in reversed(list(fanouts)):
        s, d = sample_neighbors(g, dst, int(fanout), rng)
        extra = np.setdiff1d(np.unique(s), dst, assume_unique=False)
        src_nodes = np.concatenate([dst, extra])
        local = {int(v): i for i, v in enumerate(src_nodes)}
        ls = np.array([local[int(v)] for v in s], np.int64)
        ld = np.array([local[int(v)] for v in d], np.int64)
        block = Graph((ls, ld), num_nodes=len(src_nodes))
        block.src_nodes, block.num_dst = src_nodes, len(dst)
        blocks.append(block)
        dst = src_nodes
    return blocks[::-1]
