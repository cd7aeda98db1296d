"""Uniform neighbour sampling, as DGL's ``dgl.sampling.sample_neighbors``, and the blocks of a
multi-layer model built from it (GraphSAGE-style training on large graphs).

Randomness comes from a NumPy generator: the ``rng`` argument, or this module's own one, which
``seed`` resets (DGL's ``dgl.seed``).
"""
import numpy as np

from .base import GraphError, as_ids
from .block import to_block
from .neighbors import pick

_RNG = np.random.RandomState()


def seed(value):
    """Reset the sampler's generator (DGL's ``dgl.seed``): the same seed gives the same samples."""
    global _RNG
    _RNG = np.random.RandomState(int(value))


def default_rng():
    """The module's generator, used when no ``rng`` is passed."""
    return _RNG


def sample_neighbors(g, nodes, fanout, edge_dir="in", prob=None, replace=False, rng=None, **kwargs):
    """DGL's ``sample_neighbors``: for each node in ``nodes``, up to ``fanout`` of its incoming
    (``edge_dir='in'``) or outgoing edges, drawn uniformly (without replacement unless
    ``replace``; all of them when it has fewer, or when ``fanout`` is -1). Returns a graph with
    all of ``g``'s nodes and the drawn edges, ``edata[EID]`` their ids in ``g``. On a heterograph
    ``nodes`` is ``{node type: ids}`` and ``fanout`` a number or ``{edge type: number}``
    (``hetero_sampling``)."""
    from .subgraph import edge_subgraph
    if prob is not None:
        raise GraphError("sample_neighbors: weighted sampling (prob=...) is not supported; sample uniformly")
    if edge_dir not in ("in", "out"):
        raise GraphError(f"sample_neighbors(edge_dir={edge_dir!r}): choose 'in' or 'out'")
    rng = rng or _RNG
    if type(g).__name__ == "HeteroGraph":   # several relations: each sampled on its own
        from .hetero_sampling import sample_neighbors_hetero
        return sample_neighbors_hetero(g, nodes, fanout, edge_dir, replace, rng)
    nodes = as_ids(nodes, "nodes")
    if len(nodes) and (nodes.min() < 0 or nodes.max() >= g.num_nodes()):
        raise GraphError(f"sample_neighbors: node ids must lie in 0..{g.num_nodes() - 1}")
    return edge_subgraph(g, pick(g, nodes, int(fanout), edge_dir, replace, rng), relabel_nodes=False)


def sample_blocks(g, seeds, fanouts, rng=None):
    """Blocks for a ``len(fanouts)``-layer model computing outputs at ``seeds``; ``fanouts[i]`` is
    the number of neighbours sampled for layer i (-1: all). Returned input layer first; feed
    ``feat[blocks[0].src_nodes]`` to the first layer."""
    rng = rng or _RNG
    if type(g).__name__ == "HeteroGraph":
        from .hetero_sampling import sample_blocks_hetero
        return sample_blocks_hetero(g, seeds, fanouts, rng)
    seeds = as_ids(seeds, "seeds")
    if len(seeds) == 0:
        raise GraphError("sample_blocks needs at least one seed node")
    if seeds.min() < 0 or seeds.max() >= g.num_nodes():
        raise GraphError(f"seed node ids must lie in 0..{g.num_nodes() - 1}")
    blocks, dst = [], seeds
    for fanout in reversed(list(fanouts)):
        frontier = sample_neighbors(g, dst, int(fanout), rng=rng)
        block = to_block(frontier, dst)
        blocks.append(block)
        dst = block.src_nodes
    return blocks[::-1]

