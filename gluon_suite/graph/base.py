"""What every graph module shares: the error type (``GraphError``, also named ``DGLError`` as in
DGL), DGL's sentinel and id-field names, feature frames, and the batches that user-defined
message, edge and reduce functions see."""
from collections import namedtuple

import mxnet as mx
import numpy as np

from ..utils.errors import UserError

ALL = "__ALL__"      # DGL's "every node / every edge" sentinel
NID = "_ID"          # srcdata/dstdata key of a block's (or sampled graph's) original node ids
EID = "_ID"          # edata key of the original edge ids


class GraphError(UserError):
    """A graph was built or used with inconsistent sizes or indices, or a graph file could not be
    read. Every error the graph package raises about its input is one (``DGLError`` is the same
    class, so DGL code's ``except dgl.DGLError`` catches it); it is a ``UserError`` and so a
    ``ValueError``."""


DGLError = GraphError


_WHAT = {"ndata": "nodes", "srcdata": "source nodes", "dstdata": "destination nodes", "edata": "edges"}


Scheme = namedtuple("Scheme", ["shape", "dtype"])
Scheme.__doc__ = "A feature's per-row shape and dtype (DGL's ``node_attr_schemes()`` values)."


class Frame(dict):
    """A feature dictionary whose values must have ``n`` rows (one per node or edge) and live on
    the graph's context ``ctx``. Plain lists and NumPy arrays become NDArrays there; an NDArray on
    another context is an error (as in DGL: move the graph with ``g.to(ctx)`` first). ``update``
    and ``setdefault`` check like item assignment."""

    def __init__(self, n, kind, ctx=None):
        super().__init__()
        self.n, self.kind, self.ctx = n, kind, ctx or mx.cpu()

    def __setitem__(self, key, value):
        if not isinstance(value, mx.nd.NDArray):
            value = mx.nd.array(value, ctx=self.ctx)
        if value.shape[0] != self.n:
            raise GraphError(f"{self.kind}[{key!r}] has {value.shape[0]} rows but the graph has "
                             f"{self.n} {_WHAT[self.kind]}; give one row per {_WHAT[self.kind][:-1]}")
        if value.context != self.ctx:
            raise GraphError(f"{self.kind}[{key!r}] is on {value.context} but the graph is on {self.ctx}; "
                             f"move the graph first (g = g.to({value.context})) or the feature "
                             f"(x.as_in_context({self.ctx}))")
        super().__setitem__(key, value)

    def update(self, *args, **kwargs):
        """Set every item of a mapping (checked like ``frame[key] = value``)."""
        for k, v in dict(*args, **kwargs).items():
            self[k] = v

    def setdefault(self, key, default=None):
        """``frame[key]``, after setting it to ``default`` when absent."""
        if key not in self:
            self[key] = default
        return self[key]

    def schemes(self):
        """``{name: Scheme(shape of one row, dtype)}`` for every feature."""
        return {k: Scheme(tuple(v.shape[1:]), v.dtype) for k, v in self.items()}

    def _restore(self, saved):
        """Back to the items in ``saved`` (used by ``local_scope``; values are not re-checked)."""
        dict.clear(self)
        dict.update(self, saved)

    def _copy(self):
        """A new frame with the same items (the tensors are shared, not copied)."""
        out = Frame(self.n, self.kind, self.ctx)
        dict.update(out, self)
        return out


def zero_initializer(shape, dtype, ctx, id_range):
    """DGL's default feature initializer: zeros of ``shape`` (``id_range`` is the slice of new ids)."""
    return zeros(shape, dtype, ctx)


def zeros(shape, dtype, ctx):
    """``mx.nd.zeros``, also for shapes with a 0 (MXNet 1.9's ``zeros`` reads a 0 as unknown)."""
    if 0 in tuple(shape):
        return mx.nd.array(np.zeros(shape, np.dtype(dtype)), dtype=dtype, ctx=ctx)
    return mx.nd.zeros(shape, dtype=dtype, ctx=ctx)


def concat_rows(parts):
    """Row-wise concatenation that skips empty parts (MXNet reads a 0 in a shape as unknown)."""
    full = [p for p in parts if p.shape[0]]
    if not full:
        return parts[0]
    return full[0] if len(full) == 1 else mx.nd.concat(*full, dim=0)


def slice_rows(v, a, b):
    """Rows a..b-1 of ``v`` (an empty slice too)."""
    if b > a:
        return v[a:b]
    return zeros((0,) + v.shape[1:], v.dtype, v.context)


def take_rows(x, idx, ctx_ids):
    """Rows ``idx`` (host ids) of ``x``; ``ctx_ids(idx)`` makes the index NDArray. No index gives
    an empty (0, ...) tensor, which ``mx.nd.take`` cannot make."""
    if len(idx) == 0:
        return zeros((0,) + x.shape[1:], x.dtype, x.context)
    return mx.nd.take(x, ctx_ids(idx))


class EdgeBatch:
    """What a user-defined message or edge function sees, as in DGL: ``src``, ``dst`` and ``data``
    dicts of per-edge rows (source features, destination features, edge features)."""

    def __init__(self, g):
        self._g = g
        self.data = g.edata

    @property
    def src(self):
        """Source-node features, one row per edge."""
        return {k: mx.nd.take(v, self._g._src_nd) for k, v in self._g.srcdata.items()}

    @property
    def dst(self):
        """Destination-node features, one row per edge."""
        return {k: mx.nd.take(v, self._g._dst_nd) for k, v in self._g.dstdata.items()}

    def batch_size(self):
        """Number of edges in the batch."""
        return self._g.num_edges()


class NodeBatch:
    """What a user-defined reduce or apply-node function sees, as in DGL: ``data`` (the nodes'
    features), ``mailbox`` (messages received, shaped (nodes, in-degree, ...): all nodes of one
    batch have the same in-degree) and ``nodes()`` (their ids)."""

    def __init__(self, g, nodes, mailbox=None):
        self._g, self._nodes, self.mailbox = g, np.asarray(nodes, np.int64), mailbox or {}

    @property
    def data(self):
        """Destination-node features of these nodes."""
        idx = self._g._ids(self._nodes)
        return {k: mx.nd.take(v, idx) for k, v in self._g.dstdata.items()}

    def nodes(self):
        """The node ids (in the graph's id type, on its context; for ``pull``/``send_and_recv``
        the ids in the graph they run on)."""
        parent = getattr(self._g, "_parent_dst", None)
        return self._g._ids(self._nodes if parent is None else parent[self._nodes])

    def batch_size(self):
        """Number of nodes in the batch."""
        return len(self._nodes)


def as_ids(a, what):
    """``a`` (list, NumPy array, NDArray) as a 1-D int64 NumPy array; non-integers are an error
    naming ``what``."""
    arr = np.asarray(a.asnumpy() if isinstance(a, mx.nd.NDArray) else a).reshape(-1)
    if len(arr) and not np.issubdtype(arr.dtype, np.integer):
        if not np.issubdtype(arr.dtype, np.number) or not np.all(np.mod(arr, 1) == 0):
            raise GraphError(f"{what} holds non-integer node ids; pass integer ids")
    return arr.astype(np.int64)
