"""A toy checkout for the evidence tests: a git repository with bench/protocols, a bench module and
docs, in a temporary folder."""
import os
import subprocess
import textwrap

import pytest

TOY_BENCH = '''
BASE = {"slow": 0.80, "fast": 0.90}


def evidence(ctx):
    for seed in ctx.seeds:
        for arm in ctx.arms:
            ctx.measure(arm, seed, lambda: {"acc": BASE[arm] + 0.01 * seed + (0.002 * seed if arm == "fast" else 0.0),
                                            "curve": [0.1, 0.5, BASE[arm]],
                                            "speedup": float("inf") if ctx.params.get("inf") else 1.0})
    ctx.table("summary", ["arm", "seeds", "scale"], [[a, len(ctx.seeds), ctx.params["scale"]] for a in ctx.arms])
'''

TOY_PROTOCOL = '''
name: toy
version: 1
claim: fast is more accurate than slow
bench: toy
compared: [slow, fast]
data: none
model: none
schedule: none
seeds: [0, 1, 2, 3]
evaluation: once
testbed: this process
params: {scale: 1}
quick: {seeds: [0], params: {scale: 0.5}}
criteria:
  - id: fast_better
    statement: fast's accuracy is higher than slow's
    metric: acc
    a: fast
    b: slow
    test: better
'''

DOC = '''# Toy

Numbers:

<!-- bench:table toy criteria -->
<!-- bench:end -->

<!-- bench:claims -->
<!-- bench:end -->
'''


def git(root, *args):
    env = dict(os.environ, GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@example.com", GIT_COMMITTER_NAME="t",
               GIT_COMMITTER_EMAIL="t@example.com")
    return subprocess.run(["git", "-C", str(root), *args], check=True, capture_output=True, text=True,
                          env=env).stdout.strip()


@pytest.fixture
def toy_root(tmp_path):
    root = tmp_path / "checkout"
    (root / "bench" / "protocols").mkdir(parents=True)
    (root / "docs").mkdir()
    (root / "bench" / "toy.py").write_text(textwrap.dedent(TOY_BENCH))
    (root / "bench" / "protocols" / "toy.yaml").write_text(TOY_PROTOCOL.lstrip())
    (root / "docs" / "toy.md").write_text(DOC)
    (root / "README.md").write_text("# toy readme\n")
    git(root, "init", "-q")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "toy")
    return root
