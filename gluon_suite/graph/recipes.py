"""Training recipes for graphs (node and graph classification), on one process or many: node
classification shards the training nodes (or sampled seed batches) over workers, graph
classification shards the graphs; gradients go through ``DistributedTrainer`` with any algorithm.

Both recipes run the shared loop (``distributed.loop.fit``) with a fixed world or, with
``elastic``, under Horovod Elastic: every epoch's shuffled order of the training samples (nodes or
graphs) is dealt out in global steps of ``batch_size x workers``, an evaluation on the averaged
model every 10 epochs and at the end goes into ``log.jsonl`` (epoch, loss: the epoch's mean over
all workers, test_acc, workers, elapsed_s), and every epoch ends with a checkpoint
(``last.rank{R}.params``/``.states`` and ``state.json``; one copy by rank 0 in an elastic run).
``resume`` is ``none``, ``auto`` (continue ``out`` if it holds a checkpoint) or a run folder. Every
step reseeds MXNet's generator and the neighbour sampler from (seed, step, rank), so a resumed run
continues exactly as the uninterrupted run would; a fixed-size run resumes with the same number of
workers, an elastic one with any.
"""
import argparse
import contextlib
import dataclasses
import os
from typing import ClassVar

import mxnet as mx
import numpy as np
from mxnet import autograd, gluon

from ..distributed import DistributedTrainer
from ..distributed.loop import RunFolder, fit
from ..distributed.options import CompressionOptions, ElasticOptions
from ..distributed.sampler import EpochSampler
from ..model_zoo import get_model
from ..utils import UserError
from ..utils.fileio import atomic_path
from ..model_zoo.publish import PublishOptions
from ..utils.runconfig import RecipeConfig, RunOptions, option
from ..utils.validate import (existing_dir, float_range, nonneg_float, output_dir, positive_float,
                              positive_int)
from .batch import batch
from .sampling import sample_blocks

def fanout(text):
    """A type: neighbours sampled per layer, a whole number >= 1 or -1 (all)."""
    try:
        value = int(str(text))
    except ValueError:
        value = 0
    if value == 0 or value < -1:
        raise argparse.ArgumentTypeError(f"must be a whole number >= 1, or -1 for all neighbours, got {text!r}")
    return value


NODE_LAYERS = 2   # NodeClassifier's graph layers: one sampled block (one fanout) per layer


@dataclasses.dataclass
class _GraphConfig(RecipeConfig, PublishOptions, ElasticOptions, CompressionOptions, RunOptions):
    """What both graph recipes share: a run folder resumable from its last epoch."""
    STATE_KEYS: ClassVar[tuple] = ("epoch", "history", "workers")
    CHECKPOINT_FILES: ClassVar[tuple] = ("last.rank0.params", "last.rank0.states")
    DATASETS_WITH_FILES: ClassVar[tuple] = ()

    def check(self, comm):
        if self.dataset in self.DATASETS_WITH_FILES and not self.data_dir:
            raise UserError(f"dataset {self.dataset} reads files from a folder: give --data-dir")


@dataclasses.dataclass
class NodeConfig(_GraphConfig):
    """``train_node_classification``'s configuration (the flags of its script, with ``_`` for ``-``)."""
    SCRIPT: ClassVar[str] = "scripts/graph/train_node_classification.py"
    DATASETS_WITH_FILES: ClassVar[tuple] = ("linqs",)
    out: str = option("runs/graph_node", output_dir, help="run folder: log.jsonl, checkpoints, config.json")
    dataset: str = option("sbm", choices=("karate", "sbm", "linqs"))
    data_dir: str = option(None, existing_dir, help="folder of {name}.content and {name}.cites (linqs)")
    name: str = option("cora", help="LINQS data set name")
    drop_dangling_cites: bool = option(False, help="skip cites lines naming a paper absent from the content file "
                                       "(else an error)")
    model: str = option("gcn", choices=("gcn", "gat", "sage"))
    hidden: int = option(16, positive_int, help="hidden units per layer")
    epochs: int = option(100, positive_int)
    lr: float = option(0.01, positive_float)
    wd: float = option(5e-4, nonneg_float)
    dropout: float = option(0.5, float_range(0, 1, high_open=True, what="a fraction"))
    sampled: bool = option(False, help="train on sampled neighbourhood blocks")
    fanouts: list = option([10, 10], fanout, many=True, help="neighbours sampled per layer (-1: all)")
    batch_size: int = option(64, positive_int, help="seed nodes per sampled mini-batch")

    def check(self, comm):
        super().check(comm)
        if self.sampled and len(self.fanouts) != NODE_LAYERS:
            raise UserError(f"--fanouts gives {len(self.fanouts)} value(s) but the {self.model} model has "
                            f"{NODE_LAYERS} layers, one fanout each; give {NODE_LAYERS} values, e.g. --fanouts 10 10")


@dataclasses.dataclass
class GraphConfig(_GraphConfig):
    """``train_graph_classification``'s configuration."""
    SCRIPT: ClassVar[str] = "scripts/graph/train_graph_classification.py"
    DATASETS_WITH_FILES: ClassVar[tuple] = ("tu",)
    out: str = option("runs/graph_cls", output_dir, help="run folder: log.jsonl, checkpoints, config.json")
    dataset: str = option("families", choices=("families", "tu"))
    data_dir: str = option(None, existing_dir, help="folder of the TU text files ({name}_A.txt etc.)")
    name: str = option("MUTAG", help="TU data set name, the files' prefix (e.g. MUTAG)")
    model: str = option("gin", choices=("gin",), flag=False)
    hidden: int = option(32, positive_int, help="hidden units per layer")
    epochs: int = option(40, positive_int)
    lr: float = option(0.01, positive_float)
    batch_size: int = option(20, positive_int, help="graphs per worker and step")


def _train(cfg, net, trainer, n, batch_size, step, evaluate, log):
    """Both recipes' training (see the module docstring): ``n`` training samples, ``batch_size`` per
    worker, ``step(state, idx, step_size)`` per global step (returning its loss sum and sample
    count), ``evaluate()`` -> test accuracy. Returns the history."""
    run = RunFolder(cfg["out"], cfg["resume"], trainer.communicator, elastic=bool(cfg["elastic"]),
                    required=("epoch", "history"))

    def end_epoch(end):
        if end.epoch % 10 and end.epoch != int(cfg["epochs"]):
            return None
        with trainer.averaged():
            acc = float(evaluate())
        rec = {"epoch": end.epoch, "loss": end.totals["loss"] / max(end.totals["seen"], 1), "test_acc": acc,
               "workers": end.comm.size, "elapsed_s": end.elapsed_s}
        if end.comm.rank == 0:
            log(f"epoch {end.epoch:4d}  loss {rec['loss']:.4f}  test acc {acc:.4f}  ({end.comm.size} workers)")
        return rec

    state = fit(run, net, trainer, EpochSampler(n, seed=int(cfg["seed"])), batch_size, int(cfg["epochs"]), step,
                end_epoch, stats=("loss", "seen"), elastic=bool(cfg["elastic"]),
                commit_every=int(cfg["commit_every"]), stop_after=cfg["stop_after_epochs"], log=log)
    return state.history


def _schedule(cfg, batch_size, size):
    """Adam's rate for ``ref_workers`` (default: the starting count) x ``batch_size`` samples,
    following the worker count when an elastic job is resized."""
    from ..optim import ElasticRamp
    return ElasticRamp(lambda t: float(cfg["lr"]), ref_batch=batch_size * int(cfg["ref_workers"] or size),
                       ramp_steps=int(cfg["ramp_steps"]), global_batch=batch_size * size)


def _step_seed(seed, step, rank):
    """The seed of (seed, step, rank): MXNet's generator and the neighbour sampler are reseeded
    with it every step."""
    return (int(seed) * 1_000_003 + step * 7919 + rank) % (2 ** 31)


def _end_run(cfg, history, net, trainer, log):
    """The end of every run, fixed-size or elastic: the averaged model in ``model.params``, then
    the result, published with ``publish``. The communicator is the trainer's: an elastic job's
    world may have changed since the start."""
    comm = trainer.communicator
    _save_averaged(net, trainer, comm, cfg["out"])
    result = {"test_acc": history[-1]["test_acc"] if history else None, "history": history, "published": None,
              "rank": comm.rank}
    if cfg["publish"] and comm.rank == 0 and history:
        from ..model_zoo.publish import publish_run
        data = f"{cfg['dataset']} (seed {cfg['seed']}) test split"
        metric = {"name": "test accuracy", "value": result["test_acc"], "dataset": data}
        result["published"] = publish_run(cfg, cfg.to_dict(), os.path.join(cfg["out"], "model.params"),
                                          cfg.SCRIPT, metric, comm.size)
        log(f"published {result['published']['file_name']} into {cfg['publish']}")
    return result


def _save_averaged(net, trainer, comm, out):
    """Every worker joins the averaging (a collective); rank 0 writes the model."""
    with trainer.averaged():
        if comm.rank == 0:
            with atomic_path(os.path.join(out, "model.params")) as tmp:
                net.save_parameters(tmp)
    comm.barrier(name="recipe.done")


def node_dataset(cfg):
    """``(graph, train_idx, test_idx, classes)`` for karate, sbm or linqs."""
    from .data import karate_club, load_linqs, sbm_graph
    rs = np.random.RandomState(cfg["seed"])
    if cfg["dataset"] == "karate":
        g = karate_club()
        return g, np.array([0, 33]), np.arange(1, 33), 2
    if cfg["dataset"] == "sbm":
        g = sbm_graph(seed=cfg["seed"])
        perm = rs.permutation(g.num_nodes())
        return g, perm[:60], perm[150:], 3
    if cfg["dataset"] == "linqs":
        if not cfg["data_dir"]:
            raise UserError("dataset linqs reads {name}.content/{name}.cites: pass --data-dir")
        g, classes = load_linqs(cfg["data_dir"], cfg["name"],
                                dangling="drop" if cfg["drop_dangling_cites"] else "error")
        labels = g.ndata["label"].asnumpy().astype(int)
        train = np.concatenate([rs.permutation(np.flatnonzero(labels == c))[:20] for c in range(len(classes))])
        rest = np.setdiff1d(np.arange(g.num_nodes()), train)
        if not len(rest):
            raise UserError(f"{cfg['data_dir']}: all {g.num_nodes()} papers go to training (20 per class), none "
                            "is left to test on; give a data set with more than 20 papers per class")
        return g, train, rs.permutation(rest)[:1000], len(classes)
    raise UserError(f"unknown dataset {cfg['dataset']!r}; choose karate, sbm or linqs")


def _start(config_class, config, comm, log):
    """A recipe's start: its checked configuration (``config`` may be a mapping), saved into the
    run folder, and the communicator (the job's, by default)."""
    if comm is None:
        from ..distributed import get_communicator
        comm = get_communicator()
    cfg = config_class.from_dict(config).checked(comm, log)
    cfg.save(comm)
    mx.random.seed(cfg["seed"])
    return cfg, comm


def train_node_classification(config, comm=None, log=print, ctx=None):
    """Train a zoo node classifier (``config``: a ``NodeConfig`` or a mapping of its keys) on
    ``ctx`` (default: the current context); returns ``{'test_acc', 'history'}`` (``test_acc``
    None when stopped before the first evaluation)."""
    cfg, comm = _start(NodeConfig, config, comm, log)
    with ctx or contextlib.nullcontext():
        return _train_node(cfg, comm, log)


def _train_node(cfg, comm, log):
    g, train, test, classes = node_dataset(cfg)
    if cfg["model"] in ("gcn", "gat") and not cfg["sampled"]:
        g = g.add_self_loop()
    feat, labels = g.ndata["feat"], g.ndata["label"]
    net = get_model(cfg["model"], in_feats=feat.shape[1], classes=classes, hidden=cfg["hidden"],
                    dropout=cfg["dropout"])
    net.initialize(mx.init.Xavier())
    opt = {"learning_rate": cfg["lr"], "wd": cfg["wd"]}
    if cfg["sampled"]:  # mini-batches of seed nodes: the global batch follows the worker count
        opt["lr_scheduler"] = _schedule(cfg, int(cfg["batch_size"]), comm.size)
        blocks = sample_blocks(g, train[:1], cfg["fanouts"], np.random.RandomState(0))
        net(blocks, mx.nd.take(feat, mx.nd.array(blocks[0].src_nodes)))
    else:
        net(g, feat)   # shapes now: an elastic state copies every parameter
    trainer = DistributedTrainer(net.collect_params(), "adam", opt,
                                 algorithm=cfg.algorithm_object(), communicator=comm)
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()

    def step(state, idx, step_size):
        seeds = train[idx]
        seed = _step_seed(cfg["seed"], state.step, trainer.communicator.rank)
        mx.random.seed(seed)
        with autograd.record():
            if cfg["sampled"]:
                blocks = sample_blocks(g, seeds, cfg["fanouts"], np.random.RandomState(seed))
                out = net(blocks, mx.nd.take(feat, mx.nd.array(blocks[0].src_nodes)))
            else:
                out = mx.nd.take(net(g, feat), mx.nd.array(seeds))
            loss = loss_fn(out, mx.nd.take(labels, mx.nd.array(seeds))).sum()
        loss.backward()
        trainer.step(step_size)
        return {"loss": loss, "seen": len(seeds)}

    def evaluate():
        pred = net(g, feat).argmax(axis=1).asnumpy()
        return (pred[test] == labels.asnumpy()[test]).mean()

    # full graph: one step per epoch over every training node (the batch is the whole set)
    per_worker = int(cfg["batch_size"]) if cfg["sampled"] else len(train)
    history = _train(cfg, net, trainer, len(train), per_worker, step, evaluate, log)
    return _end_run(cfg, history, net, trainer, log)


def graph_dataset(cfg):
    """``(graphs, labels, classes)`` for the generated families or a TU data set."""
    rs = np.random.RandomState(cfg["seed"])
    if cfg["dataset"] == "families":
        from .data import graph_families
        graphs, labels = graph_families(40, rs)
        return graphs, labels, 4
    if cfg["dataset"] == "tu":
        from .data import load_tu
        if not cfg["data_dir"]:
            raise UserError("dataset tu reads {name}_A.txt etc.: pass --data-dir and --name")
        graphs, labels = load_tu(cfg["data_dir"], cfg["name"])
        return graphs, labels, int(labels.max()) + 1
    raise UserError(f"unknown dataset {cfg['dataset']!r}; choose families or tu")


def train_graph_classification(config, comm=None, log=print, ctx=None):
    """Train a GIN graph classifier (75/25 split; ``config``: a ``GraphConfig`` or a mapping of
    its keys) on ``ctx``; returns ``{'test_acc', 'history'}`` (``test_acc`` None when stopped
    before the first evaluation)."""
    cfg, comm = _start(GraphConfig, config, comm, log)
    with ctx or contextlib.nullcontext():
        return _train_graph(cfg, comm, log)


def _train_graph(cfg, comm, log):
    graphs, labels, classes = graph_dataset(cfg)
    perm = np.random.RandomState(cfg["seed"]).permutation(len(graphs))
    cut = int(0.75 * len(graphs))
    train, test = perm[:cut], perm[cut:]
    if int(cfg["batch_size"]) * comm.size > len(train):
        raise UserError(f"--batch-size {cfg['batch_size']} x {comm.size} worker(s) exceeds the {len(train)} "
                        f"training graphs (75% of {len(graphs)}): not one step per epoch; lower --batch-size")
    in_feats = graphs[0].ndata["feat"].shape[1]
    net = get_model(cfg["model"], in_feats=in_feats, classes=classes, hidden=cfg["hidden"])
    net.initialize(mx.init.Xavier())
    first = batch([graphs[train[0]]])
    net(first, first.ndata["feat"])   # shapes now: an elastic state copies every parameter
    trainer = DistributedTrainer(net.collect_params(), "adam",
                                 {"learning_rate": cfg["lr"],
                                  "lr_scheduler": _schedule(cfg, int(cfg["batch_size"]), comm.size)},
                                 algorithm=cfg.algorithm_object(), communicator=comm)
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
    test_bg = batch([graphs[j] for j in test])  # built once, evaluated every 10 epochs

    def step(state, idx, step_size):
        chunk = train[idx]
        mx.random.seed(_step_seed(cfg["seed"], state.step, trainer.communicator.rank))
        bg = batch([graphs[j] for j in chunk])
        with autograd.record():
            loss = loss_fn(net(bg, bg.ndata["feat"]), mx.nd.array(labels[chunk])).sum()
        loss.backward()
        trainer.step(step_size)
        return {"loss": loss, "seen": len(chunk)}

    def evaluate():
        return (net(test_bg, test_bg.ndata["feat"]).argmax(axis=1).asnumpy() == labels[test]).mean()

    history = _train(cfg, net, trainer, len(train), int(cfg["batch_size"]), step, evaluate, log)
    return _end_run(cfg, history, net, trainer, log)
