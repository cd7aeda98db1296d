"""BERT pretraining (masked LM + next-sentence prediction) in phases, on one process or many: the
recipe (``PretrainConfig``, ``pretrain_bert``) and its per-phase training loop.

Each phase has its own sequence length, per-worker batch, gradient accumulation, step budget and
LANS schedule (warm-up, plateau, linear decay); the global batch is per-worker x workers x
accumulation. Phase k+1 starts from phase k's final weights with fresh optimizer moments and a
fresh schedule (docs/methods.md, "LANS and LAMB": a phase restart resets both). Checkpoints every ``ckpt_every`` steps make
the run resumable at any point, phase boundaries included.

The parts live beside it and are importable from here too: the phases' keys and checks in
``pretrain_phases``, the loss in ``pretrain_loss``, the ``.npz`` shards in ``pretrain_shards``.
"""
import argparse
import dataclasses
import os
from typing import ClassVar

import mxnet as mx
import numpy as np
from mxnet import autograd, gluon

from ..distributed import DistributedTrainer
from ..distributed.loss_scale import for_dtype
from ..distributed.loop import RunFolder, fit, world_sums
from ..distributed.options import CompressionOptions, ElasticOptions
from ..distributed.sampler import EpochSampler
from ..optim import ElasticRamp, WarmupConstantDecay, exclude_from_weight_decay
from ..model_zoo import get_model
from ..model_zoo.publish import PublishOptions
from ..model_zoo.registry import model_name
from ..utils import UserError
from ..utils.devices import DeviceOptions, float16_network
from ..utils.runconfig import RecipeConfig, option
from ..utils.validate import (choice_of, existing_file, float_range, int_at_least, nonneg_float, nonneg_int,
                              output_dir, positive_int, utf8_file)
from ..utils.fileio import atomic_write
from .pretraining_data import create_instances
from .corpora import load_corpus
from .gluonnlp_flags import PretrainGluonNLP, data_eval_instances, text_documents
from .text import build_vocab, embedded_corpus, load_vocab, tokenizer
# the phases, the loss and the shards are re-exported: scripts and users import them from here
from .pretrain_loss import STATS, BertPretrainLoss
from .pretrain_phases import (_EXAMPLE, _FRACTION, _INT, _PATHS, PHASE_KEYS, check_phase,  # noqa: F401
                              check_phases, phase_batches, phase_list, shard_spec)
from .pretrain_shards import KEYS, read_shards, write_shards

__all__ = ["PretrainConfig", "DEFAULTS", "pretrain_bert", "prepare_text", "corpus_documents", "corpus_spec",
           "optimizer_names", "PHASE_KEYS", "check_phase", "phase_list", "shard_spec", "phase_batches", "check_phases",
           "BertPretrainLoss", "STATS", "KEYS", "write_shards", "read_shards"]


WIKIPEDIA = "wikipedia"   # --corpus wikipedia: the pages of a MediaWiki dump (--data-path), one document each


def corpus_spec(text):
    """``corpus``: ``wikipedia`` (a MediaWiki dump, ``--data-path``), ``gensim:NAME`` (a corpus
    inside the installed gensim) or a UTF-8 text file."""
    from .corpora import GENSIM_CORPORA, PREFIX
    text = str(text)
    if text == WIKIPEDIA:
        return text
    if text.startswith(PREFIX):
        if text[len(PREFIX):] not in GENSIM_CORPORA:
            raise argparse.ArgumentTypeError(f"{text}: unknown gensim corpus; choose one of "
                                             + ", ".join(PREFIX + n for n in GENSIM_CORPORA) + " or give a text file")
        return text
    return utf8_file(text)


def optimizer_names():
    """The optimizer names MXNet knows (lans and adaalter are registered by gluon_suite.optim)."""
    return mx.optimizer.Optimizer.opt_registry


def parse_phase(text):
    """One phase from the text of a ``--phase`` flag, ``'seq_len=128,batch_size=16,steps=100,lr=0.005'``,
    checked by ``check_phase`` (an argparse type)."""
    items = {}
    for part in filter(None, str(text).split(",")):
        if "=" not in part:
            raise argparse.ArgumentTypeError(f"items are key=value, got {part!r}; use {_EXAMPLE}")
        k, v = part.split("=", 1)
        items[k.strip()] = v.strip()
    try:
        return check_phase(items, "phase")
    except UserError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


@dataclasses.dataclass
class PretrainConfig(RecipeConfig, PretrainGluonNLP, PublishOptions, DeviceOptions, ElasticOptions, CompressionOptions):
    """``pretrain_bert``'s configuration: the script's flags with ``_`` for ``-``, and ``phases``,
    each a mapping of ``PHASE_KEYS`` (``check_phase``)."""
    SCRIPT: ClassVar[str] = "scripts/nlp/pretrain_bert.py"
    STATE_KEYS: ClassVar[tuple] = ("phase", "step", "history", "workers")
    CHECKPOINT_FILES: ClassVar[tuple] = ("ckpt.rank0.params", "ckpt.rank0.states")
    YAML_EXTRA: ClassVar[dict] = {"phases": phase_list}
    FLAG_HELP: ClassVar[dict] = {
        "elastic": "workers may join, leave or die; trains one phase per launch (--resume auto for the next)"}
    model: str = option("bert_2_128_2", model_name, help="zoo BERT name")
    max_length: int = option(512, int_at_least(8), help="positions of the model, >= every seq_len")
    corpus: str = option(None, corpus_spec, help="text file (one sentence per line, blank line between "
                         "documents), gensim:lee_background / gensim:head500, or wikipedia (the articles of a "
                         "MediaWiki dump, one document each)")
    data_path: str = option(None, existing_file, help="with --corpus wikipedia: the MediaWiki dump (.xml, "
                            ".xml.bz2 or .xml.gz; without it, gensim's bundled enwiki excerpt)")
    max_pages: int = option(None, positive_int, help="with --corpus wikipedia: read at most this many articles")
    vocab: str = option(None, utf8_file, help="BERT vocab file (default: built from the corpus)")
    min_freq: int = option(2, positive_int, help="fewest occurrences of a word in a vocab built from the corpus")
    lower: bool = option(True, flag=False)
    dropout: float = option(0.1, float_range(0, 1, high_open=True, what="a fraction"), help="dropout rate")
    optimizer: str = option("lans", choice_of(optimizer_names, "optimizer"), help="lans (default), lamb or adam")
    wd: float = option(0.01, nonneg_float, help="weight decay")
    seed: int = option(0, nonneg_int)
    out: str = option("runs/bert", output_dir, help="run folder: checkpoints, log.jsonl, config.json, vocab")
    ckpt_every: int = option(50, positive_int, help="steps between checkpoints")
    resume: str = option("none", choice_of(("none", "auto"), "--resume value"), help="none or auto")
    log_every: int = option(1, positive_int, flag=False)
    progress: bool = option(True, negative="--no-progress", negative_help="no progress bar")
    phases: list = option([{"seq_len": 64, "batch_size": 16, "accumulate": 1, "steps": 100, "lr": 0.005,
                            "warmup": 0.1, "constant": 0.2}], phase_list, flag="--phase", action="append",
                          flag_type=parse_phase,
                          help="seq_len=,batch_size= or total_batch_size=,steps=,lr=[,accumulate=,warmup=,constant=,"
                          "max_predictions=,shards=,eval_shards=]; repeat per phase (shards: pre-built instances, "
                          "a folder of .npz; eval_shards: held-out instances evaluated at the phase's end)")

    def check(self, comm):
        self.check_gluonnlp()   # GluonNLP's --data/--data_eval/--raw/--comm_backend
        if self.corpus != WIKIPEDIA:
            given = [f for f, v in (("--data-path", self.data_path), ("--max-pages", self.max_pages)) if v]
            if given:
                names = " and ".join(given)
                raise UserError(f"{names} only apply to --corpus wikipedia (a MediaWiki dump); add --corpus "
                                f"wikipedia or drop {names}")
        elif self.max_pages is not None and self.max_pages < 4:
            raise UserError(f"--max-pages {self.max_pages}: --corpus wikipedia holds out at least a page each for "
                            "valid and test and needs 2 training pages for next-sentence prediction; give --max-pages 4 "
                            "or more")
        longest = max(int(ph["seq_len"]) for ph in self.phases)
        if longest > self.max_length:
            raise UserError(f"a phase has seq_len {longest} > max_length {self.max_length}; raise --max-length "
                            "or shorten the phase")

    def check_resume(self):
        folder = super().check_resume()
        if folder:
            from ..model_zoo.registry import check_weights
            check_weights(os.path.join(folder, "ckpt.rank0.params"), self.model, "--resume checkpoint",
                          fix="resume a run of this --model, or start afresh with --resume none")
        return folder


DEFAULTS = PretrainConfig().to_dict()   # the defaults as a mapping (earlier versions' name)


def corpus_documents(cfg):
    """The documents (lists of sentences) that ``cfg`` pretrains on, and a record of the corpus for
    ``config.json`` (None but for a dump). ``--corpus wikipedia``: the train split of the dump's
    articles (``WikipediaCorpus``, split by ``seed``; the valid and test articles are left out), one
    document per page, so that a next sentence comes from its own page and a random one from another.
    GluonNLP's ``--data`` (with ``--raw``): the documents of the text files its patterns match."""
    if cfg.get("data"):
        return text_documents(cfg["data"], "--data"), None
    if cfg["corpus"] == WIKIPEDIA:
        from .wikipedia import WikipediaCorpus, gensim_wiki_dump_path
        corpus = WikipediaCorpus(cfg["data_path"] or gensim_wiki_dump_path(), seed=int(cfg["seed"]),
                                 max_pages=cfg["max_pages"])
        docs = corpus.documents("train")
        if len(docs) < 2:
            raise UserError(f"{corpus.path}: {len(docs)} training page(s) of at least {corpus.min_words} words; "
                            "next-sentence prediction needs 2 pages: give a larger dump or raise --max-pages")
        return docs, corpus.record()
    return (load_corpus(cfg["corpus"]) if cfg["corpus"] else embedded_corpus()), None


def prepare_text(cfg, out, rank, log, docs=None):
    """Documents (token lists) and the vocabulary, saved as OUT/vocab.txt for resumes; ``docs``:
    the documents as sentences (default: ``corpus_documents(cfg)``)."""
    if docs is None:
        docs, _ = corpus_documents(cfg)
    vocab_file = os.path.join(out, "vocab.txt")
    if cfg["vocab"]:
        vocab = load_vocab(cfg["vocab"])
    elif os.path.exists(vocab_file) and cfg["resume"] != "none":
        vocab = load_vocab(vocab_file)
    else:
        vocab = build_vocab(docs, min_freq=int(cfg["min_freq"]), lower=bool(cfg["lower"]))
    if rank == 0:
        atomic_write(vocab_file, "\n".join(vocab.idx_to_token) + "\n")
    tok = tokenizer(vocab, lower=bool(cfg["lower"]))
    return [[tok(s) for s in d] for d in docs], vocab


def pretrain_bert(config, comm=None, log=print, ctx=None):
    """Run the phases of ``config`` (a ``PretrainConfig``, or a mapping of its keys) on ``comm``
    (default: the job's communicator). Returns the per-step history. The algorithm/compressor pair
    is settled as in ``settle_compression`` (on one worker, no compression), knowing the keys the
    command line set. ``ctx``: the worker's contexts (default: the current one); each batch is
    split over them (``split_and_load``, one parameter copy per context, gradients summed by the
    trainer). ``elastic``: the same loop under Horovod Elastic (``distributed.loop.fit``), one
    phase per launch."""
    if comm is None:
        from ..distributed import get_communicator
        comm = get_communicator()
    cfg = PretrainConfig.from_dict(config).checked(comm, log)
    ctx = list(ctx or [mx.current_context()])
    phases = check_phases(phase_batches(cfg["phases"], int(cfg["ref_workers"] or comm.size)))
    dtype = cfg.dtype
    small = min(int(p["batch_size"]) for p in phases)
    if small < len(ctx):
        raise UserError(f"a phase's batch_size {small} is smaller than the {len(ctx)} devices it is "
                        "split over; raise the batch size or give fewer --gpus")
    out, rank = cfg["out"], comm.rank
    run = RunFolder(out, cfg["resume"], comm, prefix="ckpt", elastic=bool(cfg["elastic"]),
                    required=("phase", "step", "history"))
    state = run.read_state()
    docs, record = corpus_documents(cfg)
    if record and rank == 0:
        held = sum(record["splits"][s]["documents"] for s in ("valid", "test"))
        log(f"wikipedia: {record['file']}, {len(docs)} training pages ({record['splits']['train']['sentences']} "
            f"sentences; {held} pages held out as valid/test)")
    docs, vocab = prepare_text({**cfg, "resume": "none" if state is None else "auto"}, out, rank, log, docs)
    max_len = int(cfg["max_length"])  # position embeddings: fixed for all phases (phase 2 is longer)

    mx.random.seed(int(cfg["seed"]))
    net = get_model(cfg["model"], vocab_size=len(vocab), max_length=max_len, dropout=float(cfg["dropout"]))
    net.initialize(mx.init.Normal(0.02), ctx=ctx)
    float16_network(net, dtype, ctx)
    loss_fn = BertPretrainLoss(len(vocab), dtype)
    start = dict(state or {"phase": 0, "step": 0, "history": []})
    if state is not None:
        net.load_parameters(run.paths()[0], cast_dtype=True, dtype_source="current")
        if rank == 0:
            log(f"resumed from {out}: phase {start['phase'] + 1}, step {start['step']}")
    cfg.save(comm, vocab_size=len(vocab), **({"corpus_record": record} if record else {}))
    run.start_fresh()
    # float16: float32 master weights in each phase's optimizer and one dynamic loss scale for all
    # phases (kept in the checkpoints, so that a resumed run scales as the uninterrupted one would)
    _, scaler = for_dtype({}, dtype)
    if scaler and start["history"] and "loss_scale" in start["history"][-1]:
        scaler.load_counters(start["history"][-1])
    history = start["history"]
    with run:
        for pi in run.stages(start["phase"], len(phases), log):
            resumed = {**start, "history": history} if pi == start["phase"] and start["step"] else {"history": history}
            history = _phase(cfg, run, pi, phases[pi], net, loss_fn, docs, vocab, comm, log, ctx, scaler, resumed)
    published = _publish(cfg, run, history, comm, log) if cfg["publish"] and rank == 0 else None
    return {"history": history, "vocab": vocab, "net": net, "published": published}


def _publish(cfg, run, history, comm, log):
    """Publish the pretrained model (rank 0's checkpoint) and its vocabulary into the store
    ``cfg['publish']``; the card's metric is the training MLM accuracy over the last 10 steps."""
    from ..model_zoo.publish import publish_companion, publish_run
    last = history[-10:]
    metric = {"name": "MLM accuracy (training, mean of the last 10 steps)",
              "value": float(np.mean([h["mlm_acc"] for h in last])),
              "dataset": _dataset_name(cfg)}
    record = publish_run(cfg, DEFAULTS, run.paths()[0], "scripts/nlp/pretrain_bert.py", metric, comm.size)
    name = cfg["publish_name"] or cfg["model"]
    publish_companion(os.path.join(cfg["out"], "vocab.txt"), name, "vocab", cfg["publish"],
                      url=cfg["publish_url"])
    log(f"published {record['file_name']} and its vocabulary into {cfg['publish']}")
    return record


def _dataset_name(cfg):
    if cfg["corpus"] == WIKIPEDIA:
        return f"wikipedia ({os.path.basename(cfg['data_path']) if cfg['data_path'] else 'gensim enwiki excerpt'})"
    return cfg["corpus"] or cfg.get("data") or "embedded CPython documentation text"


def _phase(cfg, run, pi, ph, net, loss_fn, docs, vocab, comm, log, ctx, scaler, start):
    """Phase ``pi`` (its settings ``ph``) on the shared loop, from ``start`` (the checkpoint's record
    when the phase was under way, else ``{"history": ...}``); returns the step history.

    Each global step takes ``batch_size x accumulate`` instances per worker from the phase's order
    (``EpochSampler``, reshuffled every pass over the instances), summed in ``accumulate``
    micro-batches, each split over ``ctx``. The schedule (over steps) is scaled by the global batch
    against the one of ``ref_workers`` (default: the starting count) and ramps on a resize. Every
    step adds a record; ``log.jsonl`` keeps every ``log_every``-th; a checkpoint is written every
    ``ckpt_every`` steps and at the phase's end."""
    rank, size, seed = comm.rank, comm.size, int(cfg["seed"])
    L, B, acc, steps = int(ph["seq_len"]), int(ph["batch_size"]), int(ph["accumulate"]), int(ph["steps"])
    glob = B * size * acc
    if ph.get("shards"):
        data = read_shards(ph["shards"], L, len(vocab), f"phase {pi + 1}'s shards")
    else:
        data = create_instances(docs, vocab, L, seed=seed + 1000 * pi, max_predictions=ph.get("max_predictions"))
    held = read_shards(ph["eval_shards"], L, len(vocab), f"phase {pi + 1}'s eval_shards") if ph.get("eval_shards") \
        else data_eval_instances(cfg, vocab, L, pi, ph.get("max_predictions"))   # GluonNLP's --data_eval, or None
    n = len(data["nsp_labels"])
    if n < glob:
        raise UserError(f"phase {pi + 1}: global batch {glob} exceeds the {n} instances of the corpus "
                        f"at sequence length {L}; use a smaller batch or a bigger corpus")
    if rank == 0:
        log(f"phase {pi + 1}: seq {L}, {n} instances, global batch {glob} = {B} per worker x "
            f"{size} workers x {acc} accumulation, {steps} steps, lr {ph['lr']}")
    sched = ElasticRamp(WarmupConstantDecay(float(ph["lr"]), steps, int(ph["warmup"] * steps),
                                            int(ph["constant"] * steps)),
                        ref_batch=B * acc * int(cfg["ref_workers"] or size), ramp_steps=int(cfg["ramp_steps"]),
                        global_batch=B * acc * size)
    params = net.collect_params()
    exclude_from_weight_decay(params)
    for p in params.values():
        if p.grad_req != "null":
            p.grad_req = "add" if acc > 1 else "write"
    opt_params, _ = for_dtype({"lr_scheduler": sched, "wd": float(cfg["wd"])}, cfg["dtype"])
    trainer = DistributedTrainer(params, cfg["optimizer"], opt_params,
                                 algorithm=cfg.algorithm_object(), communicator=comm, prefix=f"phase{pi}.")
    loss_fn(net, [mx.nd.array(data[key][:1], dtype=data[key].dtype) for key in KEYS])  # shapes before the state
    if start.get("step"):
        trainer.load_states(run.paths()[1])
    if scaler:   # the scale carried over from the last phase (or the checkpoint)
        start = {**scaler.counters(), **start}

    def step(state, idx, step_size):
        mx.random.seed((seed * 7919 + pi * 104729 + state.step * 13 + trainer.communicator.rank) % 2 ** 31)
        if scaler:   # the scale is state: committed, restored and synced with the rest
            scaler.load_counters(state)
        sums = {}
        for chunk in (c for c in np.array_split(idx, acc) if len(c)):   # (a grown world's last step may be tiny)
            batch = [mx.nd.array(data[key][chunk], dtype=data[key].dtype) for key in KEYS]
            parts = zip(*[gluon.utils.split_and_load(b, ctx[:len(chunk)], even_split=False) for b in batch])
            with autograd.record():
                outs = [loss_fn(net, list(part)) for part in parts]
                losses = [loss * scaler.scale if scaler else loss for loss, _ in outs]
            autograd.backward(losses)
            for _, stats in outs:
                for key, v in stats.items():
                    sums[key] = sums.get(key, 0.0) + float(v.asscalar())
        if scaler:
            scaler.step(trainer, step_size)
            scaler.store_counters(state)
        else:
            trainer.step(step_size)
        if acc > 1:
            for p in params.values():
                if p.grad_req != "null":
                    p.zero_grad()
        return {**sums, "instances": len(idx)}

    def end_step(end):
        t, inst = end.totals, end.totals["instances"]
        rec = {"phase": pi + 1, "step": end.step, "seq_len": L, "global_batch": int(inst), "workers": end.comm.size,
               "mlm_loss": t["mlm_loss_sum"] / inst, "nsp_loss": t["nsp_loss_sum"] / inst,
               "mlm_acc": t["mlm_correct"] / max(t["mlm_count"], 1), "nsp_acc": t["nsp_correct"] / inst,
               "lr": trainer.learning_rate, "elapsed_s": end.elapsed_s}
        rec["loss"] = rec["mlm_loss"] + rec["nsp_loss"]
        if scaler:
            rec.update(scaler.counters())
        if held is not None and end.step == steps:
            rec.update(_evaluate(net, loss_fn, held, B, ctx, end.comm))
            if end.comm.rank == 0:
                log(f"phase {pi + 1} held-out: " + ", ".join(f"{k} {v:.4f}" for k, v in rec.items() if k.startswith("eval_")))
        return rec

    every = int(cfg["log_every"])
    state = fit(run, net, trainer, EpochSampler(n, seed=seed + 1000 * pi), B * acc, 10 ** 9, step,
                stats=STATS,
                elastic=bool(cfg["elastic"]), commit_every=int(cfg["commit_every"]), log=log,
                counters=scaler.counters() if scaler else None, show_progress=bool(cfg["progress"]),
                end_step=end_step, save_every=int(cfg["ckpt_every"]), max_steps=steps, start=start,
                logged=lambda rec: rec["step"] % every == 0, stage=("phase", pi))
    history = state.history
    if trainer.communicator.rank == 0 and history:
        log(f"phase {pi + 1} done: mlm loss {history[-1]['mlm_loss']:.4f}, "
            f"mlm acc {history[-1]['mlm_acc']:.4f}, nsp acc {history[-1]['nsp_acc']:.4f}")
    return history


def _evaluate(net, loss_fn, held, batch_size, ctx, comm):
    """Masked-LM and next-sentence metrics of ``net`` (no dropout) on the held-out instances
    ``held``: each worker takes every ``comm.size``-th instance, the sums are added over the
    workers. ``eval_mlm_loss`` is the mean over instances of the mean cross-entropy over an
    instance's masked tokens, as in training; ``eval_mlm_acc`` the accuracy over all masked tokens."""
    mine = np.arange(comm.rank, len(held["nsp_labels"]), comm.size)
    sums = {}
    for first in range(0, len(mine), batch_size):
        sel = mine[first:first + batch_size]
        batch = [mx.nd.array(held[key][sel], dtype=held[key].dtype) for key in KEYS]
        for part in zip(*[gluon.utils.split_and_load(b, ctx[:len(sel)], even_split=False) for b in batch]):
            _, stats = loss_fn(net, list(part))
            for key, v in stats.items():
                sums[key] = sums.get(key, 0.0) + float(v.asscalar())
    t = world_sums({**sums, "instances": len(mine)}, STATS, comm, name="pretrain.eval")   # the same names everywhere
    inst = max(t["instances"], 1)
    return {"eval_mlm_loss": t["mlm_loss_sum"] / inst, "eval_nsp_loss": t["nsp_loss_sum"] / inst,
            "eval_mlm_acc": t["mlm_correct"] / max(t["mlm_count"], 1), "eval_nsp_acc": t["nsp_correct"] / inst,
            "eval_instances": int(t["instances"])}
