"""Negative samplers for link prediction, as DGL's ``dgl.dataloading.negative_sampler``: given a
graph and some of its edges (the positives), node pairs that serve as non-edges.

``Uniform`` and ``DegreeWeighted`` keep each positive edge's source and draw ``k`` destinations for
it, so negatives ``i*k .. i*k + k - 1`` belong to positive ``i`` (what ``link_metrics.mrr`` and
``hits_at_k`` rank against):

- ``Uniform(k)`` (DGL's ``Uniform`` / ``PerSourceUniform``): destinations uniform over the
  relation's destination nodes, P(v) = 1 / N.
- ``DegreeWeighted(k, power=0.75)``: destinations drawn with P(v) proportional to
  ``in_degree(v) ** power`` in the graph the sampler is given, the noise distribution of word2vec
  and of DGL's unsupervised GraphSAGE example (their ``in_degrees() ** 0.75`` weights). Popular
  nodes are drawn more often, so a model cannot score well by node popularity alone; a node no
  edge enters is never drawn.
- ``GlobalUniform(k, exclude_self_loops=True, replace=False)`` (DGL's ``GlobalUniform``): pairs
  (u', v') with both ends uniform over the relation's source and destination nodes, not tied to
  any positive; at most ``k * len(eids)`` of them, none an edge of the graph, none a self-loop
  (``exclude_self_loops``, on a relation whose two ends are one node type), and none twice unless
  ``replace``.

A pair drawn by the first two may happen to be an edge of the graph (as in DGL; on a sparse graph that is
rare).
``sampler(g, eids)`` returns ``(src, dst)`` NDArrays of the graph's id type on its context; on a
heterograph ``eids`` is ``{edge type: ids}`` and the result ``{canonical edge type: (src, dst)}``,
destinations drawn among the relation's destination type. ``sample(g, eids)`` gives the same as
int64 NumPy arrays. Randomness comes from ``rng`` (a NumPy ``RandomState``) or the sampling
module's generator, which ``dgl.seed`` resets."""
import numpy as np

from .base import GraphError, as_ids
from .hetero_graph import HeteroGraph
from .sampling import default_rng

__all__ = ["Uniform", "PerSourceUniform", "GlobalUniform", "DegreeWeighted"]


class _PerSource:
    """The shared part: ``k`` destinations per positive edge, kept with the edge's source."""

    def __init__(self, k, rng=None):
        if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1:
            raise GraphError(f"{type(self).__name__}(k): k is the number of negatives per edge, a whole number "
                             f">= 1; got {k!r}")
        self.k, self.rng = int(k), rng

    def _draw(self, rel, n, rng):
        """``n`` destination ids of relation ``rel``: defined by each sampler (uniform, degree-weighted)."""
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


class GlobalUniform(_PerSource):
    """At most ``k`` negative pairs per positive edge, both ends uniform (the module docstring).
    Candidates are drawn in rounds of ``1 + redundancy`` times the pairs still missing (at most
    ``ROUNDS`` rounds); those that are edges of the graph, self-loops (with ``exclude_self_loops``)
    or, without ``replace``, already kept are dropped, in draw order. Fewer than ``k * len(eids)``
    come back only from a graph so dense that the rounds find too few non-edges."""

    ROUNDS = 10

    def __init__(self, k, exclude_self_loops=True, replace=False, redundancy=None, rng=None):
        super().__init__(k, rng)
        redundancy = 1.0 if redundancy is None else redundancy
        if not np.isfinite(redundancy) or redundancy < 0:
            raise GraphError(f"GlobalUniform: redundancy must be a finite number >= 0, got {redundancy!r}")
        self.exclude_self_loops, self.replace, self.redundancy = bool(exclude_self_loops), bool(replace), redundancy

    def _one(self, rel, eids, rng):
        eids = as_ids(eids, "eids")
        if len(eids) and (eids.min() < 0 or eids.max() >= rel.num_edges()):
            raise GraphError(f"GlobalUniform: edge ids must lie in 0..{rel.num_edges() - 1}")
        ns, nd = rel.num_src_nodes(), rel.num_dst_nodes()
        want = self.k * len(eids)
        if want and (ns == 0 or nd == 0):
            raise GraphError("GlobalUniform: the relation has no source or destination nodes to draw")
        edges = rel._get("edge_keys", lambda: np.unique(rel._src.astype(np.int64) * nd + rel._dst))
        loops = self.exclude_self_loops and not rel._two_sides
        kept = np.zeros(0, np.int64)
        for _ in range(self.ROUNDS):
            missing = want - len(kept)
            if missing <= 0:
                break
            m = int(np.ceil(missing * (1 + self.redundancy)))
            u, v = rng.randint(0, ns, size=m), rng.randint(0, nd, size=m)
            key = u.astype(np.int64) * nd + v
            pos = np.minimum(np.searchsorted(edges, key), max(len(edges) - 1, 0))
            ok = ~(edges[pos] == key) if len(edges) else np.ones(m, bool)
            if loops:
                ok &= u != v
            key = np.concatenate([kept, key[ok]])
            if not self.replace:
                _, first = np.unique(key, return_index=True)
                key = key[np.sort(first)]
            kept = key[:want]
        return kept // nd, kept % nd
