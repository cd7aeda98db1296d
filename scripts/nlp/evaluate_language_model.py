#!/usr/bin/env python
"""Validation and test perplexity of a word language model: a zoo checkpoint or a training run's folder.

    python scripts/nlp/evaluate_language_model.py --model standard_lstm_lm_200_wiki --pretrained
    python scripts/nlp/evaluate_language_model.py --run runs/lm

The corpus, its page splits, the vocabulary and the BPTT settings are the ones the model's card (or the
run's config.json) records; the vocabulary rebuilt from the corpus must match the model's. A model
trained on a file of its own (--data-path at training) needs --data-path here too. With --pretrained
the checkpoint and its vocabulary come from the zoo (cached; GLUON_SUITE_OFFLINE=1 works once cached).
"""
import argparse
import sys

from gluon_suite.utils import run_cli


def build_parser():
    from gluon_suite.model_zoo.registry import checkpoint_name
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0], allow_abbrev=False)
    p.add_argument("--model", type=checkpoint_name, help="a zoo language model with published weights")
    p.add_argument("--pretrained", action="store_true", help="evaluate --model's published checkpoint")
    p.add_argument("--source", help="shipped, local or a zoo store folder (default: the shipped checkpoint)")
    p.add_argument("--run", help="a train_language_model.py --out folder (its best.params)")
    p.add_argument("--params", default="best.params", help="with --run: the parameter file in the folder")
    p.add_argument("--data-path", help="where the training corpus file is here, when the model was trained on one")
    return p


def main(argv=None):
    args = build_parser().parse_args(argv)
    from gluon_suite.utils import UserError
    if bool(args.run) == bool(args.model):
        raise UserError("give either --model NAME --pretrained (a zoo checkpoint) or --run FOLDER (a training run)")
    if args.model and not args.pretrained:
        raise UserError("--model evaluates published weights: add --pretrained (an untrained model has no perplexity "
                        "worth reporting)")
    from gluon_suite.nlp.lm_evaluate import evaluate_pretrained, evaluate_run
    if args.run:
        res = evaluate_run(args.run, data_path=args.data_path, params=args.params)
        what = args.run
    else:
        res = evaluate_pretrained(args.model, source=args.source, data_path=args.data_path)
        what = args.model
    print(f"{what}: validation perplexity {res['valid_ppl']:.2f}, test perplexity {res['test_ppl']:.2f}")
    card = res.get("card") or {}
    if card.get("metric"):
        print(f"card: {card['metric']['name']} {card['metric']['value']:.2f} (tolerance {card.get('tolerance')})")
    return 0


if __name__ == "__main__":
    run_cli(main, sys.argv[1:])
