"""``dgl.to_block`` on a heterograph frontier (``HeteroBlock``): per node type the destination nodes
come first among the sources, ids map back through NID/EID, and a two-layer HeteroGraphConv run on
the blocks of a full-fan-out frontier gives, at the seed nodes, exactly what the same layers give on
the whole graph (the whole-graph computation is the reference); one-line errors."""
import mxnet as mx
import numpy as np
import pytest

import gluon_suite.graph as dgl
from gluon_suite.graph.nn import HeteroGraphConv, SAGEConv

REL = {("user", "follows", "user"): ([0, 1, 2, 3, 4, 4], [1, 1, 1, 2, 1, 3]),
       ("user", "plays", "game"): ([0, 1, 2, 3, 4], [0, 0, 0, 1, 0]),
       ("game", "played-by", "user"): ([0, 0, 0, 1, 0], [0, 1, 2, 3, 4])}


def _layer(i, o):
    return HeteroGraphConv({e: SAGEConv((i, i), o, "mean") for _, e, _ in REL}, aggregate="sum")


def _model(seed):
    mx.random.seed(seed)
    layers = [_layer(3, 4), _layer(4, 2)]
    for layer in layers:
        layer.initialize(mx.init.Xavier())
    return layers


@pytest.mark.parametrize("idtype", ["int32", "int64"])
def test_blocks_of_a_full_frontier_compute_the_whole_graph_s_outputs_at_the_seeds(idtype):
    g = dgl.heterograph(REL, idtype=idtype)
    rng = np.random.RandomState(0)
    x = {"user": mx.nd.array(rng.rand(5, 3)), "game": mx.nd.array(rng.rand(2, 3))}
    full_layers, block_layers = _model(1), _model(1)
    h = full_layers[0](g, x)
    full = full_layers[1](g, h)
    seeds = {"game": np.array([1]), "user": np.array([2, 0])}
    blocks, dst = [], seeds
    for _ in range(2):   # output layer first, as a sampler builds them
        block = dgl.to_block(dgl.sampling.sample_neighbors(g, dst, -1), dst)
        blocks.insert(0, block)
        dst = {t: block.srcnodes[t].data[dgl.NID].asnumpy().astype(np.int64) for t in block.ntypes}
    first = blocks[0]
    h = {t: mx.nd.take(x[t], first.srcnodes[t].data[dgl.NID].astype("int64")) for t in first.ntypes}
    for layer, block in zip(block_layers, blocks):
        h = layer(block, h)
    for t, ids in seeds.items():
        np.testing.assert_allclose(h[t].asnumpy(), full[t].asnumpy()[ids], rtol=1e-5, atol=1e-6)


def test_a_block_maps_back_to_the_frontier():
    g = dgl.heterograph(REL)
    f = dgl.sampling.sample_neighbors(g, {"user": [2]}, -1)
    b = dgl.to_block(f, {"user": [2]})
    assert b.is_block and b.ntypes == ["game", "user"]
    assert b.dstnodes["user"].data[dgl.NID].asnumpy().tolist() == [2]
    assert b.srcnodes["user"].data[dgl.NID].asnumpy().tolist() == [2, 3]      # the destination first
    assert b.srcnodes["game"].data[dgl.NID].asnumpy().tolist() == [0]
    assert (b.num_dst_nodes("game"), b.num_src_nodes("game")) == (0, 1)
    u, v = b.edges(etype="follows")
    assert (u.asnumpy().tolist(), v.asnumpy().tolist()) == ([1], [0])       # user 3 -> user 2, local ids
    assert b.edges["follows"].data[dgl.EID].asnumpy().tolist() == [3]          # its id in the graph
    assert b.num_edges("plays") == 0


def test_bad_destinations_are_one_line_errors():
    g = dgl.heterograph(REL)
    f = dgl.sampling.sample_neighbors(g, {"user": [1]}, -1)
    for call, match in ((lambda: dgl.to_block(f, [1]), "per node type"),
                        (lambda: dgl.to_block(f, {"team": [0]}), "node type 'team'"),
                        (lambda: dgl.to_block(f, {"user": [0]}), "not among dst_nodes"),
                        (lambda: dgl.to_block(f, {"user": [1, 1]}), "repeats")):
        with pytest.raises(dgl.DGLError, match=match) as info:
            call()
        assert "\n" not in str(info.value)


def test_a_data_loader_over_a_heterograph_covers_every_seed_once_and_matches_the_whole_graph():
    g = dgl.heterograph(REL)
    rng = np.random.RandomState(0)
    x = {"user": mx.nd.array(rng.rand(5, 3)), "game": mx.nd.array(rng.rand(2, 3))}
    full_layers, block_layers = _model(2), _model(2)
    full = full_layers[1](g, full_layers[0](g, x))
    sampler = dgl.dataloading.MultiLayerFullNeighborSampler(2)
    loader = dgl.dataloading.DataLoader(g, {"user": [0, 1, 2, 3, 4], "game": [0, 1]}, sampler, batch_size=3,
                                        shuffle=True, rng=np.random.RandomState(1))
    assert len(loader) == 3
    seen = {"user": [], "game": []}
    for input_nodes, output_nodes, blocks in loader:
        h = {t: mx.nd.take(x[t], ids.astype("int64")) for t, ids in input_nodes.items() if ids.shape[0]}
        for layer, block in zip(block_layers, blocks):
            h = layer(block, h)
        for t, ids in output_nodes.items():
            ids = ids.asnumpy().astype(np.int64)
            seen[t] += ids.tolist()
            if len(ids):
                np.testing.assert_allclose(h[t].asnumpy(), full[t].asnumpy()[ids], rtol=1e-5, atol=1e-6)
    assert sorted(seen["user"]) == [0, 1, 2, 3, 4] and sorted(seen["game"]) == [0, 1]


def test_a_data_loader_moves_heterograph_blocks_to_its_device():
    g = dgl.heterograph(REL)
    g.edges["plays"].data["w"] = mx.nd.arange(5)
    sampler = dgl.dataloading.MultiLayerNeighborSampler([-1])
    for device in (mx.cpu(0), mx.cpu(1)):
        loader = dgl.dataloading.DataLoader(g, {"game": [0, 1]}, sampler, batch_size=2, device=device)
        (input_nodes, output_nodes, (block,)), = list(loader)
        assert block.device == device and block["plays"].device == device
        assert input_nodes["user"].context == device and output_nodes["game"].asnumpy().tolist() == [0, 1]
        moved = block.srcnodes["user"].data[dgl.NID]
        assert moved.context == device and sorted(moved.asnumpy().tolist()) == [0, 1, 2, 3, 4]


def test_given_source_nodes_set_each_type_s_order():
    g = dgl.heterograph(REL)
    f = dgl.sampling.sample_neighbors(g, {"user": [2]}, -1)
    b = dgl.to_block(f, {"user": [2]}, src_nodes={"user": [3, 2, 4], "game": [0, 1]})
    assert b.srcnodes["user"].data[dgl.NID].asnumpy().tolist() == [3, 2, 4]
    u, v = b.edges(etype="follows")
    assert (u.asnumpy().tolist(), v.asnumpy().tolist()) == ([0], [0])      # user 3 is source 0 now
    with pytest.raises(dgl.DGLError, match="lacks node 3"):
        dgl.to_block(f, {"user": [2]}, src_nodes={"user": [2], "game": [0]})
