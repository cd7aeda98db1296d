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
