"""A real graph for link prediction: the word co-occurrence graph of gensim's Lee background
corpus (``lee_background.cor``: 300 Australian news articles, about 60,000 words), built
deterministically from the installed gensim's test data (gensim itself is not imported).

How it is built (``cooccurrence_edges`` on the corpus's sentences, ``lee_cooccurrence_graph``):

- sentences: each article is cut after ``.``, ``!`` or ``?`` followed by whitespace and a capital
  letter, a parenthesis or a quote; tokens are the lower-cased runs of letters (with one inner
  apostrophe: ``year's``);
- nodes: the words seen at least ``min_count`` (10) times, less the ``drop_top`` (50) most frequent
  ones (``the``, ``said``, ``of``, ...: words that stand beside everything); words that end up with
  no edge are left out;
- edges: {u, v} when u and v stand fewer than ``window`` (5) tokens apart in one sentence (every
  token keeps its place, dropped words included) at least ``min_cooccur`` (2) times in the
  corpus; edge 2i is u -> v (u < v), 2i + 1 its reverse, as ``link_data.undirected_split`` and
  ``citation_graph`` number them;
- features (``ngram_features``): each word's character 3-grams of ``<word>`` hashed (CRC-32) into
  ``dim`` (64) signed buckets, L2-normalised. They depend on the spelling alone, never on an edge,
  so no held-out edge can leak into them whatever the split.

With the defaults: 823 words and 4,325 undirected edges (8,650 directed), mean degree 10.5.
Returns ``(graph, words)``: ``words[i]`` is node i's word (nodes in alphabetical order)."""
import collections
import re
import zlib

import mxnet as mx
import numpy as np

from ..utils.packaged import package_file
from ..utils.readers import data_reader
from .base import GraphError
from .digraph import Graph

__all__ = ["lee_sentences", "cooccurrence_edges", "ngram_features", "lee_cooccurrence_graph"]

GENSIM_PIP = "gensim==4.4.0"
LEE_FILE = "test/test_data/lee_background.cor"
_SENT = re.compile(r"(?<=[.!?])\s+(?=[A-Z(\"'])")
_WORD = re.compile(r"[a-z]+(?:'[a-z]+)?")


@data_reader("UTF-8 text corpus", checks=("utf-8 text",),
             path=lambda path=None: path or package_file("gensim", LEE_FILE, GENSIM_PIP))
def lee_sentences(path=None):
    """The Lee background corpus (``path``, default: the installed gensim's copy) as sentences of
    lower-cased tokens, in file order (the module docstring's rule)."""
    path = path or package_file("gensim", LEE_FILE, GENSIM_PIP)
    out = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            for sentence in _SENT.split(line.strip()):
                tokens = _WORD.findall(sentence.lower())
                if tokens:
                    out.append(tokens)
    return out


def cooccurrence_edges(sentences, min_count=10, drop_top=50, window=5, min_cooccur=2):
    """The co-occurrence graph of ``sentences`` (lists of tokens) by the module docstring's rule.
    Returns ``(words, pairs)``: the sorted words that have an edge, and an (E, 2) int64 array of the
    undirected edges (u, v), u < v, indices into ``words``, sorted."""
    for value, what in ((min_count, "min_count"), (window, "window"), (min_cooccur, "min_cooccur")):
        if int(value) < 1:
            raise GraphError(f"cooccurrence_edges: {what} must be a whole number >= 1, got {value}")
    if int(drop_top) < 0:
        raise GraphError(f"cooccurrence_edges: drop_top must be >= 0, got {drop_top}")
    counts = collections.Counter(t for s in sentences for t in s)
    # most_common breaks ties by first appearance: the same corpus gives the same list
    common = {w for w, _ in counts.most_common(int(drop_top))}
    vocab = sorted(w for w, c in counts.items() if c >= min_count and w not in common)
    index = {w: i for i, w in enumerate(vocab)}
    together = collections.Counter()
    for s in sentences:
        ids = [index.get(t, -1) for t in s]
        for i, a in enumerate(ids):
            if a < 0:
                continue
            for b in ids[i + 1:i + int(window)]:
                if b >= 0 and b != a:
                    together[(min(a, b), max(a, b))] += 1
    pairs = np.array(sorted(p for p, c in together.items() if c >= min_cooccur), np.int64).reshape(-1, 2)
    if not len(pairs):
        raise GraphError("cooccurrence_edges: no two words co-occur often enough; lower min_count or "
                         "min_cooccur, or give more text")
    keep = np.unique(pairs)                      # words with at least one edge, in order
    new = np.full(len(vocab), -1, np.int64)
    new[keep] = np.arange(len(keep))
    return [vocab[i] for i in keep], new[pairs]


def ngram_features(words, dim=64):
    """(len(words), dim) float32 rows: the character 3-grams of ``<word>``, gram g adding
    ``+1`` or ``-1`` (bit 16 of CRC-32(g)) to bucket ``CRC-32(g) % dim``, each row L2-normalised
    (a row whose grams cancel stays zero). Signed buckets keep the rows near zero mean, so a dot
    product of two unrelated words' representations starts near zero instead of large."""
    if int(dim) < 1:
        raise GraphError(f"ngram_features: dim must be a whole number >= 1, got {dim}")
    out = np.zeros((len(words), int(dim)), np.float64)
    for i, w in enumerate(words):
        s = f"<{w}>"
        for j in range(len(s) - 2):
            h = zlib.crc32(s[j:j + 3].encode("utf-8"))
            out[i, h % dim] += 1.0 if (h >> 16) & 1 else -1.0
    norm = np.linalg.norm(out, axis=1, keepdims=True)
    return (out / np.where(norm > 0, norm, 1.0)).astype(np.float32)


def lee_cooccurrence_graph(min_count=10, drop_top=50, window=5, min_cooccur=2, dim=64, path=None):
    """The embedded word co-occurrence graph of the module docstring (``ndata['feat']``: the
    hashed 3-gram features). Returns ``(graph, words)``."""
    words, pairs = cooccurrence_edges(lee_sentences(path), min_count, drop_top, window, min_cooccur)
    src = np.stack([pairs[:, 0], pairs[:, 1]], 1).reshape(-1)
    dst = np.stack([pairs[:, 1], pairs[:, 0]], 1).reshape(-1)
    g = Graph((src, dst), num_nodes=len(words))
    g.ndata["feat"] = mx.nd.array(ngram_features(words, dim))
    return g, words
