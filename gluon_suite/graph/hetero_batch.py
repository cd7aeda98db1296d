"""Batching heterographs (DGL's ``dgl.batch`` / ``dgl.unbatch`` on graphs with several relations):
every node type's nodes and every relation's edges side by side, ids offset per node type, the
features of each type concatenated. The graphs must have the same node types and relations, as
DGL requires. ``batch`` and ``unbatch`` in ``batch`` hand heterographs here."""
import numpy as np

from .base import ALL, GraphError, concat_rows, slice_rows
from .hetero_graph import HeteroGraph
from .hetero_views import batch_sizes as _sizes


def _feature_keys(frames, names, where):
    common = set.intersection(*(set(f) for f in frames))
    keys = sorted(common) if isinstance(names, str) and names == ALL else list(names or [])
    for k in keys:
        if k not in common:
            raise GraphError(f"batch: {where}[{k!r}] is missing from some of the graphs")
    return keys


def batch_hetero(graphs, ndata=ALL, edata=ALL):
    """One heterograph holding ``graphs`` side by side (see the module docstring); ``ndata`` and
    ``edata`` as for ``batch`` (default: the features every graph has, per type)."""
    first = graphs[0]
    for g in graphs[1:]:
        if not isinstance(g, HeteroGraph) or g.ntypes != first.ntypes or g.canonical_etypes != first.canonical_etypes:
            raise GraphError(f"batch: heterographs must have the same node types and relations; got "
                             f"{first.canonical_etypes} and {getattr(g, 'canonical_etypes', type(g).__name__)}")
        if g.device != first.device or g.idtype != first.idtype:
            raise GraphError(f"batch: graphs on {first.device} with {np.dtype(first.idtype).name} ids and on "
                             f"{g.device} with {np.dtype(g.idtype).name} ids; move them with g.to(ctx) and "
                             "g.astype(idtype) first")
    offs = {t: np.cumsum([0] + [g.num_nodes(t) for g in graphs]) for t in first.ntypes}
    edges = {}
    for c in first.canonical_etypes:
        s, _, d = c
        edges[c] = (np.concatenate([g[c]._src + offs[s][i] for i, g in enumerate(graphs)]),
                    np.concatenate([g[c]._dst + offs[d][i] for i, g in enumerate(graphs)]))
    bg = HeteroGraph(edges, {t: int(o[-1]) for t, o in offs.items()}, first.ntypes, first.idtype, first.device)
    for t in first.ntypes:
        frames = [g._node_frames[t] for g in graphs]
        for k in _feature_keys(frames, ndata, f"nodes[{t!r}].data"):
            bg._node_frames[t][k] = concat_rows([f[k] for f in frames])
    for c in first.canonical_etypes:
        frames = [g[c].edata for g in graphs]
        for k in _feature_keys(frames, edata, f"edges[{c!r}].data"):
            bg[c].edata[k] = concat_rows([f[k] for f in frames])
    sizes = [_sizes(g) for g in graphs]
    bg._hbatch = ({t: sum((n[t] for n, _ in sizes), []) for t in first.ntypes},
                  {c: sum((e[c] for _, e in sizes), []) for c in first.canonical_etypes})
    return bg


def unbatch_hetero(bg):
    """The heterographs that ``batch`` put together, with their features."""
    nodes, edges = _sizes(bg)
    noff = {t: np.cumsum([0] + n) for t, n in nodes.items()}
    eoff = {c: np.cumsum([0] + e) for c, e in edges.items()}
    out = []
    for i in range(len(next(iter(nodes.values())))):
        rel = {}
        for c in bg.canonical_etypes:
            r, a, b = bg[c], eoff[c][i], eoff[c][i + 1]
            rel[c] = (r._src[a:b] - noff[c[0]][i], r._dst[a:b] - noff[c[2]][i])
        g = HeteroGraph(rel, {t: nodes[t][i] for t in bg.ntypes}, bg.ntypes, bg.idtype, bg.device)
        for t in bg.ntypes:
            for k, v in bg._node_frames[t].items():
                g._node_frames[t][k] = slice_rows(v, int(noff[t][i]), int(noff[t][i + 1]))
        for c in bg.canonical_etypes:
            for k, v in bg[c].edata.items():
                g[c].edata[k] = slice_rows(v, int(eoff[c][i]), int(eoff[c][i + 1]))
        out.append(g)
    return out
