"""Protocols: ``bench/protocols/NAME.yaml``, one per published claim, fixed before its first run.

A protocol says what is compared, on which data and model, for how long, over which seeds, how
often it is evaluated, on which testbed, what the claim is and the criterion that decides it. Its
hash (SHA-256 of the file's bytes) goes into every result; a protocol that has results cannot be
edited in place: a change is a new ``version`` (docs/benchmarks.md, "Protocols")."""
import hashlib
import os

from ..utils.errors import UserError
from . import stats

__all__ = ["Protocol", "load", "names", "protocols_dir", "REQUIRED", "CRITERION_KEYS"]

REQUIRED = ("name", "version", "claim", "bench", "compared", "data", "model", "schedule", "seeds",
            "evaluation", "testbed", "criteria")
OPTIONAL = ("params", "quick", "history", "reuses", "notes", "retired")
CRITERION_KEYS = ("id", "metric", "a", "b", "test", "margin", "value", "scale", "higher_is_better",
                  "interval", "level", "statement")


def protocols_dir(root):
    return os.path.join(root, "bench", "protocols")


def names(root):
    """The protocol names under ``root``'s bench/protocols, sorted."""
    d = protocols_dir(root)
    if not os.path.isdir(d):
        return []
    return sorted(f[:-5] for f in os.listdir(d) if f.endswith(".yaml") and not f.startswith("_"))


class Protocol:
    """A loaded, checked protocol: ``data`` (the parsed YAML), ``path``, ``text`` and ``sha256``."""

    def __init__(self, path, text, data):
        self.path, self.text, self.data = path, text, data
        self.sha256 = hashlib.sha256(text.encode("utf-8")).hexdigest()

    name = property(lambda self: self.data["name"])
    version = property(lambda self: self.data["version"])
    bench = property(lambda self: self.data["bench"])
    criteria = property(lambda self: self.data["criteria"])
    retired = property(lambda self: self.data.get("retired"))   # why it is no longer run, or None

    def arms(self):
        return list(self.data["compared"])

    def seeds(self, quick=False):
        q = self.data.get("quick") or {}
        return list(q.get("seeds", self.data["seeds"][:1])) if quick else list(self.data["seeds"])

    def params(self, quick=False):
        p = dict(self.data.get("params") or {})
        if quick:
            p.update((self.data.get("quick") or {}).get("params") or {})
        return p


def _fail(path, msg):
    raise UserError(f"protocol {path}: {msg}")


def _check_criterion(path, i, c, arms):
    where = f"criteria[{i}]"
    if not isinstance(c, dict):
        _fail(path, f"{where} must be a mapping with id, metric, a, test ...")
    unknown = sorted(set(c) - set(CRITERION_KEYS))
    if unknown:
        _fail(path, f"{where} has unknown key(s) {', '.join(unknown)}; allowed: {', '.join(CRITERION_KEYS)}")
    for k in ("id", "metric", "a", "test", "statement"):
        if k not in c:
            _fail(path, f"{where} needs '{k}'")
    for side in ("a", "b"):
        if c.get(side) is not None and c[side] not in arms:
            _fail(path, f"{where}.{side} is {c[side]!r}, not one of compared: {', '.join(map(str, arms))}")
    if c["test"] not in stats.TESTS:
        _fail(path, f"{where}.test is {c['test']!r}; use one of {', '.join(stats.TESTS)}")
    if c["test"] in ("not_worse", "within") and not isinstance(c.get("margin"), (int, float)):
        _fail(path, f"{where}: test {c['test']} needs a numeric margin")
    if c["test"] in ("at_most", "at_least") and not isinstance(c.get("value"), (int, float)):
        _fail(path, f"{where}: test {c['test']} needs a numeric value")
    if c["test"] in ("better", "not_worse", "within") and c.get("b") is None:
        _fail(path, f"{where}: test {c['test']} compares two arms; give b")
    if c.get("scale", "absolute") not in stats.SCALES:
        _fail(path, f"{where}.scale is {c['scale']!r}; use one of {', '.join(stats.SCALES)}")
    if c.get("interval", "t") not in ("t", "bootstrap"):
        _fail(path, f"{where}.interval is {c['interval']!r}; use t or bootstrap")
    level = c.get("level", 0.95)
    if not isinstance(level, float) or not 0 < level < 1:
        _fail(path, f"{where}.level is {level!r}; give a probability such as 0.95")


def check(path, data):
    """Raise a one-line ``UserError`` naming the protocol file and the key for anything wrong."""
    if not isinstance(data, dict):
        _fail(path, "must be a YAML mapping")
    missing = [k for k in REQUIRED if k not in data]
    if missing:
        _fail(path, f"missing key(s) {', '.join(missing)}")
    unknown = sorted(set(data) - set(REQUIRED) - set(OPTIONAL))
    if unknown:
        _fail(path, f"unknown key(s) {', '.join(unknown)}; allowed: {', '.join(REQUIRED + OPTIONAL)}")
    stem = os.path.basename(path)[:-5]
    if data["name"] != stem:
        _fail(path, f"name is {data['name']!r} but the file is {stem}.yaml; they must agree")
    if not isinstance(data["version"], int) or data["version"] < 1:
        _fail(path, f"version is {data['version']!r}; give a positive integer (bump it for any change)")
    if not isinstance(data["compared"], list) or not data["compared"]:
        _fail(path, "compared must be a non-empty list of arm names")
    if not isinstance(data["seeds"], list) or not data["seeds"] or not all(isinstance(s, int) for s in data["seeds"]):
        _fail(path, "seeds must be a non-empty list of integers")
    for k in ("params",):
        if data.get(k) is not None and not isinstance(data[k], dict):
            _fail(path, f"{k} must be a mapping")
    q = data.get("quick")
    if q is not None and (not isinstance(q, dict) or set(q) - {"seeds", "params"}):
        _fail(path, "quick must be a mapping with seeds and/or params")
    if not isinstance(data["criteria"], list) or not data["criteria"]:
        _fail(path, "criteria must be a non-empty list")
    ids = [c.get("id") if isinstance(c, dict) else None for c in data["criteria"]]
    if len(set(ids)) != len(ids):
        _fail(path, "criteria ids must be distinct")
    for i, c in enumerate(data["criteria"]):
        _check_criterion(path, i, c, data["compared"])
    if "retired" in data and not (isinstance(data["retired"], str) and data["retired"].strip()):
        _fail(path, "retired must say why the protocol is no longer run (a sentence)")
    r = data.get("reuses")
    if r is not None and (not isinstance(r, dict) or not all(isinstance(v, dict) and "protocol" in v for v in r.values())):
        _fail(path, "reuses must map an arm to {protocol: NAME, arm: ARM}")


def load(root, name):
    """The protocol ``name`` under ``root``; a one-line error when it is missing or malformed."""
    import yaml
    path = os.path.join(protocols_dir(root), f"{name}.yaml")
    if not os.path.isfile(path):
        known = names(root)
        raise UserError(f"no protocol {name!r} in bench/protocols; known: {', '.join(known) or 'none'}")
    with open(path, encoding="utf-8") as f:
        text = f.read()
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise UserError(f"protocol {path}: not valid YAML ({str(exc).splitlines()[0]})") from None
    rel = os.path.relpath(path, root)
    check(rel, data)
    return Protocol(rel, text, data)
