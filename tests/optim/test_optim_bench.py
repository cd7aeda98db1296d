"""The optimizer step micro-benchmark (bench/optim.py): BERT-base's shapes, its protocol, its tables
(hand-computed medians and paired ratios to fused LAMB) and a tiny run of evidence(ctx) with one
process per optimizer."""
import math

import pytest

from gluon_suite.evidence import protocols

from ..conftest import REPO, load_script

bench = load_script("bench/optim.py")


def test_bert_base_has_199_tensors_and_109_5m_parameters():
    shapes = bench.bert_base_shapes()
    assert len(shapes) == 5 + 12 * 16 + 2 == 199
    # embeddings 30522*768 + 512*768 + 2*768 + 2*768; per layer 4*(768*768+768) + 4*768
    # + 3072*768 + 3072 + 768*3072 + 768; pooler 768*768 + 768
    layer = 4 * (768 * 768 + 768) + 4 * 768 + 2 * 3072 * 768 + 3072 + 768
    total = 30522 * 768 + 512 * 768 + 4 * 768 + 12 * layer + 768 * 768 + 768
    assert sum(math.prod(s) for s in shapes) == total == 109482240


def test_the_protocol_times_the_four_optimizers_over_5_repeats_at_full_size():
    p = protocols.load(REPO, "optim")
    assert p.bench == "optim" and p.arms() == ["lamb", "lans", "adam", "adaalter"]
    assert set(p.arms()) == set(bench.OPTIMIZERS)
    assert p.seeds() == [0, 1, 2, 3, 4] and p.params() == {"warmup_steps": 1, "size_div": 1}
    c, = p.criteria
    assert (c["metric"], c["a"], c["b"], c["test"], c["scale"]) == ("step_s", "lans", "lamb", "better", "log")


def test_rows_give_medians_and_paired_ratios_to_fused_lamb():
    step = {"lamb": [4.0, 5.0, 6.0], "lans": [2.0, 5.0, 3.0], "adam": [0.4, 0.5, 0.6]}
    host = {"lamb": [0.004, 0.005, 0.003], "lans": [0.040, 0.050, 0.045], "adam": [0.01, 0.01, 0.01]}
    small = {"lamb": [0.004, 0.004, 0.006], "lans": [0.030, 0.030, 0.030], "adam": [0.02, 0.01, 0.01]}
    steps, hosts = bench.rows_of(step, host, small, ["lamb", "lans", "adam"])
    assert steps[0] == ["LAMB (MXNet fused multi-tensor)", "5.00 s", "1.00"]
    # LANS: ratios 1/2, 1, 1/2: geometric mean 2^(-2/3) = 0.63; log ratios' std ln2/sqrt(3) = 0.4002,
    # t(0.975, 2) = 4.3027: exp(-0.4621 -+ 0.9942) = [0.23, 1.70]
    assert steps[1] == ["LANS", "3.00 s", "0.63 [0.23, 1.70]"]
    # Adam: every ratio 0.1, no spread
    assert steps[2] == ["Adam", "0.50 s", "0.10 [0.10, 0.10]"]
    assert hosts[0] == ["LAMB (MXNet fused multi-tensor)", "4.0", "4.0", "1.00x"]
    assert hosts[1] == ["LANS", "30.0", "45.0", "1.50x"]
    assert hosts[2] == ["Adam", "10.0", "10.0", "1.00x"]


class Ctx:
    def __init__(self, params, seeds, arms):
        self.params, self.seeds, self.arms = params, seeds, arms
        self.runs, self.tables, self.notes = [], {}, {}

    def progress(self, it, desc=None):
        return it

    def measure(self, arm, seed, fn):
        m = fn()
        self.runs.append((arm, seed, m))
        return m

    def table(self, name, columns, rows, caption=None):
        self.tables[name] = (columns, rows, caption)

    def note(self, k, v):
        self.notes[k] = v


@pytest.mark.long
def test_a_tiny_run_times_each_optimizer_in_its_own_process():
    ctx = Ctx({"warmup_steps": 1, "size_div": 64}, [0, 1], ["lamb", "lans"])
    bench.evidence(ctx)
    assert [(a, s) for a, s, _ in ctx.runs] == [("lamb", 0), ("lamb", 1), ("lans", 0), ("lans", 1)]
    for _, _, m in ctx.runs:
        assert set(m) == {"step_s", "host_s", "host_s_small"}
        assert 0 < m["host_s"] <= m["step_s"]
    cols, rows, caption = ctx.tables["steps"]
    assert [r[0] for r in rows] == ["LAMB (MXNet fused multi-tensor)", "LANS"] and "BERT-base/64-sized" in caption
    assert ctx.notes["tensors"] == 199
