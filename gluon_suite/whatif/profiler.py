"""The measured side of the what-if analyser: forward, backward and update time and the gradient
sizes of a real network on this machine's CPU or one of its GPUs."""
import re

from ..utils.errors import UserError
from .model import StepProfile

_CTX = re.compile(r"^\s*(cpu|gpu)\s*(?:\(\s*(\d+)\s*\))?\s*$", re.I)


def parse_context(text):
    """'cpu', 'cpu(0)', 'gpu' or 'gpu(N)' -> ``(device_type, id)``; anything else is a UserError."""
    m = _CTX.match(str(text or "cpu"))
    if not m:
        raise UserError(f"--ctx takes cpu, cpu(0) or gpu(N), like MXNet's contexts; got {text!r}")
    return m.group(1).lower(), int(m.group(2) or 0)


def make_context(text):
    """The MXNet context ``text`` names (``parse_context``), checked: a GPU this machine or this
    MXNet build does not have is a one-line UserError saying what to do."""
    import mxnet as mx

    from ..utils.devices import SETUP_HINT
    kind, i = parse_context(text)
    if kind == "cpu":
        return mx.cpu(i)
    try:
        have = int(mx.context.num_gpus()) if mx.runtime.Features().is_enabled("CUDA") else 0
    except mx.base.MXNetError:
        have = 0
    if not have:
        raise UserError(f"--ctx gpu({i}): MXNet sees no GPU on this machine; profile with --ctx cpu here, or "
                        f"run the profile on the GPU machine (CUDA build of MXNet: {SETUP_HINT}) and predict from "
                        "its file here with `gluon-suite whatif predict --profile FILE`")
    if i >= have:
        raise UserError(f"--ctx gpu({i}): MXNet sees {have} GPU(s); use gpu(0) to gpu({have - 1})")
    return mx.gpu(i)


def device_name(ctx):
    """A readable name of the device behind ``ctx`` (the GPU's model, or the CPU's)."""
    import platform
    if ctx.device_type == "gpu":
        from ..utils.devices import visible_gpus
        names = visible_gpus()
        return names[ctx.device_id] if ctx.device_id < len(names) else "GPU"
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "CPU"


def profile_model(net, batch_size=32, image_size=224, repeats=3, ctx=None, dtype="float32", show_progress=False):
    """Measure t_f, t_b, t_opt, the gradient sizes and each gradient's ready time during backward
    (in backward order: last layer first) of the vision network
    ``net`` (a Gluon block taking ``batch_size`` x 3 x ``image_size`` x ``image_size`` images) on
    ``ctx`` (default: the CPU) in ``dtype`` ('float32' or 'float16', the latter with float32 master
    weights, as GluonCV's ``--dtype float16``). The caller builds ``net`` (e.g. with
    ``model_zoo.get_model``), so this layer never imports the zoo or the domains. The first step
    warms up and is not counted; the times are the medians of ``repeats`` steps."""
    import time

    from ..utils.progress import progress

    import mxnet as mx
    from mxnet import autograd, gluon

    ctx = ctx or mx.cpu()
    if dtype not in ("float32", "float16"):
        raise UserError(f"--dtype must be float32 or float16, got {dtype!r}")
    if dtype == "float16" and ctx.device_type == "cpu":
        from ..utils.devices import FP16_ON_CPU
        raise UserError(FP16_ON_CPU.replace("or add --gpus", "or profile on a GPU with --ctx gpu(0)"))
    net.initialize(mx.init.Xavier(), ctx=ctx)
    if dtype == "float16":
        net.cast("float16")
    x = mx.nd.random.uniform(shape=(batch_size, 3, image_size, image_size), ctx=ctx, dtype=dtype)
    net(x[:1])
    params = [p for p in net.collect_params().values() if p.grad_req != "null"]
    trainer = gluon.Trainer(params, "sgd", {"learning_rate": 0.01, "momentum": 0.9,
                                            "multi_precision": dtype == "float16"})
    tf, tb, to, ready = [], [], [], []
    for _ in progress(range(repeats + 1), desc="profiling steps", enabled=show_progress):
        mx.nd.waitall()
        t0 = time.perf_counter()
        with autograd.record():
            y = net(x)
            y.wait_to_read()
            t1 = time.perf_counter()
            loss = y.sum()
        loss.backward()
        ready.append(grad_ready_times(params[::-1], t1))
        mx.nd.waitall()
        t2 = time.perf_counter()
        trainer.step(batch_size)
        mx.nd.waitall()
        t3 = time.perf_counter()
        tf.append(t1 - t0)
        tb.append(t2 - t1)
        to.append(t3 - t2)
    med = lambda v: sorted(v[1:])[len(v[1:]) // 2]  # noqa: E731
    import numpy as np
    sizes = [p.data(ctx).size * np.dtype(p.data(ctx).dtype).itemsize for p in params][::-1]  # last layer first
    return StepProfile(med(tf), med(tb), sizes, med(to),
                       ready=[med([r[k] for r in ready]) for k in range(len(sizes))])


def grad_ready_times(params, t_start):
    """Measured ready time (seconds after ``t_start``, a ``time.perf_counter()`` value) of each
    parameter's gradient, ``params`` in the order backward produces them (last layer first). Call
    right after ``loss.backward()``: MXNet computes backward asynchronously, and waiting for each
    gradient in turn returns as soon as that one is written, so each time is when the gradient
    was ready (or when the one before it was, if that was later)."""
    import time
    out = []
    for p in params:
        for g in p.list_grad():
            g.wait_to_read()
        out.append(time.perf_counter() - t_start)
    return out
