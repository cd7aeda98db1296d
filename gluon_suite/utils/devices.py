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

from .env import env
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
        if missing and not have:
            raise UserError(f"--gpus asks for GPU {missing[0]} but MXNet sees 0 GPU(s): drop --gpus "
                            f"(or give --gpus -1) to train on the CPU, or on a GPU machine install "
                            f"the CUDA build with `{SETUP_HINT}`")
        if missing:
            raise UserError(f"--gpus asks for GPU {missing[0]} but MXNet sees {have} GPU(s); "
                            f"use ids below {have}, or -1 for the CPU")
        return [mx.gpu(i) for i in ids]
    return [mx.cpu()]


DTYPES = ("float32", "float16")
FP16_ON_CPU = ("--dtype float16 needs a GPU: MXNet 1.9.1 has no float16 matrix product on the CPU "
               "('FP16 gemm on cpu not implemented'); drop --dtype float16 (or use --dtype float32) "
               "on the CPU, or add --gpus")
EMULATE_FLOAT16 = "GLUON_SUITE_EMULATE_FLOAT16"
FP16_EMULATION_HINT = (" (the vision and BERT recipes can check float16 numerics on the CPU with "
                       f"{EMULATE_FLOAT16}=1: "
                       "each layer then computes in float32 from float16 values and rounds its output)")


def float16_emulated():
    """Whether the user asked for float16 emulation on the CPU (``GLUON_SUITE_EMULATE_FLOAT16=1``)."""
    return env("GLUON_SUITE_EMULATE_FLOAT16")


def _to_float32(F, x):
    """A unit's float16 input as float32; other inputs (integer lengths, float32 token ids) as
    they are: a cast would put them on autograd's graph, and MXNet's softmax then asks for the
    gradient of its integer ``length``. A symbol's dtype is unknown: ``amp_cast`` casts floating
    types only."""
    import mxnet as mx
    import numpy as np
    if x is None:
        return x
    if isinstance(x, mx.nd.NDArray):
        return F.cast(x, "float32") if x.dtype == np.float16 else x
    return F.amp_cast(x, dtype="float32")


def emulate_float16_kernels(net):
    """Let a float16 network train on the CPU, where MXNet 1.9.1 has no float16 matrix product.

    The network is cut into *units*: every block that owns parameters while none of its
    descendants does (a dense or convolution layer, with its activation as a child or not;
    BatchNorm; an embedding; an attention cell that calls FullyConnected itself on its own
    weights, as GluonNLP's BERT does), and every parameterless leaf outside those (an activation,
    pooling, dropout). Each unit takes its float16 inputs (and float16 weights), computes in
    float32 and rounds its outputs to float16. That is what a GPU's float16 kernels compute:
    float16 GEMMs and convolutions accumulate in float32, element-wise kernels convert each float16
    value to float32 and round the result, and BatchNorm keeps float32 parameters and statistics.
    Inside a composite unit (the attention cell) intermediate values stay float32, a little more
    precise than a GPU's float16 kernels; the operators that blocks with parameterised children
    call themselves (a residual addition, a position embedding's addition) run in float16 as they
    are. Activations, gradients and weights are float16; the optimizer keeps float32 master
    weights (``multi_precision``). Call after ``net.cast('float16')``, before ``hybridize``;
    returns the number of units changed."""
    from mxnet import gluon
    changed = []

    def owns(block):
        return bool(block._reg_params)

    def has_params_below(block):
        return any(owns(c) or has_params_below(c) for c in block._children.values())

    def visit(block):
        unit = (owns(block) and not has_params_below(block)) or not block._children
        if not unit:
            for child in block._children.values():
                visit(child)
            return
        if not isinstance(block, gluon.HybridBlock) or getattr(block, "_float16_emulated", False):
            return
        inner = block.hybrid_forward
        # BatchNorm's parameters stay float32 under cast('float16'), and its running statistics
        # are updated in place (a cast copy could not be)
        keep = isinstance(block, gluon.nn.BatchNorm)

        def hybrid_forward(F, *inputs, **params):
            inputs = [_to_float32(F, x) for x in inputs]
            if not keep:
                params = {k: None if v is None else F.cast(v, "float32") for k, v in params.items()}
            out = inner(F, *inputs, **params)
            if isinstance(out, (list, tuple)):
                return type(out)(F.cast(o, "float16") for o in out)
            return F.cast(out, "float16")
        block.hybrid_forward = hybrid_forward
        block._float16_emulated = True
        changed.append(block)
    visit(net)
    return len(changed)


def float16_network(net, dtype, ctx):
    """Cast an initialised network to ``dtype``; a float16 network on CPU contexts also gets the
    float32-computing units of ``emulate_float16_kernels`` (MXNet has no CPU float16 GEMM).
    Returns ``net``."""
    if dtype == "float16":
        net.cast("float16")
        if all(c.device_type == "cpu" for c in ctx):
            emulate_float16_kernels(net)
    return net


def gpus_flag(text):
    """An argparse type for ``--gpus``: GPU ids like ``0,1``; ``-1`` or empty for the CPU."""
    from .validate import _fail
    try:
        parse_gpus(text)
    except UserError:
        _fail(f"{str(text)!r} is not a list of distinct GPU ids >= 0; give ids like 0,1 (or -1 for "
              "the CPU)")
    return str(text).strip()


def dtype_flag(allowed=DTYPES, why=""):
    """An argparse type for ``--dtype``: one of ``allowed``; a known dtype the recipe cannot train
    in is refused with ``why``."""
    from .validate import _fail

    def check(text):
        key = str(text).strip().lower()
        if key in allowed:
            return key
        if key in DTYPES:
            _fail(f"{key} is not supported here{why}; use {' or '.join(allowed)}")
        _fail(f"unknown dtype {str(text)!r}; use one of {', '.join(allowed)}")
    check.__name__ = "dtype"
    return check


GPUS_HELP = ("GPU ids like 0,1 (one parameter copy per GPU); -1 or none: the CPU; under horovodrun each worker "
             "takes its local rank's GPU")
DTYPE_HELP = " (float16: float32 master weights, multi_precision)"


def add_device_arguments(parser, dtypes=DTYPES, why=""):
    """Add GluonCV's ``--gpus`` and ``--dtype`` (one of ``dtypes``; another known dtype is refused
    with ``why``), with their defaults, to ``parser`` (an argparse parser or group): for a script
    whose configuration has no device keys (a recipe that trains on the device it is given).
    Configurations with device keys get these flags from ``DeviceOptions``."""
    parser.add_argument("--gpus", type=gpus_flag, help=GPUS_HELP, default=None)
    parser.add_argument("--dtype", type=dtype_flag(dtypes, why), help=" or ".join(dtypes) + DTYPE_HELP,
                        default="float32")


def resolve_devices(gpus=None, dtype="float32", cpu_float16=False):
    """The worker's contexts and training dtype from the ``--gpus``/``--dtype`` values, checked:
    a GPU this machine lacks or float16 on the CPU is a ``UserError`` naming the flag to drop.
    Under horovodrun with no ``--gpus``, the worker's local-rank GPU when MXNet sees GPUs.
    ``cpu_float16``: the caller can emulate float16 on the CPU (``emulate_float16_kernels``) and
    does so when the user set ``GLUON_SUITE_EMULATE_FLOAT16=1``."""
    dtype = str(dtype or "float32").lower()
    if dtype not in DTYPES:
        raise UserError(f"unknown dtype {dtype!r}; use one of {', '.join(DTYPES)}")
    import mxnet as mx
    if isinstance(gpus, (list, tuple)):   # a YAML list
        gpus = ",".join(str(g) for g in gpus)
    if gpus is not None and str(gpus).strip() in ("", "-1"):
        ctx = [mx.cpu()]                  # asked for the CPU: also under horovodrun
    else:
        ctx = contexts(None if gpus is None else str(gpus),
                       local_rank=os.environ.get("HOROVOD_LOCAL_RANK"))
    if dtype == "float16" and all(c.device_type == "cpu" for c in ctx):
        if not cpu_float16:
            raise UserError(FP16_ON_CPU)
        if not float16_emulated():
            raise UserError(FP16_ON_CPU + FP16_EMULATION_HINT)
    return ctx, dtype


def single_device(ctx, script):
    """The one context of a worker of ``script`` (a recipe that runs on its default context: use
    as ``with single_device(ctx, ...):``); several contexts are a ``UserError``."""
    if len(ctx) > 1:
        raise UserError(f"{script} trains on one device per worker, got --gpus with {len(ctx)} ids: "
                        "give one id, or run one worker per GPU with horovodrun (each takes its local "
                        "rank's GPU)")
    return ctx[0]


def float32_only(dtype, what, why):
    """A ``UserError`` when ``dtype`` is not float32 for a recipe that trains in float32 only."""
    if dtype != "float32":
        raise UserError(f"--dtype {dtype} is not supported by {what} ({why}); use --dtype float32")


def _gpus_value(value):
    """``gpus`` from a flag (``0,1``), a YAML list or a number."""
    if isinstance(value, (list, tuple)):
        value = ",".join(str(v) for v in value)
    return gpus_flag(value)


def _device_options():
    import dataclasses

    from .runconfig import option

    @dataclasses.dataclass
    class DeviceOptions:
        """GluonCV's ``--gpus``/``--dtype``: the worker's devices and training dtype
        (``resolve_devices``)."""
        gpus: str = option(None, _gpus_value, flag_type=gpus_flag, help=GPUS_HELP)
        dtype: str = option("float32", dtype_flag(DTYPES), help=" or ".join(DTYPES) + DTYPE_HELP)
    return DeviceOptions


DeviceOptions = _device_options()
