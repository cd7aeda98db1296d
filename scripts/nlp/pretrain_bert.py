#!/usr/bin/env python
"""Pretrain BERT (masked LM + next-sentence prediction) in phases, on one process or many.

    python scripts/nlp/pretrain_bert.py --out runs/bert \\
        --phase seq_len=64,batch_size=16,steps=200,lr=0.01 --phase seq_len=128,batch_size=8,steps=50,lr=0.005
    horovodrun -np 2 -H localhost:2 --gloo python scripts/nlp/pretrain_bert.py --config configs/nlp/bert_tiny.yaml

Without --corpus it trains on the embedded English text of CPython's documentation;
--corpus gensim:lee_background or gensim:head500 reads an English corpus from the installed gensim.
The global batch of each phase is per-worker batch x workers x accumulation; it is printed at the
start.
"""
import argparse
import sys

from gluon_suite.utils import UserError, run_cli

_INT = {"seq_len", "batch_size", "accumulate", "steps", "max_predictions"}


def parse_phase(text):
    """'seq_len=128,batch_size=16,steps=100,lr=0.005' -> dict."""
    out = {}
    for part in filter(None, text.split(",")):
        if "=" not in part:
            raise UserError(f"--phase items are key=value, got {part!r}")
        k, v = part.split("=", 1)
        try:
            out[k.strip()] = int(v) if k.strip() in _INT else float(v)
        except ValueError:
            raise UserError(f"--phase {k}={v}: not a number") from None
    return out


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0], argument_default=argparse.SUPPRESS)
    p.add_argument("--config", help="YAML with the keys below and a 'phases' list")
    p.add_argument("--model", help="zoo BERT name (default bert_2_128_2)")
    p.add_argument("--max-length", type=int, help="positions of the model (default 512; >= every seq_len)")
    p.add_argument("--corpus", help="text file (one sentence per line, blank line between documents), "
                   "or gensim:lee_background / gensim:head500")
    p.add_argument("--vocab", help="BERT vocab file (default: built from the corpus)")
    p.add_argument("--min-freq", type=int)
    p.add_argument("--phase", action="append", type=parse_phase, dest="phases",
                   help="seq_len=,batch_size=,steps=,lr=[,accumulate=,warmup=,constant=]; repeat per phase")
    p.add_argument("--optimizer", help="lans (default), lamb or adam")
    p.add_argument("--wd", type=float)
    p.add_argument("--dropout", type=float)
    p.add_argument("--algorithm")
    p.add_argument("--compressor")
    p.add_argument("--ratio", type=float)
    p.add_argument("--period", type=int)
    p.add_argument("--seed", type=int)
    p.add_argument("--out")
    p.add_argument("--ckpt-every", type=int)
    p.add_argument("--resume", help="none or auto")
    p.add_argument("--no-progress", dest="progress", action="store_false")
    from gluon_suite.distributed.launch import add_elastic_arguments
    add_elastic_arguments(p, defaults=False,
                          elastic_help="workers may join, leave or die; trains one phase per launch (--resume auto for the next)",
                          lr_name="the phases' lr")
    args = vars(p.parse_args(argv))
    cfg = {}
    if "config" in args:
        import yaml
        try:
            with open(args.pop("config"), encoding="utf-8") as f:
                cfg = {k.replace("-", "_"): v for k, v in (yaml.safe_load(f) or {}).items()}
        except (OSError, yaml.YAMLError) as exc:
            raise UserError(f"cannot read the config: {' '.join(str(exc).split())}") from None
    cfg.update({k: v for k, v in args.items()})
    from gluon_suite.distributed import get_communicator
    from gluon_suite.nlp.pretrain import pretrain_bert
    comm = get_communicator()
    elastic = bool(cfg.get("elastic"))
    log = (lambda m: print(m, flush=True)) if comm.rank == 0 or elastic else (lambda m: None)
    res = pretrain_bert(cfg, comm, log=log)
    if elastic:
        return 0
    if comm.rank == 0 and res["history"]:
        h = res["history"]
        print(f"mlm loss {h[0]['mlm_loss']:.4f} -> {h[-1]['mlm_loss']:.4f}")
    return 0


if __name__ == "__main__":
    run_cli(main, sys.argv[1:])
