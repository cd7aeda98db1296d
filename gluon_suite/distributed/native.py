"""The compiled compression kernels: an MXNet operator library (``csrc/comm_kernels.cc``, built by
``make kernels`` beside the graph kernels) loaded once, when this module is imported.

Operators (CPU, float32 data, OpenMP across elements, results independent of the thread count),
each on one flat buffer, a bucket's vector:

- ``topk(x, k)``: the k largest magnitudes by selection, not a sort (on a large buffer a strided
  sample bounds the threshold and one pass collects the candidates; where the sample misleads, two
  radix-histogram passes),
  values and int32 or int64 indices in ascending index order. Ties: every element above the k-th
  largest magnitude is taken, and of those equal to it the lowest indices (-0 equals +0, NaN ranks
  above inf).
- ``ef_topk(g, r, k)``: error feedback fused: v = g + r, top-k of v, and r becomes v with the
  selected entries zeroed, in one call (r updated in place); ``g=None`` takes r as v.
- ``sign_pack(x)``: the bits of x >= 0 (most significant first, as ``numpy.packbits``) and the scale
  mean |x|; ``sign_unpack_add`` adds alpha * sum over rows of scale * (+-1) to a target.
- ``cast_fp16(x)``: float16 (round to nearest even) and, from the same pass, 1.0 when every result
  is finite (0.0 on an overflow, inf or NaN), the loss scaler's verdict.
- ``fp16_add(target, half)``: target += alpha * each row of a float16 payload widened to float32 (rows
  of target.size values, one per worker), in one pass with no float32 temporary (F16C where the
  processor has it, ``csrc/half_kernels.cc``).
- ``scatter_add(target, values, indices)``: target[indices] += alpha * values, in place.
- ``block_gather(x, blocks)`` / ``block_add(target, values, blocks)``: GRBS's per-member slabs of a
  bucket, each block a row (origin, rows, row length, row stride) of flat offsets.
- ``randomk_gather(x, table, rotation, shift)`` / ``randomk_add(target, values, table, rotation,
  shift)``: random-k's k stratified indices computed in the operator from the compressor's shared
  table and the step's two draws (the same float64 arithmetic as its MXNet path), the values at
  them gathered, or added back, with no index array.
- ``cast_bf16(x)``: bfloat16 (round to nearest even, NaN as 0x7fc0) as two bytes per value, low
  byte first, and the finiteness flag from the same pass; ``bf16_add`` adds alpha times each row
  (one worker's bytes) to a target. MXNet 1.9.1 has no bfloat16 or uint16 array that Horovod or
  an operator library takes, hence bytes.
- ``ef_sign(g, r)``: error feedback with sign fused: v = g + r, its bits and scale (as
  ``sign_pack``), and r <- v - scale * (+-1) (as ``sign_unpack_add`` with alpha -1), in two passes
  and one call.
- ``members_gather(arrays, flat)`` / ``members_scatter(flat, arrays, shapes)`` (``csrc/bucket_kernels.cc``):
  a bucket's members copied into its flat vector and back, one call per bucket instead of one copy
  per tensor (the members' own arrays, read and written by the operator: an input oneDNN holds in a
  blocked layout reaches it in the plain one, an output is written in the plain one).
- ``cser_delta(u, e, arrays)``: u <- u - w, e <- e - u in one pass over the members themselves;
  ``members_block_add(arrays, values, blocks)``: GRBS's slabs added into the members' own arrays.
- ``grbs_rows(seed, words, plans, geometry)``: GRBS's draws and slabs for a whole bucket in one
  host call (not an operator: the slabs' sizes shape the payload, so they are needed on the host
  before its operators are pushed), the same Philox numbers as NumPy's generator.

The payloads of ``cast_fp16``, ``sign_pack`` and ``ef_sign`` are written into arrays reused from step
to step once nothing holds the previous payload (``reusable``), and the per-step index arrays go up
without waiting on MXNet's engine (``host_array``): no page faults of fresh output buffers, no host
stall behind queued kernels.

A buffer over 2^31 bytes is refused in one line (``check_size``); ``usable`` says no to it, so a
compressor sends such a buffer through MXNet's operators. When the library was not built (no
compiler), is older than its sources or does not load, one line on stderr says so and the
compressors keep MXNet's operators, which are also the reference the tests compare against and
what any other device or dtype uses. ``GLUON_SUITE_COMM_KERNELS`` names another library file, or
``off`` to use MXNet's operators without a word (a file it names must exist).
"""
import ctypes
import os
import sys

import mxnet as mx
import numpy as np

from ..utils.env import env
from ..utils.host_arrays import host_array  # noqa: F401 (the compressors call native.host_array)
from ..utils.native_lib import load_library

_PKG = os.path.dirname(os.path.abspath(__file__))
_ROOT = os.path.dirname(os.path.dirname(_PKG))
DEFAULT_PATH = os.path.join(_ROOT, "build", "comm_kernels", "libgs_comm_kernels.so")
_SOURCES = os.path.join(_PKG, "csrc")
MAX_BYTES = 2 ** 31     # the largest buffer an operator takes

LOADED = False          # whether the compiled operators are registered with MXNet
REASON = ""             # why not, when they are not


# the operators this module calls: a library without one of them (an older build named by the
# setting) counts as not loaded
OPERATORS = ("gs_topk", "gs_ef_topk", "gs_sign_pack", "gs_sign_unpack_add", "gs_cast_fp16", "gs_scatter_add",
             "gs_block_gather", "gs_block_add", "gs_randomk_gather", "gs_randomk_add", "gs_cast_bf16", "gs_bf16_add",
             "gs_ef_sign", "gs_members_gather", "gs_members_scatter", "gs_fp16_add",
             "gs_cser_delta", "gs_members_block_add")
_HOST = None            # the library's host functions (ctypes), when it is loaded


def _load():
    global LOADED, REASON, _HOST
    setting = env("GLUON_SUITE_COMM_KERNELS")   # None (the built library), "off" or an existing file
    LOADED, REASON, notify = load_library(setting, "GLUON_SUITE_COMM_KERNELS", DEFAULT_PATH, _SOURCES,
                                          "gs_ef_topk", "compression")
    missing = [op for op in OPERATORS if LOADED and not hasattr(mx.nd, op)]
    if LOADED and not missing:
        _HOST = ctypes.CDLL(setting or DEFAULT_PATH)
        if not hasattr(_HOST, "gs_grbs_rows"):
            missing.append("gs_grbs_rows")
        else:
            f = _HOST.gs_grbs_rows
            f.restype = ctypes.c_int64
            f.argtypes = [ctypes.c_int64, ctypes.c_uint64] + [ctypes.c_void_p] * 5
    if missing:
        LOADED, notify = False, True
        REASON = f"{setting or DEFAULT_PATH} has no {', '.join(missing)} (an older build: run `make kernels`)"
    if notify:
        sys.stderr.write("gluon_suite.distributed: compiled compression kernels unavailable, "
                         f"using MXNet's operators: {REASON}\n")


_load()


def check_size(n, itemsize=4, what="buffer"):
    """ValueError, in one line, when ``n`` elements of ``itemsize`` bytes exceed 2^31 bytes."""
    nbytes = int(n) * int(itemsize)
    if nbytes > MAX_BYTES:
        raise ValueError(f"compression kernels: a {what} of {nbytes} bytes is larger than 2^31 bytes; "
                         "MXNet's operators handle it")
    return nbytes


def usable(*arrays, dtype=np.float32):
    """Whether the compiled kernels can run on these arrays: loaded, CPU context, of ``dtype``
    (float16 payloads: ``fp16_add`` sums them into a float32 buffer of their size, ``cast_fp16``
    goes back), at most 2^31 bytes each as float32."""
    if not LOADED:
        return False
    for a in arrays:
        if a is None:
            continue
        if a.context.device_type != "cpu" or a.dtype != dtype or a.size * 4 > MAX_BYTES:
            return False
    return True


def _flat(x):
    return x.reshape((-1,))


def _empty(ctx, dtype="float32"):
    # MXNet's legacy shapes read a 0 as unknown: empty buffers never reach an operator
    return mx.nd.empty((0,), ctx=ctx, dtype=dtype)


_POOL = {}              # (shape, dtype, context) -> payload arrays, reused once nothing else holds them
POOL_DEPTH = 4          # arrays kept per (shape, dtype, context)
POOL_BYTES = 2 << 30    # the most the pool keeps in all; past it, outputs are allocated as before
_pooled_bytes = [0]


def reusable(shape, dtype, ctx):
    """An array for a payload that nothing else holds: a pooled one whose last payload has been
    dropped (only the pool still refers to it), else a new one, kept in the pool (up to POOL_DEPTH
    per shape and POOL_BYTES in all). A payload allocated afresh at every step costs a fault per
    page of every output buffer (glibc returns blocks of megabytes to the system when they are
    freed), several times the conversion itself; a reused array is written in place, and MXNet's
    engine orders the write after any queued operator still reading its previous payload."""
    key = (tuple(int(d) for d in shape), np.dtype(dtype).str, str(ctx))
    arrays = _POOL.setdefault(key, [])
    for a in arrays:
        if sys.getrefcount(a) <= 3:   # the pool's list, this loop's name and the call's argument
            return a
    a = mx.nd.empty(key[0], ctx=ctx, dtype=dtype)
    nbytes = a.size * np.dtype(dtype).itemsize
    if len(arrays) < POOL_DEPTH and _pooled_bytes[0] + nbytes <= POOL_BYTES:
        arrays.append(a)
        _pooled_bytes[0] += nbytes
    return a


def topk(x, k, index_dtype="int32", sampled=True, simd=True):
    """(values, indices) of the ``k`` largest magnitudes of ``x`` (flattened), ascending indices;
    ``sampled=False`` forces the histogram passes, ``simd=False`` the portable code (tests: same result)."""
    check_size(x.size, 4, "tensor")
    if int(k) == 0 or x.size == 0:
        return _empty(x.context), _empty(x.context, index_dtype)
    return mx.nd.gs_topk(_flat(x), k=str(int(k)), index=index_dtype, sampled=str(int(sampled)), simd=str(int(simd)))


_PLACEHOLDERS = {}


def _placeholder(ctx):
    """The one-element stand-in for an absent gradient."""
    key = str(ctx)
    if key not in _PLACEHOLDERS:
        _PLACEHOLDERS[key] = mx.nd.zeros((1,), ctx=ctx)
    return _PLACEHOLDERS[key]


def ef_topk(g, r, k, index_dtype="int32", sampled=True, simd=True):
    """Error feedback with top-k in one call: v = g + r (or r itself when ``g`` is None), (values,
    indices) of its top-k, and r <- v with those entries zeroed, in place. Returns (values,
    indices). ``sampled`` and ``simd`` as for ``topk``."""
    check_size(r.size, 4, "residual")
    k = int(k)
    if k == 0 or r.size == 0:
        if g is not None and r.size:
            r += g.reshape(r.shape)
        return _empty(r.context), _empty(r.context, index_dtype)
    rf = _flat(r)
    vals = mx.nd.empty((k,), ctx=r.context)
    idx = mx.nd.empty((k,), ctx=r.context, dtype=index_dtype)
    gf = _flat(g) if g is not None else _placeholder(r.context)
    mx.nd.gs_ef_topk(gf, rf, k=str(k), index=index_dtype, gradient="1" if g is not None else "0",
                     sampled="1" if sampled else "0", simd="1" if simd else "0", out=[vals, idx, rf])
    return vals, idx


def sign_pack(x, simd=True):
    """(bits uint8 of x >= 0, most significant first; scale (1,) = mean |x|); ``simd`` as for ``topk``."""
    check_size(x.size, 4, "tensor")
    if x.size == 0:
        return _empty(x.context, "uint8"), mx.nd.zeros((1,), ctx=x.context)
    bits, scale = reusable(((x.size + 7) // 8,), "uint8", x.context), mx.nd.empty((1,), ctx=x.context)
    mx.nd.gs_sign_pack(_flat(x), simd="1" if simd else "0", out=[bits, scale])
    return bits, scale


def sign_unpack_add(target, bits, scales, alpha=1.0, simd=True):
    """target += alpha * sum over rows w of scales[w] * (+-1 of row w's bits), in place; ``bits``
    holds the rows' bytes one after another (ceil(n/8) each). ``simd`` as for ``topk``."""
    if target.size == 0 or scales.size == 0:
        return target
    t = _flat(target)
    mx.nd.gs_sign_unpack_add(t, _flat(bits), _flat(scales), alpha=repr(float(alpha)), simd=str(int(simd)), out=t)
    return target


def cast_fp16(x, f16c=True):
    """(float16 of x in x's shape, finite (1,) float32: 1.0 when every float16 value is finite);
    ``f16c=False`` keeps to the portable conversion where the processor has F16C (for tests)."""
    check_size(x.size, 4, "tensor")
    if x.size == 0:
        return mx.nd.empty(x.shape, ctx=x.context, dtype="float16"), mx.nd.ones((1,), ctx=x.context)
    y, finite = reusable(x.shape, "float16", x.context), mx.nd.empty((1,), ctx=x.context)
    mx.nd.gs_cast_fp16(_flat(x), f16c="1" if f16c else "0", out=[_flat(y), finite])
    return y, finite


def scatter_add(target, values, indices, alpha=1.0, segments=1):
    """target[indices] += alpha * values in place; indices distinct within each of ``segments``
    equal parts (one worker's top-k each), the parts added one after another."""
    if target.size == 0 or values.size == 0:
        return target
    t = _flat(target)
    mx.nd.gs_scatter_add(t, _flat(values), _flat(indices), alpha=repr(float(alpha)),
                         segments=str(int(segments)), out=t)
    return target


def block_gather(x, blocks, total):
    """The elements of ``blocks`` ((m, 4) int32/int64: origin, rows, row length, row stride) of
    the flat ``x``, block after block, ``total`` in all."""
    check_size(x.size, 4, "bucket")
    if int(total) == 0 or x.size == 0 or blocks.size == 0:
        return _empty(x.context)
    return mx.nd.gs_block_gather(_flat(x), blocks, total=str(int(total)))


def block_add(target, values, blocks, alpha=1.0):
    """Each block of the flat ``target`` += alpha * its part of ``values``, in place (blocks must
    not overlap)."""
    if target.size == 0 or values.size == 0:
        return target
    t = _flat(target)
    mx.nd.gs_block_add(t, _flat(values), blocks, alpha=repr(float(alpha)), out=t)
    return target


def randomk_gather(x, table, rotation, shift):
    """The values of the flat ``x`` at random-k's k indices: start_j + floor(frac(table[rotation +
    j] + shift) * width_j) for stratum j of k (``table``: the (2k,) float64 table on x's device)."""
    check_size(x.size, 4, "tensor")
    return mx.nd.gs_randomk_gather(_flat(x), table, rotation=str(int(rotation)), shift=repr(float(shift)))


def randomk_add(target, values, table, rotation, shift, alpha=1.0):
    """target[index_j] += alpha * values[j] at random-k's k indices (as ``randomk_gather``), in
    place."""
    if target.size == 0:
        return target
    t = _flat(target)
    mx.nd.gs_randomk_add(t, _flat(values), table, rotation=str(int(rotation)), shift=repr(float(shift)),
                         alpha=repr(float(alpha)), out=t)
    return target


def cast_bf16(x):
    """(bfloat16 of the flat x as (2n,) uint8, two bytes per value, low byte first; finite (1,)
    float32: 1.0 when every bfloat16 value is finite)."""
    check_size(x.size, 4, "tensor")
    if x.size == 0:
        return _empty(x.context, "uint8"), mx.nd.ones((1,), ctx=x.context)
    return mx.nd.gs_cast_bf16(_flat(x))


def bf16_add(target, data, alpha=1.0):
    """target += alpha * the bfloat16 values of each row of ``data`` (rows of 2 x target.size
    bytes, one per worker, added one after another), in place."""
    if target.size == 0 or data.size == 0:
        return target
    t = _flat(target)
    mx.nd.gs_bf16_add(t, _flat(data), alpha=repr(float(alpha)), out=t)
    return target


def fp16_add(target, half, alpha=1.0, f16c=True, assign=False):
    """target += alpha * the float16 values of each row of ``half`` (rows of target.size values, one
    per worker, added one after another), in place; ``assign``: the first row is written, not added
    (target's values unread); ``f16c=False`` forces the portable code (tests)."""
    if target.size == 0 or half.size == 0:
        return target
    t = _flat(target)
    mx.nd.gs_fp16_add(t, _flat(half), alpha=repr(float(alpha)), f16c="1" if f16c else "0",
                      assign="1" if assign else "0", out=t)
    return target


def ef_sign(g, r, simd=True):
    """Error feedback with sign in one call: v = g + r (or r itself when ``g`` is None), its (bits,
    scale) as ``sign_pack`` gives them, and r <- v - scale * (+1 where v >= 0, else -1), in place.
    Returns (bits, scale). ``simd`` as for ``topk``."""
    check_size(r.size, 4, "residual")
    if r.size == 0:
        return _empty(r.context, "uint8"), mx.nd.zeros((1,), ctx=r.context)
    rf = _flat(r)
    bits = reusable(((r.size + 7) // 8,), "uint8", r.context)
    scale = mx.nd.empty((1,), ctx=r.context)
    gf = _flat(g) if g is not None else _placeholder(r.context)
    mx.nd.gs_ef_sign(gf, rf, gradient="1" if g is not None else "0", simd="1" if simd else "0", out=[bits, scale, rf])
    return bits, scale


def shapes_text(shapes):
    """The ``shapes`` attribute of ``members_scatter``: 'd0xd1...;d0...', one shape per non-empty
    member."""
    return ";".join("x".join(str(int(d)) for d in s) for s in shapes if int(np.prod(s)))


def members_gather(arrays, flat):
    """``flat`` <- the ``arrays`` (a bucket's non-empty members, each with at least one axis) one
    after another, in one call. (The caller leaves empty members out: asking each array its size
    would cost an MXNet call per tensor.)"""
    check_size(flat.size, 4, "bucket")
    if arrays:
        mx.nd.gs_members_gather(*arrays, members=str(len(arrays)), out=flat)
    return flat


def members_scatter(flat, arrays, shapes):
    """Each of ``arrays`` (non-empty, as for ``members_gather``) <- its slice of ``flat``, in one
    call; ``shapes`` is ``shapes_text`` of their shapes."""
    check_size(flat.size, 4, "bucket")
    if arrays:
        mx.nd.gs_members_scatter(flat, shapes=shapes, out=list(arrays))
    return arrays


def cser_delta(u, e, arrays, x=None):
    """u <- u - (the ``arrays`` one after another), then e <- e - u, in place, one call (``arrays``
    as for ``members_gather``); ``x``: also gathers the arrays into it, in the same pass."""
    check_size(u.size, 4, "bucket")
    mx.nd.gs_cser_delta(u, e, *arrays, members=str(len(arrays)), gather="0" if x is None else "1",
                        out=[u, e] + ([] if x is None else [x]))


def members_block_add(arrays, values, blocks, alpha=1.0):
    """Each block ((m, 4) rows in the flat order of ``arrays``, as for ``block_add``) += alpha * its
    part of ``values``, in the members' own arrays (one call)."""
    if arrays and values.size:
        mx.nd.gs_members_block_add(_flat(values), blocks, *arrays, members=str(len(arrays)),
                                   alpha=repr(float(alpha)), out=list(arrays))


def grbs_rows(seed, words, plans, geometry):
    """GRBS for one bucket: ``(rows, total)``, the slabs of the members that take part ((count, 4)
    int64: origin, rows, row length, row stride) and their elements. ``words`` (uint64): step *
    1000003 + each member's key; ``plans`` ((m, 5) float64): k0, n0, k1, n1, p; ``geometry`` ((m,
    4) int64): offset, d0, d1 (0: one axis), elements per cell. The draws are those of
    ``Generator(Philox(key=[seed, word])).random(3)``."""
    m = len(words)
    words = np.ascontiguousarray(words, dtype=np.uint64)
    plans = np.ascontiguousarray(plans, dtype=np.float64)
    geometry = np.ascontiguousarray(geometry, dtype=np.int64)
    rows = np.empty((m, 4), np.int64)
    total = np.zeros(1, np.int64)
    count = _HOST.gs_grbs_rows(m, int(seed), words.ctypes.data, plans.ctypes.data, geometry.ctypes.data,
                               rows.ctypes.data, total.ctypes.data)
    return rows[:count], int(total[0])
