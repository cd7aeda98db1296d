"""GluonNLP 0.10's BERT script flags in the suite's recipes, with GluonNLP's meanings.

Fine-tuning (``finetune_classifier.py``, ``finetune_squad.py``; ``FinetuneGluonNLP``, and
``ClassifierGluonNLP`` for what only the classifier has):

- ``--bert_model``/``--bert_dataset``/``--pretrained-dir``: start from GluonNLP's own parameter and
  vocabulary files (``gluonnlp_weights``); one of them given, the others take GluonNLP's defaults
  (``bert_12_768_12``, ``book_corpus_wiki_en_uncased``, ``$MXNET_HOME/models``);
- ``--accumulate N``: a step sums the gradients of N micro-batches of ``--batch_size`` each;
- ``--warmup_ratio F``: the fraction of the steps the learning rate warms up over (then linear
  decay to 0), GluonNLP's default 0.1;
- ``--epsilon E``: the optimizer's epsilon (GluonNLP passes 1e-6 to BERTAdam);
- ``--log_interval N``: a line with the mean training loss every N steps;
- ``--early_stop P`` (classifier): stop when the main dev metric has not reached its best for P
  evaluations in a row (GluonNLP's patience: an evaluation at least as good as the best resets it);
- ``--task_name SST``: GluonNLP's name of SST-2;
- ``--gpu`` (SQuAD, bare): GPU 0, as GluonNLP's ``--gpu`` switch.

Pretraining (``run_pretraining.py``; ``PretrainGluonNLP``): ``--data``/``--data_eval`` (file
patterns, comma-separated, of text in the pretraining format, read with ``--raw``: GluonNLP's
pre-processed ``.npz`` files are not read here), ``--raw``. Both: ``--comm_backend`` (``horovod``
and ``device`` are how the suite runs anyway; ``dist_sync_device``, MXNet's parameter server, is
refused in one line).
"""
import dataclasses
import glob
import os

import numpy as np

from ..utils.devices import GPUS_HELP, _gpus_value, gpus_flag
from ..utils.errors import UserError
from ..utils.runconfig import option
from ..utils.validate import _fail, existing_dir, fraction, nonneg_float, positive_int
from .gluonnlp_weights import DEFAULT_DATASET, DEFAULT_MODEL

GROUP = "GluonNLP's flags"
COMM_BACKENDS = ("horovod", "device", "dist_sync_device")
TASK_NAMES = {"SST": "SST-2"}   # GluonNLP's task names that differ from GLUE's


def comm_backend_value(text):
    """``--comm_backend``: horovod (the workers horovodrun starts) or device (one worker on its
    ``--gpus``) are how every script here runs; MXNet's parameter server is refused."""
    text = str(text)
    if text == "dist_sync_device":
        _fail("dist_sync_device does not apply here: the suite has no MXNet parameter-server backend; launch the "
              "workers with horovodrun (--comm_backend horovod) or train one worker on its --gpus (device)")
    if text not in COMM_BACKENDS:
        _fail(f"{text!r}: choose horovod or device (GluonNLP's dist_sync_device has no counterpart here)")
    return text


def gluonnlp_task(name):
    """A GLUE task name as GluonNLP spells it (SST) in GLUE's spelling (SST-2)."""
    return TASK_NAMES.get(name, name) if name else name


@dataclasses.dataclass
class FinetuneGluonNLP:
    """GluonNLP's fine-tuning flags shared by both fine-tuning recipes (the module docstring)."""
    gpus: str = option(None, _gpus_value, flag_type=gpus_flag, aliases=("--gpu",), nargs="?", const="0",
                       help=GPUS_HELP + "; a bare --gpu: GPU 0 (GluonNLP's)")
    bert_model: str = option(None, aliases=("--bert_model",), group=GROUP,
                             help="start from GluonNLP's BERT files: bert_12_768_12 or bert_24_1024_16")
    bert_dataset: str = option(None, aliases=("--bert_dataset",), group=GROUP,
                               help="the dataset of GluonNLP's BERT files (default book_corpus_wiki_en_uncased)")
    pretrained_dir: str = option(None, existing_dir, aliases=("--pretrained_dir",), metavar="DIR", group=GROUP,
                                 help="folder of GluonNLP's files {model}_{dataset}-HASH.params and "
                                 "{dataset}-HASH.vocab (default $MXNET_HOME/models, else ~/.mxnet/models)")
    accumulate: int = option(1, positive_int, group=GROUP, help="micro-batches of --batch-size per step, their "
                             "gradients summed")
    warmup_ratio: float = option(0.1, fraction, aliases=("--warmup_ratio",), group=GROUP,
                                 help="fraction of the steps the learning rate warms up over, then decays linearly")
    epsilon: float = option(None, nonneg_float, group=GROUP, help="the optimizer's epsilon (default: the "
                            "optimizer's own; GluonNLP's scripts give 1e-6)")
    log_interval: int = option(None, positive_int, aliases=("--log_interval",), group=GROUP,
                               help="print the mean training loss every this many steps")
    comm_backend: str = option(None, comm_backend_value, aliases=("--comm_backend",), group=GROUP,
                               help="horovod or device (how the job was launched; dist_sync_device is refused)")

    def gluonnlp_backbone(self):
        """``(model, dataset, folder)`` of GluonNLP's files to start from (GluonNLP's defaults
        for those not given), or None when none of the three flags was given."""
        if not (self.bert_model or self.bert_dataset or self.pretrained_dir):
            return None
        return (self.bert_model or DEFAULT_MODEL, self.bert_dataset or DEFAULT_DATASET, self.pretrained_dir)

    def check_gluonnlp(self):
        """GluonNLP's flags checked before any work; returns whether the backbone is GluonNLP's
        files (their names known and the files present; their hashes are checked when loaded)."""
        if self.epsilon is not None:
            import inspect

            import mxnet as mx
            kind = mx.optimizer.Optimizer.opt_registry.get(self.optimizer)
            if kind is not None and "epsilon" not in inspect.signature(kind.__init__).parameters:
                raise UserError(f"--epsilon does not apply to --optimizer {self.optimizer}, which has no epsilon; "
                                "drop it or choose adam, bertadam, lamb or lans")
        backbone = self.gluonnlp_backbone()
        if backbone is None:
            return False
        if self.init or self.model or self.pretrained:
            raise UserError("--bert_model/--bert_dataset/--pretrained-dir start from GluonNLP's files; drop --init, "
                            "--model and --pretrained (or drop the GluonNLP flags)")
        from .gluonnlp_weights import find_files
        find_files(*backbone)
        return True


@dataclasses.dataclass
class ClassifierGluonNLP:
    """The classifier's own GluonNLP flags: ``--early_stop``."""
    early_stop: int = option(None, positive_int, aliases=("--early_stop",), group=GROUP,
                             help="stop when the main dev metric has not matched its best for this many epochs")



def micro_batches(idx, accumulate):
    """``idx`` cut into ``accumulate`` nearly equal micro-batches (empty ones left out)."""
    return [c for c in np.array_split(np.asarray(idx), accumulate) if len(c)]


def patience_left(history, key, patience):
    """GluonNLP's early-stopping count after the evaluations in ``history`` (records holding
    ``key``): an evaluation at least as good as the best so far resets it to ``patience``, a worse
    one takes one off; training stops when it reaches 0."""
    best, left = None, patience
    for rec in history:
        value = rec[key]
        if best is None or value >= best:
            best, left = value, patience
        else:
            left -= 1
    return left


class EarlyStop(Exception):
    """Raised by a step when the patience ran out: the run ends with the history so far."""

    def __init__(self, history, key):
        super().__init__(f"early stop: {key} has not matched its best for the last evaluations")
        self.history = history


def dev_key(rec, best=None):
    """The metric early stopping watches: ``best`` (a GLUE task's main metric), else the record's
    first dev metric (GluonNLP's first metric)."""
    return best or next(k for k in rec if k.startswith("dev_"))


class IntervalLog:
    """GluonNLP's ``--log_interval``: every ``every`` steps, one line with the mean training loss
    per example over those steps (this worker's); the loss is read only then."""

    def __init__(self, every, log):
        self.every, self.log, self.loss, self.seen = every, log, None, 0

    def add(self, epoch, step, loss, seen):
        """Count step ``step`` (1-based) of ``epoch``: its summed ``loss`` (an NDArray) over ``seen`` examples."""
        self.loss = loss if self.loss is None else self.loss + loss
        self.seen += seen
        if step % self.every == 0:
            self.log(f"epoch {epoch} step {step}: train loss {float(self.loss.asscalar()) / max(self.seen, 1):.4f} "
                     f"(mean of the last {self.every} steps)")
            self.loss, self.seen = None, 0


# ---- pretraining ---------------------------------------------------------------------------------------
def file_patterns(text):
    """GluonNLP's ``--data``: comma-separated file patterns (``dir/*.txt``; a trailing comma is
    allowed), kept as text; each must match a file (``data_files``)."""
    text = str(text)
    if not [p for p in text.split(",") if p.strip()]:
        _fail(f"{text!r} names no file pattern; give one like 'folder/*.txt'")
    return text


def data_files(patterns, flag):
    """The files the patterns of ``flag`` match, each pattern's sorted, in order; a UserError
    names a pattern that matches nothing."""
    files = []
    for pattern in (p.strip() for p in str(patterns).split(",")):
        if not pattern:
            continue
        found = sorted(f for f in glob.glob(os.path.expanduser(pattern)) if os.path.isfile(f))
        if not found:
            raise UserError(f"{flag} {pattern!r} matches no file; give text files in the pretraining format (one "
                            "sentence per line, a blank line between documents)")
        files += found
    return files


def text_documents(patterns, flag):
    """The documents (lists of sentences) of every file ``patterns`` match, in order."""
    from .text import read_corpus
    return [d for path in data_files(patterns, flag) for _, d in read_corpus(path)]


@dataclasses.dataclass
class PretrainGluonNLP:
    """GluonNLP's ``run_pretraining.py`` flags in the pretraining recipe (the module docstring)."""
    data: str = option(None, file_patterns, group=GROUP, help="training text, comma-separated file patterns "
                       "(folder/*.txt), with --raw; instead of --corpus")
    data_eval: str = option(None, file_patterns, aliases=("--data_eval",), group=GROUP,
                            help="held-out text, file patterns as --data, with --raw: masked-LM and next-sentence "
                            "metrics on it at each phase's end")
    raw: bool = option(False, group=GROUP, help="--data/--data-eval are text (the only form read here)")
    comm_backend: str = option(None, comm_backend_value, aliases=("--comm_backend",), group=GROUP,
                               help="horovod or device (how the job was launched; dist_sync_device is refused)")

    def check_gluonnlp(self):
        """GluonNLP's pretraining flags checked before any work (files matched, text readable)."""
        for key, flag in (("data", "--data"), ("data_eval", "--data_eval")):
            if getattr(self, key) is None:
                continue
            if not self.raw:
                raise UserError(f"{flag} without --raw names GluonNLP's pre-processed .npz files, which are not read "
                                f"here; add --raw to read {flag} as text (one sentence per line, a blank line between "
                                "documents), or give pre-built instances as a phase's shards=")
            text_documents(getattr(self, key), flag)
        if self.data and self.corpus:
            raise UserError("--data and --corpus both name the training text; keep one")
        if self.data_eval and any(ph.get("eval_shards") for ph in self.phases):
            raise UserError("--data_eval and a phase's eval_shards both name held-out data; keep one")


def data_eval_instances(cfg, vocab, seq_len, phase, max_predictions=None):
    """Held-out instances of phase ``phase`` from ``--data_eval``'s text (None without it), built
    with the run's vocabulary at the phase's sequence length."""
    if not cfg.get("data_eval"):
        return None
    from .pretraining_data import create_instances
    from .text import tokenizer
    tok = tokenizer(vocab, lower=bool(cfg["lower"]))
    docs = [[tok(s) for s in d] for d in text_documents(cfg["data_eval"], "--data_eval")]
    held = create_instances(docs, vocab, seq_len, seed=int(cfg["seed"]) + 1000 * phase + 500,
                            max_predictions=max_predictions)
    if not len(held["nsp_labels"]):
        raise UserError(f"--data_eval gives no instance at sequence length {seq_len}; give more held-out text")
    return held
