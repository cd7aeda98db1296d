"""The worker-averaged model, with BatchNorm running statistics that belong to its weights.

Algorithms with local models (``cser``, ``local``, ``local_adaalter``) end an epoch with one model
per worker; what a user evaluates, checkpoints or publishes is their average. Averaging the
trainable weights is exact. A BatchNorm layer's running statistics are another matter: they were
gathered by each worker for its *own* weights, and once the local models have drifted apart
neither one worker's statistics nor their average describes the activations of the averaged
weights (a BatchNorm ResNet whose local models score 0.87-0.96 can average to chance accuracy).
Three choices (``DistributedTrainer.averaged(bn=...)``, docs/distributed.md):

- ``recompute``: average the weights, then compute the statistics of the averaged weights on a
  few training batches of each worker and average them over workers. Valid whatever the drift.
  Per layer, mean_hat = (1/K) sum_k mean_k and var_hat = (1/K) sum_k var_k over the K batches of
  all workers, where mean_k and var_k are the per-channel mean and (biased) variance MXNet's
  BatchNorm computes from batch k in training mode (the "cumulative average" of PyTorch's
  ``update_bn``).
- ``average``: average everything, statistics included. Valid when the workers' weights are equal
  or close (synchronous algorithms, or right after a full averaging).
- ``local``: average the trainable weights, each worker keeps its own statistics (the authors of
  CSER evaluate this way). Valid when the local models are close to their average.

MXNet 1.9.1 with oneDNN writes BatchNorm's running statistics in the *backward* pass, so the
recompute runs forward and backward in training mode, without an optimizer step. Per batch the
statistics are set to zero first; after backward they hold (1 - momentum) * batch statistic,
which gives the batch statistic exactly. Gradients (and their 'fresh' flags) are saved before and
written back after, so a ``step`` the trainer has not yet taken is untouched.
"""
import contextlib
import time

import mxnet as mx
from mxnet import autograd

from .comm import write_plain

BN_CHOICES = ("auto", "recompute", "average", "local")
RUNNING_STATS = ("running_mean", "running_var")


def is_running_statistic(param):
    """True for a BatchNorm running mean or variance (by Gluon's parameter names)."""
    return param.name.endswith(RUNNING_STATS)


def batchnorm_layers(net):
    """The BatchNorm layers of ``net`` whose running statistics move in training mode, as
    ``[(block, momentum)]`` in network order (layers with ``use_global_stats`` are left out)."""
    found, seen, stack = [], set(), [net]
    while stack:
        block = stack.pop()
        if id(block) in seen:
            continue
        seen.add(id(block))
        kw = getattr(block, "_kwargs", None) or {}
        if hasattr(block, "running_mean") and hasattr(block, "running_var") and "momentum" in kw:
            if not kw.get("use_global_stats", False):
                found.append((block, float(kw["momentum"])))
        stack.extend(reversed(list(block._children.values())))
    for block, momentum in found:
        if not 0.0 <= momentum < 1.0:
            raise ValueError(f"BatchNorm layer {block.name!r} has momentum {momentum}; recomputing its "
                             "statistics needs momentum < 1 (use bn='average' or bn='local')")
    return found


def _inputs(item):
    """The network inputs in one item of ``bn_batches``: an NDArray, or a (data, label, ...) tuple
    or list whose first element is the input (or a list of inputs, e.g. one per context)."""
    if isinstance(item, mx.nd.NDArray):
        return [item]
    if isinstance(item, (tuple, list)) and item:
        first = item[0]
        if isinstance(first, mx.nd.NDArray):
            return [first]
        if isinstance(first, (tuple, list)) and all(isinstance(a, mx.nd.NDArray) for a in first):
            return list(first)
    raise TypeError("bn_batches must yield network inputs (NDArray) or (data, label, ...) tuples, "
                    f"got {type(item).__name__}")


def recompute_statistics(net, layers, batches, num_batches, ctx, comm, name):
    """Replace the running statistics of ``layers`` (``batchnorm_layers(net)``) by those of the
    current weights: forward + backward in training mode on up to ``num_batches`` inputs from
    ``batches`` on context ``ctx``, statistics averaged over batches and workers, written to every
    context's copy. Gradients are left as they were. Returns the number of batches this worker
    used."""
    if callable(batches) and not hasattr(batches, "__iter__"):
        batches = batches()
    trainable = [p for p in net.collect_params().values() if p.grad_req != "null" and p._data is not None]
    saved_grads = [[g.copy() for g in p.list_grad()] for p in trainable]
    fresh = [[d._fresh_grad for d in p._data] for p in trainable]
    stats = [(blk.running_mean.data(ctx), blk.running_var.data(ctx), 1.0 / (1.0 - mom))
             for blk, mom in layers]
    sums = [(mx.nd.zeros(m.shape, ctx=ctx, dtype="float64"), mx.nd.zeros(v.shape, ctx=ctx, dtype="float64"))
            for m, v, _ in stats]
    used = 0
    try:
        for item in batches:
            for x in _inputs(item):
                if used >= num_batches:
                    break
                for m, v, _ in stats:
                    m[:] = 0
                    v[:] = 0
                with autograd.record(train_mode=True):
                    out = net(x.as_in_context(ctx))
                    outs = out if isinstance(out, (tuple, list)) else [out]
                    total = sum(o.sum() for o in outs if isinstance(o, mx.nd.NDArray))
                total.backward()
                for (m, v, scale), (sm, sv) in zip(stats, sums):
                    sm += m.astype("float64") * scale
                    sv += v.astype("float64") * scale
                used += 1
            if used >= num_batches:
                break
    finally:
        for p, grads, flags in zip(trainable, saved_grads, fresh):
            for g, s in zip(p.list_grad(), grads):
                g[:] = s
            for d, f in zip(p._data, flags):
                d._fresh_grad = f
    count = mx.nd.array([used], ctx=ctx, dtype="float64")
    flat = [a for pair in sums for a in pair] + [count]
    comm.grouped_allreduce_(flat, average=True, name=name)
    total = float(count.asscalar())
    if total == 0:
        raise ValueError("averaged(): bn_batches gave no batch on any worker; pass a few training "
                         "batches (or choose bn='average' or bn='local')")
    for (blk, _), (sm, sv) in zip(layers, sums):
        for param, acc in ((blk.running_mean, sm), (blk.running_var, sv)):
            value = acc / total
            for d in param.list_data():
                d[:] = value.astype(d.dtype).as_in_context(d.context)
    return used


class AveragedReport(dict):
    """What ``DistributedTrainer.averaged`` did: ``bn`` (the choice applied), ``batches`` (the
    batches this worker ran to recompute statistics, 0 otherwise) and ``seconds`` (time spent
    building the averaged model: collectives plus recompute)."""


def resolve_choice(bn, has_bn, local_models, size):
    """The BatchNorm choice ``auto`` stands for: ``recompute`` when the network has BatchNorm
    statistics and the algorithm keeps one model per worker on more than one worker, else
    ``average`` (workers' weights equal: their statistics belong to those weights)."""
    if bn not in BN_CHOICES:
        raise ValueError(f"bn must be one of {', '.join(BN_CHOICES)}, got {bn!r}")
    if bn != "auto":
        return bn
    return "recompute" if (has_bn and local_models and size > 1) else "average"


def timer():
    """A start time for ``AveragedReport.seconds`` (after pending work is done)."""
    mx.nd.waitall()
    return time.perf_counter()


def copy_to_replicas(param):
    """Every other context's copy of ``param`` <- its first (primary) copy."""
    for d in param._data[1:]:
        write_plain(param._data[0].as_in_context(d.context), d)


@contextlib.contextmanager
def averaged_model(all_params, algo, comm, name, net=None, bn_batches=None, bn="auto", bn_num_batches=8):
    """The body of ``DistributedTrainer.averaged``: ``all_params`` (the trainer's) averaged over the
    workers of ``comm`` (collectives named ``name``) within the block, BatchNorm statistics as
    ``bn`` says (``resolve_choice``), everything restored afterwards; yields the ``AveragedReport``."""
    t0 = timer()
    params = [p for p in all_params if p._data is not None]
    has_bn = any(is_running_statistic(p) for p in params)
    choice = resolve_choice(bn, has_bn, algo.local_models, comm.size)
    if comm.size == 1 and bn != "recompute":
        yield AveragedReport(bn="none", batches=0, seconds=0.0)
        return
    layers = []
    if choice == "recompute":
        if net is None or bn_batches is None:
            raise ValueError(
                f"averaged(): the network has BatchNorm and algorithm {algo.name!r} keeps one "
                "model per worker, so the averaged weights need their own BatchNorm statistics: "
                "pass net= and bn_batches= (a few of this worker's training batches), or choose "
                "bn='average' or bn='local' (docs/distributed.md)")
        layers = batchnorm_layers(net)
        known = {id(p) for p in params}
        params += [p for blk, _ in layers for p in (blk.running_mean, blk.running_var)
                   if id(p) not in known and p._data is not None]
    saved = [[d.copy() for d in p._data] for p in params]
    mixed = [p for p in params if not (choice == "local" and p.grad_req == "null")]
    arrays = [p._data[0] for p in mixed]
    try:
        comm.grouped_allreduce_(arrays, average=True, name=name, relayout=True)
        for p in mixed:
            copy_to_replicas(p)
        used = 0
        if layers:
            ctx = layers[0][0].running_mean.list_ctx()[0]
            used = recompute_statistics(net, layers, bn_batches, int(bn_num_batches), ctx, comm, f"{name}.bn")
        mx.nd.waitall()  # the collectives complete here on every worker, whatever the block does
        report = AveragedReport(bn=choice, batches=used, seconds=time.perf_counter() - t0)
        yield report
    finally:
        for p, copies in zip(params, saved):
            for d, s in zip(p._data, copies):   # a forward may have re-laid weights out (oneDNN)
                write_plain(s, d)
