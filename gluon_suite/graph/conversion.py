"""A ``Graph``'s id type and device: ``_idtype`` reads an id type given as a NumPy or MXNet type
or its name (or infers it from the edge arrays), and ``GraphConversions``, a mixin of ``Graph``,
gives DGL's ``g.to(ctx)``, ``g.astype``, ``g.int()`` and ``g.long()``: the same graph, structure,
features, batch information and initializers, on another context or with another id type."""
import copy

import mxnet as mx
import numpy as np

from .base import Frame, GraphError


def _idtype(idtype, edges):
    """``np.int32`` or ``np.int64`` from an id type given as a NumPy or MXNet type or its name;
    when None, int32 if both id arrays are int32 (DGL infers the type from the tensors), else int64."""
    if idtype is None:
        dts = [getattr(a, "dtype", None) for a in (edges or ())]
        return np.int32 if dts and all(d is not None and np.dtype(d) == np.int32 for d in dts) else np.int64
    try:
        t = np.dtype(idtype)
    except TypeError:
        t = None
    if t == np.int32:
        return np.int32
    if t == np.int64:
        return np.int64
    raise GraphError(f"idtype {idtype!r} is not supported; use int32 or int64 (np.int32, np.int64, 'int32', 'int64')")


class GraphConversions:
    """Moving a graph to another context and changing its id type (a mixin of ``Graph``)."""

    def _clone(self, idtype=None, device=None):
        """The same structure, batch information, initializers and features (moved to ``device``)
        with another id type and/or context."""
        g = copy.copy(self)
        g._idtype = self._idtype if idtype is None else _idtype(idtype, None)
        g._ctx = self._ctx if device is None else device
        if g._idtype == np.int32 and max(self._nsrc, self._ndst, len(self._src)) >= 2 ** 31:
            raise GraphError("the graph's ids do not fit int32; keep idtype int64")
        g._cache = {}          # structures are rebuilt on first use, on the new context
        g._initializers = dict(self._initializers)
        g.edata = Frame(len(self._src), "edata", g._ctx)
        if self._two_sides:
            g.srcdata, g.dstdata = Frame(self._nsrc, "srcdata", g._ctx), Frame(self._ndst, "dstdata", g._ctx)
        else:
            g.srcdata = g.dstdata = Frame(self._nsrc, "ndata", g._ctx)
        frames = [(self.srcdata, g.srcdata), (self.edata, g.edata)]
        if self._two_sides:
            frames.append((self.dstdata, g.dstdata))
        for a, b in frames:
            for k, v in a.items():
                b[k] = v.as_in_context(g._ctx)
        return g

    def to(self, device, **kwargs):
        """DGL's ``g.to(ctx)``: the graph with its structure and features on ``device`` (an MXNet
        context); the graph itself when it is already there."""
        if not isinstance(device, mx.Context):
            raise GraphError(f"g.to({device!r}): pass an MXNet context such as mx.cpu() or mx.gpu(0)")
        return self if device == self._ctx else self._clone(device=device)

    def astype(self, idtype):
        """DGL's ``g.astype``: the graph with ids of type ``idtype`` (int32 or int64: NumPy or
        MXNet types or their names); the graph itself when it already has it."""
        t = _idtype(idtype, None)
        return self if t == self._idtype else self._clone(idtype=t)

    def int(self):
        """The graph with int32 ids (DGL's ``g.int()``)."""
        return self.astype(np.int32)

    def long(self):
        """The graph with int64 ids (DGL's ``g.long()``)."""
        return self.astype(np.int64)
