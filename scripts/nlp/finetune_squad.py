#!/usr/bin/env python
"""Fine-tune a pretrained BERT for extractive QA on SQuAD v1.1 or v2.0 JSON files (EM/F1 on dev).

    python scripts/nlp/finetune_squad.py --init runs/bert --train train-v1.1.json --dev dev-v1.1.json
    python scripts/nlp/finetune_squad.py --init runs/bert --version_2 --train train-v2.0.json --dev dev-v2.0.json

Each evaluation writes predictions.json, nbest_predictions.json and, with --version_2, null_odds.json
into --out.
"""
import sys

from gluon_suite.utils import run_cli


def build_parser():
    """The script's flags, generated from ``SquadConfig``; GluonNLP's spellings are aliases."""
    from gluon_suite.nlp.finetune import SquadConfig
    return SquadConfig.build_parser(__doc__.split("\n")[0])


def main(argv=None):
    from gluon_suite.nlp.finetune import SquadConfig, finetune_squad
    cfg = SquadConfig.from_sources(vars(build_parser().parse_args(argv)))
    from gluon_suite.utils.devices import resolve_devices
    ctx, _ = resolve_devices(cfg.gpus, cfg.dtype, cpu_float16=True)
    from gluon_suite.distributed import get_communicator
    comm = get_communicator()
    log = print if comm.rank == 0 or cfg.elastic else (lambda m: None)  # elastic: checked per epoch
    from gluon_suite.utils.fileio import output_folder
    with ctx[0], output_folder(cfg.out):   # the worker's first device as the recipe's default context
        finetune_squad(cfg, comm, log=log, ctx=ctx)
    return 0


if __name__ == "__main__":
    run_cli(main, sys.argv[1:])
