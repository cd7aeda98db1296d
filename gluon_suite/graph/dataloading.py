"""Mini-batch iteration, as DGL's ``dgl.dataloading``: a multi-layer neighbour sampler that turns
seed nodes into blocks, a node data loader that yields ``(input_nodes, output_nodes, blocks)``,
and a graph data loader that batches small graphs. DGL's link-prediction names are here too, from
the modules that hold them: ``EdgeDataLoader``, ``as_edge_prediction_sampler`` and
``EdgePredictionSampler`` (``link_loader``), and the module ``negative_sampler`` (``Uniform``,
``PerSourceUniform``, ``GlobalUniform``), so ``dgl.dataloading.negative_sampler.Uniform(5)`` reads
as in DGL.

    sampler = MultiLayerNeighborSampler([10, 25])
    for input_nodes, output_nodes, blocks in DataLoader(g, train_nids, sampler, batch_size=64,
                                                        shuffle=True):
        logits = model(blocks, g.ndata["feat"][input_nodes])
"""
import math

import mxnet as mx
import numpy as np

from . import negative_sampler
from .base import NID, GraphError, as_ids
from .batch import batch
from .link_loader import EdgeDataLoader, EdgePredictionSampler, as_edge_prediction_sampler
from .sampling import default_rng, sample_blocks

__all__ = ["MultiLayerNeighborSampler", "MultiLayerFullNeighborSampler", "DataLoader", "NodeDataLoader",
           "GraphDataLoader", "EdgeDataLoader", "EdgePredictionSampler", "as_edge_prediction_sampler",
           "negative_sampler"]


class MultiLayerNeighborSampler:
    """DGL's ``MultiLayerNeighborSampler``: ``fanouts[i]`` incoming neighbours drawn uniformly for
    layer i (-1: all). ``sample_blocks(g, seeds)`` gives the blocks, input layer first;
    ``sample(g, seeds)`` gives ``(input_nodes, output_nodes, blocks)`` as DGL 1.x does."""

    def __init__(self, fanouts, replace=False, rng=None, **kwargs):
        if replace:
            raise GraphError("MultiLayerNeighborSampler: sampling with replacement is not supported; "
                             "pass replace=False")
        if not fanouts:
            raise GraphError("MultiLayerNeighborSampler needs one fanout per layer, e.g. [10, 25]")
        # a layer's fan-out: a number, or {edge type: number} on a heterograph
        self.fanouts, self.rng = [f if isinstance(f, dict) else int(f) for f in fanouts], rng

    def sample_blocks(self, g, seed_nodes, exclude_eids=None):
        """Blocks for ``seed_nodes``, input layer first."""
        if exclude_eids is not None:
            raise GraphError("MultiLayerNeighborSampler: exclude_eids is not supported; build the graph "
                             "without those edges")
        return sample_blocks(g, seed_nodes, self.fanouts, self.rng or default_rng())

    def sample(self, g, seed_nodes, exclude_eids=None):
        """``(input_nodes, output_nodes, blocks)``: the ids to gather input features for, the
        seeds, and the blocks (input layer first)."""
        blocks = self.sample_blocks(g, seed_nodes, exclude_eids)
        if getattr(blocks[0], "_src_frames", None) is not None:   # heterograph blocks: per node type
            return ({t: blocks[0].srcnodes[t].data[NID] for t in blocks[0].ntypes},
                    {t: blocks[-1].dstnodes[t].data[NID] for t in blocks[-1].ntypes}, blocks)
        return blocks[0].srcdata[NID], blocks[-1].dstdata[NID], blocks


class MultiLayerFullNeighborSampler(MultiLayerNeighborSampler):
    """Every incoming neighbour on each of ``num_layers`` layers (DGL's full-neighbour sampler)."""

    def __init__(self, num_layers, **kwargs):
        super().__init__([-1] * int(num_layers), **kwargs)


class DataLoader:
    """DGL's node ``DataLoader`` (``NodeDataLoader`` in DGL 0.x): iterates over ``indices`` (node
    ids) in mini-batches of ``batch_size`` (shuffled each pass with ``shuffle``; the last short
    batch dropped with ``drop_last``) and yields ``graph_sampler.sample(graph, batch)``, i.e.
    ``(input_nodes, output_nodes, blocks)``, on the graph's context or on ``device`` (an MXNet
    context) when given. Sampling happens in the calling thread. Given an edge-prediction sampler
    (``as_edge_prediction_sampler``), as in DGL 1.x, ``indices`` are edge ids and the loader is an
    ``EdgeDataLoader`` (its batches: ``(input_nodes, pair, neg_pair, blocks)``)."""

    def __new__(cls, graph, indices, graph_sampler, *args, **kwargs):
        if isinstance(graph_sampler, EdgePredictionSampler):
            return EdgeDataLoader(graph, indices, graph_sampler, *args, **kwargs)
        return super().__new__(cls)

    def __init__(self, graph, indices, graph_sampler, batch_size=1, shuffle=False, drop_last=False,
                 rng=None, device=None, **kwargs):
        self.graph, self.sampler, self.device = graph, graph_sampler, device
        if int(batch_size) < 1:
            raise GraphError(f"batch_size must be at least 1, got {batch_size}")
        self.batch_size, self.shuffle, self.drop_last, self.rng = int(batch_size), shuffle, drop_last, rng
        if isinstance(indices, dict):   # a heterograph: {node type: ids}
            self.indices = {t: as_ids(v.asnumpy() if isinstance(v, mx.nd.NDArray) else v, f"indices[{t!r}]")
                            for t, v in indices.items()}
            return
        arr = np.asarray(indices.asnumpy() if isinstance(indices, mx.nd.NDArray) else indices)
        self.indices = np.flatnonzero(arr) if arr.dtype == bool else as_ids(arr, "indices")

    def __len__(self):
        total = sum(map(len, self.indices.values())) if isinstance(self.indices, dict) else len(self.indices)
        n = total / self.batch_size
        return int(n) if self.drop_last else math.ceil(n)

    def __iter__(self):
        if isinstance(self.indices, dict):
            from .hetero_sampling import seed_batches
            for seeds in seed_batches(self.indices, self.batch_size, self.shuffle, self.drop_last,
                                      self.rng or default_rng()):
                input_nodes, output_nodes, blocks = self.sampler.sample(self.graph, seeds)
                if self.device is not None:
                    blocks = [b.to(self.device) for b in blocks]
                    input_nodes = {t: blocks[0].srcnodes[t].data[NID] for t in blocks[0].ntypes}
                    output_nodes = {t: blocks[-1].dstnodes[t].data[NID] for t in blocks[-1].ntypes}
                yield input_nodes, output_nodes, blocks
            return
        idx = self.indices
        if self.shuffle:
            idx = (self.rng or default_rng()).permutation(idx)
        for i in range(len(self)):
            input_nodes, output_nodes, blocks = self.sampler.sample(
                self.graph, idx[i * self.batch_size:(i + 1) * self.batch_size])
            if self.device is not None:
                blocks = [b.to(self.device) for b in blocks]
                input_nodes, output_nodes = blocks[0].srcdata[NID], blocks[-1].dstdata[NID]
            yield input_nodes, output_nodes, blocks


NodeDataLoader = DataLoader


class GraphDataLoader:
    """DGL's ``GraphDataLoader``: mini-batches of a data set of ``(graph, label)`` pairs as
    ``(batched graph, labels)`` (labels as an NDArray), or of whatever ``collate_fn`` makes of a
    list of items."""

    def __init__(self, dataset, batch_size=1, shuffle=False, drop_last=False, collate_fn=None, rng=None,
                 **kwargs):
        if int(batch_size) < 1:
            raise GraphError(f"batch_size must be at least 1, got {batch_size}")
        self.dataset, self.batch_size, self.shuffle, self.drop_last = dataset, int(batch_size), shuffle, drop_last
        self.collate_fn, self.rng = collate_fn or _collate, rng

    def __len__(self):
        n = len(self.dataset) / self.batch_size
        return int(n) if self.drop_last else math.ceil(n)

    def __iter__(self):
        order = np.arange(len(self.dataset))
        if self.shuffle:
            order = (self.rng or default_rng()).permutation(order)
        for i in range(len(self)):
            yield self.collate_fn([self.dataset[int(j)] for j in order[i * self.batch_size:(i + 1) * self.batch_size]])


def _collate(items):
    """``[(graph, label), ...]`` -> ``(batch(graphs), labels)``."""
    graphs, labels = zip(*items)
    labels = [lab.asnumpy() if isinstance(lab, mx.nd.NDArray) else np.asarray(lab) for lab in labels]
    return batch(list(graphs)), mx.nd.array(np.stack(labels))
