"""The data link prediction trains on and its recipe: the paper/word heterograph of a LINQS folder
against a hand-written one, the nodes.tsv/edges.tsv layout round trip and its one-line errors, the
seeded undirected split (disjoint, complete, reverse = e ^ 1), and a short run of
``scripts/graph/train_link_prediction.py``."""
import json
import os

import numpy as np
import pytest

import gluon_suite.graph as dgl
from gluon_suite.graph.link_data import (citation_graph, citation_heterograph, linqs_heterograph, load_hetero_tsv,
                                         undirected_split, write_citation_hetero, write_hetero_tsv)

from ..conftest import load_script


def write_tiny_linqs(folder):
    # papers 10, 20, 30 (ids 0, 1, 2 in file order) with 4 words; 20 cites 10, 30 cites 10, 30 cites 20
    (folder / "cora.content").write_text("10\t1\t0\t0\t1\tA\n20\t0\t1\t0\t0\tB\n30\t1\t1\t1\t0\tA\n")
    (folder / "cora.cites").write_text("10\t20\n10\t30\n20\t30\n")
    return str(folder)


def edges(g, etype):
    u, v = g.edges(etype=etype)
    return list(zip(u.asnumpy().tolist(), v.asnumpy().tolist()))


def test_linqs_heterograph_has_papers_words_citations_and_reverses(tmp_path):
    hg, classes = linqs_heterograph(write_tiny_linqs(tmp_path))
    assert hg.ntypes == ["paper", "word"] and hg.num_nodes("paper") == 3 and hg.num_nodes("word") == 4
    assert classes == ["A", "B"] and hg.nodes["paper"].data["label"].asnumpy().tolist() == [0, 1, 0]
    assert edges(hg, "cites") == [(1, 0), (2, 0), (2, 1)]                    # citing -> cited, file order
    assert edges(hg, "cited_by") == [(0, 1), (0, 2), (1, 2)]                 # edge i reverses cites edge i
    assert edges(hg, "has") == [(0, 0), (0, 3), (1, 1), (2, 0), (2, 1), (2, 2)]
    assert edges(hg, "in") == [(w, p) for p, w in edges(hg, "has")]


def test_the_heterograph_folder_round_trips_and_names_bad_lines(tmp_path):
    hg, classes = citation_heterograph()
    folder = write_citation_hetero(str(tmp_path / "h"))
    back, names, labels = load_hetero_tsv(folder)
    assert back.canonical_etypes == hg.canonical_etypes
    for c in hg.canonical_etypes:
        assert edges(back, c) == edges(hg, c)
    assert labels == {"paper": classes}
    assert np.array_equal(back.nodes["paper"].data["label"].asnumpy(), hg.nodes["paper"].data["label"].asnumpy())
    with open(os.path.join(folder, "nodes.tsv"), encoding="utf-8") as f:
        first = f.readline().split("\t")
    assert first[0] == "paper" and first[1] == "0" and names["paper"][0] == first[2] and names["word"][3] == "w3"
    g = dgl.heterograph({("a", "r", "b"): ([0, 1], [1, 0]), ("b", "s", "a"): ([1], [1])})
    write_hetero_tsv(g, str(tmp_path / "g"))
    assert (tmp_path / "g" / "edges.tsv").read_text() == "a\tr\tb\t0\t1\na\tr\tb\t1\t0\nb\ts\ta\t1\t1\n"
    nodes = (tmp_path / "g" / "nodes.tsv").read_text()
    for bad, match in ((nodes.replace("a\t1\t1", "a\t2\t2"), "nodes.tsv:2: 'a' node id 2 out of order"),
                       (nodes.replace("\t-\n", "\n", 1), "nodes.tsv:1: expected")):
        (tmp_path / "g" / "nodes.tsv").write_text(bad)
        with pytest.raises(dgl.DGLError, match=match):
            load_hetero_tsv(str(tmp_path / "g"))
    (tmp_path / "g" / "nodes.tsv").write_text(nodes)
    (tmp_path / "g" / "edges.tsv").write_text("a\tr\tb\t0\t1\na\tr\tc\t0\t0\n")
    with pytest.raises(dgl.DGLError, match="edges.tsv:2: node type 'c' is not in"):
        load_hetero_tsv(str(tmp_path / "g"))
    (tmp_path / "g" / "edges.tsv").write_text("a\tr\tb\t0\t5\n")
    with pytest.raises(dgl.DGLError, match=r"edges.tsv:1: 'b' node 5 out of range 0..1"):
        load_hetero_tsv(str(tmp_path / "g"))


def test_undirected_split_is_seeded_disjoint_complete_and_pairs_reverses():
    g, _ = citation_graph()
    u, v = np.minimum(g._src, g._dst), np.maximum(g._src, g._dst)
    every = {(a, b) for a, b in zip(u.tolist(), v.tolist()) if a != b}
    train, val, test = undirected_split(g, 0.1, 0.2, seed=3)
    tu, tv = (a.asnumpy() for a in train.edges())
    assert np.array_equal(tu[0::2], tv[1::2]) and np.array_equal(tv[0::2], tu[1::2])   # edge e ^ 1 reverses e
    assert (tu[0::2] < tv[0::2]).all()
    tr = set(zip(tu[0::2].tolist(), tv[0::2].tolist()))
    va, te = set(map(tuple, val.tolist())), set(map(tuple, test.tolist()))
    assert not (tr & va or tr & te or va & te) and tr | va | te == every
    assert len(va) == round(0.1 * len(every)) and len(te) == round(0.2 * len(every))
    assert train.num_nodes() == g.num_nodes() and train.ndata["feat"] is g.ndata["feat"]
    again = undirected_split(g, 0.1, 0.2, seed=3)
    other = undirected_split(g, 0.1, 0.2, seed=4)
    assert np.array_equal(again[1], val) and not np.array_equal(other[1], val)
    with pytest.raises(dgl.DGLError, match="sum below 1"):
        undirected_split(g, 0.5, 0.5)


def test_recipe_runs_a_few_epochs_and_logs_held_out_metrics(tmp_path, capsys):
    script = load_script("scripts/graph/train_link_prediction.py")
    out = tmp_path / "run"
    assert script.main(["--out", str(out), "--epochs", "2", "--batch-size", "256", "--scorer", "mlp",
                        "--negative-sampler", "degree", "--eval-negatives", "20"]) == 0
    printed = capsys.readouterr().out
    assert "test auc" in printed and "hits@10" in printed
    records = [json.loads(line) for line in (out / "log.jsonl").read_text().splitlines()]
    assert [r["epoch"] for r in records] == [2]
    rec = records[0]
    for split in ("val", "test"):
        assert 0 <= rec[f"{split}_auc"] <= 1 and 0 < rec[f"{split}_mrr"] <= 1 and 0 <= rec[f"{split}_hits10"] <= 1
    assert np.isfinite(rec["loss"]) and os.path.isfile(out / "model.params")
    config = json.loads((out / "config.json").read_text())
    assert config["scorer"] == "mlp" and config["negative_sampler"] == "degree"
