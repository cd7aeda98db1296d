"""Fine-tuning BERT: sentence(-pair) classification on GLUE-style TSV files and extractive QA on
SQuAD v1.1 JSON (the tasks themselves are in ``tasks``).

The backbone is a GluonNLP ``BERTModel`` without the pretraining heads, initialised from a
pretraining output (``ckpt.rank0.params`` + ``vocab.txt``) or a zoo checkpoint. Training runs on
the shared loop (``distributed.loop.fit``), fixed-size or under Horovod Elastic alike: per-epoch
resumable checkpoints in ``out``, SIGINT/SIGTERM handled.
"""
import dataclasses
from typing import ClassVar

import mxnet as mx
import numpy as np
from mxnet import gluon

from ..distributed import loss_scale
from ..distributed.options import ElasticOptions
from ..model_zoo.registry import model_name
from ..utils.devices import DeviceOptions, float16_network
from ..utils.errors import UserError
from ..utils.runconfig import RecipeConfig, option
from ..utils.validate import (choice_of, existing_dir, float_range, int_at_least, nonneg_int, output_dir,
                              positive_float, positive_int, run_folder, utf8_file)
from .squad import encode_squad, read_squad
from .tasks import BertClassifier, BertQA, accuracy, binary_f1, encode_pairs, read_tsv
from . import gluonnlp_flags as gnlp
from .backbone import load_backbone  # noqa: F401  (the recipes' start, importable from here)


# ---- configuration -------------------------------------------------------------------------------------
def optimizer_names():
    """The optimizer names MXNet knows (lans and adaalter are registered by gluon_suite.optim;
    GluonNLP's bertadam by gluonnlp.optimizer, where GluonNLP is installed)."""
    try:
        import gluonnlp.optimizer  # noqa: F401  (registers bertadam)
    except ImportError:
        pass
    return mx.optimizer.Optimizer.opt_registry


@dataclasses.dataclass
class FinetuneConfig(RecipeConfig, gnlp.FinetuneGluonNLP, DeviceOptions, ElasticOptions):
    """What both fine-tuning recipes share (the flags of their scripts, with ``_`` for ``-``): the
    data files, the backbone (a pretraining output folder ``init``, ``model`` with ``pretrained``, or
    GluonNLP's files: ``gluonnlp_flags``), the optimisation and the run folder (``out``; None: no
    checkpoints)."""
    STATE_KEYS: ClassVar[tuple] = ("epoch", "history")
    CHECKPOINT_FILES: ClassVar[tuple] = ("last.rank0.params", "last.rank0.states")
    train: str = option(None, utf8_file, required=True, help="training file")
    dev: str = option(None, utf8_file, required=True, help="development file, evaluated after every epoch")
    init: str = option(None, existing_dir, help="pretraining output folder (or --model NAME --pretrained)")
    model: str = option(None, model_name, help="a pretrained zoo BERT to start from, with --pretrained "
                        "(gluon-suite zoo list 'bert*' --pretrained)")
    pretrained: bool = option(False, help="start from --model's zoo checkpoint")
    max_len: int = option(64, int_at_least(8), aliases=("--max_len", "--max_seq_length"),
                          help="tokens per input, longer texts cut")
    epochs: int = option(3, positive_int, help="passes over the training file")
    batch_size: int = option(16, positive_int, aliases=("--batch_size",),
                             help="examples per worker and step, split over its --gpus")
    lr: float = option(5e-4, positive_float, aliases=("--learning_rate",), help="learning rate")
    optimizer: str = option("adam", choice_of(optimizer_names, "optimizer"), help="any MXNet optimizer name")
    seed: int = option(0, nonneg_int)
    out: str = option(None, output_dir, aliases=("--output_dir",),
                      help="run folder: per-epoch checkpoints, log.jsonl and config.json")
    resume: str = option("none", run_folder, help="none, auto (continue --out if it holds a checkpoint) or a run "
                         "folder")

    def check(self, comm):
        if not self.train or not self.dev:
            raise UserError("fine-tuning needs train and dev files: give --train and --dev")
        if not self.check_gluonnlp() and (bool(self.init) == bool(self.pretrained) or
                                          (self.model and not self.pretrained)):
            raise UserError("start from either --init FOLDER, --model NAME --pretrained or GluonNLP's files "
                            "(--bert_model/--bert_dataset/--pretrained-dir)")
        self.check_data()
        if self.init:
            from .inputs import check_init_folder
            check_init_folder(self.init)

    def check_data(self):
        """The task's data files and lengths, read once before any model is built."""

    def check_resume(self):
        return super().check_resume() if self.out else None


@dataclasses.dataclass
class ClassifierConfig(FinetuneConfig, gnlp.ClassifierGluonNLP):
    """``finetune_classification``'s configuration: GLUE-style TSV files."""
    SCRIPT: ClassVar[str] = "scripts/nlp/finetune_classification.py"
    out: str = option("runs/finetune_classification", output_dir, aliases=("--output_dir",),
                      help="run folder: per-epoch checkpoints, log.jsonl and config.json")
    train: str = option(None, utf8_file, help="training file (or --task_name with --data-dir)")
    dev: str = option(None, utf8_file, help="development file, evaluated after every epoch")
    text_columns: list = option(["sentence"], many=True, help="the text's column, or two for a sentence pair")
    label_column: str = option("label", help="the label's column")
    task_name: str = option(None, aliases=("--task_name",), help="a GLUE task (CoLA, SST-2, MRPC, STS-B, QQP, "
                            "MNLI, QNLI, RTE, WNLI) read in its own layout from --data-dir, with its metrics")
    data_dir: str = option(None, existing_dir, aliases=("--data_dir",),
                           help="the GLUE task's folder (or a GLUE folder holding it), with --task_name")

    def check(self, comm):
        if self.task_name:
            from .glue import task_files, task_of
            if not self.data_dir:
                raise UserError(f"--task_name {self.task_name} reads its files from --data-dir; give the "
                                "folder of its GLUE files (gluon-suite samples writes data/glue/<task>)")
            task = task_of(gnlp.gluonnlp_task(self.task_name))
            train, devs = task_files(task, self.data_dir)
            if self.train not in (None, train) or self.dev not in (None, next(iter(devs.values()))):
                raise UserError("--task_name reads train and dev from --data-dir; drop --train/--dev")
            object.__setattr__(self, "task_name", task.name)
            object.__setattr__(self, "train", train)
            object.__setattr__(self, "dev", next(iter(devs.values())))
        elif self.data_dir:
            raise UserError("--data-dir goes with --task_name (a GLUE task); give --task_name or --train/--dev")
        super().check(comm)

    def check_data(self):
        if self.task_name:
            from .glue import glue_data, task_of
            glue_data(task_of(self.task_name), self.data_dir)
            return
        if len(self.text_columns) > 2:
            raise UserError(f"--text-columns takes one or two columns (a sentence or a pair), got "
                            f"{len(self.text_columns)}; name at most two")
        from .inputs import check_tsv_files
        check_tsv_files(self.train, self.dev, tuple(self.text_columns), self.label_column)


@dataclasses.dataclass
class SquadConfig(FinetuneConfig):
    """``finetune_squad``'s configuration: SQuAD v1.1 files (or v2.0 with ``version_2``), windows of
    long contexts, the n-best answers and SQuAD 2.0's null-answer threshold."""
    SCRIPT: ClassVar[str] = "scripts/nlp/finetune_squad.py"
    FLAG_HELP: ClassVar[dict] = {"batch_size": "windows per worker and step, split over its --gpus"}
    out: str = option("runs/finetune_squad", output_dir, aliases=("--output_dir",),
                      help="run folder: per-epoch checkpoints, log.jsonl and config.json")
    max_len: int = option(96, int_at_least(8), aliases=("--max_seq_length",),
                          help="tokens per input window: [CLS] question [SEP] context window [SEP]")
    max_query_length: int = option(24, positive_int, aliases=("--max_query_length",),
                                   help="question tokens kept, the rest cut off")
    doc_stride: int = option(32, positive_int, aliases=("--doc_stride",),
                             help="a context longer than its window is split into windows this many tokens apart")
    version_2: bool = option(False, aliases=("--version_2",),
                             help="SQuAD 2.0: questions may be unanswerable (is_impossible); the answer is \"\" "
                             "when the null score beats the best span's by more than --null-score-diff-threshold")
    n_best_size: int = option(20, positive_int, aliases=("--n_best_size",),
                              help="answers per question in nbest_predictions.json")
    max_answer_length: int = option(30, positive_int, aliases=("--max_answer_length",),
                                    help="the longest answer span predicted, in tokens")
    null_score_diff_threshold: float = option(0.0, float_range(), aliases=("--null_score_diff_threshold",),
                                              help="with --version-2: predict no answer when null score - best "
                                              "span score exceeds this")

    def check_data(self):
        from .squad import check_squad_files, check_squad_lengths
        check_squad_lengths(self.max_len, self.max_query_length, self.doc_stride)
        check_squad_files(self.train, self.dev, self.version_2)


def _start(config_class, config, comm, log):
    """A fine-tuning recipe's start: its checked configuration, saved into ``out`` when there is
    one, and the communicator (the job's, by default)."""
    if comm is None:
        from ..distributed import get_communicator
        comm = get_communicator()
    cfg = config_class.from_dict(config).checked(comm, log)
    if cfg.out:
        cfg.save(comm)
    return cfg, comm


# ---- training ------------------------------------------------------------------------------------------
def _train_loop(cfg, net, arrays, loss_of, comm, log, eval_fn, ctx=None, best=None):
    """Data-parallel fine-tuning for ``cfg.epochs`` epochs on the shared loop
    (``distributed.loop.fit``), evaluating after each; with ``cfg.elastic`` under Horovod Elastic,
    the same loop. The schedule (warm-up over the first ``warmup_ratio`` of the steps, then linear
    decay) runs over epochs and is scaled by the global batch against ``batch x ref_workers``
    (default: the starting count), ramping over ``ramp_steps`` steps on a resize. A step takes
    ``accumulate`` micro-batches of ``batch_size`` per worker, their gradients summed; ``epsilon``
    goes to the optimizer; ``log_interval`` prints the training loss every so many steps;
    ``early_stop`` ends the run when the watched dev metric (``best``, else the first) has not
    matched its best for that many epochs (GluonNLP's flags, ``gluonnlp_flags``).
    With ``out``, every epoch ends with a resumable checkpoint and a ``log.jsonl`` line, and
    ``resume`` ('none', 'auto' or a run folder) continues a stopped run exactly (steps are
    reseeded). ``ctx``: the worker's contexts (default: the current one); each batch is split over
    them. ``dtype`` float16: the network is cast (``loss_of`` computes its loss in float32), the
    optimizer keeps float32 master weights and a dynamic loss scale guards the float16 gradients
    (its state is kept with the rest: committed, checkpointed, restored). ``best``: the metric
    whose highest value so far each record names (``best_epoch``, ``best_<metric>``)."""
    from ..distributed import DistributedTrainer
    from ..distributed.loop import RunFolder, fit
    from ..distributed.sampler import VIRTUAL_STEPS, EpochSampler, over_epochs
    from ..optim import ElasticRamp, WarmupConstantDecay, exclude_from_weight_decay
    epochs, batch, lr, optimizer, seed = cfg.epochs, cfg.batch_size, cfg.lr, cfg.optimizer, cfg.seed
    dtype, out, elastic, acc = cfg.dtype, cfg.out, cfg.elastic, cfg.accumulate
    ctx = list(ctx or [mx.current_context()])
    if batch < len(ctx):
        raise UserError(f"--batch-size {batch} is smaller than the {len(ctx)} devices it is split "
                        "over; raise it or give fewer --gpus")
    if len(ctx) > 1:
        net.collect_params().reset_ctx(ctx)   # one copy per context (split_and_load below)
    n = len(arrays[0])
    sampler = EpochSampler(n, seed=seed)
    total = epochs * VIRTUAL_STEPS
    sched = ElasticRamp(over_epochs(WarmupConstantDecay(lr, total, round(total * cfg.warmup_ratio), 0), sampler),
                        ref_batch=batch * (cfg.ref_workers or comm.size), ramp_steps=cfg.ramp_steps,
                        global_batch=batch * comm.size)
    params = net.collect_params()
    loss_of([mx.nd.array(a[:1], dtype=a.dtype).as_in_context(ctx[0]) for a in arrays])  # deferred shapes
    exclude_from_weight_decay(params)
    if acc > 1:   # the micro-batches' gradients are summed until the step
        for p in params.values():
            if p.grad_req != "null":
                p.grad_req = "add"
    # weight decay only where it is decoupled from the adaptive scaling (LANS, LAMB, BERTAdam): with Adam an
    # L2 term is normalised like a gradient and shrinks small weights by about lr every step
    wd = 0.01 if optimizer in ("lans", "lamb", "bertadam") else 0.0
    eps = {} if cfg.epsilon is None else {"epsilon": cfg.epsilon}
    opt_params, scaler = loss_scale.for_dtype({"lr_scheduler": sched, "wd": wd, **eps}, dtype)
    trainer = DistributedTrainer(params, optimizer, opt_params, communicator=comm, prefix="finetune.")
    run = RunFolder(out, cfg.resume, comm, elastic=elastic, required=("epoch", "history")) if out else None

    every = gnlp.IntervalLog(cfg.log_interval, log) if cfg.log_interval else None
    patience = cfg.get("early_stop")

    def step(state, idx, step_size):
        if patience and state.history and \
                gnlp.patience_left(state.history, gnlp.dev_key(state.history[0], best), patience) <= 0:
            raise gnlp.EarlyStop(state.history, gnlp.dev_key(state.history[0], best))
        mx.random.seed((seed * 131 + state.step * 7 + trainer.communicator.rank) % 2 ** 31)
        if scaler:   # the scale is state: committed, restored and synced with the rest
            scaler.load_counters(state)
        losses = []
        for chunk in gnlp.micro_batches(idx, acc):
            batch_arrays = [mx.nd.array(a[chunk], dtype=a.dtype) for a in arrays]
            parts = zip(*[gluon.utils.split_and_load(b, ctx[:len(chunk)], even_split=False) for b in batch_arrays])
            with mx.autograd.record():
                part = [loss_of(list(p)) for p in parts]
                scaled = [loss * scaler.scale for loss in part] if scaler else part
            mx.autograd.backward(scaled)
            losses += part
        if scaler:
            scaler.step(trainer, step_size)
            scaler.store_counters(state)
        else:
            trainer.step(step_size)
        if acc > 1:
            params.zero_grad()
        loss = sum(loss.sum().as_in_context(mx.cpu()) for loss in losses)
        if every:
            every.add(state.epoch + 1, state.step + 1, loss, len(idx))
        return {"loss": loss, "seen": len(idx)}

    def end_epoch(end):
        with trainer.averaged():
            metrics = eval_fn()
        rec = {"epoch": end.epoch, "train_loss": end.totals["loss"] / max(end.totals["seen"], 1), **metrics,
               "workers": end.comm.size}
        if best:
            top = max([*end.state.history, rec], key=lambda r: r[best])
            rec.update(best_metric=best, best_epoch=top["epoch"], **{f"best_{best}": top[best]})
        if scaler:
            rec.update(loss_scale=end.state.loss_scale, loss_scale_skipped=end.state.loss_scale_skipped)
        if end.comm.rank == 0:
            log(" ".join(f"{k} {v:.4f}" if isinstance(v, float) else f"{k} {v}" for k, v in rec.items()))
        return rec

    try:
        state = fit(run, net, trainer, sampler, batch * acc, epochs, step, end_epoch, stats=("loss", "seen"),
                    elastic=elastic, commit_every=cfg.commit_every, log=log,
                    counters=scaler.counters() if scaler else None)
    except gnlp.EarlyStop as stop:
        log(f"{stop} ({patience}): stopped after epoch {stop.history[-1]['epoch']} of {epochs}")
        return stop.history
    return state.history


def finetune_classification(config, comm=None, log=print, ctx=None):
    """Fine-tune a pretrained backbone on GLUE-style TSV files (``config``: a ``ClassifierConfig``
    or a mapping of its keys); returns the per-epoch history (train loss, dev accuracy and F1).
    ``elastic`` runs it under Horovod Elastic; ``out``/``resume`` as in ``_train_loop``; ``model``
    + ``pretrained`` start from a zoo BERT instead of the folder ``init``. ``ctx``: the worker's
    contexts (default: the current one)."""
    from .text import tokenizer
    cfg, comm = _start(ClassifierConfig, config, comm, log)
    max_len, dtype = cfg.max_len, cfg.dtype
    backbone, vocab, start = load_backbone(cfg.init, model=cfg.model, max_length=max_len, pretrained=cfg.pretrained,
                                           gluonnlp=cfg.gluonnlp_backbone())
    tok = tokenizer(vocab, lower=start.get("lower", True))
    if cfg.task_name:
        from .glue import finetune_glue
        return finetune_glue(cfg, backbone, tok, vocab, comm, log, ctx, _train_loop)
    columns = tuple(cfg.text_columns)
    tr_texts, tr_y, names = read_tsv(cfg.train, columns, cfg.label_column)
    dv_texts, dv_y, _ = read_tsv(cfg.dev, columns, cfg.label_column, labels=names)
    tr = (*encode_pairs(tr_texts, tok, vocab, max_len), tr_y)
    dv = encode_pairs(dv_texts, tok, vocab, max_len)
    mx.random.seed(cfg.seed)
    net = BertClassifier(backbone, len(names))
    net.out.initialize(mx.init.Normal(0.02))
    net.drop.initialize()
    float16_network(net, dtype, list(ctx or [mx.current_context()]))
    ce = gluon.loss.SoftmaxCrossEntropyLoss()

    def loss_of(b):   # valid lengths in the network's dtype, the loss in float32
        return ce(net(b[0], b[1], b[2].astype(dtype)).astype("float32", copy=False), b[3])

    def evaluate():
        logits = net(mx.nd.array(dv[0]), mx.nd.array(dv[1]), mx.nd.array(dv[2], dtype=dtype))
        pred = logits.argmax(axis=1).asnumpy().astype(np.int32)
        out = {"dev_accuracy": accuracy(pred, dv_y)}
        if len(names) == 2:
            out["dev_f1"] = binary_f1(pred, dv_y)
        return out

    return _train_loop(cfg, net, tr, loss_of, comm, log, evaluate, ctx=ctx)


def finetune_squad(config, comm=None, log=print, ctx=None):
    """Fine-tune a pretrained backbone for extractive QA on SQuAD v1.1 files, or v2.0 with
    ``version_2`` (``config``: a ``SquadConfig`` or a mapping of its keys); returns the per-epoch
    history (train loss, dev exact match and F1 in percent; with ``version_2`` also SQuAD 2.0's
    HasAns/NoAns and best-threshold metrics, ``squad_eval.dev_metrics``). Long contexts are split
    into windows (``encode_squad``: ``max_query_length`` question tokens, windows ``doc_stride``
    tokens apart), a window without the answer (every window of an unanswerable question) has the
    null answer [CLS] as its target, and a question's answer is its best span over its windows, or
    "" when its null score wins (``squad_predictions``). With ``out``, every evaluation rewrites
    predictions.json, nbest_predictions.json (and null_odds.json) there. ``out``/``resume`` as in
    ``_train_loop``; ``model`` + ``pretrained`` start from a zoo BERT."""
    from .text import tokenizer
    cfg, comm = _start(SquadConfig, config, comm, log)
    max_len, max_query, doc_stride, dtype = cfg.max_len, cfg.max_query_length, cfg.doc_stride, cfg.dtype
    backbone, vocab, start = load_backbone(cfg.init, model=cfg.model, max_length=max_len, use_pooler=False,
                                           pretrained=cfg.pretrained, gluonnlp=cfg.gluonnlp_backbone())
    tok = tokenizer(vocab, lower=start.get("lower", True))
    tr_ex, dv_ex = read_squad(cfg.train, cfg.version_2), read_squad(cfg.dev, cfg.version_2)
    ids, types, vlen, s, e, _ = encode_squad(tr_ex, tok, vocab, max_len, max_query, doc_stride)
    dv = encode_squad(dv_ex, tok, vocab, max_len, max_query, doc_stride)
    log(f"SQuAD windows: {len(tr_ex)} training questions -> {len(ids)} windows, {len(dv_ex)} dev questions "
        f"-> {len(dv.ids)} (--max-len {max_len}, --max-query-length {max_query}, --doc-stride {doc_stride})"
        + (f"; unanswerable: {sum(not x['answers'] for x in tr_ex)} training, {sum(not x['answers'] for x in dv_ex)}"
           " dev questions" if cfg.version_2 else ""))
    mx.random.seed(cfg.seed)
    net = BertQA(backbone)
    net.span.initialize(mx.init.Normal(0.02))
    float16_network(net, dtype, list(ctx or [mx.current_context()]))
    ce = gluon.loss.SoftmaxCrossEntropyLoss()

    def loss_of(b):   # valid lengths in the network's dtype, the loss in float32
        sl, el = (o.astype("float32", copy=False) for o in net(b[0], b[1], b[2].astype(dtype)))
        return (ce(sl, b[3]) + ce(el, b[4])) / 2

    def evaluate():   # in batches of 64 windows: a dev set's windows at once may not fit a device
        from .squad_eval import dev_metrics
        parts = [net(mx.nd.array(dv[0][b:b + 64]), mx.nd.array(dv[1][b:b + 64]),
                     mx.nd.array(dv[2][b:b + 64], dtype=dtype)) for b in range(0, len(dv[0]), 64)]
        sl, el = (np.concatenate([p[k].astype("float32").asnumpy() for p in parts]) for k in (0, 1))
        return dev_metrics(sl, el, dv.windows, dv_ex, cfg, cfg.out if cfg.out and comm.rank == 0 else None)

    return _train_loop(cfg, net, (ids, types, vlen, s, e), loss_of, comm, log, evaluate, ctx=ctx)
