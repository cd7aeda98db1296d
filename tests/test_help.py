"""`--help` of every training script and of every `gluon-suite` command: it exits 0, prints a usage
line naming the program, lists each flag with words after it, writes nothing into the working
folder, and never shows a traceback. A user's first command is often `--help`; a flag added
without a help text, or a parser that builds something heavy and fails, shows up here."""
import os
import re
import subprocess
import sys

import pytest

from .conftest import REPO

SCRIPTS = sorted(os.path.join(d, f) for d in ("cv", "nlp", "graph")
                 for f in os.listdir(os.path.join(REPO, "scripts", d)) if f.endswith(".py"))
CLI = os.path.join(os.path.dirname(sys.executable), "gluon-suite")


def command_paths():
    """Every command and subcommand of ``gluon-suite`` with its parser, read from the parser itself
    (a command added later is covered without editing this file)."""
    import argparse
    from gluon_suite.cli import build_parser
    out, todo = [], [([], build_parser())]
    while todo:
        path, parser = todo.pop()
        out.append((path, parser))
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                todo += [([*path, name], sub) for name, sub in action.choices.items()]
    return sorted(out, key=lambda x: x[0])


def run_help(cmd, cwd):
    before = set(os.listdir(cwd))
    p = subprocess.run([*cmd, "--help"], capture_output=True, text=True, timeout=120, cwd=cwd,
                       env=dict(os.environ, PYTHONPATH=REPO, COLUMNS="100"))
    assert p.returncode == 0, p.stdout[-2000:] + p.stderr[-2000:]
    assert "Traceback" not in p.stderr and "Traceback" not in p.stdout, p.stderr[-2000:]
    assert set(os.listdir(cwd)) == before, "--help wrote into the working folder"
    assert p.stdout.startswith("usage: "), p.stdout[:300]
    return p.stdout


def flags_without_words(text):
    """The option lines of an argparse help text whose flag has no description after it (neither
    on its line nor on the next, indented further). Subcommand names are not options."""
    lines = text.splitlines()
    bare = []
    for i, line in enumerate(lines):
        m = re.match(r"^  (-\S.*?)(\s{2,}\S.*)?$", line)
        if not m or m.group(1).startswith(("-h", "--help")):
            continue
        described = m.group(2) is not None or (i + 1 < len(lines) and re.match(r"^\s{8,}\S", lines[i + 1]))
        if not described:
            bare.append(line.strip())
    return bare


def test_the_flag_check_finds_a_flag_without_words():
    text = ("usage: x [-h]\n\noptions:\n  -h, --help  show this help\n  --lr LR     the rate\n"
            "  --momentum MOMENTUM\n  --wd WD\n                 decay\n  --ratios RATIOS [RATIOS ...]\n"
            "  --seeds SEEDS [SEEDS ...]  seeds\n")
    assert flags_without_words(text) == ["--momentum MOMENTUM", "--ratios RATIOS [RATIOS ...]"]


@pytest.mark.parametrize("script", SCRIPTS)
def test_script_help(script, tmp_path):
    text = run_help([sys.executable, os.path.join(REPO, "scripts", script)], tmp_path)
    assert os.path.basename(script) in text.splitlines()[0]
    assert "--" in text and len(text.splitlines()) > 5


@pytest.mark.parametrize("cmd", [[], ["zoo", "publish"], ["whatif", "advise"]], ids=lambda c: " ".join(c) or "top")
def test_cli_help_as_a_command(cmd, tmp_path):
    text = run_help([CLI, *cmd], tmp_path)
    assert " ".join(["gluon-suite", *cmd]) in " ".join(text.split()[:8])


def test_every_cli_command_describes_every_flag(monkeypatch):
    monkeypatch.setenv("COLUMNS", "100")
    paths = command_paths()
    names = {" ".join(path) for path, _ in paths}
    assert {"", "info", "zoo", "zoo publish", "launch", "samples", "whatif", "whatif advise"} <= names
    bare = {" ".join(path): flags_without_words(parser.format_help()) for path, parser in paths}
    assert {k: v for k, v in bare.items() if v} == {}
