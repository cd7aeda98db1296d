"""Message passing on a ``HeteroGraph``: ``apply_edges``, ``update_all``, ``pull`` and
``send_and_recv`` on one relation (``etype=``), ``multi_update_all`` over several with a
cross-type reducer, and ``update_all`` over every relation with built-in functions.

Each relation runs on its own relation graph, so a built-in pair is one compiled gSpMM (or the
Python kernels where those do not apply), exactly as on a homogeneous graph; the results for one
destination type are then merged by the cross-type reducer (DGL's order: relations in
``canonical_etypes`` order, which is what ``'stack'`` stacks along axis 1).

Nodes that a relation does not reach get 0 from it under the built-in reducers, as on any
graph, and that 0 takes part in a cross-type ``sum``, ``mean`` or ``stack``. With a ``max`` or
``min`` reducer, though, a relation leaves out of a cross-type ``max`` or ``min`` the nodes it
does not reach (a node none reaches gets 0): so ``update_all(copy_u, max)`` over several
relations is the max over every incoming edge of every relation, as in DGL."""
import mxnet as mx
import numpy as np

from .base import ALL, GraphError, NodeBatch
from .function import Message, Reduce

__all__ = ["HeteroMessagePassing", "cross_reduce", "CROSS_REDUCERS"]

CROSS_REDUCERS = ("sum", "mean", "max", "min", "stack")


def cross_reduce(tensors, reducer, reached=None):
    """Merge per-relation results for one node type: ``reducer`` one of ``CROSS_REDUCERS`` (a
    ``(N, ...)`` result; ``'stack'`` gives ``(N, R, ...)``) or a callable of the list.
    ``reached``, for ``max``/``min``, holds per tensor a host boolean (N,) array of the nodes that
    tensor's relation reaches (None: all), and the others are left out as described in the
    module docstring."""
    if callable(reducer):
        return reducer(list(tensors))
    if reducer not in CROSS_REDUCERS:
        raise GraphError(f"cross-type reducer {reducer!r}: choose one of {', '.join(CROSS_REDUCERS)} or a callable")
    if reducer == "stack":
        return mx.nd.stack(*tensors, axis=1)
    if len(tensors) == 1:
        return tensors[0]
    if reducer == "sum":
        return mx.nd.add_n(*tensors)
    if reducer == "mean":
        return mx.nd.add_n(*tensors) / len(tensors)
    masks = reached or [None] * len(tensors)
    if all(m is None or m.all() for m in masks):
        return getattr(mx.nd.stack(*tensors, axis=0), reducer)(axis=0)
    fill = float("-inf") if reducer == "max" else float("inf")
    parts = []
    for t, m in zip(tensors, masks):
        if m is not None and not m.all():
            t = mx.nd.where(mx.nd.array(m, ctx=t.context, dtype=t.dtype), t, mx.nd.full(t.shape, fill, t.context,
                                                                                         dtype=t.dtype))
        parts.append(t)
    out = getattr(mx.nd.stack(*parts, axis=0), reducer)(axis=0)
    anyone = np.any([np.ones(len(out), bool) if m is None else m for m in masks], axis=0)
    if anyone.all():
        return out
    return mx.nd.where(mx.nd.array(anyone, ctx=out.context, dtype=out.dtype), out, mx.nd.zeros_like(out))


def _fields(msg):
    """The (target, field) operands a built-in message reads."""
    return [side for side in (msg.lhs, msg.rhs) if side]


def _has_operands(rel, msg):
    frames = {"u": rel.srcdata, "v": rel.dstdata, "e": rel.edata}
    return all(field in frames[target] for target, field in _fields(msg))


def _relation_pass(rel, mfunc, rfunc, afunc):
    """Message passing on one relation graph without touching its frames: ``{name: tensor}`` of
    the destination features the reduce (then ``afunc``, whose output replaces it, as in DGL)
    writes."""
    with rel.local_scope():
        before = dict(rel.dstdata)
        rel.update_all(mfunc, rfunc)
        out = {k: v for k, v in rel.dstdata.items() if before.get(k) is not v}
        if afunc is not None:
            out = dict(afunc(NodeBatch(rel, np.arange(rel.num_dst_nodes()))))
    return out


class HeteroMessagePassing:
    """Message passing of ``HeteroGraph`` (a mixin; see the module docstring)."""

    def _single(self, etype):
        return etype is not None or len(self._canonical) == 1

    def apply_edges(self, func, edges=ALL, etype=None):
        """Per-edge features of relation ``etype`` (see ``Graph.apply_edges``). Without
        ``etype`` on a graph of several relations, a built-in message runs on every relation
        that has its operands."""
        if self._single(etype):
            return self._rel(etype).apply_edges(func, edges)
        if not isinstance(func, Message):
            raise GraphError("apply_edges with a user-defined function on a graph of several relations: "
                             "pass etype=... (one relation at a time)")
        rels = [self._rels[c] for c in self._canonical if _has_operands(self._rels[c], func)]
        if not rels:
            raise GraphError(f"apply_edges: no relation has the features {_fields(func)} this message reads")
        for rel in rels:
            rel.apply_edges(func, edges)

    def update_all(self, message_func, reduce_func, apply_node_func=None, etype=None):
        """Message passing along relation ``etype`` into its destination type's features (see
        ``Graph.update_all``). Without ``etype`` on a graph of several relations: built-in
        functions only, along every relation whose source has the message's features, merged
        per destination type with the reducer itself as the cross-type reducer (``sum``,
        ``max`` or ``min``; ``mean`` needs ``multi_update_all``, as in DGL)."""
        if self._single(etype):
            return self._rel(etype).update_all(message_func, reduce_func, apply_node_func)
        if not (isinstance(message_func, Message) and isinstance(reduce_func, Reduce)):
            raise GraphError("update_all over several relations takes built-in functions only; use "
                             "multi_update_all, or pass etype=...")
        if reduce_func.op not in ("sum", "max", "min"):
            raise GraphError(f"update_all over several relations with fn.{reduce_func.op}: the reducer is also the "
                             "cross-type reducer, so use fn.sum, fn.max or fn.min, or multi_update_all")
        chosen = {c: (message_func, reduce_func) for c in self._canonical
                  if _has_operands(self._rels[c], message_func)}
        if not chosen:
            raise GraphError(f"update_all: no relation has the features {_fields(message_func)} this message reads")
        self.multi_update_all(chosen, reduce_func.op, apply_node_func)

    def multi_update_all(self, etype_dict, cross_reducer, apply_node_func=None):
        """DGL's ``multi_update_all``: for each ``{etype: (message_func, reduce_func[,
        apply_node_func])}`` entry, message passing along that relation; then, per destination
        type, the results merged by ``cross_reducer`` (``'sum'``, ``'min'``, ``'max'``,
        ``'mean'``, ``'stack'`` or a callable of the list of tensors, in ``canonical_etypes``
        order) into its features, and ``apply_node_func`` on that type's nodes."""
        if not (callable(cross_reducer) or cross_reducer in CROSS_REDUCERS):
            raise GraphError(f"multi_update_all: cross_reducer {cross_reducer!r} must be one of "
                             f"{', '.join(CROSS_REDUCERS)} or a callable")
        results = {}
        for key, args in etype_dict.items():
            c = self.to_canonical_etype(key)
            if not isinstance(args, (tuple, list)) or len(args) not in (2, 3):
                raise GraphError(f"multi_update_all: the value for {key!r} must be (message_func, reduce_func"
                                 "[, apply_node_func])")
            mfunc, rfunc, afunc = (tuple(args) + (None,))[:3]
            rel = self._rels[c]
            out = _relation_pass(rel, mfunc, rfunc, afunc)
            extreme = isinstance(rfunc, Reduce) and rfunc.op in ("max", "min") and afunc is None
            reached = rel._degrees("in") > 0 if extreme else None
            results.setdefault(c[2], []).append((self._canonical.index(c), out, reached))
        for dtype, items in results.items():
            items.sort(key=lambda item: item[0])
            frame = self._node_frames[dtype]
            for name in dict.fromkeys(k for _, out, _ in items for k in out):
                have = [(out[name], reached) for _, out, reached in items if name in out]
                frame[name] = cross_reduce([t for t, _ in have], cross_reducer, [r for _, r in have])
            if apply_node_func is not None:
                rel = self._rels[self._canonical[items[0][0]]]
                for k, v in apply_node_func(NodeBatch(rel, np.arange(self._num_nodes[dtype]))).items():
                    frame[k] = v

    def pull(self, v, message_func, reduce_func, apply_node_func=None, etype=None):
        """``pull`` along relation ``etype`` (see ``Graph.pull``)."""
        self._rel(etype).pull(v, message_func, reduce_func, apply_node_func)

    def send_and_recv(self, edges, message_func, reduce_func, apply_node_func=None, etype=None):
        """``send_and_recv`` along relation ``etype`` (see ``Graph.send_and_recv``)."""
        self._rel(etype).send_and_recv(edges, message_func, reduce_func, apply_node_func)
