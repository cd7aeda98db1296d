"""Graph data: networkx's bundled graphs as embedded defaults, and the LINQS (Cora/Citeseer) and
TU graph-classification text formats from a local path. No pickle-based formats."""
import math
import os

import mxnet as mx
import numpy as np

from .base import GraphError
from .digraph import Graph
from ..utils.readers import data_reader


def karate_club():
    """Zachary's karate club (34 nodes, both edge directions): ``ndata['label']`` is the club
    (0 Mr. Hi, 1 Officer), ``ndata['feat']`` the identity matrix."""
    import networkx as nx
    nxg = nx.karate_club_graph()
    g = Graph.from_networkx(nxg)
    g.ndata["label"] = mx.nd.array([0 if nxg.nodes[v]["club"] == "Mr. Hi" else 1 for v in nxg.nodes()])
    g.ndata["feat"] = mx.nd.array(np.eye(g.num_nodes(), dtype=np.float32))
    return g


def sbm_graph(sizes=(100, 100, 100), p_in=0.1, p_out=0.01, feat_dim=16, noise=1.0, seed=0):
    """A stochastic-block-model graph: ``label`` is the block; ``feat`` is a random block
    signature plus Gaussian noise of std ``noise`` (so features alone classify poorly)."""
    import networkx as nx
    k = len(sizes)
    probs = [[p_in if i == j else p_out for j in range(k)] for i in range(k)]
    nxg = nx.stochastic_block_model(list(sizes), probs, seed=seed)
    g = Graph.from_networkx(nxg)
    labels = np.concatenate([np.full(s, i) for i, s in enumerate(sizes)])
    rs = np.random.RandomState(seed)
    centres = rs.normal(size=(k, feat_dim)) * 0.5
    g.ndata["label"] = mx.nd.array(labels)
    g.ndata["feat"] = mx.nd.array(centres[labels] + rs.normal(size=(len(labels), feat_dim)) * noise)
    return g


@data_reader("graph data set text file", checks=("utf-8 text",), path="path")
def _lines(path):
    """``(line number, line)`` for each line of the text file ``path`` that is not blank."""
    with open(path, encoding="utf-8") as fh:
        for no, line in enumerate(fh, start=1):
            if line.strip():
                yield no, line


@data_reader("LINQS citation folder", path="folder",
             checks=("both files there", "rows of one width", "finite numeric attributes", "paper ids unique",
                     "citations name known papers (or are dropped)"))
def load_linqs(folder, name="cora", dangling="error"):
    """A LINQS citation data set: ``{name}.content`` (``<paper id> <0/1 word attributes...> <class>``
    per line) and ``{name}.cites`` (``<cited id> <citing id>``). Edges go both ways: edge 2i is the
    i-th kept cites line's citing -> cited paper, edge 2i + 1 its reverse (``link_data`` relies on
    it). A cites line naming a paper absent from the content file is a GraphError naming the file,
    the line and the id (``dangling='drop'`` skips such lines instead: CiteSeer's published files
    have a few); a paper id listed twice, a row of another width or a non-numeric attribute is a
    GraphError naming the file and the line, and so is an attribute that is not a finite number
    (``nan``, ``inf``: it would train to NaN weights without a word). Returns the graph and the
    class names."""
    if dangling not in ("error", "drop"):
        raise GraphError(f"dangling={dangling!r}: use 'error' or 'drop'")
    content, cites = (os.path.join(folder, f"{name}.{ext}") for ext in ("content", "cites"))
    for f in (content, cites):
        if not os.path.isfile(f):
            raise GraphError(f"{f} does not exist; a LINQS folder holds {name}.content and {name}.cites")
    ids, lines, feats, labels, width = {}, {}, [], [], None
    for no, line in _lines(content):
        parts = line.split()
        if len(parts) < 3:
            raise GraphError(f"{content}:{no}: expected '<id> <attributes...> <label>', got {len(parts)} fields")
        if width is None:
            width = len(parts)
        elif len(parts) != width:
            raise GraphError(f"{content}:{no}: {len(parts) - 2} attributes, the first line had {width - 2}")
        try:
            row = [float(v) for v in parts[1:-1]]
        except ValueError:
            raise GraphError(f"{content}:{no}: attributes must be numbers") from None
        if not all(math.isfinite(v) for v in row):
            bad = next(v for v in parts[1:-1] if not math.isfinite(float(v)))
            raise GraphError(f"{content}:{no}: attribute {bad!r} is not a finite number; fix or remove the row")
        feats.append(row)
        if parts[0] in ids:
            raise GraphError(f"{content}:{no}: paper id {parts[0]} appears twice (first on line "
                             f"{lines[parts[0]]}); remove one of the rows or give it its own id")
        ids[parts[0]] = len(ids)
        lines[parts[0]] = no
        labels.append(parts[-1])
    if not ids:
        raise GraphError(f"{content} is empty")
    src, dst = [], []
    for no, line in _lines(cites):
        parts = line.split()
        if len(parts) != 2:
            raise GraphError(f"{cites}:{no}: expected '<cited id> <citing id>', got {len(parts)} fields")
        a, b = parts
        missing = [paper for paper in (a, b) if paper not in ids]
        if missing and dangling == "drop":
            continue
        if missing:
            raise GraphError(f"{cites}:{no}: paper {missing[0]} is not in {content}; add its row there, "
                             "remove the citation, or pass --drop-dangling-cites to skip such lines")
        src += [ids[b], ids[a]]
        dst += [ids[a], ids[b]]
    classes = sorted(set(labels))
    g = Graph((np.array(src, np.int64), np.array(dst, np.int64)), num_nodes=len(ids))
    g.ndata["feat"] = mx.nd.array(np.array(feats, np.float32))
    g.ndata["label"] = mx.nd.array([classes.index(c) for c in labels])
    return g, classes


def _read_ints(path, cols, what):
    rows = []
    for no, line in _lines(path):
        parts = [p.strip() for p in line.split(",")]
        if len(parts) != cols:
            raise GraphError(f"{path}:{no}: expected {what}, got {line.strip()!r}")
        try:
            rows.append([int(float(p)) for p in parts])
        except (ValueError, OverflowError):   # 'nan' gives the first, 'inf' the second
            raise GraphError(f"{path}:{no}: expected integers ({what}), got {line.strip()!r}") from None
    return np.array(rows, np.int64).reshape(-1, cols)


@data_reader("TU graph-classification folder", path="folder",
             checks=("the three files there", "integers only (nan and inf refused)", "node ids in range",
                     "graph ids 1..G in order without gaps", "edges inside one graph", "one label per graph and node"))
def load_tu(folder, name):
    """A TU graph-classification data set: ``{name}_A.txt`` (``i, j`` edges, 1-based node ids),
    ``{name}_graph_indicator.txt`` (graph id per node), ``{name}_graph_labels.txt`` and, when
    present, ``{name}_node_labels.txt`` (one-hot ``feat``). Returns ``(graphs, labels)``. A line
    that is not integers (``nan`` and ``inf`` included) is a GraphError naming the file and line."""
    p = lambda s: os.path.join(folder, f"{name}_{s}.txt")  # noqa: E731
    for s in ("A", "graph_indicator", "graph_labels"):
        if not os.path.isfile(p(s)):
            raise GraphError(f"{p(s)} does not exist; a TU data set needs {name}_A.txt, "
                             f"{name}_graph_indicator.txt and {name}_graph_labels.txt")
    edges = _read_ints(p("A"), 2, "'i, j' (two node ids)")
    gid = _read_ints(p("graph_indicator"), 1, "one graph id").ravel()
    glab = _read_ints(p("graph_labels"), 1, "one graph label").ravel()
    n = len(gid)
    if len(edges) and (edges.min() < 1 or edges.max() > n):
        bad = int(np.flatnonzero((edges < 1).any(1) | (edges > n).any(1))[0]) + 1
        raise GraphError(f"{p('A')}:{bad}: node id out of range 1..{n} (the graph indicator lists {n} nodes)")
    if n == 0:
        raise GraphError(f"{p('graph_indicator')} is empty; it needs one graph id per node")
    if gid.min() < 1:
        bad = int(np.flatnonzero(gid < 1)[0]) + 1
        raise GraphError(f"{p('graph_indicator')}:{bad}: graph id {gid[bad - 1]} is not >= 1; graph ids "
                         "run 1..G")
    if (np.diff(gid) < 0).any():
        bad = int(np.flatnonzero(np.diff(gid) < 0)[0]) + 2
        raise GraphError(f"{p('graph_indicator')}:{bad}: graph id {gid[bad - 1]} after {gid[bad - 2]}; a "
                         "graph's nodes must be listed together, graphs in increasing order")
    if gid.max() != len(glab):
        raise GraphError(f"{p('graph_indicator')} names {gid.max()} graphs but {p('graph_labels')} has "
                         f"{len(glab)} labels; give one label line per graph")
    absent = np.setdiff1d(np.arange(1, gid.max() + 1), gid)
    if len(absent):
        raise GraphError(f"{p('graph_indicator')} has no node of graph {int(absent[0])} (its ids must run "
                         f"1..{gid.max()} without gaps); fix the file")
    if len(edges):
        cross = np.flatnonzero(gid[edges[:, 0] - 1] != gid[edges[:, 1] - 1])
        if len(cross):
            i, j = edges[cross[0]]
            raise GraphError(f"{p('A')}:{int(cross[0]) + 1}: edge {i}, {j} joins graph {gid[i - 1]} to graph "
                             f"{gid[j - 1]}; an edge must stay inside one graph: fix the file")
    feat = None
    if os.path.isfile(p("node_labels")):
        nl = _read_ints(p("node_labels"), 1, "one node label").ravel()
        if len(nl) != n:
            raise GraphError(f"{p('node_labels')} has {len(nl)} labels but {p('graph_indicator')} lists {n} "
                             "nodes; give one label line per node")
        feat = np.eye(nl.max() - nl.min() + 1, dtype=np.float32)[nl - nl.min()]
    classes = sorted(set(glab.tolist()))
    graphs = []
    e0 = edges - 1
    for k in range(1, gid.max() + 1):
        nodes = np.flatnonzero(gid == k)
        lo = nodes[0]
        sel = (gid[e0[:, 0]] == k) if len(e0) else np.zeros(0, bool)
        g = Graph((e0[sel, 0] - lo, e0[sel, 1] - lo), num_nodes=len(nodes))
        g.ndata["feat"] = mx.nd.array(feat[nodes]) if feat is not None else \
            mx.nd.array(g.in_degrees().asnumpy().reshape(-1, 1).astype(np.float32))
        graphs.append(g)
    return graphs, np.array([classes.index(c) for c in glab], np.int64)


def graph_families(per_family=40, rs=None, sizes=(6, 14)):
    """Generated graph-classification data: cycles (0), stars (1), 2-row grids (2) and random
    trees (3) of ``sizes`` nodes, ``feat`` all ones. Returns ``(graphs, labels)``."""
    import networkx as nx
    rs = rs or np.random.RandomState(0)
    graphs, labels = [], []
    for _ in range(per_family):
        for kind in range(4):
            size = int(rs.randint(*sizes))
            if kind == 0:
                nxg = nx.cycle_graph(size)
            elif kind == 1:
                nxg = nx.star_graph(size - 1)
            elif kind == 2:
                nxg = nx.grid_2d_graph(2, max(2, size // 2))
            else:
                gen = getattr(nx, "random_labeled_tree", None) or nx.random_tree
                nxg = gen(size, seed=int(rs.randint(1 << 30)))
            g = Graph.from_networkx(nxg)
            g.ndata["feat"] = mx.nd.ones((g.num_nodes(), 1))
            graphs.append(g)
            labels.append(kind)
    return graphs, np.array(labels, np.int64)


# ---- DGL-style data set objects (``dgl.data``): what DGL's example scripts read ------------------
def _masks(labels, train_per_class, val_per_class, rs):
    """train/val/test float masks: ``train_per_class`` then ``val_per_class`` random nodes of each
    class, the rest for test (DGL's citation-set layout)."""
    n = len(labels)
    masks = {k: np.zeros(n, np.float32) for k in ("train_mask", "val_mask", "test_mask")}
    masks["test_mask"][:] = 1
    for c in np.unique(labels):
        idx = rs.permutation(np.flatnonzero(labels == c))
        for name, sel in (("train_mask", idx[:train_per_class]),
                          ("val_mask", idx[train_per_class:train_per_class + val_per_class])):
            masks[name][sel] = 1
            masks["test_mask"][sel] = 0
    return masks


class NodeDataset:
    """One graph with ``feat``, ``label`` and ``train_mask``/``val_mask``/``test_mask`` node data,
    read like DGL's ``CoraGraphDataset``: ``data[0]``, ``data.num_classes``, ``data.graph``."""

    def __init__(self, g, num_classes):
        self._g, self.num_classes = g, num_classes

    def __getitem__(self, i):
        if i != 0:
            raise IndexError(f"a node-classification data set holds one graph (index 0), not {i}")
        return self._g

    def __len__(self):
        return 1

    @property
    def graph(self):
        """The graph (DGL's older ``data.graph``)."""
        return self._g

    @property
    def num_labels(self):
        """The number of classes (DGL's older name)."""
        return self.num_classes


class KarateClubDataset(NodeDataset):
    """Zachary's karate club as a node-classification set: one-hot ``feat``, the faction as
    ``label``; one training node per faction (0, Mr. Hi, and 33, the Officer), every other node
    for validation and test (DGL's ``KarateClubDataset`` has the labels only)."""

    def __init__(self):
        g = karate_club()
        train = np.zeros(g.num_nodes(), np.float32)
        train[[0, 33]] = 1
        g.ndata["train_mask"], g.ndata["val_mask"], g.ndata["test_mask"] = train, 1 - train, 1 - train
        super().__init__(g, 2)


class SBMDataset(NodeDataset):
    """A stochastic-block-model graph (``sbm_graph``: blocks as labels, block features under noise of
    std ``noise``, 2 by default, so that features alone classify about 55% of nodes) with
    ``train_per_class`` training and ``val_per_class`` validation nodes per block."""

    def __init__(self, sizes=(100, 100, 100), train_per_class=20, val_per_class=20, seed=0, noise=2.0, **kwargs):
        g = sbm_graph(sizes, seed=seed, noise=noise, **kwargs)
        masks = _masks(g.ndata["label"].asnumpy().astype(int), train_per_class, val_per_class,
                       np.random.RandomState(seed))
        for k, v in masks.items():
            g.ndata[k] = v
        super().__init__(g, len(sizes))


class CitationGraphDataset(NodeDataset):
    """DGL's ``CoraGraphDataset`` / ``CiteseerGraphDataset`` on files at hand: the LINQS folder
    ``raw_dir`` holding ``{name}.content`` and ``{name}.cites`` (``load_linqs``; nothing is
    downloaded). The LINQS files carry no split, so the masks follow Planetoid's sizes on a seeded
    draw: ``train_per_class`` nodes of each class for training, then ``num_val`` and ``num_test``
    of the remaining nodes (scaled down in the same ratio when fewer remain). ``data.classes`` holds the class names.
    ``dangling``: what to do with a cites line naming a paper absent from the content file
    (``load_linqs``); CiteSeer's published files have a few, so its default is ``'drop'``."""

    name = "cora"
    dangling = "error"

    def __init__(self, raw_dir=None, train_per_class=20, num_val=500, num_test=1000, seed=0,
                 dangling=None, **kwargs):
        if raw_dir is None:
            raise GraphError(f"{type(self).__name__}: pass raw_dir=<folder holding {self.name}.content and "
                             f"{self.name}.cites>; this package never downloads data sets")
        g, self.classes = load_linqs(raw_dir, self.name, dangling=dangling or self.dangling)
        labels = g.ndata["label"].asnumpy().astype(np.int64)
        rs = np.random.RandomState(seed)
        train = np.concatenate([rs.permutation(np.flatnonzero(labels == c))[:train_per_class]
                                for c in range(len(self.classes))])
        rest = rs.permutation(np.setdiff1d(np.arange(len(labels)), train))
        if len(rest) < num_val + num_test:     # a small graph: the two shares keep their ratio
            num_val = int(round(len(rest) * num_val / max(num_val + num_test, 1)))
            num_test = len(rest) - num_val
        for key, ids in (("train_mask", train), ("val_mask", rest[:num_val]),
                         ("test_mask", rest[num_val:num_val + num_test])):
            mask = np.zeros(len(labels), np.float32)
            mask[ids] = 1
            g.ndata[key] = mask
        super().__init__(g, len(self.classes))


class CoraGraphDataset(CitationGraphDataset):
    """Cora from a local LINQS folder (``cora.content``, ``cora.cites``)."""
    name = "cora"


class CiteseerGraphDataset(CitationGraphDataset):
    """Citeseer from a local LINQS folder (``citeseer.content``, ``citeseer.cites``); cites lines
    naming papers absent from the content file (the published files have a few) are skipped."""
    name = "citeseer"
    dangling = "drop"


class GraphClassificationDataset:
    """Graphs with labels, read like DGL's ``GINDataset``: ``data[i]`` is ``(graph, label)`` (an
    int64 NDArray), node features in ``ndata['attr']``; ``dim_nfeats`` and ``gclasses`` give the
    sizes."""

    def __init__(self, graphs, labels):
        self.graphs, self.labels = graphs, mx.nd.array(labels, dtype="int64")
        self.dim_nfeats = graphs[0].ndata["attr"].shape[1]
        self.gclasses = self.num_classes = int(labels.max()) + 1

    def __getitem__(self, i):
        return self.graphs[i], self.labels[i]

    def __len__(self):
        return len(self.graphs)


class GraphFamiliesDataset(GraphClassificationDataset):
    """``graph_families`` as a ``GraphClassificationDataset`` (``attr`` all ones)."""

    def __init__(self, per_family=40, seed=0):
        graphs, labels = graph_families(per_family, np.random.RandomState(seed))
        for g in graphs:
            g.ndata["attr"] = g.ndata["feat"]
        super().__init__(graphs, labels)


class GINDataset(GraphClassificationDataset):
    """DGL's ``GINDataset(name, self_loop, degree_as_nlabel)`` on data at hand: ``name='families'``
    is the embedded ``graph_families`` (``per_family`` of each), any other name a TU data set read
    from the local folder ``raw_dir`` (``load_tu``; DGL downloads its own copies, this package never
    downloads). ``self_loop`` adds one self-loop per node; ``degree_as_nlabel`` makes ``attr`` the
    one-hot in-degree (before self-loops), as DGL's degree tags; otherwise ``attr`` is ``feat``."""

    def __init__(self, name, self_loop, degree_as_nlabel=False, raw_dir=None, per_family=40, seed=0):
        from .transform import add_self_loop
        if name == "families":
            graphs, labels = graph_families(per_family, np.random.RandomState(seed))
        elif raw_dir is None:
            raise GraphError(f"GINDataset({name!r}): the embedded data set is 'families'; for a TU data set "
                             f"pass raw_dir=<folder holding {name}_A.txt, {name}_graph_indicator.txt, ...>")
        else:
            graphs, labels = load_tu(raw_dir, name)
        degrees = [g.in_degrees().asnumpy() for g in graphs]
        width = max(int(d.max(initial=0)) for d in degrees) + 1
        for g, d in zip(graphs, degrees):
            g.ndata["attr"] = np.eye(width, dtype=np.float32)[d] if degree_as_nlabel else g.ndata["feat"]
        super().__init__([add_self_loop(g) for g in graphs] if self_loop else graphs, labels)
        self.name, self.self_loop, self.degree_as_nlabel = name, self_loop, degree_as_nlabel


def register_data_args(parser):
    """``--dataset`` for node-classification scripts (DGL's ``dgl.data.register_data_args``): the
    embedded ``karate`` or ``sbm`` here, in place of DGL's citation sets."""
    parser.add_argument("--dataset", type=str, required=False,
                        help="The input dataset: karate (Zachary's club) or sbm (stochastic block model)")
