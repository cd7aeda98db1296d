"""The real graph link prediction trains on beside the citation sample: the word co-occurrence graph
of gensim's Lee corpus. Edges of hand-written sentences against hand counts, the hashed 3-gram
features against a naive per-gram loop (and independent of every edge), the embedded graph's size,
numbering and some of its real pairs, and the recipe's ``--dataset lee-cooccurrence``."""
import json
import zlib

import numpy as np
import pytest

import gluon_suite.graph as dgl
from gluon_suite.graph.cooccurrence import cooccurrence_edges, lee_cooccurrence_graph, lee_sentences, ngram_features

from ..conftest import load_script

# counts: a 4, b 3, c 2, d 1, e 1
SENTENCES = [["a", "b", "c", "d", "a"], ["b", "a", "e", "c"], ["a", "b"]]


def test_edges_of_hand_written_sentences_match_hand_counts():
    # window 3: tokens at most 2 apart. a-b: 1 + 1 + 1 = 3, a-c: 2 (positions 0-2 and 2-4) + 1 = 3,
    # b-c: 1 (sentence 1; in sentence 2 they stand 3 apart); d and e fall under min_count 2
    words, pairs = cooccurrence_edges(SENTENCES, min_count=2, drop_top=0, window=3, min_cooccur=2)
    assert words == ["a", "b", "c"] and pairs.tolist() == [[0, 1], [0, 2]]
    words, pairs = cooccurrence_edges(SENTENCES, min_count=2, drop_top=0, window=3, min_cooccur=1)
    assert pairs.tolist() == [[0, 1], [0, 2], [1, 2]]
    # window 5 reaches b-c in sentence 2 too; dropping the most frequent word (a) leaves b-c (2)
    words, pairs = cooccurrence_edges(SENTENCES, min_count=2, drop_top=1, window=5, min_cooccur=2)
    assert words == ["b", "c"] and pairs.tolist() == [[0, 1]]
    # neighbours only (window 2): a-b 3 times, every other pair once; c, d, e have no edge and go
    words, pairs = cooccurrence_edges(SENTENCES, min_count=1, drop_top=0, window=2, min_cooccur=2)
    assert words == ["a", "b"] and pairs.tolist() == [[0, 1]]


def test_edges_refuse_bad_settings_in_one_line():
    with pytest.raises(dgl.DGLError, match="no two words co-occur"):
        cooccurrence_edges(SENTENCES, min_count=2, drop_top=1, window=3, min_cooccur=2)
    with pytest.raises(dgl.DGLError, match="window must be"):
        cooccurrence_edges(SENTENCES, window=0)


def naive_features(word, dim):
    row = np.zeros(dim)
    text = "<" + word + ">"
    for j in range(len(text) - 2):
        h = zlib.crc32(text[j:j + 3].encode())
        row[h % dim] += 1 if (h // 65536) % 2 else -1
    return row / np.linalg.norm(row) if np.linalg.norm(row) else row


def test_features_are_signed_hashed_trigrams_of_the_word_alone():
    words = ["minister", "prime", "a", "year's"]
    got = ngram_features(words, 16)
    assert got.dtype == np.float32 and got.shape == (4, 16)
    for i, w in enumerate(words):
        np.testing.assert_allclose(got[i], naive_features(w, 16), atol=1e-6)
    # a row depends on its word only: the same word in another list, or alone, gives the same row
    np.testing.assert_allclose(ngram_features(["prime"], 16)[0], got[1])


def test_lee_graph_size_numbering_real_pairs_and_leak_free_features():
    g, words = lee_cooccurrence_graph()
    assert (g.num_nodes(), g.num_edges()) == (823, 8650) and len(words) == 823 and words == sorted(words)
    src, dst = g._src, g._dst
    assert np.array_equal(src[0::2], dst[1::2]) and np.array_equal(dst[0::2], src[1::2])   # e ^ 1 reverses
    assert np.all(src[0::2] < dst[0::2]) and g.in_degrees().asnumpy().min() >= 1
    index = {w: i for i, w in enumerate(words)}
    for a, b in (("prime", "minister"), ("world", "trade")):
        assert g.has_edges_between(index[a], index[b])
    assert "the" not in index and "said" not in index          # among the 50 most frequent words
    np.testing.assert_allclose(g.ndata["feat"].asnumpy(), ngram_features(words, 64))
    sentences = lee_sentences()
    assert len(sentences) == 2613 and sum(map(len, sentences)) == 59576


def test_recipe_trains_on_the_cooccurrence_graph(tmp_path):
    script = load_script("scripts/graph/train_link_prediction.py")
    out = tmp_path / "run"
    assert script.main(["--dataset", "lee-cooccurrence", "--scorer", "mlp", "--epochs", "3", "--batch-size", "512",
                        "--eval-negatives", "20", "--out", str(out)]) == 0
    rec = [json.loads(line) for line in (out / "log.jsonl").read_text().splitlines()][-1]
    assert rec["epoch"] == 3 and np.isfinite(rec["loss"])
    assert rec["val_auc"] > 0.6 and rec["test_auc"] > 0.6, rec      # it learns from the real graph
