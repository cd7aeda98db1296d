"""Host arrays handed to MXNet without waiting on its engine.

``mx.nd.array`` copies synchronously, and with MXNet's CPU engine that copy waits behind every
operator already queued, so code that builds an index array while a step is in flight (a bucket's
block list, a graph's structure) blocks the host for the queued kernels' time and stops it from
preparing the next work. ``host_array`` hands the array over instead.
"""
import mxnet as mx
import numpy as np


def host_array(a, ctx, dtype=None):
    """NumPy array ``a`` (as ``dtype`` when given) as an NDArray on context ``ctx`` without waiting
    on the engine: the NDArray takes the host memory (DLPack, no copy; that array becomes read-only
    and lives as long as the NDArray, so pass one nobody else writes), and another context gets an
    engine copy, queued like any operator."""
    nd = mx.nd.from_numpy(np.ascontiguousarray(a, dtype=dtype), zero_copy=True)
    return nd if nd.context == ctx else nd.as_in_context(ctx)
