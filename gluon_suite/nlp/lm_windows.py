"""The BPTT windows of the word-LM recipe (``language_model``): the stream cut into columns
(``batchify``), one training window with its hidden state carried and detached (``train_window``), a
stream's NLL over the workers (``stream_nll``, ``perplexity``) and the epoch's windows as the loop's
items (``WindowSampler``; after a resize it keeps the fraction of the epoch done)."""
import math

import mxnet as mx
import numpy as np
from mxnet import autograd, gluon

from ..distributed.loop import world_sums
from ..distributed.sampler import EpochSampler

LOSS = gluon.loss.SoftmaxCrossEntropyLoss()   # per token


def batchify(ids, columns):
    """``(inputs, targets)``, each ``(T, columns)`` (GluonNLP's TN layout): column c reads
    ``ids[c*T:(c+1)*T]``, its targets are the tokens after each."""
    ids = np.asarray(ids, dtype=np.float32)
    t = (len(ids) - 1) // columns
    return ids[:columns * t].reshape(columns, t).T, ids[1:columns * t + 1].reshape(columns, t).T


def detach(state):
    """The recurrent state (nested lists of NDArrays) cut from the graph that produced it."""
    return [detach(s) for s in state] if isinstance(state, (list, tuple)) else state.detach()


def train_window(net, hidden, x, y, batch):
    """Forward and backward of one window ``x`` -> ``y`` (NDArrays ``(T, B)``) from ``hidden``
    (detached first: no gradient reaches an earlier window); the loss is summed over the window and
    averaged over ``batch``. Returns (summed token NLL, new hidden state). A model with a sampled
    softmax (``sampled_window``: the big LM) is trained on its sampled logits; the NLL is then the
    sampled softmax's, not the model's."""
    hidden = detach(hidden)
    with autograd.record():
        if hasattr(net, "sampled_window"):
            out, hidden, y = net.sampled_window(x, y, hidden)
        else:
            out, hidden = net(x, hidden)[:2]
        nll = LOSS(out.reshape((-3, -1)), y.reshape((-1,)))
        loss = nll.sum() / batch
    loss.backward()
    return nll.sum(), hidden


def stream_nll(net, ids, columns, comm, bptt, ctx):
    """``(summed NLL, tokens)`` of the token stream ``ids`` over all workers of ``comm``: it is cut into
    ``columns`` columns, each worker runs its contiguous share of them window by window (hidden state
    carried), and the sums are added up over the workers (float64)."""
    x, y = batchify(ids, columns)
    lo, hi = comm.rank * columns // comm.size, (comm.rank + 1) * columns // comm.size
    x, y = x[:, lo:hi], y[:, lo:hi]
    total = 0.0
    if x.size:
        hidden = net.begin_state(batch_size=x.shape[1], func=mx.nd.zeros, ctx=ctx)
        for i in range(0, x.shape[0], bptt):
            out, hidden = net(mx.nd.array(x[i:i + bptt], ctx=ctx), hidden)[:2]
            nll = LOSS(out.reshape((-3, -1)), mx.nd.array(y[i:i + bptt], ctx=ctx).reshape((-1,)))
            total += float(nll.asnumpy().astype(np.float64).sum())
    sums = world_sums({"nll": total, "tokens": float(x.size)}, ("nll", "tokens"), comm, name="lm.eval")
    return sums["nll"], int(sums["tokens"])


def _ppl(nll, tokens):   # NaN for no tokens; a diverged run's perplexity, not an OverflowError
    return math.exp(min(nll / tokens, 700.0)) if tokens else float("nan")


def perplexity(net, ids, columns, comm, bptt, ctx):
    """exp(mean token NLL) of the stream ``ids`` (``stream_nll``)."""
    return _ppl(*stream_nll(net, ids, columns, comm, bptt, ctx))


class WindowSampler(EpochSampler):
    """The BPTT windows of an epoch, in order, as the loop's items: each global step gives every
    worker the same window index (each runs it on its own columns). ``windows(size)`` is the number
    of windows for ``size`` workers (recomputed on a resize)."""

    def __init__(self, windows):
        self.windows = windows
        super().__init__(windows(1), shuffle=False)

    def reshard(self, rank, size):   # a resize keeps the fraction of the epoch done (the columns move)
        old = self.per_epoch
        super().reshard(rank, size)
        self.n = self.per_epoch = self.windows(size)
        if old and old != self.per_epoch:
            self.processed = self.processed * self.per_epoch // old

    def state_dict(self):
        return {**super().state_dict(), "per_epoch": self.per_epoch}

    def load_state_dict(self, d):   # a position saved at another worker count: the same fraction
        super().load_state_dict(d)
        old = int(d.get("per_epoch") or self.per_epoch)
        self.processed = self.processed * self.per_epoch // max(old, 1)

    def next_batch(self, batch_size, position=None):
        pos = self.processed if position is None else position
        return (None, 0) if pos >= self.per_epoch else (np.array([pos]), 1)


__all__ = ["batchify", "detach", "train_window", "stream_nll", "perplexity", "WindowSampler", "LOSS"]
