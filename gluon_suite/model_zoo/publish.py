"""Publishing trained checkpoints into a zoo store: a folder that any static HTTP server (or a
``file://`` URL) can serve, holding ``{name}-{sha256[:8]}.params`` files and an ``index.json`` of
their records."""
import dataclasses
import os
import shutil

from ..utils.fileio import atomic_path, write_json
from ..utils.runconfig import option
from ..utils.validate import output_dir, output_file
from ..utils.validate import url as url_flag   # (``url`` is also an argument name below)
from .card_schema import load_card
from .registry import model_name
from .store import CATALOGUE, ZooError, add_record, file_hash

_SUITE_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def publish(checkpoint, name, card_path, store, url=None, register=True, catalogue=False, tag=None,
            replace=False, log=None):
    """Copy ``checkpoint`` into ``store`` under a hashed name, write a copy of its card, with the
    ``checkpoint`` field filled in, beside it (``STORE/NAME.json``) and its record into the store's
    ``index.json`` and (with ``register``) into this machine's records. The card at ``card_path``
    is only read (and checked field by field), never rewritten, unless it is the store's own copy.
    ``url`` is the base URL the store will be served from (default: the store folder as
    ``file://``; ``repo:model_zoo/store`` for the store in the source tree). ``catalogue=True``
    (for the suite's maintainers) records it in the suite's own catalogue instead, so that every
    installation knows it, and fills the ``checkpoint`` field of the shipped card at ``card_path``:
    the one way a shipped card changes. Returns the record.

    A name the suite ships is never replaced on this machine by accident: ``tag`` publishes the
    record as ``NAME.TAG`` (loaded with ``get_model('NAME.TAG', pretrained=True)``), ``replace``
    makes this machine's record win over the shipped one (undone by ``gluon-suite zoo remove
    NAME``); with neither, the checkpoint goes into ``store`` only and this machine keeps using the
    shipped one. ``log`` (default print) receives the one line that says which of these happened."""
    from .records import shipped_records
    from .registry import TAG_SEP, check_weights, resolve
    log = log or print
    name = resolve(name).name  # an unregistered name: the closest registered names
    if tag is not None and (not tag or not all(c.isalnum() or c in "_-" for c in str(tag))):
        raise ZooError(f"--tag {tag!r}: a tag is letters, digits, '_' and '-' (e.g. mine, run2)")
    if tag and replace:
        raise ZooError("--tag and --replace exclude each other: a tagged checkpoint has its own name and "
                       "replaces nothing; give one of them")
    check_weights(checkpoint, name, "checkpoint", error=ZooError,
                  fix=f"publish a checkpoint of '{name}' written by net.save_parameters (only NDArray "
                      ".params files are published), or the --name of the model it was trained as")
    card = load_card(card_path)
    if card["name"] != name:
        raise ZooError(f"model card {card_path} is for '{card['name']}', not '{name}'; give the card of "
                       f"'{name}' or publish under --name {card['name']}")
    if url is not None and not url.startswith(("http://", "https://", "file://", "repo:")):
        raise ZooError(f"--url {url} is not a URL; use the http://, https:// or file:// base the store is "
                       "served from")
    if os.path.exists(store) and not os.path.isdir(store):
        raise ZooError(f"zoo store {store} is a file, not a folder; give --store a folder")
    key = f"{name}{TAG_SEP}{tag}" if tag else name
    shipped = None if catalogue else shipped_records().get(key)
    if replace and shipped is None:
        raise ZooError(f"--replace: '{key}' is not a shipped checkpoint, so there is nothing to replace; "
                       "publish without --replace")
    sha = file_hash(checkpoint)
    file_name = f"{key}-{sha[:8]}.params"
    os.makedirs(store, exist_ok=True)
    dest = os.path.join(store, file_name)
    with atomic_path(dest) as tmp:
        shutil.copyfile(checkpoint, tmp)
    base = url or "file://" + os.path.abspath(store)
    card_name = f"{key}.json"
    record = {"model": key, "file_name": file_name, "sha256": sha,
              "size": os.path.getsize(checkpoint), "url": base, "card": card_name}
    card = {**card, "checkpoint": {"file_name": file_name, "sha256": sha, "size": record["size"]}}
    store_card = os.path.join(store, card_name)
    write_json(store_card, card)  # the store carries its cards: evaluation reads them
    add_record(record, os.path.join(store, "index.json"))
    if catalogue:
        write_json(card_path, card)  # the shipped card names the checkpoint it describes
        add_record({**record, "card": os.path.relpath(os.path.abspath(card_path), _SUITE_ROOT)}, CATALOGUE)
        return record
    if not register:
        return record
    what = f"'{key}' ({sha[:8]})"
    if shipped is not None and not replace:
        log(f"{what} is in {store} only: '{name}' is shipped with the suite ({shipped['sha256'][:8]}), which "
            f"this machine keeps using; load yours with source='{store}' (evaluate.py --source {store}), or "
            "publish with --tag TAG (a name of its own) or --replace (yours instead of the shipped one)")
        return record
    local = {**record, "card_path": os.path.abspath(store_card)}
    if shipped is not None:
        local["replaces"] = shipped["sha256"]
        log(f"{what} now shadows the shipped '{name}' ({shipped['sha256'][:8]}) on this machine; "
            f"`gluon-suite zoo remove {name}` restores the shipped one")
    add_record(local)
    return record


RUN_KEYS = ("publish", "publish_name", "publish_url", "publish_tag", "publish_replace", "card", "progress",
            "resume", "out")


def publish_run(cfg, defaults, checkpoint, script, metric, workers, log=None):
    """Write the model card of a training run and publish its ``checkpoint`` into the store
    ``cfg['publish']`` (used by every recipe). The card holds the exact command (``script`` with
    this process's arguments, behind ``horovodrun`` for several workers), the hyperparameters
    (``defaults``' keys, run-only keys left out), ``metric`` (name, value, dataset) and the
    training log; it is written to ``cfg['card']`` or ``OUT/NAME.json``. Returns the record."""
    import shlex
    import sys

    from .registry import resolve
    name = cfg.get("publish_name") or cfg["model"]
    card_path = cfg.get("card") or os.path.join(cfg["out"], f"{name}.json")
    argv = " ".join(shlex.quote(a) for a in sys.argv[1:]) if sys.argv and sys.argv[0] else ""
    prefix = f"horovodrun -np {workers} -H localhost:{workers} --gloo " if workers > 1 else ""
    card = {"name": name, "architecture": resolve(name).description,
            "command": f"{prefix}python {script} {argv}".strip(),
            "hyperparameters": {k: cfg[k] for k in sorted(defaults) if k not in RUN_KEYS},
            "metric": metric, "training_log": os.path.join(cfg["out"], "log.jsonl"), "workers": workers}
    write_json(card_path, card)
    return publish(checkpoint, name, card_path, cfg["publish"], url=cfg.get("publish_url"),
                   tag=cfg.get("publish_tag"), replace=bool(cfg.get("publish_replace")), log=log)


PUBLISH_GROUP = "publishing into a zoo store (see docs/model_zoo.md)"


@dataclasses.dataclass
class PublishOptions:
    """Publishing the trained model into a zoo store (``publish_run``): the option group of the
    training recipes' configurations, with their flags (``utils.flags``)."""
    publish: str = option(None, output_dir, metavar="STORE", group=PUBLISH_GROUP,
                          help="publish the trained model into this store folder")
    publish_name: str = option(None, model_name, group=PUBLISH_GROUP,
                               help="registered zoo name to publish under (default: --model)")
    publish_url: str = option(None, url_flag, group=PUBLISH_GROUP,
                              help="base URL the store is served from (default: file:// of STORE)")
    publish_tag: str = option(None, metavar="TAG", group=PUBLISH_GROUP,
                              help="publish as NAME.TAG, a checkpoint name of its own (needed beside a shipped "
                                   "checkpoint)")
    publish_replace: bool = option(False, group=PUBLISH_GROUP,
                                   help="let this machine's record win over the shipped checkpoint of the same name")
    card: str = option(None, output_file, group=PUBLISH_GROUP,
                       help="where to write the model card (default: OUT/NAME.json)")


def publish_companion(path, name, kind, store, url=None, catalogue=False, replace=False):
    """Publish a file that a checkpoint needs beside it (e.g. a BERT vocabulary, ``kind='vocab'``)
    as the record ``NAME:KIND``: hashed file name, checksum verified on download like any
    checkpoint, fetched with ``checkpoint_path('NAME:KIND')``. Under a shipped name it is registered
    on this machine only with ``replace`` (as its checkpoint is). Returns the record."""
    if not os.path.isfile(path):
        raise ZooError(f"{path} does not exist")
    sha = file_hash(path)
    stem, ext = os.path.splitext(os.path.basename(path))
    file_name = f"{name}-{kind}-{sha[:8]}{ext}"
    os.makedirs(store, exist_ok=True)
    with atomic_path(os.path.join(store, file_name)) as tmp:
        shutil.copyfile(path, tmp)
    record = {"model": f"{name}:{kind}", "companion": kind, "file_name": file_name, "sha256": sha,
              "size": os.path.getsize(path), "url": url or "file://" + os.path.abspath(store)}
    add_record(record, os.path.join(store, "index.json"))
    if catalogue:
        add_record(record, CATALOGUE)
        return record
    from .records import shipped_records
    shipped = shipped_records().get(record["model"])
    if shipped is None:
        add_record(record)
    elif replace:
        add_record({**record, "replaces": shipped["sha256"]})
    return record
