"""Link prediction: negative samplers (ranges, the degree^0.75 distribution against a binomial
bound, seeded draws), the edges each ``exclude`` mode removes on hand-numbered graphs, pair graphs
mapped back to their edges, the edge loader's coverage, ids of both types on cpu(0)/cpu(1), the
scorers and loss against float64 NumPy, and AUC/MRR/Hits@k against a naive pairwise count and hand
rankings."""
import itertools

import mxnet as mx
import numpy as np
import pytest

import gluon_suite.graph as dgl
from gluon_suite.graph.link_loader import EdgeDataLoader, as_edge_prediction_sampler, edge_batch, excluded_edges
from gluon_suite.graph.link_metrics import auc, hits_at_k, mrr, ranks
from gluon_suite.graph.link_scoring import DotScorer, MLPScorer, link_loss, pair_rows
from gluon_suite.graph.negative_sampler import DegreeWeighted, PerSourceUniform, Uniform

# edges 0..5: 0->1, 1->0, 1->2, 2->1, 2->3, 3->2 (edge e's reverse is e ^ 1); node 4 is isolated
SRC = np.array([0, 1, 1, 2, 2, 3])
DST = np.array([1, 0, 2, 1, 3, 2])
REV = np.array([1, 0, 3, 2, 5, 4])
CASES = [(c, t) for c in (mx.cpu(0), mx.cpu(1)) for t in ("int32", "int64")]
IDS = [f"cpu{c.device_id}-{t}" for c, t in CASES]


def small(idtype="int64", ctx=None):
    g = dgl.graph((SRC, DST), num_nodes=5, idtype=idtype, device=ctx)
    g.ndata["x"] = mx.nd.arange(5, ctx=ctx or mx.cpu()).reshape((5, 1))
    return g


def hetero():
    # users 0..2 follow users; users rate items 0..3 (rated_by: the reverse, same ids)
    return dgl.heterograph({("user", "follows", "user"): ([0, 1, 2], [1, 2, 0]),
                            ("user", "rates", "item"): ([0, 0, 1, 2], [0, 3, 1, 2]),
                            ("item", "rated_by", "user"): ([0, 3, 1, 2], [0, 0, 1, 2])})


def mp_eids(mp):
    return sorted(mp.edata[dgl.EID].asnumpy().astype(int).tolist()) if dgl.EID in mp.edata else \
        list(range(mp.num_edges()))


# ---- negative samplers ---------------------------------------------------------------------------
def test_uniform_keeps_each_source_and_draws_destinations_in_range():
    g = small()
    src, dst = Uniform(4).sample(g, [0, 2, 5], rng=np.random.RandomState(1))
    assert src.tolist() == [0] * 4 + [1] * 4 + [3] * 4          # each positive's source, k times, in order
    assert dst.min() >= 0 and dst.max() < 5 and len(dst) == 12
    many = Uniform(50).sample(g, np.arange(6), rng=np.random.RandomState(2))[1]
    assert set(many.tolist()) == set(range(5))                   # isolated node 4 too: uniform over all
    assert PerSourceUniform is Uniform


def test_uniform_on_a_relation_draws_among_its_destination_type():
    hg = hetero()
    out = Uniform(30).sample(hg, {"rates": [0, 3]}, rng=np.random.RandomState(0))
    (c, (src, dst)), = out.items()
    assert c == ("user", "rates", "item")
    assert src.tolist() == [0] * 30 + [2] * 30
    assert set(dst.tolist()) == {0, 1, 2, 3}                     # items, not users (3 users)


def test_degree_weighted_frequencies_follow_in_degree_to_the_power_within_a_binomial_bound():
    # in-degrees 0, 1, 2, 4, 8 for nodes 0..4
    dst = np.repeat(np.arange(5), [0, 1, 2, 4, 8])
    g = dgl.graph((np.zeros(len(dst), np.int64), dst), num_nodes=5)
    deg = np.array([0, 1, 2, 4, 8], np.float64)
    expected = np.where(deg > 0, deg ** 0.75, 0) / (deg ** 0.75).sum()
    sampler = DegreeWeighted(1)
    assert np.allclose(sampler.probabilities(g), expected, rtol=0, atol=1e-12)
    m = 20000
    drawn = sampler.sample(g, np.zeros(m, np.int64), rng=np.random.RandomState(3))[1]
    counts = np.bincount(drawn, minlength=5)
    assert counts[0] == 0                                        # no incoming edge: never drawn
    bound = 5 * np.sqrt(m * expected * (1 - expected)) + 1      # 5 standard deviations of Binomial(m, p)
    assert (np.abs(counts - m * expected) <= bound).all(), (counts, m * expected, bound)
    flat = DegreeWeighted(1, power=0).probabilities(g)          # power 0: uniform over nodes with in-edges
    assert np.allclose(flat, [0, 0.25, 0.25, 0.25, 0.25])


def test_samplers_repeat_with_the_same_seed_and_follow_dgl_seed():
    g = small()
    for cls in (Uniform, DegreeWeighted):
        a = cls(3).sample(g, np.arange(6), rng=np.random.RandomState(7))
        b = cls(3).sample(g, np.arange(6), rng=np.random.RandomState(7))
        c = cls(3).sample(g, np.arange(6), rng=np.random.RandomState(8))
        assert np.array_equal(a[1], b[1]) and not np.array_equal(a[1], c[1])
        dgl.seed(11)
        d = cls(3)(g, np.arange(6))
        dgl.seed(11)
        e = cls(3)(g, np.arange(6))
        assert np.array_equal(d[1].asnumpy(), e[1].asnumpy())


def test_samplers_refuse_bad_arguments_in_one_line():
    g = small()
    for bad in (0, -1, 1.5, True):
        with pytest.raises(dgl.DGLError, match="whole number >= 1"):
            Uniform(bad)
    with pytest.raises(dgl.DGLError, match="0..5"):
        Uniform(1).sample(g, [6])
    with pytest.raises(dgl.DGLError, match="no node has an incoming edge"):
        DegreeWeighted(1).sample(dgl.graph(([], []), num_nodes=3), [])


# ---- exclusion -------------------------------------------------------------------------------------
@pytest.mark.parametrize("exclude, gone", [(None, []), ("self", [0, 2]), ("reverse_id", [0, 1, 2, 3])])
def test_exclude_removes_the_batch_and_its_reverse_edges(exclude, gone):
    g = small()
    _, pair, neg, mp = edge_batch(g, [0, 2], Uniform(1), None, exclude, REV)
    assert mp_eids(mp) == sorted(set(range(6)) - set(gone))
    assert mp.num_nodes() == 5 and mp.ndata["x"] is g.ndata["x"]      # every node, features shared
    kept = mp.edata[dgl.EID].asnumpy().astype(int) if gone else np.arange(6)
    u, v = (a.asnumpy().tolist() for a in mp.edges())
    assert u == SRC[kept].tolist() and v == DST[kept].tolist()


def test_exclude_with_a_callable_and_the_errors():
    g = small()
    assert excluded_edges(g, [4], lambda e: [5]).tolist() == [5]
    with pytest.raises(dgl.DGLError, match="reverse_eids"):
        excluded_edges(g, [0], "reverse_id")
    with pytest.raises(dgl.DGLError, match="exclude='bogus'"):
        excluded_edges(g, [0], "bogus")
    with pytest.raises(dgl.DGLError, match="heterograph"):
        excluded_edges(g, [0], "reverse_types", reverse_etypes={"a": "b"})


def test_exclude_reverse_types_on_a_heterograph_drops_the_same_ids_in_the_reverse_relation():
    hg = hetero()
    hg.nodes["user"].data["h"] = mx.nd.ones((3, 2))
    _, pair, neg, mp = edge_batch(hg, {"rates": [1, 3]}, Uniform(2), None, "reverse_types",
                                  reverse_etypes={"rates": "rated_by", "rated_by": "rates"})
    assert mp.num_edges("follows") == 3
    assert mp_eids(mp["rates"]) == [0, 2] and mp_eids(mp["rated_by"]) == [0, 2]
    assert mp.nodes["user"].data["h"] is hg.nodes["user"].data["h"]
    _, _, _, mp = edge_batch(hg, {"rates": [1]}, Uniform(1), None, "self")
    assert mp_eids(mp["rates"]) == [0, 2, 3] and mp.num_edges("rated_by") == 4
    _, _, _, mp = edge_batch(hg, {"follows": [0, 2]}, Uniform(1), None, "reverse_id",
                             reverse_eids={"follows": [1, 2, 0]})
    assert mp_eids(mp["follows"]) == []                           # 0, 2 and their "reverses" 1, 0


# ---- pair graphs and blocks ---------------------------------------------------------------------------
@pytest.mark.parametrize("ctx, idtype", CASES, ids=IDS)
def test_pair_graphs_map_back_to_the_batch_edges_and_their_negatives(ctx, idtype):
    g = small(idtype, ctx)
    _, pair, neg, mp = edge_batch(g, [4, 1], Uniform(3), None, "self", rng=np.random.RandomState(0))
    for x in (pair, neg, mp):
        assert x.idtype == np.dtype(idtype).type and x.device == ctx
    nid = pair.ndata[dgl.NID]
    assert nid.dtype == np.dtype(idtype) and nid.context == ctx
    nid = nid.asnumpy()
    assert nid.tolist() == sorted(set(nid.tolist())) and np.array_equal(neg.ndata[dgl.NID].asnumpy(), nid)
    u, v = (nid[a.asnumpy()] for a in pair.edges())
    assert u.tolist() == [2, 1] and v.tolist() == [3, 0]          # edges 4 and 1, in batch order
    nu, nv = (nid[a.asnumpy()] for a in neg.edges())
    assert nu.tolist() == [2, 2, 2, 1, 1, 1]                      # k = 3 per positive, its source kept
    assert set(nid.tolist()) == set(u) | set(v) | set(nv)


def test_sampled_blocks_end_at_the_pair_nodes_and_never_hold_an_excluded_edge():
    g = small()
    sampler = as_edge_prediction_sampler(dgl.dataloading.MultiLayerFullNeighborSampler(2), exclude="reverse_id",
                                         reverse_eids=REV, negative_sampler=Uniform(2))
    inp, pair, neg, blocks = sampler.sample(g, [2], rng=np.random.RandomState(4))
    assert len(blocks) == 2
    assert np.array_equal(blocks[-1].dstdata[dgl.NID].asnumpy(), pair.ndata[dgl.NID].asnumpy())
    assert np.array_equal(inp.asnumpy(), blocks[0].srcdata[dgl.NID].asnumpy())
    for b in blocks:
        assert not {2, 3} & set(b.edata[dgl.EID].asnumpy().astype(int).tolist())
    # full neighbourhoods: the first block holds every remaining in-edge of its destinations
    dst = blocks[0].dstdata[dgl.NID].asnumpy()
    want = sorted(e for e in (0, 1, 4, 5) if DST[e] in dst)
    assert sorted(blocks[0].edata[dgl.EID].asnumpy().astype(int).tolist()) == want


def test_heterograph_batches_train_full_graph_and_refuse_blocks():
    hg = hetero()
    with pytest.raises(dgl.DGLError, match="full-graph"):
        edge_batch(hg, {"rates": [0]}, Uniform(1), dgl.dataloading.MultiLayerNeighborSampler([2]))
    inp, pair, neg, mp = edge_batch(hg, {"rates": [2], "follows": [1]}, Uniform(2), None, "self",
                                    rng=np.random.RandomState(5))
    assert sorted(inp) == ["item", "user"] and inp["user"].asnumpy().tolist() == [0, 1, 2]
    users = pair.nodes["user"].data[dgl.NID].asnumpy()
    items = pair.nodes["item"].data[dgl.NID].asnumpy()
    u, v = pair["rates"].edges()
    assert users[u.asnumpy()].tolist() == [1] and items[v.asnumpy()].tolist() == [1]
    u, v = pair["follows"].edges()
    assert users[u.asnumpy()].tolist() == [1] and users[v.asnumpy()].tolist() == [2]
    assert neg.num_edges("rates") == 2 and neg.num_edges("follows") == 2


# ---- the loader -------------------------------------------------------------------------------------
def test_loader_gives_each_edge_once_per_pass_in_a_new_order():
    g = small()
    rng = np.random.RandomState(0)
    loader = EdgeDataLoader(g, np.arange(6), None, batch_size=4, shuffle=True, rng=rng, negative_sampler=Uniform(1))
    assert len(loader) == 2
    orders = []
    for _ in range(3):
        seen = []
        for _, pair, neg, mp in loader:
            nid = pair.ndata[dgl.NID].asnumpy()
            u, v = (nid[a.asnumpy()] for a in pair.edges())
            seen += [int(np.flatnonzero((SRC == a) & (DST == b))[0]) for a, b in zip(u, v)]
        assert sorted(seen) == list(range(6))
        orders.append(seen)
    assert len({tuple(o) for o in orders}) > 1
    assert len(EdgeDataLoader(g, np.arange(6), None, batch_size=4, drop_last=True)) == 1
    mask = np.array([True, False, True, False, False, True])
    assert [p.num_edges() for _, p, _ in EdgeDataLoader(g, mask, None, batch_size=2)] == [2, 1]


def test_loader_over_relations_covers_every_edge_of_each():
    hg = hetero()
    loader = EdgeDataLoader(hg, {"rates": np.arange(4), "follows": np.arange(3)}, None, batch_size=3, shuffle=True,
                            rng=np.random.RandomState(1), negative_sampler=Uniform(1))
    got = {"rates": 0, "follows": 0}
    for _, pair, neg, mp in loader:
        for c in pair.canonical_etypes:
            got[c[1]] += pair.num_edges(c)
    assert got == {"rates": 4, "follows": 3} and len(loader) == 3


def test_loader_moves_batches_to_the_device():
    g = small()
    batches = list(EdgeDataLoader(g, np.arange(6), dgl.dataloading.MultiLayerNeighborSampler([2]), batch_size=3,
                                  negative_sampler=Uniform(1), device=mx.cpu(1)))
    for inp, pair, neg, blocks in batches:
        assert pair.device == neg.device == blocks[0].device == mx.cpu(1) and inp.context == mx.cpu(1)


# ---- scorers and loss ---------------------------------------------------------------------------------
def test_dot_and_mlp_scorers_match_float64_numpy():
    g = dgl.graph(([0, 2, 1], [1, 0, 2]), num_nodes=3)
    h = np.random.RandomState(0).normal(size=(3, 4))
    got = DotScorer()(g, mx.nd.array(h)).asnumpy()
    assert np.allclose(got, [h[0] @ h[1], h[2] @ h[0], h[1] @ h[2]], atol=1e-5)
    mlp = MLPScorer(4, 5)
    mlp.initialize(mx.init.Normal(0.5))
    got = mlp(g, mx.nd.array(h)).asnumpy()
    w1, b1 = mlp.hidden.weight.data().asnumpy().astype(np.float64), mlp.hidden.bias.data().asnumpy()
    w2, b2 = mlp.out.weight.data().asnumpy().astype(np.float64), mlp.out.bias.data().asnumpy()
    want = [(w2 @ np.maximum(w1 @ np.concatenate([h[u], h[v]]) + b1, 0) + b2)[0] for u, v in ((0, 1), (2, 0), (1, 2))]
    assert np.allclose(got, want, atol=1e-5)
    with pytest.raises(dgl.DGLError, match="one row per pair-graph node"):
        DotScorer()(g, mx.nd.ones((5, 4)))


def test_scorer_on_a_heterograph_scores_every_relation():
    hg = hetero()
    h = {"user": mx.nd.array([[1, 0], [0, 1], [1, 1]]), "item": mx.nd.array([[2, 0], [0, 3], [1, 1], [4, 4]])}
    out = DotScorer()(hg, h)
    assert out[("user", "rates", "item")].asnumpy().tolist() == [2, 4, 3, 2]
    assert out[("user", "follows", "user")].asnumpy().tolist() == [0, 1, 1]


def test_link_loss_is_the_mean_binary_cross_entropy():
    pos, neg = np.array([2.0, -1.0, 40.0]), np.array([0.5, -3.0, -50.0, 60.0])
    sig = lambda x: 1 / (1 + np.exp(-x))  # noqa: E731
    want = -(np.log(sig(pos)).sum() + np.log1p(-sig(neg[:3])).sum() - 60.0) / 7   # log(1 - sig(60)) = -60
    got = link_loss(mx.nd.array(pos), mx.nd.array(neg)).asscalar()
    assert np.isclose(got, want, rtol=1e-5)
    got = link_loss({"a": mx.nd.array(pos[:1]), "b": mx.nd.array(pos[1:])}, {"a": mx.nd.array(neg)}).asscalar()
    assert np.isclose(got, want, rtol=1e-5)


# ---- metrics ---------------------------------------------------------------------------------------------
def test_auc_equals_the_naive_pairwise_count_with_half_ties():
    rs = np.random.RandomState(0)
    for trial in range(5):
        pos = rs.randint(0, 6, size=rs.randint(1, 30)).astype(np.float64)   # many ties
        neg = rs.randint(0, 5, size=rs.randint(1, 40)).astype(np.float64)
        wins = sum(1.0 if p > n else 0.5 if p == n else 0.0 for p, n in itertools.product(pos, neg))
        assert auc(pos, neg) == pytest.approx(wins / (len(pos) * len(neg)), abs=1e-12)
    assert auc([1.0], [1.0]) == 0.5 and auc([2, 3], [0, 1]) == 1.0 and auc([0], [1, 2]) == 0.0
    with pytest.raises(dgl.DGLError, match="positive and negative"):
        auc([], [1.0])


def test_mrr_and_hits_against_hand_ranked_examples():
    pos = [0.9, 0.5, 0.1]
    neg = [[0.1, 0.2], [0.5, 0.7], [0.3, 0.2]]
    # ranks by hand: 1 (both below); 1 + 1 above + half a tie = 2.5; 1 + 2 above = 3
    assert ranks(pos, neg).tolist() == [1.0, 2.5, 3.0]
    assert mrr(pos, neg) == pytest.approx((1 + 1 / 2.5 + 1 / 3) / 3)
    assert hits_at_k(pos, neg, 1) == pytest.approx(1 / 3)
    assert hits_at_k(pos, neg, 2) == pytest.approx(1 / 3)
    assert hits_at_k(pos, neg, 3) == 1.0
    assert ranks(pos, np.array(neg).reshape(-1)).tolist() == [1.0, 2.5, 3.0]   # flat, k per positive
    assert mrr([1.0, 1.0], [[1.0, 1.0], [1.0, 1.0]]) == pytest.approx(1 / 2)   # a constant scorer: rank 2 of 3
    with pytest.raises(dgl.DGLError, match="equal groups"):
        mrr([1.0, 2.0], [1.0, 2.0, 3.0])


def test_pair_rows_takes_the_encoder_rows_at_the_pair_nodes_of_each_type():
    hg = hetero()
    _, pair, neg, mp = edge_batch(hg, {"follows": [2]}, Uniform(1), None, "self", rng=np.random.RandomState(0))
    h = {"user": mx.nd.array([[0.0], [10.0], [20.0]]), "item": mx.nd.arange(4).reshape((4, 1))}
    rows = pair_rows(pair, h)
    users = pair.nodes["user"].data[dgl.NID].asnumpy()
    assert rows["user"].asnumpy().ravel().tolist() == (10.0 * users).tolist()
    assert rows["item"].shape == (0, 1)                                # no item in a follows batch
    g = small()
    _, pair, neg, mp = edge_batch(g, [3], Uniform(1), None, None)
    x = mx.nd.array(np.arange(5.0).reshape(5, 1) * 3)
    assert pair_rows(pair, x).asnumpy().ravel().tolist() == (3.0 * pair.ndata[dgl.NID].asnumpy()).tolist()
