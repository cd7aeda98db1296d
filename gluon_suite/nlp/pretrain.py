"""BERT pretraining (masked LM + next-sentence prediction) in phases, on one process or many.

Each phase has its own sequence length, per-worker batch, gradient accumulation, step budget and
LANS schedule (warm-up, plateau, linear decay); the global batch is per-worker x workers x
accumulation. Phase k+1 starts from phase k's final weights with fresh optimizer moments and a
fresh schedule (docs/methods.md, "LANS and LAMB": a phase restart resets both). Checkpoints every ``ckpt_every`` steps make
the run resumable at any point, phase boundaries included.
"""
import os
import time

import mxnet as mx
import numpy as np
from mxnet import autograd, gluon

from ..distributed import DistributedTrainer
from ..distributed.loss_scale import for_dtype
from ..distributed.loop import RunFolder
from ..optim import WarmupConstantDecay, exclude_from_weight_decay
from ..model_zoo import get_model
from ..utils import JsonLinesLogger, UserError, progress, write_json
from ..utils.devices import float16_network
from ..utils.config import settle_compression
from ..utils.fileio import atomic_write
from .pretraining_data import create_instances
from .corpora import load_corpus
from .text import build_vocab, embedded_corpus, load_vocab, tokenizer

DEFAULTS = {
    "model": "bert_2_128_2", "max_length": 512, "corpus": None, "vocab": None, "min_freq": 2, "lower": True,
    "dropout": 0.1, "optimizer": "lans", "wd": 0.01, "seed": 0, "out": "runs/bert",
    "ckpt_every": 50, "resume": "none", "log_every": 1, "progress": True,
    "publish": None, "publish_name": None, "publish_url": None, "card": None,
    "algorithm": "sync", "compressor": "none", "ratio": None, "period": None,
    "elastic": False, "ramp_steps": 50, "commit_every": 20, "ref_workers": None, "dtype": "float32",
    "phases": [{"seq_len": 64, "batch_size": 16, "accumulate": 1, "steps": 100, "lr": 0.005,
                "warmup": 0.1, "constant": 0.2}],
}
PHASE_KEYS = {"seq_len", "batch_size", "accumulate", "steps", "lr", "warmup", "constant",
              "max_predictions"}


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


def pretrain_bert(config, comm, log=print, ctx=None, flags=()):
    """Run the phases of ``config`` (``DEFAULTS`` overridden). Returns the per-step history.
    ``flags``: the keys the command line set; the algorithm/compressor pair is settled as in
    ``settle_compression`` (on one worker, no compression).
    ``ctx``: the worker's contexts (default: the current one); each batch is split over them
    (``split_and_load``, one parameter copy per context, gradients summed by the trainer)."""
    cfg = {**DEFAULTS, **{k: v for k, v in config.items() if v is not None}}
    ctx = list(ctx or [mx.current_context()])
    bad = set(cfg) - set(DEFAULTS)
    if bad:
        raise UserError(f"unknown config key(s): {', '.join(sorted(bad))}")
    workers = int(cfg["ref_workers"] or comm.size) if cfg["elastic"] else comm.size
    phases = check_phases(phase_batches(cfg["phases"], workers))
    dtype = str(cfg["dtype"])
    if dtype not in ("float32", "float16"):
        raise UserError(f"unknown dtype {dtype!r}; use float32 or float16")
    if len(ctx) > 1 and cfg["elastic"]:
        raise UserError("--elastic trains one device per worker; give one --gpus id (horovodrun "
                        "starts one worker per GPU)")
    small = min(int(p["batch_size"]) for p in phases)
    if small < len(ctx):
        raise UserError(f"a phase's batch_size {small} is smaller than the {len(ctx)} devices it is "
                        "split over; raise the batch size or give fewer --gpus")
    out, rank, size = cfg["out"], comm.rank, comm.size
    cfg, notes = settle_compression(cfg, flags, size, elastic=bool(cfg["elastic"]))
    for note in notes if rank == 0 else ():
        log(f"note: {note}")
    if cfg["resume"] not in ("none", "auto"):
        raise UserError(f"--resume takes none or auto (continue OUT), got {cfg['resume']!r}")
    run = RunFolder(out, cfg["resume"], comm, prefix="ckpt", elastic=bool(cfg["elastic"]),
                    required=("phase", "step", "history"))
    state = run.read_state()
    resume = state is not None
    docs, vocab = prepare_text({**cfg, "resume": "auto" if resume else "none"}, out, rank, log)
    max_len = int(cfg["max_length"])  # position embeddings: fixed for all phases (phase 2 is longer)
    longest = max(int(p["seq_len"]) for p in phases)
    if longest > max_len:
        raise UserError(f"a phase has seq_len {longest} > max_length {max_len}; raise --max-length")

    mx.random.seed(int(cfg["seed"]))
    net = get_model(cfg["model"], vocab_size=len(vocab), max_length=max_len, dropout=float(cfg["dropout"]))
    net.initialize(mx.init.Normal(0.02), ctx=ctx)
    float16_network(net, dtype, ctx)
    loss_fn = BertPretrainLoss(len(vocab), dtype)
    start_phase, start_step, history = 0, 0, []
    if resume:
        start_phase, start_step, history = state["phase"], state["step"], state["history"]
        net.load_parameters(run.paths()[0], cast_dtype=True, dtype_source="current")
        if rank == 0:
            log(f"resumed from {out}: phase {start_phase + 1}, step {start_step}")
    if cfg["elastic"]:
        from ..distributed.launch import require_elastic_launch
        require_elastic_launch("scripts/nlp/pretrain_bert.py")
        if start_phase >= len(phases):
            raise UserError(f"{out} has finished all {len(phases)} phase(s); nothing left to train")
    if rank == 0:
        write_json(os.path.join(out, "config.json"), {**cfg, "workers": size, "vocab_size": len(vocab)})
    run.start_fresh()
    logger = run.logger([h for h in history if (h["step"] % int(cfg["log_every"]) == 0)])
    with run:
        history = _phases(cfg, run, phases, start_phase, start_step, history, net, loss_fn, docs, vocab,
                          logger, comm, log, ctx)
    logger.close()
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


def _phases(cfg, run, phases, start_phase, start_step, history, net, loss_fn, docs, vocab, logger, comm, log,
            ctx):
    """The phases from ``start_phase`` (its step ``start_step``) on; returns the step history."""
    rank, size = comm.rank, comm.size
    # float16: float32 master weights in each phase's optimizer and one dynamic loss scale for all
    # phases (kept in the checkpoints, so that a resumed run scales as the uninterrupted one would)
    _, scaler = for_dtype({}, cfg["dtype"])
    if scaler and history and "loss_scale" in history[-1]:
        scaler.load_counters(history[-1])
    for pi in range(start_phase, len(phases)):
        ph = phases[pi]
        L, B, acc, steps = int(ph["seq_len"]), int(ph["batch_size"]), int(ph["accumulate"]), int(ph["steps"])
        glob = B * size * acc
        data = create_instances(docs, vocab, L, seed=int(cfg["seed"]) + 1000 * pi,
                                max_predictions=ph.get("max_predictions"))
        n = len(data["nsp_labels"])
        if n < glob:
            raise UserError(f"phase {pi + 1}: global batch {glob} exceeds the {n} instances of the corpus "
                            f"at sequence length {L}; use a smaller batch or a bigger corpus")
        if rank == 0:
            log(f"phase {pi + 1}: seq {L}, {n} instances, global batch {glob} = {B} per worker x "
                f"{size} workers x {acc} accumulation, {steps} steps, lr {ph['lr']}")
        sched = WarmupConstantDecay(float(ph["lr"]), steps, int(ph["warmup"] * steps),
                                    int(ph["constant"] * steps))
        params = net.collect_params()
        exclude_from_weight_decay(params)
        for p in params.values():
            if p.grad_req != "null":
                p.grad_req = "add" if acc > 1 else "write"
        opt_params, _ = for_dtype({"lr_scheduler": sched, "wd": float(cfg["wd"])}, cfg["dtype"])
        trainer = DistributedTrainer(params, cfg["optimizer"], opt_params,
                                     algorithm=cfg["algorithm"], compressor=cfg["compressor"],
                                     ratio=cfg["ratio"], period=cfg["period"], seed=int(cfg["seed"]),
                                     communicator=comm, prefix=f"phase{pi}.")
        if cfg["elastic"]:
            history = _phase_elastic(cfg, run, pi, phases, net, loss_fn, data, trainer, comm, history,
                                     start_step if pi == start_phase else 0, log, scaler)
            if pi + 1 < len(phases) and trainer.communicator.rank == 0:
                log(f"phase {pi + 1} done; an elastic launch trains one phase: launch again with "
                    "--resume auto for the next")
            break
        first = 0
        if pi == start_phase and start_step:
            trainer.load_states(run.paths()[1])
            first = start_step
        per_epoch = n // glob
        t0 = time.time()
        for step in progress(range(first, steps), total=steps - first, desc=f"phase {pi + 1}",
                             enabled=bool(cfg["progress"]) and rank == 0):
            run.at(pi + 1, step, unit="phase")
            epoch, k = divmod(step, per_epoch)
            perm = np.random.RandomState((int(cfg["seed"]) * 31 + pi * 1009 + epoch) % 2 ** 31).permutation(n)
            chunk = perm[k * glob:(k + 1) * glob]
            mx.random.seed((int(cfg["seed"]) * 7919 + pi * 104729 + step * 13 + rank) % 2 ** 31)
            tot = {}
            for a in range(acc):
                sel = chunk[(a * size + rank) * B:(a * size + rank + 1) * B]
                batch = [mx.nd.array(data[key][sel], dtype=data[key].dtype) for key in (
                    "input_ids", "token_types", "valid_length", "masked_positions", "masked_ids",
                    "masked_weights", "nsp_labels")]
                parts = zip(*[gluon.utils.split_and_load(b, ctx, even_split=False) for b in batch])
                with autograd.record():
                    outs = [loss_fn(net, list(part)) for part in parts]
                    losses = [loss * (scaler.scale / acc) if scaler else loss / acc for loss, _ in outs]
                autograd.backward(losses)
                for _, stats in outs:
                    for key, v in stats.items():
                        tot[key] = tot.get(key, 0.0) + float(v.asscalar())
            if scaler:
                scaler.step(trainer, B)
            else:
                trainer.step(B)
            if acc > 1:
                for p in params.values():
                    if p.grad_req != "null":
                        p.zero_grad()
            counts = comm.allreduce(mx.nd.array([tot[k] for k in sorted(tot)], dtype="float64"),
                                    average=False, name="pretrain.stats").asnumpy()
            t = dict(zip(sorted(tot), counts))
            inst = B * acc * size
            rec = {"phase": pi + 1, "step": step + 1, "seq_len": L, "global_batch": glob,
                   "mlm_loss": t["mlm_loss_sum"] / inst, "nsp_loss": t["nsp_loss_sum"] / inst,
                   "mlm_acc": t["mlm_correct"] / max(t["mlm_count"], 1), "nsp_acc": t["nsp_correct"] / inst,
                   "lr": trainer.learning_rate, "elapsed_s": round(time.time() - t0, 3)}
            rec["loss"] = rec["mlm_loss"] + rec["nsp_loss"]
            if scaler:
                rec.update(scaler.counters())
            history.append(rec)
            if rank == 0 and (step + 1) % int(cfg["log_every"]) == 0:
                logger.log(**rec)
            last = step + 1 == steps
            if (step + 1) % int(cfg["ckpt_every"]) == 0 or last:
                run.save(net, trainer, {"phase": pi + (1 if last else 0), "step": 0 if last else step + 1,
                                        "history": history}, tag=f"{pi}.{step}")
        if rank == 0:
            log(f"phase {pi + 1} done: mlm loss {history[-1]['mlm_loss']:.4f}, "
                f"mlm acc {history[-1]['mlm_acc']:.4f}, nsp acc {history[-1]['nsp_acc']:.4f}")
    return history


def _phase_elastic(cfg, run, pi, phases, net, loss_fn, data, trainer, comm, history, start_step, log,
                   scaler=None):
    """One phase under Horovod Elastic: each global step takes ``batch x accumulate`` samples per
    worker from the epoch's order (``ElasticSampler``), the schedule (over steps) is scaled by the
    global batch against the starting one (or ``ref_workers``) and ramps on a resize; whoever is
    rank 0 writes the log and ``ckpt.rank0.*`` + ``state.json`` every ``ckpt_every`` steps."""
    from ..distributed.elastic import train_elastic
    from ..optim import ElasticRamp
    ph = phases[pi]
    L, B, acc, steps = int(ph["seq_len"]), int(ph["batch_size"]), int(ph["accumulate"]), int(ph["steps"])
    base = trainer.optimizer.lr_scheduler
    trainer.optimizer.lr_scheduler = ElasticRamp(
        base, ref_batch=B * acc * int(cfg["ref_workers"] or comm.size), ramp_steps=int(cfg["ramp_steps"]),
        global_batch=B * acc * comm.size)
    out, seed, n = cfg["out"], int(cfg["seed"]), len(data["nsp_labels"])
    keys = ("input_ids", "token_types", "valid_length", "masked_positions", "masked_ids",
            "masked_weights", "nsp_labels")
    loss_fn(net, [mx.nd.array(data[key][:1], dtype=data[key].dtype) for key in keys])  # deferred init
    if start_step:
        trainer.load_states(run.paths()[1])
    t0 = time.time()
    params = net.collect_params()

    def step(state, idx, step_size):
        c = trainer.communicator
        run.at(pi + 1, state.step, unit="phase")
        if scaler:   # the committed scale after a reset (restore, or rank 0's for a new worker)
            scaler.load_counters(state)
        mx.random.seed((seed * 7919 + pi * 104729 + state.step * 13 + c.rank) % 2 ** 31)
        tot = {}
        for chunk in np.array_split(idx, acc):
            if len(chunk) == 0:
                continue
            batch = [mx.nd.array(data[key][chunk], dtype=data[key].dtype) for key in keys]
            with autograd.record():
                loss, stats = loss_fn(net, batch)
                if scaler:
                    loss = loss * scaler.scale
            loss.backward()
            for key, v in stats.items():
                tot[key] = tot.get(key, 0.0) + float(v.asscalar())
        if scaler:   # the scale is elastic state: committed, restored and synced with the rest
            scaler.step(trainer, step_size)
            scaler.store_counters(state)
        else:
            trainer.step(step_size)
        if acc > 1:
            for p in params.values():
                if p.grad_req != "null":
                    p.zero_grad()
        counts = c.allreduce(mx.nd.array([tot[k] for k in sorted(tot)] + [len(idx)], dtype="float64"),
                             average=False, name="pretrain.stats").asnumpy()
        t, inst = dict(zip(sorted(tot), counts)), counts[-1]
        rec = {"phase": pi + 1, "step": state.step + 1, "seq_len": L, "global_batch": int(inst),
               "workers": c.size, "mlm_loss": t["mlm_loss_sum"] / inst, "nsp_loss": t["nsp_loss_sum"] / inst,
               "mlm_acc": t["mlm_correct"] / max(t["mlm_count"], 1), "nsp_acc": t["nsp_correct"] / inst,
               "lr": trainer.learning_rate, "elapsed_s": round(time.time() - t0, 3)}
        rec["loss"] = rec["mlm_loss"] + rec["nsp_loss"]
        if scaler:
            rec.update(scaler.counters())
        history[:] = [h for h in history if (h["phase"], h["step"]) < (pi + 1, rec["step"])] + [rec]
        if c.rank == 0 and rec["step"] % int(cfg["log_every"]) == 0:  # whoever is rank 0 now
            lg = JsonLinesLogger(os.path.join(out, "log.jsonl"), mode="a")
            lg.log(**rec)
            lg.close()
        last = rec["step"] == steps
        if rec["step"] % int(cfg["ckpt_every"]) == 0 or last:
            run.save(net, trainer, {"phase": pi + (1 if last else 0), "step": 0 if last else rec["step"],
                                    "history": history}, tag=f"{pi}.{rec['step']}")

    # epochs: unbounded, the phase's step budget ends it
    train_elastic(net, trainer, n, B * acc, 10 ** 9, step, None, seed=seed + 1000 * pi,
                  commit_every=int(cfg["commit_every"]), max_steps=steps, start={"step": start_step},
                  counters=scaler.counters() if scaler else None)
    if trainer.communicator.rank == 0 and history:
        log(f"phase {pi + 1} done: mlm loss {history[-1]['mlm_loss']:.4f}, "
            f"mlm acc {history[-1]['mlm_acc']:.4f}, nsp acc {history[-1]['nsp_acc']:.4f}")
    return history
