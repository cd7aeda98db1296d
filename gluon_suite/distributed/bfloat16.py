"""The ``bf16`` compressor: each value rounded to bfloat16 (float32's sign and 8-bit exponent, 7
mantissa bits; round to nearest, ties to even), 2 bytes a value, ratio 2.

bfloat16 keeps float32's range: a gradient of 1e-30 or 1e30 survives with about 3 significant
digits, where float16 (``fp16``) flushes values under 6e-8 to zero and turns values over 65504 into
inf, which is what a loss scale guards against. It needs no loss scale; it carries fewer digits
than float16 (8 significant bits against 11).

MXNet 1.9.1 has no bfloat16 array that Horovod sends or that an operator library can produce (and
no uint16 array), so the payload is the values' bytes: a (2n,) uint8 array, each value's 16 bits
low byte first. Bytes cannot be summed by allreduce: the payloads go through allgather (the
compressor is not ``summable``, like ``topk`` and ``sign``) and each worker adds every worker's
values, row after row, in float32. It serves error feedback (``ef``, which also carries the
rounding error into the next step); ``sync`` and ``cser`` need summable payloads (``fp16`` for 2x).

Compiled path (``native.cast_bf16``, ``native.bf16_add``; a CPU float32 tensor with the
compression kernels loaded): the rounding and the finiteness of the result (``Payload.finite``)
in one pass over the bucket, and all workers' rows added in one call. The MXNet path
(``encode``/``decode``) computes the same bytes with float64 operators: exponent, scaled mantissa,
explicit round half to even; it is the reference the tests compare the compiled path with. NaN
becomes the quiet NaN 0x7fc0 on both paths (MXNet's operators cannot read a NaN's sign).
"""
import mxnet as mx
import numpy as np

from . import native
from .compression import _EMPTY, Compressor, Payload
from .registry import register_compressor

__all__ = ["BF16Compressor", "encode", "decode"]

_FLT_MAX = float(np.finfo(np.float32).max)
_INF_BITS, _NAN_BITS = 0x7F80, 0x7FC0


def encode(x):
    """The bfloat16 bytes of the flat ``x`` ((2n,) uint8, low byte first) with MXNet operators in
    float64 (every step exact): e = max(floor(log2|x|), -126), q = |x| 2^(7-e) (in [128, 256) for
    a normal value, below 128 for a subnormal one), q rounded half to even, bits = (e + 126) 128 +
    q (a rounding up to 256 carries into the exponent, and past the largest into inf), the sign
    bit from x < 0 or 1/x < 0 (-0); inf and NaN set apart."""
    if x.size == 0:
        return mx.nd.empty((0,), ctx=x.context, dtype="uint8")
    v = x.reshape((-1,)).astype("float64")
    a = mx.nd.abs(v)
    e = mx.nd.maximum(mx.nd.floor(mx.nd.log2(a)), -126.0)   # log2(0) = -inf: zero is a subnormal
    q = a * mx.nd.power(2.0, 7.0 - e)
    f = mx.nd.floor(q)
    d = q - f
    odd = f - 2.0 * mx.nd.floor(f * 0.5)   # f mod 2 (MXNet's fmod-based % costs several times more)
    bits = (e + 126.0) * 128.0 + f + (d > 0.5) + (d == 0.5) * odd
    ones = mx.nd.ones_like(bits)   # bits is NaN where x is inf or NaN: constants, not bits x 0
    bits = mx.nd.where(a > _FLT_MAX, ones * _INF_BITS, bits)
    bits = bits + 32768.0 * (((v < 0) + (mx.nd.reciprocal(v) < 0)) > 0)
    bits = mx.nd.where(v != v, ones * _NAN_BITS, bits)
    high = mx.nd.floor(bits * (1.0 / 256.0))
    low = (bits - 256.0 * high).astype("uint8").reshape((-1, 1))
    return mx.nd.concat(low, high.astype("uint8").reshape((-1, 1)), dim=1).reshape((-1,))


def decode(data):
    """The float32 values of bfloat16 bytes (``encode``'s layout) with MXNet operators in float64:
    sign, exponent E and mantissa M read from the two bytes, then M 2^-133 (E = 0) or
    (128 + M) 2^(E-134), inf or NaN for E = 255."""
    b = data.reshape((-1, 2)).astype("float64")
    low = mx.nd.slice_axis(b, axis=1, begin=0, end=1).reshape((-1,))
    high = mx.nd.slice_axis(b, axis=1, begin=1, end=2).reshape((-1,))
    sign = high >= 128.0
    top = mx.nd.floor(low * (1.0 / 128.0))   # the exponent's lowest bit
    E = (high - 128.0 * sign) * 2.0 + top
    M = low - 128.0 * top
    mag = mx.nd.where(E == 0, M * 2.0 ** -133, (M + 128.0) * mx.nd.power(2.0, E - 134.0))
    mag = mx.nd.where(E == 255, (M == 0) * np.inf, mag)   # 0 x inf: NaN where M != 0
    return (mag * (1.0 - 2.0 * sign)).astype("float32")


def _add_rows(target, data, alpha):
    """target += alpha * the values of each row of ``data`` (2 x target.size bytes a row, one per
    worker), row after row."""
    if target.size == 0 or data.size == 0:
        return
    if native.usable(target):
        native.bf16_add(target, data, alpha)
        return
    rows = decode(data).reshape((-1, target.size))
    for w in range(rows.shape[0]):
        row = rows[w].reshape(target.shape)
        if row.dtype != target.dtype:
            row = row.astype(target.dtype)
        target += row if alpha == 1.0 else alpha * row


@register_compressor("bf16")
class BF16Compressor(Compressor):
    """bfloat16 payload (ratio 2) through allgather (module docstring): every coordinate, float32's
    range, 8 significant bits, no loss scale needed."""
    summable = False

    def __init__(self, ratio=2.0, **kw):
        super().__init__(2.0, **kw)

    def error_compressor(self, period, ratio2=None):
        """A fixed-ratio C1: the same kind for the residual."""
        return BF16Compressor(**self._common())

    def _compress(self, v, key, step):
        if v.size == 0:
            return _EMPTY
        finite = None
        if native.usable(v):
            data, finite = native.cast_bf16(v)
        else:
            data = encode(v)
        pl = Payload([data], lambda target, tensors, alpha: _add_rows(target, tensors[0], alpha), summable=False)
        pl.add_gathered = lambda target, gathered, workers, alpha: _add_rows(target, gathered[0], alpha)
        pl.finite = finite   # the compiled cast's verdict on the sent values (1.0: all finite)
        return pl
