"""Gradient compressors: stateful objects that turn a tensor into a small payload and back.

A compressor ``C`` maps a tensor ``v`` to ``C(v)``, the part of ``v`` that is communicated; the
rest, ``v - C(v)``, stays on the worker (in an error-feedback or CSER residual). ``compress``
returns a ``Payload``: the NDArrays that go on the wire and the knowledge of how to add them back
into a dense tensor. Two families:

- *summable* payloads (``none``, ``fp16``, ``grbs``, ``randomk``): every worker picks the same
  coordinates, so the payloads of all workers can be averaged with a plain allreduce;
- *gathered* payloads (``topk``, ``sign``): each worker picks its own coordinates or scale, so the
  payloads are exchanged with allgather and decompressed one by one.

Synchronised randomness (GRBS, random-k) never touches the global ``random``/``np.random`` state:
the choice for tensor ``key`` at step ``t`` comes from a counter-based generator seeded with
``(seed, t, key)``, identical on every worker whatever data augmentation did to the global RNGs,
and with no generator state to save or to desynchronise.

Options shared by all compressors: ``min_size`` (tensors with fewer elements are sent dense) and
``warmup_steps`` (the first N steps are sent dense).

The trainer applies a compressor to a *bucket* (``buckets.py``): the concatenation of many
parameters as one flat vector (or the tensor itself in a one-tensor bucket), with the bucket's
layout (member shapes, offsets and parameter indices) at hand. A compressor whose published
definition is per tensor keeps that structure inside the bucket: GRBS (``structure='tensor'``, the
default) lets each member take part with its own probability and pick its own block, exactly as
with one bucket per tensor, and gathers the selected blocks of all members into the bucket's one
payload (one collective per bucket). The others are defined on the bucket's vector: top-k keeps
the k largest magnitudes of the whole bucket, sign has one scale (mean |v|) per bucket, random-k's
strata span the bucket (its rule is per coordinate: each coordinate is still kept with probability
about 1/r), and GRBS with ``structure='flat'`` takes one contiguous slab of the flat vector. Nothing is copied back to the host: selection, bit packing and
decompression are MXNet operators, and the host's work per step does not depend on a tensor's size
(GRBS and random-k draw O(1) numbers per tensor on the host).
"""
import math

import mxnet as mx
import numpy as np

from .bitpack import mean_abs, pack_signs, unpack_signs


class Payload:
    """What one worker sends for one tensor, and how to add a decompressed payload to a tensor.

    ``tensors`` are the NDArrays on the wire; ``add_to(target, tensors, alpha)`` performs
    ``target += alpha * decompress(tensors)`` in place, touching only the coordinates the payload
    covers. ``add_to`` is called with this worker's own tensors (to form ``C(v)``) and with the
    averaged or gathered tensors of all workers.
    """

    def __init__(self, tensors, add_to, summable=True, dense=False):
        self.tensors = tensors
        self._add_to = add_to
        self.summable = summable
        self.dense = dense  # one tensor of the target's shape, every coordinate (identity, fp16)

    def add_to(self, target, tensors, alpha=1.0):
        """``target += alpha * decompress(tensors)`` in place."""
        if self.tensors:
            self._add_to(target, tensors, alpha)

    def add_gathered(self, target, gathered, n, alpha=1.0):
        """``target += alpha * sum_w decompress(payload of worker w)``, where ``gathered`` holds
        the ``n`` workers' tensors concatenated along axis 0 (what allgather returns). The default
        decompresses worker by worker; top-k and sign override it with one fused operation."""
        if not self.tensors:
            return
        if n == 1:
            self._add_to(target, gathered, alpha)
            return
        parts = [mx.nd.split(g, num_outputs=n, axis=0, squeeze_axis=False) for g in gathered]
        for w in range(n):
            self._add_to(target, [p[w] for p in parts], alpha)

    @property
    def nbytes(self):
        """Bytes of this payload."""
        return sum(int(np.prod(t.shape)) * np.dtype(t.dtype).itemsize for t in self.tensors)


def _dense_add(target, tensors, alpha):
    t = tensors[0]
    if t.dtype != target.dtype:
        t = t.astype(target.dtype)
    if alpha == 1.0:
        target += t
    else:
        target += alpha * t


def dense_payload(v):
    """The identity payload: the whole tensor, as is."""
    return Payload([v.copy()], _dense_add, dense=True)


_EMPTY = Payload([], None)


class Compressor:
    """Base class. Subclasses set ``name``, ``summable`` and implement ``_compress(v, key, step)``.

    ``ratio`` is the nominal compression ratio: dense bytes / payload bytes, in expectation over
    steps, for tensors large enough to reach it.
    """

    name = "base"
    summable = True
    per_tensor = False   # True: compress_tensors keeps each member tensor's structure in a bucket

    def __init__(self, ratio=1.0, min_size=0, warmup_steps=0, seed=0):
        ratio = float(ratio)
        if not ratio >= 1.0:
            raise ValueError(f"compression ratio must be >= 1, got {ratio}")
        if min_size < 0 or warmup_steps < 0:
            raise ValueError(f"min_size and warmup_steps must be >= 0 (got {min_size}, {warmup_steps})")
        self.ratio = ratio
        self.min_size = int(min_size)
        self.warmup_steps = int(warmup_steps)
        self.seed = int(seed)

    def compress(self, v, key, step, dense=False, layout=None):
        """Return the ``Payload`` of ``v`` (a tensor, or a bucket's flat vector, keyed by ``key``)
        at step ``step`` (from 0); ``dense`` forces the identity (a bucket of tensors under
        ``min_size``). ``layout`` (a bucket: ``shapes``, ``indices``, ``pieces(flat)``) lets a
        per-tensor compressor treat each member of a several-tensor bucket as its own tensor."""
        if dense or step < self.warmup_steps or v.size < self.min_size:
            return dense_payload(v)
        if self.per_tensor and layout is not None and len(layout.shapes) > 1:
            return self._compress_tensors(v, layout, step)
        return self._compress(v, key, step)

    def _compress(self, v, key, step):
        return dense_payload(v)

    def rng(self, key, step):
        """The generator shared by all workers for tensor ``key`` at ``step``."""
        return np.random.Generator(np.random.Philox(key=[self.seed, step * 1_000_003 + key]))

    def config(self):
        """Hyper-parameters as a JSON-ready dict."""
        return {"name": self.name, "ratio": self.ratio, "min_size": self.min_size,
                "warmup_steps": self.warmup_steps, "seed": self.seed}

    def __repr__(self):
        return f"{type(self).__name__}({', '.join(f'{k}={v}' for k, v in self.config().items() if k != 'name')})"


class NoCompression(Compressor):
    """Identity: the dense tensor, ratio 1."""
    name = "none"

    def __init__(self, ratio=1.0, **kw):
        super().__init__(1.0, **kw)


class ZeroCompressor(Compressor):
    """Sends nothing: C(v) = 0 (CSER's C1 for CSER-PL and local SGD). Ratio: infinite."""
    name = "zero"

    def __init__(self, ratio=1.0, **kw):
        super().__init__(1.0, **kw)
        self.ratio = math.inf

    def _compress(self, v, key, step):
        return _EMPTY

    def config(self):
        c = super().config()
        c["ratio"] = "inf"
        return c


class FP16Compressor(Compressor):
    """Half-precision payload (ratio 2), summable: Horovod sums it in fp16."""
    name = "fp16"

    def __init__(self, ratio=2.0, **kw):
        super().__init__(2.0, **kw)

    def _compress(self, v, key, step):
        return Payload([v.astype("float16")], _dense_add, dense=True)


class GRBSCompressor(Compressor):
    """Globally-randomised blockwise sparsifier (CSER): per tensor, one random slab of blocks.

    For ratio r on a tensor of shape (d0, d1, ...): a = min(r, d0) blocks along axis 0 of
    k0 = ceil(d0/a) rows, then b = min(r/n0, d1) blocks along axis 1 (tensors with >= 2 dims) of
    k1 = ceil(d1/b) columns; the slab starts at a uniformly random block on each axis (the last
    block may be shorter). The tensor takes part with probability p = n0*n1/r (n0, n1 the numbers
    of blocks; l = 1/p in the paper's notation), so the expected payload is dense/r exactly. (The
    block length is rounded up rather than to nearest so that n0*n1 <= r always holds.) All workers draw the same numbers, so the slab is the same everywhere and a dense
    allreduce of it is the average of the compressed tensors.
    """
    name = "grbs"
    STRUCTURES = ("tensor", "flat")

    def __init__(self, ratio=32.0, structure="tensor", **kw):
        super().__init__(ratio, **kw)
        if structure not in self.STRUCTURES:
            raise ValueError(f"GRBS structure must be one of {', '.join(self.STRUCTURES)}, got {structure!r}")
        self.structure = structure
        self.per_tensor = structure == "tensor"
        self._plans, self._patterns = {}, {}

    def config(self):
        c = super().config()
        c["structure"] = self.structure
        return c

    def _plan(self, shape):
        plan = self._plans.get(shape)
        if plan is None:
            r = self.ratio
            d0 = shape[0] if shape else 1
            a = min(r, d0)
            k0 = max(1, int(math.ceil(d0 / a)))
            n0 = -(-d0 // k0)
            k1 = n1 = 1
            if len(shape) >= 2:
                d1 = shape[1]
                b = max(1.0, min(r / n0, d1))
                k1 = max(1, int(math.ceil(d1 / b)))
                n1 = -(-d1 // k1)
            p = min(1.0, n0 * n1 / r)
            plan = self._plans[shape] = (k0, n0, k1, n1, p)
        return plan

    def region(self, shape, key, step):
        """The slab chosen for a tensor of ``shape`` (``(begin, end)`` over the first one or two
        axes), or None when the tensor sits this step out."""
        k0, n0, k1, n1, p = self._plan(tuple(shape))
        u = self.rng(key, step).random(3)  # always three draws: participation, axis 0, axis 1
        if u[0] >= p:
            return None
        i0 = min(int(u[1] * n0), n0 - 1) * k0
        if len(shape) >= 2:
            i1 = min(int(u[2] * n1), n1 - 1) * k1
            return (i0, i1), (min(i0 + k0, shape[0]), min(i1 + k1, shape[1]))
        return (i0,), (min(i0 + k0, shape[0] if shape else 1),)

    def _compress(self, v, key, step):
        if v.ndim == 0:
            return dense_payload(v)
        reg = self.region(v.shape, key, step)
        if reg is None:
            return _EMPTY
        begin, end = reg

        def add_to(target, tensors, alpha):
            # direct slice/slice-assign operators: NDArray __getitem__/__setitem__ cost ~5x more
            t = tensors[0] if alpha == 1.0 else alpha * tensors[0]
            cur = mx.nd.slice(target, begin=begin, end=end)
            mx.nd._internal._slice_assign(target, cur + t, begin=begin, end=end, out=target)

        return Payload([mx.nd.slice(v, begin=begin, end=end)], add_to)

    def _block_pattern(self, shape, block, ctx):
        """Flat offsets (int64, on ``ctx``) of a ``block``-shaped slab of a C-order tensor of
        ``shape``, relative to the slab's first element, in the slab's own C order: added to the
        slab's origin they index it in the bucket's flat vector. Built on the device (aranges and
        broadcast sums, nothing uploaded from the host) and cached per shape, block and device (a
        handful per tensor: only the last block along an axis can be shorter)."""
        key = (shape, block, str(ctx))
        pat = self._patterns.get(key)
        if pat is None:
            strides = np.cumprod((shape[1:] + (1,))[::-1])[::-1]
            for n, st in zip(block, strides):
                axis = mx.nd.arange(0, int(n) * int(st), int(st), ctx=ctx, dtype="int64")
                pat = axis if pat is None else (pat.reshape((-1, 1)) + axis.reshape((1, -1))).reshape((-1,))
            self._patterns[key] = pat
        return pat

    def _compress_tensors(self, v, layout, step):
        """Per member of a bucket (``v`` its flat vector): the member's own block, drawn with its
        own key (its parameter index) as with one bucket per tensor; the selected blocks of all
        members, flattened and concatenated, are the one payload tensor. The blocks' positions in
        the flat vector form one index vector, built on the device from cached per-shape offset
        patterns (one addition per selected member), so that extracting the payload and adding a
        decompressed one are a few operators per bucket whatever the number of members."""
        parts = []
        for j, (shape, key) in enumerate(zip(layout.shapes, layout.indices)):
            shape = tuple(shape) or (1,)
            reg = self.region(shape, key, step)
            if reg is None:
                continue
            begin, end = reg
            block = tuple(e - b for b, e in zip(begin, end)) + shape[len(begin):]
            strides = np.cumprod((shape[1:] + (1,))[::-1])[::-1]
            origin = int(layout.offsets[j]) + sum(int(b) * int(st) for b, st in zip(begin, strides))
            pat = self._block_pattern(shape, block, v.context)
            parts.append(pat + origin if origin else pat)   # exact: offsets stay far below 2**53
        if not parts:
            return _EMPTY
        idx = parts[0] if len(parts) == 1 else mx.nd.concat(*parts, dim=0)
        payload = mx.nd.take(v, idx)
        nd_idx = idx.reshape((1, -1))

        def add_to(target, tensors, alpha):
            t = tensors[0] if alpha == 1.0 else alpha * tensors[0]
            if t.dtype != target.dtype:
                t = t.astype(target.dtype)
            # the blocks are disjoint: gather, add, and write back the same positions
            mx.nd._internal._scatter_set_nd(lhs=target, rhs=mx.nd.take(target, idx) + t, indices=nd_idx,
                                            shape=target.shape, out=target)

        return Payload([payload], add_to)


class RandomKCompressor(Compressor):
    """Random-k sparsifier with a mask shared by all workers, stratified, drawn on the device.

    k = ceil(numel/r) coordinates, one per stratum: the flat index range is cut into k strata
    [floor(j*n/k), floor((j+1)*n/k)) and stratum j keeps the coordinate at offset
    floor(u_j * width_j). The mask is the same on every worker and the values are summable.

    Our choice of u (so that the host does O(1) work per step whatever the tensor's size): each
    tensor size has a table T of k uniforms, drawn once from the seed and kept on the tensor's
    context; at each step the generator shared by all workers for (seed, step, key) draws a
    rotation s in [0, k) and a shift t in [0, 1), and u_j = frac(T[(j + s) mod k] + t). Since t is
    uniform, every coordinate is kept with probability exactly 1/width of its stratum (about 1/r)
    at every step; the rotation gives each step a different joint mask. Everything after the two
    scalar draws is six MXNet operators on the device (float64 index arithmetic, exact for any
    tensor MXNet can hold). Device memory: 32 bytes per kept coordinate per distinct tensor size
    (the trainer's buckets mostly share one size).
    """
    name = "randomk"

    def __init__(self, ratio=32.0, **kw):
        super().__init__(ratio, **kw)
        self._tables = {}

    def _table(self, n, ctx):
        got = self._tables.get((n, ctx))
        if got is None:
            k = max(1, int(math.ceil(n / self.ratio)))
            starts = np.arange(k + 1, dtype=np.int64) * n // k
            # a width just under the true one, so that floor(u * width) < width even at u -> 1
            width = np.diff(starts).astype(np.float64) * (1.0 - 2.0 ** -40)
            table = np.random.Generator(np.random.Philox(key=[self.seed, 2 ** 62 + n])).random(k)
            got = self._tables[(n, ctx)] = (
                k, mx.nd.tile(mx.nd.array(table, dtype="float64", ctx=ctx), 2),   # rotation = one slice
                mx.nd.array(width, dtype="float64", ctx=ctx),
                mx.nd.array(starts[:-1], dtype="float64", ctx=ctx))
        return got

    def indices(self, n, key, step, ctx=None):
        """The k flat indices kept for a tensor of ``n`` elements at ``step`` (increasing), as a
        float64 NDArray on ``ctx`` (exact integers; MXNet's take and scatter accept them)."""
        k, table, width, starts = self._table(n, ctx or mx.cpu())
        g = self.rng(key, step)
        s, t = int(g.integers(k)), float(g.random())
        u = mx.nd.slice(table, begin=(s,), end=(s + k,)) + t
        return mx.nd.floor((u % 1.0) * width) + starts

    def _compress(self, v, key, step):
        n = v.size
        idx = self.indices(n, key, step, v.context)
        vals = mx.nd.take(v.reshape((-1,)), idx)
        where = idx.reshape((1, -1))

        def add_to(target, tensors, alpha):
            # the k indices are distinct: read, add and write back only those entries
            flat = target.reshape((-1,))
            t = tensors[0] if alpha == 1.0 else alpha * tensors[0]
            if t.dtype != target.dtype:
                t = t.astype(target.dtype)
            mx.nd._internal._scatter_set_nd(flat, mx.nd.take(flat, idx) + t, where, shape=(n,), out=flat)

        return Payload([vals], add_to)


class TopKCompressor(Compressor):
    """Top-k by magnitude: each worker sends its own k values and their int32 indices, so payloads
    go through allgather. k = max(1, round(numel / (2r))) so that values + indices are dense/r
    bytes. On a bucket: the k largest magnitudes of the bucket's concatenated vector."""
    name = "topk"
    summable = False

    def __init__(self, ratio=32.0, **kw):
        super().__init__(ratio, **kw)

    def _compress(self, v, key, step):
        n = v.size
        k = max(1, min(n, int(round(n / (2.0 * self.ratio)))))
        flat = v.reshape((-1,))
        idx = mx.nd.topk(mx.nd.abs(flat), k=k, ret_typ="indices", dtype="int32")
        vals = mx.nd.take(flat, idx)

        def add_to(target, tensors, alpha):
            # one worker's indices are distinct: read, add and write back only those k entries
            vv, ii = tensors
            where = ii.astype("int64").reshape((1, -1))
            out = target.reshape((-1,))
            t = vv if alpha == 1.0 else alpha * vv
            if t.dtype != target.dtype:
                t = t.astype(target.dtype)
            mx.nd._internal._scatter_set_nd(out, mx.nd.gather_nd(out, where) + t, where, shape=(n,), out=out)

        def add_gathered(target, gathered, workers, alpha):
            # every worker's (value, index) pairs at once; duplicate indices are summed
            vv, ii = gathered
            t = vv if alpha == 1.0 else alpha * vv
            dense = mx.nd._internal._backward_gather_nd(t, ii.astype("int64").reshape((1, -1)), shape=(n,))
            _dense_add(target, [dense.reshape(target.shape)], 1.0)

        pl = Payload([vals, idx], add_to, summable=False)
        pl.add_gathered = add_gathered
        return pl


class SignCompressor(Compressor):
    """Scaled sign (1 bit per coordinate): C(v) = mean(|v|) * sign(v) (sign(0) = +1), the signs
    packed into bits on the device (payload ratio about 32). Each worker has its own scale, so
    payloads go through allgather. On a bucket: one scale, the mean magnitude of the bucket's
    concatenated vector."""
    name = "sign"
    summable = False

    def __init__(self, ratio=32.0, **kw):
        super().__init__(32.0, **kw)

    def _compress(self, v, key, step):
        n = v.size
        x = v.reshape((-1,))
        if x.dtype != np.float32:
            x = x.astype("float32")
        scale = mean_abs(x).reshape((1,))
        bits = pack_signs(v)

        def add_to(target, tensors, alpha):
            b, s = tensors
            dense = unpack_signs(b, n).reshape(target.shape)
            _dense_add(target, [mx.nd.broadcast_mul(dense, (s * alpha).reshape((1,) * dense.ndim))], 1.0)

        def add_gathered(target, gathered, workers, alpha):
            b, s = gathered
            signs = unpack_signs(b.reshape((workers, -1)), n)          # (workers, n)
            dense = mx.nd.dot((s * alpha).reshape((1, workers)), signs)  # sum_w alpha * s_w * sign_w
            _dense_add(target, [dense.reshape(target.shape)], 1.0)

        pl = Payload([bits, scale], add_to, summable=False)
        pl.add_gathered = add_gathered
        return pl


COMPRESSORS = {c.name: c for c in (NoCompression, ZeroCompressor, FP16Compressor, GRBSCompressor,
                                   RandomKCompressor, TopKCompressor, SignCompressor)}


def make_compressor(name, ratio=None, **kwargs):
    """Build a compressor by name (``none``, ``zero``, ``fp16``, ``grbs``, ``randomk``, ``topk``,
    ``sign``); an existing ``Compressor`` is returned as is. ``ratio`` applies to grbs, randomk
    and topk; the others have a fixed ratio."""
    if isinstance(name, Compressor):
        return name
    cls = COMPRESSORS.get(str(name).lower())
    if cls is None:
        raise ValueError(f"unknown compressor {name!r}; choose one of: {', '.join(COMPRESSORS)}")
    if ratio is not None:
        kwargs["ratio"] = ratio
    return cls(**kwargs)
