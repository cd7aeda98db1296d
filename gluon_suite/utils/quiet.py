"""Quiet by default: known-harmless warnings of MXNet's native code are kept off the user's screen.

MXNet's oneDNN operators print warnings straight to file descriptor 2 from C++ ("MKLDNN Pooling:
training with prop_kind is forward_scoring", once per worker and shape), where no Python filter
reaches them. The suite's entry points therefore route fd 2 through a pipe whose reader drops
the lines listed in ``HARMLESS`` and passes every other line through unchanged. ``--verbose`` on any entry point, or
``GLUON_SUITE_VERBOSE=1``, turns all of this off.
"""
import atexit
import faulthandler
import os
import re
import sys
import threading

from .env import env

HARMLESS = (
    # oneDNN's pooling run without a workspace in a training-mode forward: results are exact
    re.compile(rb"MKLDNN Pooling: training with prop_kind is forward_scoring"),
    # MXNet's notice that the oneDNN cache was sized by the user (we never set it)
    re.compile(rb"MXNET_MKLDNN_CACHE_NUM is set"),
    # float16 LayerNorm/softmax/LpNorm advice, printed once per operator: the float16 recipes keep
    # float32 master weights and loss scaling, and the notice names no action for this run
    re.compile(rb"MXNET_SAFE_ACCUMULATION=1 is recommended"),
)
_state = {"installed": False}


def verbose():
    """True when the user asked to see every warning (``GLUON_SUITE_VERBOSE`` set to a yes value)."""
    return env("GLUON_SUITE_VERBOSE")


def strip_verbose(argv):
    """``argv`` without the ``--verbose`` flags that come before a ``--``; when one was given,
    ``GLUON_SUITE_VERBOSE=1`` is set for this process and the workers it starts."""
    argv = list(argv)
    end = argv.index("--") if "--" in argv else len(argv)
    kept = [a for a in argv[:end] if a != "--verbose"] + argv[end:]
    if len(kept) != len(argv):
        os.environ["GLUON_SUITE_VERBOSE"] = "1"
    return kept


def _pump(read_fd, write_fd, patterns):
    with os.fdopen(read_fd, "rb", 0) as f:
        for line in iter(f.readline, b""):
            if not any(p.search(line) for p in patterns):
                os.write(write_fd, line)


def quiet_native_warnings(patterns=HARMLESS):
    """Drop the ``patterns`` lines from this process's fd 2 (see the module docstring); a no-op
    when verbose or already installed. At exit the original stderr comes back and the reader
    drains what is left, so nothing else printed is lost."""
    if verbose() or _state["installed"]:
        return
    # MXNet's own switch for its multi-line "Storage type fallback detected" notice (sparse
    # graph operators fall back to dense kernels by design; results are exact)
    os.environ.setdefault("MXNET_STORAGE_FALLBACK_LOG_VERBOSE", "0")
    try:
        sys.stderr.flush()
        saved = os.dup(2)
        read_fd, write_fd = os.pipe()
        os.dup2(write_fd, 2)
        os.close(write_fd)
    except OSError:  # no fd 2 (a detached process): nothing to filter
        return
    _state["installed"] = True
    # a crash dump must reach the real stderr even if this process dies with the reader
    faulthandler.enable(file=os.fdopen(os.dup(saved), "w", closefd=False))
    reader = threading.Thread(target=_pump, args=(read_fd, saved, patterns), daemon=True,
                              name="gluon-suite-stderr")
    reader.start()

    def restore():
        try:
            sys.stderr.flush()
        except (OSError, ValueError):
            pass
        os.dup2(saved, 2)          # the pipe's write end closes here; the reader sees EOF
        reader.join(timeout=5)     # (unless a child still holds it: then do not wait longer)

    atexit.register(restore)
