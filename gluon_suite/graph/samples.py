"""Small graph data sets of our own in the published file formats, so that every documented graph
command runs without a download: a LINQS citation folder (Cora's ``cora.content``/``cora.cites``),
a TU graph-classification set (``<name>_A.txt``, ``_graph_indicator``, ``_graph_labels``,
``_node_labels``) and Reddit-style SciPy/NumPy arrays. The content is drawn from a fixed seed with
real structure (classes cite mostly within themselves, graph classes differ in shape), so a model
trained on it learns something measurable."""
import os

import numpy as np


def write_linqs(folder, name="cora", classes=("Neural_Networks", "Theory", "Rule_Learning"),
                per_class=60, words=40, seed=0):
    """``{name}.content`` (``<paper id> <0/1 words...> <class>``) and ``{name}.cites``
    (``<cited id> <citing id>``) in ``folder``: each class favours its own third of the words and
    cites papers of its own class 9 times in 10. Returns the two paths."""
    rs = np.random.RandomState(seed)
    os.makedirs(folder, exist_ok=True)
    k = len(classes)
    labels = np.repeat(np.arange(k), per_class)
    ids = rs.permutation(np.arange(1000, 1000 + 37 * len(labels), 37))
    band = words // k
    content = os.path.join(folder, f"{name}.content")
    with open(content, "w", encoding="utf-8") as f:
        for pid, c in zip(ids, labels):
            p = np.full(words, 0.05)
            p[c * band:(c + 1) * band] = 0.3
            bits = (rs.rand(words) < p).astype(int)
            f.write(f"{pid}\t" + "\t".join(map(str, bits)) + f"\t{classes[c]}\n")
    cites = os.path.join(folder, f"{name}.cites")
    with open(cites, "w", encoding="utf-8") as f:
        for i in range(len(labels)):
            for _ in range(3):
                same = rs.rand() < 0.9
                pool = np.flatnonzero((labels == labels[i]) == same)
                j = rs.choice(pool[pool != i])
                f.write(f"{ids[j]}\t{ids[i]}\n")
    return content, cites


def write_tu(folder, name="SHAPES", per_class=30, seed=0):
    """A TU graph-classification set ``name`` in ``folder``: label 1 graphs are cycles, label 2
    graphs are stars (5-12 nodes each); node labels are 1 for a node of degree 2 or less, 2 above.
    Returns the folder."""
    rs = np.random.RandomState(seed)
    os.makedirs(folder, exist_ok=True)
    edges, indicator, glabels, nlabels, base = [], [], [], [], 0
    kinds = rs.permutation([1] * per_class + [2] * per_class)
    for gid, kind in enumerate(kinds, start=1):
        n = int(rs.randint(5, 13))
        pairs = [(i, (i + 1) % n) for i in range(n)] if kind == 1 else [(0, i) for i in range(1, n)]
        deg = np.zeros(n, int)
        for a, b in pairs:
            edges += [(base + a + 1, base + b + 1), (base + b + 1, base + a + 1)]
            deg[a] += 1
            deg[b] += 1
        indicator += [gid] * n
        nlabels += [1 if d <= 2 else 2 for d in deg]
        glabels.append(int(kind))
        base += n
    p = lambda s: os.path.join(folder, f"{name}_{s}.txt")  # noqa: E731
    with open(p("A"), "w") as f:
        f.writelines(f"{a}, {b}\n" for a, b in edges)
    for s, rows in (("graph_indicator", indicator), ("graph_labels", glabels), ("node_labels", nlabels)):
        with open(p(s), "w") as f:
            f.writelines(f"{v}\n" for v in rows)
    return folder


def write_reddit(folder, nodes=200, feats=16, classes=4, seed=0):
    """Reddit's array files in ``folder``: ``reddit_graph.npz`` (a SciPy sparse adjacency, within-
    class edges mostly) and ``reddit_data.npz`` (``feature``, ``label``, ``node_types`` with 1
    train, 2 validation, 3 test, as in the published file). Returns the folder."""
    import scipy.sparse as sp
    rs = np.random.RandomState(seed)
    os.makedirs(folder, exist_ok=True)
    label = rs.randint(0, classes, nodes)
    src = np.repeat(np.arange(nodes), 5)
    dst = np.array([rs.choice(np.flatnonzero(label == label[i])) if rs.rand() < 0.8 else rs.randint(nodes)
                    for i in src])
    adj = sp.coo_matrix((np.ones(len(src), np.float32), (src, dst)), shape=(nodes, nodes)).tocsr()
    sp.save_npz(os.path.join(folder, "reddit_graph.npz"), adj)
    feature = (np.eye(classes)[label] + rs.normal(scale=0.5, size=(nodes, classes))) @ rs.normal(size=(classes, feats))
    node_types = rs.choice([1, 2, 3], nodes, p=[0.6, 0.2, 0.2])
    np.savez(os.path.join(folder, "reddit_data.npz"), feature=feature.astype(np.float32), label=label,
             node_types=node_types)
    return folder
