#!/usr/bin/env python
"""Fine-tune a pretrained BERT for extractive QA on SQuAD v1.1 JSON files (EM/F1 on dev).

    python scripts/nlp/finetune_squad.py --init runs/bert --train train-v1.1.json --dev dev-v1.1.json
"""
import sys

from gluon_suite.utils import run_cli


def build_parser():
    """The script's flags; GluonNLP's spellings (``--max_seq_length``, ``--doc_stride``, ...) are aliases."""
    from gluon_suite.nlp.finetune import SquadConfig, finetune_parser
    from gluon_suite.utils.validate import int_at_least, positive_int

    def task_flags(p):
        p.add_argument("--max-len", "--max_seq_length", dest="max_len", type=int_at_least(8),
                       help="tokens per input window: [CLS] question [SEP] context window [SEP]")
        p.add_argument("--max-query-length", "--max_query_length", dest="max_query_length", type=positive_int,
                       help="question tokens kept, the rest cut off")
        p.add_argument("--doc-stride", "--doc_stride", dest="doc_stride", type=positive_int,
                       help="a context longer than its window is split into windows this many tokens apart")
    return finetune_parser(__doc__.split("\n")[0], SquadConfig, "windows", task_flags)


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
