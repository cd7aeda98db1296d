"""The flags of every script in ``scripts/``, read from the parser each one builds, as plain data:
what ``tests/data/script_options.json`` holds, and what ``tests/test_recipe_configs.py`` compares a
script's parser against (a flag dropped, renamed, given another action or another default shown in
``--help`` fails there).

    python -m tests.tools.script_options            # print the current list
    python -m tests.tools.script_options --write    # rewrite tests/data/script_options.json

Per flag: every option string (aliases included), dest, the action kind (store, store_true,
store_false, append, ...), nargs, const, choices, metavar, the type's name, whether it is required,
the parser's own default ("==SUPPRESS==" where the script leaves defaults to its configuration),
its help group, whether its help is hidden, the help text as ``--help`` prints it and the default
that text names (``describe_defaults`` ends a flag's help with "(default X)"; a help may also name
its default in words).
"""
import argparse
import json
import os
import re
import sys

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SAVED = os.path.join(REPO, "tests", "data", "script_options.json")
SCRIPTS = (
    "scripts/cv/train_classification.py",
    "scripts/cv/train_digits.py",
    "scripts/cv/evaluate.py",
    "scripts/cv/train_detection.py",
    "scripts/cv/train_segmentation.py",
    "scripts/nlp/pretrain_bert.py",
    "scripts/nlp/finetune_classification.py",
    "scripts/nlp/finetune_squad.py",
    "scripts/nlp/train_language_model.py",
    "scripts/nlp/evaluate_language_model.py",
    "scripts/graph/train_node_classification.py",
    "scripts/graph/train_graph_classification.py",
    "scripts/graph/train_link_prediction.py",
    "scripts/graph/train_entity_classification.py",
    "scripts/distributed/check_allreduce.py",
)
_DEFAULT = re.compile(r"\bdefault\b[^;()]*")


def script_parser(module):
    """The argparse parser of the script ``module`` (every script has a ``build_parser()``)."""
    return module.build_parser()


def _kind(parser, action):
    """The registered name of ``action``'s class (``store``, ``store_true``, ``append``, ...)."""
    names = {cls: name for name, cls in parser._registries["action"].items() if isinstance(cls, type)
             and name is not None}
    return names.get(type(action), type(action).__name__)


def _group(parser, action):
    for group in parser._action_groups:
        if action in group._group_actions:
            return group.title
    return None


def _plain(value):
    """``value`` as JSON data: lists for tuples, names for callables."""
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    return getattr(value, "__name__", repr(value))


def shown_default(text):
    """The default a help text names: its "default ..." phrases (up to a parenthesis or a
    semicolon), joined by " | "; None when the text names none."""
    found = _DEFAULT.findall(text or "")
    return " | ".join(s.strip() for s in found) if found else None


def describe_parser(parser):
    """``{"description", "options": [...]}`` of ``parser``: one record per flag (an action with
    option strings), in the parser's order."""
    formatter = parser._get_formatter()
    options = []
    for action in parser._actions:
        if not action.option_strings:
            continue
        hidden = action.help == argparse.SUPPRESS
        text = None if hidden or action.help is None else formatter._expand_help(action)
        static = isinstance(action.choices, (list, tuple)) or action.choices is None
        options.append({
            "strings": list(action.option_strings),
            "dest": action.dest,
            "kind": _kind(parser, action),
            "nargs": action.nargs,
            "const": _plain(action.const),
            "choices": _plain(action.choices) if static else "<dynamic>",
            "metavar": _plain(action.metavar),
            "type": _plain(action.type),
            "required": bool(action.required),
            "parser_default": _plain(action.default),
            "group": _group(parser, action),
            "help_hidden": hidden,
            "help": text,
            "default_shown": shown_default(text),
        })
    return {"description": parser.description, "options": options}


def collect(scripts=SCRIPTS):
    """``{script: describe_parser(its parser)}`` for ``scripts`` (paths from the repository root)."""
    from tests.conftest import load_script
    return {script: describe_parser(script_parser(load_script(script))) for script in scripts}


def load_saved(path=SAVED):
    """The saved list (``tests/data/script_options.json``)."""
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def main(argv=None):
    """Print the current list, or write it with ``--write``."""
    argv = sys.argv[1:] if argv is None else argv
    text = json.dumps(collect(), indent=1, sort_keys=False) + "\n"
    if "--write" in argv:
        with open(SAVED, "w", encoding="utf-8") as f:
            f.write(text)
        print(f"wrote {os.path.relpath(SAVED, REPO)}")
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
