"""The per-type views of a ``HeteroGraph``, as DGL's: ``g.nodes['user'].data`` and
``g.edges['plays'].data`` (feature frames of one node or edge type), ``g.nodes('user')`` and
``g.edges(etype='plays')`` (ids, as methods), and ``g.ndata`` / ``g.edata`` over several types,
whose items are dicts ``{type: tensor}``.

A type's frame is one ``TypeFrame`` object shared by the heterograph and every relation graph
that reads or writes that type, so a feature set through any of them is seen by all."""
import mxnet as mx

from .base import Frame, GraphError

__all__ = ["TypeFrame", "NodeView", "EdgeView", "TypeDataView", "EdgeDataView"]


class TypeFrame(Frame):
    """A ``Frame`` of one node or edge type: ``label`` (``nodes['user'].data``) names it in
    errors, and ``what`` says what its rows are (``'user' nodes``)."""

    def __init__(self, n, label, what, ctx):
        super().__init__(n, label, ctx)
        self.what = what

    def __setitem__(self, key, value):
        if not isinstance(value, mx.nd.NDArray):
            value = mx.nd.array(value, ctx=self.ctx)
        if value.shape[0] != self.n:
            raise GraphError(f"{self.kind}[{key!r}] has {value.shape[0]} rows but the graph has {self.n} "
                             f"{self.what}; give one row per node or edge of that type")
        super().__setitem__(key, value)

    def _copy(self):
        out = TypeFrame(self.n, self.kind, self.what, self.ctx)
        dict.update(out, self)
        return out


class _Space:
    """One type's entry of a view: its feature frame as ``data``."""

    def __init__(self, frame):
        self.data = frame


class NodeView:
    """``g.nodes`` (or ``g.srcnodes`` / ``g.dstnodes``) of a heterograph: ``view['user'].data``
    is that type's feature frame, ``view('user')`` its node ids (the type may be left out when
    the view covers one type)."""

    def __init__(self, g, types):
        self._g, self._types = g, list(types)

    def _type(self, ntype):
        if ntype is None:
            if len(self._types) != 1:
                raise GraphError(f"name the node type: the graph has {len(self._types)} of them "
                                 f"({', '.join(map(repr, self._types))})")
            return self._types[0]
        if ntype not in self._types:
            raise GraphError(f"node type {ntype!r} is not in this graph (it has {', '.join(map(repr, self._types))})")
        return ntype

    def __getitem__(self, ntype):
        return _Space(self._g._node_frames[self._type(ntype)])

    def __call__(self, ntype=None):
        return mx.nd.arange(self._g.num_nodes(self._type(ntype)), dtype=self._g.idtype, ctx=self._g.device)

    def __len__(self):
        return len(self._types)


class EdgeView:
    """``g.edges`` of a heterograph: ``view['plays'].data`` (or ``view[('user', 'plays',
    'game')]``) is that relation's edge feature frame; ``view(form='uv', order='eid',
    etype=None)`` its edges, as ``Graph.edges`` gives them."""

    def __init__(self, g):
        self._g = g

    def __getitem__(self, etype):
        return _Space(self._g._rel(etype).edata)

    def __call__(self, form="uv", order="eid", etype=None):
        return self._g._rel(etype).edges(form=form, order=order)


class TypeDataView:
    """``g.ndata`` / ``g.edata`` (and ``srcdata`` / ``dstdata``) over several types, as DGL's:
    ``view['h']`` is ``{type: tensor}`` for the types that have feature ``h``; assigning takes
    such a dict (the types it names get the feature); ``del view['h']`` removes it everywhere."""

    def __init__(self, frames, what):
        self._frames, self._what = frames, what     # {type: TypeFrame}

    def __getitem__(self, key):
        out = {t: f[key] for t, f in self._frames.items() if key in f}
        if not out:
            raise KeyError(key)
        return out

    def __setitem__(self, key, value):
        if not isinstance(value, dict):
            raise GraphError(f"the graph has several {self._what} types: assign a dict {{type: tensor}} "
                             f"(or use g.{'nodes' if self._what == 'node' else 'edges'}[type].data)")
        for t, v in value.items():
            frame = self._frames.get(t)
            if frame is None:
                raise GraphError(f"{self._what} type {t!r} is not in this graph "
                                 f"(it has {', '.join(map(repr, self._frames))})")
            frame[key] = v

    def __delitem__(self, key):
        if not any(key in f for f in self._frames.values()):
            raise KeyError(key)
        for f in self._frames.values():
            f.pop(key, None)

    def __contains__(self, key):
        return any(key in f for f in self._frames.values())

    def keys(self):
        """Feature names that some type has."""
        return list(dict.fromkeys(k for f in self._frames.values() for k in f))

    def __iter__(self):
        return iter(self.keys())

    def __len__(self):
        return len(self.keys())

    def items(self):
        """``(name, {type: tensor})`` pairs."""
        return [(k, self[k]) for k in self.keys()]

    def values(self):
        """``{type: tensor}`` per feature name."""
        return [self[k] for k in self.keys()]

    def get(self, key, default=None):
        """``view[key]``, or ``default`` when no type has it."""
        return self[key] if key in self else default

    def update(self, other):
        """Assign every ``name: {type: tensor}`` item of ``other``."""
        for k, v in dict(other).items():
            self[k] = v

    def __repr__(self):
        return repr({k: {t: tuple(v.shape) for t, v in self[k].items()} for k in self.keys()})



class EdgeDataView(TypeDataView):
    """``g.edata`` over several relations: keys of the dicts are canonical edge types; an
    assignment may name a relation by its edge type name (``canonical`` resolves it)."""

    def __init__(self, frames, canonical):
        super().__init__(frames, "edge")
        self._canonical = canonical

    def __setitem__(self, key, value):
        if not isinstance(value, dict):
            raise GraphError("the graph has several relations: assign a dict {edge type: tensor} "
                             "(or use g.edges[etype].data)")
        super().__setitem__(key, {self._canonical(t): v for t, v in value.items()})


def batch_sizes(g):
    """(per-graph node counts per type, per-graph edge counts per relation) of ``g``, itself a
    batch or one graph."""
    info = g.__dict__.get("_hbatch")
    if info is not None:
        return info
    return ({t: [g.num_nodes(t)] for t in g.ntypes}, {c: [g.num_edges(c)] for c in g.canonical_etypes})


class BatchCounts:
    """A heterograph's per-graph counts after ``dgl.batch`` (``hetero_batch``)."""

    @property
    def batch_size(self):
        """How many heterographs ``dgl.batch`` put together here (1 for one graph)."""
        info = self.__dict__.get("_hbatch")
        return len(next(iter(info[0].values()))) if info else 1

    def batch_num_nodes(self, ntype=None):
        """Nodes of type ``ntype`` in each graph of the batch (the only type when None)."""
        t = self._ntypes[0] if ntype is None and len(self._ntypes) == 1 else self._ntype(ntype)
        return mx.nd.array(batch_sizes(self)[0][t], dtype=self._idtype, ctx=self._ctx)

    def batch_num_edges(self, etype=None):
        """Edges of relation ``etype`` in each graph of the batch (the only relation when None)."""
        return mx.nd.array(batch_sizes(self)[1][self.to_canonical_etype(etype)], dtype=self._idtype, ctx=self._ctx)
