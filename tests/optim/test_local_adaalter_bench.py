"""The Local AdaAlter language-model bench (bench/local_adaalter_lm.py): its fixed reference
recipe, its protocols, its summary table against synchronous AdaAlter (hand-computed paired
ratios) and a tiny run of evidence(ctx) under horovodrun (paired seeds with distinct data offsets,
both paddings)."""
import os

import pytest

from gluon_suite.evidence import protocols

from ..conftest import REPO, load_script

bench = load_script("bench/local_adaalter_lm.py")


def test_the_recipe_is_the_reference_one_and_the_same_for_every_config():
    # epsilon 1 ("initial history accumulation"), lr 0.5 for AdaGrad and AdaAlter alike, clipping
    # of the LSTM's gradients at global norm 10 (docs/methods.md)
    assert (bench.LR, bench.EPS, bench.CLIP) == (0.5, 1.0, 10.0)
    pads = {n: c.get("pad") for n, c in bench.CONFIGS.items() if c["algorithm"] == "local_adaalter"}
    assert pads["local adaalter H=4"] == "constant" and pads["local adaalter H=4 per-step"] == "per_step"


def test_every_run_warms_the_learning_rate_up_linearly_over_the_first_20_steps():
    assert bench.WARMUP == 20
    assert [bench.warmup_lr(0.3, s) for s in (0, 1, 9, 19, 20, 599)] == pytest.approx(
        [0.015, 0.03, 0.15, 0.3, 0.3, 0.3])


@pytest.mark.parametrize("name,corpus,arms", [
    ("local_adaalter_lm", "lee_background", 7), ("local_adaalter_lm_head500", "head500", 2)])
def test_the_protocols_name_the_bench_s_configurations_600_steps_and_5_offsets(name, corpus, arms):
    p = protocols.load(REPO, name)
    assert p.bench == "local_adaalter_lm" and len(p.arms()) == arms
    assert set(p.arms()) <= set(bench.CONFIGS) and "sync adaalter" in p.arms()
    assert p.params() == {"steps": 600, "workers": 2, "offsets": 5, "corpus": corpus}
    assert p.seeds() == [0, 1, 2, 3, 4] and len(p.seeds()) == p.params()["offsets"]
    assert set(p.params(quick=True).get("arms", p.arms())) <= set(p.arms())


def test_summary_rows_give_paired_ratios_to_synchronous_adaalter_with_their_interval_and_verdict():
    finals = {"sync adaalter": [100.0, 104.0], "local adaalter H=4": [101.0, 105.0],
              "local adaalter H=8": [120.0, 121.0], "sync adagrad": [104.0, 100.0]}
    syncs = {"sync adaalter": [600, 600], "local adaalter H=4": [165, 165], "local adaalter H=8": [92, 92],
             "sync adagrad": [600, 600]}
    times = {"sync adaalter": [10.0, 12.0], "local adaalter H=4": [8.0, 8.0], "local adaalter H=8": [7.0, 9.0],
             "sync adagrad": [20.0, 21.0]}
    rows = bench.summary_rows(finals, syncs, times, list(finals))
    # sync: mean 102, sample std sqrt(8) = 2.83
    assert rows[0] == ["sync adaalter", "102.0 ± 2.8", "100, 104", "600", "11", "—", "—"]
    # H=4: per-seed ratios 1.01 and 105/104, geometric mean 1.00981; t(0.975, 1) = 12.706 times the
    # log ratios' std / sqrt(2) gives [1.00737, 1.01225]: above 1, so worse (lower is better)
    assert rows[1] == ["local adaalter H=4", "103.0 ± 2.8", "101, 105", "165", "8",
                       "x1.010 [1.007, 1.012]", "worse"]
    # H=8: ratios 1.2 and 121/104, geometric mean 1.18159, interval [0.97084, 1.43808] holds 1
    assert rows[2][5:] == ["x1.182 [0.971, 1.438]", "within noise"]
    # opposite per-seed ratios 1.04 and 1/1.04: geometric mean exactly 1
    assert rows[3][5:] == ["x1.000 [0.608, 1.646]", "within noise"]
    one = bench.summary_rows({"sync adaalter": [100.0], "local adaalter H=4": [98.0]},
                             {"sync adaalter": [600], "local adaalter H=4": [165]},
                             {"sync adaalter": [1.0], "local adaalter H=4": [1.0]},
                             ["sync adaalter", "local adaalter H=4"])
    assert one[0][1] == "100.0" and one[1][5:] == ["x0.980", "one seed: no interval"]


def test_the_unigram_perplexity_uses_the_training_frequencies(monkeypatch):
    monkeypatch.setattr(bench, "corpus_ids", lambda: ([1, 1, 2, 3], [1, 2]))
    # p(1) = 1/2, p(2) = 1/4: exp(-(ln 1/2 + ln 1/4) / 2) = sqrt(8)
    assert bench.unigram_perplexity() == pytest.approx(8 ** 0.5)


class Ctx:
    """What evidence(ctx) uses of the runner's context."""

    def __init__(self, tmp_path, params, seeds, arms):
        self.params, self.seeds, self.arms, self.tmp = params, seeds, arms, tmp_path
        self.runs, self.tables, self.notes, self.figures = [], {}, {}, []
        self.protocol = type("P", (), {"name": "local_adaalter_lm"})()

    def progress(self, it, desc=None):
        return it

    def measure(self, arm, seed, fn):
        m = fn()
        self.runs.append((arm, seed, m))
        return m

    def table(self, name, columns, rows, caption=None):
        self.tables[name] = (columns, rows)

    def figure(self, suffix):
        self.figures.append(str(self.tmp / f"fig{suffix}"))
        return self.figures[-1]

    def note(self, k, v):
        self.notes[k] = v


@pytest.mark.long   # make test's time budget; the long tier runs it
@pytest.mark.horovod
def test_a_tiny_run_gives_paired_seeds_against_synchronous_adaalter(tmp_path, monkeypatch):
    monkeypatch.setattr(bench, "CORPUS", bench.CORPUS)       # evidence sets the protocol's corpus
    ctx = Ctx(tmp_path, {"steps": 24, "workers": 2, "offsets": 5, "corpus": "lee_background"}, [0, 1],
              ["sync adaalter", "local adaalter H=4 per-step"])
    bench.evidence(ctx)
    assert [(a, s) for a, s, _ in ctx.runs] == [("sync adaalter", 0), ("local adaalter H=4 per-step", 0),
                                                ("sync adaalter", 1), ("local adaalter H=4 per-step", 1)]
    m = {(a, s): x for a, s, x in ctx.runs}
    # 20 synchronous warm-up steps, then one synchronisation per 4 local steps
    assert m["sync adaalter", 0]["syncs"] == 24 and m["local adaalter H=4 per-step", 0]["syncs"] == 21
    assert m["sync adaalter", 0]["steps"] == [24] and m["sync adaalter", 0]["final_ppl"] == m["sync adaalter", 0]["valid_ppl"][-1]
    # the seeds start at different places in the stream and from different weights: different runs
    assert m["sync adaalter", 0]["final_ppl"] != m["sync adaalter", 1]["final_ppl"]
    cols, rows = ctx.tables["summary"]
    assert cols == bench.SUMMARY_COLUMNS and [r[0] for r in rows] == ctx.arms
    assert ctx.notes["unigram_perplexity"] == pytest.approx(bench.unigram_perplexity())
    assert os.path.getsize(ctx.figures[0]) > 0
