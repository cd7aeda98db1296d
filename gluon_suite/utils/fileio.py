"""Atomic file writes: a reader never sees a half-written checkpoint, log summary or cache file.

Everything is first written to a temporary file in the destination folder (same file system), then
flushed, fsynced and renamed over the destination with ``os.replace``, which is atomic on POSIX.
"""
import contextlib
import errno
import json
import os
import resource
import sys
import tempfile

from .errors import UserError, WriteError

# a failed write with one of these is the disk's (or the folder's) fault, whatever the writer
_WRITE_ERRNOS = {errno.ENOSPC, errno.EFBIG, getattr(errno, "EDQUOT", errno.ENOSPC), errno.EROFS}
_DENIED = {errno.EACCES, errno.EPERM}


def _native_write_failure(exc, tmp):
    """The errno of an MXNet error raised by a native writer (``nd.save``'s ``FileStream.Write
    incomplete``) that ran out of room, or None for any other error. MXNet does not keep the errno:
    a file that reached the process's file-size limit is EFBIG, anything else ENOSPC."""
    mx = sys.modules.get("mxnet")
    if mx is None or not isinstance(exc, mx.base.MXNetError) or "Write incomplete" not in str(exc):
        return None
    soft, _ = resource.getrlimit(resource.RLIMIT_FSIZE)
    try:
        size = os.path.getsize(tmp)
    except OSError:
        size = 0
    return errno.EFBIG if soft != resource.RLIM_INFINITY and size >= soft else errno.ENOSPC


def _short_write(tmp):
    """The errno of a write that was cut short without an error: MXNet's native writers ignore a
    failure of their last buffered write (when the file is closed), so a file written by
    ``nd.save`` may end early with no exception. Such a file reached the process's file-size limit
    (EFBIG) or left its disk full (ENOSPC); None when neither holds."""
    soft, _ = resource.getrlimit(resource.RLIMIT_FSIZE)
    if soft != resource.RLIM_INFINITY and os.path.getsize(tmp) >= soft:
        return errno.EFBIG
    st = os.statvfs(tmp)
    if st.f_bavail == 0 or st.f_bfree == 0:
        return errno.ENOSPC
    return None


def write_error(exc, path, tmp=None, ours=False):
    """``exc`` as a ``WriteError`` naming ``path`` when it is a failed write (full disk, file-size
    limit, read-only file system, or no permission on ``path``/``tmp``, or on anything when
    ``ours``: the error came from creating, syncing or renaming the file), else None."""
    if isinstance(exc, WriteError):
        return exc
    code = _native_write_failure(exc, tmp) if tmp else None
    if code is None and isinstance(exc, OSError):
        if exc.errno in _WRITE_ERRNOS or (exc.errno in _DENIED and (ours or exc.filename in (None, path, tmp))):
            code = exc.errno
    if code is None:
        return None
    return WriteError(code, os.strerror(code), path)


@contextlib.contextmanager
def atomic_path(path, durable=True):
    """Yield a temporary path beside ``path``; on normal exit it is renamed onto ``path``.

    On an exception the temporary file is removed and ``path`` is left as it was. A write that
    fails for want of room or rights (an ``OSError`` ENOSPC, EFBIG, EDQUOT, EROFS, EACCES, or
    MXNet's native "Write incomplete") is re-raised as a ``WriteError`` naming ``path``. Use it
    for writers that want a file name (``mx.nd.save``, ``net.save_parameters``). ``durable=False``
    skips the fsync, for files that are verified on every use anyway (cached downloads).
    """
    path = os.fspath(path)
    folder = os.path.dirname(os.path.abspath(path))
    tmp, ours = None, True
    try:
        os.makedirs(folder, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".tmp-" + os.path.basename(path) + ".", dir=folder)
        os.close(fd)
        ours = False
        yield tmp
        ours = True
        short = _short_write(tmp)
        if short is not None:
            raise OSError(short, os.strerror(short), tmp)
        if durable:
            with open(tmp, "rb+") as f:
                os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException as exc:
        failed = write_error(exc, path, tmp, ours)
        if tmp:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
        if failed is not None:
            raise failed from None
        raise


@contextlib.contextmanager
def atomic_paths(*paths):
    """``atomic_path`` for files that belong together (a checkpoint's parameters and trainer
    state): yields one temporary path per ``path``; only when every file has been written, checked
    and synced are they renamed into place, so a failed write in any leaves every ``path`` as it
    was. Failed writes become a ``WriteError`` naming the file, as in ``atomic_path``."""
    paths = [os.fspath(p) for p in paths]
    tmps, current, ours = [], paths[0], True
    try:
        for p in paths:
            current = p
            os.makedirs(os.path.dirname(os.path.abspath(p)), exist_ok=True)
            fd, tmp = tempfile.mkstemp(prefix=".tmp-" + os.path.basename(p) + ".", dir=os.path.dirname(os.path.abspath(p)))
            os.close(fd)
            tmps.append(tmp)
        ours = False
        yield list(tmps)
        ours = True
        for p, tmp in zip(paths, tmps):
            current = p
            short = _short_write(tmp)
            if short is not None:
                raise OSError(short, os.strerror(short), tmp)
            with open(tmp, "rb+") as f:
                os.fsync(f.fileno())
        for p, tmp in zip(paths, tmps):
            os.replace(tmp, p)
        tmps = []
    except BaseException as exc:
        failed = None
        for p, tmp in zip(paths, tmps):   # the first file cut short (MXNet's writers may not say)
            if failed is None and os.path.exists(tmp) and _short_write(tmp) is not None:
                failed = _renamed(write_error(exc, p, tmp, True) or WriteError(
                    _short_write(tmp), os.strerror(_short_write(tmp)), p), p)
        named = getattr(exc, "filename", None)
        for p, tmp in zip(paths, tmps):   # else the file the error names (a temporary one: its path)
            if failed is None and named is not None and os.path.abspath(named) == os.path.abspath(tmp):
                failed = _renamed(write_error(exc, p, tmp, True), p)
        for p, tmp in zip(paths, tmps):   # else the first one the error can be told of
            failed = failed or _renamed(write_error(exc, p, tmp, ours and p == current), p)
        failed = failed or write_error(exc, current, None, ours)
        for tmp in tmps:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
        if failed is not None:
            raise failed from None
        raise


def _renamed(error, path):
    """``error`` (a WriteError or None) naming ``path``: a writer that wrote our temporary file
    through its own ``atomic_path`` names the temporary file, which the user never sees."""
    if error is None or error.filename == path:
        return error
    return WriteError(error.errno, error.strerror, path)


def atomic_write(path, data, mode="w"):
    """Write ``data`` (str for mode 'w', bytes for 'wb') to ``path`` atomically."""
    with atomic_path(path) as tmp:
        with open(tmp, mode, **({} if "b" in mode else {"encoding": "utf-8"})) as f:
            f.write(data)


def write_json(path, obj):
    """Write ``obj`` as indented, key-sorted JSON to ``path`` atomically."""
    atomic_write(path, json.dumps(obj, indent=2, sort_keys=True) + "\n")


@contextlib.contextmanager
def output_folder(out, committed="state.json"):
    """Run the block that writes a run into ``out``; if it fails with a ``WriteError`` (or a
    ``UserError`` found once the data was read, e.g. a batch larger than the data) before any
    checkpoint was committed (no ``committed`` file in ``out``), the files it added to ``out`` are
    removed, and ``out`` itself when the block created it: a run that could not save anything
    leaves no half-begun folder. Files that were there before are kept, and so is everything once
    a checkpoint exists (``--resume auto`` continues from it)."""
    out = os.path.abspath(os.fspath(out))
    existed = os.path.isdir(out)
    before = set(os.listdir(out)) if existed else set()
    try:
        yield out
    except (WriteError, UserError):
        if os.path.isdir(out) and not os.path.exists(os.path.join(out, committed)):
            for name in set(os.listdir(out)) - before:
                with contextlib.suppress(OSError):
                    os.unlink(os.path.join(out, name))
            if not existed:
                with contextlib.suppress(OSError):
                    os.rmdir(out)
        raise
