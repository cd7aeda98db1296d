"""The paper bench's derived V100 profiles against hand-computed values, and the bundled profiles
it wrote."""

import pytest

from gluon_suite.whatif import load_profile

from ..conftest import load_script

bench = load_script("bench/whatif_paper.py")


def test_derived_profile_by_hand():
    # ResNet-50 on a V100 in FP32: 384 img/s, so batch 64 takes 1/6 s: forward 1/18, backward 1/9.
    # Two layers: 1 multiply-add with 10 weights, then 3 with 20. Backward goes through the second
    # first (3 of 4 multiply-adds: ready at 3/4 of backward), then the first (at the end).
    prof, rec = bench.derived_profile("resnet50_v1b", "float32", [(1.0, [10]), (3.0, [20])])
    assert prof.forward_s == pytest.approx(1 / 18) and prof.backward_s == pytest.approx(1 / 9)
    assert prof.grad_bytes == [80.0, 40.0]
    assert prof.ready == pytest.approx([1 / 9 * 0.75, 1 / 9])
    assert rec["source"] == "derived" and "384 img/s" in rec["reference"]["compute"]
    # VGG-16: 15.3 / 3.8 times ResNet-50's compute; float16 from 1376 img/s and 2-byte gradients
    prof, _ = bench.derived_profile("vgg16", "float16", [(1.0, [10])])
    assert prof.forward_s + prof.backward_s == pytest.approx(64 / 1376 * 15.3 / 3.8)
    assert prof.grad_bytes == [20.0]


@pytest.mark.parametrize("name, mparams", [("resnet50_v1b", 25.6), ("resnet101_v1b", 44.5), ("vgg16", 138.4)])
def test_bundled_profiles_hold_the_models_parameters(name, mparams):
    # published parameter counts: ResNet-50 25.6M, ResNet-101 44.5M, VGG-16 138.4M (4 bytes each)
    prof, rec = load_profile(f"v100_{name}_fp32")
    assert sum(prof.grad_bytes) / 4 / 1e6 == pytest.approx(mparams, rel=0.01)
    assert rec["source"] == "derived" and rec["device"]["name"].startswith("Tesla V100")
