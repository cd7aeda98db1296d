"""The phases of BERT pretraining: each phase a mapping of ``PHASE_KEYS`` (sequence length,
per-worker or global batch, accumulation, steps, learning rate, warm-up and plateau fractions,
optional shard folders), checked where it enters (a flag, a YAML file, a mapping) and resolved to
the per-worker batch the loop uses (``phase_batches``)."""
import argparse
import glob
import os

from ..utils import UserError
from ..utils.validate import fraction, positive_float, positive_int, suggest

_INT = {"seq_len", "batch_size", "total_batch_size", "accumulate", "steps", "max_predictions"}
_FRACTION = {"warmup", "constant"}
_PATHS = {"shards", "eval_shards"}   # a folder of .npz shards or a glob (write_shards)
PHASE_KEYS = _INT | _FRACTION | _PATHS | {"lr"}
_REQUIRED = ("seq_len", "steps", "lr")
_EXAMPLE = "e.g. seq_len=128,batch_size=16,steps=100,lr=0.005"


def shard_spec(value):
    """A phase's ``shards``/``eval_shards``: a folder holding ``.npz`` shards, or a glob matching some."""
    text = str(value)
    found = glob.glob(os.path.join(text, "*.npz")) if os.path.isdir(text) else glob.glob(text)
    if not found:
        raise argparse.ArgumentTypeError(f"{text!r} names no .npz shards (a folder of them, or a glob)")
    return text


def check_phase(items, where):
    """Check and convert one phase (a mapping of key -> value; ``where`` names it in messages):
    known keys, whole numbers >= 1 for sizes and steps, lr > 0, warmup/constant fractions."""
    if not isinstance(items, dict):
        raise UserError(f"{where} must be a mapping of key: value ({_EXAMPLE}), got {items!r}")
    out = {}
    for k, v in items.items():
        if k not in PHASE_KEYS:
            raise UserError(f"{where}: unknown key {k!r}{suggest(k, sorted(PHASE_KEYS))}; valid keys: "
                            f"{', '.join(sorted(PHASE_KEYS))}")
        check = shard_spec if k in _PATHS else positive_int if k in _INT else fraction if k in _FRACTION \
            else positive_float
        try:
            out[k] = check(v)
        except argparse.ArgumentTypeError as exc:
            raise UserError(f"{where}: {k} {exc}; fix the value ({_EXAMPLE})") from None
    missing = [k for k in _REQUIRED if k not in out]
    if "batch_size" not in out and "total_batch_size" not in out:
        missing.insert(1, "batch_size (or total_batch_size)")
    if missing:
        raise UserError(f"{where} lacks {', '.join(missing)}; every phase needs seq_len, batch_size (per worker) "
                        f"or total_batch_size (global), steps and lr ({_EXAMPLE})")
    if "batch_size" in out and "total_batch_size" in out:
        raise UserError(f"{where} gives both batch_size (per worker) and total_batch_size (global = batch_size x "
                        "workers x accumulate); give one of them")
    if out.get("warmup", 0.1) + out.get("constant", 0.0) > 1:
        raise UserError(f"{where}: warmup + constant are fractions of the steps and must sum to <= 1")
    return out


def phase_list(value):
    """The ``phases`` of a configuration: a non-empty list of phase mappings (``check_phase``)."""
    if not isinstance(value, (list, tuple)) or not value:
        raise argparse.ArgumentTypeError(f"must be a list of phases ({_EXAMPLE} as mappings), got {value!r}")
    try:
        return [check_phase(dict(ph) if isinstance(ph, dict) else ph, f"phase {i}")
                for i, ph in enumerate(value, start=1)]
    except UserError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


phase_list.takes_lists = True


def phase_batches(phases, workers):
    """Each phase's batch as the per-worker batch the loop uses; the one place where a phase's two
    batch keys meet. ``batch_size`` is per worker (split over the worker's devices);
    ``total_batch_size`` is GluonNLP's ``--total_batch_size``, the global batch of one optimizer
    step: ``total_batch_size = batch_size x workers x accumulate``. A phase gives one of the two; a
    total must be a multiple of workers x accumulate. ``workers`` is the job's worker count (under
    Horovod Elastic: ``--ref-workers``, else the starting count). Returns the phases with
    ``batch_size`` set and ``total_batch_size`` dropped; the phase banner prints the global batch."""
    out = []
    for i, ph in enumerate(phases, start=1):
        ph = dict(ph)
        if "total_batch_size" in ph:
            total = int(ph.pop("total_batch_size"))
            if "batch_size" in ph:
                raise UserError(f"phase {i} gives both batch_size (per worker) and total_batch_size (global); "
                                "give one of them")
            per_step = workers * int(ph.get("accumulate", 1))
            if total < per_step or total % per_step:
                low, high = max(per_step, total // per_step * per_step), (total // per_step + 1) * per_step
                near = f"{low} or {high}" if low != high and low < total else f"{high}"
                raise UserError(f"phase {i}: total_batch_size {total} is not a multiple of {workers} worker(s) x "
                                f"{int(ph.get('accumulate', 1))} accumulation = {per_step}; use {near}")
            ph["batch_size"] = total // per_step
        out.append(ph)
    return out


def check_phases(phases):
    """Validate the phase list; returns it with defaults filled in."""
    if not phases:
        raise UserError("at least one pretraining phase is needed")
    out = []
    for i, ph in enumerate(phases, start=1):
        bad = set(ph) - PHASE_KEYS
        if bad:
            raise UserError(f"phase {i}: unknown key(s) {', '.join(sorted(bad))}; valid: {', '.join(sorted(PHASE_KEYS))}")
        ph = {"accumulate": 1, "warmup": 0.1, "constant": 0.0, **ph}
        for k in ("seq_len", "batch_size", "accumulate", "steps"):
            if int(ph.get(k, 0)) < 1:
                raise UserError(f"phase {i}: {k} must be >= 1, got {ph.get(k)}")
        if not 0 <= ph["warmup"] + ph["constant"] <= 1:
            raise UserError(f"phase {i}: warmup + constant are fractions of the steps and must sum to <= 1")
        out.append(ph)
    return out
