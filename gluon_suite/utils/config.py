"""YAML configs checked against a schema before they are merged with the flags.

A script's config keys are its flags (``--batch-size`` is ``batch_size``), so the schema is taken
from the script's argument parser: each key gets the flag's ``type`` (``positive_int``, ``fraction``,
...), choices, on/off or list form; ``extra`` adds keys that have no flag (a validator per key).
The first bad key fails with one line naming the file, the key, the problem and the fix.
"""
import argparse
import os

from .errors import UserError
from .validate import suggest

_SKIP = {"help", "version", "config"}


def parser_schema(parser):
    """``{key: action}`` for the flags of ``parser`` that a config may set."""
    return {a.dest: a for a in parser._actions
            if a.option_strings and a.dest not in _SKIP and a.dest != argparse.SUPPRESS}


def _convert(action, value):
    """Check and convert one config ``value`` the way ``action``'s flag would; raises
    ``argparse.ArgumentTypeError`` with the reason."""
    if value is None:
        return None
    if isinstance(action, (argparse._StoreTrueAction, argparse._StoreFalseAction)):
        if not isinstance(value, bool):
            raise argparse.ArgumentTypeError(f"must be true or false, got {value!r}")
        return value
    many = action.nargs in ("*", "+") or isinstance(action.nargs, int) or isinstance(
        action, argparse._AppendAction)
    if many:
        if not isinstance(value, list):
            raise argparse.ArgumentTypeError(f"must be a list (e.g. [1, 2]), got {value!r}")
        return [_one(action, v) for v in value]
    return _one(action, value)


def _one(action, value):
    if isinstance(value, (dict, list)):
        raise argparse.ArgumentTypeError(f"must be a single value, got {value!r}")
    if action.type is None:
        if not isinstance(value, str):
            raise argparse.ArgumentTypeError(f"must be text, got {value!r}")
        out = value
    else:
        if isinstance(value, bool) and action.type in (int, float):
            raise argparse.ArgumentTypeError(f"must be a number, got {value!r}")
        out = action.type(value if isinstance(value, (bool, str)) else str(value))
    if action.choices is not None and out not in action.choices:
        valid = [str(c) for c in action.choices]
        raise argparse.ArgumentTypeError(f"unknown value {out!r}{suggest(out, valid)}; use one of "
                                         f"{', '.join(valid)}")
    return out


def check_config(data, parser, source, extra=None):
    """Validate the mapping ``data`` read from ``source`` against ``parser``'s flags (and the
    ``extra`` ``{key: validator}``); returns it with ``-`` in keys turned into ``_`` and values
    converted. Raises UserError naming the file and the key."""
    if not isinstance(data, dict):
        kind = type(data).__name__
        raise UserError(f"config file {source} holds a {kind}, not a mapping; write one 'key: value' "
                        "line per option (keys are the flags without --, e.g. batch_size: 32)")
    schema, extra = parser_schema(parser), dict(extra or {})
    out = {}
    for raw_key, value in data.items():
        key = str(raw_key).replace("-", "_")
        try:
            if key in extra:
                out[key] = extra[key](value)
            elif key in schema:
                out[key] = _convert(schema[key], value)
            else:
                valid = sorted(set(schema) | set(extra))
                raise UserError(f"config file {source}: unknown key '{raw_key}'{suggest(key, valid)}; "
                                f"valid keys are the flags without -- (e.g. {', '.join(valid[:6])}, ...)")
        except argparse.ArgumentTypeError as exc:
            raise UserError(f"config file {source}: {key}: {exc}; fix the value in the file") from None
        except UserError:
            raise
        except (TypeError, ValueError):
            raise UserError(f"config file {source}: {key}: {value!r} is not a valid value; give a value "
                            f"as the flag --{key.replace('_', '-')} takes it") from None
    return out


def load_yaml_config(path, parser, extra=None):
    """Read the YAML file ``path`` (``--config``) and check it with ``check_config``."""
    import yaml
    if os.path.isdir(path):
        raise UserError(f"config file {path} is a folder; give --config the path of a YAML file")
    try:
        with open(path, encoding="utf-8") as f:
            data = yaml.safe_load(f)
    except FileNotFoundError:
        raise UserError(f"config file {path} does not exist; give --config an existing YAML file") from None
    except UnicodeDecodeError as exc:
        raise UserError(f"config file {path} is not UTF-8 text (byte {exc.start}); give a YAML file") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f":{mark.line + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or "cannot be parsed"
        raise UserError(f"config file {path}{where} is not valid YAML ({problem}); fix the file "
                        "(one 'key: value' per line)") from None
    if data is None:
        return {}
    return check_config(data, parser, path, extra)


_COMPRESSION_KEYS = ("compressor", "ratio", "compressor2", "ratio2")


def _compression(cfg):
    """``grbs (ratio 32)``-style text of the compression in ``cfg``."""
    parts = []
    for c, r in (("compressor", "ratio"), ("compressor2", "ratio2")):
        if cfg.get(c) and str(cfg[c]).lower() != "none":
            parts.append(f"{cfg[c]}" + (f" (ratio {cfg[r]:g})" if cfg.get(r) is not None else ""))
    return " + ".join(parts)


def settle_compression(cfg, flags, workers, elastic=False, source="the config"):
    """The algorithm/compressor pair a run uses, said out loud: returns ``(cfg, notes)``, the
    config to run and the lines to log.

    ``cfg`` is the merged config (defaults, then the ``--config`` file, then the flags) and
    ``flags`` the keys the command line set. Two combinations nobody named are resolved:

    - ``--algorithm`` changed the file's algorithm while its compressor came from the file: the
      compressor belonged to the file's algorithm. For ``sync`` it is dropped (synchronous SGD
      sends dense gradients unless ``--compressor`` says otherwise), for ``auto`` too (auto
      chooses the compression); for another algorithm it is kept, and a note says what the pair
      resolved to.
    - one worker (not elastic): there is nothing to send, so no compression is applied (a lossy
      compressor would only throw gradient away) and a note says so.
    """
    cfg, notes, keys = dict(cfg), [], set(cfg)   # a recipe without a second compressor gets none
    named = set(flags)
    auto_only = [k for k in ("target_sf", "auto_candidates", "auto_ratios", "auto_periods")
                 if cfg.get(k) not in (None, [])]
    if auto_only and str(cfg.get("algorithm")).lower() != "auto":
        given = " and ".join("--" + k.replace("_", "-") for k in auto_only)
        raise UserError(f"{given} {'apply' if len(auto_only) > 1 else 'applies'} to --algorithm auto only, and the "
                        f"algorithm is {cfg.get('algorithm')}; remove {given} or use --algorithm auto")
    lossy = _compression(cfg)
    if "algorithm" in named and lossy and not named & set(_COMPRESSION_KEYS):
        if str(cfg.get("algorithm")).lower() == "auto":
            period = "" if "period" in named or cfg.get("period") is None else f" and period {cfg['period']}"
            notes.append(f"--algorithm auto: the compressor {lossy}{period} from {source} belonged to its algorithm "
                         f"and {'are' if period else 'is'} dropped; auto chooses the compression itself (--auto-ratios or --ratio, and "
                         "--period, pin CSER's)")
            cfg.update(compressor="none", ratio=None, compressor2=None, ratio2=None,
                       **({"period": None} if period else {}))
        elif str(cfg.get("algorithm")).lower() == "sync":
            notes.append(f"--algorithm sync: the compressor {lossy} from {source} belonged to its algorithm "
                         "and is dropped, so synchronous SGD sends dense gradients (give --compressor to "
                         "compress them)")
            cfg.update(compressor="none", ratio=None, compressor2=None, ratio2=None)
        else:
            notes.append(f"resolved to algorithm {cfg['algorithm']} (from --algorithm) with compressor {lossy} "
                         f"(from {source}); give --compressor none to send dense updates")
    if cfg.get("auto_ratios") and cfg.get("ratio") is not None:
        raise UserError("--ratio and --auto-ratios both pin auto's CSER ratios; give one of them (--ratio R for one, "
                        "--auto-ratios R ... for several)")
    lossy = _compression(cfg)
    if workers == 1 and not elastic and lossy:
        notes.append(f"one worker: nothing is communicated, so no compression is applied (compressor {lossy} "
                     "ignored)")
        cfg.update(compressor="none", ratio=None, compressor2=None, ratio2=None)
    return {k: v for k, v in cfg.items() if k in keys or k not in _COMPRESSION_KEYS}, notes
