"""Validation where values enter: argparse types and a one-line argument parser (environment
variables: ``gluon_suite.utils.env``).

Every check here fails with one line that names the input, what is wrong with it and what to do,
before any work starts (no data loaded, no folder created). Flag types raise
``argparse.ArgumentTypeError`` (argparse adds the flag's name and exits 2); the same functions check
the values of a YAML config (``gluon_suite.utils.config``), so a flag and its config key accept
exactly the same values.

    p = ArgumentParser()
    p.add_argument("--epochs", type=positive_int)
    p.add_argument("--out", type=output_dir)
"""
import argparse
import difflib
import os
import re


__all__ = ["ArgumentParser", "int_at_least", "positive_int", "nonneg_int", "float_range",
           "positive_float", "nonneg_float", "fraction", "ratio", "choice_of", "existing_file",
           "existing_dir", "existing_path", "utf8_file", "url", "output_dir", "output_file",
           "run_folder", "suggest",
           "retype"]


def suggest(name, names, quote=True):
    """``"; did you mean 'x'?"`` for the names close to ``name`` (difflib), or ``""``."""
    close = difflib.get_close_matches(str(name), [str(n) for n in names], n=3, cutoff=0.6)
    if not close:
        return ""
    shown = ", ".join(f"'{c}'" if quote else c for c in close)
    return f"; did you mean {shown}?"


# ---- the parser ------------------------------------------------------------------------------------
_INVALID = re.compile(r"^(argument [^:]+): invalid (\w+) value: (.*)$")
_CHOICE = re.compile(r"^(argument [^:]+): invalid choice: '([^']*)' \(choose from (.*)\)$")


class ArgumentParser(argparse.ArgumentParser):
    """``argparse.ArgumentParser`` whose errors are one line on stderr, exit 2:
    ``error: argument --lr: 'x' is not a number; give a number (usage: prog --help)``. Unknown flags
    and choices get the closest valid spellings; subparsers inherit the class. Flags are never
    abbreviated (``allow_abbrev=False`` unless asked): a prefix such as ``--mod`` is an unknown flag,
    not whichever of ``--model`` and ``--mode`` argparse would pick, in the scripts and in every
    ``gluon-suite`` subcommand."""

    def __init__(self, *args, allow_abbrev=False, **kwargs):
        super().__init__(*args, allow_abbrev=allow_abbrev, **kwargs)

    def _option_strings(self):
        return [s for a in self._actions for s in a.option_strings]

    def _rewrite(self, message):
        m = _INVALID.match(message)
        if m:
            kind = {"int": "a whole number", "float": "a number"}.get(m.group(2), f"a valid {m.group(2)}")
            return f"{m.group(1)}: {m.group(3)} is not {kind}; give {kind}"
        m = _CHOICE.match(message)
        if m:
            choices = [c.strip().strip("'") for c in m.group(3).split(",")]
            hint = suggest(m.group(2), choices)
            return f"{m.group(1)}: unknown value '{m.group(2)}'{hint}; use one of {m.group(3)}"
        if message.startswith("unrecognized arguments:"):
            words = message.split(":", 1)[1].split()
            hints = "".join(suggest(w.split("=")[0], self._option_strings())
                            for w in words if w.startswith("-"))
            return f"{message}{hints}; remove them or see the valid flags"
        if message.startswith("the following arguments are required:"):
            return f"{message}; give them"
        if "expected one argument" in message or "expected at least one argument" in message:
            return f"{message}; give a value after the flag"
        if "ignored explicit argument" in message:
            return f"{message}; this flag takes no value: use it bare"
        return message

    def error(self, message):
        """Print one ``error: ...`` line naming the flag, the problem and the fix, then exit 2."""
        line = " ".join(self._rewrite(message).split())
        self.exit(2, f"error: {line} (usage: {self.prog} --help)\n")


def retype(parser, **types):
    """Give the flags with these ``dest`` names a ``type`` (e.g. ``np=positive_int``): for flag
    groups that another module adds with plain ``int``."""
    for action in parser._actions:
        if action.dest in types:
            action.type = types.pop(action.dest)
    if types:
        raise KeyError(f"no flag with dest {', '.join(types)}")
    return parser


# ---- numbers ------------------------------------------------------------------------------------------
def _fail(msg):
    raise argparse.ArgumentTypeError(msg)


def int_at_least(low):
    """An argparse type: a whole number ``>= low``."""
    def check(text):
        if isinstance(text, bool):
            _fail(f"must be a whole number >= {low}, got {text!r}")
        try:
            value = int(str(text).strip())
        except ValueError:
            _fail(f"must be a whole number >= {low}, got {str(text)!r}")
        if value < low:
            _fail(f"must be a whole number >= {low}, got {value}")
        return value
    check.__name__ = f"int >= {low}"
    return check


positive_int = int_at_least(1)
nonneg_int = int_at_least(0)


def float_range(low=None, high=None, low_open=False, high_open=False, what="a number"):
    """An argparse type: a finite number within ``[low, high]`` (``low_open``/``high_open``
    exclude the ends)."""
    parts = []
    if low is not None:
        parts.append(f"{'>' if low_open else '>='} {low:g}")
    if high is not None:
        parts.append(f"{'<' if high_open else '<='} {high:g}")
    rule = f"must be {what}" + (" " + " and ".join(parts) if parts else "")

    def check(text):
        if isinstance(text, bool):
            _fail(f"{rule}, got {text!r}")
        try:
            value = float(str(text).strip())
        except ValueError:
            _fail(f"{rule}, got {str(text)!r}")
        if value != value or value in (float("inf"), float("-inf")):
            _fail(f"{rule}, got {value}")
        if low is not None and (value < low or (low_open and value == low)):
            _fail(f"{rule}, got {value:g}")
        if high is not None and (value > high or (high_open and value == high)):
            _fail(f"{rule}, got {value:g}")
        return value
    check.__name__ = rule
    return check


positive_float = float_range(0, low_open=True)
nonneg_float = float_range(0)
fraction = float_range(0, 1, what="a fraction")
ratio = float_range(1, what="a compression ratio (dense bytes / sent bytes)")


def choice_of(names, what="value"):
    """An argparse type: one of ``names`` (a collection, or a callable returning one, looked up
    when a value is checked), case-insensitive; unknown names get the closest matches."""
    def check(text):
        valid = sorted(names() if callable(names) else names)
        key = str(text).strip().lower()
        if key not in valid:
            _fail(f"unknown {what} {str(text)!r}{suggest(key, valid)}; use one of {', '.join(valid)}")
        return key
    check.__name__ = what
    return check


# ---- paths --------------------------------------------------------------------------------------------
def existing_file(text):
    """An argparse type: a path to an existing regular file."""
    path = os.path.expanduser(str(text))
    if os.path.isdir(path):
        _fail(f"{text} is a folder, not a file; give the file's path")
    if not os.path.exists(path):
        _fail(f"{text} does not exist; give the path of an existing file")
    if not os.access(path, os.R_OK):
        _fail(f"{text} is not readable; fix its permissions")
    return path


def existing_path(text):
    """An argparse type: an existing file or folder (a data set given as a folder or an archive)."""
    path = os.path.expanduser(str(text))
    if not os.path.exists(path):
        _fail(f"{text} does not exist; give the path of the data (a folder or a file)")
    return path


def url(text):
    """An argparse type: an ``http://``, ``https://`` or ``file://`` URL."""
    if not str(text).startswith(("http://", "https://", "file://")) or len(str(text)) <= len("file://"):
        _fail(f"{text!r} is not a URL; use http://HOST/PATH, https://... or file:///FOLDER")
    return str(text)


def utf8_file(text):
    """An argparse type: an existing file of UTF-8 text (a binary or other-encoding file fails here
    with its byte offset instead of deep inside a reader)."""
    path = existing_file(text)
    with open(path, "rb") as f:
        data = f.read()
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as exc:
        _fail(f"{text} is not UTF-8 text (byte {exc.start} cannot be decoded); give a UTF-8 text file")
    return path


def existing_dir(text):
    """An argparse type: a path to an existing folder."""
    path = os.path.expanduser(str(text))
    if os.path.exists(path) and not os.path.isdir(path):
        _fail(f"{text} is a file, not a folder; give a folder")
    if not os.path.isdir(path):
        _fail(f"{text} does not exist; give an existing folder")
    return path


def _creatable(path, text, kind):
    """Fail unless ``path`` is (or can become) a writable ``kind`` ('folder' or 'file'); nothing
    is created."""
    path = os.path.abspath(os.path.expanduser(path))
    if os.path.exists(path):
        if kind == "folder" and not os.path.isdir(path):
            _fail(f"{text} is a file, not a folder; choose a folder (or remove the file)")
        if kind == "file" and os.path.isdir(path):
            _fail(f"{text} is a folder, not a file; give a file name inside it")
        if not os.access(path if kind == "folder" else os.path.dirname(path), os.W_OK | os.X_OK):
            _fail(f"{text} is not writable; choose a writable place or fix its permissions")
        return
    parent = os.path.dirname(path)
    while not os.path.exists(parent):
        parent = os.path.dirname(parent)
    if not os.path.isdir(parent):
        _fail(f"{text} cannot be created: {parent} is a file, not a folder; choose a path outside it")
    if not os.access(parent, os.W_OK | os.X_OK):
        _fail(f"{text} cannot be created: {parent} is not writable; choose a writable place")


def output_dir(text):
    """An argparse type: a folder that exists and is writable, or can be created (not created
    here: a refused run leaves nothing behind)."""
    _creatable(str(text), text, "folder")
    return os.path.expanduser(str(text))


def output_file(text):
    """An argparse type: a file path whose folder exists or can be created, that is not a folder."""
    _creatable(str(text), text, "file")
    return os.path.expanduser(str(text))


def run_folder(text):
    """An argparse type for ``--resume``: ``none``, ``auto`` or a run folder holding
    ``state.json``."""
    value = str(text)
    if value in ("none", "auto"):
        return value
    if not os.path.isdir(value):
        _fail(f"takes none, auto or a run folder; {value!r} is none of these: use --resume auto to "
              "continue --out, or give the folder of an earlier run")
    if not os.path.isfile(os.path.join(value, "state.json")):
        _fail(f"{value} holds no checkpoint (state.json); give the folder of an earlier run or use "
              "--resume none")
    return value
