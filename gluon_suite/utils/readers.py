"""Every reader of a data file the user gives, declared where it is defined: the format it reads,
what it checks, and one rule for a file it cannot decode.

``@data_reader("LINQS citation folder", checks=(...), path="folder")`` registers the function in
``READERS`` (by its module-qualified name) with the format and the checks, and wraps it. The reader
itself checks what it loads (decodable images, finite numbers, ids in range, known labels) and
raises a one-line ``UserError`` naming the file and the record. What it does not foresee, a file
that the decoding libraries below it cannot read (a cut-short ``.bz2`` or ``.gz``, a text file
named ``.jpg``, bytes that are not UTF-8, broken XML or JSON, a damaged archive or binary record),
would otherwise escape as the library's traceback; the wrapper turns it into one ``UserError``
line naming the file, the format expected and the cause:

    data/mnist_5k.csv.gz: not a readable gzipped MNIST-5k CSV (compressed data ends early); reinstall it ...

A ``UserError`` the reader raises passes through unchanged, and so does every other exception
(a missing file, a full disk, a bug keep their own handling in ``run_cli``). A reader that returns
a generator is read lazily: the generator is guarded by the same rule while it is consumed.

``path`` names the argument that holds the file (or folder) to name, or is a callable taking the
reader's arguments and returning it (a method that reads ``self``'s files). No function of the
package reads a data file without going through a registered reader: a test scans the source.
"""
import functools
import inspect
import json
import lzma
import os
import re
import struct
import sys
import tarfile
import types
import xml.etree.ElementTree as ET
import zipfile
import zlib
from dataclasses import dataclass

from .errors import GluonSuiteError, UserError, WriteError

__all__ = ["Reader", "READERS", "data_reader", "unreadable"]

# an MXNet error counts as a file that cannot be decoded when its text says so
_MX_DECODING = re.compile(r"decod|invalid image|imdecode|imread|recordio|couldn't open file|invalid ndarray file",
                          re.IGNORECASE)
_CAUSE_CHARS = 200


@dataclass(frozen=True)
class Reader:
    """One registered reader: ``name`` (module-qualified), the ``format`` it reads, the ``checks``
    it makes on what it loads, and ``path``: the argument naming the file, or ``"computed"``."""
    name: str
    format: str
    checks: tuple
    path: str


READERS = {}


def _last_line(text):
    lines = [ln.strip() for ln in str(text).splitlines() if ln.strip()]
    last = lines[-1] if lines else ""
    return last[len("MXNetError: "):] if last.startswith("MXNetError: ") else last


def _cause(exc):
    """The cause of ``exc`` in a few words when it is a file that cannot be decoded, else None."""
    if isinstance(exc, UnicodeDecodeError):
        return f"not {exc.encoding} text: {exc.reason}"
    if isinstance(exc, json.JSONDecodeError):
        return f"invalid JSON at line {exc.lineno} column {exc.colno}: {exc.msg}"
    if isinstance(exc, ET.ParseError):
        return f"invalid XML: {exc}"
    if isinstance(exc, EOFError):
        text = str(exc)
        if "ompressed" in text or "end-of-stream" in text:
            return "compressed data ends early"
        return "the file ends early" + (f": {text}" if text else "")
    if isinstance(exc, (zlib.error, lzma.LZMAError)):
        return f"corrupt compressed data: {exc}"
    if isinstance(exc, tarfile.TarError):
        return f"not a readable tar archive: {exc}"
    if isinstance(exc, zipfile.BadZipFile):
        return f"not a readable zip archive: {exc}"
    if isinstance(exc, struct.error):
        return f"a binary record is malformed: {exc}"
    pil = sys.modules.get("PIL")
    if pil is not None and isinstance(exc, getattr(pil, "UnidentifiedImageError", ())):
        return "not an image that can be decoded"
    if isinstance(exc, OSError) and not isinstance(exc, WriteError):
        # decoding errors carry no errno; a missing file, no permission or a disk error carry one
        return (str(exc) or type(exc).__name__) if exc.errno is None else None
    mx_base = sys.modules.get("mxnet.base")
    if mx_base is not None and isinstance(exc, mx_base.MXNetError) and _MX_DECODING.search(str(exc)):
        return _last_line(exc) or "MXNet cannot decode it"
    return None


def unreadable(exc, where, format, fix="fix or replace the file"):
    """The one-line ``UserError`` for ``exc`` raised while reading ``where`` as ``format``, or None
    when ``exc`` is not a file that cannot be decoded (it then keeps its own handling)."""
    if isinstance(exc, GluonSuiteError):
        return None
    cause = _cause(exc)
    if cause is None:
        return None
    cause = " ".join(cause.split())
    if len(cause) > _CAUSE_CHARS:
        cause = cause[:_CAUSE_CHARS - 3] + "..."
    return UserError(" ".join(f"{where}: not a readable {format} ({cause}); {fix}".split()))


def _where(fn, path, args, kwargs):
    """The file the call reads, for the message: the ``path`` argument or what ``path`` computes."""
    try:
        if callable(path):
            value = path(*args, **kwargs)
        else:
            bound = inspect.signature(fn).bind(*args, **kwargs)
            bound.apply_defaults()
            value = bound.arguments[path]
        return os.fspath(value)
    except Exception:      # a bad call fails in the reader itself; here only the name is missing
        return f"the input of {fn.__qualname__}"


def _guarded(gen, fail):
    try:
        return (yield from gen)
    except Exception as exc:
        err = fail(exc)
        if err is None:
            raise
        raise err from None


def data_reader(format, checks, path="path", fix="fix or replace the file"):
    """Register the decorated function as the reader of ``format`` that makes ``checks`` (short
    phrases), and wrap it so that a file it cannot decode is one ``UserError`` line naming the file
    (the argument ``path``, or what the callable ``path`` returns), ``format``, the cause and
    ``fix``."""
    if not format or "\n" in format or not checks or isinstance(checks, str):
        raise ValueError("data_reader needs a one-line format and a tuple of checks")

    def register(fn):
        name = f"{fn.__module__}.{fn.__qualname__}"
        if not callable(path) and path not in inspect.signature(fn).parameters:
            raise ValueError(f"data_reader: {name} has no argument {path!r} to name the file by")
        READERS[name] = Reader(name, format, tuple(checks), path if isinstance(path, str) else "computed")

        @functools.wraps(fn)
        def reader(*args, **kwargs):
            def fail(exc):
                return unreadable(exc, _where(fn, path, args, kwargs), format, fix)
            try:
                result = fn(*args, **kwargs)
            except Exception as exc:
                err = fail(exc)
                if err is None:
                    raise
                raise err from None
            return _guarded(result, fail) if isinstance(result, types.GeneratorType) else result
        reader.data_reader = READERS[name]
        return reader
    return register
