"""Downloads into the checkpoint cache and their verification: streamed, hashed while they arrive,
retried with back-off, fsynced and renamed into place only when complete and (with a record)
verified; a ``.verified`` stamp (size, mtime, hash) spares re-hashing a cached file on every use.

Files are fetched from ``$GLUON_SUITE_REPO`` when set (a mirror: ``http(s)://`` or ``file://``),
else from the record's URL. Transient failures (timeouts, broken connections, HTTP 5xx/429) are
retried, and so is a response of the wrong length or hash (a proxy or a server cut short); the
rest, and running out of retries, raise ``DownloadError`` (exit 1: the request was fine, the
transfer was not) in one line naming the URL and the last thing that was wrong. Archives are
extracted only after every member path is checked to stay inside the target folder.

Many processes on one machine (the workers of one job) share a cache: ``cache_lock`` is an
``fcntl.flock`` on ``.locks/NAME.lock`` in the cache folder, held by the one process that
downloads while the others wait. The kernel drops the lock when its holder dies, so a killed
download never leaves a lock behind, and ``clear_partials`` removes the temporary file it left.
"""
import contextlib
import fcntl
import hashlib
import json
import os
import re
import shutil
import sys
import tarfile
import time
import urllib.parse
import zipfile

from ..utils.fileio import atomic_path, write_json
from ..utils.env import env
from .records import DownloadError, ZooError

_CHUNK = 1 << 20
_DAMAGED = "the store's copy is damaged: republish it or use another mirror"
_NETWORK = ("check the network or GLUON_SUITE_REPO, or set GLUON_SUITE_OFFLINE=1 and put the file in the "
            "cache by hand")


# ---- hashing ------------------------------------------------------------------------------------
def file_hash(path, algo="sha256"):
    """Hex digest of a file, streamed."""
    h = hashlib.new(algo)
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(_CHUNK), b""):
            h.update(chunk)
    return h.hexdigest()


def _algo(record):
    return "sha256" if "sha256" in record else "sha1"


# ---- the verified stamp --------------------------------------------------------------------------
def _stamp_path(path):
    return path + ".verified"


def _is_valid(path, record, full=False):
    """True when ``path`` holds the record's file. Cheap when a stamp from an earlier full check
    matches size and mtime; ``full`` (or no stamp) re-hashes the file."""
    if not os.path.isfile(path):
        return False
    st = os.stat(path)
    if record.get("size") is not None and st.st_size != record["size"]:
        return False
    algo = _algo(record)
    if not full:
        try:
            with open(_stamp_path(path), encoding="utf-8") as f:
                stamp = json.load(f)
            if stamp == {"size": st.st_size, "mtime_ns": st.st_mtime_ns, algo: record[algo]}:
                return True
        except (OSError, ValueError):
            pass
    if file_hash(path, algo) != record[algo]:
        return False
    _write_stamp(path, record)
    return True


def _write_stamp(path, record):
    """Remember that ``path`` (as it is now: size, mtime) was verified against ``record``."""
    st, algo = os.stat(path), _algo(record)
    write_json(_stamp_path(path), {"size": st.st_size, "mtime_ns": st.st_mtime_ns, algo: record[algo]})


# ---- fetching -------------------------------------------------------------------------------------
class _NoBar:
    def update(self, n):
        pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def _progress(total, desc):
    """A byte progress bar on stderr; none when GLUON_SUITE_QUIET=1 or off a terminal (a log, a
    pipe, horovodrun's prefixed lines), where a bar's carriage returns leave fragments."""
    from ..utils.progress import _is_terminal
    if env("GLUON_SUITE_QUIET") or not _is_terminal(sys.stderr):
        return _NoBar()
    from tqdm.auto import tqdm
    return tqdm(total=total, desc=desc, unit="B", unit_scale=True, unit_divisor=1024, leave=False,
                mininterval=0.5)


def _stream(url, dest, model, size=None):
    """Stream ``url`` into the open file ``dest``; raise DownloadError (permanent) or ``_Retry``.
    ``size``: the expected length; a response that announces another one is not read."""
    parsed = urllib.parse.urlparse(url)
    if parsed.scheme == "file":
        src = urllib.parse.unquote(parsed.path)
        if not os.path.isfile(src):
            raise DownloadError(f"model '{model}': {url} does not exist; check GLUON_SUITE_REPO or put the "
                           "file in that folder")
        with open(src, "rb") as f, _progress(os.path.getsize(src), os.path.basename(src)) as bar:
            for chunk in iter(lambda: f.read(_CHUNK), b""):
                dest.write(chunk)
                bar.update(len(chunk))
        return
    if parsed.scheme not in ("http", "https"):
        raise ZooError(f"model '{model}': unsupported URL {url}; use http://, https:// or file://")
    import requests
    import urllib3
    timeout = (env("GLUON_SUITE_CONNECT_TIMEOUT"), env("GLUON_SUITE_READ_TIMEOUT"))
    try:
        with requests.get(url, stream=True, timeout=timeout) as r:
            if r.status_code >= 500 or r.status_code == 429:
                raise _Retry(f"HTTP {r.status_code} {r.reason}")
            if r.status_code != 200:
                raise DownloadError(f"model '{model}': download of {url} failed with HTTP {r.status_code} "
                               f"{r.reason}; check GLUON_SUITE_REPO and that the store holds this file")
            total = int(r.headers.get("content-length") or 0) or None
            # urllib3's own read: the fewest copies of the public ways to stream a body; a
            # gzip/deflate-encoded response is decoded, so the file it carries is what is hashed
            encoded = r.headers.get("content-encoding", "identity").lower() not in ("", "identity")
            if size is not None and total is not None and not encoded and total != size:
                raise _Retry(f"{url} is truncated or wrong (the server announced {total} bytes, expected "
                             f"{size})", _DAMAGED)
            with _progress(total, os.path.basename(parsed.path)) as bar:
                while True:
                    chunk = r.raw.read(_CHUNK, decode_content=encoded)
                    if not chunk:
                        break
                    dest.write(chunk)
                    bar.update(len(chunk))
    except (requests.exceptions.Timeout, urllib3.exceptions.TimeoutError):
        raise _Retry("timed out (the server stalled)") from None
    except (urllib3.exceptions.ProtocolError, urllib3.exceptions.DecodeError):
        raise _Retry("the connection broke mid-transfer") from None
    except requests.exceptions.ConnectionError as exc:
        raise _Retry(f"connection failed ({type(exc).__name__})") from None
    except requests.exceptions.ChunkedEncodingError:
        raise _Retry("the connection broke mid-transfer") from None


class _HashingWriter:
    """A file wrapper that writes and hashes on a helper thread (file writes and hashlib release the
    GIL), so chunk k is stored and verified while chunk k+1 arrives. ``write`` returns once the
    *previous* chunk is done (a caller reusing buffers must alternate between two)."""

    def __init__(self, f, algo):
        from concurrent.futures import ThreadPoolExecutor
        self.f, self.h, self.n = f, hashlib.new(algo), 0
        self._pool = ThreadPoolExecutor(max_workers=1)
        self._pending = None

    def _store(self, chunk):
        view = memoryview(chunk)
        while view:  # an unbuffered file may take a chunk in several writes
            view = view[self.f.write(view):]
        self.h.update(chunk)

    def write(self, chunk):
        self.flush()
        self.n += len(chunk)
        self._pending = self._pool.submit(self._store, chunk)

    def flush(self):
        """Wait until everything written so far is stored and hashed."""
        if self._pending is not None:
            pending, self._pending = self._pending, None
            pending.result()

    def hexdigest(self):
        """The digest of everything written."""
        self.flush()
        self._pool.shutdown()
        return self.h.hexdigest()


class _Retry(Exception):
    """A failure worth trying again: its message says what went wrong, ``hint`` what to do when
    the retries run out."""

    def __init__(self, message, hint=_NETWORK):
        super().__init__(message)
        self.hint = hint


def download(url, path, model, expect=None):
    """Download ``url`` to ``path`` atomically, retrying transient failures with back-off; with
    ``expect`` (a record) the announced length, the size and the hash are checked before the file
    is synced and renamed, and a mismatch is retried like a broken connection."""
    retries = env("GLUON_SUITE_RETRIES")
    backoff = env("GLUON_SUITE_BACKOFF")
    size = expect.get("size") if expect else None
    last = None
    for attempt in range(retries + 1):
        if attempt:
            time.sleep(backoff * 2 ** (attempt - 1))
        try:
            with atomic_path(path) as tmp:
                with open(tmp, "wb", buffering=0) as f:
                    w = _HashingWriter(f, _algo(expect) if expect else "sha256")
                    try:
                        _stream(url, w, model, size)
                    finally:
                        digest = w.hexdigest()  # the helper thread is done before the file closes
                if expect is not None:
                    wrong = _mismatch(w.n, digest, expect, url)
                    if wrong:
                        raise _Retry(wrong, _DAMAGED)
            if expect is not None:
                _write_stamp(path, expect)
            return path
        except _Retry as exc:
            last = exc
    raise DownloadError(f"model '{model}': download of {url} failed after {retries + 1} attempts: {last}; "
                        f"{last.hint}")


def _mismatch(size, got, record, url):
    """What is wrong with a downloaded file of ``size`` bytes and digest ``got``, or None when it
    matches its record."""
    if record.get("size") is not None and size != record["size"]:
        return f"{url} is truncated or wrong ({size} bytes, expected {record['size']})"
    algo = _algo(record)
    if got != record[algo]:
        return f"{url} has {algo} {got[:12]}..., expected {record[algo][:12]}...; the file does not match its record"
    return None


def _check_download(size, got, record, url, model):
    """Compare a downloaded file's ``size`` and digest ``got`` with its record (DownloadError)."""
    wrong = _mismatch(size, got, record, url)
    if wrong:
        raise DownloadError(f"model '{model}': {wrong}; {_DAMAGED}")


# ---- many processes, one cache ----------------------------------------------------------------------
@contextlib.contextmanager
def cache_lock(path):
    """Hold the inter-process lock of the cache file ``path``: an exclusive ``flock`` on
    ``.locks/<name>.lock`` in its folder, waited for as long as another process holds it. The lock
    file stays after release: deleting it while another process waits on it would let two
    processes each hold "the" lock. A holder that dies releases it (the kernel closes its file)."""
    folder, name = os.path.split(os.path.abspath(path))
    locks = os.path.join(folder, ".locks")
    os.makedirs(locks, exist_ok=True)
    fd = os.open(os.path.join(locks, name + ".lock"), os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # closing the only descriptor releases the lock


def clear_partials(path, stamp_age=60.0):
    """Remove what a killed download of ``path`` left beside it: its temporary files
    (``.tmp-<name>.XXXXXXXX``) and extraction folders (``.extract-<name>.XXXXXXXX``); a stamp's
    temporary file only when older than ``stamp_age`` seconds, as a process that verifies the file
    without the lock may be writing one. Call it holding ``cache_lock(path)``."""
    folder, name = os.path.split(os.path.abspath(path))
    pattern = re.compile(r"\.(tmp|extract)-" + re.escape(name) + r"(\.verified)?\.[a-z0-9_]{8}")
    now = time.time()
    for entry in os.listdir(folder):
        m = pattern.fullmatch(entry)
        if not m:
            continue
        full = os.path.join(folder, entry)
        with contextlib.suppress(OSError):
            if m.group(2) and now - os.lstat(full).st_mtime < stamp_age:
                continue
            if os.path.isdir(full) and not os.path.islink(full):
                shutil.rmtree(full)
            else:
                os.unlink(full)


def safe_extract(archive, member, dest_dir, url, model):
    """Extract ``member`` of a zip or tar archive into ``dest_dir`` after checking that every member
    path stays inside it; returns the extracted file's path."""
    dest_dir = os.path.realpath(dest_dir)

    def check(names):
        for n in names:
            target = os.path.realpath(os.path.join(dest_dir, n))
            if os.path.isabs(n) or not (target == dest_dir or target.startswith(dest_dir + os.sep)):
                raise DownloadError(f"model '{model}': archive {url} has a member '{n}' that escapes the "
                               "target folder; refusing to extract it (the store's archive is unsafe)")

    if zipfile.is_zipfile(archive):
        with zipfile.ZipFile(archive) as zf:
            check(zf.namelist())
            if member not in zf.namelist():
                raise DownloadError(f"model '{model}': archive {url} has no member '{member}'")
            zf.extract(member, dest_dir)
    else:
        try:
            tf = tarfile.open(archive)
        except tarfile.TarError:
            raise DownloadError(f"model '{model}': {url} is not a zip or tar archive") from None
        with tf:
            members = tf.getmembers()
            check(m.name for m in members)
            if any(m.issym() or m.islnk() for m in members):
                raise DownloadError(f"model '{model}': archive {url} contains links; refusing to extract it")
            tf.extract(member, dest_dir)
    return os.path.join(dest_dir, member)
