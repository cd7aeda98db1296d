"""Training recipes for graphs (node and graph classification), on one process or many: node
classification shards the training nodes (or sampled seed batches) over workers, graph
classification shards the graphs; gradients go through ``DistributedTrainer`` with any algorithm."""
import os
import time

import mxnet as mx
import numpy as np
from mxnet import autograd, gluon

from ..dist import DistributedTrainer
from ..model_zoo import get_model
from ..utils import JsonLinesLogger, UserError, write_json
from ..utils.fileio import atomic_path
from .batch import batch
from .sampling import sample_blocks

NODE_DEFAULTS = {"dataset": "sbm", "data_dir": None, "name": "cora", "model": "gcn", "hidden": 16,
                 "epochs": 100, "lr": 0.01, "wd": 5e-4, "dropout": 0.5, "sampled": False,
                 "fanouts": [10, 10], "batch_size": 64, "seed": 0, "out": "runs/graph_node",
                 "algorithm": "sync", "compressor": "none", "ratio": None, "period": None}
GRAPH_DEFAULTS = {"dataset": "families", "data_dir": None, "name": "MUTAG", "model": "gin", "hidden": 32,
                  "epochs": 40, "lr": 0.01, "batch_size": 20, "seed": 0, "out": "runs/graph_cls",
                  "algorithm": "sync", "compressor": "none", "ratio": None, "period": None}


def _merge(defaults, config):
    cfg = {**defaults, **{k: v for k, v in config.items() if v is not None}}
    bad = set(cfg) - set(defaults)
    if bad:
        raise UserError(f"unknown option(s) {', '.join(sorted(bad))}")
    return cfg


def _record(history, logger, log, epoch, loss, acc, t0):
    """Append, log and print one evaluation record."""
    rec = {"epoch": epoch + 1, "loss": float(loss.asscalar()), "test_acc": float(acc),
           "elapsed_s": round(time.time() - t0, 3)}
    history.append(rec)
    logger.log(**rec)
    log(f"epoch {epoch + 1:4d}  loss {rec['loss']:.4f}  test acc {rec['test_acc']:.4f}")


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
        g, classes = load_linqs(cfg["data_dir"], cfg["name"])
        labels = g.ndata["label"].asnumpy().astype(int)
        train = np.concatenate([rs.permutation(np.flatnonzero(labels == c))[:20] for c in range(len(classes))])
        rest = np.setdiff1d(np.arange(g.num_nodes()), train)
        return g, train, rs.permutation(rest)[:1000], len(classes)
    raise UserError(f"unknown dataset {cfg['dataset']!r}; choose karate, sbm or linqs")


def train_node_classification(config, comm, log=print):
    """Train a zoo node classifier; returns ``{'test_acc', 'history'}``."""
    cfg = _merge(NODE_DEFAULTS, config)
    mx.random.seed(cfg["seed"])
    g, train, test, classes = node_dataset(cfg)
    if cfg["model"] in ("gcn", "gat") and not cfg["sampled"]:
        g = g.add_self_loop()
    feat, labels = g.ndata["feat"], g.ndata["label"]
    net = get_model(cfg["model"], in_feats=feat.shape[1], classes=classes, hidden=cfg["hidden"],
                    dropout=cfg["dropout"])
    net.initialize(mx.init.Xavier())
    trainer = DistributedTrainer(net.collect_params(), "adam", {"learning_rate": cfg["lr"], "wd": cfg["wd"]},
                                 algorithm=cfg["algorithm"], compressor=cfg["compressor"], ratio=cfg["ratio"],
                                 period=cfg["period"], communicator=comm)
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
    mine = train[comm.rank::comm.size]
    rs = np.random.RandomState(cfg["seed"] * 7 + comm.rank)
    os.makedirs(cfg["out"], exist_ok=True)
    logger = JsonLinesLogger(os.path.join(cfg["out"], "log.jsonl") if comm.rank == 0 else None, mode="w")
    history, t0 = [], time.time()
    for epoch in range(cfg["epochs"]):
        if cfg["sampled"]:
            order = rs.permutation(mine)
            batches = [order[i:i + cfg["batch_size"]] for i in range(0, len(order), cfg["batch_size"])] or [order]
            # every worker takes the same number of steps (the collective calls must match)
            steps = int(comm.allreduce(mx.nd.array([len(batches)]), average=False, name="steps").asscalar() / comm.size)
            batches = (batches * (steps // max(len(batches), 1) + 1))[:max(steps, 1)]
            for seeds in batches:
                blocks = sample_blocks(g, seeds, cfg["fanouts"], rs)
                x = mx.nd.take(feat, mx.nd.array(blocks[0].src_nodes))
                with autograd.record():
                    loss = loss_fn(net(blocks, x), mx.nd.take(labels, mx.nd.array(seeds))).mean()
                loss.backward()
                trainer.step(1)
        else:
            with autograd.record():
                out = net(g, feat)
                loss = loss_fn(mx.nd.take(out, mx.nd.array(mine)), mx.nd.take(labels, mx.nd.array(mine))).mean()
            loss.backward()
            trainer.step(1)
        if (epoch + 1) % 10 == 0 or epoch + 1 == cfg["epochs"]:
            with trainer.averaged():
                pred = net(g, feat).argmax(axis=1).asnumpy()
            _record(history, logger, log, epoch, loss, (pred[test] == labels.asnumpy()[test]).mean(), t0)
    logger.close()
    _save_averaged(net, trainer, comm, cfg["out"])
    if comm.rank == 0:
        write_json(os.path.join(cfg["out"], "config.json"), {**cfg, "workers": comm.size})
    return {"test_acc": history[-1]["test_acc"], "history": history}


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


def train_graph_classification(config, comm, log=print):
    """Train a GIN graph classifier (75/25 split); returns ``{'test_acc', 'history'}``."""
    cfg = _merge(GRAPH_DEFAULTS, config)
    mx.random.seed(cfg["seed"])
    graphs, labels, classes = graph_dataset(cfg)
    perm = np.random.RandomState(cfg["seed"]).permutation(len(graphs))
    cut = int(0.75 * len(graphs))
    train, test = perm[:cut], perm[cut:]
    in_feats = graphs[0].ndata["feat"].shape[1]
    net = get_model(cfg["model"], in_feats=in_feats, classes=classes, hidden=cfg["hidden"])
    net.initialize(mx.init.Xavier())
    trainer = DistributedTrainer(net.collect_params(), "adam", {"learning_rate": cfg["lr"]},
                                 algorithm=cfg["algorithm"], compressor=cfg["compressor"], ratio=cfg["ratio"],
                                 period=cfg["period"], communicator=comm)
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
    B = cfg["batch_size"] * comm.size
    test_bg = batch([graphs[j] for j in test])  # built once, evaluated every 10 epochs
    history, t0 = [], time.time()
    os.makedirs(cfg["out"], exist_ok=True)
    logger = JsonLinesLogger(os.path.join(cfg["out"], "log.jsonl") if comm.rank == 0 else None, mode="w")
    for epoch in range(cfg["epochs"]):
        order = np.random.RandomState(cfg["seed"] + epoch).permutation(train)
        for i in range(0, len(order) - B + 1, B):
            chunk = order[i:i + B][comm.rank::comm.size]
            bg = batch([graphs[j] for j in chunk])
            with autograd.record():
                loss = loss_fn(net(bg, bg.ndata["feat"]), mx.nd.array(labels[chunk])).mean()
            loss.backward()
            trainer.step(1)
        if (epoch + 1) % 10 == 0 or epoch + 1 == cfg["epochs"]:
            with trainer.averaged():
                pred = net(test_bg, test_bg.ndata["feat"]).argmax(axis=1).asnumpy()
            _record(history, logger, log, epoch, loss, (pred == labels[test]).mean(), t0)
    logger.close()
    _save_averaged(net, trainer, comm, cfg["out"])
    return {"test_acc": history[-1]["test_acc"], "history": history}
