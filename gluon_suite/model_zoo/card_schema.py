"""The fields of a model card and the type of each: a card is checked against them wherever it is
read (``gluon-suite zoo publish``, the zoo table, a pretrained checkpoint's evaluation settings), and
a card with a missing, misspelt or wrongly typed field is refused with one line naming the card
file, the field and what it must be.

A card is a JSON object. Required: ``name``, ``architecture``, ``command`` (non-empty text),
``hyperparameters`` and ``metric`` (objects), ``training_log`` (text). Optional: ``tolerance``
(a number >= 0), ``workers`` (a whole number >= 1), ``checkpoint`` (written by publishing: file
name, sha256, size), ``evaluate``, ``input``, ``vocabulary``, ``rerun`` (``"evaluate"``) and
``rerun_reason`` (text). Inside ``metric``, each of ``name`` (text), ``value`` (a finite number),
``dataset`` (text) and ``higher_is_better`` (true/false) is checked when present; inside
``hyperparameters``, the settings evaluation takes from a card: ``image_size`` (a whole number
>= 1), ``dataset`` (text) and ``classes`` (a whole number >= 1 or a list of class names), each
also null. Other hyperparameters are the run's own and take any JSON value.
"""
import json
import math
import os
import re

from .records import ZooError

REQUIRED = ("name", "architecture", "command", "hyperparameters", "metric", "training_log")


def _text(v):
    return isinstance(v, str) and v.strip() != ""


def _number(v):
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def _whole(low):
    return lambda v: isinstance(v, int) and not isinstance(v, bool) and v >= low


def _or_null(check):
    return lambda v: v is None or check(v)


_SHA256 = re.compile(r"^[0-9a-f]{64}$")

# field: (check, what it must be)
METRIC = {
    "name": (_text, "non-empty text"),
    "value": (_number, "a number"),
    "dataset": (_text, "non-empty text"),
    "higher_is_better": (lambda v: isinstance(v, bool), "true or false"),
}
CHECKPOINT = {
    "file_name": (_text, "non-empty text"),
    "sha256": (lambda v: isinstance(v, str) and bool(_SHA256.match(v)), "64 lower-case hex digits"),
    "size": (_whole(0), "a whole number >= 0"),
}
HYPERPARAMETERS = {
    "image_size": (_or_null(_whole(1)), "a whole number >= 1 or null"),
    "dataset": (_or_null(_text), "non-empty text or null"),
    "classes": (_or_null(lambda v: _whole(1)(v) or (isinstance(v, list) and all(isinstance(c, str) for c in v))),
                "a whole number >= 1, a list of class names, or null"),
}
FIELDS = {
    "name": (_text, "non-empty text (the registered model name)"),
    "architecture": (_text, "non-empty text"),
    "command": (_text, "non-empty text (the exact command that trained it)"),
    "hyperparameters": (lambda v: isinstance(v, dict), "an object"),
    "metric": (lambda v: isinstance(v, dict), "an object with name, value and dataset"),
    "training_log": (lambda v: isinstance(v, str), "text (the path of the training log)"),
    "tolerance": (lambda v: _number(v) and v >= 0, "a number >= 0"),
    "workers": (_whole(1), "a whole number >= 1"),
    "checkpoint": (lambda v: isinstance(v, dict), "an object with file_name, sha256 and size"),
    "evaluate": (_text, "non-empty text (a command)"),
    "input": (_text, "non-empty text"),
    "vocabulary": (_text, "non-empty text"),
    "rerun": (lambda v: v == "evaluate", '"evaluate"'),
    "rerun_reason": (_text, "non-empty text"),
    "note": (_text, "non-empty text (what the metric means for this model)"),
    "test_metric": (lambda v: isinstance(v, dict), "an object with name, value and dataset (the test split's)"),
}
_FIX = "fix the field in the file (the fields are listed in docs/model_zoo.md, \"Model cards\")"


def _shown(value):
    text = json.dumps(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _check_fields(path, card, fields, prefix="", known_only=True):
    for key, value in card.items():
        field = prefix + key
        if key not in fields:
            if not known_only:
                continue
            from ..utils.validate import suggest
            names = [prefix + f for f in fields]
            raise ZooError(f"model card {path}: {field} is not a card field{suggest(field, names)}; rename or "
                           f"remove it (the fields: {', '.join(names)})")
        check, what = fields[key]
        if not check(value):
            raise ZooError(f"model card {path}: {field} must be {what}, not {_shown(value)}; {_FIX}")


def check_card(card, path):
    """Raise ZooError (one line naming ``path`` and the field) unless ``card`` has every required
    field and each field it has is of its type; returns ``card``."""
    fix = f"write a JSON object with the fields {', '.join(REQUIRED)} (see docs/model_zoo.md)"
    if not isinstance(card, dict):
        raise ZooError(f"model card {path} holds a JSON {type(card).__name__}, not an object; {fix}")
    missing = [k for k in REQUIRED if k not in card]
    if missing:
        raise ZooError(f"model card {path} lacks {', '.join(missing)}; every card needs {', '.join(REQUIRED)}")
    _check_fields(path, card, FIELDS)
    _check_fields(path, card["metric"], METRIC, "metric.")
    if "test_metric" in card:
        lacking = [k for k in ("name", "value", "dataset") if k not in card["test_metric"]]
        if lacking:
            raise ZooError(f"model card {path}: test_metric lacks {', '.join(lacking)}; {_FIX}")
        _check_fields(path, card["test_metric"], METRIC, "test_metric.")
    _check_fields(path, card["hyperparameters"], HYPERPARAMETERS, "hyperparameters.", known_only=False)
    if "checkpoint" in card:
        lacking = [k for k in CHECKPOINT if k not in card["checkpoint"]]
        if lacking:
            raise ZooError(f"model card {path}: checkpoint lacks {', '.join(lacking)}; publishing writes it, so "
                           "remove the checkpoint field and publish again")
        _check_fields(path, card["checkpoint"], CHECKPOINT, "checkpoint.")
    return card


def load_card(path):
    """The model card at ``path``, read and checked (``check_card``); every problem is a one-line
    ZooError naming the file."""
    fix = f"write a JSON object with the fields {', '.join(REQUIRED)} (see docs/model_zoo.md)"
    if os.path.isdir(path):
        raise ZooError(f"model card {path} is a folder, not a JSON file; {fix}")
    try:
        with open(path, encoding="utf-8") as f:
            card = json.load(f)
    except FileNotFoundError:
        raise ZooError(f"model card {path} does not exist; {fix}") from None
    except UnicodeDecodeError:
        raise ZooError(f"model card {path} is not UTF-8 text; {fix}") from None
    except json.JSONDecodeError as exc:
        raise ZooError(f"model card {path} is not valid JSON (line {exc.lineno}, column {exc.colno}: "
                       f"{exc.msg}); fix the file: {fix}") from None
    except OSError as exc:
        raise ZooError(f"model card {path} cannot be read ({exc.strerror or type(exc).__name__}); {fix}") from None
    return check_card(card, path)
