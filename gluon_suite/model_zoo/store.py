"""The checkpoint store: find, download, verify and cache published weights.

A *record* describes one published checkpoint (data, not code)::

    {"model": "digits_cnn", "file_name": "digits_cnn-1a2b3c4d.params", "sha256": "...",
     "size": 241234, "url": "https://host/zoo/", "card": "model_zoo/digits_cnn.json"}

Records come from the suite's catalogue (``checkpoints.json`` beside this module) and from
``$GLUON_SUITE_HOME/records.json`` (written by ``gluon-suite zoo publish``). Files are fetched from
``$GLUON_SUITE_REPO`` when set (a mirror: ``http(s)://`` or ``file://``), else from the record's URL.

Guarantees: the file is streamed to a temporary file, its size and hash are checked, and only then
is it renamed into the cache; a file lock makes many processes on one machine download once; a
corrupt or truncated cached file is detected and fetched again; with ``GLUON_SUITE_OFFLINE=1`` the
network is never touched and a missing file is an error naming where to put it. Archives are
extracted only after every member path is checked to stay inside the target folder. Every error
is one line naming the model, the URL and what to do.
"""
import hashlib
import json
import os
import shutil
import tarfile
import tempfile
import time
import urllib.parse
import zipfile

from ..utils.errors import UserError
from ..utils.fileio import atomic_path, write_json

CATALOGUE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "checkpoints.json")
_CHUNK = 1 << 20


class ZooError(UserError):
    """A checkpoint could not be found, fetched or verified; the message says what to do."""


# ---- settings ------------------------------------------------------------------------------------
def home():
    """``$GLUON_SUITE_HOME`` (default ``~/.gluon_suite``)."""
    return os.path.expanduser(os.environ.get("GLUON_SUITE_HOME", os.path.join("~", ".gluon_suite")))


def cache_root(root=None):
    """Where checkpoints are cached: ``root`` or ``$GLUON_SUITE_HOME/models``."""
    return os.path.expanduser(root) if root else os.path.join(home(), "models")


def offline():
    """True when ``GLUON_SUITE_OFFLINE`` is set to 1/true/yes."""
    return os.environ.get("GLUON_SUITE_OFFLINE", "").lower() in ("1", "true", "yes")


def _float_env(name, default):
    try:
        return float(os.environ.get(name, default))
    except ValueError:
        raise ZooError(f"{name} must be a number, got {os.environ[name]!r}") from None


# ---- records -------------------------------------------------------------------------------------
def _read_records(path):
    if not os.path.exists(path):
        return []
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
    except (OSError, ValueError) as exc:
        raise ZooError(f"cannot read checkpoint records {path}: {exc}; fix or delete the file") from None
    return data.get("checkpoints", []) if isinstance(data, dict) else []


def user_records_path():
    """The records file that ``zoo publish`` writes on this machine."""
    return os.path.join(home(), "records.json")


def load_records():
    """All known records, ``{model: record}``; local records override the catalogue's."""
    out = {}
    for path in (CATALOGUE, user_records_path()):
        for rec in _read_records(path):
            out[rec["model"]] = rec
    return out


def add_record(record, path=None):
    """Add or replace ``record`` (by model name) in a records file (default: this machine's)."""
    path = path or user_records_path()
    recs = [r for r in _read_records(path) if r["model"] != record["model"]] + [record]
    write_json(path, {"checkpoints": sorted(recs, key=lambda r: r["model"])})


def has_pretrained(entry):
    """Whether published weights exist for a registry entry."""
    if entry.weights == "gluoncv":
        from gluoncv.model_zoo import model_store
        return entry.name in model_store._model_sha1
    return entry.name in load_records()


def record_for(model):
    """The record of ``model``'s checkpoint, or ZooError when none is published."""
    rec = load_records().get(model)
    if rec is None:
        raise ZooError(f"model '{model}' has no published checkpoint; use pretrained=False, or publish "
                       f"one with `gluon-suite zoo publish CHECKPOINT --name {model} ...`")
    return rec


def url_of(record):
    """Where the record's file is fetched from: the base URL (the mirror in ``$GLUON_SUITE_REPO``
    wins over the record's ``url``) joined with the record's ``remote_path`` (default: its file
    name)."""
    base = os.environ.get("GLUON_SUITE_REPO") or record.get("url")
    if not base:
        raise ZooError(f"model '{record['model']}': no download location for {record['file_name']}; "
                       "set GLUON_SUITE_REPO to the base URL of a zoo store (http(s):// or file://)")
    if base.startswith("repo:"):  # a store inside the suite's own source tree (model_zoo/store)
        suite_root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        base = "file://" + os.path.join(suite_root, base[len("repo:"):])
    return base.rstrip("/") + "/" + record.get("remote_path", record["file_name"])


# ---- hashing and the verified stamp ---------------------------------------------------------------
def file_hash(path, algo="sha256"):
    """Hex digest of a file, streamed."""
    h = hashlib.new(algo)
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(_CHUNK), b""):
            h.update(chunk)
    return h.hexdigest()


def _algo(record):
    return "sha256" if "sha256" in record else "sha1"


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


# ---- fetching --------------------------------------------------------------------------------------
class _NoBar:
    def update(self, n):
        pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def _progress(total, desc):
    """A byte progress bar on stderr; none when GLUON_SUITE_QUIET=1."""
    if os.environ.get("GLUON_SUITE_QUIET") == "1":
        return _NoBar()
    from tqdm.auto import tqdm
    return tqdm(total=total, desc=desc, unit="B", unit_scale=True, unit_divisor=1024, leave=False,
                mininterval=0.5)


def _stream(url, dest, model):
    """Stream ``url`` into the open file ``dest``; raise ZooError (permanent) or ``_Retry``."""
    parsed = urllib.parse.urlparse(url)
    if parsed.scheme == "file":
        src = urllib.parse.unquote(parsed.path)
        if not os.path.isfile(src):
            raise ZooError(f"model '{model}': {url} does not exist; check GLUON_SUITE_REPO or put the "
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
    timeout = (_float_env("GLUON_SUITE_CONNECT_TIMEOUT", 10), _float_env("GLUON_SUITE_READ_TIMEOUT", 60))
    try:
        with requests.get(url, stream=True, timeout=timeout) as r:
            if r.status_code >= 500 or r.status_code == 429:
                raise _Retry(f"HTTP {r.status_code} {r.reason}")
            if r.status_code != 200:
                raise ZooError(f"model '{model}': download of {url} failed with HTTP {r.status_code} "
                               f"{r.reason}; check GLUON_SUITE_REPO and that the store holds this file")
            total = int(r.headers.get("content-length") or 0) or None
            # urllib3's own read: the fewest copies of the public ways to stream a body; a
            # gzip/deflate-encoded response is decoded, so the file it carries is what is hashed
            encoded = r.headers.get("content-encoding", "identity").lower() not in ("", "identity")
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
    """A transient failure: worth trying again."""


def download(url, path, model, expect=None):
    """Download ``url`` to ``path`` atomically, retrying transient failures with back-off; with
    ``expect`` (a record) the size and hash are checked before the rename."""
    retries = int(_float_env("GLUON_SUITE_RETRIES", 3))
    backoff = _float_env("GLUON_SUITE_BACKOFF", 0.5)
    last = None
    for attempt in range(retries + 1):
        if attempt:
            time.sleep(backoff * 2 ** (attempt - 1))
        try:
            # no fsync: a cached file is checked (size, stamp, hash) before every use
            with atomic_path(path, durable=False) as tmp:
                with open(tmp, "wb", buffering=0) as f:
                    w = _HashingWriter(f, _algo(expect) if expect else "sha256")
                    try:
                        _stream(url, w, model)
                    finally:
                        digest = w.hexdigest()  # the helper thread is done before the file closes
                if expect is not None:
                    _check_download(w.n, digest, expect, url, model)
            if expect is not None:
                _write_stamp(path, expect)
            return path
        except _Retry as exc:
            last = str(exc)
    raise ZooError(f"model '{model}': download of {url} failed after {retries + 1} attempts: {last}; "
                   "check the network or GLUON_SUITE_REPO, or set GLUON_SUITE_OFFLINE=1 and put the file "
                   "in the cache by hand")


def _check_download(size, got, record, url, model):
    """Compare a downloaded file's ``size`` and digest ``got`` with its record."""
    if record.get("size") is not None and size != record["size"]:
        raise ZooError(f"model '{model}': {url} is truncated or wrong ({size} bytes, expected "
                       f"{record['size']}); the store's copy is damaged: republish it or use another mirror")
    algo = _algo(record)
    if got != record[algo]:
        raise ZooError(f"model '{model}': {url} has {algo} {got[:12]}..., expected {record[algo][:12]}...; "
                       "the file does not match its record: republish it or use another mirror")


def safe_extract(archive, member, dest_dir, url, model):
    """Extract ``member`` of a zip or tar archive into ``dest_dir`` after checking that every member
    path stays inside it; returns the extracted file's path."""
    dest_dir = os.path.realpath(dest_dir)

    def check(names):
        for n in names:
            target = os.path.realpath(os.path.join(dest_dir, n))
            if os.path.isabs(n) or not (target == dest_dir or target.startswith(dest_dir + os.sep)):
                raise ZooError(f"model '{model}': archive {url} has a member '{n}' that escapes the "
                               "target folder; refusing to extract it (the store's archive is unsafe)")

    if zipfile.is_zipfile(archive):
        with zipfile.ZipFile(archive) as zf:
            check(zf.namelist())
            if member not in zf.namelist():
                raise ZooError(f"model '{model}': archive {url} has no member '{member}'")
            zf.extract(member, dest_dir)
    else:
        try:
            tf = tarfile.open(archive)
        except tarfile.TarError:
            raise ZooError(f"model '{model}': {url} is not a zip or tar archive") from None
        with tf:
            members = tf.getmembers()
            check(m.name for m in members)
            if any(m.issym() or m.islnk() for m in members):
                raise ZooError(f"model '{model}': archive {url} contains links; refusing to extract it")
            tf.extract(member, dest_dir)
    return os.path.join(dest_dir, member)


def fetch(record, root=None):
    """Return the local path of the record's verified file, downloading it when needed."""
    from filelock import FileLock
    model = record["model"]
    root = cache_root(root)
    os.makedirs(root, exist_ok=True)
    path = os.path.join(root, record["file_name"])
    if _is_valid(path, record):
        return path
    # lock files live apart from checkpoints (they stay after release: deleting one under a waiting
    # process would let two processes hold "the" lock)
    os.makedirs(os.path.join(root, ".locks"), exist_ok=True)
    with FileLock(os.path.join(root, ".locks", record["file_name"] + ".lock")):
        if _is_valid(path, record):          # another process fetched it while we waited
            return path
        url = url_of(record)
        # offline means no network, not no local files: a store on this machine (file://, or the
        # store shipped in the source tree) still serves its checkpoints
        if offline() and not url.startswith("file://"):
            raise ZooError(f"model '{model}': {record['file_name']} is not in the cache and "
                           f"GLUON_SUITE_OFFLINE=1; copy the file to {path} (sha256/sha1 is checked) or "
                           "unset GLUON_SUITE_OFFLINE")
        for stale in (path, _stamp_path(path)):
            if os.path.exists(stale):
                os.unlink(stale)
        archive = record.get("archive")
        if not archive:
            download(url, path, model, expect=record)
        else:
            with tempfile.TemporaryDirectory(dir=root, prefix=".extract-") as tmp:
                arc = download(url, os.path.join(tmp, "archive"), model)
                out = safe_extract(arc, record.get("member", record["file_name"]),
                                   os.path.join(tmp, "x"), url, model)
                _check_download(os.path.getsize(out), file_hash(out, _algo(record)), record, url, model)
                os.replace(out, path)
                _write_stamp(path, record)
    return path


def checkpoint_path(model, root=None):
    """The verified local file of ``model``'s published checkpoint (downloaded on first use)."""
    return fetch(record_for(model), root)


# ---- GluonCV's store -----------------------------------------------------------------------------
def gluoncv_record(name):
    """A record for a model whose weights GluonCV publishes: GluonCV's file name, sha1 and URL
    layout (``{repo}gluon/models/{name}-{hash8}.zip``), so mirrors of GluonCV's store work as is."""
    from gluoncv.model_zoo import model_store
    if name not in model_store._model_sha1:
        raise ZooError(f"model '{name}' has no GluonCV weights; use pretrained=False")
    stem = f"{name}-{model_store.short_hash(name)}"
    repo = os.environ.get("GLUON_SUITE_REPO") or os.environ.get("MXNET_GLUON_REPO") or model_store.apache_repo_url
    return {"model": name, "file_name": stem + ".params", "sha1": model_store._model_sha1[name],
            "url": repo, "remote_path": f"gluon/models/{stem}.zip",
            "archive": "zip", "member": stem + ".params"}


def gluoncv_weights(entry, args, root=None, ctx=None):
    """Build ``entry``'s network and load GluonCV's published weights for it."""
    path = fetch(gluoncv_record(entry.name), root)
    net = entry.fn(**args)
    net.load_parameters(path, ctx=ctx)
    return net


# ---- cache maintenance ------------------------------------------------------------------------------
def verify_cache(root=None):
    """Re-hash every cached file that has a record; returns ``[(file, ok)]``."""
    root = cache_root(root)
    by_file = {r["file_name"]: r for r in load_records().values()}
    out = []
    if not os.path.isdir(root):
        return out
    for fn in sorted(os.listdir(root)):
        if fn in by_file:
            out.append((fn, _is_valid(os.path.join(root, fn), by_file[fn], full=True)))
    return out


def purge(root=None):
    """Delete the checkpoint cache folder; returns the number of files removed."""
    root = cache_root(root)
    if not os.path.isdir(root):
        return 0
    n = sum(len(files) for _, _, files in os.walk(root))
    shutil.rmtree(root)
    return n
