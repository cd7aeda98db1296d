"""Graphs: a DGL-style graph library on MXNet 1.9: the graph object, message passing with fused
built-ins, edge softmax, batching with readouts, and GNN layers (``gluon_suite.graph.nn``)."""
from . import function
from .batch import batch, max_nodes, mean_nodes, readout_nodes, sum_nodes, unbatch
from .graph import EdgeBatch, Graph, GraphError, edge_softmax

__all__ = ["Graph", "GraphError", "EdgeBatch", "edge_softmax", "function", "batch", "unbatch",
           "readout_nodes", "sum_nodes", "mean_nodes", "max_nodes"]
