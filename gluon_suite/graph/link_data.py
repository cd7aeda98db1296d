"""Graphs for link prediction: the embedded citation graph (what ``gluon-suite samples`` writes
as ``data/cora``), the same papers as a heterograph of papers, words and citations, the on-disk
layout of a heterograph (``nodes.tsv`` + ``edges.tsv``), and a seeded split of a graph's
undirected edges into training, validation and test pairs.

The citation heterograph (``linqs_heterograph``): node types ``paper`` (one per content row,
``label`` the class index, ``feat`` the 0/1 word row) and ``word`` (one per word column); relations
``('paper', 'cites', 'paper')`` (citing -> cited, one edge per cites line, in file order),
``('paper', 'cited_by', 'paper')`` (its reverse, edge i reversing cites edge i), ``('paper',
'has', 'word')`` (one edge per 1 in the content file, paper by paper) and ``('word', 'in',
'paper')`` (its reverse, edge i reversing has edge i). Same ids in a relation and its reverse is
what ``exclude='reverse_types'`` needs.

The heterograph folder layout (``write_hetero_tsv`` writes it, ``load_hetero_tsv`` reads it; ``gluon-suite
samples`` writes the citation heterograph as ``data/citation_hetero``), UTF-8,
tab-separated, one record a line:

- ``nodes.tsv``: ``<node type> <id> <name> <label>``, ids 0..n-1 within a type in order, ``name``
  any text without tabs (the paper id, the word column), ``label`` a class name or ``-`` for none;
- ``edges.tsv``: ``<source type> <edge type> <destination type> <source id> <destination id>``,
  the edges of a relation in id order.
"""
import os
import tempfile

import mxnet as mx
import numpy as np

from .base import GraphError
from .data import load_linqs
from .digraph import Graph
from .hetero_graph import HeteroGraph
from .heterograph import heterograph
from .samples import write_linqs
from ..utils.fileio import atomic_path
from ..utils.readers import data_reader

__all__ = ["citation_graph", "citation_heterograph", "linqs_heterograph", "load_hetero_tsv", "write_hetero_tsv",
           "write_citation_hetero", "undirected_split"]


def citation_graph():
    """The embedded citation graph: ``samples.write_linqs``'s folder (180 papers of 3 classes, 40
    words, 540 citations) read by ``load_linqs``, edges both ways (edge 2i citing -> cited, 2i + 1
    its reverse). Returns ``(graph, class names)``."""
    with tempfile.TemporaryDirectory() as tmp:
        write_linqs(tmp)
        return load_linqs(tmp, "cora")


def citation_heterograph():
    """The embedded citation graph as a heterograph (``linqs_heterograph`` of the same folder).
    Returns ``(heterograph, class names)``."""
    with tempfile.TemporaryDirectory() as tmp:
        write_linqs(tmp)
        return linqs_heterograph(tmp, "cora")


def linqs_heterograph(folder, name="cora", dangling="error"):
    """A LINQS folder (``load_linqs``'s files and checks) as the paper/word heterograph of the
    module docstring. Returns ``(heterograph, class names)``."""
    g, classes = load_linqs(folder, name, dangling=dangling)
    feat = g.ndata["feat"].asnumpy()
    citing, cited = g._src[0::2], g._dst[0::2]
    paper, word = np.nonzero(feat)
    hg = heterograph({("paper", "cites", "paper"): (citing, cited), ("paper", "cited_by", "paper"): (cited, citing),
                      ("paper", "has", "word"): (paper, word), ("word", "in", "paper"): (word, paper)},
                     num_nodes_dict={"paper": feat.shape[0], "word": feat.shape[1]})
    hg.nodes["paper"].data["label"] = g.ndata["label"]
    hg.nodes["paper"].data["feat"] = g.ndata["feat"]
    return hg, classes


def write_hetero_tsv(hg, folder, names=None, classes=None):
    """Write heterograph ``hg`` into ``folder`` in the layout of the module docstring (each file
    through a temporary file and a rename). ``names``: ``{node type: names}`` (default: the ids);
    ``classes``: ``{node type: label names}`` for the types whose ``label`` (class indices) is
    written (default: none, every label ``-``). Returns the folder."""
    names, classes = names or {}, classes or {}
    os.makedirs(folder, exist_ok=True)
    lines = []
    for t in hg.ntypes:
        n = hg.num_nodes(t)
        lab = hg.nodes[t].data["label"].asnumpy().astype(np.int64) if t in classes else None
        for i in range(n):
            name = str(names[t][i]) if t in names else str(i)
            lines.append(f"{t}\t{i}\t{name}\t{classes[t][lab[i]] if lab is not None else '-'}\n")
    edges = []
    for c in hg.canonical_etypes:
        rel = hg[c]
        edges += [f"{c[0]}\t{c[1]}\t{c[2]}\t{u}\t{v}\n" for u, v in zip(rel._src, rel._dst)]
    for fname, rows in (("nodes.tsv", lines), ("edges.tsv", edges)):
        with atomic_path(os.path.join(folder, fname)) as tmp, open(tmp, "w", encoding="utf-8") as f:
            f.writelines(rows)
    return folder


def write_citation_hetero(folder):
    """The embedded citation heterograph (``citation_heterograph``) in ``folder``: papers named by
    their LINQS id and labelled with their class, words by their column. Returns the folder."""
    with tempfile.TemporaryDirectory() as tmp:
        write_linqs(tmp)
        hg, classes = linqs_heterograph(tmp, "cora")
        with open(os.path.join(tmp, "cora.content"), encoding="utf-8") as f:
            papers = [line.split()[0] for line in f if line.strip()]
    words = [f"w{j}" for j in range(hg.num_nodes("word"))]
    return write_hetero_tsv(hg, folder, {"paper": papers, "word": words}, {"paper": classes})


@data_reader("heterograph TSV file", checks=("utf-8 text", "tab-separated fields of the expected count"),
             path="path")
def _rows(path, width, what):
    with open(path, encoding="utf-8") as fh:
        for no, line in enumerate(fh, start=1):
            line = line.rstrip("\n")
            if not line.strip():
                continue
            parts = line.split("\t")
            if len(parts) != width:
                raise GraphError(f"{path}:{no}: expected {what} ({width} tab-separated fields), got {len(parts)}")
            yield no, parts


def _int(path, no, text, what):
    try:
        return int(text)
    except ValueError:
        raise GraphError(f"{path}:{no}: {what} must be a whole number, got {text!r}") from None


@data_reader("heterograph TSV folder", path="folder",
             checks=("nodes.tsv and edges.tsv there", "ids whole numbers, in order and in range",
                     "relations name node types of nodes.tsv", "neither file empty"))
def load_hetero_tsv(folder):
    """A heterograph from the folder layout of the module docstring: node types and counts from
    ``nodes.tsv`` (``ndata['label']``, the index of the label among the type's sorted label
    names, on every type whose nodes all have one), relations from ``edges.tsv``. Returns
    ``(heterograph, {node type: names}, {node type: sorted label names})``. A malformed line, an id
    out of order or out of range, or a relation naming an absent type is a GraphError naming the
    file and the line."""
    nodes_f, edges_f = os.path.join(folder, "nodes.tsv"), os.path.join(folder, "edges.tsv")
    for f in (nodes_f, edges_f):
        if not os.path.isfile(f):
            raise GraphError(f"{f} does not exist; a heterograph folder holds nodes.tsv and edges.tsv")
    names, labels = {}, {}
    for no, (t, i, name, label) in _rows(nodes_f, 4, "'<node type> <id> <name> <label>'"):
        got = names.setdefault(t, [])
        if _int(nodes_f, no, i, "the node id") != len(got):
            raise GraphError(f"{nodes_f}:{no}: {t!r} node id {i} out of order; list a type's ids 0, 1, 2, ... in turn")
        got.append(name)
        labels.setdefault(t, []).append(label)
    if not names:
        raise GraphError(f"{nodes_f} is empty; it needs one line per node")
    edges = {}
    for no, (s, e, d, u, v) in _rows(edges_f, 5, "'<source type> <edge type> <destination type> <src> <dst>'"):
        for t, x in ((s, u), (d, v)):
            if t not in names:
                raise GraphError(f"{edges_f}:{no}: node type {t!r} is not in {nodes_f}")
            if not 0 <= _int(edges_f, no, x, "a node id") < len(names[t]):
                raise GraphError(f"{edges_f}:{no}: {t!r} node {x} out of range 0..{len(names[t]) - 1}")
        pair = edges.setdefault((s, e, d), ([], []))
        pair[0].append(int(u))
        pair[1].append(int(v))
    if not edges:
        raise GraphError(f"{edges_f} is empty; it needs one line per edge")
    hg = heterograph({c: (np.array(a, np.int64), np.array(b, np.int64)) for c, (a, b) in edges.items()},
                     num_nodes_dict={t: len(n) for t, n in names.items()})
    classes = {}
    for t, lab in labels.items():
        if "-" in lab:
            continue
        classes[t] = sorted(set(lab))
        ids = mx.nd.array([classes[t].index(x) for x in lab])
        if isinstance(hg, HeteroGraph):
            hg.nodes[t].data["label"] = ids
        else:
            hg.ndata["label"] = ids
    return hg, names, classes


def undirected_split(g, val_fraction=0.1, test_fraction=0.1, seed=0):
    """A seeded split of ``g``'s undirected edges for link prediction. The distinct pairs {u, v}
    (u != v; an edge in either direction, or both, is one pair) are shuffled with ``seed``; the
    first ``val_fraction`` of them are validation pairs, the next ``test_fraction`` test pairs,
    the rest training pairs. Returns ``(train_graph, val, test)``: ``train_graph`` has ``g``'s
    nodes and features and every training pair in both directions (edge 2i: u -> v with u < v,
    2i + 1: v -> u, so edge e's reverse is ``e ^ 1``); ``val`` and ``test`` are (pairs, 2) int64
    arrays of (u, v) with u < v."""
    if not 0 <= val_fraction < 1 or not 0 <= test_fraction < 1 or val_fraction + test_fraction >= 1:
        raise GraphError(f"undirected_split: the validation ({val_fraction}) and test ({test_fraction}) fractions "
                         "must be >= 0 and leave pairs for training (sum below 1)")
    u, v = np.minimum(g._src, g._dst), np.maximum(g._src, g._dst)
    keep = u != v
    pairs = np.unique(np.stack([u[keep], v[keep]], 1), axis=0)
    pairs = pairs[np.random.RandomState(seed).permutation(len(pairs))]
    n_val, n_test = int(round(len(pairs) * val_fraction)), int(round(len(pairs) * test_fraction))
    val, test, train = pairs[:n_val], pairs[n_val:n_val + n_test], pairs[n_val + n_test:]
    if not len(train):
        raise GraphError(f"undirected_split: the graph has {len(pairs)} undirected pairs, none left for training")
    out = Graph((train.reshape(-1), train[:, ::-1].reshape(-1)), num_nodes=g.num_nodes(), idtype=g.idtype,
                device=g.device)
    out.ndata.update(g.ndata)
    return out, val, test
