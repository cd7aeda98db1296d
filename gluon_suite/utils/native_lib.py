"""Loading one of the suite's compiled MXNet operator libraries (the graph kernels, the compression
kernels) by the same rules: a ``GLUON_SUITE_*_KERNELS`` variable names another file or ``off``; the
default build is refused when a source is newer than it; any load failure means the caller falls
back to its uncompiled path, with the reason."""
import os

import mxnet as mx



def stale(path, sources):
    """Whether a file in ``sources`` is newer than the library ``path`` (a checkout without the
    sources never is)."""
    if not os.path.isdir(sources):
        return False
    built = os.path.getmtime(path)
    return any(os.path.getmtime(os.path.join(sources, f)) > built for f in os.listdir(sources))


def load_library(setting, variable, default_path, sources, probe_op, what):
    """``(loaded, reason, notify)``: load the library that ``setting`` names (the value of
    ``variable`` read through ``env``: None for ``default_path``, ``off``, or an existing file) and
    check that it registered ``probe_op``; ``reason`` says why not (``what`` names its operators)
    and ``notify`` whether the caller should say so (not when turned off)."""
    if setting == "off":
        return False, f"turned off by {variable}", False
    path = setting or default_path
    if not os.path.exists(path):
        return False, f"{path} not found (run `make kernels`)", True
    if not setting and stale(path, sources):
        return False, f"{path} is older than its sources (run `make kernels`)", True
    try:
        mx.library.load(path, False)
    except Exception as e:  # noqa: BLE001 - any load failure means: fall back
        text = str(e).strip()
        return False, f"{path} did not load ({text.splitlines()[0] if text else type(e).__name__})", True
    if hasattr(mx.nd, probe_op):
        return True, "", False
    return False, f"{path} registered no {what} operators", True
