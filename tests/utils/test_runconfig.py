"""One typed configuration per recipe (utils/runconfig.py): defaults < YAML < flags merged once,
every value checked by its field's type whatever its source, saved as a flat config.json."""
import argparse
import dataclasses
import json
from typing import ClassVar

import pytest

from gluon_suite.utils import UserError
from gluon_suite.model_zoo.publish import PublishOptions
from gluon_suite.utils.runconfig import RecipeConfig, RunOptions, option
from gluon_suite.utils.validate import ArgumentParser, positive_float, positive_int


@dataclasses.dataclass
class ToyConfig(RecipeConfig, PublishOptions, RunOptions):
    SCRIPT: ClassVar[str] = "scripts/toy.py"
    out: str = option("runs/toy")
    epochs: int = option(3, positive_int)
    lr: float = option(0.1, positive_float)
    layers: list = option([4, 4], positive_int, many=True)
    shuffle: bool = option(True)


def toy_parser():
    p = ArgumentParser(argument_default=argparse.SUPPRESS)
    p.add_argument("--config")
    p.add_argument("--epochs", type=positive_int)
    p.add_argument("--lr", type=positive_float)
    p.add_argument("--layers", type=positive_int, nargs="+")
    p.add_argument("--no-shuffle", dest="shuffle", action="store_false")
    return p


def test_defaults_then_yaml_then_flags(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text("epochs: 7\nlr: 0.5\nlayers: [8, 2, 1]\n")
    p = toy_parser()
    args = vars(p.parse_args(["--config", str(path), "--lr", "0.25"]))
    cfg = ToyConfig.from_sources(args, p)
    # hand-merged: epochs and layers from the file, lr from the flag, the rest defaults
    assert cfg.to_dict() == {"tensorboard": None, "seed": 0, "out": "runs/toy", "resume": "none",
                             "stop_after_epochs": None, "publish": None, "publish_name": None, "publish_url": None,
                             "publish_tag": None, "publish_replace": False, "card": None,
                             "epochs": 7, "lr": 0.25, "layers": [8, 2, 1], "shuffle": True}
    assert cfg.flags == {"lr"}
    assert cfg["epochs"] == cfg.epochs == 7 and "lr" in cfg and cfg.get("nothing", 1) == 1


def test_none_keeps_the_default_and_lists_are_not_shared():
    a, b = ToyConfig.from_dict({"epochs": None}), ToyConfig()
    assert a.epochs == 3
    a.layers.append(9)
    assert b.layers == [4, 4] and ToyConfig().layers == [4, 4]


@pytest.mark.parametrize("data,match", [
    ({"epoch": 2}, r"unknown config key\(s\): epoch; did you mean 'epochs'"),
    ({"epochs": 0}, r"epochs: must be a whole number >= 1, got 0; give a value as --epochs takes it"),
    ({"epochs": True}, r"epochs: must be a whole number >= 1, got True"),
    ({"lr": "fast"}, r"lr: must be a number > 0, got 'fast'"),
    ({"layers": 3}, r"layers: must be a list"),
    ({"layers": [2, 0]}, r"layers: must be a whole number >= 1, got 0"),
    ({"shuffle": "yes"}, r"shuffle: must be true or false, got 'yes'"),
    ({"resume": "/no/such/run"}, r"resume: takes none, auto or a run folder"),
])
def test_every_source_gets_the_flags_checks(data, match):
    with pytest.raises(UserError, match=match):
        ToyConfig.from_dict(data)


def test_a_bad_yaml_value_names_the_file(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text("epochs: -1\n")
    p = toy_parser()
    with pytest.raises(UserError, match=r"config file .*c.yaml: epochs: must be a whole number >= 1"):
        ToyConfig.from_sources(vars(p.parse_args(["--config", str(path)])), p)


def test_values_are_converted_as_the_flag_would():
    cfg = ToyConfig.from_dict({"epochs": "5", "lr": 1, "layers": ("2", 3)})
    assert (cfg.epochs, cfg.lr, cfg.layers) == (5, 1.0, [2, 3])
    assert isinstance(cfg.lr, float)
    assert cfg.replace(epochs=9).epochs == 9 and cfg.epochs == 5


class OneWorker:
    rank, size = 0, 1


def test_saved_flat_at_the_start(tmp_path):
    cfg = ToyConfig.from_dict({"out": str(tmp_path / "run"), "epochs": 4})
    checked = cfg.checked(OneWorker())
    checked.save(OneWorker(), vocab_size=30)
    saved = json.loads((tmp_path / "run" / "config.json").read_text())
    assert saved == {**cfg.to_dict(), "workers": 1, "vocab_size": 30}


def test_elastic_needs_an_elastic_launch_naming_the_script(monkeypatch):
    from gluon_suite.distributed.options import ElasticOptions

    @dataclasses.dataclass
    class ElasticToy(ToyConfig, ElasticOptions):
        pass

    monkeypatch.delenv("HOROVOD_ELASTIC", raising=False)
    with pytest.raises(UserError, match=r"--elastic needs an elastic launch: .* python scripts/toy.py --elastic"):
        ElasticToy.from_dict({"elastic": True}).checked(OneWorker())


@dataclasses.dataclass
class FlagToy(RecipeConfig):
    FLAG_GROUPS: ClassVar[dict] = {"training": ("epochs", "decay")}
    NO_FLAG: ClassVar[tuple] = ("secret",)
    epochs: int = option(3, positive_int, aliases=("--num-epochs",), help="passes")
    decay: bool = option(True, flag="--decay", negative="--no-decay", negative_help="no decay")
    progress: bool = option(True, negative="--no-progress", negative_help="quiet")
    shuffle: bool = option(False, help="shuffle")
    mode: str = option("a", choices=("a", "b"), help="the mode")
    mix: float = option(0.0, positive_float, nargs="?", const=0.2, metavar="ALPHA", help="mixing")
    steps: list = option([1, 2], positive_int, many=True, help="steps")
    hidden: int = option(None, positive_int, hidden=True, help="internal")
    yaml_only: int = option(1, positive_int, flag=False)
    secret: int = option(2, positive_int)


def test_flags_are_generated_from_the_fields():
    p = FlagToy.build_parser("toy", config="YAML file")
    assert vars(p.parse_args([])) == {}     # parsed without defaults: the configuration holds them
    args = vars(p.parse_args(["--num-epochs", "4", "--no-decay", "--no-progress", "--shuffle", "--mode", "b",
                              "--mix", "--steps", "3", "4", "--hidden", "5", "--config", "c.yaml"]))
    assert args == {"epochs": 4, "decay": False, "progress": False, "shuffle": True, "mode": "b", "mix": 0.2,
                    "steps": [3, 4], "hidden": 5, "config": "c.yaml"}
    assert vars(p.parse_args(["--decay", "--mix", "0.5"])) == {"decay": True, "mix": 0.5}
    strings = {s for a in p._actions for s in a.option_strings}
    assert not strings & {"--yaml-only", "--secret", "--progress"}
    helps = {a.option_strings[0]: a.help for a in p._actions if a.option_strings}
    assert helps["--epochs"] == "passes (default 3)" and helps["--steps"] == "steps (default 1 2)"
    assert helps["--hidden"] == argparse.SUPPRESS and helps["--no-decay"] == "no decay"
    groups = {g.title: [a.dest for a in g._group_actions] for g in p._action_groups}
    assert groups["training"] == ["epochs", "decay", "decay"]
    # a choices key is checked by the same choices from YAML or Python
    with pytest.raises(UserError, match="unknown mode 'c'"):
        FlagToy.from_dict({"mode": "c"})


def test_a_flag_group_naming_a_key_without_a_flag_is_refused():
    @dataclasses.dataclass
    class Wrong(FlagToy):
        FLAG_GROUPS: ClassVar[dict] = {"training": ("yaml_only",)}

    with pytest.raises(TypeError, match="FLAG_GROUPS names keys without a flag: yaml_only"):
        Wrong.build_parser("wrong")
