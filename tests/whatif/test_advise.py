"""The choice of compression against hand-computed cycles of step times."""
import pytest

from gluon_suite.utils import UserError
from gluon_suite.whatif import StepProfile, advise, candidate_list
from gluon_suite.whatif.advise import cser_cycle

MB = 1e6


def profile():
    # backward 1 s, one 100 MB gradient ready at its end; 2 workers at 100 MB/s: a dense allreduce
    # takes 2*1/2 * 100 MB / 100 MB/s = 1 s after backward, so s/B = 1 s
    return StepProfile(0.0, 1.0, [100 * MB], ready=[1.0])


KW = dict(latency=0.0)


def test_cser_cycle_sends_the_error_every_period():
    # R1 = 32, H = 8: seven steps at 32, the eighth also sends the error at 32/8 = 4: 1/(1/32 + 1/4)
    assert cser_cycle(32, 8) == pytest.approx([32] * 7 + [1 / (1 / 32 + 1 / 4)])
    # R1 = 4, H = 8: the error goes dense (4/8 < 1): 1/(1/4 + 1)
    assert cser_cycle(4, 8)[-1] == pytest.approx(0.8)


def test_each_candidate_by_hand():
    # mean step = 1 + 1/R1 + 1/(R2 H) seconds for CSER (s/B = 1 s); sync 2 s; fp16 1.5 s
    a = advise(profile(), 2, 1e8, 0.9, candidate_list(ratios=(4, 8, 16, 32)), **KW)
    rows = {r["name"]: r for r in a["candidates"]}
    assert rows["sync"]["scaling_factor"] == pytest.approx(0.5)
    assert rows["fp16"]["scaling_factor"] == pytest.approx(1 / 1.5)
    assert rows["cser R1=4 H=8"]["step_s"] == pytest.approx(1.375)     # (7 * 1.25 + 2.25) / 8
    assert rows["cser R1=4 H=8"]["ratio"] == pytest.approx(8 / 3)      # 8 / (8/4 + 1)
    assert rows["cser R1=8 H=8"]["step_s"] == pytest.approx(1.25)
    assert rows["cser R1=16 H=8"]["step_s"] == pytest.approx(1.125)    # 1 + 1/16 + 1/(2*8)
    assert rows["cser R1=32 H=8"]["step_s"] == pytest.approx(1.0625)   # 1 + 1/32 + 1/(4*8)
    assert rows["cser R1=32 H=8"]["ratio"] == pytest.approx(16.0)
    # SF 0.9: R1 = 16 gives 1/1.125 = 0.889, short of it; R1 = 32 gives 0.941
    assert a["reached"] and a["choice"]["name"] == "cser R1=32 H=8"
    assert a["choice"]["algorithm"] == {"name": "cser", "compressor": "grbs", "ratio": 32.0, "period": 8}
    assert a["choice"]["flags"] == "--algorithm cser --compressor grbs --ratio 32 --period 8"


def test_prefers_the_least_compression_that_reaches_the_target():
    cands = candidate_list(ratios=(4, 8, 16, 32))
    assert advise(profile(), 2, 1e8, 0.5, cands, **KW)["choice"]["name"] == "sync"     # SF 0.5 exactly
    assert advise(profile(), 2, 1e8, 0.6, cands, **KW)["choice"]["name"] == "fp16"     # 0.667
    assert advise(profile(), 2, 1e8, 0.75, cands, **KW)["choice"]["name"] == "cser R1=8 H=8"  # 0.8
    # a fast link: sync reaches it (1 GB/s: 0.1 s of communication, SF 1/1.1 = 0.909)
    assert advise(profile(), 2, 1e9, 0.9, cands, **KW)["choice"]["name"] == "sync"


def test_unreachable_target_gives_the_best_and_says_so():
    a = advise(profile(), 2, 1e8, 0.99, candidate_list(ratios=(4, 8, 16, 32)), **KW)
    assert not a["reached"] and a["choice"]["name"] == "cser R1=32 H=8"


def test_float16_gradients_have_no_fp16_candidate():
    names = [c["name"] for c in candidate_list(grad_dtype="float16", ratios=(8,))]
    assert names == ["sync", "cser R1=8 H=8"]
    with pytest.raises(UserError, match="no candidate left"):
        candidate_list(("fp16",), grad_dtype="float16")
    with pytest.raises(UserError, match="target scaling factor"):
        advise(profile(), 2, 1e8, 1.5)
