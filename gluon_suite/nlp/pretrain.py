"""BERT pretraining (masked LM + next-sentence prediction) in phases, on one process or many.

Each phase has its own sequence length, per-worker batch, gradient accumulation, step budget and
LANS schedule (warm-up, plateau, linear decay); the global batch is per-worker x workers x
accumulation. Phase k+1 starts from phase k's final weights with fresh optimizer moments and a
fresh schedule (docs/methods.md, "LANS and LAMB": a phase restart resets both). Checkpoints every ``ckpt_every`` steps make
the run resumable at any point, phase boundaries included.
"""
import argparse
import dataclasses
import glob
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
from ..model_zoo.registry import model_name
from ..utils import UserError
from ..utils.devices import DeviceOptions, float16_network
from ..utils.runconfig import PublishOptions, RecipeConfig, option
from ..utils.validate import (choice_of, float_range, fraction, int_at_least, nonneg_float, nonneg_int, output_dir,
                              positive_float, positive_int, suggest, utf8_file)
from ..utils.fileio import atomic_path, atomic_write
from .pretraining_data import create_instances
from .corpora import load_corpus
from .text import build_vocab, embedded_corpus, load_vocab, tokenizer

_INT = {"seq_len", "batch_size", "total_batch_size", "accumulate", "steps", "max_predictions"}
_FRACTION = {"warmup", "constant"}
_PATHS = {"shards", "eval_shards"}   # a folder of .npz shards or a glob (write_shards)
PHASE_KEYS = _INT | _FRACTION | _PATHS | {"lr"}
_REQUIRED = ("seq_len", "steps", "lr")
_EXAMPLE = "e.g. seq_len=128,batch_size=16,steps=100,lr=0.005"


def shard_spec(value):
    """A phase's ``shards``/``eval_shards``: a folder holding ``.npz`` shards, or a glob matching some."""
    text = str(value)
    found = glob.glob(os.path.join(text, "*.npz")) if os.path.isdir(text) else glob.glob(text)
    if not found:
        raise argparse.ArgumentTypeError(f"{text!r} names no .npz shards (a folder of them, or a glob)")
    return text


def check_phase(items, where):
    """Check and convert one phase (a mapping of key -> value; ``where`` names it in messages):
    known keys, whole numbers >= 1 for sizes and steps, lr > 0, warmup/constant fractions."""
    if not isinstance(items, dict):
        raise UserError(f"{where} must be a mapping of key: value ({_EXAMPLE}), got {items!r}")
    out = {}
    for k, v in items.items():
        if k not in PHASE_KEYS:
            raise UserError(f"{where}: unknown key {k!r}{suggest(k, sorted(PHASE_KEYS))}; valid keys: "
                            f"{', '.join(sorted(PHASE_KEYS))}")
        check = shard_spec if k in _PATHS else positive_int if k in _INT else fraction if k in _FRACTION \
            else positive_float
        try:
            out[k] = check(v)
        except argparse.ArgumentTypeError as exc:
            raise UserError(f"{where}: {k} {exc}; fix the value ({_EXAMPLE})") from None
    missing = [k for k in _REQUIRED if k not in out]
    if "batch_size" not in out and "total_batch_size" not in out:
        missing.insert(1, "batch_size (or total_batch_size)")
    if missing:
        raise UserError(f"{where} lacks {', '.join(missing)}; every phase needs seq_len, batch_size (per worker) "
                        f"or total_batch_size (global), steps and lr ({_EXAMPLE})")
    if "batch_size" in out and "total_batch_size" in out:
        raise UserError(f"{where} gives both batch_size (per worker) and total_batch_size (global = batch_size x "
                        "workers x accumulate); give one of them")
    if out.get("warmup", 0.1) + out.get("constant", 0.0) > 1:
        raise UserError(f"{where}: warmup + constant are fractions of the steps and must sum to <= 1")
    return out


def phase_list(value):
    """The ``phases`` of a configuration: a non-empty list of phase mappings (``check_phase``)."""
    if not isinstance(value, (list, tuple)) or not value:
        raise argparse.ArgumentTypeError(f"must be a list of phases ({_EXAMPLE} as mappings), got {value!r}")
    try:
        return [check_phase(dict(ph) if isinstance(ph, dict) else ph, f"phase {i}")
                for i, ph in enumerate(value, start=1)]
    except UserError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


phase_list.takes_lists = True


def corpus_spec(text):
    """``corpus``: ``gensim:NAME`` (a corpus inside the installed gensim) or a UTF-8 text file."""
    from .corpora import GENSIM_CORPORA, PREFIX
    text = str(text)
    if text.startswith(PREFIX):
        if text[len(PREFIX):] not in GENSIM_CORPORA:
            raise argparse.ArgumentTypeError(f"{text}: unknown gensim corpus; choose one of "
                                             + ", ".join(PREFIX + n for n in GENSIM_CORPORA) + " or give a text file")
        return text
    return utf8_file(text)


def optimizer_names():
    """The optimizer names MXNet knows (lans and adaalter are registered by gluon_suite.optim)."""
    return mx.optimizer.Optimizer.opt_registry


@dataclasses.dataclass
class PretrainConfig(RecipeConfig, PublishOptions, DeviceOptions, ElasticOptions, CompressionOptions):
    """``pretrain_bert``'s configuration: the script's flags with ``_`` for ``-``, and ``phases``,
    each a mapping of ``PHASE_KEYS`` (``check_phase``)."""
    SCRIPT: ClassVar[str] = "scripts/nlp/pretrain_bert.py"
    STATE_KEYS: ClassVar[tuple] = ("phase", "step", "history", "workers")
    CHECKPOINT_FILES: ClassVar[tuple] = ("ckpt.rank0.params", "ckpt.rank0.states")
    YAML_EXTRA: ClassVar[dict] = {"phases": phase_list}
    model: str = option("bert_2_128_2", model_name)
    max_length: int = option(512, int_at_least(8), help="positions of the model (>= every seq_len)")
    corpus: str = option(None, corpus_spec)
    vocab: str = option(None, utf8_file)
    min_freq: int = option(2, positive_int)
    lower: bool = option(True)
    dropout: float = option(0.1, float_range(0, 1, high_open=True, what="a fraction"))
    optimizer: str = option("lans", choice_of(optimizer_names, "optimizer"))
    wd: float = option(0.01, nonneg_float)
    seed: int = option(0, nonneg_int)
    out: str = option("runs/bert", output_dir)
    ckpt_every: int = option(50, positive_int)
    resume: str = option("none", choice_of(("none", "auto"), "--resume value"), help="none or auto")
    log_every: int = option(1, positive_int)
    progress: bool = option(True)
    phases: list = option([{"seq_len": 64, "batch_size": 16, "accumulate": 1, "steps": 100, "lr": 0.005,
                            "warmup": 0.1, "constant": 0.2}], phase_list)

    def check(self, comm):
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


def phase_batches(phases, workers):
    """Each phase's batch as the per-worker batch the loop uses; the one place where a phase's two
    batch keys meet. ``batch_size`` is per worker (split over the worker's devices);
    ``total_batch_size`` is GluonNLP's ``--total_batch_size``, the global batch of one optimizer
    step: ``total_batch_size = batch_size x workers x accumulate``. A phase gives one of the two; a
    total must be a multiple of workers x accumulate. ``workers`` is the job's worker count (under
    Horovod Elastic: ``--ref-workers``, else the starting count). Returns the phases with
    ``batch_size`` set and ``total_batch_size`` dropped; the phase banner prints the global batch."""
    out = []
    for i, ph in enumerate(phases, start=1):
        ph = dict(ph)
        if "total_batch_size" in ph:
            total = int(ph.pop("total_batch_size"))
            if "batch_size" in ph:
                raise UserError(f"phase {i} gives both batch_size (per worker) and total_batch_size (global); "
                                "give one of them")
            per_step = workers * int(ph.get("accumulate", 1))
            if total < per_step or total % per_step:
                low, high = max(per_step, total // per_step * per_step), (total // per_step + 1) * per_step
                near = f"{low} or {high}" if low != high and low < total else f"{high}"
                raise UserError(f"phase {i}: total_batch_size {total} is not a multiple of {workers} worker(s) x "
                                f"{int(ph.get('accumulate', 1))} accumulation = {per_step}; use {near}")
            ph["batch_size"] = total // per_step
        out.append(ph)
    return out


def check_phases(phases):
    """Validate the phase list; returns it with defaults filled in."""
    if not phases:
        raise UserError("at least one pretraining phase is needed")
    out = []
    for i, ph in enumerate(phases, start=1):
        bad = set(ph) - PHASE_KEYS
        if bad:
            raise UserError(f"phase {i}: unknown key(s) {', '.join(sorted(bad))}; valid: {', '.join(sorted(PHASE_KEYS))}")
        ph = {"accumulate": 1, "warmup": 0.1, "constant": 0.0, **ph}
        for k in ("seq_len", "batch_size", "accumulate", "steps"):
            if int(ph.get(k, 0)) < 1:
                raise UserError(f"phase {i}: {k} must be >= 1, got {ph.get(k)}")
        if not 0 <= ph["warmup"] + ph["constant"] <= 1:
            raise UserError(f"phase {i}: warmup + constant are fractions of the steps and must sum to <= 1")
        out.append(ph)
    return out


class BertPretrainLoss:
    """Per-instance loss: mean MLM cross-entropy over the instance's masked tokens plus the NSP
    cross-entropy; the batch loss is the mean over instances (so that B instances on each of n
    workers give exactly the gradient of n*B instances on one)."""

    def __init__(self, vocab_size, dtype="float32"):
        self.V = vocab_size
        self.dtype = dtype
        self.ce = gluon.loss.SoftmaxCrossEntropyLoss()

    def __call__(self, net, batch):
        ids, types, vlen, mpos, mids, mw, nsp = batch
        # the valid length in the network's dtype (as GluonNLP's float16 scripts); the scores and
        # the loss in float32 (a float16 softmax over the vocabulary loses precision)
        _, _, nsp_score, mlm_score = net(ids, types, vlen.astype(self.dtype), mpos)
        nsp_score, mlm_score = nsp_score.astype("float32", copy=False), mlm_score.astype("float32", copy=False)
        B, P = mids.shape
        tok = self.ce(mlm_score.reshape((-1, self.V)), mids.reshape((-1,))).reshape((B, P)) * mw
        mlm = tok.sum(axis=1) / mx.nd.maximum(mw.sum(axis=1), 1.0)
        nspl = self.ce(nsp_score, nsp)
        loss = mlm + nspl
        stats = {"mlm_loss_sum": mlm.sum(), "nsp_loss_sum": nspl.sum(),
                 "mlm_correct": ((mlm_score.argmax(axis=-1) == mids.astype("float32")) * mw).sum(),
                 "mlm_count": mw.sum(),
                 "nsp_correct": (nsp_score.argmax(axis=-1) == nsp.astype("float32")).sum()}
        return loss, stats


KEYS = ("input_ids", "token_types", "valid_length", "masked_positions", "masked_ids", "masked_weights",
        "nsp_labels")
STATS = ("mlm_loss_sum", "nsp_loss_sum", "mlm_correct", "mlm_count", "nsp_correct", "instances")   # a step's sums


def write_shards(data, folder, per_shard=10000):
    """Write the instances ``data`` (``create_instances``' arrays) into ``folder`` as NumPy
    ``part-NNNNN.npz`` files of at most ``per_shard`` instances each (each written atomically; no
    pickled objects). Returns the paths. Pretraining reads them back with a phase's ``shards`` (or
    ``eval_shards``, for held-out evaluation) naming the folder or a glob."""
    os.makedirs(folder, exist_ok=True)
    n, paths = len(data["nsp_labels"]), []
    for i, first in enumerate(range(0, n, int(per_shard))):
        path = os.path.join(folder, f"part-{i:05d}.npz")
        with atomic_path(path) as tmp, open(tmp, "wb") as f:
            np.savez(f, **{k: data[k][first:first + int(per_shard)] for k in KEYS})
        paths.append(path)
    return paths


def read_shards(spec, seq_len, vocab_size, what="shards"):
    """The instances of the shards ``spec`` (a folder of ``.npz`` files or a glob), in name order, as
    one dict of arrays; checked for the arrays, the phase's ``seq_len`` and the vocabulary's size."""
    paths = sorted(glob.glob(os.path.join(spec, "*.npz")) if os.path.isdir(spec) else glob.glob(spec))
    if not paths:
        raise UserError(f"{what} {spec}: no .npz shards there; write them with nlp.pretrain.write_shards")
    parts = []
    for path in paths:
        try:
            with np.load(path, allow_pickle=False) as z:
                parts.append({k: z[k] for k in KEYS})
        except (OSError, ValueError, KeyError) as exc:
            raise UserError(f"{path} is not a pretraining shard ({' '.join(str(exc).split())[:100]}); "
                            f"it needs the arrays {', '.join(KEYS)}") from None
    shapes = {(p["input_ids"].shape[1], p["masked_ids"].shape[1]) for p in parts}
    if len(shapes) > 1 or next(iter(shapes))[0] != seq_len:
        raise UserError(f"{what} {spec} hold sequences of {sorted(s for s, _ in shapes)} tokens (masked slots "
                        f"{sorted(m for _, m in shapes)}); the phase's seq_len is {seq_len}: build them for it")
    data = {k: np.concatenate([p[k] for p in parts]) for k in KEYS}
    if int(data["input_ids"].max(initial=0)) >= vocab_size or int(data["masked_ids"].max(initial=0)) >= vocab_size:
        raise UserError(f"{what} {spec} use token ids beyond this vocabulary's {vocab_size}: give the --vocab "
                        "they were built with")
    return data


def prepare_text(cfg, out, rank, log):
    """Documents (token lists) and the vocabulary, saved as OUT/vocab.txt for resumes."""
    if cfg["corpus"]:
        docs = load_corpus(cfg["corpus"])
    else:
        docs = embedded_corpus()
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
    docs, vocab = prepare_text({**cfg, "resume": "none" if state is None else "auto"}, out, rank, log)
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
    cfg.save(comm, vocab_size=len(vocab))
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
              "dataset": cfg["corpus"] or "embedded CPython documentation text"}
    record = publish_run(cfg, DEFAULTS, run.paths()[0], "scripts/nlp/pretrain_bert.py", metric, comm.size)
    name = cfg["publish_name"] or cfg["model"]
    publish_companion(os.path.join(cfg["out"], "vocab.txt"), name, "vocab", cfg["publish"],
                      url=cfg["publish_url"])
    log(f"published {record['file_name']} and its vocabulary into {cfg['publish']}")
    return record


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
        else None
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
                                 algorithm=cfg["algorithm"], compressor=cfg["compressor"],
                                 ratio=cfg["ratio"], period=cfg["period"], seed=seed,
                                 communicator=comm, prefix=f"phase{pi}.", **cfg.auto_options())
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
