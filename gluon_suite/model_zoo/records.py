"""Checkpoint records and the zoo's settings.

A *record* describes one published checkpoint (data, not code)::

    {"model": "digits_cnn", "file_name": "digits_cnn-1a2b3c4d.params", "sha256": "...",
     "size": 241234, "url": "https://host/zoo/", "card": "model_zoo/digits_cnn.json"}

Records come in two layers: the suite's catalogue (``checkpoints.json`` beside this module, the
*shipped* layer) and ``$GLUON_SUITE_HOME/records.json`` (written by ``gluon-suite zoo publish``, the
*local* layer). A shipped name always means the shipped checkpoint, unless a local record under that
name was published with ``--replace`` (its record then carries ``"replaces"``: the SHA-256 of the
shipped file it shadows), or the caller asks for another source explicitly (``source='local'`` or a
store folder). ``zoo remove NAME`` deletes a local record, which undoes a replacement. A records
file that is not such a list of records is an error naming the file, never silently ignored.
"""
import json
import os

from ..utils.errors import RunFailed, UserError
from ..utils.fileio import write_json
from ..utils.env import env

CATALOGUE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "checkpoints.json")


class ZooError(UserError):
    """A checkpoint could not be found, fetched or verified; the message says what to do."""


class DownloadError(ZooError, RunFailed):
    """A valid request whose download failed (network, HTTP error, a damaged copy in the store):
    ``run_cli`` exits 1 for it, not 2."""
    exit_code = RunFailed.exit_code


# ---- settings ------------------------------------------------------------------------------------
def home():
    """``$GLUON_SUITE_HOME`` (default ``~/.gluon_suite``)."""
    return env("GLUON_SUITE_HOME")


def cache_root(root=None):
    """Where checkpoints are cached: ``root`` or ``$GLUON_SUITE_HOME/models``."""
    return os.path.expanduser(root) if root else os.path.join(home(), "models")


def offline():
    """True when ``GLUON_SUITE_OFFLINE`` is set to 1/true/yes/on (a value that is not yes/no is an
    error naming the variable)."""
    return env("GLUON_SUITE_OFFLINE")


# ---- records -------------------------------------------------------------------------------------
def _read_records(path):
    if not os.path.exists(path):
        return []
    fix = "fix or delete the file (`gluon-suite zoo publish` writes it again)"
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
    except IsADirectoryError:
        raise ZooError(f"checkpoint records {path} is a folder, not a JSON file; remove it") from None
    except (OSError, ValueError) as exc:
        raise ZooError(f"cannot read checkpoint records {path} ({' '.join(str(exc).split())}); "
                       f"{fix}") from None
    recs = data.get("checkpoints") if isinstance(data, dict) else None
    if not isinstance(recs, list) or not all(
            isinstance(r, dict) and {"model", "file_name"} <= set(r) and ("sha256" in r or "sha1" in r)
            for r in recs):
        raise ZooError(f"checkpoint records {path} is not a {{\"checkpoints\": [record, ...]}} object "
                       f"with model, file_name and sha256 in each record; {fix}")
    return recs


def user_records_path():
    """The records file that ``zoo publish`` writes on this machine."""
    return os.path.join(home(), "records.json")


SHIPPED, LOCAL = "shipped", "local"


def shipped_records():
    """The catalogue's records, ``{model: record}`` (the shipped layer)."""
    return {r["model"]: r for r in _read_records(CATALOGUE)}


def local_records():
    """This machine's records, ``{model: record}`` (the local layer, written by ``zoo publish``)."""
    return {r["model"]: r for r in _read_records(user_records_path())}


def store_records(store):
    """The records of the zoo store folder ``store`` (its ``index.json``), ``{model: record}``."""
    index = store if store.endswith(".json") else os.path.join(store, "index.json")
    if not os.path.isfile(index):
        raise ZooError(f"zoo store {store} has no index.json; give the folder that `gluon-suite zoo publish "
                       "--store` (or a training script's --publish) wrote")
    return {r["model"]: r for r in _read_records(index)}


def layered_records():
    """Every record of both layers with how it is used: ``[(model, layer, record, status)]``,
    sorted by model then layer, where ``status`` is ``'in use'``, ``'shadowed'`` (a shipped record a
    local ``--replace`` overrides) or ``'ignored'`` (a local record under a shipped name that was not
    published with ``--replace``: the shipped checkpoint is used)."""
    shipped, local = shipped_records(), local_records()
    rows = []
    for model, rec in shipped.items():
        mine = local.get(model)
        rows.append((model, SHIPPED, rec, "shadowed" if mine and mine.get("replaces") else "in use"))
    for model, rec in local.items():
        status = "ignored" if model in shipped and not rec.get("replaces") else "in use"
        rows.append((model, LOCAL, rec, status))
    return sorted(rows, key=lambda r: (r[0], r[1] != SHIPPED))


def load_records(source=None):
    """The records ``get_model`` uses, ``{model: record}``.

    ``source=None``: both layers, a shipped name meaning the shipped record unless a local one
    replaces it (``--replace``); ``'shipped'`` or ``'local'``: that layer only; any other text: the
    zoo store folder (or ``index.json``) it names."""
    if source == SHIPPED:
        return shipped_records()
    if source == LOCAL:
        return local_records()
    if source:
        return store_records(source)
    out = shipped_records()
    for model, rec in local_records().items():
        if model not in out or rec.get("replaces"):
            out[model] = rec
    return out


def add_record(record, path=None):
    """Add or replace ``record`` (by model name) in a records file (default: this machine's)."""
    path = path or user_records_path()
    recs = [r for r in _read_records(path) if r["model"] != record["model"]] + [record]
    write_json(path, {"checkpoints": sorted(recs, key=lambda r: r["model"])})


def remove_record(model, path=None):
    """Delete ``model``'s record from a records file (default: this machine's local layer) and
    return it; ZooError when the file holds none (the shipped catalogue is never edited here)."""
    path = path or user_records_path()
    recs = _read_records(path)
    gone = [r for r in recs if r["model"] == model]
    if not gone:
        have = sorted(r["model"] for r in recs)
        shipped = " (it is shipped with the suite: only local records can be removed)" \
            if model in shipped_records() else ""
        raise ZooError(f"no local record of '{model}' in {path}{shipped}; local records: "
                       f"{', '.join(have) or 'none'}")
    write_json(path, {"checkpoints": [r for r in recs if r["model"] != model]})
    return gone[0]


def has_pretrained(entry):
    """Whether published weights exist for a registry entry."""
    if entry.weights == "gluoncv":
        from gluoncv.model_zoo import model_store
        return entry.name in model_store._model_sha1
    return entry.name in load_records()


def record_for(model, source=None):
    """The record of ``model``'s checkpoint from ``source`` (see ``load_records``), or ZooError
    when it has none."""
    rec = load_records(source).get(model)
    if rec is None:
        where = {None: "", SHIPPED: " among the shipped checkpoints", LOCAL: " among this machine's records"}
        hint = where.get(source, f" in the zoo store {source}")
        raise ZooError(f"model '{model}' has no published checkpoint{hint}; use pretrained=False, or publish "
                       f"one with `gluon-suite zoo publish CHECKPOINT --name {model} ...`")
    return rec


def url_of(record):
    """Where the record's file is fetched from: the base URL (the mirror in ``$GLUON_SUITE_REPO``
    wins over the record's ``url``) joined with the record's ``remote_path`` (default: its file
    name)."""
    base = env("GLUON_SUITE_REPO") or record.get("url")
    if not base:
        raise ZooError(f"model '{record['model']}': no download location for {record['file_name']}; "
                       "set GLUON_SUITE_REPO to the base URL of a zoo store (http(s):// or file://)")
    if base.startswith("repo:"):  # a store inside the suite's own source tree (model_zoo/store)
        suite_root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        base = "file://" + os.path.join(suite_root, base[len("repo:"):])
    return base.rstrip("/") + "/" + record.get("remote_path", record["file_name"])
