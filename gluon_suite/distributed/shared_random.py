"""The compressors whose workers share their randomness (``compression.py`` has the contract and
the others): GRBS, CSER's globally-randomised blockwise sparsifier, and stratified random-k. Every
worker draws the same selection from a counter-based generator seeded with ``(seed, step, key)``,
so the payloads are summable with a plain allreduce. GRBS's slabs are gathered and added back by
the compiled block kernels (``native.block_gather``/``block_add``, one call per bucket) on CPU
float32 tensors when they are loaded, by MXNet's slice, take and scatter operators otherwise; both
move the same elements in the same order. On that compiled path a bucket's draws and slabs are one
host call too (``native.grbs_rows``: the same Philox numbers as NumPy's generator, bit for bit),
not one generator per member and step."""
import dataclasses
import math

import mxnet as mx
import numpy as np

from ..utils.runconfig import option
from . import native
from .compression import _EMPTY, Compressor, NoCompression, Payload, dense_payload
from .registry import CompressorOptions, register_compressor


def _same_kind_or_dense(cls, c1, period, ratio2):
    """CSER's C2 for a sparsifying C1 of class ``cls``: the same kind at ``ratio2`` (default R1/H),
    or none when that is a ratio of 1 or less."""
    ratio2 = max(1.0, c1.ratio / period) if ratio2 is None else float(ratio2)
    if ratio2 <= 1.0:
        return NoCompression(**c1._common())
    return cls(ratio2, **c1._common())


@register_compressor("grbs")
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
    STRUCTURES = ("tensor", "flat")

    @dataclasses.dataclass
    class Options(CompressorOptions):
        """GRBS's options: those of every compressor, and ``structure`` (``tensor``: each member of
        a bucket is its own tensor, as published; ``flat``: one slab of the bucket's vector)."""
        structure: str = option("tensor", help="tensor (per tensor, as published) or flat (one slab per bucket)")

    def __init__(self, ratio=32.0, structure="tensor", **kw):
        super().__init__(ratio, **kw)
        if structure not in self.STRUCTURES:
            raise ValueError(f"GRBS structure must be one of {', '.join(self.STRUCTURES)}, got {structure!r}")
        self.structure = structure
        self.per_tensor = structure == "tensor"
        self._plans, self._patterns, self._tables = {}, {}, {}

    def config(self):
        c = super().config()
        c["structure"] = self.structure
        return c

    def error_compressor(self, period, ratio2=None):
        """GRBS for the residual at ``ratio2`` (default R1/H; dense at a ratio of 1 or less)."""
        return _same_kind_or_dense(GRBSCompressor, self, period, ratio2)

    def _plan(self, shape):
        plan = self._plans.get(shape)
        if plan is None:
            r = self.ratio
            d0 = shape[0] if shape else 1
            if d0 == 0:   # an empty tensor has nothing to send: it never takes part
                plan = self._plans[shape] = (1, 0, 1, 0, 0.0)
                return plan
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
        if native.usable(v):
            block = tuple(e - b for b, e in zip(begin, end)) + tuple(v.shape[len(begin):])
            return self._block_payload(v, [_block_row(tuple(v.shape), begin, end, 0)], block)

        def add_to(target, tensors, alpha):
            # direct slice/slice-assign operators: NDArray __getitem__/__setitem__ cost ~5x more
            t = tensors[0] if alpha == 1.0 else alpha * tensors[0]
            if t.dtype != target.dtype:
                t = t.astype(target.dtype)
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
        decompressed one are a few operators per bucket whatever the number of members. On a CPU
        float32 bucket with the compiled kernels loaded, the blocks are instead described by one
        (origin, rows, row length, row stride) row each and the payload is one ``gs_block_gather``
        and its decompression one ``gs_block_add`` (``_block_payload``)."""
        if native.usable(v) and 0 <= self.seed < 2 ** 63:
            tab = self._bucket_table(layout)
            if step * 1_000_003 + tab[1] < 2 ** 63:   # NumPy reads larger key words through float64
                rows, total = native.grbs_rows(self.seed, tab[0] + np.uint64(step * 1_000_003), tab[2], tab[3])
                return self._block_payload(v, rows, total=total) if len(rows) else _EMPTY
        chosen = []
        for j, (shape, key) in enumerate(zip(layout.shapes, layout.indices)):
            shape = tuple(shape) or (1,)
            reg = self.region(shape, key, step)
            if reg is not None:
                chosen.append((shape, reg[0], reg[1], int(layout.offsets[j])))
        if not chosen:
            return _EMPTY
        if native.usable(v):
            return self._block_payload(v, [_block_row(*c) for c in chosen])
        parts = []
        for shape, begin, end, offset in chosen:
            block = tuple(e - b for b, e in zip(begin, end)) + shape[len(begin):]
            strides = np.cumprod((shape[1:] + (1,))[::-1])[::-1]
            origin = offset + sum(int(b) * int(st) for b, st in zip(begin, strides))
            pat = self._block_pattern(shape, block, v.context)
            parts.append(pat + origin if origin else pat)   # exact: offsets stay far below 2**53
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


    def _bucket_table(self, layout):
        """What ``native.grbs_rows`` needs of a bucket, built once per layout: the members' keys
        (uint64), the largest, their plans ((m, 5): k0, n0, k1, n1, p) and geometry ((m, 4): offset,
        d0, d1 or 0 for one axis, elements per cell), a 0-d member read as shape (1,) as above."""
        got = self._tables.get(id(layout))
        if got is not None and got[0] is layout:
            return got[1]
        plans, geometry = [], []
        for shape, offset in zip(layout.shapes, layout.offsets):
            shape = tuple(shape) or (1,)
            plans.append(self._plan(shape))
            two = len(shape) >= 2
            geometry.append((int(offset), shape[0], shape[1] if two else 0,
                             int(np.prod(shape[2 if two else 1:], dtype=np.int64))))
        keys = np.array(layout.indices, dtype=np.uint64)
        tab = (keys, int(keys.max()), np.array(plans, np.float64), np.array(geometry, np.int64))
        self._tables[id(layout)] = (layout, tab)
        return tab

    @staticmethod
    def _block_payload(v, rows, shape=None, total=None):
        """The compiled path (CPU float32): the slabs ``rows`` ((origin, rows, row length, row
        stride) in ``v``'s flat order) gathered by one ``gs_block_gather`` into the payload (of
        ``shape``, or flat), and added back by one ``gs_block_add``: the same elements in the
        same order as MXNet's path, the same float32 additions."""
        blocks = native.host_array(np.asarray(rows, dtype=np.int64), v.context)   # no wait on the engine
        if total is None:
            total = sum(r[1] * r[2] for r in rows)
        payload = native.block_gather(v, blocks, total)
        if shape is not None:
            payload = payload.reshape(shape)
        where = []

        def add_to(target, tensors, alpha):
            t = tensors[0]
            if native.usable(target, t):
                native.block_add(target, t, blocks, alpha)
                return
            if not where:   # another dtype or device: the blocks' flat positions, with MXNet
                where.append(mx.nd.array(_positions(rows), ctx=target.context, dtype="int64").reshape((1, -1)))
            t = t.reshape((-1,)) if alpha == 1.0 else alpha * t.reshape((-1,))
            if t.dtype != target.dtype:
                t = t.astype(target.dtype)
            flat = target.reshape((-1,))
            mx.nd._internal._scatter_set_nd(lhs=flat, rhs=mx.nd.gather_nd(flat, where[0]) + t, indices=where[0],
                                            shape=flat.shape, out=flat)

        out = Payload([payload], add_to)
        out.blocks = blocks
        return out


def _block_row(shape, begin, end, offset):
    """The slab ``begin``..``end`` (first one or two axes) of a C-order tensor of ``shape`` that
    starts at ``offset`` of a flat vector, as (origin, rows, row length, row stride): axis 0's
    rows, each a contiguous run over axis 1's range and the trailing axes."""
    inner = int(np.prod(shape[len(begin):], dtype=np.int64))
    if len(begin) == 1:
        return (offset + begin[0] * inner, 1, (end[0] - begin[0]) * inner, 0)
    d1 = int(shape[1])
    return (offset + (begin[0] * d1 + begin[1]) * inner, end[0] - begin[0], (end[1] - begin[1]) * inner, d1 * inner)


def _positions(rows):
    """The flat positions the block rows cover, in payload order (the host-side fallback)."""
    out = [np.arange(o + r * st, o + r * st + n) for o, rs, n, st in rows for r in range(rs)]
    return np.concatenate(out) if out else np.zeros(0, np.int64)


@register_compressor("randomk")
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

    Compiled path (a CPU float32 tensor with the compression kernels loaded): one
    ``gs_randomk_gather`` computes the same indices from the table and the two draws, in the same
    float64 arithmetic, and gathers the values; one ``gs_randomk_add`` adds a payload back at
    them. No index array is built or kept: the payload's values are the same, bit for bit.
    """

    def __init__(self, ratio=32.0, **kw):
        super().__init__(ratio, **kw)
        self._tables = {}

    def error_compressor(self, period, ratio2=None):
        """Random-k for the residual at ``ratio2`` (default R1/H; dense at a ratio of 1 or less)."""
        return _same_kind_or_dense(RandomKCompressor, self, period, ratio2)

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

    def draws(self, k, key, step):
        """The step's two numbers shared by all workers: the rotation s in [0, k) and the shift t
        in [0, 1)."""
        g = self.rng(key, step)
        return int(g.integers(k)), float(g.random())

    def indices(self, n, key, step, ctx=None):
        """The k flat indices kept for a tensor of ``n`` elements at ``step`` (increasing), as a
        float64 NDArray on ``ctx`` (exact integers; MXNet's take and scatter accept them)."""
        k, table, width, starts = self._table(n, ctx or mx.cpu())
        s, t = self.draws(k, key, step)
        u = mx.nd.slice(table, begin=(s,), end=(s + k,)) + t
        return mx.nd.floor((u % 1.0) * width) + starts

    def _compress(self, v, key, step):
        n = v.size
        if n == 0:
            return _EMPTY
        if native.usable(v):
            return self._compiled_payload(v, key, step)
        idx = self.indices(n, key, step, v.context)
        vals = mx.nd.take(v.reshape((-1,)), idx)
        return Payload([vals], lambda target, tensors, alpha: _add_at(target, idx, tensors[0], alpha))

    def _compiled_payload(self, v, key, step):
        """The payload through ``gs_randomk_gather``, added back by ``gs_randomk_add`` (MXNet's
        scatter for a target of another dtype or device)."""
        n = v.size
        k, table, _, _ = self._table(n, v.context)
        s, t = self.draws(k, key, step)
        vals = native.randomk_gather(v, table, s, t)

        def add_to(target, tensors, alpha):
            if native.usable(target, tensors[0]):
                native.randomk_add(target, tensors[0], self._table(n, target.context)[1], s, t, alpha)
                return
            _add_at(target, self.indices(n, key, step, target.context), tensors[0], alpha)

        return Payload([vals], add_to)


def _add_at(target, idx, values, alpha):
    """target's flat entries at the distinct indices ``idx`` += alpha * values, with MXNet's
    operators: read, add and write back only those entries."""
    flat = target.reshape((-1,))
    t = values if alpha == 1.0 else alpha * values
    if t.dtype != target.dtype:
        t = t.astype(target.dtype)
    mx.nd._internal._scatter_set_nd(flat, mx.nd.take(flat, idx) + t, idx.reshape((1, -1)), shape=flat.shape, out=flat)
