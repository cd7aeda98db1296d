"""Word-level language modelling as GluonNLP ships it: ``train_language_model(config, comm)``, GluonNLP's
word LMs by name (``awd_lstm_lm_1150``/``_600``, ``standard_lstm_lm_200``/``_650``/``_1500``, and the big
LM ``big_rnn_lm_2048_512`` with its sampled softmax: ``big_lm``; the sizes flags override theirs), untrained, on our vocabulary (``vocab.json``, checked on ``--resume``), on the
shared loop (``distributed.loop.fit``: resume, elastic, checkpoints, log.jsonl), any optimizer and algorithm.

Data: the train stream is cut into ``batch_size x workers`` columns (GluonNLP's batchify; column c reads
tokens ``[c*T, (c+1)*T)`` and predicts the token after each); worker r takes the contiguous columns
``[r*batch_size, (r+1)*batch_size)``, one contiguous share of the stream, all workers together the whole
stream but its last ``< batch_size x workers`` tokens. The loop's items are the ``ceil(T / bptt)`` BPTT
windows of an epoch, in order (``WindowSampler``: every worker gets the same window index at each global
step). The hidden state is carried from window to window, detached at the start of each
(``train_window``), and zero at each epoch's start and wherever a window does not follow the last one
(an elastic restore or resize).

The loss is summed over the window and averaged over the batch (the Local AdaAlter authors' recipe:
``bptt`` x GluonNLP's per-token mean, rates and ``--clip`` on that scale). ``--clip`` clips the gradient
the update applies, after the trainer's ``allreduce_grads``: the averaged one for gradient-averaging
algorithms (the same on every worker), each worker's own for local ones. Steps reseed from (seed, step,
rank), so a resumed run continues exactly. Each epoch: the validation perplexity of the worker-averaged
model, each worker running its share of the ``eval_batch_size`` columns (the same columns whatever the
worker count), NLL and token sums reduced over the workers; the test perplexity after the last epoch.
Lower is better: ``best.params`` follows the lowest, the published card says ``higher_is_better: false``.
"""
import dataclasses
import os
import random
from typing import ClassVar

import mxnet as mx
import numpy as np
from mxnet import gluon

from ..distributed import DistributedTrainer
from ..distributed.loop import RunFolder, fit, world_sums
from ..distributed.options import CompressionOptions, ElasticOptions, SecondCompressorOptions
from ..distributed.runfolder import resume_folder
from ..model_zoo.publish import PublishOptions
from ..model_zoo.registry import register_model
from ..optim import ElasticRamp
from ..utils import UserError
from ..utils.devices import DeviceOptions, resolve_devices
from ..utils.fileio import atomic_path
from ..utils.logs import CsvSummary
from ..utils.runconfig import RecipeConfig, RunOptions, option
from ..utils.validate import (choice_of, existing_path, float_range, nonneg_float, nonneg_int, positive_float,
                              positive_int)
from .corpora import _lines, gensim_corpus_path
from .lm_windows import LOSS, WindowSampler, _ppl, batchify, detach, perplexity, stream_nll, train_window  # noqa: F401
from .big_lm import BIG
from .big_lm import build as build_big
from .big_lm import own_sizes as big_sizes
from .wikipedia import DocumentCorpus, Vocabulary, WikipediaCorpus, gensim_wiki_dump_path, text_file_corpus

WORD_MODELS = ("awd_lstm_lm_1150", "awd_lstm_lm_600", "standard_lstm_lm_200", "standard_lstm_lm_650",
               "standard_lstm_lm_1500")
CORPORA = ("wikipedia", "text", "lee_background", "head500")
RECOMMENDED = "--algorithm local_adaalter --optimizer adaalter --period 4"
FRACTION = float_range(0, 1, high_open=True, what="a fraction")
SIZE_KEYS = {"emsize": "embed_size", "nhid": "hidden_size", "nlayers": "num_layers", "dropout": "dropout",
             "tied": "tie_weights"}
BIG_KEYS = {"emsize": ("embed_size",), "nhid": ("hidden_size",), "nlayers": ("num_layers",), "nproj": ("projection_size",),
            "k": ("num_sampled",), "dropout": ("embed_dropout", "encode_dropout")}


@dataclasses.dataclass
class LanguageModelConfig(RecipeConfig, PublishOptions, DeviceOptions, ElasticOptions, SecondCompressorOptions,
                          CompressionOptions, RunOptions):
    """``train_language_model``'s configuration: the keys are the script's flags with ``_`` for ``-``
    (GluonNLP's word-LM flag names; docs/nlp.md, "Language modelling")."""
    SCRIPT: ClassVar[str] = "scripts/nlp/train_language_model.py"
    STATE_KEYS: ClassVar[tuple] = ("epoch", "best_ppl", "history", "workers")
    CHECKPOINT_FILES: ClassVar[tuple] = ("last.rank0.params", "last.rank0.states")
    FLAG_GROUPS: ClassVar[dict] = {
        "model": ("model", "emsize", "nhid", "nlayers", "dropout", "tied", "nproj", "k"),
        "data": ("corpus", "data_path", "max_pages", "min_freq", "max_vocab", "valid_fraction", "test_fraction"),
        "optimisation": ("epochs", "batch_size", "bptt", "optimizer", "lr", "warmup_steps", "wd", "clip",
                         "eval_batch_size", "log_interval"),
        f"distributed (recommended for this task: {RECOMMENDED})": (
            "algorithm", "compressor", "ratio", "period", "compressor2", "ratio2", "min_size", "compress_warmup"),
        "run": ("seed", "out", "resume", "stop_after_epochs")}
    out: str = option("runs/language_model", help="run folder: logs, vocab.json, checkpoints, config.json")
    model: str = option("standard_lstm_lm_200", choice_of(WORD_MODELS + (BIG,), "language model"),
                        help="GluonNLP's language model by name (untrained; sizes below override its own)")
    emsize: int = option(None, positive_int, help="embedding size (default: the model's)")
    nhid: int = option(None, positive_int, help="hidden units per layer (default: the model's)")
    nlayers: int = option(None, positive_int, help="LSTM layers (default: the model's)")
    dropout: float = option(None, FRACTION, help="dropout on the LSTM output (default: the model's)")
    tied: bool = option(True, flag="--tied", negative="--untied", help="tie the embedding and softmax weights "
                        "(the word models' own setting; the big LM has separate ones)",
                        negative_help="separate embedding and softmax weights")
    nproj: int = option(None, positive_int, help=f"{BIG} only: LSTMP projection size (default 512)")
    k: int = option(None, positive_int, help=f"{BIG} only: candidates of the sampled softmax per window "
                    "(default 8192, below the vocabulary size)")
    corpus: str = option("wikipedia", choices=CORPORA, help="wikipedia (a MediaWiki dump; default gensim's bundled "
                         "enwiki excerpt), text (--data-path to a UTF-8 file, blank lines between documents), or "
                         "gensim's lee_background / head500")
    data_path: str = option(None, existing_path, help="the dump (.xml/.xml.bz2) or text file")
    max_pages: int = option(None, positive_int, help="read at most this many articles of the dump")
    min_freq: int = option(2, positive_int, help="a word seen fewer times in train becomes <unk>")
    max_vocab: int = option(None, positive_int, help="at most this many words (most frequent first)")
    valid_fraction: float = option(0.05, FRACTION, help="documents held out for validation")
    test_fraction: float = option(0.05, FRACTION, help="documents held out for test")
    epochs: int = option(10, positive_int, help="training epochs")
    batch_size: int = option(20, positive_int, aliases=("--batch_size",), help="columns per worker (x workers)")
    bptt: int = option(35, positive_int, help="BPTT window length")
    optimizer: str = option("sgd", choice_of(lambda: mx.optimizer.Optimizer.opt_registry, "optimizer"),
                            help="any MXNet optimizer name, incl. adagrad, adaalter, lans")
    lr: float = option(0.5, positive_float, help="learning rate (the loss is summed over the window)")
    warmup_steps: int = option(0, nonneg_int, help="linear warm-up of the rate over this many steps")
    wd: float = option(0.0, nonneg_float, help="weight decay")
    clip: float = option(10.0, nonneg_float, help="clip the gradient to this global norm (0: off)")
    eval_batch_size: int = option(10, positive_int, help="columns of the validation/test stream (over all workers)")
    log_interval: int = option(50, positive_int, aliases=("--log_interval",),
                               help="windows per training-perplexity line (and per log.jsonl interval)")

    def check(self, comm):
        if len(resolve_devices(self.gpus, self.dtype)[0]) > 1 or self.dtype != "float32":
            raise UserError("the language model trains in float32 on one device per worker; drop --dtype and give "
                            "at most one of --gpus")
        if self.model != BIG and (self.nproj is not None or self.k is not None):
            raise UserError(f"--nproj and --k are the big LM's (--model {BIG}); drop them for {self.model}")
        if self.corpus == "text" and not self.data_path:
            raise UserError("--corpus text reads a text file: give --data-path FILE")
        if self.corpus in ("lee_background", "head500") and self.data_path:
            raise UserError(f"--corpus {self.corpus} is read from the installed gensim; drop --data-path")
        size = _sizes(self)
        if self.model.startswith("standard") and size["tie_weights"] and size["embed_size"] != size["hidden_size"]:
            raise UserError(f"--tied needs --emsize = --nhid (got {size['embed_size']} and {size['hidden_size']}); "
                            "make them equal or give --untied")


def _own(name):
    if name == BIG:
        return big_sizes()
    lm = __import__("gluonnlp").model.language_model
    return {**lm.awd_lstm_lm_hparams, **lm.standard_lstm_lm_hparams}[name]


def _sizes(cfg):
    """The GluonNLP keyword arguments of ``cfg``'s model: its own settings, overridden by the flags
    (for the big LM, ``--dropout`` sets both its embedding and encoder dropout)."""
    if cfg["model"] == BIG:
        return {**_own(BIG), **{key: cfg[k] for k, keys in BIG_KEYS.items() if cfg[k] is not None for key in keys}}
    return {**_own(cfg["model"]), **{SIZE_KEYS[k]: cfg[k] for k in SIZE_KEYS if cfg[k] is not None}}


def build_model(name, vocab_size, **sizes):
    """GluonNLP's ``name`` (its class, ``AWDRNN`` or ``StandardRNN``, with its settings overridden by
    ``sizes``: ``embed_size``, ``hidden_size``, ...) for ``vocab_size`` words, untrained."""
    import gluonnlp as nlp
    if name == BIG:
        return build_big(vocab_size, **sizes)
    cls = nlp.model.train.AWDRNN if name.startswith("awd") else nlp.model.train.StandardRNN
    return cls(vocab_size=int(vocab_size), **{**_own(name), **sizes})


def _register(name):   # in the zoo (publishing needs a registered name); vocab_size and sizes as keywords
    def fn(vocab_size=10000, **sizes):
        return build_model(name, vocab_size, **sizes)
    fn.__doc__ = f"GluonNLP's {name} word language model"
    register_model(name, task="language-model")(fn)


for _name in WORD_MODELS + (BIG,):
    _register(_name)


@register_model("standard_lstm_lm_200_wiki", task="language-model")
def standard_lstm_lm_200_wiki(vocab_size=12349, **sizes):
    """GluonNLP's standard_lstm_lm_200 trained with Local AdaAlter on gensim's Wikipedia excerpt (12,349 words).

    Two workers, configs/nlp/wiki_lm_local_adaalter.yaml; the vocabulary is published beside it."""
    return build_model("standard_lstm_lm_200", vocab_size, **sizes)


def _seed(seed, step, rank):
    s = (int(seed) * 1_000_003 + int(step) * 7919 + int(rank)) % (2 ** 31)
    random.seed(s)
    np.random.seed(s)
    mx.random.seed(s)


def _corpus(cfg):
    split = dict(seed=cfg["seed"], valid_fraction=cfg["valid_fraction"], test_fraction=cfg["test_fraction"])
    if cfg["corpus"] == "wikipedia":
        return WikipediaCorpus(cfg["data_path"] or gensim_wiki_dump_path(), max_pages=cfg["max_pages"], **split)
    if cfg["corpus"] == "text":
        return text_file_corpus(cfg["data_path"], **split)
    path = gensim_corpus_path(cfg["corpus"])   # one document per line
    docs = ((i, f"line {i + 1}", t) for i, t in enumerate(_lines(path)))
    return DocumentCorpus(path, docs, source=f"gensim:{cfg['corpus']}", **split)


def _data(cfg, comm, log):
    """Corpus, vocabulary (checked against the run resumed) and the three token-id streams."""
    corpus = _corpus(cfg)
    vocab = corpus.vocabulary(min_freq=cfg["min_freq"], max_size=cfg["max_vocab"])
    folder = resume_folder(cfg["resume"], cfg["out"])
    if folder:   # the vocabulary the checkpoint was trained with
        vocab.check_matches(Vocabulary.load(os.path.join(folder, "vocab.json")), f"the --resume run {folder}")
    ids = {s: np.array(vocab.to_indices(corpus.tokens(s)), dtype=np.int64) for s in ("train", "valid", "test")}
    for s in ("valid", "test"):   # a perplexity needs one token per evaluation column at least
        if len(ids[s]) - 1 < int(cfg["eval_batch_size"]):
            raise UserError(f"the {s} split has {len(ids[s])} tokens, too few for --eval-batch-size "
                            f"{cfg['eval_batch_size']}; give a larger --{s}-fraction or a smaller --eval-batch-size")
    if comm.rank == 0:
        os.makedirs(cfg["out"], exist_ok=True)
        vocab.save(os.path.join(cfg["out"], "vocab.json"))
        log(f"{cfg['corpus']}: {', '.join(f'{s} {len(v):,}' for s, v in ids.items())} tokens; vocabulary "
            f"{len(vocab):,} words (min_freq {cfg['min_freq']})")
    return corpus, vocab, ids


def _summary(out, history):
    """summary.csv: one row per epoch, the scalar keys of the records."""
    with atomic_path(os.path.join(out, "summary.csv")) as tmp:
        rows = CsvSummary(tmp)
        for rec in history:
            rows.add(**{k: v for k, v in rec.items() if not isinstance(v, (list, dict))})


def _train(cfg, net, trainer, sampler, ids, log, ctx):
    out, bptt, batch, every = cfg["out"], int(cfg["bptt"]), int(cfg["batch_size"]), int(cfg["log_interval"])
    run = RunFolder(out, cfg["resume"], trainer.communicator, elastic=bool(cfg["elastic"]),
                    required=("epoch", "best_ppl", "history"))
    grad_bytes = sum(int(np.prod(p.shape)) * 4 for p in net.collect_params().values() if p.grad_req != "null")
    shard, carry, acc, intervals = {}, {"at": None, "hidden": None}, {}, {}

    def columns(rank, size):   # this worker's columns of the train stream, as NDArrays (T, batch)
        if (rank, size) not in shard:
            x, y = batchify(ids["train"], batch * size)
            shard.clear()
            shard[rank, size] = [mx.nd.array(a[:, rank * batch:(rank + 1) * batch], ctx=ctx) for a in (x, y)]
        return shard[rank, size]

    def step(state, idx, step_size):
        comm, w = trainer.communicator, int(idx[0])
        _seed(cfg["seed"], state.step, comm.rank)
        x, y = columns(comm.rank, comm.size)
        if carry["at"] != (state.epoch, w - 1, comm.size):   # an epoch's start, or a restore: zeros
            carry["hidden"] = net.begin_state(batch_size=batch, func=mx.nd.zeros, ctx=ctx)
            acc.clear()
            if w == 0:
                intervals.clear()
        xs, ys = x[w * bptt:(w + 1) * bptt], y[w * bptt:(w + 1) * bptt]
        nll, carry["hidden"] = train_window(net, carry["hidden"], xs, ys, batch)
        wire = comm.stats.total_wire
        trainer.allreduce_grads()
        if cfg["clip"]:
            gluon.utils.clip_global_norm(trainer.primary_grads(), float(cfg["clip"]), check_isfinite=False)
        trainer.update(1)
        carry["at"] = (state.epoch, w, comm.size)
        acc["nll"], acc["tokens"] = acc.get("nll", 0) + nll, acc.get("tokens", 0) + ys.size
        if (w + 1) % every == 0 or w + 1 == sampler.per_epoch:
            intervals[w // every] = (float(acc.pop("nll").asscalar()), acc.pop("tokens"))
            if comm.rank == 0:
                log(f"[epoch {state.epoch + 1} batch {w + 1}/{sampler.per_epoch}] ppl "
                    f"{_ppl(*intervals[w // every]):.2f} (worker 0's columns), lr {trainer.learning_rate:.4g}")
        return {"nll": nll, "tokens": ys.size, "wire": comm.stats.total_wire - wire}

    def end_epoch(end):
        c, state, tot, mine = end.comm, end.state, end.totals, end.sums
        with trainer.averaged(net):
            val_nll, val_tokens = stream_nll(net, ids["valid"], int(cfg["eval_batch_size"]), c, bptt, ctx)
            val_ppl = _ppl(val_nll, val_tokens)
            if val_ppl < state.best_ppl:   # lower is better
                state.best_ppl = val_ppl
                if c.rank == 0:
                    with atomic_path(os.path.join(out, "best.params")) as tmp:
                        net.save_parameters(tmp)
            test_ppl = perplexity(net, ids["test"], int(cfg["eval_batch_size"]), c, bptt, ctx) \
                if end.epoch == int(cfg["epochs"]) else None
        n_int = -(-sampler.per_epoch // every)   # the epoch's intervals, the same keys on every worker
        names = [f"{k}.{j}" for k in range(n_int) for j in ("nll", "tokens")]
        got = world_sums({f"{k}.{j}": v for k, pair in intervals.items() for j, v in zip(("nll", "tokens"), pair)},
                         names, c, name="lm.intervals")
        secs = mine["time_s"]
        rec = {"epoch": end.epoch, "step": end.step, "train_loss": tot["nll"] / max(tot["tokens"], 1),
               "train_ppl": _ppl(tot["nll"], tot["tokens"]), "val_loss": val_nll / max(val_tokens, 1),
               "val_ppl": val_ppl, "best_val_ppl": state.best_ppl, "test_ppl": test_ppl, "lr": trainer.learning_rate,
               "tokens": int(tot["tokens"]), "tokens_per_s": round(tot["tokens"] / max(secs, 1e-9), 1),
               "epoch_time_s": round(secs, 3), "wire_bytes": mine.get("wire", 0.0),
               "dense_wire_bytes": 2.0 * (c.size - 1) / c.size * grad_bytes * mine["steps"], "workers": c.size,
               "global_batch": batch * c.size, "elapsed_s": end.elapsed_s,
               "intervals": [{"batch": min((k + 1) * every, sampler.per_epoch),
                              "train_ppl": _ppl(got[f"{k}.nll"], got[f"{k}.tokens"])}
                             for k in range(n_int) if got[f"{k}.tokens"]]}
        if c.rank == 0:
            _summary(out, state.history + [rec])
            log(f"epoch {end.epoch:3d}  train ppl {rec['train_ppl']:.2f}  val ppl {val_ppl:.2f}"
                + (f"  test ppl {test_ppl:.2f}" if test_ppl is not None else "")
                + f"  lr {rec['lr']:.4g}  {rec['tokens_per_s']:.0f} tokens/s  wire {rec['wire_bytes'] / 1e6:.2f} MB  "
                f"{c.size} worker(s) x {batch} columns")
        return rec

    return fit(run, net, trainer, sampler, batch, int(cfg["epochs"]), step, end_epoch, stats=("nll", "tokens"),
               elastic=bool(cfg["elastic"]), commit_every=int(cfg["commit_every"]), stop_after=cfg["stop_after_epochs"],
               log=log, counters={"best_ppl": float("inf")})


def _publish(cfg, vocab, best_ppl, comm, log):
    from ..model_zoo.publish import publish_companion, publish_run
    metric = {"name": "validation perplexity", "value": best_ppl, "higher_is_better": False,
              "dataset": cfg["corpus"] + (f" ({os.path.basename(cfg['data_path'])})" if cfg["data_path"] else "")}
    record = publish_run(cfg, cfg.to_dict(), os.path.join(cfg["out"], "best.params"), LanguageModelConfig.SCRIPT,
                         metric, comm.size, log=log)
    publish_companion(os.path.join(cfg["out"], "vocab.json"), cfg["publish_name"] or cfg["model"], "vocab",
                      cfg["publish"], url=cfg["publish_url"])
    log(f"published {record['file_name']} and its vocabulary into {cfg['publish']}")
    return record


def train_language_model(config, comm=None, log=print, ctx=None):
    """Train the word LM of ``config`` (a ``LanguageModelConfig`` or a mapping of its keys) on
    ``comm`` (default: the job's communicator). Returns ``{"best_ppl", "history", "out", "published",
    "rank", "workers", "vocab_size"}``; rank 0 writes the logs, ``vocab.json`` and ``best.params``."""
    if comm is None:
        from ..distributed import get_communicator
        comm = get_communicator()
    cfg = LanguageModelConfig.from_dict(config).checked(comm, log)
    ctx = (list(ctx) if ctx else resolve_devices(cfg["gpus"], cfg["dtype"])[0])[0]
    corpus, vocab, ids = _data(cfg, comm, log)
    batch, bptt = int(cfg["batch_size"]), int(cfg["bptt"])

    def windows(size):
        t = (len(ids["train"]) - 1) // (batch * size)
        if t < 1:
            raise UserError(f"{len(ids['train'])} training tokens are too few for {size} worker(s) x {batch} "
                            "columns; give more text or a smaller --batch-size")
        return -(-t // bptt)

    sampler = WindowSampler(windows)
    sampler.reshard(comm.rank, comm.size)   # too little text for the workers: said now
    cfg.save(comm, corpus_record=corpus.record(), vocabulary=vocab.record())   # "corpus" stays the option
    if cfg["model"] == BIG and not _sizes(cfg)["num_sampled"] < len(vocab):
        raise UserError(f"--k {_sizes(cfg)['num_sampled']}: the sampled softmax needs fewer candidates than the "
                        f"vocabulary's {len(vocab):,} words; give a smaller --k")
    _seed(cfg["seed"], -1, 0)   # the same initial weights everywhere (rank 0's are broadcast anyway)
    net = build_model(cfg["model"], len(vocab), **_sizes(cfg))
    net.initialize(mx.init.Xavier(), ctx=ctx)
    net.hybridize(static_alloc=True)
    lr, warm = float(cfg["lr"]), int(cfg["warmup_steps"])   # the rate follows the worker count (ElasticRamp)
    sched = ElasticRamp(lambda t: lr * min(1.0, t / warm) if warm else lr, ref_batch=batch * int(cfg["ref_workers"]
                        or comm.size), ramp_steps=int(cfg["ramp_steps"]), global_batch=batch * comm.size)
    trainer = DistributedTrainer(net.collect_params(), cfg["optimizer"], {"lr_scheduler": sched, "wd": cfg["wd"]},
                                 algorithm=cfg.algorithm_object(), communicator=comm)
    if comm.rank == 0:
        log(f"{cfg['model']}: {comm.size} worker(s) x {batch} columns, bptt {bptt}, {sampler.per_epoch} windows per "
            f"epoch; {cfg['optimizer']} / {cfg['algorithm']}")
    state = _train(cfg, net, trainer, sampler, ids, log, ctx)
    comm = trainer.communicator
    result = {"best_ppl": state.best_ppl, "history": state.history, "out": cfg["out"], "published": None,
              "rank": comm.rank, "workers": comm.size, "vocab_size": len(vocab)}
    if comm.rank == 0 and cfg["publish"]:
        result["published"] = _publish(cfg, vocab, state.best_ppl, comm, log)
    comm.barrier(name="done")
    return result
