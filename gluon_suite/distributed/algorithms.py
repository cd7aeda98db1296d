"""Synchronisation algorithms: what a data-parallel job communicates, and when.

Every algorithm sees the same two moments of a training step in ``DistributedTrainer``:
``reduce_gradients`` (after backward, before the optimizer) and ``after_update`` (after the local
optimizer update, with the weights from before it). Algorithms that compress the *update*
(``ef``, ``cser``) take it as ``u_i = w_before - w_after``, so any optimizer (SGD with momentum,
NAG, Adam, LANS, ...) supplies the update, with learning rate and weight decay already inside it,
and its momentum stays local (never reduced).

- ``sync``: average the gradients (optionally through a summable compressor), then update.
- ``ef``: error-feedback SGD. p_i = u_i + e_i; x <- x_before - allreduce_mean(C(p_i));
  e_i <- p_i - C(p_i). One global model.
- ``local``: every worker updates its own model; every H steps the models are averaged.
- ``local_adaalter``: Local AdaAlter (SPECS §3), with the ``adaalter`` optimizer.
- ``cser``: CSER (SPECS §1). Local models x_i = x̂ + e_i. Each step
  x_i <- x_before - allreduce_mean(C1(u_i)) - (u_i - C1(u_i)), e_i <- e_i - (u_i - C1(u_i));
  every H steps the error is partially synchronised with C2:
  x_i <- x_i - e_i + allreduce_mean(C2(e_i)) + (e_i - C2(e_i)), e_i <- e_i - C2(e_i).
  C1 = none is synchronous SGD, C1 = zero with C2 = none is local SGD, C1 = zero with C2 = grbs is
  CSER-PL.
"""
import math

import mxnet as mx

from .comm import write_plain
from .compression import Compressor, make_compressor


def sync_payload(comm, payload, name):
    """Exchange ``payload`` and return ``[(tensors, alpha), ...]`` whose weighted sum of
    decompressions is ``allreduce_mean(C(v))``: one averaged payload for a summable compressor, or
    every worker's payload with weight 1/n for a gathered one."""
    if not payload.tensors:
        return []
    if payload.summable:
        return [([comm.allreduce(t, average=True, name=f"{name}.{j}")
                  for j, t in enumerate(payload.tensors)], 1.0)]
    gathered = [comm.allgather(t, name=f"{name}.{j}") for j, t in enumerate(payload.tensors)]
    n = comm.size
    per_worker = [mx.nd.split(g, num_outputs=n, axis=0, squeeze_axis=False) if n > 1 else [g]
                  for g in gathered]
    return [([parts[w] for parts in per_worker], 1.0 / n) for w in range(n)]


def add_synced(payload, target, synced, sign=1.0):
    """``target += sign * allreduce_mean(C(v))`` from the result of ``sync_payload``."""
    for tensors, alpha in synced:
        payload.add_to(target, tensors, sign * alpha)


class Algorithm:
    """Base class: no communication. ``needs_update`` asks the trainer for the weights before the
    optimizer update; ``local_models`` says workers' models may differ between synchronisations;
    ``requires_summable`` rejects gathered compressors."""

    name = "base"
    needs_update = False
    local_models = False
    requires_summable = False

    def __init__(self):
        self.comm = None
        self.params = []

    def bind(self, params, comm):
        """Attach the trainer's ``[(index, Parameter)]`` with gradients, and the communicator."""
        self.params, self.comm = params, comm

    def reduce_gradients(self, step):
        """Called after backward, before the optimizer update (``step`` counts from 0)."""

    def after_update(self, before, step):
        """Called after the optimizer update; ``before[i]`` holds parameter i's weights before it."""

    def check_optimizer(self, optimizer):
        """Raise ValueError when the algorithm cannot work with ``optimizer``."""

    def owns_update(self, step):
        """True when the algorithm, not the optimizer, updates the weights at ``step``."""
        return False

    def local_update(self, trainer, step):
        """The algorithm's own update, called instead of the optimizer's when ``owns_update``."""

    def state_arrays(self):
        """Per-worker state to checkpoint, as ``{name: NDArray}``."""
        return {}

    def reset_for_resize(self):
        """Elastic resize: bring this worker's state to a form every worker can share before the
        parameters are broadcast from rank 0. Default: per-worker state restarts from zero."""
        for arr in self.state_arrays().values():
            arr[:] = 0

    def load_state_arrays(self, arrays):
        """Restore what ``state_arrays`` returned."""

    def config(self):
        """Hyper-parameters as a JSON-ready dict."""
        return {"name": self.name}

    def _check(self, compressor, role):
        if self.requires_summable and not compressor.summable:
            raise ValueError(
                f"algorithm {self.name!r} needs an allreduce-summable {role} compressor, but "
                f"{compressor.name!r} goes through allgather; choose one of: none, fp16, grbs, randomk")


class _ResidualState:
    """Mixin for algorithms that keep a per-parameter residual ``err`` (EF, CSER): zeroed on bind,
    saved and restored with the trainer state."""

    def bind(self, params, comm):
        super().bind(params, comm)
        self.err = {i: mx.nd.zeros(p.shape, dtype=p.dtype) for i, p in params}

    def state_arrays(self):
        return {f"err.{i}": e for i, e in self.err.items()}

    def load_state_arrays(self, arrays):
        for i in self.err:
            self.err[i][:] = arrays[f"err.{i}"]


class SyncSGD(Algorithm):
    """Synchronous SGD: the average gradient, dense or through a summable compressor (a lossy one
    drops what it does not send; pair lossy compressors with ``ef`` or ``cser`` instead)."""
    name = "sync"
    requires_summable = True

    def __init__(self, compressor="none"):
        super().__init__()
        self.compressor = make_compressor(compressor)
        self._check(self.compressor, "gradient")

    def reduce_gradients(self, step):
        comm = self.comm
        grads = [p.grad() for _, p in self.params]
        if self.compressor.name == "none":
            if comm.size > 1:
                comm.grouped_allreduce_(grads, average=True, name="sync.grads")
            return
        work = []
        for (i, _), g in zip(self.params, grads):
            pl = self.compressor.compress(g, i, step)
            work.append((g, pl, sync_payload(comm, pl, f"sync.{i}")))
        for g, pl, synced in work:
            g[:] = 0
            add_synced(pl, g, synced)

    def config(self):
        return {"name": self.name, "compressor": self.compressor.config()}


class ErrorFeedbackSGD(_ResidualState, Algorithm):
    """EF-SGD: compress the update plus the carried error; one global model on all workers."""
    name = "ef"
    needs_update = True

    def __init__(self, compressor="none"):
        super().__init__()
        self.compressor = make_compressor(compressor)
        self.err = {}

    def after_update(self, before, step):
        work = []
        for i, p in self.params:
            w, e = p.data(), self.err[i]
            e += before[i] - w                      # p_i = u_i + e_i, kept in e
            pl = self.compressor.compress(e, i, step)
            work.append((w, e, i, pl, sync_payload(self.comm, pl, f"ef.{i}")))
        for w, e, i, pl, synced in work:
            pl.add_to(e, pl.tensors, -1.0)          # e_i = p_i - C(p_i)
            w[:] = before[i]
            add_synced(pl, w, synced, -1.0)         # x = x_before - mean(C(p))

    def config(self):
        return {"name": self.name, "compressor": self.compressor.config()}


class LocalSGD(Algorithm):
    """Local SGD: local optimizer steps, models averaged every ``period`` steps (momentum local)."""
    name = "local"
    local_models = True

    def __init__(self, period=8):
        super().__init__()
        self.period = _check_period(period)

    def after_update(self, before, step):
        if (step + 1) % self.period == 0 and self.comm.size > 1:
            self.comm.grouped_allreduce_([p.data() for _, p in self.params], average=True,
                                         name="local.models", relayout=True)

    def config(self):
        return {"name": self.name, "period": self.period}


class CSER(_ResidualState, Algorithm):
    """Communication-efficient SGD with error reset (SPECS §1): partial synchronisation of the
    update with C1 every step and of the residual error with C2 every ``period`` steps."""
    name = "cser"
    needs_update = True
    local_models = True
    requires_summable = True

    def __init__(self, compressor="grbs", compressor2=None, period=8):
        super().__init__()
        self.c1 = make_compressor(compressor)
        self.c2 = make_compressor(compressor2 if compressor2 is not None else "none")
        self.period = _check_period(period)
        self._check(self.c1, "gradient (C1)")
        self._check(self.c2, "error (C2)")
        self.err = {}

    def after_update(self, before, step):
        comm, reset = self.comm, (step + 1) % self.period == 0
        work = []
        for i, p in self.params:
            w = p.data()
            u = before[i] - w
            pl = self.c1.compress(u, i, step)
            work.append((w, self.err[i], u, pl, sync_payload(comm, pl, f"cser.c1.{i}")))
        for w, e, u, pl, synced in work:
            # x_i = x_before - mean(C1(u)) - (u - C1(u)) = w_after + C1(u) - mean(C1(u))
            pl.add_to(w, pl.tensors, 1.0)
            add_synced(pl, w, synced, -1.0)
            e -= u                                   # e_i -= r_i, r_i = u - C1(u)
            pl.add_to(e, pl.tensors, 1.0)
        if not reset:
            return
        work = []
        for i, p in self.params:
            e = self.err[i]
            pl = self.c2.compress(e, i, step)
            work.append((p.data(), e, pl, sync_payload(comm, pl, f"cser.c2.{i}")))
        for w, e, pl, synced in work:
            # x_i = x_i - e_i + mean(C2(e)) + (e_i - C2(e_i)) = x_i - C2(e_i) + mean(C2(e))
            add_synced(pl, w, synced, 1.0)
            pl.add_to(w, pl.tensors, -1.0)
            pl.add_to(e, pl.tensors, -1.0)           # e_i = e_i - C2(e_i)

    def reset_for_resize(self):
        """Fold the residual into the model: x_i - e_i is the same on every worker (the CSER
        invariant), so after ``x_i <- x_i - e_i; e_i <- 0`` every worker holds that common model
        with no residual, whatever rank 0's local deviation was."""
        for i, p in self.params:
            write_plain(p.data() - self.err[i], p.data())
            self.err[i][:] = 0

    def config(self):
        return {"name": self.name, "c1": self.c1.config(), "c2": self.c2.config(),
                "period": self.period}


class LocalAdaAlter(Algorithm):
    """Local AdaAlter (SPECS §3): fully synchronous AdaAlter for ``warmup_steps`` steps, then local
    steps ``x_i <- x_i - lr*(g_i/sqrt(B_s + k*eps) + wd*x_i)`` with the accumulator B_s frozen at
    the last synchronisation (k = local steps since it), accumulating ``A_i += g_i^2``; every
    ``period`` steps ``x_i <- mean(x_i)``, ``B_s <- B_s + mean(A_i)``, ``A_i <- 0``. Needs the
    ``adaalter`` optimizer, whose state holds B_s."""
    name = "local_adaalter"
    local_models = True

    def __init__(self, period=4, warmup_steps=0):
        super().__init__()
        self.period = _check_period(period)
        if warmup_steps < 0:
            raise ValueError(f"warmup_steps must be >= 0, got {warmup_steps}")
        self.warmup = int(warmup_steps)
        self.acc = {}

    def check_optimizer(self, optimizer):
        if type(optimizer).__name__.lower() != "adaalter":
            raise ValueError(f"algorithm 'local_adaalter' needs the 'adaalter' optimizer, got "
                             f"'{type(optimizer).__name__.lower()}'")
        if getattr(optimizer, "multi_precision", False):
            raise ValueError("algorithm 'local_adaalter' does not support multi_precision")

    def bind(self, params, comm):
        super().bind(params, comm)
        self.acc = {i: mx.nd.zeros(p.shape, dtype=p.dtype) for i, p in params}

    def reduce_gradients(self, step):
        if step < self.warmup and self.comm.size > 1:
            self.comm.grouped_allreduce_([p.grad() for _, p in self.params], average=True,
                                         name="ladaalter.grads")

    def owns_update(self, step):
        return step >= self.warmup

    def local_update(self, trainer, step):
        opt, updater = trainer._optimizer, trainer._updaters[0]
        k = (step - self.warmup) % self.period + 1
        for i, p in self.params:
            w = p.data()
            if i not in updater.states:
                updater.states[i] = opt.create_state(i, w)
                updater.states_synced[i] = True
            B = updater.states[i]
            opt._update_count(i)
            lr, wd = opt._get_lr(i), opt._get_wd(i)
            g = opt.prepare_grad(p.grad())
            delta = g / mx.nd.sqrt(B + k * opt.epsilon)
            if wd:
                delta = delta + wd * w
            w -= lr * delta
            self.acc[i] += mx.nd.square(g)
        if (step - self.warmup + 1) % self.period == 0:
            comm = self.comm
            if comm.size > 1:
                comm.grouped_allreduce_([p.data() for _, p in self.params], average=True,
                                        name="ladaalter.models", relayout=True)
                comm.grouped_allreduce_([self.acc[i] for i, _ in self.params], average=True,
                                        name="ladaalter.acc")
            for i, _ in self.params:
                updater.states[i] += self.acc[i]
                self.acc[i][:] = 0

    def state_arrays(self):
        return {f"acc.{i}": a for i, a in self.acc.items()}

    def load_state_arrays(self, arrays):
        for i in self.acc:
            self.acc[i][:] = arrays[f"acc.{i}"]

    def config(self):
        return {"name": self.name, "period": self.period, "warmup_steps": self.warmup}


def _check_period(period):
    if not (isinstance(period, int) or float(period).is_integer()) or int(period) < 1:
        raise ValueError(f"period must be an integer >= 1 (steps between synchronisations), got {period}")
    return int(period)


ALGORITHMS = {a.name: a for a in (SyncSGD, ErrorFeedbackSGD, LocalSGD, CSER, LocalAdaAlter)}


def make_algorithm(name="sync", compressor="none", ratio=None, period=None, compressor2=None,
                   ratio2=None, min_size=0, warmup_steps=0, seed=0):
    """Build an algorithm from names, as scripts expose them as flags.

    ``make_algorithm('cser', compressor='grbs', ratio=64, period=16)`` gives CSER with GRBS at
    ratio 64 for the update (C1) and, unless ``compressor2``/``ratio2`` say otherwise, the same
    compressor at ratio R1/H (at least 1: dense) for the error (C2), so the overall ratio is about
    R1/2. ``min_size`` and ``warmup_steps`` apply to every compressor; ``seed`` seeds the shared
    randomness of grbs/randomk (the same on every worker). For ``local_adaalter``,
    ``warmup_steps`` is the number of fully synchronous steps before local updates start and
    ``period`` the number of steps between synchronisations (default 4).
    """
    if isinstance(name, Algorithm):
        return name
    key = str(name).lower()
    if key not in ALGORITHMS:
        raise ValueError(f"unknown algorithm {name!r}; choose one of: {', '.join(ALGORITHMS)}")
    if ratio is not None and not float(ratio) >= 1:
        raise ValueError(f"ratio must be >= 1 (dense bytes / sent bytes), got {ratio}")
    if ratio2 is not None and not float(ratio2) >= 1:
        raise ValueError(f"ratio2 must be >= 1 (dense bytes / sent bytes), got {ratio2}")
    if period is not None:
        period = _check_period(period)
    common = {"min_size": min_size, "warmup_steps": warmup_steps}

    def comp(cname, r, seed_offset):
        if isinstance(cname, Compressor):
            return cname
        return make_compressor(cname, ratio=r, seed=seed + seed_offset, **common)

    if key == "sync":
        return SyncSGD(comp(compressor, ratio, 0))
    if key == "ef":
        return ErrorFeedbackSGD(comp(compressor, ratio, 0))
    if key == "local_adaalter":
        if str(compressor).lower() != "none":
            raise ValueError(f"algorithm 'local_adaalter' takes no compressor (got {compressor!r})")
        return LocalAdaAlter(period or 4, warmup_steps)
    if key == "local":
        if str(compressor).lower() not in ("none", "zero"):
            raise ValueError(f"algorithm 'local' averages whole models and takes no compressor "
                             f"(got {compressor!r}); for compressed model averaging use "
                             "algorithm='cser' with compressor='zero' and compressor2='grbs' (CSER-PL)")
        return LocalSGD(period or 8)
    period = period or 8
    c1 = comp(compressor, ratio, 0)
    if compressor2 is None:
        compressor2 = "none" if c1.name == "zero" else c1.name
        if ratio2 is None and c1.name in ("grbs", "randomk", "topk"):
            ratio2 = max(1.0, c1.ratio / period)
        if compressor2 in ("grbs", "randomk") and ratio2 is not None and ratio2 <= 1.0:
            compressor2 = "none"
    c2 = comp(compressor2, ratio2, 7919)
    return CSER(c1, c2, period)
