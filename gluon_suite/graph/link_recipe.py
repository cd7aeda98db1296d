"""The link-prediction recipe (``scripts/graph/train_link_prediction.py``): a GraphSAGE or GCN
encoder and an edge scorer trained to tell held-out edges from sampled non-edges, on the shared
training loop (``distributed.loop.fit``), one process or many.

The graph's undirected edges are split by ``seed`` (``link_data.undirected_split``): validation and
test pairs are removed from the graph the model ever sees; the training pairs, both directions,
are the positives. Every epoch's shuffled order of the training edges is dealt out in global steps
of ``batch_size x workers``. A step (``link_loader.edge_batch``) draws ``negatives`` non-edges per
positive (uniformly, or by in-degree^0.75 with ``--negative-sampler degree``), removes the batch's
edges and their reverses from the message-passing graph (``exclude='reverse_id'``, so a pair
cannot be scored by the edge that joins it), runs the encoder on that whole graph and minimises
the binary cross-entropy of the scores (``link_scoring.link_loss``). The sampler, dropout and the
negatives are reseeded from (seed, step, rank), so a resumed run continues as the uninterrupted one.

Evaluation (every 10 epochs and at the end, on the worker-averaged model): the encoder runs on the
training graph; each validation or test pair (u, v) is ranked against ``eval_negatives`` pairs
(u, w), w drawn uniformly with a fixed seed (unfiltered: a drawn w may be a real neighbour);
``log.jsonl`` gets AUC (all positives against all negatives), MRR and Hits@10 for both splits.
The averaged model (encoder and scorer) is written to ``OUT/model.params``."""
import contextlib
import os
import dataclasses
from typing import ClassVar

import mxnet as mx
import numpy as np
from mxnet import autograd, gluon

from ..distributed import DistributedTrainer
from ..distributed.loop import RunFolder, fit
from ..distributed.sampler import EpochSampler
from ..model_zoo import get_model, register_model
from ..utils import UserError
from ..utils.runconfig import option
from ..utils.validate import existing_dir, float_range, nonneg_float, output_dir, positive_float, positive_int
from .base import NID
from .cooccurrence import lee_cooccurrence_graph
from .digraph import Graph
from .link_data import citation_graph, undirected_split
from .link_loader import edge_batch
from .link_metrics import auc, hits_at_k, mrr
from .link_scoring import DotScorer, MLPScorer, link_loss
from .negative_sampler import DegreeWeighted, Uniform
from .recipes import _GraphConfig, _save_averaged, _schedule, _start, _step_seed

__all__ = ["LinkConfig", "LinkPredictor", "train_link_prediction", "link_dataset"]

FRACTION = float_range(0, 1, high_open=True, what="a fraction")


@dataclasses.dataclass
class LinkConfig(_GraphConfig):
    """``train_link_prediction``'s configuration (the flags of its script, with ``_`` for ``-``)."""
    SCRIPT: ClassVar[str] = "scripts/graph/train_link_prediction.py"
    DATASETS_WITH_FILES: ClassVar[tuple] = ("linqs",)
    out: str = option("runs/graph_link", output_dir, help="run folder: log.jsonl, checkpoints, config.json")
    dataset: str = option("citation", choices=("citation", "lee-cooccurrence", "linqs", "sbm", "karate"),
                          help="citation: the embedded citation graph (gluon-suite samples' data/cora); "
                               "lee-cooccurrence: the word co-occurrence graph of gensim's Lee corpus; linqs: "
                               "{name}.content/.cites in --data-dir; sbm, karate: embedded")
    data_dir: str = option(None, existing_dir, help="folder of {name}.content and {name}.cites (linqs)")
    name: str = option("cora", help="LINQS data set name")
    drop_dangling_cites: bool = option(False, help="skip cites lines naming a paper absent from the content file")
    model: str = option("sage", choices=("sage", "gcn"), help="the encoder: two GraphSAGE (mean) or GCN layers")
    scorer: str = option("dot", choices=("dot", "mlp"), help="edge scorer: h_u . h_v, or an MLP of [h_u; h_v]")
    hidden: int = option(32, positive_int, help="hidden units of the encoder")
    embed: int = option(32, positive_int, help="size of the node representations the scorer reads")
    negatives: int = option(5, positive_int, help="non-edges drawn per training edge")
    negative_sampler: str = option("uniform", choices=("uniform", "degree"),
                                   help="uniform destinations, or drawn by in-degree^0.75")
    eval_negatives: int = option(50, positive_int, help="non-edges each held-out edge is ranked against")
    val_fraction: float = option(0.1, FRACTION, help="share of the undirected edges held out for validation")
    test_fraction: float = option(0.1, FRACTION, help="share of the undirected edges held out for testing")
    epochs: int = option(40, positive_int)
    lr: float = option(0.01, positive_float)
    wd: float = option(0.0, nonneg_float)
    dropout: float = option(0.0, FRACTION)
    batch_size: int = option(128, positive_int, help="training edges per worker and step")

    def check(self, comm):
        super().check(comm)
        if self.val_fraction + self.test_fraction >= 1:
            raise UserError(f"--val-fraction {self.val_fraction} + --test-fraction {self.test_fraction} leave no "
                            "edges for training; keep their sum below 1")
        if self.publish:
            from ..model_zoo.registry import resolve
            name = self.publish_name or self.model
            if resolve(name).task != "link-prediction":
                raise UserError(f"--publish needs --publish-name, a registered link-prediction model (e.g. "
                                f"{LINK_ZOO}); {name!r} is a {resolve(name).task} model")


LINK_ZOO = "sage_link_lee"


class LinkPredictor(gluon.Block):
    """An encoder (a zoo node model ending in ``embed`` units) and an edge scorer:
    ``encode(graph, feat)`` gives every node's representation, ``forward(pair, h)`` the pair
    graph's scores from rows ``h`` of its nodes."""

    def __init__(self, encoder, scorer):
        super().__init__()
        with self.name_scope():
            self.encoder, self.scorer = encoder, scorer

    def encode(self, g, feat):
        """Node representations (N, embed) on graph ``g``."""
        return self.encoder(g, feat)

    def forward(self, pair, h):
        return self.scorer(pair, h)


@register_model(LINK_ZOO, task="link-prediction")
def sage_link_lee(in_feats=64, embed=32, hidden=32):
    """GraphSAGE (mean) encoder and MLP scorer for the Lee corpus's word co-occurrence graph (64 features)."""
    return LinkPredictor(get_model("sage", in_feats=in_feats, classes=embed, hidden=hidden, dropout=0.0),
                         MLPScorer(embed, hidden))


def link_dataset(cfg):
    """The whole graph of the configured data set (with ``feat``)."""
    if cfg["dataset"] == "citation":
        return citation_graph()[0]
    if cfg["dataset"] == "lee-cooccurrence":
        return lee_cooccurrence_graph()[0]
    if cfg["dataset"] == "linqs":
        from .data import load_linqs
        return load_linqs(cfg["data_dir"], cfg["name"], dangling="drop" if cfg["drop_dangling_cites"] else "error")[0]
    from .data import karate_club, sbm_graph
    if cfg["dataset"] == "sbm":
        return sbm_graph(seed=cfg["seed"])
    if cfg["dataset"] == "karate":
        return karate_club()
    raise UserError(f"unknown dataset {cfg['dataset']!r}; choose citation, lee-cooccurrence, linqs, sbm or karate")


def train_link_prediction(config, comm=None, log=print, ctx=None):
    """Train an encoder and scorer for link prediction (``config``: a ``LinkConfig`` or a mapping
    of its keys) on ``ctx``; returns ``{'test_auc', 'test_mrr', 'test_hits10', 'history'}`` (the
    metrics None when stopped before the first evaluation)."""
    cfg, comm = _start(LinkConfig, config, comm, log)
    with ctx or contextlib.nullcontext():
        return _train_link(cfg, comm, log)


def _held_out_negatives(pairs, n, k, seed):
    """(len(pairs) * k) negatives (u, w): each pair's source with ``k`` uniform nodes, seeded."""
    w = np.random.RandomState(seed).randint(0, n, size=len(pairs) * k)
    return np.repeat(pairs[:, 0], k), w


def _train_link(cfg, comm, log):
    ctx = mx.current_context()
    g = link_dataset(cfg).to(ctx)
    train_g, val, test = undirected_split(g, cfg["val_fraction"], cfg["test_fraction"], int(cfg["seed"]))
    if not len(val) or not len(test):
        raise UserError(f"the graph has too few edges for {cfg['val_fraction']} validation and {cfg['test_fraction']} "
                        "test shares: one of them is empty; raise the fractions")
    feat = g.ndata["feat"]
    gcn = cfg["model"] == "gcn"
    eval_graph = train_g.add_self_loop() if gcn else train_g
    encoder = get_model(cfg["model"], in_feats=feat.shape[1], classes=cfg["embed"], hidden=cfg["hidden"],
                        dropout=cfg["dropout"])
    scorer = DotScorer() if cfg["scorer"] == "dot" else MLPScorer(cfg["embed"], cfg["hidden"])
    net = LinkPredictor(encoder, scorer)
    net.initialize(mx.init.Xavier())
    h = net.encode(eval_graph, feat)
    net(train_g, h)  # shapes now: an elastic state copies every parameter
    batch_size = int(cfg["batch_size"])
    trainer = DistributedTrainer(net.collect_params(), "adam",
                                 {"learning_rate": cfg["lr"], "wd": cfg["wd"],
                                  "lr_scheduler": _schedule(cfg, batch_size, comm.size)},
                                 algorithm=cfg.algorithm_object(), communicator=comm)
    k = int(cfg["negatives"])
    negative = Uniform(k) if cfg["negative_sampler"] == "uniform" else DegreeWeighted(k)
    reverse = np.arange(train_g.num_edges()) ^ 1      # undirected_split's order: edge 2i and 2i + 1

    def step(state, idx, step_size):
        seed = _step_seed(cfg["seed"], state.step, trainer.communicator.rank)
        mx.random.seed(seed)
        _, pair, neg, mp = edge_batch(train_g, idx, negative, None, "reverse_id", reverse,
                                      rng=np.random.RandomState(seed))
        mp = mp.add_self_loop() if gcn else mp
        with autograd.record():
            h = mx.nd.take(net.encode(mp, feat), pair.ndata[NID])
            loss = link_loss(net(pair, h), net(neg, h)) * len(idx)
        loss.backward()
        trainer.step(step_size)
        return {"loss": loss, "seen": len(idx)}

    splits = {name: (pairs, _held_out_negatives(pairs, g.num_nodes(), int(cfg["eval_negatives"]),
                                                int(cfg["seed"]) + i + 1))
              for i, (name, pairs) in enumerate((("val", val), ("test", test)))}

    def evaluate():
        h = net.encode(eval_graph, feat)
        out = {}
        for name, (pairs, (nu, nw)) in splits.items():
            pos = net(Graph((pairs[:, 0], pairs[:, 1]), num_nodes=g.num_nodes(), device=ctx), h)
            neg = net(Graph((nu, nw), num_nodes=g.num_nodes(), device=ctx), h).asnumpy()
            pos = pos.asnumpy()
            out.update({f"{name}_auc": auc(pos, neg), f"{name}_mrr": mrr(pos, neg),
                        f"{name}_hits10": hits_at_k(pos, neg, 10)})
        return out

    run = RunFolder(cfg["out"], cfg["resume"], trainer.communicator, elastic=bool(cfg["elastic"]),
                    required=("epoch", "history"))

    def end_epoch(end):
        if end.epoch % 10 and end.epoch != int(cfg["epochs"]):
            return None
        with trainer.averaged():
            metrics = evaluate()
        rec = {"epoch": end.epoch, "loss": end.totals["loss"] / max(end.totals["seen"], 1), **metrics,
               "workers": end.comm.size, "elapsed_s": end.elapsed_s}
        if end.comm.rank == 0:
            log(f"epoch {end.epoch:4d}  loss {rec['loss']:.4f}  val auc {rec['val_auc']:.4f}  test auc "
                f"{rec['test_auc']:.4f}  mrr {rec['test_mrr']:.4f}  hits@10 {rec['test_hits10']:.4f}  "
                f"({end.comm.size} workers)")
        return rec

    state = fit(run, net, trainer, EpochSampler(train_g.num_edges(), seed=int(cfg["seed"])), batch_size,
                int(cfg["epochs"]), step, end_epoch, stats=("loss", "seen"), elastic=bool(cfg["elastic"]),
                commit_every=int(cfg["commit_every"]), stop_after=cfg["stop_after_epochs"], log=log)
    history = state.history
    comm = trainer.communicator
    _save_averaged(net, trainer, comm, cfg["out"])
    last = history[-1] if history else {}
    if cfg["publish"] and comm.rank == 0 and history:
        from ..model_zoo.publish import publish_run
        metric = {"name": "test AUC", "value": last["test_auc"], "higher_is_better": True,
                  "dataset": f"{cfg['dataset']}: held-out edges ({cfg['test_fraction']} of them, split seed "
                             f"{cfg['seed']}), each against {cfg['eval_negatives']} uniform non-edges"}
        rec = publish_run(cfg, cfg.to_dict(), os.path.join(cfg["out"], "model.params"), LinkConfig.SCRIPT, metric,
                          comm.size, log=log)
        log(f"published {rec['file_name']} into {cfg['publish']}")
    return {"test_auc": last.get("test_auc"), "test_mrr": last.get("test_mrr"), "test_hits10": last.get("test_hits10"),
            "val_auc": last.get("val_auc"), "history": history, "rank": comm.rank}
