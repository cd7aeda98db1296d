#!/usr/bin/env python
"""Fine-tune a pretrained BERT on GLUE-style TSV sentence(-pair) classification.

    python scripts/nlp/finetune_classification.py --init runs/bert --train train.tsv --dev dev.tsv \\
        --text-columns sentence1 sentence2 --label-column label
"""
import sys

from gluon_suite.utils import UserError, run_cli


def optimizer_names():
    """The optimizer names MXNet knows (lans and adaalter are registered by gluon_suite.optim)."""
    import mxnet as mx
    import gluon_suite.optim  # noqa: F401
    return mx.optimizer.Optimizer.opt_registry


def build_parser():
    """The script's flags; GluonNLP's spellings (``--max_len``, ``--batch_size``, ...) are aliases."""
    from gluon_suite.distributed.launch import add_elastic_arguments
    from gluon_suite.model_zoo.registry import model_name
    from gluon_suite.utils.validate import (output_dir, run_folder, ArgumentParser, choice_of, existing_dir, int_at_least, nonneg_int,
                                            positive_float, positive_int, utf8_file)
    p = ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--init", type=existing_dir, help="pretraining output folder (or --model NAME --pretrained)")
    p.add_argument("--model", type=model_name, help="a pretrained zoo BERT to start from, with --pretrained "
                   "(gluon-suite zoo list 'bert*' --pretrained)")
    p.add_argument("--pretrained", action="store_true", help="start from --model's zoo checkpoint")
    p.add_argument("--train", required=True, type=utf8_file)
    p.add_argument("--dev", required=True, type=utf8_file)
    p.add_argument("--text-columns", nargs="+", default=["sentence"])
    p.add_argument("--label-column", default="label")
    p.add_argument("--max-len", "--max_len", "--max_seq_length", dest="max_len", type=int_at_least(8), default=64,
                   help="tokens per input, longer texts cut (default %(default)s)")
    p.add_argument("--epochs", type=positive_int, default=3)
    p.add_argument("--batch-size", "--batch_size", dest="batch_size", type=positive_int, default=16,
                   help="examples per worker and step, split over its --gpus (default %(default)s)")
    p.add_argument("--lr", "--learning_rate", dest="lr", type=positive_float, default=5e-4)
    p.add_argument("--optimizer", type=choice_of(optimizer_names, "optimizer"), default="adam")
    p.add_argument("--seed", type=nonneg_int, default=0)
    p.add_argument("--out", "--output_dir", dest="out", type=output_dir, default="runs/finetune_classification",
                   help="run folder: per-epoch checkpoints and log.jsonl (default %(default)s)")
    p.add_argument("--resume", type=run_folder, default="none",
                   help="none, auto (continue --out if it holds a checkpoint) or a run folder")
    add_elastic_arguments(p, defaults=True)
    from gluon_suite.utils.devices import add_device_arguments
    add_device_arguments(p)
    return p


def main(argv=None):
    from gluon_suite.nlp.inputs import check_init_folder, check_tsv_files
    from gluon_suite.utils.devices import resolve_devices
    p = build_parser()
    a = p.parse_args(argv)
    ctx, dtype = resolve_devices(a.gpus, a.dtype, cpu_float16=True)
    if bool(a.init) == bool(a.pretrained) or (a.model and not a.pretrained):
        p.error("start from either --init FOLDER or --model NAME --pretrained")
    if len(a.text_columns) > 2:
        raise UserError(f"--text-columns takes one or two columns (a sentence or a pair), got "
                        f"{len(a.text_columns)}; name at most two")
    check_tsv_files(a.train, a.dev, tuple(a.text_columns), a.label_column)
    if a.init:
        check_init_folder(a.init)
    from gluon_suite.distributed import get_communicator
    from gluon_suite.nlp.finetune import finetune_classification
    comm = get_communicator()
    log = print if comm.rank == 0 or a.elastic else (lambda m: None)  # elastic: checked per epoch
    elastic = {"ramp_steps": a.ramp_steps, "commit_every": a.commit_every,
               "ref_workers": a.ref_workers} if a.elastic else None
    from gluon_suite.utils.fileio import output_folder
    with ctx[0], output_folder(a.out):   # the worker's first device as the recipe's default context
        finetune_classification(a.train, a.dev, a.init, tuple(a.text_columns), a.label_column, a.max_len,
                                a.epochs, a.batch_size, a.lr, a.optimizer, a.seed, comm=comm, log=log, elastic=elastic,
                                out=a.out, resume=a.resume, model=a.model,
                                pretrained=a.pretrained, ctx=ctx, dtype=dtype)
    return 0


if __name__ == "__main__":
    run_cli(main, sys.argv[1:])
