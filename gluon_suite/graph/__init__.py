"""Graphs: a DGL-compatible graph library on MXNet 1.9 (``import gluon_suite.graph as dgl``): the
graph object, message passing with fused built-ins, edge softmax, transforms, batching with
readouts, blocks and neighbour sampling for mini-batch training, data loaders and GNN layers
(``gluon_suite.graph.nn``)."""
from . import dataloading, function, ops, sampling
from .base import ALL, EID, NID, EdgeBatch, GraphError, NodeBatch
from .batch import batch, max_nodes, mean_nodes, readout_nodes, sum_nodes, unbatch
from .block import Block, to_block
from .digraph import DGLGraph, Graph, from_networkx, from_scipy, graph
from .ops import edge_softmax
from .sampling import seed
from .transform import add_self_loop, edge_subgraph, remove_self_loop, reverse, to_bidirected

__all__ = ["graph", "Graph", "DGLGraph", "Block", "GraphError", "EdgeBatch", "NodeBatch", "ALL", "NID", "EID",
           "from_scipy", "from_networkx", "add_self_loop", "remove_self_loop", "to_bidirected", "reverse",
           "edge_subgraph", "to_block", "batch", "unbatch", "readout_nodes", "sum_nodes", "mean_nodes",
           "max_nodes", "edge_softmax", "seed", "function", "ops", "sampling", "dataloading"]
