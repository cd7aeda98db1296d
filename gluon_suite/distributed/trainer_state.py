"""The ``DistributedTrainer``'s state as data: one walker over optimizer states, one file format.

``DistributedTrainer.state_dict()`` returns ``{"meta": JSON-ready dict, "arrays": {key: NDArray}}``:

- ``opt.<i>[.<j>...]``: the optimizer state of parameter ``i`` (the trainer's sorted order) at any
  nesting depth (``multi_precision`` nests the optimizer's own state beside the float32 master
  copy; Adam keeps two moments); ``meta["opt_layout"][str(i)]`` says how the keys nest;
- ``algo.<kind>.b<k>``: the algorithm's per-worker state (residuals, accumulators) per bucket,
  with the bucket layout in ``meta["buckets"]``;
- ``meta``: update counts, step count, learning rate and the schedule's own state, the
  algorithm's configuration, and each parameter's position in the network and shape (so that
  another instance of the network, with other block names, reads it).

The checkpoint files (``save_states``/``load_states``) and the elastic state (``GluonState``)
both go through it. A file is that dict in one MXNet NDArray file, the meta as JSON bytes under
``__meta_json__`` (no pickle), written atomically. Format 1 (algorithm state per parameter,
``algo.<kind>.<i>``, before buckets) is still read.
"""
import json

import mxnet as mx
import numpy as np

from ..utils.fileio import atomic_path
from .buckets import explode

META_KEY = "__meta_json__"
# format 1: algorithm state per parameter ('algo.err.<index>'); format 2: per bucket
# ('algo.err.b<k>', the layout in meta['buckets']). Both are read.
FORMAT = "gluon_suite.trainer_states/2"
READABLE = ("gluon_suite.trainer_states/1", FORMAT)


def flatten_state(state, key, out):
    """Put every NDArray of one parameter's (nested) optimizer state into ``out`` under
    ``key.<j>...``; return the nesting as JSON (a key, None, or a list of those)."""
    if state is None:
        return None
    if isinstance(state, mx.nd.NDArray):
        out[key] = state
        return key
    if isinstance(state, (tuple, list)):
        return [flatten_state(s, f"{key}.{j}", out) for j, s in enumerate(state)]
    raise TypeError(f"cannot save optimizer state of type {type(state).__name__}")


def unflatten_state(spec, arrays, ctx):
    """The inverse of ``flatten_state``: fresh copies on ``ctx`` (never the given arrays, so that
    a snapshot loaded twice stays a snapshot)."""
    if spec is None:
        return None
    if isinstance(spec, str):
        return arrays[spec].copyto(ctx)
    return tuple(unflatten_state(s, arrays, ctx) for s in spec)


def check_format(meta, source):
    """Raise ValueError (one line) for a state of a format this version cannot read."""
    if meta.get("format") not in READABLE:
        raise ValueError(f"{source} holds trainer states of format {meta.get('format')!r}; this "
                         f"version reads {', '.join(READABLE)}: resume with the version that wrote it")


def per_parameter(meta, arrays, source):
    """Format 2 keeps algorithm state per bucket: split it into per-parameter arrays (the keys of
    format 1, in the writer's numbering), so that any bucket layout can read it."""
    flat, out = {}, {}
    for key, arr in arrays.items():
        head, _, tail = key.rpartition(".")
        if key.startswith("algo.") and tail[:1] == "b" and tail[1:].isdigit():
            flat.setdefault(head, {})[int(tail[1:])] = arr
        else:
            out[key] = arr
    for head, by_bucket in flat.items():
        try:
            parts = explode(by_bucket, meta["buckets"], meta["param_shapes"])
        except (KeyError, IndexError, TypeError, mx.base.MXNetError):
            raise ValueError(f"{source} holds bucketed states that do not match their recorded "
                             "layout (damaged file?)") from None
        for i, arr in parts.items():
            out[f"{head}.{i}"] = arr
    return out


def to_network_order(meta, arrays, source, positions, shapes):
    """States index parameters by their position in the reading trainer (sorted names). A state
    of another instance of the network (other names, maybe another sorted order) is renumbered
    through the network ``positions`` it records; states without them are taken as they are.
    ``positions``/``shapes``: the reader's network position and shape of each parameter."""
    if "network_position" not in meta:
        return meta, arrays
    here = {q: i for i, q in enumerate(positions)}
    try:
        order = [here[q] for q in meta["network_position"]]  # saved index -> index here
        same = all(meta["param_shapes"][j] in (None, shapes[i]) for j, i in enumerate(order))
    except (KeyError, IndexError, TypeError):
        same = False
    if not same or len(order) != len(shapes):
        raise ValueError(f"{source} holds trainer states of another network (parameter shapes "
                         "differ); resume with the network that wrote it")

    def renumber(key):
        head, _, tail = key.rpartition(".")
        return f"{head}.{order[int(tail)]}" if tail.isdigit() and int(tail) < len(order) else key
    meta = dict(meta, opt_layout={str(order[int(k)]): v for k, v in meta.get("opt_layout", {}).items()},
                index_update_count={str(order[int(k)]): v
                                    for k, v in meta["index_update_count"].items()})
    arrays = {(f"algo.{renumber(k[5:])}" if k.startswith("algo.") else k): v for k, v in arrays.items()}
    return meta, arrays


def write_file(fname, state):
    """Write a ``state_dict()`` to ``fname`` atomically (MXNet NDArray file, meta as JSON bytes)."""
    arrays = dict(state["arrays"])
    arrays[META_KEY] = mx.nd.array(np.frombuffer(json.dumps(state["meta"]).encode(), dtype=np.uint8),
                                   dtype="uint8")
    with atomic_path(fname) as tmp:
        mx.nd.save(tmp, arrays)


def read_file(fname):
    """The ``state_dict()`` that ``write_file`` wrote (or a format-1 file); ValueError, one line,
    for anything else."""
    try:
        arrays = mx.nd.load(fname)
    except mx.base.MXNetError as exc:
        raise ValueError(f"{fname} is not a trainer state file written by save_states "
                         f"({' '.join(str(exc).split())[:120]})") from None
    if not isinstance(arrays, dict) or META_KEY not in arrays:
        raise ValueError(f"{fname} is not a trainer state file written by save_states")
    meta = json.loads(arrays.pop(META_KEY).asnumpy().tobytes().decode())
    check_format(meta, fname)
    return {"meta": meta, "arrays": arrays}
