"""DGL's link-prediction names under ``dgl.dataloading`` (``EdgeDataLoader``,
``as_edge_prediction_sampler``, the ``negative_sampler`` module with ``Uniform``,
``PerSourceUniform`` and ``GlobalUniform``), a DGL 1.x loop through ``dgl.dataloading.DataLoader``,
and ``GlobalUniform``'s draws against every non-edge of hand-numbered graphs."""
import itertools

import numpy as np
import pytest

import gluon_suite.graph as dgl
from gluon_suite.graph import link_loader, negative_sampler

from .test_link_prediction import REV, SRC, DST, hetero, small


def non_edges(n_src, n_dst, edges, loops=True):
    """Every pair (u, v) that is not an edge (nor, without ``loops``, a self-loop), by a naive loop."""
    return {(u, v) for u, v in itertools.product(range(n_src), range(n_dst))
            if (u, v) not in edges and (loops or u != v)}


def test_dgl_names_are_reachable_as_in_dgl():
    dl = dgl.dataloading
    assert dl.negative_sampler is negative_sampler
    assert isinstance(dl.negative_sampler.Uniform(5), negative_sampler.Uniform)
    assert dl.negative_sampler.PerSourceUniform is negative_sampler.Uniform
    assert dl.negative_sampler.GlobalUniform(3).k == 3
    assert dl.EdgeDataLoader is link_loader.EdgeDataLoader
    sampler = dl.as_edge_prediction_sampler(dl.MultiLayerFullNeighborSampler(1), exclude="self",
                                            negative_sampler=dl.negative_sampler.Uniform(1))
    assert isinstance(sampler, dl.EdgePredictionSampler) and sampler.exclude == "self"
    for name in ("EdgeDataLoader", "as_edge_prediction_sampler", "negative_sampler"):
        assert name in dl.__all__


def test_global_uniform_draws_distinct_non_edges_without_self_loops():
    g = small()                                       # 5 nodes, edges 0-1, 1-2, 2-3 both ways
    edges = set(zip(SRC.tolist(), DST.tolist()))
    allowed = non_edges(5, 5, edges, loops=False)     # 25 - 5 loops - 6 edges = 14 pairs
    assert len(allowed) == 14
    u, v = negative_sampler.GlobalUniform(4).sample(g, [0, 2, 5], rng=np.random.RandomState(0))
    pairs = list(zip(u.tolist(), v.tolist()))
    assert len(pairs) == 12 and len(set(pairs)) == 12 and set(pairs) <= allowed
    # more than there are: every allowed pair once, no more
    u, v = negative_sampler.GlobalUniform(10).sample(g, [0, 1, 2], rng=np.random.RandomState(1))
    assert sorted(zip(u.tolist(), v.tolist())) == sorted(allowed)


def test_global_uniform_with_replacement_and_self_loops_is_uniform_over_each_end():
    g = dgl.graph((np.array([0]), np.array([1])), num_nodes=8)    # one edge: almost every pair allowed
    n = 20000
    u, v = negative_sampler.GlobalUniform(n, exclude_self_loops=False, replace=True).sample(
        g, [0], rng=np.random.RandomState(3))
    assert len(u) == n and not np.any((u == 0) & (v == 1))
    assert np.any(u == v)                               # self-loops kept
    for ends in (u, v):
        freq = np.bincount(ends, minlength=8)
        # each node about n / 8 times (v = 1 loses the pairs (0, 1)): within 5 binomial std devs
        assert np.all(np.abs(freq - n / 8) < 5 * np.sqrt(n / 8 * 7 / 8) + n / 64), freq


def test_global_uniform_on_a_relation_draws_its_two_node_types():
    hg = hetero()                                       # users 0..2 rate items 0..3: (0,0) (0,3) (1,1) (2,2)
    out = negative_sampler.GlobalUniform(10).sample(hg, {"rates": [0, 1]}, rng=np.random.RandomState(0))
    (c, (u, v)), = out.items()
    assert c == ("user", "rates", "item")
    allowed = non_edges(3, 4, {(0, 0), (0, 3), (1, 1), (2, 2)})
    assert sorted(zip(u.tolist(), v.tolist())) == sorted(allowed)      # all 8 non-ratings, once each
    # DGL's call: NDArrays of the graph's id type
    s, d = negative_sampler.GlobalUniform(2)(small("int32"), np.array([0]))
    assert s.dtype == np.int32 and d.dtype == np.int32 and s.shape == (2,)


def test_global_uniform_refuses_bad_arguments_in_one_line():
    with pytest.raises(dgl.DGLError, match="k is the number"):
        negative_sampler.GlobalUniform(0)
    with pytest.raises(dgl.DGLError, match="redundancy"):
        negative_sampler.GlobalUniform(2, redundancy=-1)
    with pytest.raises(dgl.DGLError, match="edge ids must lie in 0..5"):
        negative_sampler.GlobalUniform(2).sample(small(), [6])


def test_dgl_1x_loop_through_dataloader_with_an_edge_prediction_sampler():
    g = small()
    dl = dgl.dataloading
    sampler = dl.as_edge_prediction_sampler(dl.MultiLayerFullNeighborSampler(2), exclude="reverse_id",
                                            reverse_eids=REV, negative_sampler=dl.negative_sampler.GlobalUniform(2))
    loader = dl.DataLoader(g, np.arange(6), sampler, batch_size=2, shuffle=True, rng=np.random.RandomState(0))
    assert isinstance(loader, dl.EdgeDataLoader) and len(loader) == 3
    edges, seen = set(zip(SRC.tolist(), DST.tolist())), []
    for input_nodes, pair, neg_pair, blocks in loader:
        nid = pair.ndata[dgl.NID].asnumpy()
        pu, pv = (x.asnumpy() for x in pair.edges())
        batch = [(int(nid[a]), int(nid[b])) for a, b in zip(pu, pv)]
        seen += batch
        nu, nv = (x.asnumpy() for x in neg_pair.edges())
        assert len(nu) == 4 and all((int(nid[a]), int(nid[b])) not in edges for a, b in zip(nu, nv))
        gone = {e for e in range(6) if (int(SRC[e]), int(DST[e])) in batch}
        gone |= {int(REV[e]) for e in gone}
        for b in blocks:                                 # no batch edge, nor its reverse, to read
            assert not gone & set(b.edata[dgl.EID].asnumpy().astype(int).tolist())
        assert np.array_equal(blocks[-1].dstdata[dgl.NID].asnumpy(), nid)
    assert sorted(seen) == sorted(edges)                 # each edge once per pass
