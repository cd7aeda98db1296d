"""Every recipe takes one typed configuration the same way: (cfg, comm=None, log=print, ctx=None);
every flag of its script is a key of that configuration (or one of the few a script handles
itself), and --help names the configuration's default."""
import argparse
import inspect

import pytest

from gluon_suite.cv.quickstart import DigitsConfig, train_digits
from gluon_suite.cv.recipe import ClassificationConfig, train_classification
from gluon_suite.graph.recipes import GraphConfig, NodeConfig, train_graph_classification, train_node_classification
from gluon_suite.nlp.finetune import ClassifierConfig, SquadConfig, finetune_classification, finetune_squad
from gluon_suite.nlp.pretrain import PretrainConfig, pretrain_bert

from .conftest import load_script

RECIPES = [  # (recipe, its configuration, its script, flags the script handles itself)
    (train_classification, ClassificationConfig, "scripts/cv/train_classification.py", set()),
    (train_digits, DigitsConfig, "scripts/cv/train_digits.py", set()),
    (pretrain_bert, PretrainConfig, "scripts/nlp/pretrain_bert.py",   # folded into phases
     {"steps", "seq_len", "batch_size", "total_batch_size", "accumulate", "lr", "warmup", "max_predictions"}),
    (finetune_classification, ClassifierConfig, "scripts/nlp/finetune_classification.py", set()),
    (finetune_squad, SquadConfig, "scripts/nlp/finetune_squad.py", set()),
    (train_node_classification, NodeConfig, "scripts/graph/train_node_classification.py", {"gpus", "dtype"}),
    (train_graph_classification, GraphConfig, "scripts/graph/train_graph_classification.py", {"gpus", "dtype"}),
]


@pytest.mark.parametrize("recipe,config,script,own", RECIPES, ids=[r[0].__name__ for r in RECIPES])
def test_one_signature_and_every_flag_a_key(recipe, config, script, own):
    params = inspect.signature(recipe).parameters
    assert list(params) == ["config", "comm", "log", "ctx"]
    assert (params["comm"].default, params["log"].default, params["ctx"].default) == (None, print, None)
    assert config.SCRIPT == script
    parser = load_script(script).build_parser()
    flags = {a.dest for a in parser._actions if a.option_strings and a.dest not in ("help", "config")}
    assert flags - own <= set(config.options()), f"flags without a key: {sorted(flags - own - set(config.options()))}"
    # no default is written in the parser: the configuration holds them, --help shows them
    assert all(a.default is argparse.SUPPRESS for a in parser._actions
               if a.option_strings and a.dest in config.options() and a.dest not in own), \
        [a.dest for a in parser._actions if a.option_strings and a.default is not argparse.SUPPRESS]
    helps = {a.dest: a.help or "" for a in parser._actions}
    assert "default 0" in helps["seed"], helps["seed"]
    assert f"default {config().out}" in helps["out"], helps["out"]


@pytest.mark.parametrize("config", [r[1] for r in RECIPES], ids=[r[1].__name__ for r in RECIPES])
def test_flags_from_the_command_line_reach_the_configuration(config):
    """An empty command line gives the defaults; the command line's keys are remembered."""
    script = next(r[2] for r in RECIPES if r[1] is config)
    parser = load_script(script).build_parser()
    required = [a for a in parser._actions if a.required]
    argv = []
    for a in required:   # the fine-tuning scripts need --train and --dev
        argv += [a.option_strings[0], __file__]
    args = vars(parser.parse_args(argv))
    args.pop("gpus", None), args.pop("dtype", None)
    cfg = config.from_sources(args, parser)
    assert cfg.flags == set(args)
    assert {k: v for k, v in cfg.to_dict().items() if k not in args} == \
        {k: v for k, v in config().to_dict().items() if k not in args}
