"""The paper bench's derived V100 profiles against hand-computed values, and the bundled profiles
it wrote."""

import os

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


def test_bert_multiply_adds_by_hand():
    # BERT-base on 128 tokens (s), d = 768, 12 layers: per layer the query/key/value and output
    # projections 4 s d^2, the feed-forward 2 s d (4d), the attention's two products 2 s^2 d; then
    # the pooler (one token, d^2), next-sentence head (2 d), MLM transform on 20 masked positions
    # (20 d^2) and the decoder onto 30522 word pieces (20 d 30522)
    s, d = 128, 768
    per_layer = 4 * s * d * d + 2 * s * d * 4 * d + 2 * s * s * d
    want = 12 * per_layer + d * d + 2 * d + 20 * d * d + 20 * d * 30522
    layers, total = bench.bert_layer_costs("bert_12_768_12")
    assert total == want
    # every trainable parameter once (the decoder's weight is the word embedding): 110.1M with
    # the pre-training heads; the word embedding is called first, so it is the first layer's
    assert sum(sum(p) for _, p in layers) == pytest.approx(110.1e6, rel=0.001)
    assert layers[0] == (0.0, [30522 * d])


def test_derived_bert_profile_by_hand():
    # BERT-large in FP32: 46.78 sequences/s; BERT-base at a quarter of its multiply-adds, batch 64:
    # 64 / 46.78 / 4 s a step, forward a third. Layers in forward order: an embedding (no
    # multiply-adds, 10 weights) then a layer of 4 (20 weights): backward reaches the embedding last
    prof, rec = bench.derived_bert_profile("float32", [(0.0, [10]), (4.0, [20])], 2.0, 8.0)
    step = 64 / 46.78 / 4
    assert prof.forward_s == pytest.approx(step / 3) and prof.backward_s == pytest.approx(2 * step / 3)
    assert prof.grad_bytes == [80.0, 40.0] and prof.ready == pytest.approx([2 * step / 3] * 2)
    assert rec["source"] == "derived" and "46.78 sequences/s" in rec["reference"]["compute"]
    assert rec["seq_len"] == 128 and rec["batch_size"] == 64


@pytest.mark.parametrize("dtype, itemsize", [("fp32", 4), ("fp16", 2)])
def test_bundled_bert_base_profile(dtype, itemsize):
    prof, rec = load_profile(f"v100_bert_12_768_12_{dtype}")
    assert sum(prof.grad_bytes) / itemsize == pytest.approx(110.1e6, rel=0.001)
    assert len(prof.grad_bytes) == 206 and rec["source"] == "derived" and rec["device"]["name"].startswith("Tesla V100")
    # the word embedding (also the MLM decoder's weight) is ready only when backward ends
    k = prof.grad_bytes.index(30522 * 768 * itemsize)
    assert prof.ready[k] == pytest.approx(prof.backward_s)


def test_a_run_tells_whether_the_bundled_profile_is_the_one_it_derived():
    from gluon_suite.whatif.profiles import BUNDLED_DIR
    _, rec = load_profile(os.path.join(BUNDLED_DIR, "v100_resnet50_v1b_fp32.json"))
    assert bench.same_as_bundled("v100_resnet50_v1b_fp32", rec)
    other = dict(rec, forward_s=rec["forward_s"] * 2)
    assert not bench.same_as_bundled("v100_resnet50_v1b_fp32", other)
    assert not bench.same_as_bundled("v100_no_such_model_fp32", rec)
