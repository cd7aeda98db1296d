"""The Dynamic SGD simulation bench (bench/dynamic_sgd.py): its resize plan, the global batch of
every step and the rate each policy trains with, on a tiny run, against hand-computed values."""

import numpy as np
import pytest

from ..conftest import load_script

bench = load_script("bench/dynamic_sgd.py")

# 32 training images; 2 images per worker; 2 workers for 1 epoch, 8 for 2, then 1 for 1 epoch.
# eta for the starting global batch 4 is 0.64 x 4/256 = 0.01.
TINY = {**bench.CONFIG, "per_worker": 2, "workers": [2, 8, 1], "phase_epochs": [1, 2, 1],
        "lr_per_256": 0.64, "ramp_steps": 4, "window": 2, "eval_every": 16, "channels": [2, 4]}


def test_the_paper_plan_by_hand():
    # 8 workers x 8 = 64 for 2 epochs of 4,000: 125 steps; 32 x 8 = 256 for 12,000 samples:
    # 46.875 -> 47 steps (to sample 20,032); 1,024 until 52,000: 31.2 -> 32 steps (to 52,800);
    # 128 until 64,000: 87.5 -> 88 steps
    counts = bench.plan(bench.CONFIG, 4000)
    assert len(counts) - 1 == 125 + 47 + 32 + 88
    assert bench.resize_steps(counts) == [(126, 8, 32), (173, 32, 128), (205, 128, 16)]
    assert bench.base_lr(bench.CONFIG) == pytest.approx(0.025)   # 0.1 x 64 / 256


@pytest.fixture(scope="module")
def tiny_runs():
    from gluon_suite.cv.data import load_mnist5k
    xtr, ytr = load_mnist5k("train")
    xte, yte = load_mnist5k("test")
    data = (xtr[::125], ytr[::125].astype(np.float32), xte[:50], yte[:50])   # 32 train images
    return {p: bench.simulate(p, 0, TINY, data) for p in bench.POLICIES}


def test_global_batch_of_every_step(tiny_runs):
    # phase 1: 32 / 4 = 8 steps; phase 2: 64 / 16 = 4 steps; phase 3: 32 / 2 = 16 steps
    for rec in tiny_runs.values():
        assert rec["batch"] == [4] * 8 + [16] * 4 + [2] * 16
        assert rec["workers"] == [2] * 8 + [8] * 4 + [1] * 16


def test_rates_at_the_resizes_of_every_policy(tiny_runs):
    lr = {p: np.array(r["lr"]) for p, r in tiny_runs.items()}
    np.testing.assert_allclose(lr["fixed"], [0.01] * 28)
    # jump: 0.01 x 8/2 = 0.04 from step 9, 0.01 x 1/2 = 0.005 from step 13
    np.testing.assert_allclose(lr["jump"], [0.01] * 8 + [0.04] * 4 + [0.005] * 16)
    # ramp (K = 4, the default policy): 0.01 + 0.03 x k/4 at steps 9..12; then 0.005 at once
    np.testing.assert_allclose(lr["ramp"], [0.01] * 8 + [0.0175, 0.025, 0.0325, 0.04] + [0.005] * 16)
    # ramp2 (the two-way variant): the same growth, then from 0.04 down to 0.005 by 0.035/4
    np.testing.assert_allclose(lr["ramp2"], [0.01] * 8 + [0.0175, 0.025, 0.0325, 0.04]
                               + [0.03125, 0.0225, 0.01375, 0.005] + [0.005] * 12)
    # growth never more than 1/K of the resize's gap in one step
    steps = np.abs(np.diff(lr["ramp"]))
    assert steps[7:11].max() <= 0.03 / 4 + 1e-12


def test_evaluations_and_change_metrics(tiny_runs):
    rec = tiny_runs["jump"]
    # every 16 samples (steps 4, 8, 9, 10, 11, 12, 20, 28), before each resize (8, 12), window = 2
    # steps after each (10, 14) and the last (28)
    assert [s for s, _, _ in rec["evals"]] == [4, 8, 9, 10, 11, 12, 14, 20, 28]
    assert [d for _, d, _ in rec["evals"]] == [16, 32, 48, 64, 80, 96, 100, 112, 128]
    m = bench.change_metrics(rec, TINY)
    assert [c["change"] for c in m] == ["2->8", "8->1"]
    # the largest loss of steps 9-10 and the mean of steps 7-8, read from the recorded losses
    assert m[0]["max_loss_after"] == max(rec["loss"][8:10])
    assert m[0]["loss_before"] == pytest.approx(np.mean(rec["loss"][6:8]))


def test_run_metrics_name_each_resize_and_hold_no_nan(tiny_runs):
    rec = tiny_runs["jump"]
    ch = bench.change_metrics(rec, TINY)
    assert bench.change_key("128->16") == "128_16"
    # run_metrics reads the same numbers from a fresh run of the same seed (the run is deterministic)
    from gluon_suite.cv.data import load_mnist5k
    xtr, ytr = load_mnist5k("train")
    xte, yte = load_mnist5k("test")
    data = (xtr[::125], ytr[::125].astype(np.float32), xte[:50], yte[:50])
    m = bench.run_metrics("jump", 0, TINY, data)
    assert m["final_acc"] == rec["final_acc"] and m["diverged"] == 0 and m["diverged_at"] is None
    assert m["acc_after_2_8"] == ch[0]["acc_after"] and m["acc_before_8_1"] == ch[1]["acc_before"]
    assert m["max_loss_after_2_8"] == ch[0]["max_loss_after"]
    assert m["lr"] == pytest.approx([0.01] * 8 + [0.04] * 4 + [0.005] * 16)
    assert len(m["loss"]) == 28 and all(x is None or np.isfinite(x) for x in m["loss"])


def test_finite_and_table_cells_by_hand():
    assert bench._finite(float("nan")) is None and bench._finite(float("inf")) is None
    assert bench._finite(np.float32(0.5)) == 0.5
    # mean 96.0, sample sd of (95.5, 96.0, 96.5) = 0.5
    assert bench._pm([0.955, 0.96, 0.965], 100) == "96.00 ± 0.50"
    assert bench._pm([0.1234], digits=3) == "0.123"
    assert bench._pm([0.1, None, 0.3], digits=3) == "0.200 ± 0.141 (1 diverged)"
    assert bench._pm([None]) == "n/a"
