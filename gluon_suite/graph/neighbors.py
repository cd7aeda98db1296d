"""The uniform neighbour draw that ``sampling`` (graphs) and ``hetero_sampling`` (heterographs)
share: each node's in- or out-edges grouped once per graph (``_csr``), and up to a fan-out of them
drawn per node (``pick``)."""
import numpy as np


def _csr(g, edge_dir):
    """Edge ids grouped by destination (``'in'``) or source (``'out'``): ``(indptr, eids)``."""
    def build():
        key, n = (g._dst, g._ndst) if edge_dir == "in" else (g._src, g._nsrc)
        order = np.argsort(key, kind="stable")
        indptr = np.zeros(n + 1, np.int64)
        np.add.at(indptr, key[order] + 1, 1)
        return np.cumsum(indptr), order
    return g._get(("csr", edge_dir), build)


def pick(g, nodes, fanout, edge_dir, replace, rng):
    """The edge ids ``sample_neighbors`` draws in graph (or relation graph) ``g`` for ``nodes``."""
    indptr, eids = _csr(g, edge_dir)
    picked = []
    for v in nodes:
        a, b = indptr[v], indptr[v + 1]
        deg = b - a
        if deg == 0:
            continue
        if fanout < 0 or (deg <= fanout and not replace):
            picked.append(eids[a:b])
        else:
            picked.append(eids[a + rng.choice(deg, fanout, replace=replace)])
    return np.concatenate(picked) if picked else np.zeros(0, np.int64)
