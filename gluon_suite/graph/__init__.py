"""Graphs: a DGL-compatible graph library on MXNet 1.9 (``import gluon_suite.graph as dgl``): the
graph object on any context with int32 or int64 ids, heterographs (one relation: a bipartite graph;
several: ``HeteroGraph`` with per-type features, relation slices, ``multi_update_all``,
``to_homogeneous``/``to_heterogeneous``), message passing with fused built-ins (on all edges, or on
some with ``pull`` and ``send_and_recv``), edge softmax, transforms, subgraphs and in-place
mutation, batching with readouts, blocks and neighbour sampling for mini-batch training, saving and
loading graphs (``save_graphs``/``load_graphs``, the package's own format), data loaders and GNN
layers (``gluon_suite.graph.nn``). Every error about bad input is a ``GraphError``, also named
``DGLError``.

Importing it sets glibc's malloc for MXNet's way of allocating (``gluon_suite.malloc``;
``GLUON_SUITE_MALLOC=off`` leaves it alone), and turns MXNet's bulked backward off in this
process, as ``MXNET_EXEC_BULK_EXEC_TRAIN=0`` would, unless that variable is set: a bulked segment
keeps every buffer it frees alive until the segment ends, and with (edges, heads) tensors that is
a large part of a graph model's peak memory (docs/graph.md, "Memory and the allocator"). MXNet
reads the variable once, when autograd is first used, so this holds for a process that imports
the package before it trains anything; processes it starts later keep MXNet's default."""
import os as _os

from .. import malloc as _malloc

_malloc.tune()


def _backward_unbulked():
    name = "MXNET_EXEC_BULK_EXEC_TRAIN"
    if name in _os.environ:
        return                                   # the user's choice
    import mxnet
    _os.environ[name] = "0"
    try:
        mxnet.autograd.is_recording()            # MXNet's autograd reads it here, once per process
    finally:
        del _os.environ[name]                    # not inherited by processes started later


_backward_unbulked()
from . import dataloading, function, init, node_apply, ops, propagate, sampling, subgraph  # noqa: F401
from .base import ALL, EID, NID, DGLError, EdgeBatch, GraphError, NodeBatch
from .batch import batch, unbatch
from .block import Block, to_block
from .digraph import DGLGraph, Graph, from_networkx, from_scipy, graph
from .hetero_convert import ETYPE, NTYPE, metapath_reachable_graph, to_heterogeneous, to_homogeneous
from .heterograph import BipartiteGraph, HeteroGraph, create_block, heterograph
from .io import load_graphs, save_graphs
from .hetero_mutation import add_edges, add_nodes, remove_edges, remove_nodes
from .mutation import rand_graph
from .nn.conv.propagation import laplacian_lambda_max
from .ops import edge_softmax
from .propagate import (bfs_edges_generator, bfs_nodes_generator, prop_nodes_bfs, prop_nodes_topo,
                        topological_nodes_generator)
from .readout import (broadcast_edges, broadcast_nodes, max_edges, max_nodes, mean_edges, mean_nodes, min_edges,
                      min_nodes, readout_edges, readout_nodes, softmax_edges, softmax_nodes, sum_edges, sum_nodes,
                      topk_edges, topk_nodes)
from .sampling import seed
from .hetero_subgraph import (add_reverse_edges, edge_subgraph, edge_type_subgraph, in_subgraph, node_subgraph,
                              node_type_subgraph, out_subgraph)
from .subgraph import khop_adj, khop_graph, line_graph
from .transform import add_self_loop, remove_self_loop, reverse, to_bidirected

__all__ = ["graph", "Graph", "DGLGraph", "Block", "BipartiteGraph", "HeteroGraph", "heterograph", "create_block",
           "to_homogeneous", "to_heterogeneous", "metapath_reachable_graph", "NTYPE", "ETYPE", "GraphError",
           "DGLError", "EdgeBatch", "NodeBatch", "ALL", "NID", "EID", "from_scipy", "from_networkx", "rand_graph",
           "add_nodes", "add_edges", "remove_edges", "remove_nodes", "add_self_loop", "remove_self_loop",
           "to_bidirected", "reverse", "node_subgraph", "edge_subgraph", "in_subgraph", "out_subgraph",
           "node_type_subgraph", "edge_type_subgraph", "add_reverse_edges", "khop_adj",
           "khop_graph", "line_graph", "save_graphs", "load_graphs", "to_block", "batch", "unbatch", "readout_nodes",
           "readout_edges", "sum_nodes", "mean_nodes", "max_nodes", "min_nodes", "sum_edges", "mean_edges",
           "max_edges", "min_edges", "softmax_nodes", "softmax_edges", "broadcast_nodes", "broadcast_edges",
           "topk_nodes", "topk_edges", "laplacian_lambda_max", "edge_softmax", "bfs_nodes_generator",
           "bfs_edges_generator", "topological_nodes_generator", "prop_nodes_bfs", "prop_nodes_topo", "seed",
           "function", "init", "ops", "sampling", "dataloading", "subgraph", "propagate"]
