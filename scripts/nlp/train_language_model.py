#!/usr/bin/env python
"""Train a GluonNLP word language model on Wikipedia or a text file, on one process or many (horovodrun).

    python scripts/nlp/train_language_model.py --model standard_lstm_lm_200 --epochs 3 --out runs/lm
    horovodrun -np 2 -H localhost:2 --gloo python scripts/nlp/train_language_model.py \\
        --algorithm local_adaalter --optimizer adaalter --period 4 --out runs/lm-la

Recommended for this task on several workers: --algorithm local_adaalter --optimizer adaalter
--period 4 (configs/nlp/wiki_lm_local_adaalter.yaml). A YAML --config sets defaults; flags override
it; the merged configuration (with the corpus and vocabulary records) is saved as OUT/config.json.
Outputs: OUT/log.jsonl (one JSON line per epoch, with per --log-interval training perplexities),
OUT/summary.csv, OUT/vocab.json, OUT/best.params (worker-averaged model of the lowest validation
perplexity), OUT/last.rank*.params|states + OUT/state.json (resumable with --resume auto).
"""
import sys

from gluon_suite.utils import run_cli


def build_parser():
    """The script's flags, generated from ``LanguageModelConfig`` (GluonNLP's word-LM flag names)."""
    from gluon_suite.nlp.language_model import LanguageModelConfig
    return LanguageModelConfig.build_parser(__doc__.split("\n")[0],
                                            config="YAML file of defaults (keys as the flags, with _ for -)")


def main(argv=None):
    parser = build_parser()
    from gluon_suite.nlp.language_model import LanguageModelConfig, train_language_model
    cfg = LanguageModelConfig.from_sources(vars(parser.parse_args(argv)), parser)
    from gluon_suite.distributed import get_communicator
    comm = get_communicator()
    # elastic: whoever is rank 0 when something is logged prints it (the recipe checks the rank)
    log = (lambda msg: print(msg, flush=True)) if comm.rank == 0 or cfg.elastic else (lambda msg: None)
    from gluon_suite.utils.fileio import output_folder
    with output_folder(cfg.out):   # a run that saved nothing leaves nothing
        res = train_language_model(cfg, comm, log=log)
    if res["rank"] != 0:
        return 0
    if res["history"] and res["workers"] > 1:
        from gluon_suite.distributed.comm import traffic_line
        print(traffic_line(sum(h["wire_bytes"] for h in res["history"]),
                           sum(h["dense_wire_bytes"] for h in res["history"])))
    last = res["history"][-1] if res["history"] else {}
    test = f", test perplexity {last['test_ppl']:.2f}" if last.get("test_ppl") is not None else ""
    print(f"best validation perplexity {res['best_ppl']:.2f}{test}")
    return 0


if __name__ == "__main__":
    run_cli(main, sys.argv[1:])
