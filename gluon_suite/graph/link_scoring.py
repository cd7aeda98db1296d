"""Edge scorers and the loss for link prediction, as Gluon blocks: a score (a logit) per edge of a
pair graph from its end nodes' representations.

- ``DotScorer()``: s(u, v) = h_u . h_v (no parameters; what DGL's link-prediction tutorial uses).
- ``MLPScorer(in_units, hidden)``: s(u, v) = w2 . relu(W1 [h_u ; h_v] + b1) + b2, an order-aware
  score (a cited paper and a citing one play different parts).

``scorer(pair, h)``: ``h`` has one row per node of the pair graph (``h[pair.ndata[NID]]`` of a
full-graph encoder's output, or a sampled encoder's output as it is); on a heterograph ``h`` is
``{node type: rows}`` and the result ``{canonical edge type: scores}`` for every relation of the
pair graph. Scores are a 1-D NDArray in the pair graph's edge order. ``pair_rows(pair, h)`` takes
a full-graph encoder's rows (a tensor, or ``{node type: tensor}``) at the pair graph's nodes.

``link_loss(pos, neg)``: the mean binary cross-entropy of sigmoid(score) against 1 for the
positive scores and 0 for the negative ones, -[sum log s(p) + sum log(1 - s(n))] / (P + N),
computed from the logits without overflow (``log(1 + exp(-|x|)) + max(-x, 0)``). Dicts of scores
(heterograph) are concatenated first."""
import mxnet as mx
from mxnet import gluon

from .base import NID, GraphError, zeros
from .hetero_graph import HeteroGraph

__all__ = ["DotScorer", "MLPScorer", "link_loss", "pair_rows"]


class _PairScorer(gluon.Block):
    """The shared part: gather each edge's end rows and score them with ``_score``."""

    def _score(self, hu, hv):
        """Each edge's score from its end rows: defined by DotScorer and MLPScorer."""
        raise NotImplementedError

    def _one(self, rel, hs, hd):
        if rel.num_edges() == 0:
            return mx.nd.zeros((0,), ctx=hs.context)
        if hs.shape[0] != rel.num_src_nodes() or hd.shape[0] != rel.num_dst_nodes():
            raise GraphError(f"{type(self).__name__}: h has {hs.shape[0]} rows but the pair graph has "
                             f"{rel.num_src_nodes()} nodes; give one row per pair-graph node (h[pair.ndata[NID]])")
        return self._score(mx.nd.take(hs, rel._src_nd), mx.nd.take(hd, rel._dst_nd)).reshape((-1,))

    def forward(self, pair, h):
        """Scores of ``pair``'s edges (a dict per relation on a heterograph)."""
        if isinstance(pair, HeteroGraph):
            if not isinstance(h, dict):
                raise GraphError(f"{type(self).__name__}: on a heterograph pass h as {{node type: rows}}")
            return {c: self._one(pair[c], h[c[0]], h[c[2]]) for c in pair.canonical_etypes}
        if isinstance(h, dict):
            h = next(iter(h.values())) if len(h) == 1 else (h[pair.srctypes[0]], h[pair.dsttypes[0]])
        hs, hd = h if isinstance(h, tuple) else (h, h)
        return self._one(pair, hs, hd)


class DotScorer(_PairScorer):
    """s(u, v) = h_u . h_v."""

    def _score(self, hu, hv):
        return (hu * hv).sum(axis=1)


class MLPScorer(_PairScorer):
    """s(u, v) = w2 . relu(W1 [h_u ; h_v] + b1) + b2 on ``in_units``-wide rows (``hidden`` units)."""

    def __init__(self, in_units, hidden=None):
        super().__init__()
        hidden = int(hidden or in_units)
        with self.name_scope():
            self.hidden = gluon.nn.Dense(hidden, in_units=2 * int(in_units), activation="relu")
            self.out = gluon.nn.Dense(1, in_units=hidden)

    def _score(self, hu, hv):
        return self.out(self.hidden(mx.nd.concat(hu, hv, dim=1)))


def pair_rows(pair, h):
    """The rows of ``h`` (every node of the graph the pair graph was taken from; a dict per node
    type on a heterograph) at the pair graph's nodes, ``pair``'s ``NID``: what a scorer reads."""
    if isinstance(pair, HeteroGraph):
        return {t: mx.nd.take(h[t], pair.nodes[t].data[NID]) if pair.num_nodes(t) else
                zeros((0,) + h[t].shape[1:], h[t].dtype, h[t].context) for t in pair.ntypes if t in h}
    return mx.nd.take(h, pair.ndata[NID])


def _flat(scores):
    if isinstance(scores, dict):
        parts = [s for s in scores.values() if s.shape[0]]
        return mx.nd.concat(*parts, dim=0) if len(parts) > 1 else parts[0] if parts else None
    return scores


def _softplus(x):
    return mx.nd.log(1 + mx.nd.exp(-mx.nd.abs(x))) + mx.nd.relu(x)


def link_loss(pos, neg):
    """Mean binary cross-entropy of the positive (label 1) and negative (label 0) logits (the
    module docstring)."""
    pos, neg = _flat(pos), _flat(neg)
    parts = [_softplus(-pos)] if pos is not None else []
    parts += [_softplus(neg)] if neg is not None else []
    if not parts:
        raise GraphError("link_loss: no scores (empty batch)")
    return mx.nd.concat(*parts, dim=0).mean()
