"""The checkpoint store: find, download, verify and cache published weights.

Records (``records.py``) say which checkpoints exist and where they are served; downloads and their
verification live in ``download.py``; this module puts them together. Its names (and those of the
two other modules that callers used from here) stay importable from ``gluon_suite.model_zoo.store``.

Guarantees: the file is streamed to a temporary file, its size and hash are checked, and only then
is it synced and renamed into the cache; a file lock makes many processes on one machine download
once (the others wait, then hash the finished file), and what a killed download left is removed; a
corrupt or truncated cached file is detected and fetched again, once, under the lock; with
``GLUON_SUITE_OFFLINE=1`` the network is never touched and a missing file is an error naming where
to put it. Every error is one line naming the model, the URL and what to do.
"""
import os
import shutil
import tempfile

from ..utils.env import env
from .download import (_algo, _check_download, _is_valid, _stamp_path, _write_stamp, cache_lock,  # noqa: F401
                       clear_partials, download, file_hash, safe_extract)
from .records import (CATALOGUE, LOCAL, SHIPPED, DownloadError, ZooError, add_record, cache_root,  # noqa: F401
                      has_pretrained, home, layered_records, load_records, local_records, offline, record_for,
                      remove_record, shipped_records, store_records, url_of, user_records_path)


def make_cache(root=None):
    """The cache folder (``root`` or ``$GLUON_SUITE_HOME/models``), created when missing; a file in
    its place is a ZooError naming it."""
    root = cache_root(root)
    try:
        os.makedirs(root, exist_ok=True)
    except (FileExistsError, NotADirectoryError):
        raise ZooError(f"checkpoint cache {root} cannot be a folder: it or a folder above it is a file; "
                       "give --root a folder (or point GLUON_SUITE_HOME at one)") from None
    return root


# ---- fetching ------------------------------------------------------------------------------------
def fetch(record, root=None):
    """Return the local path of the record's verified file, downloading it when needed."""
    model = record["model"]
    root = make_cache(root)
    path = os.path.join(root, record["file_name"])
    if _is_valid(path, record):
        return path
    with cache_lock(path):
        # whoever held the lock may have fetched it: hash what is there, whatever its stamp says
        if _is_valid(path, record, full=True):
            return path
        url = url_of(record)
        # offline means no network, not no local files: a store on this machine (file://, or the
        # store shipped in the source tree) still serves its checkpoints
        if offline() and not url.startswith("file://"):
            raise ZooError(f"model '{model}': {record['file_name']} is not in the cache and "
                           f"GLUON_SUITE_OFFLINE=1; copy the file to {path} (sha256/sha1 is checked) or "
                           "unset GLUON_SUITE_OFFLINE")
        clear_partials(path)
        for stale in (path, _stamp_path(path)):
            if os.path.exists(stale):
                os.unlink(stale)
        archive = record.get("archive")
        if not archive:
            download(url, path, model, expect=record)
        else:
            with tempfile.TemporaryDirectory(dir=root, prefix=f".extract-{record['file_name']}.") as tmp:
                arc = download(url, os.path.join(tmp, "archive"), model)
                out = safe_extract(arc, record.get("member", record["file_name"]),
                                   os.path.join(tmp, "x"), url, model)
                _check_download(os.path.getsize(out), file_hash(out, _algo(record)), record, url, model)
                with open(out, "rb") as f:
                    os.fsync(f.fileno())
                os.replace(out, path)
                _write_stamp(path, record)
    return path


def checkpoint_path(model, root=None, source=None):
    """The verified local file of ``model``'s published checkpoint (downloaded on first use);
    ``source`` picks a layer or a store folder as in ``load_records``."""
    return fetch(record_for(model, source), root)


# ---- GluonCV's store -----------------------------------------------------------------------------
def gluoncv_record(name):
    """A record for a model whose weights GluonCV publishes: GluonCV's file name, sha1 and URL
    layout (``{repo}gluon/models/{name}-{hash8}.zip``), so mirrors of GluonCV's store work as is."""
    from gluoncv.model_zoo import model_store
    if name not in model_store._model_sha1:
        raise ZooError(f"model '{name}' has no GluonCV weights; use pretrained=False")
    stem = f"{name}-{model_store.short_hash(name)}"
    repo = env("GLUON_SUITE_REPO") or env("MXNET_GLUON_REPO") or model_store.apache_repo_url
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
    by_file = {r["file_name"]: r for _, _, r, _ in layered_records()}
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
