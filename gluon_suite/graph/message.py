"""Message passing on a graph or block: ``apply_edges`` and ``update_all`` with DGL's built-in
message/reduce functions or user-defined ones.

With the compiled kernels (``native``; float32 features on a CPU context), a built-in pair
copy_u, copy_e, u_op_e or e_op_u (op add, sub, mul; e_div_u excepted) with sum, mean, max or min
is one gSpMM operator that never builds an E x F message tensor, and built-in edge messages
(``apply_edges``, and messages a pair cannot fuse, reduced by gSpMM afterwards) are one gSDDMM
operator. Without them the Python kernels run: copy_u with sum/mean is MXNet's CSR product (or
the ``spmm_e`` operator beyond MXNet's size limit), u_mul_e with sum/mean the ``spmm_e`` operator
(edge values get gradients), copy_e with sum/mean a product with the (node x edge) incidence
matrix; max/min reductions and other messages build per-edge values. A user-defined reduce function sees nodes bucketed by in-degree, as in DGL,
so its mailbox is a dense (nodes, degree, ...) tensor. Autograd flows to node and edge features.
"""
import mxnet as mx
import numpy as np

from . import native
from .base import ALL, EdgeBatch, GraphError, NodeBatch, zeros
from .function import Message, Reduce
from .kernels import segment_max, segment_sum, spmm_e

# MXNet 1.9's operators take fewer than 2^31 elements by logical shape, sparse inputs included
_MX_LIMIT = 2 ** 31 - 1

_BINARY = {"add": mx.nd.broadcast_add, "sub": mx.nd.broadcast_sub, "mul": mx.nd.broadcast_mul,
           "div": mx.nd.broadcast_div}


def _align(a, b):
    """Pad the lower-rank side with trailing 1s so that (E, H) meets (E, H, F) head by head."""
    if a.ndim < b.ndim:
        a = a.reshape(a.shape + (1,) * (b.ndim - a.ndim))
    elif b.ndim < a.ndim:
        b = b.reshape(b.shape + (1,) * (a.ndim - b.ndim))
    return a, b


class MessagePassing:
    """``apply_edges`` and ``update_all`` for ``Graph`` and ``Block``: ``u`` reads ``srcdata``,
    ``v`` reads ``dstdata``, ``e`` reads ``edata``; results go to ``edata`` / ``dstdata``."""

    def _frame(self, target):
        return {"u": self.srcdata, "v": self.dstdata, "e": self.edata}[target]

    def _field(self, target, field):
        frame = self._frame(target)
        if field not in frame:
            raise GraphError(f"{frame.kind} has no feature {field!r} (has: {', '.join(frame) or 'none'}); "
                             f"set g.{frame.kind}[{field!r}] first")
        return frame[field]

    def _per_edge(self, target, field):
        x = self._field(target, field)
        if target == "u":
            return mx.nd.take(x, self._src_nd)
        if target == "v":
            return mx.nd.take(x, self._dst_nd)
        return x

    def _structure(self, ctx):
        """The graph's structure for the compiled kernels on ``ctx`` (built once per context)."""
        return self._topology().structure(ctx)

    def _native_messages(self, msg):
        """A built-in binary message as one gSDDMM operator, or None when the compiled kernels
        cannot take its operands."""
        a, b = self._field(*msg.lhs), self._field(*msg.rhs)
        if not native.usable(a, b):
            return None
        lt, op, rt = msg.op.split("_")
        return native.gsddmm(self._structure(a.context), op, a, b, lt, rt)

    def _native_reduce(self, msg, reduce_op):
        """A built-in (message, reduce) pair as one gSpMM operator, or None when the pair or its
        operands have no compiled form."""
        red = reduce_op
        if msg.op in ("copy_u", "copy_e"):
            x = self._field(*msg.lhs)
            if not native.usable(x):
                return None
            lhs, rhs = (x, None) if msg.op == "copy_u" else (None, x)
            return native.gspmm(self._structure(x.context), "copy_lhs" if lhs is not None else "copy_rhs", red,
                                lhs, rhs)
        lt, op, rt = msg.op.split("_")
        if {lt, rt} != {"u", "e"} or op not in ("add", "sub", "mul", "div") or (lt, op) == ("e", "div"):
            return None
        (tu, fu), (te, fe) = (msg.lhs, msg.rhs) if lt == "u" else (msg.rhs, msg.lhs)
        x, e = self._field(tu, fu), self._field(te, fe)
        if not native.usable(x, e):
            return None
        if (lt, op) == ("e", "sub"):     # e - u = -(u - e): max and min trade places
            flip = {"sum": "sum", "mean": "mean", "max": "min", "min": "max"}[red]
            return -native.gspmm(self._structure(x.context), "sub", flip, x, e)
        return native.gspmm(self._structure(x.context), op, red, x, e)

    def _message_shape(self, msg):
        """Feature shape (after the edge axis) of a built-in message, without computing it."""
        shapes = [self._field(*side).shape[1:] for side in (msg.lhs, msg.rhs) if side]
        if len(shapes) == 1:
            return shapes[0]
        a, b = shapes
        a, b = a + (1,) * (len(b) - len(a)), b + (1,) * (len(a) - len(b))
        shape = np.broadcast_shapes(a, b)
        return shape[:-1] + (1,) if msg.op.split("_")[1] == "dot" else shape

    def _messages(self, msg):
        """Per-edge values of a built-in message function, an (E, ...) tensor. Shapes broadcast as
        in DGL, except that the lower-rank side is padded with trailing 1s (see ``_align``)."""
        if msg.rhs is not None:
            out = self._native_messages(msg)
            if out is not None:
                return out
        a = self._per_edge(*msg.lhs)
        if msg.rhs is None:
            return a
        a, b = _align(a, self._per_edge(*msg.rhs))
        op = msg.op.split("_")[1]
        if op == "dot":
            return mx.nd.broadcast_mul(a, b).sum(axis=-1, keepdims=True)
        return _BINARY[op](a, b)

    def apply_edges(self, func, edges=ALL):
        """Compute per-edge features into ``edata``: a built-in message (``fn.u_add_v('el', 'er',
        'e')``, ``fn.u_dot_v``, ...) or a function of an ``EdgeBatch`` returning a dict."""
        if not (isinstance(edges, str) and edges == ALL):
            raise GraphError("apply_edges runs on all edges here; build a subgraph to restrict it")
        if isinstance(func, Message):
            if self.num_edges() == 0:
                self.edata[func.out] = zeros((0,) + self._message_shape(func), np.float32, self._ctx)
            else:
                self.edata[func.out] = self._messages(func)
            return
        if not callable(func):
            raise GraphError("apply_edges takes a built-in message function (gluon_suite.graph.function) or a callable")
        for k, v in func(EdgeBatch(self)).items():
            self.edata[k] = v

    def update_all(self, message_func, reduce_func, apply_node_func=None):
        """Send messages along every edge, reduce them at each destination into ``dstdata`` and
        optionally apply ``apply_node_func`` to the destination nodes. Built-in reducers give 0
        to nodes without incoming edges (DGL's convention)."""
        named = isinstance(message_func, Message) and isinstance(reduce_func, Reduce)
        if named and message_func.out != reduce_func.msg:
            raise GraphError(f"the reduce reads message {reduce_func.msg!r} but the message function writes "
                             f"{message_func.out!r}; use the same name in both")
        if not isinstance(reduce_func, Reduce):
            if not callable(reduce_func):
                raise GraphError("update_all takes a built-in reduce function (fn.sum, fn.mean, fn.max, fn.min) "
                                 "or a callable of a NodeBatch")
            self._reduce_udf(message_func, reduce_func)
        else:
            self.dstdata[reduce_func.out] = self._reduce_builtin(message_func, reduce_func)
        if apply_node_func is not None:
            for k, v in apply_node_func(NodeBatch(self, np.arange(self._ndst))).items():
                self.dstdata[k] = v

    def _all_messages(self, message_func):
        """Every message of a built-in or user-defined message function, as a dict."""
        if isinstance(message_func, Message):
            return {message_func.out: self._messages(message_func)}
        if not callable(message_func):
            raise GraphError("update_all takes a built-in message function or a callable of an EdgeBatch")
        return message_func(EdgeBatch(self))

    def _reduce_builtin(self, message_func, reduce_func):
        if reduce_func.op == "prod":
            return self._reduce_prod(message_func, reduce_func)
        if reduce_func.op not in ("sum", "mean", "max", "min"):
            raise GraphError(f"unknown reducer {reduce_func.op!r}; use fn.sum, fn.mean, fn.max, fn.min or fn.prod")
        if self.num_edges() == 0:
            shape = self._message_shape(message_func) if isinstance(message_func, Message) else None
            if shape is None:
                raise GraphError("update_all on a graph without edges needs a built-in message function")
            return mx.nd.zeros((self._ndst,) + shape, ctx=self._ctx)
        out = None
        if isinstance(message_func, Message):
            out = self._native_reduce(message_func, reduce_func.op)
            if out is not None:
                return out          # the compiled mean divides by the in-degree itself
        if out is None and isinstance(message_func, Message) and reduce_func.op in ("sum", "mean"):
            out = self._fused(message_func)
        if out is None:
            msgs = self._all_messages(message_func)
            if reduce_func.msg not in msgs:
                raise GraphError(f"the message function did not produce {reduce_func.msg!r} "
                                 f"(it produced: {', '.join(msgs) or 'nothing'})")
            m = msgs[reduce_func.msg]
            if native.usable(m):
                return native.gspmm(self._structure(m.context), "copy_rhs", reduce_func.op, None, m)
            if reduce_func.op == "max":
                out = segment_max(self._topo(), m)
            elif reduce_func.op == "min":
                out = -segment_max(self._topo(), -m)
            else:
                out = self._edge_sum(m)
        if reduce_func.op == "mean":
            deg = self._degree_power("in", -1.0, out.context).reshape((-1,) + (1,) * (out.ndim - 1))
            out = mx.nd.broadcast_mul(out, deg)
        return out

    def _reduce_udf(self, message_func, reduce_func):
        """DGL's degree bucketing: nodes of equal in-degree d get one (nodes, d, ...) mailbox; the
        results are put back in node order, zeros for nodes without incoming edges."""
        msgs = self._all_messages(message_func)
        t = self._topology()
        deg = np.diff(t.indptr)
        parts, order = {}, []
        for d in np.unique(deg[deg > 0]):
            nodes = np.flatnonzero(deg == d)
            eids = self._ids(t.order[(t.indptr[nodes][:, None] + np.arange(d)).ravel()])
            mailbox = {k: mx.nd.take(v, eids).reshape((len(nodes), int(d)) + v.shape[1:]) for k, v in msgs.items()}
            for k, v in reduce_func(NodeBatch(self, nodes, mailbox)).items():
                parts.setdefault(k, []).append(v)
            order.append(nodes)
        if not order:
            return
        order = np.concatenate(order)
        pos = np.full(self._ndst, len(order), np.int64)         # nodes without messages -> a zero row
        pos[order] = np.arange(len(order))
        idx = self._ids(pos)
        for k, vs in parts.items():
            stacked = mx.nd.concat(*vs, mx.nd.zeros((1,) + vs[0].shape[1:], dtype=vs[0].dtype, ctx=vs[0].context),
                                   dim=0)
            self.dstdata[k] = mx.nd.take(stacked, idx)

    def _reduce_prod(self, message_func, reduce_func):
        """Element-wise product of the messages at each destination (0 for no incoming edge, as
        every built-in reducer), through the mailbox path: one (nodes, degree, ...) product per
        in-degree."""
        if self.num_edges() == 0:
            shape = self._message_shape(message_func) if isinstance(message_func, Message) else None
            if shape is None:
                raise GraphError("update_all on a graph without edges needs a built-in message function")
            return mx.nd.zeros((self._ndst,) + shape, ctx=self._ctx)
        name = reduce_func.msg
        with self.local_scope():
            self._reduce_udf(message_func, lambda nodes: {"_prod": nodes.mailbox[name].prod(axis=1)})
            return self.dstdata["_prod"]

    def _edge_sum(self, m):
        """Sum of per-edge values at each destination: a product with the (node x edge) incidence
        matrix, or a segment sum when that matrix is too large for MXNet."""
        if native.usable(m):
            return native.gspmm(self._structure(m.context), "copy_rhs", "sum", None, m)
        if self._ndst * max(self.num_edges(), 1) > _MX_LIMIT:
            return segment_sum(self._topo(), m)
        if m.ndim == 2:
            return mx.nd.sparse.dot(self._incidence(), m)
        flat = m.reshape((m.shape[0], -1))
        return mx.nd.sparse.dot(self._incidence(), flat).reshape((self._ndst,) + m.shape[1:])

    def _fused(self, msg):
        """Sum of messages as one sparse product, or None when the pair has no fused form."""
        if msg.op == "copy_u":
            x = self._field(*msg.lhs)
            if self._nsrc * self._ndst > _MX_LIMIT:  # beyond MXNet's limit: the SciPy SpMM operator
                ones = mx.nd.ones((self.num_edges(), 1), ctx=x.context)
                return spmm_e(self._topo(), x.reshape((x.shape[0], 1, -1)), ones).reshape(
                    (self._ndst,) + x.shape[1:])
            if x.ndim == 2:  # no reshape: its backward would see the sparse product's row_sparse grad
                return mx.nd.sparse.dot(self._adj_csr(), x)
            return mx.nd.sparse.dot(self._adj_csr(), x.reshape((x.shape[0], -1))).reshape(
                (self._ndst,) + x.shape[1:])
        if msg.op == "copy_e":
            return self._edge_sum(self._field(*msg.lhs))
        if msg.op in ("u_mul_e", "e_mul_u"):
            (tu, fu), (te, fe) = (msg.lhs, msg.rhs) if msg.op == "u_mul_e" else (msg.rhs, msg.lhs)
            x, e = self._field(tu, fu), self._field(te, fe)
            # x: (N, [H,] F...), e: (E,) | (E, 1) | (E, H) | (E, H, 1): one SpMM per head
            E = e.shape[0]
            heads = int(np.prod(e.shape[1:])) if e.ndim > 1 else 1
            if (x.ndim >= 2 and heads > 1 and x.shape[1] != heads) or (heads > 1 and x.ndim < 2):
                return None
            xs = x.reshape((x.shape[0], heads, -1))
            out = spmm_e(self._topo(), xs, e.reshape((E, heads)))
            return out.reshape((self._ndst,) + x.shape[1:])
        return None
