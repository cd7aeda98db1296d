"""What a checkpoint's model card says about using it: the input it was trained on and the metric it
reached, so that evaluation takes the card's input size and data set instead of a script's default.

A card (``model_zoo/NAME.json`` for a shipped checkpoint; for a published one, the card written
beside it in its store, or the path recorded on this machine) holds ``hyperparameters`` with the
training ``image_size`` and ``dataset`` (which fixes the normalisation and the classes), and
``metric``. ``pretrained_config`` turns it into the small dict that ``get_model(...,
pretrained=True)`` attaches as ``net.pretrained_cfg``.
"""
import os
import warnings

from .card_schema import load_card
from .records import SHIPPED, LOCAL, local_records, shipped_records

_SUITE_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def card_file(record, source=None):
    """The path of ``record``'s card, or None when the record names none that exists: a card path
    relative to the suite (shipped records), the absolute path recorded at publish time, or the
    card beside the checkpoint in a store folder ``source``."""
    candidates = []
    if record.get("card_path"):
        candidates.append(record["card_path"])
    card = record.get("card")
    if card:
        if os.path.isabs(card):
            candidates.append(card)
        if source and source not in (SHIPPED, LOCAL):
            folder = source if os.path.isdir(source) else os.path.dirname(source)
            candidates.append(os.path.join(folder, os.path.basename(card)))
        candidates.append(os.path.join(_SUITE_ROOT, card))
    return next((c for c in candidates if os.path.isfile(c)), None)


def read_card_of(record, source=None):
    """``record``'s card as a dict, checked field by field (``card_schema``): ``{}`` when the
    record names none (a checkpoint without a card still loads), a one-line ZooError naming the
    file and the field when the card it names is malformed."""
    path = card_file(record, source)
    if not path:
        return {}
    return load_card(path)


def pretrained_config(record, source=None):
    """``{"image_size", "dataset", "classes", "metric", "card"}`` from ``record``'s card (values it
    does not record are None)."""
    card = read_card_of(record, source)
    hp = card.get("hyperparameters") or {}
    metric = card.get("metric") if isinstance(card.get("metric"), dict) else {}
    size = hp.get("image_size")
    return {"image_size": int(size) if isinstance(size, (int, float)) and size else None,
            "dataset": hp.get("dataset") if isinstance(hp.get("dataset"), str) else None,
            "classes": hp.get("classes") if isinstance(hp.get("classes"), int) else None,
            "metric": metric or None, "card": card_file(record, source)}


_WARNED = set()


def warn_ignored_local(model):
    """Warn once per process when this machine holds a record of the shipped ``model`` that was not
    published with ``--replace``: the shipped checkpoint is used, and the warning says how to use
    the local one instead."""
    shipped, mine = shipped_records().get(model), local_records().get(model)
    if not shipped or not mine or mine.get("replaces") or model in _WARNED:
        return
    if mine.get("sha256") == shipped.get("sha256"):
        return
    _WARNED.add(model)
    warnings.warn(f"'{model}': using the shipped checkpoint ({shipped['sha256'][:8]}); this machine's "
                  f"record of it ({mine.get('sha256', mine.get('sha1', '?'))[:8]}) was not published with "
                  "--replace; use source='local' to load it, or `gluon-suite zoo remove "
                  f"{model}` to drop it", UserWarning, stacklevel=3)


def settle_with_card(model, card_cfg, given, warn):
    """Settle evaluation settings against a checkpoint's card: ``given`` maps a setting
    (``image_size``, ``dataset``) to the flag's value or None; a None takes the card's value, and an
    explicit value that contradicts the card is kept but ``warn`` receives one line naming the card's
    value and the metric the card reports at it. Returns the settled ``{setting: value}``."""
    out = {}
    metric = card_cfg.get("metric") or {}
    reached = ""
    if isinstance(metric.get("value"), (int, float)):
        reached = f": {metric.get('name', 'metric')} {metric['value']:.4f}"
    for key, value in given.items():
        recorded = card_cfg.get(key)
        if value is None:
            out[key] = recorded
            continue
        out[key] = value
        if recorded is not None and value != recorded:
            flag = "--" + key.replace("_", "-")
            warn(f"{flag} {value} contradicts the card of '{model}' (trained and measured with {recorded}{reached}); "
                 f"evaluating with {value} as asked: drop {flag} to use the card's")
    return out
