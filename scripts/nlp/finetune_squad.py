#!/usr/bin/env python
"""Fine-tune a pretrained BERT for extractive QA on SQuAD v1.1 JSON files (EM/F1 on dev).

    python scripts/nlp/finetune_squad.py --init runs/bert --train train-v1.1.json --dev dev-v1.1.json
"""
import sys

from gluon_suite.utils import run_cli


def optimizer_names():
    """The optimizer names MXNet knows (lans and adaalter are registered by gluon_suite.optim)."""
    import mxnet as mx
    import gluon_suite.optim  # noqa: F401
    return mx.optimizer.Optimizer.opt_registry


def build_parser():
    """The script's flags; GluonNLP's spellings (``--max_seq_length``, ``--doc_stride``, ...) are aliases."""
    from gluon_suite.distributed.launch import add_elastic_arguments
    from gluon_suite.model_zoo.registry import model_name
    from gluon_suite.utils.validate import (output_dir, run_folder, ArgumentParser, choice_of, existing_dir, int_at_least, utf8_file,
                                            nonneg_int, positive_float, positive_int)
    p = ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--init", type=existing_dir, help="pretraining output folder (or --model NAME --pretrained)")
    p.add_argument("--model", type=model_name, help="a pretrained zoo BERT to start from, with --pretrained "
                   "(gluon-suite zoo list 'bert*' --pretrained)")
    p.add_argument("--pretrained", action="store_true", help="start from --model's zoo checkpoint")
    p.add_argument("--train", required=True, type=utf8_file)
    p.add_argument("--dev", required=True, type=utf8_file)
    p.add_argument("--max-len", "--max_seq_length", dest="max_len", type=int_at_least(8), default=96,
                   help="tokens per input window: [CLS] question [SEP] context window [SEP] (default %(default)s)")
    p.add_argument("--max-query-length", "--max_query_length", dest="max_query_length", type=positive_int,
                   default=24, help="question tokens kept, the rest cut off (default %(default)s)")
    p.add_argument("--doc-stride", "--doc_stride", dest="doc_stride", type=positive_int, default=32,
                   help="a context longer than its window is split into windows this many tokens apart "
                   "(default %(default)s)")
    p.add_argument("--epochs", type=positive_int, default=3)
    p.add_argument("--batch-size", "--batch_size", dest="batch_size", type=positive_int, default=16,
                   help="windows per worker and step, split over its --gpus (default %(default)s)")
    p.add_argument("--lr", "--learning_rate", dest="lr", type=positive_float, default=5e-4)
    p.add_argument("--optimizer", type=choice_of(optimizer_names, "optimizer"), default="adam")
    p.add_argument("--seed", type=nonneg_int, default=0)
    p.add_argument("--out", "--output_dir", dest="out", type=output_dir, default="runs/finetune_squad",
                   help="run folder: per-epoch checkpoints and log.jsonl (default %(default)s)")
    p.add_argument("--resume", type=run_folder, default="none",
                   help="none, auto (continue --out if it holds a checkpoint) or a run folder")
    add_elastic_arguments(p, defaults=True)
    from gluon_suite.utils.devices import add_device_arguments
    add_device_arguments(p)
    return p


def main(argv=None):
    from gluon_suite.nlp.inputs import check_init_folder, check_squad_files
    from gluon_suite.nlp.tasks import check_squad_lengths
    from gluon_suite.utils.devices import resolve_devices
    p = build_parser()
    a = p.parse_args(argv)
    ctx, dtype = resolve_devices(a.gpus, a.dtype, cpu_float16=True)
    if bool(a.init) == bool(a.pretrained) or (a.model and not a.pretrained):
        p.error("start from either --init FOLDER or --model NAME --pretrained")
    check_squad_lengths(a.max_len, a.max_query_length, a.doc_stride)
    check_squad_files(a.train, a.dev)
    if a.init:
        check_init_folder(a.init)
    from gluon_suite.distributed import get_communicator
    from gluon_suite.nlp.finetune import finetune_squad
    comm = get_communicator()
    log = print if comm.rank == 0 or a.elastic else (lambda m: None)  # elastic: checked per epoch
    elastic = {"ramp_steps": a.ramp_steps, "commit_every": a.commit_every,
               "ref_workers": a.ref_workers} if a.elastic else None
    from gluon_suite.utils.fileio import output_folder
    with ctx[0], output_folder(a.out):   # the worker's first device as the recipe's default context
        finetune_squad(a.train, a.dev, a.init, a.max_len, a.epochs, a.batch_size, a.lr, a.optimizer,
                       a.seed, comm=comm, log=log, elastic=elastic,
                       out=a.out, resume=a.resume, model=a.model,
                       pretrained=a.pretrained, ctx=ctx, dtype=dtype, max_query=a.max_query_length,
                       doc_stride=a.doc_stride)
    return 0


if __name__ == "__main__":
    run_cli(main, sys.argv[1:])
