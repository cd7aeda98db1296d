"""Profiles as files: what one training step of a model costs on one device, saved on the machine
that measured it and read on the machine that plans a cluster.

A profile file is JSON (written atomically) with ``format`` = ``gluon-suite-whatif-profile`` and an
integer ``version`` (this module reads versions up to ``VERSION``). It holds:

- ``forward_s``, ``backward_s``, ``optimizer_s``: the step's compute times;
- ``tensors``: each gradient tensor's ``bytes`` and ``ready_s`` (seconds after backward starts),
  in the order backward produces them (last layer first);
- ``buckets``: the same gradients laid out as the suite's trainer lays them out (reverse order, a
  bucket closed once it reaches ``bucket_mb``), each with its ``bytes`` and ``ready_s`` (its last
  tensor's);
- ``model``, ``batch_size``, ``image_size``, ``dtype``, ``device`` (context and name), ``versions``
  (gluon-suite, MXNet, Python) and ``source``: ``measured`` (by ``gluon-suite whatif profile``) or
  ``derived`` (built from published figures; ``reference`` then says from which).

The prediction uses the tensors and fuses them itself (``--fusion-mb``), so a profile taken with one
bucket size answers for any other.
"""
import json
import os

from ..utils.errors import UserError
from ..utils.readers import data_reader
from .model import StepProfile

FORMAT = "gluon-suite-whatif-profile"
VERSION = 1
BUNDLED_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "profiles")


def trainer_buckets(sizes, ready, bucket_mb=25.0):
    """The trainer's bucket layout of gradient tensors given in backward order: a bucket is closed
    once it holds ``bucket_mb`` MB (so it may go past it by its last tensor), as
    ``distributed.buckets.layout_buckets`` does; returns ``[{'bytes', 'ready_s', 'tensors'}]``."""
    limit = float(bucket_mb) * 1e6
    out, cur, n = [], 0, 0
    for s, r in zip(sizes, ready):
        cur, n = cur + s, n + 1
        if limit == 0 or cur >= limit:
            out.append({"bytes": cur, "ready_s": r, "tensors": n})
            cur, n = 0, 0
    if n:
        out.append({"bytes": cur, "ready_s": ready[-1], "tensors": n})
    return out


def versions():
    """Versions of the stack that measured a profile."""
    import platform
    from .. import __version__
    out = {"gluon_suite": __version__, "python": platform.python_version()}
    try:
        import mxnet as mx
        out["mxnet"] = mx.__version__
    except ImportError:  # a derived profile can be written without MXNet
        out["mxnet"] = None
    return out


def profile_record(prof, *, model, batch_size, image_size, dtype, device, source="measured", bucket_mb=25.0,
                   reference=None):
    """The JSON-ready record of ``prof`` (a ``StepProfile`` whose ``ready`` times are measured from
    the start of backward) with what it was measured on."""
    ready = prof.ready if prof.ready is not None else [r - prof.forward_s for r in prof.ready_times()]
    sizes = [float(b) for b in prof.grad_bytes]
    rec = {"format": FORMAT, "version": VERSION, "source": source, "model": model,
           "batch_size": int(batch_size), "image_size": image_size, "dtype": dtype, "device": device,
           "versions": versions(), "forward_s": prof.forward_s, "backward_s": prof.backward_s,
           "optimizer_s": prof.optimizer_s, "bucket_mb": bucket_mb,
           "tensors": [{"bytes": b, "ready_s": r} for b, r in zip(sizes, ready)],
           "buckets": trainer_buckets(sizes, list(ready), bucket_mb)}
    if reference is not None:
        rec["reference"] = reference
    return rec


def save_profile(path, record):
    """Write a profile record (``profile_record``) to ``path`` atomically."""
    from ..utils import write_json
    write_json(path, record)


def _bad(path, why):
    return UserError(f"{path} is not a usable what-if profile: {why}; write one with `gluon-suite whatif profile "
                     "--model NAME --batch-size B --out FILE`")


def resolve_profile_path(name):
    """A profile file's path: ``name`` itself when it is a file, else a bundled profile of that
    name (``bundled_profiles()``)."""
    if os.path.isfile(name):
        return name
    bundled = os.path.join(BUNDLED_DIR, name if name.endswith(".json") else name + ".json")
    if os.path.isfile(bundled):
        return bundled
    names = bundled_profiles()
    raise UserError(f"no profile file {name!r} (and no bundled profile of that name); give a file written by "
                    f"`gluon-suite whatif profile`, or one of the bundled: {', '.join(names) or 'none'}")


def bundled_profiles():
    """Names of the profiles shipped with the suite (derived from published figures)."""
    if not os.path.isdir(BUNDLED_DIR):
        return []
    return sorted(f[:-5] for f in os.listdir(BUNDLED_DIR) if f.endswith(".json"))


@data_reader("what-if profile JSON", path="path",
             checks=("utf-8 JSON of the profile format", "a version this suite reads", "times finite and >= 0",
                     "tensors with bytes > 0 ready within backward"))
def load_profile(path):
    """Read a profile file (or a bundled profile's name); returns ``(StepProfile, record)``. A file
    that is not JSON, not a profile, of a newer format version, or with missing or impossible
    fields is a ``UserError`` saying which."""
    path = resolve_profile_path(path)
    try:
        with open(path, encoding="utf-8") as f:
            rec = json.load(f)
    except UnicodeDecodeError:
        raise _bad(path, "it is not UTF-8 text") from None
    except json.JSONDecodeError as exc:
        raise _bad(path, f"not JSON ({exc.msg} at line {exc.lineno})") from None
    except OSError as exc:
        raise UserError(f"cannot read profile {path}: {exc.strerror or exc}") from None
    if not isinstance(rec, dict) or rec.get("format") != FORMAT:
        raise _bad(path, f"its 'format' is not {FORMAT!r}")
    version = rec.get("version")
    if not isinstance(version, int) or isinstance(version, bool):
        raise _bad(path, "it has no integer 'version'")
    if version > VERSION:
        raise UserError(f"{path} is a what-if profile of format version {version}, newer than this gluon-suite "
                        f"reads ({VERSION}): upgrade gluon-suite, or profile again with this one")
    if version < 1:
        raise _bad(path, f"format version {version} does not exist")
    times = {}
    for key in ("forward_s", "backward_s", "optimizer_s"):
        v = rec.get(key)
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not v >= 0 or v == float("inf"):
            raise _bad(path, f"{key!r} must be a number of seconds >= 0, got {v!r}")
        times[key] = float(v)
    if times["forward_s"] + times["backward_s"] <= 0:
        raise _bad(path, "forward_s + backward_s is 0: no compute to compare communication with")
    tensors = rec.get("tensors")
    if not isinstance(tensors, list) or not tensors:
        raise _bad(path, "'tensors' must be a non-empty list of {bytes, ready_s}")
    sizes, ready = [], []
    for k, t in enumerate(tensors):
        b = t.get("bytes") if isinstance(t, dict) else None
        r = t.get("ready_s") if isinstance(t, dict) else None
        if isinstance(b, bool) or not isinstance(b, (int, float)) or not b > 0 or b == float("inf"):
            raise _bad(path, f"tensor {k}'s 'bytes' must be a number > 0, got {b!r}")
        if isinstance(r, bool) or not isinstance(r, (int, float)) or not 0 <= r <= times["backward_s"] * 1.05 + 1e-6:
            raise _bad(path, f"tensor {k}'s 'ready_s' must be within backward (0 to {times['backward_s']:g} s), "
                       f"got {r!r}")
        sizes.append(float(b))
        ready.append(min(float(r), times["backward_s"]))
    prof = StepProfile(times["forward_s"], times["backward_s"], sizes, times["optimizer_s"], ready=ready)
    return prof, rec
