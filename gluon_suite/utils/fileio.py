"""Atomic file writes: a reader never sees a half-written checkpoint, log summary or cache file.

Everything is first written to a temporary file in the destination folder (same file system), then
flushed, fsynced and renamed over the destination with ``os.replace``, which is atomic on POSIX.
"""
import contextlib
import errno
import json
import os
import tempfile

_NO_SPACE = {errno.ENOSPC, errno.EFBIG, getattr(errno, "EDQUOT", errno.ENOSPC)}


@contextlib.contextmanager
def atomic_path(path, durable=True):
    """Yield a temporary path beside ``path``; on normal exit it is renamed onto ``path``.

    On an exception the temporary file is removed and ``path`` is left as it was (a full disk is
    re-raised as an ``OSError`` naming ``path``). Use it for writers
    that want a file name (``mx.nd.save``, ``net.save_parameters``). ``durable=False`` skips the
    fsync, for files that are verified on every use anyway (cached downloads).
    """
    path = os.fspath(path)
    folder = os.path.dirname(os.path.abspath(path))
    os.makedirs(folder, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".tmp-" + os.path.basename(path) + ".", dir=folder)
    os.close(fd)
    try:
        yield tmp
        if durable:
            with open(tmp, "rb+") as f:
                os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException as exc:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        if isinstance(exc, OSError) and exc.errno in _NO_SPACE:
            # a full disk (or file-size limit) while writing: name the file the user knows
            raise OSError(exc.errno, exc.strerror, path) from None
        raise


def atomic_write(path, data, mode="w"):
    """Write ``data`` (str for mode 'w', bytes for 'wb') to ``path`` atomically."""
    with atomic_path(path) as tmp:
        with open(tmp, mode, **({} if "b" in mode else {"encoding": "utf-8"})) as f:
            f.write(data)


def write_json(path, obj):
    """Write ``obj`` as indented, key-sorted JSON to ``path`` atomically."""
    atomic_write(path, json.dumps(obj, indent=2, sort_keys=True) + "\n")
