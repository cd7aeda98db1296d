"""Checks of checkpoint files and run folders before they are loaded.

A checkpoint given by a user (``--resume``, ``--params``, ``--init``) may be missing, truncated,
some other file (random bytes, JSON) or the parameters of another model. MXNet reports each of
these with a C++ stack trace; here each becomes one line naming the file, what it is and what to
give instead. JSON files of a run (``state.json``, ``config.json``) are checked for their keys.
"""
import json
import os

from .errors import UserError


def read_json_file(path, what, keys=(), fix="give the file an earlier run wrote"):
    """The JSON object in ``path`` (``what`` names it in messages, e.g. ``--resume folder's
    state.json``); it must hold every key in ``keys``."""
    if os.path.isdir(path):
        raise UserError(f"{what} {path} is a folder, not a JSON file; {fix}")
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
    except FileNotFoundError:
        raise UserError(f"{what} {path} does not exist; {fix}") from None
    except UnicodeDecodeError:
        raise UserError(f"{what} {path} is not text (not UTF-8); {fix}") from None
    except json.JSONDecodeError as exc:
        raise UserError(f"{what} {path} is not valid JSON (line {exc.lineno}, column {exc.colno}: "
                        f"{exc.msg}); {fix}") from None
    if not isinstance(data, dict):
        raise UserError(f"{what} {path} holds a JSON {type(data).__name__}, not an object; {fix}")
    missing = [k for k in keys if k not in data]
    if missing:
        raise UserError(f"{what} {path} lacks the key(s) {', '.join(missing)}; it is damaged or from "
                        f"another program: {fix}")
    return data


def check_params_file(path, what, fix="give a file written by net.save_parameters", error=UserError):
    """``{name: shape}`` of the NDArray parameter file ``path``; an ``error`` (UserError) when it is
    missing, a folder, truncated, not an NDArray file or has no named arrays."""
    import mxnet as mx
    if os.path.isdir(path):
        raise error(f"{what} {path} is a folder, not a parameter file; {fix}")
    if not os.path.exists(path):
        raise error(f"{what} {path} does not exist; {fix}")
    try:
        arrays = mx.nd.load(path)
    except mx.base.MXNetError:
        size = os.path.getsize(path)
        raise error(f"{what} {path} is truncated or not an MXNet parameter file ({size} bytes); "
                    f"{fix}") from None
    if not isinstance(arrays, dict) or not arrays:
        raise error(f"{what} {path} holds no named parameters; {fix}")
    return {k.split(":", 1)[-1]: tuple(v.shape) for k, v in arrays.items()}


def load_parameters(net, path, what, fix=None, **kwargs):
    """``net.load_parameters(path, **kwargs)``, with a truncated, foreign or other-architecture
    file reported as one UserError naming ``what`` and the file."""
    import mxnet as mx
    fix = fix or f"give a checkpoint of this model ({type(net).__name__})"
    check_params_file(path, what, fix)
    try:
        net.load_parameters(path, **kwargs)
    except (AssertionError, mx.base.MXNetError, ValueError, KeyError) as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        if first.startswith("Traceback") or len(first) > 160:
            first = "the parameter names or shapes do not match"
        raise UserError(f"{what} {path} holds the parameters of another model ({first}); {fix}") from None


def check_run_folder(folder, what, state_keys, files=()):
    """Check a run folder before resuming from it: ``state.json`` with ``state_keys`` and the
    parameter files ``files`` (names inside ``folder``; ``.params`` files are opened). Returns the
    state."""
    fix = "resume another run folder, or start afresh with --resume none"
    state = read_json_file(os.path.join(folder, "state.json"), f"{what} checkpoint", state_keys, fix)
    for name in files:
        path = os.path.join(folder, name)
        if name.endswith(".params"):
            check_params_file(path, f"{what} checkpoint", fix)
        elif not os.path.isfile(path):
            raise UserError(f"{what} checkpoint {path} is missing; {fix}")
    return state


def check_resume(resume, out, state_keys, files, model=None, what="--resume"):
    """Check the checkpoint a run will resume from, before any work: ``resume`` is ``none``,
    ``auto`` (``out`` when it holds ``state.json``) or a run folder. Checks ``state.json``'s keys,
    the ``files`` and, when the folder's ``config.json`` names a model, that it is ``model``.
    Returns the folder, or None for a fresh start."""
    if resume in (None, "none"):
        return None
    folder = resume
    if resume == "auto":
        if not os.path.exists(os.path.join(out, "state.json")):
            return None
        folder, what = out, "--resume auto: --out"
    check_run_folder(folder, what, state_keys, files)
    saved = os.path.join(folder, "config.json")
    if model and os.path.isfile(saved):
        cfg = read_json_file(saved, f"{what} run configuration", (), "resume a run of this model")
        if cfg.get("model") not in (None, model):
            raise UserError(f"{what} {folder} is a run of model '{cfg['model']}', not '{model}'; resume it "
                            f"with --model {cfg['model']} or start afresh in another --out")
    return folder
