"""GluonCV's spellings carry over to the classification script: --num-epochs, --save-dir and
--input-size are aliases, bare --mixup and --label-smoothing take GluonCV's values (alpha 0.2,
epsilon 0.1), and --no-wd keeps weight decay off BatchNorm and biases."""
import importlib.util
import os

import pytest

from ..conftest import REPO


@pytest.fixture(scope="module")
def parser():
    spec = importlib.util.spec_from_file_location("train_cls", os.path.join(REPO, "scripts", "cv",
                                                                           "train_classification.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.build_parser()


def test_aliases_set_the_same_keys(parser):
    a = vars(parser.parse_args(["--num-epochs", "3", "--save-dir", "runs/x", "--input-size", "16"]))
    b = vars(parser.parse_args(["--epochs", "3", "--out", "runs/x", "--image-size", "16"]))
    assert a == b == {"epochs": 3, "out": "runs/x", "image_size": 16}


def test_bare_mixup_and_label_smoothing_take_gluoncv_values(parser):
    assert vars(parser.parse_args(["--mixup", "--label-smoothing"])) == {"mixup": 0.2, "label_smoothing": 0.1}
    assert vars(parser.parse_args(["--mixup", "0.4", "--label-smoothing", "0.05"])) == \
        {"mixup": 0.4, "label_smoothing": 0.05}


def test_no_wd_excludes_bn_and_bias_from_weight_decay(parser):
    assert vars(parser.parse_args(["--no-wd"])) == {"wd_on_bn_bias": False}
    assert vars(parser.parse_args(["--wd-on-bn-bias"])) == {"wd_on_bn_bias": True}
