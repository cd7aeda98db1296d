#!/usr/bin/env python
"""Fine-tune a pretrained BERT on GLUE-style TSV sentence(-pair) classification.

    python scripts/nlp/finetune_classification.py --init runs/bert --train train.tsv --dev dev.tsv \\
        --text-columns sentence1 sentence2 --label-column label
    python scripts/nlp/finetune_classification.py --init runs/bert --task_name STS-B --data-dir glue_data/STS-B
"""
import sys

from gluon_suite.utils import run_cli


def build_parser():
    """The script's flags, generated from ``ClassifierConfig``; GluonNLP's spellings are aliases."""
    from gluon_suite.nlp.finetune import ClassifierConfig
    return ClassifierConfig.build_parser(__doc__.split("\n")[0])


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
