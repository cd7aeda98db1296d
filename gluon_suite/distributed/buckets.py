"""Buckets: trainable parameters laid out in flat, contiguous vectors, so that a step costs one
compression and one collective per bucket instead of one per tensor.

At bind time ``layout_buckets`` walks the trainable parameters in *reverse* network order (the
order in which backward produces their gradients, as Horovod's fusion buffer and PyTorch DDP's
reducer do), groups them by dtype and context (and puts tensors under the compressors'
``min_size`` apart, sent dense), and closes a bucket once it holds ``bucket_mb`` megabytes
(``bucket_mb=0``: one bucket per tensor, the per-tensor behaviour). Each bucket owns one flat
gradient NDArray; every parameter's gradient becomes a view of its slice
(``autograd.mark_variables``), so backward writes straight into the bucket and the optimizer still
sees per-parameter gradients. Weights are *not* moved into a flat buffer: oneDNN re-lays weights
out in place, which a shared buffer does not survive; where an algorithm needs them flat they are
copied into a persistent work vector of the bucket and back, one copy per member (MXNet's CPU
``concat`` and ``split`` take 9 and 4 ns per element against 0.3 ns for a copy: 238 and 93 ms for
ResNet-50's 25.6M parameters against 14 ms, measured), or, on a CPU float32 bucket with the
compiled kernels loaded (``native.members_gather``/``members_scatter``), one call per bucket that
copies every member: the same bytes, without an operator call per tensor.

Several contexts per worker (GluonCV's ``split_and_load``: one parameter copy per context): a
bucket lives on its members' *first* context (the primary copy, which the algorithm and the
optimizer work on); the gradients of every other context are bucketed the same way on their own
context (``replica_grads``), summed into the primary gradient with one copy and one add per bucket
and context (``sum_replica_grads``), and the primary weights are copied back to the other copies
with one gather, copy and split per bucket and context (``broadcast_weights``).
"""
import mxnet as mx
import numpy as np

from . import native
from .comm import write_plain

DEFAULT_BUCKET_MB = 25.0


class Bucket:
    """One flat vector holding the gradients of ``members`` (``[(index, Parameter)]`` in bucket
    order), with the offsets of each member's slice. ``key`` (the trainer index of the first
    member) keys the bucket's shared randomness; ``position`` is its place in the bucket order;
    ``small`` marks a bucket of tensors under the compressors' ``min_size`` (sent dense)."""

    def __init__(self, position, members, small=False):
        self.position = position
        self.small = bool(small)
        self.members = list(members)
        self.key = self.members[0][0]
        first = self.members[0][1]
        self.dtype = np.dtype(first.dtype)
        self.contexts = list(first.list_ctx())
        self.context = self.contexts[0]
        self.shapes = [tuple(p.shape) for _, p in self.members]
        self.sizes = [int(np.prod(s)) for s in self.shapes]
        self.offsets = [int(o) for o in np.cumsum([0] + self.sizes[:-1])]
        self.size = int(sum(self.sizes))
        self.indices = [i for i, _ in self.members]
        self.grad = None
        self.replica_grads = []   # flat gradients of the other contexts, one per context
        self._buffers = {}
        self._pieces_of = []      # [(flat, its member slices)], the most recent few
        # the members' copies to and from a flat vector as one compiled call (float32, no 0-d member)
        self._one_call = self.dtype == np.float32 and all(len(sh) for sh in self.shapes)
        self._shapes_text = native.shapes_text(self.shapes) if self._one_call else ""
        self._in_place = self._one_call and all(len(sh) < 3 for sh in self.shapes)
        self._empty = [j for j, n in enumerate(self.sizes) if not n]   # members with no elements

    @property
    def nbytes(self):
        """Bytes of the bucket's flat vector."""
        return self.size * self.dtype.itemsize

    def zeros(self, ctx=None):
        """A new zero vector of the bucket's size and dtype on ``ctx`` (default: its context)."""
        return mx.nd.zeros((self.size,), dtype=self.dtype, ctx=ctx or self.context)

    def views(self, flat):
        """Per-member views (sharing memory) of a flat vector of this bucket."""
        return [flat[o:o + n].reshape(s) for o, n, s in zip(self.offsets, self.sizes, self.shapes)]

    def shaped(self, flat):
        """The form a compressor sees: the tensor's own shape for a one-tensor bucket (so that
        ``bucket_mb=0`` is exactly the per-tensor behaviour), else the flat vector."""
        return flat.reshape(self.shapes[0]) if len(self.members) == 1 else flat

    def gather(self, arrays):
        """A new flat vector: the members' ``arrays`` concatenated (one copy per member)."""
        out = self.zeros()
        for a, piece in zip(arrays, self.pieces(out)):
            a = a.reshape(piece.shape)
            (a if a.dtype == out.dtype else a.astype(out.dtype)).copyto(piece)
        return out

    def pieces(self, flat):
        """The members' slices of the flat vector ``flat`` (views sharing its memory, in the
        members' shapes), kept for the last few vectors (the work vectors and residuals come back
        every step)."""
        for f, got in self._pieces_of:
            if f is flat:
                return got
        got = [flat[o:o + n].reshape(s) for o, n, s in zip(self.offsets, self.sizes, self.shapes)]
        self._pieces_of = [(flat, got)] + self._pieces_of[:7]
        return got

    def buffer(self, name, ctx=None):
        """A persistent work vector of the bucket's size (no allocation, and no page faults of a
        fresh 100 MB array, on every step), on ``ctx`` (default: the bucket's context)."""
        key = (name, str(ctx or self.context))
        buf = self._buffers.get(key)
        if buf is None:
            buf = self._buffers[key] = self.zeros(ctx)
        return buf

    def weights(self, copy=0):
        """The members' weight arrays themselves, not views: after an inference forward oneDNN
        may hold a weight in a blocked layout, which a view (a reshape) of it cannot be read
        through ("Check failed: !is_view", depending on when the engine runs the re-layout);
        ``copy``: which context's copy (0: the primary)."""
        return [p._data[copy] for _, p in self.members]

    def sum_replica_grads(self):
        """Primary gradient += the gradients of the other contexts (one copy and one add per
        context): what the optimizer and the algorithm see is the sum over the worker's contexts,
        as ``gluon.Trainer`` with a local kvstore gives."""
        for g in self.replica_grads:
            self.grad += g.copyto(self.buffer("replica"))

    def broadcast_weights(self):
        """Copy the primary weights to every other context's copy (one copy per member and
        context), so that all copies are identical after a step."""
        for j in range(1, len(self.contexts)):
            for src, dst in zip(self.weights(0), self.weights(j)):
                src.copyto(dst)

    def gather_weights(self, buffer=None):
        """The members' weights concatenated (one copy per member), into the work vector
        ``buffer`` (see ``buffer``) or a new one."""
        out = self.zeros() if buffer is None else self.buffer(buffer)
        if self._one_call and native.usable(out):
            native.members_gather(self._nonempty(self.weights()), out)
            return out
        for w, piece in zip(self.weights(), self.pieces(out)):
            write_plain(w, piece)
        return out

    def subtract_weights(self, u, e, x=None):
        """CSER's bookkeeping after the optimizer: u <- u - w (w: the members' weights in the flat
        order), then e <- e - u, in one pass that reads the members where they are (``x``: a flat
        vector that also receives w, in the same pass); True when done, False where the compiled
        path does not apply (the caller gathers)."""
        if not (self._one_call and native.usable(u, e, x)):
            return False
        native.cser_delta(u, e, self._nonempty(self.weights()), x)
        return True

    @property
    def writable_in_place(self):
        """Whether the members' weights can be added to in place (``add_blocks``): none has three
        or more axes. A convolution's weight may be held by oneDNN in a blocked layout after an
        inference forward (1-D and 2-D convolutions do so every time; dense, embedding, batch-norm
        and recurrent weights never), and an operator can only overwrite such an array whole."""
        return self._in_place

    def add_blocks(self, values, blocks, alpha=1.0):
        """The members' weights += alpha * ``values`` along GRBS's slab rows ``blocks`` (in the
        flat order), in the weights' own arrays: no gather or scatter of the whole bucket (only
        where ``writable_in_place``)."""
        native.members_block_add(self._nonempty(self.weights()), values, blocks, alpha)

    def _nonempty(self, arrays):
        """``arrays`` (one per member) without the empty members'."""
        return [a for j, a in enumerate(arrays) if j not in self._empty] if self._empty else arrays

    def scatter(self, flat, arrays):
        """Write the pieces of the flat vector ``flat`` into the members' ``arrays`` (as
        ``weights()`` gives; one element-wise copy per member, which leaves them in the plain
        layout; on the compiled path one call for all members)."""
        if self._one_call and native.usable(flat):
            native.members_scatter(flat, self._nonempty(arrays), self._shapes_text)
            return
        for piece, a in zip(self.pieces(flat), arrays):
            write_plain(piece, a)

    def bind_gradients(self):
        """Make every member's gradient a view of this bucket's flat gradient vector, on each of
        its contexts (the primary's in ``grad``, the others' in ``replica_grads``), current
        gradient values and the 'fresh gradient' flag kept."""
        flats = [self.zeros(ctx) for ctx in self.contexts]
        for copy, flat in enumerate(flats):
            for (_, p), view in zip(self.members, self.views(flat)):
                data = p._data[copy]
                fresh = data._fresh_grad
                view[:] = p._grad[copy]
                mx.autograd.mark_variables([data], [view], grad_reqs=p.grad_req)
                p._grad[copy] = view
                data._fresh_grad = fresh
        self.grad, self.replica_grads = flats[0], flats[1:]


def layout_buckets(params, bucket_mb=DEFAULT_BUCKET_MB, min_size=0, network_position=None):
    """Lay ``[(index, Parameter)]`` out in buckets: reverse network order (``network_position[i]``
    is parameter i's place in the network; default: the given order), one dtype and list of
    contexts per bucket, tensors under ``min_size`` elements in buckets of their own (sent dense),
    a bucket closed once it reaches ``bucket_mb`` MB (0: one bucket per tensor)."""
    if not float(bucket_mb) >= 0:
        raise ValueError(f"bucket_mb must be >= 0 (0: one bucket per tensor), got {bucket_mb}")
    params = list(params)
    if network_position is not None:
        params.sort(key=lambda ip: network_position[ip[0]])
    limit = float(bucket_mb) * 1e6
    open_, done = {}, []
    for i, p in reversed(params):
        small = int(np.prod(p.shape)) < min_size
        group = (np.dtype(p.dtype).str, str(p.list_ctx()), small)
        cur = open_.setdefault(group, [[], 0])
        cur[0].append((i, p))
        cur[1] += int(np.prod(p.shape)) * np.dtype(p.dtype).itemsize
        if limit == 0 or cur[1] >= limit:
            done.append((cur[0], small))
            del open_[group]
    done.extend((m, g[2]) for g, (m, _) in open_.items())
    # buckets in the order backward completes them: by their last member's place in the
    # reversed order, so collectives can be issued as backward finishes them
    rank = {i: r for r, (i, _) in enumerate(reversed(params))}
    done.sort(key=lambda ms: rank[ms[0][-1][0]])
    return [Bucket(k, m, small) for k, (m, small) in enumerate(done)]


def bucket_layout_json(buckets):
    """The layout as JSON-ready data: per bucket, the trainer indices of its members."""
    return [b.indices for b in buckets]


def explode(flat, layout, shapes):
    """Split saved flat bucket vectors back into per-parameter arrays: ``flat[k]`` holds bucket k
    of ``layout`` (lists of parameter indices), ``shapes[i]`` is parameter i's shape."""
    out = {}
    for k, members in enumerate(layout):
        if k not in flat:
            continue
        off = 0
        for i in members:
            n = int(np.prod(shapes[i])) if shapes[i] else 1
            out[i] = flat[k][off:off + n].reshape(tuple(shapes[i]) if shapes[i] else (1,))
            off += n
    return out
