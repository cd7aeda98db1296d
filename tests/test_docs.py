"""The examples of README.md and docs/*.md run as written. Every ```bash and ```python block is taken
out of the Markdown files themselves (so an edited example is the one tested) and looked up in
``EXAMPLES`` by its file and first command line: each is run (fast ones in ``make test``, ``long``
ones in ``make test-long``) or skipped with a stated reason; a block in neither is a failure, and so
is an entry naming a block that no longer exists.

A block runs in a fresh working folder laid out like the repository (its code folders linked in)
with the sample data of ``gluon-suite samples`` under ``data/``, a temporary ``GLUON_SUITE_HOME``
and its own ``runs/``; the only edits are the entry's explicit substitutions, which shorten a run
(fewer epochs or steps) and must each match the block. Afterwards the source tree has no new file,
and the block left nothing in its working folder that the repository's .gitignore would not ignore.
"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field

import pytest

from .conftest import REPO

PY = sys.executable
BIN = os.path.dirname(PY)
DOCS = ["README.md"] + sorted(f"docs/{f}" for f in os.listdir(os.path.join(REPO, "docs")) if f.endswith(".md"))
RUNNABLE = ("bash", "sh", "shell", "console", "python", "py")
# what a documented command may reach in the working folder: the repository's code and configs
LINKED = (".venv", "scripts", "configs", "examples", "bench", "gluon_suite", "model_zoo", "Makefile",
          "setup.py", "constraints.txt")


@dataclass
class Example:
    """How one documented block is tested: ``tier`` 'fast' or 'long' (run) or 'skip' with ``reason``;
    ``subs`` are (text, replacement) pairs that shorten it, each of which must occur in the block;
    ``before`` is shell run first in the same folder (state an earlier block or step leaves);
    ``prelude`` is Python put before a snippet that continues from code the page shows elsewhere;
    ``check(stdout)`` asserts what the page says the example prints."""
    tier: str
    reason: str = ""
    subs: list = field(default_factory=list)
    before: str = ""
    prelude: str = ""
    check: object = None


def fast(**kw):
    return Example("fast", **kw)


def long(**kw):
    return Example("long", **kw)


def skip(reason):
    return Example("skip", reason=reason)


ONE_EPOCH = [("--out runs/cser", "--out runs/cser --epochs 1")]
PRETRAINED_BERT = (".venv/bin/python scripts/nlp/pretrain_bert.py --out runs/bert "
                   "--phase seq_len=32,batch_size=8,steps=3,lr=0.02")
NET = "from mxnet import gluon, autograd\nnet = gluon.nn.Dense(10)\nnet.initialize()\n"
HOSTS = ("mkdir -p runs && printf 'localhost:1\\n127.0.0.1:1\\n' > runs/hosts.txt\n")

EXAMPLES = {
    # README.md
    "README.md: make demo": skip("make targets install and build; the demo's training is README's CSER block, run here"),
    "README.md: .venv/bin/gluon-suite info": fast(),
    "README.md: .venv/bin/horovodrun -np 2 -H localhost:2 --gloo .venv/bin/python scripts/cv/train_classification.py":
        long(subs=ONE_EPOCH),
    "README.md: from gluon_suite.distributed import DistributedTrainer, make_algorithm": fast(prelude=NET),
    "README.md: .venv/bin/python scripts/nlp/pretrain_bert.py --config configs/nlp/bert_tiny_two_phase.yaml --out runs/bert":
        long(subs=[("--out runs/bert", "--out runs/bert --phase seq_len=32,batch_size=8,steps=3,lr=0.02"),
                   ("--dev data/squad/dev-v1.1.json", "--dev data/squad/dev-v1.1.json --epochs 1")]),
    "README.md: .venv/bin/python scripts/graph/train_node_classification.py --dataset karate --model gcn --epochs 60 --lr 0.02":
        fast(subs=[("--epochs 60", "--epochs 3"), ("--dataset families", "--dataset families --epochs 1")]),
    "README.md: mkdir -p runs": long(subs=[("--out runs/elastic", "--out runs/elastic --epochs 1")]),
    "README.md: .venv/bin/gluon-suite whatif predict --profile v100_resnet50_v1b_fp32 --workers 8 16 64 --gpus-per-host 8 \\":
        fast(),
    "README.md: .venv/bin/gluon-suite zoo list --pretrained": long(   # after README's training run, which publishes
        before=".venv/bin/python scripts/cv/train_classification.py --config configs/cv/digits_resnest14_cser.yaml "
               "--out runs/cser --publish runs/cser/store --publish-tag mine --epochs 1"),
    # docs/cv.md
    'docs/cv.md: from gluon_suite.model_zoo import get_model':
        skip("downloads GluonCV's ResNeSt-50 file from the network"),
    "docs/cv.md: .venv/bin/python scripts/cv/train_classification.py --model resnet14_digits --dataset mnist5k":
        long(subs=[("--epochs 10", "--epochs 1")]),
    "docs/cv.md: .venv/bin/python scripts/cv/train_classification.py --model resnet14_digits --epochs 5 --out runs/r14":
        long(subs=[("--epochs 5", "--epochs 1"), ("--epochs 20", "--epochs 1")]),
    "docs/cv.md: .venv/bin/horovodrun -np 2 -H localhost:2 --gloo .venv/bin/python scripts/cv/train_classification.py":
        long(subs=[("--out runs/resnest14_digits", "--out runs/resnest14_digits --epochs 1")]),
    "docs/cv.md: .venv/bin/python scripts/cv/evaluate.py --model resnest14_digits --pretrained": long(
        before=".venv/bin/python scripts/cv/train_classification.py --model resnet14_digits --epochs 1 --out runs/r14"),
    "docs/cv.md: .venv/bin/python scripts/cv/train_classification.py --dataset folder --data-dir data/images":
        long(subs=[("--epochs 5", "--epochs 1")]),
    "docs/cv.md: .venv/bin/python scripts/cv/train_detection.py --model ssd_128_resnet18_canvas --epochs 20 --lr 0.04 --out runs/det":
        long(subs=[("--epochs 20", "--epochs 1 --canvases 32 --val-canvases 16")]),
    "docs/cv.md: .venv/bin/python scripts/cv/train_segmentation.py --model fpn_resnet18_canvas --epochs 20 --lr 0.04 --out runs/seg":
        long(subs=[("--epochs 20", "--epochs 1 --canvases 32 --val-canvases 16")]),
    "docs/cv.md: from gluon_suite.cv.data import canvas_dataset": fast(
        check=lambda out: "(128, 128, 3)" in out and "(128, 128)" in out),
    "docs/cv.md: .venv/bin/python scripts/cv/evaluate.py --model ssd_128_resnet18_canvas --pretrained": long(),
    "docs/cv.md: .venv/bin/python scripts/cv/evaluate.py --model fpn_resnet18_canvas --pretrained": long(),
    "docs/cv.md: from gluon_suite.model_zoo import get_model\nfrom gluon_suite.cv.data import canvas_dataset": fast(
        check=lambda out: out.count("[") >= 3),
    # docs/benchmarks.md
    "docs/benchmarks.md: .venv/bin/gluon-suite bench list": fast(
        check=lambda out: "cv_models" in out and "cv_models: inconclusive" in out),
    # docs/distributed.md
    "docs/distributed.md: import mxnet as mx\nfrom mxnet import autograd, gluon\nfrom gluon_suite.distributed import DistributedTrainer, make_algorithm\n\nnet":
        fast(),
    "docs/distributed.md: horovodrun -np 2 -H localhost:2 --gloo .venv/bin/python scripts/cv/train_digits.py":
        long(subs=[("--period 4", "--period 4 --epochs 1")]),
    "docs/distributed.md: horovodrun -np 4 -H localhost:4 --gloo .venv/bin/python scripts/cv/train_digits.py":
        fast(subs=[("--epochs 2", "--epochs 1")],
             check=lambda out: "auto: " in out and "target 0.75" in out),
    "docs/distributed.md: import mxnet as mx\nfrom mxnet import autograd, gluon\nfrom gluon_suite.distributed import DistributedTrainer\n\nctx":
        fast(),
    "docs/distributed.md: import dataclasses": fast(
        check=lambda out: "'every_other', 'offset': 1" in out and "strided" in out and "cser" in out),
    "docs/distributed.md: with trainer.averaged(net, bn_batches=train_batches": fast(
        prelude="import mxnet as mx\nfrom mxnet import gluon\nfrom gluon_suite.distributed import DistributedTrainer\n"
                "net = gluon.nn.HybridSequential()\nnet.add(gluon.nn.Dense(8), gluon.nn.BatchNorm(), gluon.nn.Dense(3))\n"
                "net.initialize()\n"
                "trainer = DistributedTrainer(net.collect_params(), 'sgd', {'learning_rate': 0.1}, algorithm='cser',"
                " period=4)\n"
                "train_batches = [mx.nd.random.normal(shape=(16, 5)) for _ in range(8)]\n"
                "evaluate = lambda net: net(train_batches[0]).shape\n"),
    # docs/elastic.md
    "docs/elastic.md: import horovod.mxnet as hvd": skip(
        "a template: its loop body is elided ('...forward, backward...'); the complete program is "
        "tests/distributed/_elastic_job.py"),
    "docs/elastic.md: mkdir -p runs": long(subs=[("--epochs 10", "--epochs 1")]),
    "docs/elastic.md: .venv/bin/gluon-suite bench run elastic":
        skip("a benchmark: the elastic protocol's full run, 15 elastic Horovod jobs of 4 workers (about 6 minutes "
             "on two CPU cores); CI runs it with --quick"),
    "docs/elastic.md: .venv/bin/gluon-suite bench run dynamic_sgd":
        skip("a benchmark: the dynamic_sgd protocol's full run, 20 simulated trainings (about 11 minutes on two "
             "CPU cores); CI runs it with --quick"),
    # docs/getting_started.md
    "docs/getting_started.md: make setup": skip("make setup builds the environment these tests run in"),
    "docs/getting_started.md: .venv/bin/gluon-suite samples": fast(),
    "docs/getting_started.md: .venv/bin/python scripts/cv/train_digits.py --epochs 8 --out runs/digits":
        long(subs=[("--epochs 8 --out runs/digits\n", "--epochs 1 --out runs/digits\n"),
                   ("--epochs 8 --out runs/digits2", "--epochs 1 --out runs/digits2")]),
    "docs/getting_started.md: .venv/bin/python scripts/cv/train_digits.py --epochs 8 --out runs/digits --tensorboard":
        long(subs=[("--epochs 8", "--epochs 1")]),
    # docs/gpus.md
    "docs/gpus.md: make setup CUDA=117": skip("needs an NVIDIA driver and GPU"),
    "docs/gpus.md: .venv/bin/python scripts/cv/train_classification.py --model resnest14_digits --gpus 0,1 --batch-size 16 --dtype float16":
        skip("needs two GPUs (and two named hosts for the second line)"),
    "docs/gpus.md: from gluon_suite.distributed.loss_scale import DynamicLossScaler": fast(
        prelude="import mxnet as mx\nfrom gluon_suite.distributed import DistributedTrainer\n" + NET +
                "trainer = DistributedTrainer(net.collect_params(), 'sgd', {'learning_rate': 0.1})\n"
                "loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()\n"
                "x, y, batch_size = mx.nd.ones((4, 5)), mx.nd.zeros(4), 4\n"),
    "docs/gpus.md: GLUON_SUITE_EMULATE_FLOAT16=1 .venv/bin/python scripts/cv/train_classification.py":
        long(subs=[("--dtype float16", "--dtype float16 --epochs 1")]),
    "docs/gpus.md: GLUON_SUITE_EMULATE_FLOAT16=1 .venv/bin/python scripts/nlp/pretrain_bert.py --out runs/bert16":
        long(subs=[("steps=200", "steps=3")]),
    "docs/gpus.md: .venv/bin/gluon-suite bench run float16_bert":
        skip("a benchmark: the float16_bert protocol's full run, 10 BERT pretraining runs (about 10 minutes "
             "on two CPU cores); CI runs it with --quick"),
    "docs/gpus.md: CUDA=117 bash bench/device_check.sh": skip("needs a GPU"),
    # docs/graph.md
    "docs/graph.md: import mxnet as mx\nimport gluon_suite.graph as dgl\nimport gluon_suite.graph.function as fn": fast(),
    "docs/graph.md: import gluon_suite.graph as dgl": fast(),
    "docs/graph.md: from gluon_suite.graph.data import CoraGraphDataset": fast(),
    "docs/graph.md: import numpy as np, scipy.sparse as sp, mxnet as mx": fast(),
    "docs/graph.md: import tempfile\nimport mxnet as mx\nimport gluon_suite.graph as dgl": fast(),
    "docs/graph.md: .venv/bin/python examples/graph/gcn.py --dataset karate --epochs 100": long(
        subs=[("--epochs 100", "--epochs 3"), ("--dataset sbm", "--dataset sbm --epochs 3"),
              ("--batch-size 32", "--batch-size 32 --epochs 1"), ("--epochs 30", "--epochs 2"),
              ("--data-dir data/cora", "--data-dir data/cora --epochs 3")]),
    "docs/graph.md: import mxnet as mx\nimport numpy as np\nimport gluon_suite.graph as dgl": fast(),
    "docs/graph.md: import mxnet as mx\nfrom mxnet import autograd, gluon\nimport gluon_suite.graph as dgl": fast(),
    "docs/graph.md: from gluon_suite.graph.link_data import citation_graph, citation_heterograph, undirected_split":
        fast(check=lambda out: "val AUC" in out and "Hits@10" in out),
    "docs/graph.md: .venv/bin/python scripts/graph/train_link_prediction.py --dataset citation --epochs 40":
        fast(subs=[("--epochs 40", "--epochs 2"), ("--model gcn --scorer mlp", "--model gcn --scorer mlp --epochs 1")],
             check=lambda out: out.count("test auc") >= 2),
    "docs/graph.md: .venv/bin/gluon-suite bench run graph_models":
        skip("a benchmark: the graph protocols' full runs against DGL and PyG in their own environments "
             "(make bench-deps), about 20 minutes on a 1M-edge graph; CI runs each with --quick"),
    "docs/graph.md: GLUON_SUITE_MALLOC=off MXNET_EXEC_BULK_EXEC_TRAIN=1 .venv/bin/python scripts/graph/train_node_classification.py --dataset karate --model gat --epochs 5":
        fast(),
    "docs/graph.md: .venv/bin/python scripts/graph/train_node_classification.py --dataset karate --model gcn --epochs 60 --lr 0.02":
        long(subs=[("--epochs 60", "--epochs 3"), ("--fanouts 5 5", "--fanouts 5 5 --epochs 1"),
                   ("--model gat\n", "--model gat --epochs 2\n"), ("--epochs 40", "--epochs 1"),
                   ("--name SHAPES", "--name SHAPES --epochs 1"),
                   ("train_node_classification.py --dataset sbm\n", "train_node_classification.py --dataset sbm --epochs 2\n")]),
    "docs/graph.md: .venv/bin/python scripts/graph/train_node_classification.py --dataset sbm --model gat --out runs/sbm --resume auto":
        long(subs=[("--resume auto", "--resume auto --epochs 2"), ("--resume runs/gin", "--resume runs/gin --epochs 2")],
             before=".venv/bin/python scripts/graph/train_graph_classification.py --epochs 1 --out runs/gin"),
    "docs/graph.md: .venv/bin/gluon-suite launch --min-np 2 --max-np 3 --host-discovery-script scripts/distributed/discover_hosts.sh":
        long(subs=[("--out runs/sbm-elastic", "--out runs/sbm-elastic --epochs 2")], before=HOSTS),
    # docs/model_zoo.md
    "docs/model_zoo.md: .venv/bin/gluon-suite zoo list": fast(check=lambda out: _shipped_row(out)),
    "docs/model_zoo.md: from gluon_suite.model_zoo import get_model, list_models": fast(
        check=lambda out: _card_size_and_data(out)),
    "docs/model_zoo.md: from gluon_suite.model_zoo import register_model": fast(),
    "docs/model_zoo.md: .venv/bin/python scripts/cv/train_classification.py --model resnest14_digits --image-size 16":
        long(),
    "docs/model_zoo.md: .venv/bin/gluon-suite zoo list 'resnest14*'": long(
        before=".venv/bin/python scripts/cv/train_classification.py --model resnest14_digits --image-size 16 "
               "--epochs 1 --out runs/r14 --publish runs/r14/store --publish-tag short"),
    # docs/nlp.md
    "docs/nlp.md: .venv/bin/gluon-suite bench run lans_vs_lamb":
        skip("a benchmark: the lans_vs_lamb protocol's full run, 24 BERT pretraining runs (about an hour on "
             "two CPU cores); CI runs it with --quick"),
    "docs/nlp.md: .venv/bin/python scripts/nlp/pretrain_bert.py --corpus gensim:lee_background --out runs/bert-lee":
        long(subs=[("steps=300", "steps=3")]),
    "docs/nlp.md: .venv/bin/python scripts/nlp/pretrain_bert.py --corpus wikipedia --config configs/nlp/bert_tiny_two_phase.yaml \\":
        long(subs=[("--out runs/bert-wiki", "--out runs/bert-wiki --phase seq_len=32,batch_size=8,steps=3,lr=0.02 "
                    "--phase seq_len=64,batch_size=4,accumulate=2,steps=2,lr=0.01")]),
    "docs/nlp.md: .venv/bin/python scripts/nlp/pretrain_bert.py --out runs/bert": long(
        subs=[("steps=300", "steps=3"), ("steps=50", "steps=2"),
              ("--out runs/bert2", "--out runs/bert2 --phase seq_len=32,batch_size=8,steps=3,lr=0.02")]),
    "docs/nlp.md: .venv/bin/python scripts/nlp/pretrain_bert.py --out runs/bert-gluonnlp --num_steps 300 --total_batch_size 64 \\":
        long(subs=[("--num_steps 300", "--num_steps 2")]),
    "docs/nlp.md: .venv/bin/python scripts/nlp/finetune_squad.py --model bert_2_128_2_lee --pretrained \\":
        long(subs=[("--out runs/squad-windows", "--out runs/squad-windows --epochs 1")]),
    "docs/nlp.md: .venv/bin/python scripts/nlp/finetune_squad.py --model bert_2_128_2_lee --pretrained --version_2 \\":
        fast(subs=[("--epochs 8", "--epochs 1")],
             check=lambda out: "unanswerable: 80 training, 20 dev questions" in out and "dev_NoAns_exact" in out),
    "docs/nlp.md: .venv/bin/python scripts/nlp/finetune_classification.py --model bert_2_128_2_lee --pretrained \\":
        fast(),
    "docs/nlp.md: .venv/bin/python scripts/nlp/finetune_classification.py --init runs/bert": long(
        before=PRETRAINED_BERT,
        subs=[("--label-column label\n", "--label-column label --epochs 1\n"),
              ("--dev data/squad/dev-v1.1.json", "--dev data/squad/dev-v1.1.json --epochs 1"),
              ("--out runs/ft", "--out runs/ft --epochs 1")]),
    "docs/nlp.md: .venv/bin/python scripts/nlp/train_language_model.py --model standard_lstm_lm_200 --emsize 64":
        long(subs=[("--epochs 2 --out runs/wiki-lm\n", "--epochs 1 --max-pages 5 --out runs/wiki-lm\n"),
                   ("--out runs/wiki-lm-la", "--out runs/wiki-lm-la --epochs 1 --max-pages 5 --emsize 32 --nhid 32")]),
    "docs/nlp.md: from gluon_suite.model_zoo import get_model\nnet = get_model(\"standard_lstm_lm_200_wiki\"": fast(
        check=lambda out: abs(float(out.split()[-1]) - 99.485) < 0.01),
    "docs/nlp.md: .venv/bin/python scripts/nlp/evaluate_language_model.py --run runs/wiki-lm": long(
        before=(".venv/bin/python scripts/nlp/train_language_model.py --model standard_lstm_lm_200 --emsize 16 "
                "--nhid 16 --epochs 1 --max-pages 5 --out runs/wiki-lm")),
    "docs/nlp.md: .venv/bin/python scripts/nlp/train_language_model.py --model big_rnn_lm_2048_512":
        long(subs=[("--max-pages 30", "--max-pages 5")]),
    "docs/graph.md: .venv/bin/python scripts/graph/train_entity_classification.py --epochs 50 --out runs/rgcn":
        fast(subs=[("--epochs 50", "--epochs 10")]),
    # docs/optim.md
    "docs/optim.md: import gluon_suite.optim": fast(),
    "docs/optim.md: .venv/bin/gluon-suite bench run local_adaalter_wiki --seeds 0": skip(
        "an hour of training on two workers and a network-namespace testbed (root); the long tier runs the "
        "protocol's --quick (tests/evidence/test_quick_runs.py)"),
    "docs/optim.md: from gluon_suite.distributed import make_algorithm": fast(
        prelude="from gluon_suite.distributed import DistributedTrainer\n" + NET + "T = 1000\n"),
    "docs/optim.md: from gluon_suite.distributed.local_adaalter import LocalAdaAlter": fast(
        prelude="from gluon_suite.distributed import DistributedTrainer\n"
                "from gluon_suite.optim import WarmupConstantDecay\n" + NET +
                "sched = WarmupConstantDecay(0.5, total_steps=1000, warmup_steps=600, constant_steps=400)\n"),
    "docs/optim.md: .venv/bin/gluon-suite bench run optim":
        skip("a benchmark: about 2 minutes of 110M-parameter optimizer steps; CI runs it with --quick"),
    "docs/optim.md: .venv/bin/gluon-suite bench run local_adaalter_lm":
        skip("a benchmark: 35 two-worker runs of 600 steps, about an hour on 2 cores; CI runs it with --quick"),
    "docs/optim.md: .venv/bin/gluon-suite bench run local_adaalter_lm_head500":
        skip("a benchmark: 10 two-worker runs of 600 steps; CI runs it with --quick"),
    # docs/whatif.md
    "docs/whatif.md: .venv/bin/gluon-suite whatif --model resnet50_v1b --batch-size 32 --workers 8 16": long(),
    "docs/whatif.md: from gluon_suite.whatif.testbed import Testbed":
        skip("needs root for network namespaces (the testbed's own tests run where it has them)"),
}


def card(name):
    return json.load(open(os.path.join(REPO, "model_zoo", f"{name}.json")))


def _shipped_row(out):
    """The page: zoo list shows each checkpoint's layer; the card: resnest14_digits's file hash."""
    short = card("resnest14_digits")["checkpoint"]["sha256"][:8]
    assert re.search(rf"resnest14_digits\s+shipped\s+{short}\s+in use", out), out[-2000:]


def _card_size_and_data(out):
    hp = card("resnest14_digits")["hyperparameters"]
    assert out.split() == [str(hp["image_size"]), hp["dataset"]]


def _first_command(code):
    for line in code.splitlines():
        s = line.strip()
        if s and not s.startswith("#"):
            return s
    return ""


def doc_blocks():
    """Every fenced block of the documents: (doc, line number, language, code)."""
    out = []
    for doc in DOCS:
        text = open(os.path.join(REPO, doc), encoding="utf-8").read()
        for m in re.finditer(r"^```(\w*)[^\n]*\n(.*?)^```", text, re.S | re.M):
            out.append((doc, text[:m.start()].count("\n") + 1, m.group(1).lower(), m.group(2)))
    return out


def runnable_blocks():
    return [b for b in doc_blocks() if b[2] in RUNNABLE]


def lookup(doc, code):
    """The EXAMPLES key of a block: the table key of this document that the block's text (from its
    first command line on) starts with, the longest if several do."""
    body = code[code.index(_first_command(code)):] if _first_command(code) else code
    keys = [k for k in EXAMPLES if k.startswith(doc + ": ") and body.startswith(k[len(doc) + 2:])]
    return max(keys, key=len) if keys else None


def test_every_runnable_block_is_run_or_skipped_with_a_reason():
    found, missing = {}, []
    for doc, line, lang, code in runnable_blocks():
        key = lookup(doc, code)
        if key is None:
            missing.append(f"{doc}:{line}: {_first_command(code)[:80]}")
        else:
            assert key not in found, f"{doc}:{line} and {found[key]} both match {key!r}: make the key longer"
            found[key] = f"{doc}:{line}"
    assert not missing, "blocks neither run nor skipped with a reason (add them to EXAMPLES):\n" + "\n".join(missing)
    stale = sorted(set(EXAMPLES) - set(found))
    assert not stale, f"EXAMPLES entries that match no block (the example changed or went): {stale}"
    for key, ex in EXAMPLES.items():
        assert ex.tier in ("fast", "long", "skip") and (ex.tier != "skip" or ex.reason), key


def test_no_command_hides_in_an_unlabelled_block():
    """A block of shell or Python without a language tag would escape the table above."""
    for doc, line, lang, code in doc_blocks():
        if lang in RUNNABLE or lang in ("json", "yaml", "text", "csv"):
            continue
        first = _first_command(code)
        assert not re.match(r"(\.venv/bin/|python|horovodrun|make |import |from \S+ import )", first), \
            f"{doc}:{line}: a command in a block without a language tag: tag it ```bash or ```python"


@pytest.fixture(scope="session")
def samples(tmp_path_factory):
    """The sample data, written once by the documented command."""
    root = tmp_path_factory.mktemp("samples")
    p = subprocess.run([os.path.join(BIN, "gluon-suite"), "samples", "--out", str(root / "data")],
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    return root / "data"


def _untracked():
    p = subprocess.run(["git", "status", "--porcelain", "--untracked-files=all"], cwd=REPO,
                       capture_output=True, text=True)
    return {line[3:] for line in p.stdout.splitlines() if line.startswith("??")}


@pytest.fixture
def workdir(tmp_path, samples):
    """A working folder laid out like the repository, with the sample data; fails the test when a
    new file appeared in the source tree while it ran."""
    for name in LINKED:
        os.symlink(os.path.join(REPO, name), tmp_path / name)
    os.symlink(samples, tmp_path / "data")
    before, start = _untracked(), time.time()
    yield tmp_path
    # bench/ and gluon_suite/ are left out: other work in the same checkout adds files there while
    # a slow example runs; the examples' own leaks (hosts files, plots) were in the other folders
    new = [f for f in _untracked() - before
           if not f.startswith(("bench/", "gluon_suite/"))
           and os.path.exists(os.path.join(REPO, f)) and os.path.getmtime(os.path.join(REPO, f)) >= start - 1]
    assert not new, f"the example wrote into the source tree: {new}"
    left = _not_ignored(_written(tmp_path))
    assert not left, (f"the example left {left} in its working folder; run from a checkout as the docs say, "
                      "they would show in git status: write them under runs/ (or another ignored folder)")


def _written(folder):
    """The files a block wrote in its working ``folder`` (relative paths), leaving out the links to
    the repository, the sample data and the zoo home."""
    skip = set(LINKED) | {"data", "home"}
    out = []
    for root, dirs, files in os.walk(folder):
        rel = os.path.relpath(root, folder)
        if rel == ".":
            dirs[:] = [d for d in dirs if d not in skip]
            files = [f for f in files if f not in skip]
        out += [os.path.normpath(os.path.join(rel, f)) for f in files]
    return out


def _not_ignored(paths, scratch=[]):  # noqa: B006  (one scratch repository per session)
    """Of ``paths`` (relative to the repository root), those its .gitignore does not ignore. Asked of
    an empty repository holding only that .gitignore, so that nothing in the checkout (a folder that
    is a link, files already there) changes the answer."""
    if not paths:
        return []
    if not scratch:
        scratch.append(tempfile.mkdtemp(prefix="gitignore-"))
        subprocess.run(["git", "init", "-q", scratch[0]], check=True)
        shutil.copy(os.path.join(REPO, ".gitignore"), scratch[0])
    p = subprocess.run(["git", "check-ignore", "--no-index", "--stdin"], cwd=scratch[0], input="\n".join(paths) + "\n",
                       capture_output=True, text=True)
    assert p.returncode in (0, 1), p.stderr      # 1: none of them is ignored
    return sorted(set(paths) - set(p.stdout.splitlines()))


def environment(tmp_path):
    return dict(os.environ, GLUON_SUITE_HOME=str(tmp_path / "home"), GLUON_SUITE_QUIET="1",
                OMP_NUM_THREADS="1", MXNET_CPU_WORKER_NTHREADS="1",
                PATH=BIN + os.pathsep + os.environ.get("PATH", ""))


def shortened(key, code):
    for old, new in EXAMPLES[key].subs:
        assert old in code, f"{key}: substitution {old!r} matches nothing: update EXAMPLES"
        code = code.replace(old, new)
    return code


def run_block(key, lang, code, cwd, timeout=900):
    """Run one block (after its entry's ``before`` and substitutions) in ``cwd``; fails the test
    on a non-zero exit or a traceback. Returns the process."""
    ex, env = EXAMPLES[key], environment(cwd)
    if ex.before:
        p = subprocess.run(["bash", "-e", "-c", ex.before], cwd=cwd, env=env, capture_output=True,
                           text=True, timeout=timeout)
        assert p.returncode == 0, f"{key}: set-up failed\n{p.stdout[-2000:]}\n{p.stderr[-3000:]}"
    code = shortened(key, code)
    if lang.startswith("py"):
        cmd = [PY, "-c", ex.prelude + code]
    else:
        cmd = ["bash", "-e", "-o", "pipefail", "-c", code]
    p = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    assert p.returncode == 0 and "Traceback" not in p.stderr, \
        f"{key} (run as)\n{code}\n--- stdout\n{p.stdout[-2000:]}\n--- stderr\n{p.stderr[-4000:]}"
    if ex.check:
        ex.check(p.stdout)
    return p


def _params(tier):
    out = []
    for doc, line, lang, code in runnable_blocks():
        key = lookup(doc, code)
        if key is None or EXAMPLES[key].tier != tier:
            continue
        marks = [pytest.mark.long] if tier == "long" else []
        if "horovodrun" in code + repr(EXAMPLES[key]) or "gluon-suite launch" in code:
            marks.append(pytest.mark.horovod)   # the block starts workers
        out.append(pytest.param(key, lang, code, id=f"{doc}:{line}", marks=marks))
    return out


@pytest.mark.parametrize("key,lang,code", _params("fast"))
def test_fast_example_runs_as_written(key, lang, code, workdir):
    run_block(key, lang, code, workdir, timeout=300)


@pytest.mark.parametrize("key,lang,code", _params("long"))
def test_long_example_runs_as_written(key, lang, code, workdir):
    run_block(key, lang, code, workdir)


# -- what some examples print, against what their page or the zoo's card says ------------------------

def block(doc, first_line):
    """The code of the block of ``doc`` whose text from its first command line starts with ``first_line``."""
    for d, line, lang, code in runnable_blocks():
        if d == doc and _first_command(code) and code[code.index(_first_command(code)):].startswith(first_line):
            return code
    raise AssertionError(f"{doc} has no code block starting with {first_line!r}")


def test_cv_evaluate_reports_the_cards_accuracy(workdir):
    cmd = block("docs/cv.md", ".venv/bin/python scripts/cv/evaluate.py --model resnest14_digits").splitlines()[0]
    p = subprocess.run(["bash", "-c", cmd], cwd=workdir, env=environment(workdir), capture_output=True,
                       text=True, timeout=300)
    assert p.returncode == 0, p.stderr[-2000:]
    acc = float(re.search(r"test accuracy ([\d.]+)", p.stdout).group(1))
    assert acc == pytest.approx(card("resnest14_digits")["metric"]["value"], abs=1e-4)


def test_graph_sampling_snippet_gives_one_row_per_output_node(workdir):
    code = block("docs/graph.md", "import mxnet as mx\nimport numpy as np\nimport gluon_suite.graph as dgl")
    p = subprocess.run([PY, "-c", code + "\nprint(logits.shape[1], logits.shape[0] == len(output_nodes))\n"],
                       cwd=workdir, env=environment(workdir), capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr[-2000:]
    assert p.stdout.split()[-2:] == ["3", "True"]


@pytest.mark.long
def test_model_zoo_publishing_and_layers_as_written(workdir):
    """docs/model_zoo.md's publishing block (a 2-epoch run, published with a tag, then the CLI
    publish) and its layers block (list, evaluate the tagged checkpoint, remove it), in one folder."""
    run_block("docs/model_zoo.md: .venv/bin/python scripts/cv/train_classification.py --model resnest14_digits "
              "--image-size 16", "bash",
              block("docs/model_zoo.md", ".venv/bin/python scripts/cv/train_classification.py"), workdir)
    env = environment(workdir)
    out = [subprocess.run(["bash", "-c", c], cwd=workdir, env=env, capture_output=True, text=True).stdout
           for c in block("docs/model_zoo.md", ".venv/bin/gluon-suite zoo list 'resnest14*'").splitlines() if c]
    assert re.search(r"resnest14_digits\.short\s+local", out[0]) and re.search(r"resnest14_digits\s+shipped", out[0])
    best = json.load(open(workdir / "runs" / "r14" / "resnest14_digits.json"))["metric"]["value"]
    assert float(re.search(r"test accuracy ([\d.]+)", out[1]).group(1)) == pytest.approx(best, abs=1e-4)
    assert "removed the local record of 'resnest14_digits.short'" in out[2]
