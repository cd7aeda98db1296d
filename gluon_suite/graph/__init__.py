"""Graphs: a DGL-style graph library on MXNet 1.9 (graph object, message passing with fused
built-ins, edge softmax)."""
from . import function
from .graph import EdgeBatch, Graph, GraphError, edge_softmax

__all__ = ["Graph", "GraphError", "EdgeBatch", "edge_softmax", "function"]
