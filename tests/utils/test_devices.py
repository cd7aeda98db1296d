"""Devices: GluonCV-style --gpus parsing, contexts on a CPU machine, and the one-line advice of
`gluon-suite info` for each missing piece of a GPU stack."""
import mxnet as mx
import pytest

from gluon_suite.utils import UserError
from gluon_suite.utils.devices import _advice, contexts, device_facts, parse_gpus


def test_parse_gpus_like_gluoncv():
    assert parse_gpus("0,1") == [0, 1] and parse_gpus(" 2 ") == [2]
    assert parse_gpus("") == [] and parse_gpus("-1") == [] and parse_gpus(None) == []
    for bad in ("a", "0,0", "-2", "1;2"):
        with pytest.raises(UserError, match="--gpus takes"):
            parse_gpus(bad)


def test_contexts_on_a_machine_without_usable_gpus(monkeypatch):
    monkeypatch.delenv("HOROVOD_LOCAL_RANK", raising=False)
    assert contexts("-1") == [mx.cpu()] and contexts(None) == [mx.cpu()]
    monkeypatch.setenv("HOROVOD_LOCAL_RANK", "1")      # a Horovod worker on a CPU machine: the CPU
    assert contexts(None, local_rank=1) == [mx.cpu()]
    if mx.context.num_gpus() == 0:
        with pytest.raises(UserError, match="asks for GPU 0 but MXNet sees 0 GPU"):
            contexts("0")


def facts(visible, cuda, gpus, nccl):
    return {"gpus_visible": ["H100"] * visible, "mxnet_cuda": cuda, "mxnet_gpus": gpus,
            "horovod_gpu_ops": {"nccl": nccl, "cuda": cuda}}


def test_advice_names_what_to_install():
    assert _advice(facts(0, False, 0, False)) is None                    # a CPU machine is fine
    assert "make setup CUDA=117" in _advice(facts(2, False, 0, False))    # GPUs, CPU wheel
    assert "sees no GPU" in _advice(facts(1, True, 0, False))              # driver problem
    assert "NCCL" in _advice(facts(1, True, 1, False))                    # Horovod without NCCL
    assert _advice(facts(8, True, 8, True)) is None


def test_device_facts_here_are_consistent():
    f = device_facts()
    assert f["mxnet_cuda"] == mx.runtime.Features().is_enabled("CUDA")
    assert f["mxnet_gpus"] == (mx.context.num_gpus() if f["mxnet_cuda"] else 0)
    assert f["advice"] == _advice(f)
