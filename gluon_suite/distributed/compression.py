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

Compiled path (``native.py``): on a CPU float32 tensor, with the compression kernels built, top-k
(selection and decompression), sign (bits and scale in one pass, and their decompression) and
fp16 (the cast and a finiteness flag in one pass, ``Payload.finite``) run compiled operators;
anything else, or without the library, runs the MXNet operators below, which stay the reference.
The compiled top-k takes, among equal magnitudes at the k-th place, the lowest indices, and sends
its indices in ascending order (MXNet's ``topk`` sends them by magnitude); C(v) is the same set.
``compress_feedback`` is error feedback in one call: with top-k or sign on the compiled path, the
sum g + r, the compression and the new residual are one operator.
"""
import dataclasses
import math

import mxnet as mx
import numpy as np

from . import native
from .bitpack import mean_abs, pack_signs, unpack_signs
from .registry import COMPRESSORS, CompressorOptions, make_compressor, register_compressor

__all__ = ["Payload", "Compressor", "NoCompression", "ZeroCompressor", "FP16Compressor", "TopKCompressor",
           "SignCompressor", "COMPRESSORS", "make_compressor", "dense_payload"]


class Payload:
    """What one worker sends for one tensor, and how to add a decompressed payload to a tensor.

    ``tensors`` are the NDArrays on the wire, the payload's own arrays (never views of the
    compressed tensor: error feedback updates that tensor in place, ``compress_feedback``, before
    they are sent); ``add_to(target, tensors, alpha)`` performs
    ``target += alpha * decompress(tensors)`` in place, touching only the coordinates the payload
    covers. ``add_to`` is called with this worker's own tensors (to form ``C(v)``) and with the
    averaged or gathered tensors of all workers.
    """

    finite = None   # fp16 on the compiled path: (1,) float32, 1.0 when every sent value is finite
    blocks = None   # GRBS on the compiled path: the (m, 4) slab rows ``add_to`` adds along

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
    if t.dtype == np.float16 and t.context == target.context and native.usable(target):
        native.fp16_add(target, t, alpha)   # widened and added in one pass, no float32 temporary
        return
    if t.dtype != target.dtype:
        t = t.astype(target.dtype)
    if alpha == 1.0:
        target += t
    else:
        target += alpha * t


def write_dense(target, t):
    """``target`` <- a dense payload's tensor ``t`` (float16 widened in one pass, no zero + add)."""
    if t.dtype == np.float16 and t.context == target.context and native.usable(target):
        native.fp16_add(target, t, assign=True)
    else:
        mx.nd.cast(t, dtype=target.dtype, out=target)


def dense_payload(v):
    """The identity payload: the whole tensor, as is."""
    return Payload([v.copy()], _dense_add, dense=True)


_EMPTY = Payload([], None)


class Compressor:
    """Base class. Subclasses register a name (``register_compressor``), set ``summable`` and
    implement ``_compress(v, key, step)``; their options are ``Options`` (a dataclass).

    ``ratio`` is the nominal compression ratio: dense bytes / payload bytes, in expectation over
    steps, for tensors large enough to reach it. What the algorithms ask of a compressor:
    ``identity`` (it sends every coordinate as it is), ``sends_nothing`` (C(v) = 0),
    ``summable`` (payloads average with allreduce) and ``error_compressor`` (CSER's C2 for it).
    """

    name = "base"
    Options = CompressorOptions
    summable = True
    identity = False     # C(v) = v, every coordinate as it is
    sends_nothing = False   # C(v) = 0
    per_tensor = False   # True: compress_tensors keeps each member tensor's structure in a bucket

    @classmethod
    def from_options(cls, opts):
        """Build from an ``Options`` instance (a ratio of None: the class's own)."""
        kw = {k: v for k, v in dataclasses.asdict(opts).items() if not (k == "ratio" and v is None)}
        return cls(**kw)

    def error_compressor(self, period, ratio2=None):
        """CSER's compressor C2 of the residual when this one is its C1 and none is named, seeded
        apart from this one (docs/methods.md, "CSER"). Default, for a compressor of the user's own:
        none (the residual is averaged dense at every reset)."""
        return NoCompression()

    def _common(self):
        return {"min_size": self.min_size, "warmup_steps": self.warmup_steps, "seed": self.seed + 7919}

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

    def compresses(self, v, step, dense=False):
        """Whether ``compress`` would apply this compressor's own ``_compress`` to a one-tensor
        ``v`` (not the dense identity of warm-up, ``min_size`` or a forced dense bucket)."""
        return not (dense or step < self.warmup_steps or v.size < self.min_size)

    def compress_feedback(self, g, r, key, step, dense=False, layout=None):
        """Error feedback in one call: r <- g + r (``g`` None: r as it is), the ``Payload`` of
        that sum v, and r <- v - C(v), in place. Returns the payload (its tensors are its own, so
        r's new value does not reach them)."""
        if g is not None:
            r += g.reshape(r.shape)
        pl = self.compress(r, key, step, dense=dense, layout=layout)
        pl.add_to(r, pl.tensors, -1.0)
        return pl

    def rng(self, key, step):
        """The generator shared by all workers for tensor ``key`` at ``step``."""
        return np.random.Generator(np.random.Philox(key=[self.seed, step * 1_000_003 + key]))

    def config(self):
        """Hyper-parameters as a JSON-ready dict."""
        return {"name": self.name, "ratio": self.ratio, "min_size": self.min_size,
                "warmup_steps": self.warmup_steps, "seed": self.seed}

    def __repr__(self):
        return f"{type(self).__name__}({', '.join(f'{k}={v}' for k, v in self.config().items() if k != 'name')})"


@register_compressor("none")
class NoCompression(Compressor):
    """Identity: the dense tensor, ratio 1."""
    identity = True

    def __init__(self, ratio=1.0, **kw):
        super().__init__(1.0, **kw)

    def error_compressor(self, period, ratio2=None):
        """Dense C1, dense C2."""
        return NoCompression(**self._common())


@register_compressor("zero")
class ZeroCompressor(Compressor):
    """Sends nothing: C(v) = 0 (CSER's C1 for CSER-PL and local SGD). Ratio: infinite. As C1 its
    residual is the whole local deviation, averaged dense (local SGD) unless C2 is named."""
    sends_nothing = True

    def __init__(self, ratio=1.0, **kw):
        super().__init__(1.0, **kw)
        self.ratio = math.inf

    def _compress(self, v, key, step):
        return _EMPTY

    def config(self):
        c = super().config()
        c["ratio"] = "inf"
        return c


@register_compressor("fp16")
class FP16Compressor(Compressor):
    """Half-precision payload (ratio 2), summable: Horovod sums it in fp16."""

    def __init__(self, ratio=2.0, **kw):
        super().__init__(2.0, **kw)

    def error_compressor(self, period, ratio2=None):
        """A fixed-ratio C1: the same kind for the residual."""
        return FP16Compressor(**self._common())

    def _compress(self, v, key, step):
        if native.usable(v):
            half, finite = native.cast_fp16(v)
            pl = Payload([half], _dense_add, dense=True)
            pl.finite = finite
            return pl
        return Payload([v.astype("float16")], _dense_add, dense=True)


@register_compressor("topk")
class TopKCompressor(Compressor):
    """Top-k by magnitude: each worker sends its own k values and their int32 indices, so payloads
    go through allgather. k = max(1, round(numel / (2r))) so that values + indices are dense/r
    bytes. On a bucket: the k largest magnitudes of the bucket's concatenated vector."""
    summable = False

    def __init__(self, ratio=32.0, **kw):
        super().__init__(ratio, **kw)

    def error_compressor(self, period, ratio2=None):
        """Top-k for the residual at ``ratio2`` (default R1/H, at least 1)."""
        return TopKCompressor(max(1.0, self.ratio / period) if ratio2 is None else ratio2, **self._common())

    def _k(self, n):
        return max(1, min(n, int(round(n / (2.0 * self.ratio)))))

    def compress_feedback(self, g, r, key, step, dense=False, layout=None):
        """Error feedback with top-k; on the compiled path one operator: v = g + r, its top-k
        and r <- v with the selected entries zeroed."""
        if not (self.compresses(r, step, dense) and r.size and native.usable(g, r)):
            return super().compress_feedback(g, r, key, step, dense=dense, layout=layout)
        vals, idx = native.ef_topk(g, r, self._k(r.size))
        return self._payload(r.size, vals, idx)

    def _compress(self, v, key, step):
        n = v.size
        flat = v.reshape((-1,))
        if native.usable(flat) and n:
            vals, idx = native.topk(flat, self._k(n))
            return self._payload(n, vals, idx)
        idx = mx.nd.topk(mx.nd.abs(flat), k=self._k(n), ret_typ="indices", dtype="int32")
        vals = mx.nd.take(flat, idx)
        return self._payload(n, vals, idx)

    @staticmethod
    def _payload(n, vals, idx):
        def add_to(target, tensors, alpha):
            # one worker's indices are distinct: read, add and write back only those k entries
            vv, ii = tensors
            if native.usable(target, vv):
                native.scatter_add(target, vv, ii, alpha)
                return
            where = ii.astype("int64").reshape((1, -1))
            out = target.reshape((-1,))
            t = vv if alpha == 1.0 else alpha * vv
            if t.dtype != target.dtype:
                t = t.astype(target.dtype)
            mx.nd._internal._scatter_set_nd(out, mx.nd.gather_nd(out, where) + t, where, shape=(n,), out=out)

        def add_gathered(target, gathered, workers, alpha):
            # every worker's (value, index) pairs at once; duplicate indices are summed
            vv, ii = gathered
            if native.usable(target, vv):
                native.scatter_add(target, vv, ii, alpha, segments=workers)
                return
            t = vv if alpha == 1.0 else alpha * vv
            dense = mx.nd._internal._backward_gather_nd(t, ii.astype("int64").reshape((1, -1)), shape=(n,))
            _dense_add(target, [dense.reshape(target.shape)], 1.0)

        pl = Payload([vals, idx], add_to, summable=False)
        pl.add_gathered = add_gathered
        return pl


@register_compressor("sign")
class SignCompressor(Compressor):
    """Scaled sign (1 bit per coordinate): C(v) = mean(|v|) * sign(v) (sign(0) = +1), the signs
    packed into bits on the device (payload ratio about 32). Each worker has its own scale, so
    payloads go through allgather. On a bucket: one scale, the mean magnitude of the bucket's
    concatenated vector."""
    summable = False

    def __init__(self, ratio=32.0, **kw):
        super().__init__(32.0, **kw)

    def error_compressor(self, period, ratio2=None):
        """A fixed-ratio C1: the same kind for the residual."""
        return SignCompressor(**self._common())

    def compress_feedback(self, g, r, key, step, dense=False, layout=None):
        """Error feedback with sign; on the compiled path one operator: v = g + r, its bits and
        scale, and r <- v - scale * sign(v), the same numbers as the three steps written out."""
        if not (self.compresses(r, step, dense) and r.size and native.usable(g, r)):
            return super().compress_feedback(g, r, key, step, dense=dense, layout=layout)
        bits, scale = native.ef_sign(g, r)
        return self._payload(r.size, bits, scale)

    def _compress(self, v, key, step):
        n = v.size
        x = v.reshape((-1,))
        if native.usable(x):
            bits, scale = native.sign_pack(x)
        else:
            if x.dtype != np.float32:
                x = x.astype("float32")
            scale = mean_abs(x).reshape((1,))
            bits = pack_signs(v)
        return self._payload(n, bits, scale)

    @staticmethod
    def _payload(n, bits, scale):
        def add_to(target, tensors, alpha):
            b, s = tensors
            if native.usable(target, s):
                native.sign_unpack_add(target, b, s, alpha)
                return
            dense = unpack_signs(b, n).reshape(target.shape)
            _dense_add(target, [mx.nd.broadcast_mul(dense, (s * alpha).reshape((1,) * dense.ndim))], 1.0)

        def add_gathered(target, gathered, workers, alpha):
            b, s = gathered
            if native.usable(target, s):
                native.sign_unpack_add(target, b, s, alpha)
                return
            signs = unpack_signs(b.reshape((workers, -1)), n)          # (workers, n)
            dense = mx.nd.dot((s * alpha).reshape((1, workers)), signs)  # sum_w alpha * s_w * sign_w
            _dense_add(target, [dense.reshape(target.shape)], 1.0)

        pl = Payload([bits, scale], add_to, summable=False)
        pl.add_gathered = add_gathered
        return pl


COMPRESSORS.base = Compressor
