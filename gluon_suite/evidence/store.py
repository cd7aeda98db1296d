"""Result files: ``bench/results/NAME/<date>-<time>-<commit>.json``, one per run, never appended to,
merged into or rewritten. A new file is written under a temporary name and linked into place, which
fails rather than replace a file that exists; ``latest.json`` is a small pointer (file name and
SHA-256) replaced atomically after each run."""
import hashlib
import json
import os
import time

from ..utils.errors import UserError

__all__ = ["write_result", "latest", "read_result", "result_files", "LATEST", "file_sha256"]

LATEST = "latest.json"


def file_sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def _fsync_write(path, text):
    with open(path, "x", encoding="utf-8") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())


def write_result(results_dir, name, result, commit, extra_files=()):
    """Write ``result`` as a new file in ``results_dir/name``; never touches an existing file.
    ``extra_files``: (suffix, bytes) pairs written beside it with the same stem (plots). Returns the
    new file's path."""
    folder = os.path.join(results_dir, name)
    os.makedirs(folder, exist_ok=True)
    stamp = time.strftime("%Y%m%d-%H%M%S", time.gmtime())
    stem = f"{stamp}-{commit[:12]}"
    n = 1
    while any(os.path.exists(os.path.join(folder, stem + s)) for s in (".json", *(x for x, _ in extra_files))):
        n += 1
        stem = f"{stamp}-{commit[:12]}-{n}"
    path = os.path.join(folder, stem + ".json")
    text = json.dumps(result, indent=1, sort_keys=True, allow_nan=False) + "\n"
    for suffix, data in extra_files:
        tmp = os.path.join(folder, f".{stem}{suffix}.tmp{os.getpid()}")
        with open(tmp, "xb") as f:
            f.write(data)
        os.link(tmp, os.path.join(folder, stem + suffix))
        os.unlink(tmp)
    tmp = os.path.join(folder, f".{stem}.json.tmp{os.getpid()}")
    _fsync_write(tmp, text)
    try:
        os.link(tmp, path)          # fails with FileExistsError instead of replacing
    finally:
        os.unlink(tmp)
    pointer = {"file": os.path.basename(path), "sha256": file_sha256(path), "name": name,
               "protocol_version": result.get("protocol", {}).get("version"),
               "verdict": result.get("verdict")}
    ptmp = os.path.join(folder, f".{LATEST}.tmp{os.getpid()}")
    with open(ptmp, "w", encoding="utf-8") as f:
        f.write(json.dumps(pointer, indent=1, sort_keys=True) + "\n")
    os.replace(ptmp, os.path.join(folder, LATEST))
    return path


def result_files(results_dir, name):
    """The result files of ``name``, oldest first (the pointer excluded)."""
    folder = os.path.join(results_dir, name)
    if not os.path.isdir(folder):
        return []
    return sorted(os.path.join(folder, f) for f in os.listdir(folder)
                  if f.endswith(".json") and f != LATEST and not f.startswith("."))


def read_result(path):
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except (OSError, ValueError) as exc:
        raise UserError(f"cannot read the result file {path}: {exc}") from None


def latest(results_dir, name, check=True):
    """(path, result) of ``name``'s newest result as ``latest.json`` names it, or (None, None) when
    there is none. With ``check``, a pointer whose file is missing or whose hash differs is an
    error (a result file was edited)."""
    ptr = os.path.join(results_dir, name, LATEST)
    if not os.path.isfile(ptr):
        return None, None
    p = read_result(ptr)
    path = os.path.join(results_dir, name, p.get("file", ""))
    if not os.path.isfile(path):
        raise UserError(f"{ptr} names {p.get('file')!r}, which is missing; rerun 'gluon-suite bench run {name}'")
    if check and file_sha256(path) != p.get("sha256"):
        raise UserError(f"{path} differs from the hash {ptr} recorded: result files are never edited; "
                        f"restore it with git or rerun the protocol")
    return path, read_result(path)
