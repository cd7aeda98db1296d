"""Sign bits packed and unpacked on the device (MXNet operators only, no host round trip), for
the sign compressor: 8 signs per byte, most significant bit first, as ``numpy.packbits``."""
import mxnet as mx
import numpy as np

_BIT_WEIGHTS = {}


def _bit_weights(ctx):
    w = _BIT_WEIGHTS.get(str(ctx))
    if w is None:
        w = _BIT_WEIGHTS[str(ctx)] = mx.nd.array([128, 64, 32, 16, 8, 4, 2, 1], dtype="float32", ctx=ctx)
    return w


def pack_signs(v):
    """Bits of ``v >= 0`` (flat order, most significant bit first, last byte zero-padded), as
    uint8 on ``v``'s device: what ``numpy.packbits(v.ravel() >= 0)`` gives."""
    flat = v.reshape((-1,))
    n = flat.size
    ge = flat >= 0
    if ge.dtype != np.float32:
        ge = ge.astype("float32")
    w = _bit_weights(v.context)
    m8 = n - n % 8
    parts = []
    if m8:
        parts.append(mx.nd.dot(ge[:m8].reshape((-1, 8)), w))
    if n % 8:
        tail = mx.nd.concat(ge[m8:], mx.nd.zeros((8 - n % 8,), ctx=v.context), dim=0)
        parts.append(mx.nd.dot(tail.reshape((1, 8)), w))
    bits = parts[0] if len(parts) == 1 else mx.nd.concat(*parts, dim=0)
    return bits.astype("uint8")


def unpack_signs(bits, n):
    """+-1 (float32) of the first ``n`` bits of each row of ``bits`` (a 1-D array is one row):
    shape (rows, n)."""
    rows = bits.reshape((1, -1)) if bits.ndim == 1 else bits
    w = _bit_weights(bits.context).reshape((1, 1, 8))
    b = rows.astype("float32").expand_dims(2)
    signs = mx.nd.floor(mx.nd.broadcast_div(b, w)) % 2
    signs = signs.reshape((rows.shape[0], -1)) * 2 - 1
    return mx.nd.slice_axis(signs, axis=1, begin=0, end=n)
