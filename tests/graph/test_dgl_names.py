"""Every DGL name that docs/graph.md says the package provides exists where a DGL user looks."""
import mxnet as mx
import pytest

import gluon_suite.graph as dgl
from gluon_suite.graph import data, dataloading, function, nn, ops, sampling

TOP = ("graph DGLGraph heterograph create_block from_scipy from_networkx rand_graph batch unbatch to_block "
       "add_self_loop remove_self_loop to_bidirected reverse edge_subgraph add_nodes add_edges remove_edges "
       "remove_nodes readout_nodes readout_edges sum_nodes mean_nodes max_nodes min_nodes sum_edges mean_edges "
       "max_edges min_edges softmax_nodes softmax_edges broadcast_nodes broadcast_edges topk_nodes topk_edges "
       "laplacian_lambda_max edge_softmax seed NID EID ALL node_subgraph in_subgraph out_subgraph khop_adj "
       "khop_graph line_graph save_graphs load_graphs bfs_nodes_generator bfs_edges_generator "
       "topological_nodes_generator prop_nodes_bfs prop_nodes_topo DGLError").split()
METHODS = ("ndata edata srcdata dstdata num_nodes number_of_nodes num_edges number_of_edges num_src_nodes "
           "num_dst_nodes number_of_src_nodes number_of_dst_nodes nodes edges all_edges in_degrees out_degrees "
           "has_zero_in_degree idtype device astype int long to ntypes etypes canonical_etypes srctypes dsttypes "
           "is_homogeneous is_unibipartite is_block adj adj_external adjacency_matrix adj_tensors apply_edges "
           "update_all local_scope local_var set_n_initializer set_e_initializer node_attr_schemes "
           "edge_attr_schemes batch_size batch_num_nodes batch_num_edges add_nodes add_edges remove_edges "
           "remove_nodes add_self_loop remove_self_loop to_bidirected reverse edge_subgraph pull send_and_recv "
           "prop_nodes prop_edges edge_ids find_edges has_edges_between in_edges out_edges subgraph node_subgraph "
           "in_subgraph out_subgraph khop_graph line_graph").split()
FUNCTION = ["copy_u", "copy_e", "copy_src", "copy_edge", "src_mul_edge", "src_mul_dst", "src_add_dst", "sum", "mean",
            "max", "min", "prod"] + [f"{a}_{o}_{b}" for a in "uve" for b in "uve" if a != b
                                     for o in ("add", "sub", "mul", "div", "dot")]
OPS = ["edge_softmax", "gspmm", "gsddmm"] + [f"{m}_{r}" for r in ("sum", "mean", "max", "min") for m in
                                           ["copy_u", "copy_e"] + [f"u_{o}_e" for o in ("add", "sub", "mul", "div")]]
NN = ("GraphConv GATConv SAGEConv GINConv SGConv TAGConv APPNPConv ChebConv SumPooling AvgPooling MaxPooling "
      "edge_softmax Sequential")
DATALOADING = "MultiLayerNeighborSampler MultiLayerFullNeighborSampler DataLoader NodeDataLoader GraphDataLoader"
DATA = "CoraGraphDataset CiteseerGraphDataset KarateClubDataset GINDataset register_data_args"


@pytest.mark.parametrize("module, names", [(dgl, TOP), (function, FUNCTION), (ops, OPS), (nn, NN.split()),
                                           (dataloading, DATALOADING.split()), (data, DATA.split()),
                                           (sampling, ["sample_neighbors"]), (dgl.init, ["zero_initializer"])],
                         ids=["dgl", "function", "ops", "nn", "dataloading", "data", "sampling", "init"])
def test_documented_names_exist(module, names):
    assert [n for n in names if not hasattr(module, n)] == []


def test_documented_graph_methods_exist():
    g = dgl.graph(([0, 1], [1, 2]), device=mx.cpu())
    assert [n for n in METHODS if not hasattr(g, n)] == []
    assert len([n for n in FUNCTION if "_" in n and n.count("_") == 2 and n[0] in "uve" and n[-1] in "uve"]) == 30
