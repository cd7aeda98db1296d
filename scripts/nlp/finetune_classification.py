#!/usr/bin/env python
"""Fine-tune a pretrained BERT on GLUE-style TSV sentence(-pair) classification.

    python scripts/nlp/finetune_classification.py --init runs/bert --train train.tsv --dev dev.tsv \\
        --text-columns sentence1 sentence2 --label-column label
"""
import sys

from gluon_suite.utils import run_cli


def build_parser():
    """The script's flags; GluonNLP's spellings (``--max_len``, ``--batch_size``, ...) are aliases."""
    import argparse

    from gluon_suite.nlp.finetune import optimizer_names
    from gluon_suite.distributed.launch import add_elastic_arguments
    from gluon_suite.model_zoo.registry import model_name
    from gluon_suite.utils.validate import (output_dir, run_folder, ArgumentParser, choice_of, existing_dir, int_at_least, nonneg_int,
                                            positive_float, positive_int, utf8_file)
    p = ArgumentParser(description=__doc__.split("\n")[0], argument_default=argparse.SUPPRESS)
    p.add_argument("--init", type=existing_dir, help="pretraining output folder (or --model NAME --pretrained)")
    p.add_argument("--model", type=model_name, help="a pretrained zoo BERT to start from, with --pretrained "
                   "(gluon-suite zoo list 'bert*' --pretrained)")
    p.add_argument("--pretrained", action="store_true", help="start from --model's zoo checkpoint")
    p.add_argument("--train", required=True, type=utf8_file)
    p.add_argument("--dev", required=True, type=utf8_file)
    p.add_argument("--text-columns", nargs="+")
    p.add_argument("--label-column")
    p.add_argument("--max-len", "--max_len", "--max_seq_length", dest="max_len", type=int_at_least(8),
                   help="tokens per input, longer texts cut")
    p.add_argument("--epochs", type=positive_int)
    p.add_argument("--batch-size", "--batch_size", dest="batch_size", type=positive_int,
                   help="examples per worker and step, split over its --gpus")
    p.add_argument("--lr", "--learning_rate", dest="lr", type=positive_float)
    p.add_argument("--optimizer", type=choice_of(optimizer_names, "optimizer"))
    p.add_argument("--seed", type=nonneg_int)
    p.add_argument("--out", "--output_dir", dest="out", type=output_dir,
                   help="run folder: per-epoch checkpoints and log.jsonl")
    p.add_argument("--resume", type=run_folder,
                   help="none, auto (continue --out if it holds a checkpoint) or a run folder")
    add_elastic_arguments(p)
    from gluon_suite.utils.devices import add_device_arguments
    add_device_arguments(p, defaults=False)
    from gluon_suite.nlp.finetune import ClassifierConfig
    return ClassifierConfig.describe_defaults(p)   # the defaults are the configuration's


def main(argv=None):
    from gluon_suite.nlp.finetune import ClassifierConfig, finetune_classification
    cfg = ClassifierConfig.from_sources(vars(build_parser().parse_args(argv)))
    from gluon_suite.utils.devices import resolve_devices
    ctx, _ = resolve_devices(cfg.gpus, cfg.dtype, cpu_float16=True)
    from gluon_suite.distributed import get_communicator
    comm = get_communicator()
    log = print if comm.rank == 0 or cfg.elastic else (lambda m: None)  # elastic: checked per epoch
    from gluon_suite.utils.fileio import output_folder
    with ctx[0], output_folder(cfg.out):   # the worker's first device as the recipe's default context
        finetune_classification(cfg, comm, log=log, ctx=ctx)
    return 0


if __name__ == "__main__":
    run_cli(main, sys.argv[1:])
