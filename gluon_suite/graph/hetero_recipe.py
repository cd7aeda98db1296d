"""Entity classification on a heterograph with an R-GCN (``hetero_models.HeteroRGCN``), as DGL's
heterograph R-GCN example trains it: ``train_entity_classification(config, comm)`` and
``scripts/graph/train_entity_classification.py``.

Data: the embedded citation heterograph (papers, words, citations: ``link_data.citation_heterograph``),
a LINQS folder as the same heterograph (``--dataset linqs --data-dir``), or a heterograph folder
(``nodes.tsv``/``edges.tsv``, ``--dataset tsv --data-dir``). The target type (``--category``, default
``paper``) carries the labels; with seed s, ``--train-per-class`` labelled nodes of each class are
drawn for training and the rest of the labelled nodes are the test set. Every node type starts from
a learnable embedding (or, with ``--use-features``, from the target type's ``feat`` rows projected).

Training is full-graph (one step an epoch over the training nodes, the loss summed over them and the
gradients averaged over the workers, each worker holding the whole graph), with Adam, any
distributed algorithm, ``--elastic``, checkpoints and ``--publish``, on the shared loop; the test
accuracy of the worker-averaged model every 10 epochs and at the end."""
import contextlib
import dataclasses
from typing import ClassVar

import mxnet as mx
import numpy as np
from mxnet import autograd, gluon

from ..distributed import DistributedTrainer
from ..model_zoo import get_model, register_model
from ..utils import UserError
from ..utils.runconfig import option
from ..utils.validate import existing_dir, float_range, nonneg_float, output_dir, positive_float, positive_int
from .hetero_models import HeteroRGCN
from .recipes import _GraphConfig, _end_run, _start, _train

RGCN_ZOO = "rgcn_citation"


@dataclasses.dataclass
class EntityConfig(_GraphConfig):
    """``train_entity_classification``'s configuration (its script's flags, ``_`` for ``-``)."""
    SCRIPT: ClassVar[str] = "scripts/graph/train_entity_classification.py"
    DATASETS_WITH_FILES: ClassVar[tuple] = ("linqs", "tsv")
    out: str = option("runs/graph_entity", output_dir, help="run folder: log.jsonl, checkpoints, config.json")
    dataset: str = option("citation", choices=("citation", "linqs", "tsv"),
                          help="citation: the embedded paper/word/citation heterograph; linqs: {name}.content/.cites "
                               "in --data-dir as that heterograph; tsv: a nodes.tsv/edges.tsv heterograph folder")
    data_dir: str = option(None, existing_dir, help="the folder of --dataset linqs or tsv")
    name: str = option("cora", help="LINQS data set name")
    category: str = option("paper", help="the node type to classify (it carries the labels)")
    model: str = option("rgcn", choices=("rgcn",), flag=False)
    hidden: int = option(16, positive_int, help="hidden units")
    num_bases: int = option(None, positive_int, help="basis matrices shared by the relations (default: one "
                            "weight per relation)")
    use_features: bool = option(False, help="start the target type from its feat rows (others from embeddings)")
    train_per_class: int = option(20, positive_int, help="labelled training nodes drawn per class")
    epochs: int = option(50, positive_int)
    lr: float = option(0.01, positive_float)
    wd: float = option(5e-4, nonneg_float)
    dropout: float = option(0.0, float_range(0, 1, high_open=True, what="a fraction"))


@register_model(RGCN_ZOO, task="entity-classification")
def rgcn_citation(hidden=16, classes=3, num_bases=None, dropout=0.0):
    """A two-layer R-GCN over learnable embeddings for the embedded citation heterograph (180 papers, 40 words)."""
    from .link_data import citation_heterograph
    g, _ = citation_heterograph()
    return HeteroRGCN({t: g.num_nodes(t) for t in g.ntypes}, g.canonical_etypes, hidden, classes, num_bases,
                      dropout=dropout)


def entity_dataset(cfg):
    """``(heterograph, {node type: class names})`` of the configured data set."""
    from .link_data import citation_heterograph, linqs_heterograph, load_hetero_tsv
    if cfg["dataset"] in ("citation", "linqs"):
        g, names = citation_heterograph() if cfg["dataset"] == "citation" else linqs_heterograph(cfg["data_dir"],
                                                                                                  cfg["name"])
        return g, {"paper": list(names)}
    g, _, names = load_hetero_tsv(cfg["data_dir"])
    return g, names


def _split(labels, classes, per_class, seed):
    rs = np.random.RandomState(seed)
    known = labels >= 0
    train = np.concatenate([rs.permutation(np.flatnonzero(known & (labels == c)))[:per_class]
                            for c in range(classes)])
    test = np.setdiff1d(np.flatnonzero(known), train)
    if not len(test):
        raise UserError(f"every labelled node goes to training ({per_class} per class): none is left to test on; "
                        "lower --train-per-class")
    return np.sort(train), test


def train_entity_classification(config, comm=None, log=print, ctx=None):
    """Train an R-GCN entity classifier (``config``: an ``EntityConfig`` or a mapping of its keys);
    returns ``{'test_acc', 'history', ...}`` as the node recipe does."""
    cfg, comm = _start(EntityConfig, config, comm, log)
    with ctx or contextlib.nullcontext():
        return _train_entity(cfg, comm, log)


def _train_entity(cfg, comm, log):
    g, names = entity_dataset(cfg)
    cat = cfg["category"]
    if cat not in g.ntypes or "label" not in g.nodes[cat].data or cat not in names:
        have = [t for t in g.ntypes if "label" in g.nodes[t].data]
        raise UserError(f"--category {cat}: the graph's labelled node types are {', '.join(have) or 'none'}")
    labels = g.nodes[cat].data["label"].asnumpy().astype(np.int64)
    classes = len(names[cat])
    train, test = _split(labels, classes, int(cfg["train_per_class"]), int(cfg["seed"]))
    in_feats = {cat: g.nodes[cat].data["feat"].shape[1]} if cfg["use_features"] else None
    if cfg["use_features"] and "feat" not in g.nodes[cat].data:
        raise UserError(f"--use-features: the {cat} nodes have no feat rows; drop the flag")
    if cfg["dataset"] == "citation" and not cfg["use_features"]:
        net = get_model(RGCN_ZOO, hidden=cfg["hidden"], classes=classes, num_bases=cfg["num_bases"],
                        dropout=cfg["dropout"])
    else:
        net = HeteroRGCN({t: g.num_nodes(t) for t in g.ntypes}, g.canonical_etypes, cfg["hidden"], classes,
                         cfg["num_bases"], in_feats, cfg["dropout"])
    feats = {cat: g.nodes[cat].data["feat"]} if cfg["use_features"] else None
    net.initialize(mx.init.Xavier())
    net(g, feats)   # shapes now: an elastic state copies every parameter
    trainer = DistributedTrainer(net.collect_params(), "adam", {"learning_rate": cfg["lr"], "wd": cfg["wd"]},
                                 algorithm=cfg.algorithm_object(), communicator=comm)
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
    y = mx.nd.array(labels)

    def step(state, idx, step_size):
        seeds = mx.nd.array(train[idx])
        with autograd.record():
            out = mx.nd.take(net(g, feats)[cat], seeds)
            loss = loss_fn(out, mx.nd.take(y, seeds)).sum()
        loss.backward()
        trainer.step(step_size)
        return {"loss": loss, "seen": len(idx)}

    def evaluate():
        pred = net(g, feats)[cat].argmax(axis=1).asnumpy()
        return (pred[test] == labels[test]).mean()

    history = _train(cfg, net, trainer, len(train), len(train), step, evaluate, log)
    return _end_run(cfg, history, net, trainer, log)
