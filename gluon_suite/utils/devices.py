"""Devices: which accelerators this machine has, which the installed MXNet and Horovod can use,
what to install when a piece is missing, and GluonCV-style context lists (``--gpus 0,1``).

MXNet ships one wheel per CUDA version (``mxnet`` is CPU only, ``mxnet-cu117`` is built for
CUDA 11.7 with cuDNN and NCCL); Horovod runs its GPU collectives over NCCL only when it was compiled
with ``HOROVOD_GPU_OPERATIONS=NCCL`` against a CUDA build of MXNet. A machine with GPUs and the CPU
wheel therefore trains on the CPU without a word: :func:`device_facts` says so in one line.
"""
import os
import shutil
import subprocess

from .errors import UserError

SETUP_HINT = "make setup CUDA=117 (MXNet 1.9.1's CUDA wheels: cu101 cu102 cu110 cu112 cu117)"


def visible_gpus():
    """GPU names that ``nvidia-smi`` lists (empty when there is no NVIDIA driver)."""
    smi = shutil.which("nvidia-smi")
    if not smi:
        return []
    try:
        p = subprocess.run([smi, "--query-gpu=name", "--format=csv,noheader"], capture_output=True,
                           text=True, timeout=20)
    except (OSError, subprocess.TimeoutExpired):
        return []
    return [line.strip() for line in p.stdout.splitlines() if line.strip()] if p.returncode == 0 else []


def device_facts():
    """A dict describing the accelerators: GPUs seen by the driver and by MXNet, MXNet's CUDA,
    cuDNN and NCCL support, Horovod's GPU operations, and ``advice``: one line saying what to
    install when a piece is missing (None when nothing is)."""
    import mxnet as mx
    features = mx.runtime.Features()
    facts = {"gpus_visible": visible_gpus(), "mxnet_cuda": features.is_enabled("CUDA"),
             "mxnet_cudnn": features.is_enabled("CUDNN"), "mxnet_nccl": features.is_enabled("NCCL")}
    try:
        facts["mxnet_gpus"] = int(mx.context.num_gpus()) if facts["mxnet_cuda"] else 0
    except mx.base.MXNetError:  # a CUDA wheel without a working driver
        facts["mxnet_gpus"] = 0
    try:
        import horovod.mxnet as hvd
        facts["horovod_gpu_ops"] = {"nccl": bool(hvd.nccl_built()), "cuda": bool(hvd.cuda_built())}
    except Exception:  # noqa: BLE001  reported by `info`'s Horovod check
        facts["horovod_gpu_ops"] = {"nccl": False, "cuda": False}
    facts["advice"] = _advice(facts)
    return facts


def _advice(f):
    if not f["gpus_visible"] and not f["mxnet_gpus"]:
        return None  # a CPU machine: the CPU stack is the right one
    if not f["mxnet_cuda"]:
        return (f"{len(f['gpus_visible'])} GPU(s) found but MXNet is the CPU build: install the CUDA "
                f"build with `{SETUP_HINT}`")
    if not f["mxnet_gpus"]:
        return "MXNet is a CUDA build but sees no GPU: check the NVIDIA driver (nvidia-smi)"
    if not f["horovod_gpu_ops"]["nccl"]:
        return ("Horovod has no NCCL GPU operations (GPU gradients go through the CPU over Gloo): "
                "install NCCL and run `make setup CUDA=<ver>` again, which rebuilds Horovod with NCCL")
    return None


def parse_gpus(text):
    """GluonCV's ``--gpus``: '0,1' -> [0, 1]; '' or '-1' -> [] (the CPU)."""
    text = (text or "").strip()
    if text in ("", "-1"):
        return []
    try:
        ids = [int(t) for t in text.split(",") if t.strip()]
    except ValueError:
        raise UserError(f"--gpus takes GPU ids like 0,1 (or -1 for the CPU), got {text!r}") from None
    if any(i < 0 for i in ids) or len(set(ids)) != len(ids):
        raise UserError(f"--gpus takes distinct ids >= 0 like 0,1 (or -1 for the CPU), got {text!r}")
    return ids


def contexts(gpus=None, local_rank=None):
    """The MXNet contexts of this worker: ``mx.gpu(i)`` for each id in ``gpus`` (a list or a
    ``--gpus`` string); with no ids but Horovod's ``local_rank`` on a CUDA machine, the worker's
    own GPU (Horovod's convention); otherwise ``[mx.cpu()]``."""
    import mxnet as mx
    ids = parse_gpus(gpus) if isinstance(gpus, str) or gpus is None else list(gpus)
    if not ids and local_rank is not None and os.environ.get("HOROVOD_LOCAL_RANK") is not None:
        try:
            if mx.context.num_gpus() > 0:
                ids = [int(local_rank)]
        except mx.base.MXNetError:
            ids = []
    if ids:
        try:
            have = mx.context.num_gpus()
        except mx.base.MXNetError:
            have = 0
        missing = [i for i in ids if i >= have]
        if missing:
            raise UserError(f"--gpus asks for GPU {missing[0]} but MXNet sees {have} GPU(s); "
                            f"use ids below {have}, or -1 for the CPU"
                            + ("" if have else f" (a GPU machine needs `{SETUP_HINT}`)"))
        return [mx.gpu(i) for i in ids]
    return [mx.cpu()]
