"""The examples of README.md and docs/*.md run as written: each test takes a code block out of the
Markdown file (found by its first line, so an edited example is the one tested) and runs it with a
temporary zoo home, run outputs under a temporary folder instead of runs/. Slow examples are marked
``long`` (``make test-long``)."""
import json
import os
import re
import subprocess
import sys

import pytest

from .conftest import REPO

PY = sys.executable
BIN = os.path.dirname(PY)


def block(doc, first_line):
    """The code block of ``doc`` (relative to the repository) whose first line starts with
    ``first_line``; fails when the file has none (the example was removed or rewritten)."""
    text = open(os.path.join(REPO, doc), encoding="utf-8").read()
    for m in re.finditer(r"```(\w*)\n(.*?)```", text, re.S):
        if m.group(2).lstrip().startswith(first_line):
            return m.group(2)
    raise AssertionError(f"{doc} has no code block starting with {first_line!r}")


def commands(code):
    """The shell commands of a bash block: continuation lines joined, comments dropped."""
    joined = re.sub(r"\\\n\s*", " ", code)
    out = []
    for line in joined.splitlines():
        line = re.sub(r"\s+#.*$", "", line).strip()
        if line and not line.startswith("#"):
            out.append(line)
    return out


@pytest.fixture
def env(tmp_path):
    return dict(os.environ, GLUON_SUITE_HOME=str(tmp_path / "home"), GLUON_SUITE_QUIET="1",
                OMP_NUM_THREADS="1")


def run_python(code, env, tmp_path):
    p = subprocess.run([PY, "-c", code], capture_output=True, text=True, env=env, cwd=tmp_path, timeout=600)
    assert p.returncode == 0, p.stderr[-3000:]
    return p


def run_shell(cmd, env, tmp_path):
    """Run one documented command from the repository root, its run outputs under ``tmp_path``."""
    cmd = cmd.replace("runs/", f"{tmp_path}/runs/")
    p = subprocess.run(["bash", "-c", cmd], capture_output=True, text=True, env=env, cwd=REPO, timeout=900)
    assert p.returncode == 0 and "Traceback" not in p.stderr, f"{cmd}\n{p.stdout[-2000:]}\n{p.stderr[-3000:]}"
    return p


def card(name):
    return json.load(open(os.path.join(REPO, "model_zoo", f"{name}.json")))


def test_optim_first_snippet(env, tmp_path):
    run_python(block("docs/optim.md", "import gluon_suite.optim"), env, tmp_path)


def test_graph_sampling_snippet(env, tmp_path):
    code = block("docs/graph.md", "import mxnet as mx\nimport numpy as np\nimport gluon_suite.graph as dgl")
    p = run_python(code + "\nprint(logits.shape[1], logits.shape[0] == len(output_nodes))\n", env, tmp_path)
    assert p.stdout.split()[-2:] == ["3", "True"]


def test_model_zoo_list_and_build(env, tmp_path):
    for cmd in commands(block("docs/model_zoo.md", ".venv/bin/gluon-suite zoo list")):
        p = run_shell(cmd, env, tmp_path)
        assert "resnest14_digits" in p.stdout and re.search(r"resnest14_digits\s+shipped\s+a5e86e76\s+in use", p.stdout)
    p = run_python(block("docs/model_zoo.md", "from gluon_suite.model_zoo import get_model, list_models"), env, tmp_path)
    hp = card("resnest14_digits")["hyperparameters"]
    assert p.stdout.split() == [str(hp["image_size"]), hp["dataset"]]


def test_cv_evaluate_reports_the_cards_accuracy(env, tmp_path):
    cmd = commands(block("docs/cv.md", ".venv/bin/python scripts/cv/evaluate.py --model resnest14_digits"))[0]
    p = run_shell(cmd, env, tmp_path)
    acc = float(re.search(r"test accuracy ([\d.]+)", p.stdout).group(1))
    assert acc == pytest.approx(card("resnest14_digits")["metric"]["value"], abs=1e-4)


def test_readme_zoo_list(env, tmp_path):
    cmd = commands(block("README.md", ".venv/bin/gluon-suite zoo list --pretrained"))[0]
    assert "resnest14_digits" in run_shell(cmd, env, tmp_path).stdout


@pytest.mark.long
def test_model_zoo_publishing_and_layers_as_written(env, tmp_path):
    """docs/model_zoo.md's publishing block (a 2-epoch run, published with a tag, then the CLI
    publish) and its layers block (list, evaluate the tagged checkpoint, remove it)."""
    for cmd in commands(block("docs/model_zoo.md", ".venv/bin/python scripts/cv/train_classification.py")):
        run_shell(cmd, env, tmp_path)
    out = [run_shell(c, env, tmp_path).stdout
           for c in commands(block("docs/model_zoo.md", ".venv/bin/gluon-suite zoo list 'resnest14*'"))]
    assert re.search(r"resnest14_digits\.short\s+local", out[0]) and re.search(r"resnest14_digits\s+shipped", out[0])
    best = json.load(open(tmp_path / "runs" / "r14" / "resnest14_digits.json"))["metric"]["value"]
    assert float(re.search(r"test accuracy ([\d.]+)", out[1]).group(1)) == pytest.approx(best, abs=1e-4)
    assert "removed the local record of 'resnest14_digits.short'" in out[2]
