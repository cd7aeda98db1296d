"""The LANS-vs-LAMB bench (bench/lans_vs_lamb.py): its arm names, its learning-rate choice, its
tables against hand-computed figures, and the order evidence(ctx) runs things in (the sweep on
seed 0, the chosen rate on every seed, seed 0 taken from the sweep), with the training run replaced
by a stand-in; and one real two-step run."""
import math

import pytest

from ..conftest import load_script

bench = load_script("bench/lans_vs_lamb.py")


def test_arm_names_match_the_protocol():
    from gluon_suite.evidence import protocols
    from ..conftest import REPO
    proto = protocols.load(REPO, "lans_vs_lamb")
    p = proto.params()
    want = [bench.arm(o, b) for b in p["batches"] for o in p["optimizers"]]
    want += [bench.arm(o, b, lr) for b in p["batches"] for o in p["optimizers"] for lr in p["lrs"][o]]
    assert sorted(want) == sorted(proto.arms())
    assert bench.arm("lans", 256) == "lans_b256" and bench.arm("lamb", 1024, 0.04) == "lamb_b1024_lr0.04"


def test_the_chosen_lr_has_the_lowest_final_loss_and_a_diverged_run_never_wins():
    sweep = {0.01: {"final_mlm_loss": 6.0}, 0.02: {"final_mlm_loss": 5.5}, 0.04: {"final_mlm_loss": float("nan")}}
    assert bench.choose_lr(sweep) == 0.02
    sweep[0.04]["final_mlm_loss"] = 5.4
    assert bench.choose_lr(sweep) == 0.04
    with pytest.raises(RuntimeError):
        bench.choose_lr({0.01: {"final_mlm_loss": math.inf}})


def test_tables_against_hand_computed_figures():
    sweeps = {(256, "lans"): {0.02: {"final_mlm_loss": 6.0}, 0.04: {"final_mlm_loss": 5.5}, 0.08: {"final_mlm_loss": 5.9}},
              (256, "lamb"): {0.02: {"final_mlm_loss": 6.1}, 0.04: {"final_mlm_loss": 6.2}, 0.08: {"final_mlm_loss": 6.3}}}
    chosen = {(256, "lans"): 0.04, (256, "lamb"): 0.02}
    assert bench.sweep_rows(sweeps, chosen) == [
        ["256", "lans", "0.02: 6.000, 0.04: 5.500*, 0.08: 5.900", "0.04", "no"],
        ["256", "lamb", "0.02: 6.100*, 0.04: 6.200, 0.08: 6.300", "0.02", "yes"]]
    cells = {(256, "lans"): {"lr": 0.04, "seeds": [{"final_mlm_loss": 5.5, "final_mlm_acc": 0.06},
                                                   {"final_mlm_loss": 5.7, "final_mlm_acc": 0.04}]}}
    # mean 5.6, sample std sqrt(2 * 0.01 / 1) = 0.1414; accuracy 0.05 ± 0.0141
    assert bench.summary_rows(cells) == [["256", "lans", "0.04", "5.600 ± 0.141", "0.050 ± 0.014", "5.500, 5.700"]]


class FakeCtx:
    def __init__(self, tmp_path, seeds):
        self.params = {"batches": [8, 16], "steps": 3, "seq_len": 16, "micro_batch": 8,
                       "corpus": "gensim:lee_background", "optimizers": ["lans", "lamb"],
                       "lrs": {"lans": [0.01, 0.02], "lamb": [0.02]}, "weight_decay": 0.01, "last": 2}
        self.seeds, self.runs, self.tables, self.notes, self.tmp = seeds, [], {}, {}, tmp_path

    def progress(self, it, desc=None):
        return it

    def measure(self, arm, seed, fn):
        m = fn()
        self.runs.append((arm, seed, m))
        return m

    def table(self, name, columns, rows, caption=None):
        self.tables[name] = rows

    def note(self, k, v):
        self.notes[k] = v

    def figure(self, suffix):
        return str(self.tmp / f"fig{suffix}")


def fake_run(p, opt, lr, batch, seed):
    # lans is best at 0.02 at batch 8 and at 0.01 at batch 16; every seed adds 0.1
    best = {8: 0.02, 16: 0.01}[batch] if opt == "lans" else 0.02
    final = (5.0 if opt == "lans" else 6.0) + abs(lr - best) * 10 + 0.1 * seed
    return {"lr": lr, "batch": batch, "final_mlm_loss": final, "final_mlm_acc": 0.1, "mlm_loss": [8.0, final]}


def test_evidence_sweeps_on_seed_0_then_runs_the_other_seeds_at_the_chosen_lr(tmp_path, monkeypatch):
    monkeypatch.setattr(bench, "run_one", fake_run)
    ctx = FakeCtx(tmp_path, [0, 1])
    bench.evidence(ctx)
    order = [(a, s) for a, s, _ in ctx.runs]
    assert order == [("lans_b8_lr0.01", 0), ("lans_b8_lr0.02", 0), ("lans_b8", 0), ("lans_b8", 1),
                     ("lamb_b8_lr0.02", 0), ("lamb_b8", 0), ("lamb_b8", 1),
                     ("lans_b16_lr0.01", 0), ("lans_b16_lr0.02", 0), ("lans_b16", 0), ("lans_b16", 1),
                     ("lamb_b16_lr0.02", 0), ("lamb_b16", 0), ("lamb_b16", 1)]
    runs = {(a, s): m for a, s, m in ctx.runs}
    assert runs["lans_b8", 0]["reused_from_sweep"] == "lans_b8_lr0.02"
    assert runs["lans_b8", 0]["final_mlm_loss"] == runs["lans_b8_lr0.02", 0]["final_mlm_loss"] == pytest.approx(5.0)
    assert runs["lans_b16", 1]["lr"] == 0.01 and runs["lans_b16", 1]["final_mlm_loss"] == pytest.approx(5.1)
    assert ctx.notes["chosen_lr"] == {"lans_b8": 0.02, "lamb_b8": 0.02, "lans_b16": 0.01, "lamb_b16": 0.02}
    assert ctx.tables["summary"][0] == ["8", "lans", "0.02", "5.050 ± 0.071", "0.100 ± 0.000", "5.000, 5.100"]
    assert (tmp_path / "fig.png").exists()


def test_a_partial_run_without_seed_0_still_sweeps_on_seed_0(tmp_path, monkeypatch):
    monkeypatch.setattr(bench, "run_one", fake_run)
    ctx = FakeCtx(tmp_path, [1])
    bench.evidence(ctx)
    order = [(a, s) for a, s, _ in ctx.runs]
    assert ("lans_b8_lr0.01", 0) in order and ("lans_b8", 1) in order and ("lans_b8", 0) not in order


def test_one_real_run_of_two_steps_with_accumulation():
    p = {"steps": 2, "seq_len": 16, "micro_batch": 8, "corpus": "gensim:lee_background", "weight_decay": 0.01,
         "last": 5}
    r = bench.run_one(p, "lans", 0.01, 16, 0)
    assert r["accumulate"] == 2 and len(r["mlm_loss"]) == 2
    assert r["final_mlm_loss"] == pytest.approx(sum(r["mlm_loss"]) / 2)
    assert math.isfinite(r["final_mlm_loss"]) and 0 <= r["final_mlm_acc"] <= 1
