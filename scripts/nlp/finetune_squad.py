#!/usr/bin/env python
"""Fine-tune a pretrained BERT for extractive QA on SQuAD v1.1 JSON files (EM/F1 on dev).

    python scripts/nlp/finetune_squad.py --init runs/bert --train train-v1.1.json --dev dev-v1.1.json
"""
import argparse
import sys

from gluon_suite.utils import run_cli


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--init", required=True, help="pretraining output folder")
    p.add_argument("--train", required=True)
    p.add_argument("--dev", required=True)
    p.add_argument("--max-len", type=int, default=96)
    p.add_argument("--epochs", type=int, default=3)
    p.add_argument("--batch-size", type=int, default=16, help="per worker")
    p.add_argument("--lr", type=float, default=5e-4)
    p.add_argument("--optimizer", default="adam")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", default="runs/finetune_squad",
                   help="run folder: per-epoch checkpoints and log.jsonl (default %(default)s)")
    p.add_argument("--resume", default="none",
                   help="none, auto (continue --out if it holds a checkpoint) or a run folder")
    from gluon_suite.distributed.launch import add_elastic_arguments
    add_elastic_arguments(p, defaults=True)
    a = p.parse_args(argv)
    from gluon_suite.distributed import get_communicator
    from gluon_suite.nlp.finetune import finetune_squad
    comm = get_communicator()
    log = print if comm.rank == 0 or a.elastic else (lambda m: None)  # elastic: checked per epoch
    elastic = {"ramp_steps": a.ramp_steps, "commit_every": a.commit_every,
               "ref_workers": a.ref_workers} if a.elastic else None
    finetune_squad(a.train, a.dev, a.init, a.max_len, a.epochs, a.batch_size, a.lr, a.optimizer,
                   a.seed, comm=comm, log=log, elastic=elastic,
                   out=None if a.elastic else a.out, resume=a.resume)
    return 0


if __name__ == "__main__":
    run_cli(main, sys.argv[1:])
