"""gluon_suite.malloc: ``import gluon_suite.graph`` sets glibc's malloc for MXNet's allocation pattern
(one arena, blocks up to 32 MB from the heap, up to 1 GiB kept at the heap's top), and leaves it
alone when asked to or when the user has set glibc's own variables.

The effect is read from glibc itself, in a fresh process: a chunk's size word carries the flags
IS_MMAPPED (0x2) and NON_MAIN_ARENA (0x4), and ``mallinfo2`` reports the heap's size and the
releasable space at its top. With glibc's defaults a fresh process maps a 20 MB block on its own,
a new thread allocates from an arena of its own, and nothing of a freed mapped block stays."""
import importlib
import json
import os
import subprocess
import sys

import pytest

from gluon_suite import malloc
from gluon_suite.utils import UserError

glibc_only = pytest.mark.skipif(not sys.platform.startswith("linux") or
                                __import__("platform").libc_ver()[0] != "glibc",
                                reason="glibc's malloc only")

PROBE = r"""
import ctypes, json, sys, threading
if sys.argv[1] == "import":
    import gluon_suite.graph
elif sys.argv[1] == "tune":
    import gluon_suite.malloc
    gluon_suite.malloc.tune()
libc = ctypes.CDLL("libc.so.6")
libc.malloc.restype = ctypes.c_void_p
libc.malloc.argtypes = [ctypes.c_size_t]
libc.free.argtypes = [ctypes.c_void_p]

class Mallinfo2(ctypes.Structure):
    _fields_ = [(n, ctypes.c_size_t) for n in
                ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks",
                 "fordblks", "keepcost")]
libc.mallinfo2.restype = Mallinfo2

def flags(p):   # the low bits of the chunk's size word, just before the user pointer
    return ctypes.c_size_t.from_address(p - ctypes.sizeof(ctypes.c_size_t)).value & 0x7

big = libc.malloc(20 << 20)
out = {"big_mmapped": bool(flags(big) & 0x2)}
libc.free(big)
info = libc.mallinfo2()
out["heap_after_free"] = info.arena
out["top_after_free"] = info.keepcost

seen = {}
def in_thread():
    p = libc.malloc(4000)
    seen["non_main_arena"] = bool(flags(p) & 0x4)
    libc.free(p)
t = threading.Thread(target=in_thread)
t.start(); t.join()
out.update(seen)
print(json.dumps(out))
"""


def _probe(mode, **env):
    full = {k: v for k, v in os.environ.items()
            if not k.startswith("MALLOC_") and k not in ("GLUON_SUITE_MALLOC", "MXNET_EXEC_BULK_EXEC_TRAIN")}
    full.update(env)
    r = subprocess.run([sys.executable, "-c", PROBE, mode], capture_output=True, text=True, env=full,
                       cwd=os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout.strip().splitlines()[-1])


@glibc_only
@pytest.mark.parametrize("mode", ["import", "tune"])
def test_graph_import_or_tune_sets_one_arena_heap_blocks_to_32mb_and_keeps_the_top(mode):
    out = _probe(mode)
    assert out["big_mmapped"] is False                    # 20 MB < 32 MB: from the heap
    assert out["heap_after_free"] >= 20 << 20             # and kept after free (trim at 1 GiB)
    assert out["top_after_free"] >= 20 << 20
    assert out["non_main_arena"] is False                 # a new thread uses the main arena


@glibc_only
@pytest.mark.parametrize("env", [{"GLUON_SUITE_MALLOC": "off"}, {"GLUON_SUITE_MALLOC": "0"},
                                 {"MALLOC_ARENA_MAX": "4"}, {"GLIBC_TUNABLES": "glibc.malloc.tcache_count=8"}])
def test_glibc_defaults_stay_when_switched_off_or_set_by_the_user(env):
    out = _probe("tune", **env)
    assert out["big_mmapped"] is True
    assert out["heap_after_free"] < 20 << 20
    if "MALLOC_ARENA_MAX" not in env:
        assert out["non_main_arena"] is True


@glibc_only
def test_without_the_package_the_probe_sees_glibcs_defaults():
    # the probe itself tells the two apart: the same process without importing gluon_suite
    out = _probe("plain")
    assert out == {"big_mmapped": True, "heap_after_free": out["heap_after_free"],
                   "top_after_free": out["top_after_free"], "non_main_arena": True}
    assert out["heap_after_free"] < 20 << 20


@pytest.mark.parametrize("environ,reason", [
    ({"GLUON_SUITE_MALLOC": "off"}, "GLUON_SUITE_MALLOC=off"),
    ({"GLUON_SUITE_MALLOC": "False"}, "GLUON_SUITE_MALLOC=off"),
    ({"MALLOC_TRIM_THRESHOLD_": "1"}, "the user's own settings: MALLOC_TRIM_THRESHOLD_"),
    ({"MALLOC_MMAP_THRESHOLD_": "1", "MALLOC_TOP_PAD_": "1"},
     "the user's own settings: MALLOC_MMAP_THRESHOLD_, MALLOC_TOP_PAD_"),
    ({"GLIBC_TUNABLES": "glibc.malloc.arena_max=2"}, "the user's own settings: GLIBC_TUNABLES"),
    ({"LD_PRELOAD": "/usr/lib/libjemalloc.so.2"}, "jemalloc is preloaded"),
])
def test_reasons_to_leave_malloc_alone(environ, reason):
    assert malloc._reason_to_skip(environ) == reason


@glibc_only
@pytest.mark.parametrize("environ", [{}, {"GLUON_SUITE_MALLOC": "on"}, {"GLUON_SUITE_MALLOC": "1"},
                                     {"GLIBC_TUNABLES": "glibc.pthread.rseq=0"}])
def test_nothing_stops_it_by_default(environ):
    assert malloc._reason_to_skip(environ) is None


def test_an_unknown_value_is_a_one_line_error_naming_the_variable_and_the_values():
    with pytest.raises(UserError) as err:
        malloc._reason_to_skip({"GLUON_SUITE_MALLOC": "of"})
    msg = str(err.value)
    assert "\n" not in msg and "GLUON_SUITE_MALLOC='of'" in msg
    assert "GLUON_SUITE_MALLOC=on" in msg and "GLUON_SUITE_MALLOC=off" in msg


@glibc_only
def test_an_unknown_value_stops_the_graph_import_before_anything_is_set():
    full = {k: v for k, v in os.environ.items() if not k.startswith("MALLOC_")}
    full["GLUON_SUITE_MALLOC"] = "maybe"
    r = subprocess.run([sys.executable, "-c", "import gluon_suite.graph"], capture_output=True, text=True,
                       env=full, cwd=os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
    assert r.returncode != 0
    assert "UserError: environment variable GLUON_SUITE_MALLOC='maybe' is not on or off" in r.stderr


@glibc_only
def test_this_process_state_says_what_was_applied():
    # make test sets none of the variables that would leave malloc alone
    importlib.import_module("gluon_suite.graph")   # tunes once per process
    assert malloc.state() == {"applied": True, "reason": None,
                     "settings": {"arena_max": 1, "mmap_threshold": 32 << 20, "trim_threshold": 1 << 30}}
