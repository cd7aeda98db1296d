"""Batching many small graphs into one block-diagonal graph (DGL's ``dgl.batch``,
``dgl.unbatch``); the per-graph readouts are in ``readout``."""
import numpy as np

from .base import ALL, GraphError, concat_rows, slice_rows
from .digraph import Graph


def batch(graphs, ndata=ALL, edata=ALL):
    """One graph holding ``graphs`` side by side (node ids offset). Features are concatenated:
    ``ndata``/``edata`` name which (default: those present in every graph; DGL instead requires
    every graph to have the same ones). ``unbatch`` reverses it; readouts reduce per graph.
    Heterographs with several relations batch per node type and relation (``hetero_batch``)."""
    graphs = list(graphs)
    if not graphs:
        raise GraphError("batch needs at least one graph")
    if any(type(g).__name__ == "HeteroGraph" for g in graphs):   # several relations: per type
        from .hetero_batch import batch_hetero
        return batch_hetero(graphs, ndata, edata)
    for g in graphs[1:]:
        if g.device != graphs[0].device or g.idtype != graphs[0].idtype:
            raise GraphError(f"batch: graphs on {graphs[0].device} with {np.dtype(graphs[0].idtype).name} ids and on "
                             f"{g.device} with {np.dtype(g.idtype).name} ids; move them with g.to(ctx) and "
                             "g.astype(idtype) first")
    offs = np.cumsum([0] + [g.num_nodes() for g in graphs])
    src = np.concatenate([g._src + o for g, o in zip(graphs, offs)])
    dst = np.concatenate([g._dst + o for g, o in zip(graphs, offs)])
    bg = Graph((src, dst), num_nodes=int(offs[-1]), idtype=graphs[0].idtype, device=graphs[0].device)
    for attr, names in (("ndata", ndata), ("edata", edata)):
        common = set.intersection(*(set(getattr(g, attr)) for g in graphs))
        keys = sorted(common) if isinstance(names, str) and names == ALL else list(names or [])
        for k in keys:
            if k not in common:
                raise GraphError(f"batch: {attr}[{k!r}] is missing from some of the graphs")
            getattr(bg, attr)[k] = concat_rows([getattr(g, attr)[k] for g in graphs])
    bg._batch_num_nodes = sum((g._batch_sizes()[0] for g in graphs), [])
    bg._batch_num_edges = sum((g._batch_sizes()[1] for g in graphs), [])
    return bg


def unbatch(bg):
    """The graphs that ``batch`` put together, with their features."""
    if type(bg).__name__ == "HeteroGraph":
        from .hetero_batch import unbatch_hetero
        return unbatch_hetero(bg)
    nn_, ne = bg._batch_sizes()
    noff, eoff = np.cumsum([0] + nn_), np.cumsum([0] + ne)
    out = []
    for i in range(len(nn_)):
        s, d = bg._src[eoff[i]:eoff[i + 1]] - noff[i], bg._dst[eoff[i]:eoff[i + 1]] - noff[i]
        g = Graph((s, d), num_nodes=nn_[i], idtype=bg.idtype, device=bg.device)
        for k, v in bg.ndata.items():
            g.ndata[k] = slice_rows(v, int(noff[i]), int(noff[i + 1]))
        for k, v in bg.edata.items():
            g.edata[k] = slice_rows(v, int(eoff[i]), int(eoff[i + 1]))
        out.append(g)
    return out
