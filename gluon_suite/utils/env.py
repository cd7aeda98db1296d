"""Every environment variable the suite reads, declared once, read through one typed accessor.

``VARIABLES`` holds one :class:`Variable` per name: its kind (how the text is parsed), default,
accepted values and a one-line description. ``env("GLUON_SUITE_RETRIES")`` returns the parsed
value, or raises ``UserError`` with one line naming the variable, the value it has and the values
it takes.
No module reads a ``GLUON_SUITE_*`` variable any other way (a test scans the source tree for that).

Variables of other tools (``OMP_NUM_THREADS``, ``MXNET_*``, ``HOROVOD_*``, glibc's ``MALLOC_*``)
are listed too where the suite reads them for its own decisions (``ours=False``); only
``OMP_NUM_THREADS`` is validated, as the suite sizes its own work by it, and the others are
returned as the text they hold.

``check_environment()`` runs before every entry point does any work (``run_cli``): it parses each
of the suite's variables, so the first bad one ends the run with its one-line error, and it warns,
in one line on stderr, about each ``GLUON_SUITE_*`` name in the environment that the suite does not
read (a misspelt name would otherwise be ignored without a word). It warns rather than refuses so
that a variable of another version of the suite left in a shell profile does not stop a run.
"""
import argparse
import os
import sys
from dataclasses import dataclass

from .errors import UserError

__all__ = ["Variable", "VARIABLES", "env", "check_environment", "unknown_names", "PREFIX"]

PREFIX = "GLUON_SUITE_"
_TRUE, _FALSE = ("1", "true", "yes", "on"), ("", "0", "false", "no", "off")
_OFF_WORDS = ("off", "0", "none")


@dataclass(frozen=True)
class Variable:
    """One environment variable: ``kind`` is one of flag, int, float, switch, folder, url, threads,
    library, text; ``low``/``high`` bound a number (``low_open``: strictly above ``low``); ``ours``
    is False for another tool's variable that the suite only reads."""
    name: str
    kind: str
    default: object
    help: str
    low: float = None
    high: float = None
    low_open: bool = False
    ours: bool = True

    def accepted(self):
        """The values this variable takes, in words (for errors and the documentation)."""
        if self.kind == "flag":
            return "1 or 0 (also true/false, yes/no, on/off)"
        if self.kind == "switch":
            return "on or off (also 1/0, true/false, yes/no)"
        if self.kind in ("int", "float"):
            what = "a whole number" if self.kind == "int" else "a number"
            parts = []
            if self.low is not None:
                parts.append(f"{'>' if self.low_open else '>='} {self.low:g}")
            if self.high is not None:
                parts.append(f"<= {self.high:g}")
            return what + (" " + " and ".join(parts) if parts else "")
        if self.kind == "folder":
            return "a folder that exists or can be created"
        if self.kind == "url":
            return "a URL: http://, https:// or file://"
        if self.kind == "threads":
            return "a whole number >= 1"
        if self.kind == "library":
            return "the path of a built kernel library, or off"
        return "any text"


def _v(*args, **kw):
    var = Variable(*args, **kw)
    return var.name, var


VARIABLES = dict([
    _v("GLUON_SUITE_HOME", "folder", os.path.join("~", ".gluon_suite"),
       "cache root: checkpoints in $GLUON_SUITE_HOME/models, published records in records.json"),
    _v("GLUON_SUITE_REPO", "url", None,
       "base URL of a model-zoo mirror; overrides the download location of every record"),
    _v("GLUON_SUITE_OFFLINE", "flag", False,
       "never touch the network; a missing checkpoint is an error naming where to put the file"),
    _v("GLUON_SUITE_RETRIES", "int", 3, "retries of a download's transient failures", low=0),
    _v("GLUON_SUITE_BACKOFF", "float", 0.5, "seconds before the first retry, doubling after each",
       low=0),
    _v("GLUON_SUITE_CONNECT_TIMEOUT", "float", 10.0, "seconds to wait for a download's connection",
       low=0, low_open=True),
    _v("GLUON_SUITE_READ_TIMEOUT", "float", 60.0, "seconds to wait for a download's next bytes",
       low=0, low_open=True),
    _v("GLUON_SUITE_QUIET", "flag", False, "no download progress bar"),
    _v("GLUON_SUITE_VERBOSE", "flag", False,
       "show every warning, the known-harmless native ones too (as --verbose does)"),
    _v("GLUON_SUITE_PROGRESS_EVERY", "float", 100.0,
       "off a terminal, one progress line each this many percent of a loop", low=1, high=100),
    _v("GLUON_SUITE_EMULATE_FLOAT16", "flag", False,
       "let --dtype float16 run on the CPU, each layer computing in float32 from float16 values"),
    _v("GLUON_SUITE_MALLOC", "switch", True,
       "off leaves glibc's malloc settings as they are when gluon_suite.graph is imported"),
    _v("GLUON_SUITE_GRAPH_KERNELS", "library", None,
       "the compiled graph kernels to load: another built library file, or off for the Python kernels"),
    _v("GLUON_SUITE_COMM_KERNELS", "library", None,
       "the compiled compression kernels to load: another built library file, or off for MXNet's operators"),
    # other tools' variables that the suite reads for its own decisions
    _v("OMP_NUM_THREADS", "threads", None,
       "OpenMP threads; the graph kernels size their work by it", ours=False),
    _v("MXNET_HOME", "text", None, "GluonCV's local store ($MXNET_HOME/models) for fine-tuning weights",
       ours=False),
    _v("MXNET_GLUON_REPO", "text", None, "mirror of GluonCV's store, when GLUON_SUITE_REPO is unset",
       ours=False),
    _v("MXNET_EXEC_BULK_EXEC_TRAIN", "text", None,
       "when set, gluon_suite.graph leaves MXNet's bulked backward as the user chose", ours=False),
    _v("HOROVOD_RANK", "text", None, "set by horovodrun: the process is a worker (no progress bar)",
       ours=False),
    _v("HOROVOD_LOCAL_RANK", "text", None, "set by horovodrun: which GPU a worker takes", ours=False),
    _v("HOROVOD_ELASTIC", "text", None, "1 under an elastic horovodrun job", ours=False),
    _v("HOROVOD_GLOO_RENDEZVOUS_ADDR", "text", None,
       "set by horovodrun: the rendezvous server an elastic worker checks it can reach before a reset",
       ours=False),
    _v("HOROVOD_GLOO_RENDEZVOUS_PORT", "text", None, "as HOROVOD_GLOO_RENDEZVOUS_ADDR", ours=False),
    _v("OMPI_COMM_WORLD_RANK", "text", None, "set by mpirun: the process is a worker", ours=False),
    _v("PMI_RANK", "text", None, "set by MPICH's launcher: the process is a worker", ours=False),
    _v("MALLOC_ARENA_MAX", "text", None, "glibc's own malloc setting; when set, the suite's is not applied",
       ours=False),
    _v("MALLOC_MMAP_THRESHOLD_", "text", None, "as MALLOC_ARENA_MAX", ours=False),
    _v("MALLOC_TRIM_THRESHOLD_", "text", None, "as MALLOC_ARENA_MAX", ours=False),
    _v("MALLOC_TOP_PAD_", "text", None, "as MALLOC_ARENA_MAX", ours=False),
    _v("MALLOC_MMAP_MAX_", "text", None, "as MALLOC_ARENA_MAX", ours=False),
    _v("GLIBC_TUNABLES", "text", None, "glibc.malloc.* in it: the suite's malloc settings are not applied",
       ours=False),
    _v("LD_PRELOAD", "text", None, "jemalloc, tcmalloc or mimalloc in it: the suite's malloc settings "
       "are not applied", ours=False),
])


def _bad(var, raw, fix=None):
    return UserError(f"environment variable {var.name}={raw!r} "
                     f"{fix or 'must be ' + var.accepted() + '; fix or unset it'}")


def _flag(var, raw):
    value = raw.strip().lower()
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    raise _bad(var, raw, "is not a yes/no value; set it to 1 or 0 (or unset it)")


def _switch(var, raw):
    value = raw.strip().lower()
    if value in ("",) + _TRUE:
        return True
    if value in _FALSE:
        return False
    raise _bad(var, raw, f"is not on or off; set {var.name}=on or {var.name}=off (or unset it)")


def _number(var, raw):
    if raw.strip() == "":
        return var.default
    try:
        value = int(raw) if var.kind == "int" else float(raw)
    except ValueError:
        value = None
    if value is None or value != value or value in (float("inf"), float("-inf")) or (
            var.low is not None and (value < var.low or (var.low_open and value == var.low))) or (
            var.high is not None and value > var.high):
        raise _bad(var, raw)
    return value


def _folder(var, raw):
    if not raw.strip():
        raise UserError(f"environment variable {var.name} is empty; set it to a folder or unset it")
    from .validate import _creatable
    try:
        _creatable(raw, raw, "folder")
    except argparse.ArgumentTypeError as exc:
        raise UserError(f"environment variable {var.name}: {exc}") from None
    return os.path.expanduser(raw)


def _url(var, raw):
    if not raw:
        return None
    if not raw.startswith(("http://", "https://", "file://", "repo:")):
        raise _bad(var, raw, "is not a URL; use http://, https:// or file:// (or unset it)")
    return raw


def _threads(var, raw):
    if not raw.strip():
        return None
    parts = raw.split(",")
    if not all(p.strip().isdigit() and int(p) >= 1 for p in parts):
        raise _bad(var, raw, f"must be a whole number >= 1 (e.g. {var.name}=1); fix or unset it")
    return int(parts[0])


def _library(var, raw):
    setting = raw.strip()
    if not setting:
        return None
    if setting.lower() in _OFF_WORDS:
        return "off"
    path = os.path.abspath(os.path.expanduser(setting))
    if not os.path.isfile(path):
        raise _bad(var, raw, f"names no file ({path}); give the path of a built kernel library "
                             "(`make kernels` builds one), off for the Python kernels, or unset it")
    return path


_PARSERS = {"flag": _flag, "switch": _switch, "int": _number, "float": _number, "folder": _folder,
            "url": _url, "threads": _threads, "library": _library, "text": lambda var, raw: raw}


def _declared(name):
    var = VARIABLES.get(name)
    if var is None:
        from .validate import suggest
        raise KeyError(f"{name} is not declared in gluon_suite.utils.env.VARIABLES{suggest(name, VARIABLES)}; "
                       "declare it there before reading it")
    return var


def env(name, environ=None):
    """The parsed value of environment variable ``name`` (its declared default when unset), read
    from ``environ`` (default ``os.environ``); a value it does not take is a one-line UserError.

    flag/switch: bool; int/float: the number; folder: the path, ``~`` expanded; url, text: the
    text or None; threads: the first number (OpenMP's nested list ``4,2`` gives 4) or None;
    library: an absolute path of an existing file, ``"off"``, or None (the built library)."""
    var = _declared(name)
    raw = (os.environ if environ is None else environ).get(name)
    if raw is None:
        if var.kind == "folder" and var.default is not None:
            return os.path.expanduser(var.default)
        return var.default
    return _PARSERS[var.kind](var, raw)


def unknown_names(environ=None):
    """The ``GLUON_SUITE_*`` names set in ``environ`` that the suite does not read, sorted."""
    environ = os.environ if environ is None else environ
    return sorted(n for n in environ if n.startswith(PREFIX) and n not in VARIABLES)


def _worker_rank(environ):
    for name in ("HOROVOD_RANK", "OMPI_COMM_WORLD_RANK", "PMI_RANK"):
        if environ.get(name, "0").strip() not in ("", "0"):
            return True
    return False


def check_environment(environ=None, stream=None):
    """Parse every variable the suite validates (raising the first one-line UserError) and warn
    once, on ``stream`` (stderr), about each unknown ``GLUON_SUITE_*`` name; a worker other than
    rank 0 stays silent, so a job prints each warning once. Returns the unknown names."""
    environ = os.environ if environ is None else environ
    for name, var in VARIABLES.items():
        if var.ours or var.kind != "text":
            env(name, environ)
    unknown = unknown_names(environ)
    if unknown and not _worker_rank(environ):
        from .validate import suggest
        ours = [n for n, v in VARIABLES.items() if v.ours]
        out = stream or sys.stderr
        for name in unknown:
            hint = suggest(name, ours)
            out.write(f"warning: environment variable {name} is not one the suite reads, so it has no "
                      f"effect{hint}; rename or unset it\n")
        out.flush()
    return unknown
