"""glibc malloc settings suited to MXNet's way of allocating (docs/design.md, "Conventions").

MXNet allocates an operator's output in its engine's worker threads and frees it, asynchronously,
in another. With glibc's defaults each worker thread gets its own malloc arena, an arena's heap
is at most 64 MB, and freed memory at the top of a heap goes back to the system at once. A block
of tens of MB (one (100k, 64) float32 array is 25.6 MB) then gets a new heap for every operator,
and its pages fault in again on every first touch: about 6,000 page faults for each such output.

``tune()`` sets, once per process, with ``mallopt``:

- one arena (``M_ARENA_MAX`` 1), so that every thread allocates from the main heap, which has no
  size cap;
- allocations up to 32 MB from the heap (``M_MMAP_THRESHOLD``, the largest value glibc takes);
  larger blocks are mapped and unmapped on their own;
- up to 1 GiB of free memory kept at the heap's top before it is returned
  (``M_TRIM_THRESHOLD``).

``import gluon_suite.graph`` calls it; the vision and language packages leave it to the user
(``gluon_suite.malloc.tune()``). docs/graph.md, "Memory and the allocator", has the measurements.
It changes nothing when the process does not use glibc, when the user has set glibc's own
variables (``MALLOC_ARENA_MAX``, ``MALLOC_MMAP_THRESHOLD_``, ``MALLOC_TRIM_THRESHOLD_``,
``MALLOC_TOP_PAD_``, ``MALLOC_MMAP_MAX_``, or ``glibc.malloc.*`` in ``GLIBC_TUNABLES``: the
user's settings win), when another allocator is preloaded, or when ``GLUON_SUITE_MALLOC=off``.
A value of ``GLUON_SUITE_MALLOC`` other than on/off is a one-line ``UserError``.
``state()`` says what was done and why.
"""
import os
import platform
import sys

from .utils.env import env

# (name, mallopt parameter number from glibc's malloc.h, value)
SETTINGS = (
    ("arena_max", -8, 1),
    ("mmap_threshold", -3, 32 << 20),
    ("trim_threshold", -1, 1 << 30),
)
GLIBC_VARIABLES = ("MALLOC_ARENA_MAX", "MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_",
                   "MALLOC_TOP_PAD_", "MALLOC_MMAP_MAX_")
OTHER_ALLOCATORS = ("jemalloc", "tcmalloc", "mimalloc")

_state = None


def _reason_to_skip(environ):
    """Why the process's malloc must be left as it is, or None; a value of GLUON_SUITE_MALLOC
    other than on/off raises UserError."""
    if not env("GLUON_SUITE_MALLOC", environ):
        return "GLUON_SUITE_MALLOC=off"
    user = [name for name in GLIBC_VARIABLES if name in environ]
    if "glibc.malloc." in environ.get("GLIBC_TUNABLES", ""):
        user.append("GLIBC_TUNABLES")
    if user:
        return "the user's own settings: " + ", ".join(user)
    preload = environ.get("LD_PRELOAD", "")
    for name in OTHER_ALLOCATORS:
        if name in preload:
            return f"{name} is preloaded"
    if not sys.platform.startswith("linux") or platform.libc_ver()[0] != "glibc":
        return "not glibc"
    return None


def tune(environ=None):
    """Apply the settings above once per process; returns ``state()``."""
    global _state
    if _state is not None:
        return dict(_state)
    environ = os.environ if environ is None else environ
    reason = _reason_to_skip(environ)
    applied = {}
    if reason is None:
        import ctypes
        try:
            libc = ctypes.CDLL("libc.so.6")
            for name, param, value in SETTINGS:
                if libc.mallopt(ctypes.c_int(param), ctypes.c_int(value)) != 1:
                    reason = f"mallopt refused {name}={value}"
                    break
                applied[name] = value
        except (OSError, AttributeError) as err:
            reason = f"libc not loadable ({err})"
    _state = {"applied": reason is None, "settings": applied, "reason": reason}
    return dict(_state)


def state():
    """``{"applied": bool, "settings": {name: value}, "reason": why not, or None}``, or None
    before ``tune()`` ran."""
    return None if _state is None else dict(_state)
