"""The nine GLUE tasks by name (``--task_name``): each task's file layout in the official GLUE
distribution, its reader, its metrics (our own NumPy code) and its main metric, the one that picks
the best epoch (GluonNLP's choice: a task's first metric).

Layouts (0-based columns; "last" is the row's last column):

============ ========================================== ================= ==================
task         files (header?)                            text columns      label
============ ========================================== ================= ==================
CoLA         train.tsv, dev.tsv (no header, 4 columns)  3                 1: 0/1
SST-2        train.tsv, dev.tsv (sentence, label)       0                 1: 0/1
MRPC         train.tsv, dev.tsv (Quality, #1 ID, ...)   3, 4              0: 0/1
STS-B        train.tsv, dev.tsv (index, genre, ...)     7, 8              last: score 0-5
QQP          train.tsv, dev.tsv (id, qid1, qid2, ...)   3, 4              5: 0/1
MNLI         train.tsv, dev_matched.tsv,                8, 9              last: gold_label
             dev_mismatched.tsv
QNLI         train.tsv, dev.tsv (index, question, ...)  1, 2              3: (not_)entailment
RTE          train.tsv, dev.tsv (index, sentence1, ...) 1, 2              3: (not_)entailment
WNLI         train.tsv, dev.tsv (index, sentence1, ...) 1, 2              3: 0/1
============ ========================================== ================= ==================
"""
import dataclasses
import os

import numpy as np

from ..utils.errors import UserError
from ..utils.readers import data_reader


@dataclasses.dataclass(frozen=True)
class GlueTask:
    """One GLUE task: ``header`` (the names expected at the columns read; None: the file has no
    header row and ``columns`` columns), ``text``/``label`` column indices (-1: the last),
    ``labels`` (None: a regression score), ``dev`` ({split name: file}), ``metrics`` and ``main``."""
    name: str
    text: tuple
    label: int
    labels: tuple
    metrics: tuple
    main: str
    header: dict = None
    columns: int = 0
    dev: tuple = (("dev", "dev.tsv"),)


_NLI2 = ("not_entailment", "entailment")
TASKS = {t.name: t for t in (
    GlueTask("CoLA", (3,), 1, ("0", "1"), ("mcc",), "mcc", columns=4),
    GlueTask("SST-2", (0,), 1, ("0", "1"), ("accuracy",), "accuracy", {0: "sentence", 1: "label"}),
    GlueTask("MRPC", (3, 4), 0, ("0", "1"), ("accuracy", "f1"), "accuracy",
             {0: "Quality", 3: "#1 String", 4: "#2 String"}),
    GlueTask("STS-B", (7, 8), -1, None, ("pearson", "spearman"), "pearson",
             {7: "sentence1", 8: "sentence2", -1: "score"}),
    GlueTask("QQP", (3, 4), 5, ("0", "1"), ("accuracy", "f1"), "accuracy",
             {3: "question1", 4: "question2", 5: "is_duplicate"}),
    GlueTask("MNLI", (8, 9), -1, ("contradiction", "entailment", "neutral"), ("accuracy",), "accuracy",
             {8: "sentence1", 9: "sentence2", -1: "gold_label"},
             dev=(("dev_matched", "dev_matched.tsv"), ("dev_mismatched", "dev_mismatched.tsv"))),
    GlueTask("QNLI", (1, 2), 3, _NLI2, ("accuracy",), "accuracy", {1: "question", 2: "sentence", 3: "label"}),
    GlueTask("RTE", (1, 2), 3, _NLI2, ("accuracy",), "accuracy", {1: "sentence1", 2: "sentence2", 3: "label"}),
    GlueTask("WNLI", (1, 2), 3, ("0", "1"), ("accuracy",), "accuracy", {1: "sentence1", 2: "sentence2", 3: "label"}),
)}


def task_of(name):
    """The task called ``name`` (case and '-' ignored: sst2, STS-B, mnli); a UserError otherwise."""
    key = {t.lower().replace("-", ""): t for t in TASKS}.get(str(name).lower().replace("-", ""))
    if key is None:
        raise UserError(f"--task_name {name!r} is not a GLUE task; choose one of {', '.join(TASKS)}")
    return TASKS[key]


def main_key(task):
    """The log key of the task's main metric (the first dev split's)."""
    return f"{task.dev[0][0]}_{task.main}"


def task_files(task, data_dir):
    """``(train, {split: dev file})`` of ``task`` in ``data_dir`` (the task's folder, or a GLUE
    folder holding it under the task's name); a UserError naming a missing file."""
    if os.path.isdir(os.path.join(data_dir, task.name)):
        data_dir = os.path.join(data_dir, task.name)
    files = {"train": os.path.join(data_dir, "train.tsv"), **{k: os.path.join(data_dir, f) for k, f in task.dev}}
    for path in files.values():
        if not os.path.isfile(path):
            raise UserError(f"--data-dir {data_dir} lacks {os.path.basename(path)}, which {task.name} needs; give "
                            f"the folder of GLUE's {task.name} files (or gluon-suite samples' data/glue/{task.name})")
    return files.pop("train"), files


@data_reader("GLUE task TSV file", path="path",
             checks=("utf-8 text", "the task's header", "the task's column count", "labels among the task's labels",
                     "scores finite numbers"))
def read_glue(path, task):
    """Read one of ``task``'s files: ``(texts, y)``, texts as tuples of one or two strings, y the
    label ids (int32, into ``task.labels``) or the scores (float32). A bad row raises a one-line
    UserError naming the file and the line."""
    try:
        f = open(path, encoding="utf-8-sig")   # GLUE's MRPC files start with a byte-order mark
    except OSError as exc:
        raise UserError(f"cannot read {path}: {exc.strerror or exc}") from None
    texts, y = [], []
    with f:
        width, start = task.columns, 1
        if task.header:
            head = f.readline().rstrip("\r\n").split("\t")
            width, start = len(head), 2
            for col, name in task.header.items():
                if len(head) < max(task.text + (task.label,)) + 1 or head[col] != name:
                    raise UserError(f"{path}:1: not {task.name}'s header (expected {name!r} in column "
                                    f"{col % len(head) + 1 if head else col}, got {' | '.join(head)[:120]}); "
                                    f"give --data-dir the folder of GLUE's {task.name} files")
        for no, line in enumerate(f, start=start):
            if not line.strip():
                continue
            parts = line.rstrip("\r\n").split("\t")
            if len(parts) != width:
                raise UserError(f"{path}:{no}: expected {width} tab-separated columns ({task.name}), got "
                                f"{len(parts)}; fix or remove the line")
            raw = parts[task.label].strip()
            if task.labels is None:
                try:
                    value = float(raw)
                except ValueError:
                    value = float("nan")
                if not np.isfinite(value):
                    raise UserError(f"{path}:{no}: {task.name} score {raw!r} is not a number; fix or remove "
                                    "the line")
                y.append(value)
            elif raw not in task.labels:
                raise UserError(f"{path}:{no}: {task.name} label {raw!r} is not one of {', '.join(task.labels)}; "
                                "fix or remove the line")
            else:
                y.append(task.labels.index(raw))
            texts.append(tuple(parts[c] for c in task.text))
    if not texts:
        raise UserError(f"{path} has no data rows; give --data-dir the folder of GLUE's {task.name} files")
    return texts, np.array(y, np.float32 if task.labels is None else np.int32)


# ---- metrics ------------------------------------------------------------------------------------
def mcc(pred, gold):
    """Matthews correlation of binary labels: (TP TN - FP FN) / sqrt of the four margins' product;
    0 when a margin is empty."""
    pred, gold = np.asarray(pred) == 1, np.asarray(gold) == 1
    tp, tn = float((pred & gold).sum()), float((~pred & ~gold).sum())
    fp, fn = float((pred & ~gold).sum()), float((~pred & gold).sum())
    den = (tp + fp) * (tp + fn) * (tn + fp) * (tn + fn)
    return (tp * tn - fp * fn) / np.sqrt(den) if den else 0.0


def pearson(x, y):
    """Pearson's correlation; 0 when either side is constant."""
    x, y = np.asarray(x, np.float64), np.asarray(y, np.float64)
    dx, dy = x - x.mean(), y - y.mean()
    den = np.sqrt((dx * dx).sum() * (dy * dy).sum())
    return float((dx * dy).sum() / den) if den else 0.0


def average_ranks(x):
    """Ranks 1..n of ``x``, tied values sharing the average of their ranks."""
    x = np.asarray(x, np.float64)
    order = np.argsort(x, kind="stable")
    ranks = np.empty(len(x))
    i = 0
    while i < len(x):
        j = i
        while j + 1 < len(x) and x[order[j + 1]] == x[order[i]]:
            j += 1
        ranks[order[i:j + 1]] = (i + j) / 2 + 1
        i = j + 1
    return ranks


def spearman(x, y):
    """Spearman's correlation: Pearson's on the average ranks."""
    return pearson(average_ranks(x), average_ranks(y))


def task_metrics(task, pred, gold, prefix):
    """``{prefix_metric: value}`` of ``task``'s metrics on predictions (label ids or scores)."""
    from .tasks import accuracy, binary_f1
    fns = {"accuracy": accuracy, "f1": binary_f1, "mcc": mcc, "pearson": pearson, "spearman": spearman}
    return {f"{prefix}_{m}": float(fns[m](pred, gold)) for m in task.metrics}


def predict(net, arrays, dtype, batch=256):
    """The network's outputs on ``(ids, types, valid lengths)`` in batches: label ids, or scores
    for a one-output (regression) head."""
    import mxnet as mx
    outs = []
    for s in range(0, len(arrays[0]), batch):
        ids, types, vlen = (a[s:s + batch] for a in arrays)
        outs.append(net(mx.nd.array(ids), mx.nd.array(types), mx.nd.array(vlen, dtype=dtype))
                    .astype("float32").asnumpy())
    out = np.concatenate(outs)
    return out[:, 0] if out.shape[1] == 1 else out.argmax(axis=1).astype(np.int32)


def glue_data(task, data_dir):
    """``task``'s files in ``data_dir`` read: ``(train (texts, y), {split: (texts, y)})``."""
    train, devs = task_files(task, data_dir)
    return read_glue(train, task), {k: read_glue(p, task) for k, p in devs.items()}


def finetune_glue(cfg, backbone, tok, vocab, comm, log, ctx, train_loop):
    """``finetune_classification`` for a GLUE task (``cfg.task_name`` with ``cfg.data_dir``): a
    classifier with a softmax cross-entropy, or for STS-B a one-output head with a squared loss;
    every dev split evaluated with the task's metrics, the best epoch picked by its main metric."""
    import mxnet as mx
    from mxnet import gluon

    from ..utils.devices import float16_network
    from .tasks import BertClassifier, encode_pairs
    task = task_of(cfg.task_name)
    (tr_texts, tr_y), devs = glue_data(task, cfg.data_dir)
    tr = (*encode_pairs(tr_texts, tok, vocab, cfg.max_len), tr_y)
    dv = {k: (encode_pairs(t, tok, vocab, cfg.max_len), y) for k, (t, y) in devs.items()}
    log(f"GLUE {task.name}: {len(tr_y)} training rows, " + ", ".join(f"{len(y)} {k}" for k, (_, y) in dv.items())
        + f"; main metric {main_key(task)}")
    mx.random.seed(cfg.seed)
    regression = task.labels is None
    net = BertClassifier(backbone, 1 if regression else len(task.labels))
    net.out.initialize(mx.init.Normal(0.02))
    net.drop.initialize()
    dtype = cfg.dtype
    float16_network(net, dtype, list(ctx or [mx.current_context()]))
    lossf = gluon.loss.L2Loss() if regression else gluon.loss.SoftmaxCrossEntropyLoss()

    def loss_of(b):   # valid lengths in the network's dtype, the loss in float32
        out = net(b[0], b[1], b[2].astype(dtype)).astype("float32", copy=False)
        return lossf(out[:, 0], b[3]) if regression else lossf(out, b[3])

    def evaluate():
        metrics = {}
        for split, (arrays, gold) in dv.items():
            metrics.update(task_metrics(task, predict(net, arrays, dtype), gold, split))
        return metrics

    return train_loop(cfg, net, tr, loss_of, comm, log, evaluate, ctx=ctx, best=main_key(task))
