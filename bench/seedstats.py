"""Plotting and table helpers over seeds for the benches; the statistics themselves come from
gluon_suite.evidence.stats (docs/benchmarks.md, "Statistics")."""


def mean_std(values):
    """Mean and sample standard deviation (ddof 1; 0 for a single value), from
    ``gluon_suite.evidence.stats.summary``, for table cells."""
    from gluon_suite.evidence.stats import summary
    s = summary(values)
    return {"mean": s["mean"], "std": s["std"] if s["std"] is not None else 0.0}


def plot_band(ax, curves, label, **style):
    """Plot the mean of ``curves`` (one equal-length sequence per seed) against 1..n with a band
    of one sample std around it."""
    import numpy as np
    a = np.array(curves, dtype=float)
    m, s = a.mean(0), (a.std(0, ddof=1) if len(a) > 1 else 0 * a[0])
    x = np.arange(1, len(m) + 1)
    line, = ax.plot(x, m, label=f"{label} ({len(a)} seeds)", **style)
    ax.fill_between(x, m - s, m + s, color=line.get_color(), alpha=0.2)
    return line
