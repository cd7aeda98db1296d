"""The statistics every bench uses to say what a difference means (docs/benchmarks.md, "Statistics").

- :func:`paired_interval`: the seeds of two arms are paired (same seed, same data order, same
  initialisation); the per-seed differences ``d_i = a_i - b_i`` (``scale="absolute"``), relative
  differences ``a_i / b_i - 1`` (``"relative"``) or log ratios ``log(a_i / b_i)`` (``"log"``, reported
  back as a ratio) get a two-sided confidence interval for their mean: Student's t with n - 1 degrees
  of freedom (the default), or a percentile bootstrap over the seeds (fixed resampling seed, so a
  result file can be recomputed exactly). With ``b`` omitted, the interval is for the mean of ``a``.
- :func:`verdict`: "better", "worse" or "within noise", read off the interval and never chosen by
  hand: an interval that lies wholly on one side of "no difference" is a difference.
- :func:`decide`: whether a protocol's criterion holds, fails or is inconclusive on that interval.
- :func:`time_to_target`: the time (or step) at which a metric first reaches a target, by linear
  interpolation between the evaluation before and the first evaluation at or past the target.
"""
import math

__all__ = ["summary", "t_quantile", "t_interval", "bootstrap_interval", "paired_interval", "verdict",
           "decide", "time_to_target", "TESTS", "SCALES"]

SCALES = ("absolute", "relative", "log")
TESTS = ("better", "not_worse", "within", "at_most", "at_least")


def summary(values):
    """n, mean, sample standard deviation (ddof 1; None for one value), min and max of ``values``."""
    xs = [float(v) for v in values]
    n = len(xs)
    if not n:
        return {"n": 0, "mean": None, "std": None, "min": None, "max": None}
    mean = math.fsum(xs) / n
    std = math.sqrt(math.fsum((x - mean) ** 2 for x in xs) / (n - 1)) if n > 1 else None
    return {"n": n, "mean": mean, "std": std, "min": min(xs), "max": max(xs)}


def t_quantile(p, df):
    """The ``p`` quantile of Student's t distribution with ``df`` degrees of freedom."""
    from scipy.stats import t
    return float(t.ppf(p, df))


def t_interval(diffs, level=0.95):
    """Two-sided ``level`` interval for the mean of ``diffs``: mean +- t(1 - alpha/2, n-1) sd / sqrt(n).
    None bounds for fewer than two values (no spread to measure)."""
    s = summary(diffs)
    if s["n"] < 2:
        return {**s, "low": None, "high": None, "half_width": None, "method": "t", "level": level}
    half = t_quantile(0.5 + level / 2, s["n"] - 1) * s["std"] / math.sqrt(s["n"])
    return {**s, "low": s["mean"] - half, "high": s["mean"] + half, "half_width": half, "method": "t",
            "level": level}


def bootstrap_interval(diffs, level=0.95, resamples=10000, seed=0):
    """Percentile bootstrap interval for the mean of ``diffs``: ``resamples`` resamples of the seeds
    with replacement, drawn from a generator seeded with ``seed``; the interval is the
    (1 - level)/2 and (1 + level)/2 quantiles of the resampled means."""
    import numpy as np
    s = summary(diffs)
    if s["n"] < 2:
        return {**s, "low": None, "high": None, "method": "bootstrap", "level": level, "resamples": resamples}
    d = np.asarray(diffs, dtype=np.float64)
    idx = np.random.default_rng(seed).integers(0, len(d), size=(resamples, len(d)))
    means = d[idx].mean(axis=1)
    low, high = np.quantile(means, [(1 - level) / 2, (1 + level) / 2])
    return {**s, "low": float(low), "high": float(high), "method": "bootstrap", "level": level,
            "resamples": resamples, "resample_seed": seed}


def _differences(a, b, scale):
    if scale not in SCALES:
        raise ValueError(f"scale {scale!r}: use one of {', '.join(SCALES)}")
    if b is None:
        return [float(x) for x in a]
    if len(a) != len(b):
        raise ValueError(f"paired values need one per seed on both sides: {len(a)} against {len(b)}")
    if scale == "absolute":
        return [float(x) - float(y) for x, y in zip(a, b)]
    if any(float(y) == 0 for y in b) or (scale == "log" and any(float(x) <= 0 or float(y) <= 0 for x, y in zip(a, b))):
        raise ValueError(f"a {scale} comparison needs positive values")
    if scale == "relative":
        return [float(x) / float(y) - 1 for x, y in zip(a, b)]
    return [math.log(float(x) / float(y)) for x, y in zip(a, b)]


def paired_interval(a, b=None, level=0.95, method="t", scale="absolute", resamples=10000, seed=0):
    """The interval for the mean paired difference of ``a`` against ``b`` (lists in seed order) on
    ``scale``; with ``b`` None, for the mean of ``a``. On the ``log`` scale the mean and bounds are
    also given as ratios (``ratio``, ``ratio_low``, ``ratio_high``: the geometric mean ratio)."""
    diffs = _differences(a, b, scale)
    if method == "t":
        out = t_interval(diffs, level)
    elif method == "bootstrap":
        out = bootstrap_interval(diffs, level, resamples, seed)
    else:
        raise ValueError(f"interval method {method!r}: use t or bootstrap")
    out.update(scale=scale, paired=b is not None, values=diffs)
    if scale == "log" and b is not None:
        out.update({k: (math.exp(out[v]) if out[v] is not None else None)
                    for k, v in (("ratio", "mean"), ("ratio_low", "low"), ("ratio_high", "high"))})
    return out


def verdict(interval, higher_is_better=True, null=0.0):
    """"better", "worse" or "within noise" from an interval of a - b (``null``: no difference; for a
    one-sample interval, the reference value). "one seed: no interval" when there is none."""
    low, high = interval.get("low"), interval.get("high")
    if low is None or high is None:
        return "one seed: no interval"
    if low > null:
        return "better" if higher_is_better else "worse"
    if high < null:
        return "worse" if higher_is_better else "better"
    return "within noise"


def decide(test, interval, higher_is_better=True, margin=None, value=None):
    """Whether a criterion "holds", "fails" or is "inconclusive" on ``interval`` (bounds on the
    criterion's scale; on the log scale ``margin`` and ``value`` are ratios and are compared in logs).

    - ``better``: a is better than b: holds when the interval excludes no difference on a's good
      side, fails when it does so on the bad side.
    - ``not_worse`` (``margin`` >= 0): a is no worse than b by more than ``margin``.
    - ``within`` (``margin``): |a - b| <= margin: holds when the whole interval lies in
      [-margin, margin], fails when it lies wholly outside.
    - ``at_most`` / ``at_least`` (``value``): the compared quantity is at most / at least ``value``.
    """
    low, high = interval.get("low"), interval.get("high")
    if low is None or high is None:
        return "inconclusive"
    log = interval.get("scale") == "log"

    def conv(x):
        return math.log(x) if log else x
    if test == "better":
        good, bad = (low > 0, high < 0) if higher_is_better else (high < 0, low > 0)
    elif test == "not_worse":
        if margin is None or margin < 0:
            raise ValueError("a not_worse criterion needs margin >= 0")
        m = conv(1 + margin) if log else margin
        good, bad = (low > -m, high < -m) if higher_is_better else (high < m, low > m)
    elif test == "within":
        if margin is None or margin < 0:
            raise ValueError("a within criterion needs margin >= 0")
        m = conv(1 + margin) if log else margin
        good, bad = (low >= -m and high <= m), (high < -m or low > m)
    elif test in ("at_most", "at_least"):
        if value is None:
            raise ValueError(f"an {test} criterion needs a value")
        v = conv(value)
        good, bad = (high <= v, low > v) if test == "at_most" else (low >= v, high < v)
    else:
        raise ValueError(f"criterion test {test!r}: use one of {', '.join(TESTS)}")
    return "holds" if good else "fails" if bad else "inconclusive"


def time_to_target(times, values, target, higher_is_better=True):
    """The first time at which ``values`` (measured at ``times``, increasing) reaches ``target``,
    interpolated linearly between the last evaluation short of it and the first at or past it; the
    first evaluation's time when it is already there; None when it is never reached. The answer is
    only as fine as the evaluation cadence: a result states the cadence beside it."""
    prev = None
    for t, v in zip(times, values):
        reached = v >= target if higher_is_better else v <= target
        if reached:
            if prev is None:
                return float(t)
            t0, v0 = prev
            if v == v0:
                return float(t)
            return float(t0 + (target - v0) * (t - t0) / (v - v0))
        prev = (float(t), float(v))
    return None
