#!/usr/bin/env python
"""Pretrain BERT (masked LM + next-sentence prediction) in phases, on one process or many.

    python scripts/nlp/pretrain_bert.py --out runs/bert \\
        --phase seq_len=64,batch_size=16,steps=200,lr=0.01 --phase seq_len=128,batch_size=8,steps=50,lr=0.005
    horovodrun -np 2 -H localhost:2 --gloo python scripts/nlp/pretrain_bert.py --config configs/nlp/bert_tiny.yaml

Without --corpus it trains on the embedded English text of CPython's documentation;
--corpus gensim:lee_background or gensim:head500 reads an English corpus from the installed gensim;
--corpus wikipedia the articles of a MediaWiki dump (--data-path, default gensim's bundled excerpt), one
document per page, so a next sentence comes from its own page and a random one from another page.
A phase gives its batch per worker (batch_size) or as the global batch of a step (total_batch_size,
GluonNLP's --total_batch_size): global = per-worker batch x workers x accumulation, printed at the
start of each phase. One phase can also be given with GluonNLP's flags:

    python scripts/nlp/pretrain_bert.py --out runs/bert --num_steps 200 --total_batch_size 32 --lr 0.01 \
        --max_seq_length 64
"""
import sys

from gluon_suite.utils import UserError, run_cli

# one phase from flags: (phase key, our spelling, GluonNLP's spelling, help)
PHASE_FLAGS = (
    ("steps", "--steps", "--num_steps", "optimizer steps"),
    ("seq_len", "--seq-len", "--max_seq_length", "tokens per instance"),
    ("batch_size", "--batch-size", "--batch_size", "instances per worker and micro-batch (split over its --gpus)"),
    ("total_batch_size", "--total-batch-size", "--total_batch_size",
     "global batch of a step = batch size x workers x accumulate"),
    ("accumulate", "--accumulate", None, "micro-batches summed per step"),
    ("lr", "--lr", "--learning_rate", "peak learning rate"),
    ("warmup", "--warmup", "--warmup_ratio", "fraction of the steps warming up"),
    ("max_predictions", "--max-predictions", "--max_predictions_per_seq", "masked tokens per instance at most"),
)


def build_parser():
    """The script's flags: the keys of ``PretrainConfig`` and one phase from flags (``PHASE_FLAGS``,
    folded into ``phases`` by ``fold_phase_flags``)."""
    from gluon_suite.nlp.pretrain import PretrainConfig
    p = PretrainConfig.build_parser(__doc__.split("\n")[0], config="YAML with the keys below and a 'phases' list")
    g = p.add_argument_group("one phase from flags (GluonNLP's run_pretraining.py spellings work too); instead "
                             "of --phase, or over the one phase of --config")
    for key, ours, gluonnlp, text in PHASE_FLAGS:
        g.add_argument(*((ours, gluonnlp) if gluonnlp else (ours,)), dest=key, type=phase_value(key), help=text)
    return p


def phase_value(key):
    """The argparse type of the phase flag for ``key``: the check ``check_phase`` applies to it."""
    from gluon_suite.nlp.pretrain import _FRACTION, _INT
    from gluon_suite.utils.validate import fraction, positive_float, positive_int
    return positive_int if key in _INT else fraction if key in _FRACTION else positive_float


def fold_phase_flags(cfg, cli_phases):
    """Turn the one-phase flags (or the same keys at the top of a config) in ``cfg`` into its
    ``phases``: they override the config's one phase, or the default phase. Combined with
    ``--phase`` or with a config of several phases, one line says which to give."""
    from gluon_suite.nlp.pretrain import DEFAULTS
    given = {k: cfg.pop(k) for k, *_ in PHASE_FLAGS if k in cfg}
    if not given:
        return cfg
    names = ", ".join(next(f"{o}/{g}" if g else o for kk, o, g, _ in PHASE_FLAGS if kk == k) for k in given)
    if cli_phases:
        raise UserError(f"{names} set one phase and --phase sets the phases; give the phase either way, not both")
    base = cfg.get("phases") or DEFAULTS["phases"]
    if len(base) > 1:
        raise UserError(f"{names} set one phase but the config has {len(base)} phases; use --phase per phase or "
                        "edit the config's phases")
    ph = dict(base[0])
    if "total_batch_size" in given:   # the flag's batch replaces the base phase's, in either form
        ph.pop("batch_size", None)
    if "batch_size" in given:
        ph.pop("total_batch_size", None)
    from gluon_suite.nlp.pretrain import check_phase
    cfg["phases"] = [check_phase({**ph, **given}, f"the phase from {names}")]
    return cfg


def main(argv=None):
    p = build_parser()
    args = vars(p.parse_args(argv))
    from gluon_suite.nlp.pretrain import PretrainConfig
    cfg, path = {}, args.pop("config", None)
    if path is not None:   # the file's keys, checked; then the flags over them, then the one-phase flags folded
        from gluon_suite.utils.config import load_yaml_config
        cfg = load_yaml_config(path, p, extra=PretrainConfig.yaml_extra(p))
    cli_phases = "phases" in args
    cfg.update(args)
    cfg = PretrainConfig.from_dict(fold_phase_flags(cfg, cli_phases), flags=set(args),
                                   source=f"config file {path}" if path else "the command line",
                                   origin=f"--config {path}" if path else "the defaults")
    from gluon_suite.utils.devices import resolve_devices
    ctx, _ = resolve_devices(cfg.gpus, cfg.dtype, cpu_float16=True)
    from gluon_suite.distributed import get_communicator
    from gluon_suite.nlp.pretrain import pretrain_bert
    comm = get_communicator()
    elastic = cfg.elastic
    log = (lambda m: print(m, flush=True)) if comm.rank == 0 or elastic else (lambda m: None)
    from gluon_suite.utils.fileio import output_folder
    with ctx[0], output_folder(cfg.out):   # the worker's first device as the recipe's default context
        res = pretrain_bert(cfg, comm, log=log, ctx=ctx)
    if elastic:
        return 0
    if comm.rank == 0 and res["history"]:
        h = res["history"]
        print(f"mlm loss {h[0]['mlm_loss']:.4f} -> {h[-1]['mlm_loss']:.4f}")
    return 0


if __name__ == "__main__":
    run_cli(main, sys.argv[1:])
