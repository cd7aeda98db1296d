"""Statistics over seeds, shared by the comparative benches: mean and sample std of a metric, and
a mean curve with a +-1 std band."""


def mean_std(values):
    """Mean and sample standard deviation (ddof 1; 0 for a single value)."""
    import numpy as np
    return {"mean": float(np.mean(values)), "std": float(np.std(values, ddof=1)) if len(values) > 1 else 0.0}


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
