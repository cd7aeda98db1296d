"""Link-prediction metrics on host arrays (float64, for evaluation, not a training step's path).

- ``auc(pos, neg)``: the area under the ROC curve, the probability that a random positive
  scores above a random negative, ties counting one half:
  AUC = (#{(p, n): s_p > s_n} + 0.5 #{(p, n): s_p = s_n}) / (P N), computed from ranks
  (Mann-Whitney U with average ranks for ties) in O((P + N) log(P + N)).
- ``ranks(pos, neg)``: each positive's rank among itself and its own ``K`` negatives (``neg``
  shaped (P, K), or flat with positive i's negatives at ``i*K .. i*K + K - 1``, as the negative
  samplers emit them): 1 + #{negatives above} + 0.5 #{negatives tied}, the mean of the
  optimistic and the pessimistic rank, so a constant scorer is not rewarded.
- ``mrr(pos, neg)``: the mean of 1 / rank; ``hits_at_k(pos, neg, k)``: the fraction of ranks <= k.
"""
import mxnet as mx
import numpy as np

from .base import GraphError

__all__ = ["auc", "ranks", "mrr", "hits_at_k"]


def _host(x):
    if isinstance(x, dict):
        x = [_host(v) for v in x.values()]
        return np.concatenate(x) if x else np.zeros(0)
    return np.asarray(x.asnumpy() if isinstance(x, mx.nd.NDArray) else x, dtype=np.float64)


def auc(pos, neg):
    """ROC AUC of positive scores ``pos`` against negative scores ``neg`` (any shapes)."""
    from scipy.stats import rankdata
    p, n = _host(pos).reshape(-1), _host(neg).reshape(-1)
    if not len(p) or not len(n):
        raise GraphError(f"auc needs positive and negative scores, got {len(p)} and {len(n)}")
    if not (np.isfinite(p).all() and np.isfinite(n).all()):
        raise GraphError("auc: a score is NaN or infinite")
    r = rankdata(np.concatenate([p, n]))[:len(p)]
    return float((r.sum() - len(p) * (len(p) + 1) / 2) / (len(p) * len(n)))


def ranks(pos, neg):
    """Each positive's rank among its negatives (the module docstring), float64 (P,)."""
    p = _host(pos).reshape(-1)
    n = _host(neg)
    if n.ndim == 1:
        if not len(p) or len(n) % len(p):
            raise GraphError(f"{len(n)} negative scores do not split into {len(p)} equal groups, one per positive")
        n = n.reshape(len(p), -1)
    if n.shape[0] != len(p):
        raise GraphError(f"neg has {n.shape[0]} rows but there are {len(p)} positives; give (positives, K)")
    return 1 + (n > p[:, None]).sum(1) + 0.5 * (n == p[:, None]).sum(1)


def mrr(pos, neg):
    """Mean reciprocal rank of the positives among their negatives."""
    return float(np.mean(1.0 / ranks(pos, neg)))


def hits_at_k(pos, neg, k=10):
    """Fraction of positives ranked within the first ``k`` among their negatives."""
    if int(k) < 1:
        raise GraphError(f"hits_at_k: k must be >= 1, got {k}")
    return float(np.mean(ranks(pos, neg) <= int(k)))
