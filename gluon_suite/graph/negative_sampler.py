"""Negative samplers for link prediction, as DGL's ``dgl.dataloading.negative_sampler``: given a
graph and some of its edges (the positives), node pairs that serve as non-edges.

Both samplers keep each positive edge's source and draw ``k`` destinations for it, so negatives
``i*k .. i*k + k - 1`` belong to positive ``i`` (what ``link_metrics.mrr`` and ``hits_at_k`` rank
against):

- ``Uniform(k)`` (DGL's ``Uniform`` / ``PerSourceUniform``): destinations uniform over the
  relation's destination nodes, P(v) = 1 / N.
- ``DegreeWeighted(k, power=0.75)``: destinations drawn with P(v) proportional to
  ``in_degree(v) ** power`` in the graph the sampler is given, the noise distribution of word2vec
  and of DGL's unsupervised GraphSAGE example (their ``in_degrees() ** 0.75`` weights). Popular
  nodes are drawn more often, so a model cannot score well by node popularity alone; a node no
  edge enters is never drawn.

A drawn pair may happen to be an edge of the graph (as in DGL; on a sparse graph that is rare).
``sampler(g, eids)`` returns ``(src, dst)`` NDArrays of the graph's id type on its context; on a
heterograph ``eids`` is ``{edge type: ids}`` and the result ``{canonical edge type: (src, dst)}``,
destinations drawn among the relation's destination type. ``sample(g, eids)`` gives the same as
int64 NumPy arrays. Randomness comes from ``rng`` (a NumPy ``RandomState``) or the sampling
module's generator, which ``dgl.seed`` resets."""
import numpy as np

from .base import GraphError, as_ids
from .hetero_graph import HeteroGraph
from .sampling import default_rng

__all__ = ["Uniform", "PerSourceUniform", "DegreeWeighted"]


class _PerSource:
    """The shared part: ``k`` destinations per positive edge, kept with the edge's source."""

    def __init__(self, k, rng=None):
        if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1:
            raise GraphError(f"{type(self).__name__}(k): k is the number of negatives per edge, a whole number "
                             f">= 1; got {k!r}")
        self.k, self.rng = int(k), rng

    def _draw(self, rel, n, rng):
        raise NotImplementedError

    def _one(self, rel, eids, rng):
        eids = as_ids(eids, "eids")
        if len(eids) and (eids.min() < 0 or eids.max() >= rel.num_edges()):
            raise GraphError(f"{type(self).__name__}: edge ids must lie in 0..{rel.num_edges() - 1}")
        src = np.repeat(rel._src[eids], self.k)
        return src, self._draw(rel, len(src), rng).astype(np.int64)

    def sample(self, g, eids, rng=None):
        """Negatives as int64 NumPy arrays: ``(src, dst)``, or ``{canonical etype: (src, dst)}``
        for a heterograph (``eids`` a dict ``{edge type: ids}``)."""
        rng = rng or self.rng or default_rng()
        if isinstance(g, HeteroGraph) or isinstance(eids, dict):
            if not isinstance(eids, dict):
                raise GraphError(f"{type(self).__name__}: a heterograph's edge ids come as a dict "
                                 "{edge type: ids}")
            return {g.to_canonical_etype(e) if isinstance(g, HeteroGraph) else g.canonical_etypes[0]:
                    self._one(g[e] if isinstance(g, HeteroGraph) else g, ids, rng) for e, ids in eids.items()}
        return self._one(g, eids, rng)

    def __call__(self, g, eids):
        """DGL's call: negatives as NDArrays of the graph's id type on its context."""
        out = self.sample(g, eids)
        if isinstance(out, dict):
            return {c: (g[c]._ids(s), g[c]._ids(d)) if isinstance(g, HeteroGraph) else (g._ids(s), g._ids(d))
                    for c, (s, d) in out.items()}
        return g._ids(out[0]), g._ids(out[1])


class Uniform(_PerSource):
    """``k`` destinations per positive edge, each uniform over the destination nodes."""

    def _draw(self, rel, n, rng):
        if rel.num_dst_nodes() == 0:
            raise GraphError("Uniform: the relation has no destination nodes to draw")
        return rng.randint(0, rel.num_dst_nodes(), size=n)


PerSourceUniform = Uniform


class DegreeWeighted(_PerSource):
    """``k`` destinations per positive edge, node v drawn with probability proportional to
    ``in_degree(v) ** power`` (the module docstring); ``probabilities(g)`` gives that
    distribution."""

    def __init__(self, k, power=0.75, rng=None):
        super().__init__(k, rng)
        if not np.isfinite(power) or power < 0:
            raise GraphError(f"DegreeWeighted: power must be a finite number >= 0, got {power!r}")
        self.power = float(power)

    def probabilities(self, rel):
        """P(v) for every destination node of the one-relation graph ``rel`` (float64)."""
        deg = np.bincount(rel._dst, minlength=rel.num_dst_nodes()).astype(np.float64)
        w = np.where(deg > 0, deg ** self.power, 0.0)
        if w.sum() == 0:
            raise GraphError("DegreeWeighted: no node has an incoming edge, so there is nothing to weight; "
                             "use Uniform")
        return w / w.sum()

    def _draw(self, rel, n, rng):
        p = rel._get(("degree_weights", self.power), lambda: np.cumsum(self.probabilities(rel)))
        # inverse-CDF draw: one uniform number per negative, no per-call normalisation pass
        return np.minimum(np.searchsorted(p, rng.random_sample(n) * p[-1], side="right"), len(p) - 1)
