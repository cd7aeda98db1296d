"""The ``dgl.nn.mxnet`` names docs/graph.md lists as provided are exactly the layers
``gluon_suite.graph.nn`` exports, each constructible with DGL's arguments, and the layers it lists
as not provided are absent."""
import pathlib
import re

import pytest
from mxnet.gluon import nn as gnn

from gluon_suite.graph import nn

DOC = (pathlib.Path(__file__).resolve().parents[2] / "docs" / "graph.md").read_text()


def bullet(prefix):
    """The text of the bullet of docs/graph.md that starts with ``prefix`` (up to the next bullet)."""
    start = DOC.index(prefix)
    end = DOC.find("\n- ", start + 1)
    return DOC[start:end]


def provided():
    names = re.findall(r"`([A-Za-z_0-9]+)`", bullet("- `dgl.nn.mxnet`:"))
    return [n for n in names if n[0].isupper() or n == "edge_softmax"]


def test_documented_layer_list_matches_the_exports():
    assert sorted(provided()) == sorted(nn.__all__)


@pytest.mark.parametrize("name", sorted(set(provided()) - {"edge_softmax"}))
def test_documented_layer_is_a_gluon_block_in_nn_and_its_dgl_submodule(name):
    cls = getattr(nn, name)
    assert issubclass(cls, gnn.Block)
    home = nn.glob if "Pooling" in name or name == "Set2Set" else nn.utils if name == "Sequential" else nn.conv
    assert getattr(home, name) is cls


DGL_ARGS = {   # one construction per new layer with DGL's argument names, as a DGL user writes it
    "AGNNConv": dict(init_beta=1.0, learn_beta=True, allow_zero_in_degree=False),
    "GMMConv": dict(in_feats=4, out_feats=2, dim=2, n_kernels=3, aggregator_type="sum", residual=False, bias=True,
                    allow_zero_in_degree=False),
    "NNConv": dict(in_feats=4, out_feats=2, edge_func=gnn.Dense(8), aggregator_type="mean", residual=False,
                   bias=True),
    "EdgeConv": dict(in_feat=4, out_feat=2, batch_norm=False, allow_zero_in_degree=False),
    "GatedGraphConv": dict(in_feats=2, out_feats=4, n_steps=2, n_etypes=2, bias=True),
    "RelGraphConv": dict(in_feat=4, out_feat=2, num_rels=3, regularizer="basis", num_bases=2, bias=True,
                         activation=None, self_loop=True, low_mem=False, dropout=0.0, layer_norm=False),
    "DenseGraphConv": dict(in_feats=4, out_feats=2, norm="both", bias=True, activation=None),
    "DenseSAGEConv": dict(in_feats=4, out_feats=2, feat_drop=0.0, bias=True, norm=None, activation=None),
    "DenseChebConv": dict(in_feats=4, out_feats=2, k=2, bias=True),
    "SortPooling": dict(k=3),
    "GlobalAttentionPooling": dict(gate_nn=gnn.Dense(1), feat_nn=None),
    "Set2Set": dict(input_dim=4, n_iters=2, n_layers=1),
}


@pytest.mark.parametrize("name", sorted(DGL_ARGS))
def test_new_layers_take_dgls_keyword_arguments(name):
    getattr(nn, name)(**DGL_ARGS[name])


def test_layers_listed_as_not_provided_are_absent():
    text = bullet("- Heterographs beyond")
    assert "`HeteroEmbedding`" in text and "`HeteroLinear`" in text
    assert not hasattr(nn, "HeteroEmbedding") and not hasattr(nn, "HeteroLinear")
