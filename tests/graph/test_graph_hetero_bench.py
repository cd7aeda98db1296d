"""bench/graph_hetero.py: the two-type split keeps every edge once in the relation of its
endpoints' types with per-type ids, the link batches are seeded and shaped as the protocol says,
and the protocol names the bench's models and a 0.8x bar for time and memory."""
import numpy as np

from gluon_suite.evidence import protocols

from ..conftest import REPO, load_script

bench = load_script("bench/graph_hetero.py")


def test_the_two_type_split_keeps_every_edge_once_with_local_ids(monkeypatch):
    monkeypatch.setattr(bench.gb, "N", 100)
    monkeypatch.setattr(bench.gb, "E", 1000)
    src, dst, x, y = bench.gb.make_graph()
    rels, counts, xs, ys = bench.hetero_parts()
    assert counts == {"a": 50, "b": 50} and sum(len(s) for s, _ in rels.values()) == 1000
    back = set()
    for (st, _, dt), (s, d) in rels.items():
        off = {"a": 0, "b": 50}
        assert ((s + off[st] < 50) == (st == "a")).all() and ((d + off[dt] < 50) == (dt == "a")).all()
        back |= set(zip((s + off[st]).tolist(), (d + off[dt]).tolist()))
    assert back == set(zip(src.tolist(), dst.tolist()))
    np.testing.assert_array_equal(np.concatenate([xs["a"], xs["b"]]), x)
    np.testing.assert_array_equal(np.concatenate([ys["a"], ys["b"]]), y)


def test_link_batches_are_seeded_and_shaped(monkeypatch):
    monkeypatch.setattr(bench.gb, "N", 100)
    src, dst = np.arange(50), np.arange(50)[::-1].copy()
    a, b = bench.link_batches(src, dst, 2), bench.link_batches(src, dst, 2)
    assert len(a) == 3
    for (pu, pv, nu, nv), (qu, qv, mu, mv) in zip(a, b):
        assert len(pu) == bench.LINK_BATCH and len(nv) == bench.LINK_BATCH * bench.LINK_NEG
        assert (pv == 49 - pu).all() and (nu == np.repeat(pu, bench.LINK_NEG)).all()
        assert all((x == y).all() for x, y in ((pu, qu), (nv, mv)))


def test_the_protocol_names_the_models_and_a_0_8_bar():
    p = protocols.load(REPO, "graph_hetero")
    assert p.bench == "graph_hetero" and p.arms() == ["ours", "dgl"] and set(p.params()["models"]) == set(bench.MODELS)
    assert {(c["metric"], c["test"], c["value"]) for c in p.criteria} == {
        (f"{m}_{k}", "at_most", 0.8) for m in bench.MODELS for k in ("epoch_s", "memory_mb")}
