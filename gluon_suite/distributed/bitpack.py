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


def mean_abs(v):
    """mean(|v|) of a flat float32 vector, shape (1,). Summed through an (n/8, 8) matrix-vector
    product first: MXNet's CPU mean/sum over one long axis is about 2x slower."""
    n = v.size
    a = mx.nd.abs(v)
    m8 = n - n % 8
    total = mx.nd.sum(mx.nd.dot(a[:m8].reshape((-1, 8)), mx.nd.ones((8,), ctx=v.context))) if m8 else None
    if n % 8:
        tail = mx.nd.sum(a[m8:])
        total = tail if total is None else total + tail
    return total.reshape((1,)) / n


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


_SIGN_TABLES = {}


def _sign_table(ctx):
    """(256, 8) float32: the +-1 signs of each byte value's 8 bits, most significant first."""
    t = _SIGN_TABLES.get(str(ctx))
    if t is None:
        bits = np.unpackbits(np.arange(256, dtype=np.uint8)[:, None], axis=1).astype(np.float32)
        t = _SIGN_TABLES[str(ctx)] = mx.nd.array(bits * 2 - 1, ctx=ctx)
    return t


def unpack_signs(bits, n):
    """+-1 (float32) of the first ``n`` bits of each row of ``bits`` (a 1-D array is one row):
    shape (rows, n). One table look-up per byte."""
    rows = bits.reshape((1, -1)) if bits.ndim == 1 else bits
    signs = mx.nd.take(_sign_table(bits.context), rows)          # (rows, bytes, 8)
    signs = signs.reshape((rows.shape[0], -1))
    return signs if signs.shape[1] == n else mx.nd.slice_axis(signs, axis=1, begin=0, end=n)
