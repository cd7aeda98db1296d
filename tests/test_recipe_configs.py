"""Every recipe takes one typed configuration the same way: (cfg, comm=None, log=print, ctx=None).
Every script's flags are generated from its configuration (or, for the few a script handles itself,
declared in the script) and stay what tests/data/script_options.json recorded: the same option
strings with their aliases, dests, actions, nargs, consts, choices, metavars, types, help groups and
the same default named in --help. A flag dropped, renamed or given another default fails here; a
deliberate change rewrites the list (``python -m tests.tools.script_options --write``) in a commit
that says what changed."""
import inspect
import os

import pytest

from gluon_suite.cv.detection import DetectionConfig, train_detection
from gluon_suite.cv.quickstart import DigitsConfig, train_digits
from gluon_suite.cv.recipe import ClassificationConfig, train_classification
from gluon_suite.cv.segmentation import SegmentationConfig, train_segmentation
from gluon_suite.graph.link_recipe import LinkConfig, train_link_prediction
from gluon_suite.graph.recipes import GraphConfig, NodeConfig, train_graph_classification, train_node_classification
from gluon_suite.nlp.finetune import ClassifierConfig, SquadConfig, finetune_classification, finetune_squad
from gluon_suite.nlp.language_model import LanguageModelConfig, train_language_model
from gluon_suite.nlp.pretrain import PretrainConfig, pretrain_bert

from .conftest import REPO, load_script
from .tools.script_options import SCRIPTS, describe_parser, load_saved, script_parser

RECIPES = [  # (recipe, its configuration, its script)
    (train_classification, ClassificationConfig, "scripts/cv/train_classification.py"),
    (train_digits, DigitsConfig, "scripts/cv/train_digits.py"),
    (train_detection, DetectionConfig, "scripts/cv/train_detection.py"),
    (train_segmentation, SegmentationConfig, "scripts/cv/train_segmentation.py"),
    (train_language_model, LanguageModelConfig, "scripts/nlp/train_language_model.py"),
    (pretrain_bert, PretrainConfig, "scripts/nlp/pretrain_bert.py"),
    (finetune_classification, ClassifierConfig, "scripts/nlp/finetune_classification.py"),
    (finetune_squad, SquadConfig, "scripts/nlp/finetune_squad.py"),
    (train_node_classification, NodeConfig, "scripts/graph/train_node_classification.py"),
    (train_graph_classification, GraphConfig, "scripts/graph/train_graph_classification.py"),
    (train_link_prediction, LinkConfig, "scripts/graph/train_link_prediction.py"),
]
# what must stay as recorded, per flag (the help's wording may change; the default it names may not)
COMPARED = ("dest", "kind", "nargs", "const", "choices", "metavar", "type", "required", "parser_default", "group",
            "help_hidden", "default_shown")


@pytest.mark.parametrize("recipe,config,script", RECIPES, ids=[r[0].__name__ for r in RECIPES])
def test_one_signature(recipe, config, script):
    params = inspect.signature(recipe).parameters
    assert list(params) == ["config", "comm", "log", "ctx"]
    assert (params["comm"].default, params["log"].default, params["ctx"].default) == (None, print, None)
    assert config.SCRIPT == script


def flag_differences(saved, now):
    """The differences between two ``describe_parser`` records of a script, one line each: flags
    missing or added (by their option strings, aliases included) and, per flag, every ``COMPARED``
    attribute that changed."""
    before = {tuple(o["strings"]): o for o in saved["options"]}
    after = {tuple(o["strings"]): o for o in now["options"]}
    out = [f"flag {' '.join(k)} is gone" for k in before if k not in after]
    out += [f"flag {' '.join(k)} is new" for k in after if k not in before]
    for strings in before.keys() & after.keys():
        for key in COMPARED:
            if before[strings][key] != after[strings][key]:
                out.append(f"{strings[0]}: {key} was {before[strings][key]!r}, is {after[strings][key]!r}")
    return sorted(out)


@pytest.mark.parametrize("script", SCRIPTS)
def test_flags_are_as_recorded(script):
    now = describe_parser(script_parser(load_script(script)))
    differences = flag_differences(load_saved()[script], now)
    assert not differences, "\n".join(differences)


def test_the_comparison_sees_a_dropped_renamed_or_changed_flag():
    saved = load_saved()["scripts/cv/train_classification.py"]
    now = {"options": [dict(o) for o in saved["options"]]}
    by_first = {o["strings"][0]: o for o in now["options"]}
    now["options"].remove(by_first["--mixup"])                                  # dropped
    by_first["--epochs"]["strings"] = ["--epochs"]                               # alias --num-epochs lost
    by_first["--lr"]["default_shown"] = "default 0.2"                            # another default
    by_first["--no-wd"]["kind"] = "store_true"                                   # another action
    assert flag_differences(saved, now) == [
        "--lr: default_shown was 'default 0.1', is 'default 0.2'",
        "--no-wd: kind was 'store_false', is 'store_true'",
        "flag --epochs --num-epochs is gone", "flag --epochs is new", "flag --mixup is gone"]


def test_every_script_is_recorded():
    found = sorted(os.path.relpath(os.path.join(root, f), REPO)
                   for root, _, files in os.walk(os.path.join(REPO, "scripts")) for f in files if f.endswith(".py"))
    assert found == sorted(SCRIPTS) == sorted(load_saved())


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

