"""Synchronisation algorithms: what a data-parallel job communicates, and when.

Every algorithm works on buckets (``buckets.py``): flat vectors of many parameters, one
compression and one collective per bucket; per-bucket state (EF/CSER residuals) is one flat vector
per bucket. Every algorithm sees the same two moments of a training step in ``DistributedTrainer``:
``reduce_gradients`` (after backward, before the optimizer) and ``after_update`` (after the local
optimizer update, with the weights from before it). Algorithms that compress the *update*
(``ef``, ``cser``) take it as ``u_i = w_before - w_after`` (per bucket: the concatenation), so any optimizer (SGD with momentum,
NAG, Adam, LANS, ...) supplies the update, with learning rate and weight decay already inside it,
and its momentum stays local (never reduced).

- ``sync``: average the gradients (optionally through a summable compressor), then update.
- ``ef``: error-feedback SGD. p_i = u_i + e_i; x <- x_before - allreduce_mean(C(p_i));
  e_i <- p_i - C(p_i). One global model.
- ``local``: every worker updates its own model; every H steps the models are averaged.
- ``local_adaalter``: Local AdaAlter (docs/methods.md), with the ``adaalter`` optimizer (``local_adaalter.py``).
- ``auto``: local steps (or synchronous SGD) while measuring the job, then the least compression
  that reaches a target scaling factor, checked against sync's step (``auto.py``).
- ``cser``: CSER (docs/methods.md). Local models x_i = x̂ + e_i. Each step
  x_i <- x_before - allreduce_mean(C1(u_i)) - (u_i - C1(u_i)), e_i <- e_i - (u_i - C1(u_i));
  every H steps the error is partially synchronised with C2:
  x_i <- x_i - e_i + allreduce_mean(C2(e_i)) + (e_i - C2(e_i)), e_i <- e_i - C2(e_i).
  C1 = none is synchronous SGD, C1 = zero with C2 = none is local SGD, C1 = zero with C2 = grbs is
  CSER-PL.
"""
import math

import mxnet as mx

from .buckets import DEFAULT_BUCKET_MB, layout_buckets

MAX_SEPARATE_BUCKETS = 64     # sync: up to this many buckets get a collective each
from .comm import write_plain
from .compression import Compressor, make_compressor


class Exchange:
    """A payload's collective in flight: ``add_to(target, alpha)`` performs
    ``target += alpha * allreduce_mean(C(v))`` once the averaged (summable) or gathered payloads
    are there. ``arrays`` are the collective's results."""

    def __init__(self, payload, arrays, workers):
        self.payload, self.arrays, self.workers = payload, arrays, workers

    def add_to(self, target, alpha=1.0):
        """``target += alpha * allreduce_mean(C(v))`` in place."""
        if not self.arrays:
            return
        if self.payload.summable:
            self.payload.add_to(target, self.arrays, alpha)
        else:
            self.payload.add_gathered(target, self.arrays, self.workers, alpha / self.workers)


def sync_payload(comm, payload, name):
    """Start the collective of ``payload``: allreduce (mean) of a summable payload, allgather of a
    gathered one (one call per payload tensor), and return the ``Exchange``."""
    if not payload.tensors:
        return Exchange(payload, [], comm.size)
    if payload.summable:
        arrays = [comm.allreduce(t, average=True, name=f"{name}.{j}") for j, t in enumerate(payload.tensors)]
    else:
        arrays = [comm.allgather(t, name=f"{name}.{j}") for j, t in enumerate(payload.tensors)]
    return Exchange(payload, arrays, comm.size)


class Algorithm:
    """Base class: no communication. ``needs_update`` asks the trainer for the weights before the
    optimizer update (``snapshot``: one flat vector per bucket); ``local_models`` says workers'
    models may differ between synchronisations; ``requires_summable`` rejects gathered
    compressors; ``state_kinds`` names per-bucket state vectors (residuals) kept as attributes."""

    name = "base"
    needs_update = False
    local_models = False
    requires_summable = False
    state_kinds = ()

    def __init__(self):
        self.comm = None
        self.params = []
        self.buckets = []

    @property
    def compressors(self):
        """The compressors this algorithm applies."""
        return []

    def bind(self, params, comm, bucket_mb=DEFAULT_BUCKET_MB, network_position=None):
        """Attach the trainer's ``[(index, Parameter)]`` with gradients and the communicator; lay
        the parameters out in buckets (reverse network order: ``network_position[index]``) and
        point their gradients into them."""
        self.params, self.comm = params, comm
        min_size = max([c.min_size for c in self.compressors] + [0])
        self.buckets = layout_buckets(params, bucket_mb, min_size=min_size,
                                      network_position=network_position)
        for b in self.buckets:
            b.bind_gradients()
        for kind in self.state_kinds:
            setattr(self, kind, [b.zeros() for b in self.buckets])
        self._where = {i: (k, j) for k, b in enumerate(self.buckets) for j, i in enumerate(b.indices)}

    def adopt(self, other):
        """Continue from ``other``'s binding: the same parameters, communicator and buckets (their
        gradients stay where backward writes them); this algorithm's per-bucket state starts at
        zero. The layouts must agree (the same compressors' ``min_size``)."""
        self.params, self.comm, self.buckets = other.params, other.comm, other.buckets
        for kind in self.state_kinds:
            setattr(self, kind, [b.zeros() for b in self.buckets])
        self._where = other._where

    def snapshot(self):
        """The weights of every bucket, concatenated (one flat copy per bucket, in the bucket's
        work vector 'before': valid until the next snapshot)."""
        return [b.gather_weights("before") for b in self.buckets]

    def view(self, kind, index):
        """Parameter ``index``'s view (shared memory) of the per-bucket state ``kind``."""
        k, j = self._where[index]
        return self.buckets[k].views(getattr(self, kind)[k])[j]

    def reduce_gradients(self, step):
        """Called after backward, before the optimizer update (``step`` counts from 0)."""

    def after_update(self, before, step):
        """Called after the optimizer update; ``before[k]`` holds bucket k's weights before it."""

    def check_optimizer(self, optimizer):
        """Raise ValueError when the algorithm cannot work with ``optimizer``."""

    def owns_update(self, step):
        """True when the algorithm, not the optimizer, updates the weights at ``step``."""
        return False

    def local_update(self, optimizer, updater, step):
        """The algorithm's own update, called instead of the optimizer's when ``owns_update``:
        the trainer hands over its ``optimizer`` (rates, counts) and ``updater`` (which holds the
        optimizer's per-parameter states)."""

    def state_arrays(self):
        """Per-worker state to checkpoint, as ``{'<kind>.b<bucket>': flat NDArray}``."""
        return {f"{kind}.b{k}": v for kind in self.state_kinds for k, v in enumerate(getattr(self, kind))}

    def load_state_arrays(self, arrays):
        """Restore per-worker state given per parameter, ``{'<kind>.<index>': NDArray}`` (the
        trainer splits saved buckets into parameters, so any bucket layout can be read)."""
        for kind in self.state_kinds:
            for b, flat in zip(self.buckets, getattr(self, kind)):
                flat[:] = b.gather([arrays[f"{kind}.{i}"].as_in_context(b.context) for i in b.indices])

    def reset_for_resize(self):
        """Elastic resize: bring this worker's state to a form every worker can share before the
        parameters are broadcast from rank 0. Default: per-worker state restarts from zero."""
        for arr in self.state_arrays().values():
            arr[:] = 0

    def config(self):
        """Hyper-parameters as a JSON-ready dict."""
        return {"name": self.name}

    def _check(self, compressor, role):
        if self.requires_summable and not compressor.summable:
            raise ValueError(
                f"algorithm {self.name!r} needs an allreduce-summable {role} compressor, but "
                f"{compressor.name!r} goes through allgather; choose one of: none, fp16, grbs, randomk")

    def _average_models(self, name):
        """Every bucket's weights <- their mean over workers (one collective per bucket)."""
        flats = self.snapshot()
        self.comm.grouped_allreduce_(flats, average=True, name=name)
        for b, flat in zip(self.buckets, flats):
            b.scatter(flat, b.weights())


class SyncSGD(Algorithm):
    """Synchronous SGD: the average gradient, dense or through a summable compressor (a lossy one
    drops what it does not send; pair lossy compressors with ``ef`` or ``cser`` instead)."""
    name = "sync"
    requires_summable = True

    def __init__(self, compressor="none"):
        super().__init__()
        self.compressor = make_compressor(compressor)
        self._check(self.compressor, "gradient")

    @property
    def compressors(self):
        return [self.compressor]

    def reduce_gradients(self, step):
        comm = self.comm
        if self.compressor.name == "none":
            if comm.size > 1:
                if len(self.buckets) <= MAX_SEPARATE_BUCKETS:
                    # one collective per bucket, issued in the order backward completes them: a
                    # Horovod group waits for all its tensors, so grouping them would keep the
                    # first buckets' transfers from overlapping the rest of backward
                    for b in self.buckets:
                        comm.allreduce_(b.grad, average=True, name=f"sync.b{b.key}")
                else:   # per-tensor layouts (bucket_mb=0): one fused group, not hundreds of calls
                    comm.grouped_allreduce_([b.grad for b in self.buckets], average=True, name="sync.grads")
            return
        work = []
        for b in self.buckets:
            g = b.shaped(b.grad)
            pl = self.compressor.compress(g, b.key, step, dense=b.small, layout=b)
            work.append((g, sync_payload(comm, pl, f"sync.b{b.key}")))
        for g, ex in work:
            if ex.payload.dense and ex.arrays:  # every coordinate: write, no zero + add
                mx.nd.cast(ex.arrays[0], dtype=g.dtype, out=g)
                continue
            g[:] = 0
            ex.add_to(g)

    def config(self):
        return {"name": self.name, "compressor": self.compressor.config()}


class ErrorFeedbackSGD(Algorithm):
    """EF-SGD: compress the update plus the carried error; one global model on all workers."""
    name = "ef"
    needs_update = True
    state_kinds = ("err",)

    def __init__(self, compressor="none"):
        super().__init__()
        self.compressor = make_compressor(compressor)
        self.err = []

    @property
    def compressors(self):
        return [self.compressor]

    def after_update(self, before, step):
        work = []
        for b, wb, e in zip(self.buckets, before, self.err):
            ws = b.weights()
            e += wb
            e -= b.gather_weights("after")               # p_i = u_i + e_i, kept in e
            es = b.shaped(e)
            pl = self.compressor.compress(es, b.key, step, dense=b.small, layout=b)
            work.append((b, ws, wb, es, pl, sync_payload(self.comm, pl, f"ef.b{b.key}")))
        for b, ws, wb, es, pl, ex in work:
            pl.add_to(es, pl.tensors, -1.0)          # e_i = p_i - C(p_i)
            ex.add_to(b.shaped(wb), -1.0)            # x = x_before - mean(C(p))
            b.scatter(wb, ws)

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
            self._average_models("local.models")

    def config(self):
        return {"name": self.name, "period": self.period}


def error_compressor(c1, period, ratio2=None):
    """CSER's error compressor C2 when none is named: for a sparsifying C1 (grbs, randomk, topk)
    the same kind at ratio ``ratio2`` (default R1/H, at least 1; a dense grbs/randomk is none), so
    the overall ratio is about R1/2; for a zero C1 (CSER-PL's model averaging) none; for a
    fixed-ratio C1 (fp16, sign, none) the same kind. A compressor of the user's own gets none. Its
    shared randomness is seeded apart from C1's."""
    from .compression import COMPRESSORS
    name = c1.name
    if name == "zero" or name not in COMPRESSORS:
        return make_compressor("none")
    common = {"min_size": c1.min_size, "warmup_steps": c1.warmup_steps, "seed": c1.seed + 7919}
    if name in ("grbs", "randomk", "topk"):
        ratio2 = max(1.0, c1.ratio / period) if ratio2 is None else ratio2
        if name != "topk" and ratio2 <= 1.0:
            return make_compressor("none", **common)
        return make_compressor(name, ratio=ratio2, **common)
    return make_compressor(name, ratio=ratio2, **common)


class CSER(Algorithm):
    """Communication-efficient SGD with error reset (docs/methods.md, "CSER"): partial synchronisation of the
    update with C1 every step and of the residual error with C2 every ``period`` steps.

    Variants (docs/distributed.md): ``c1_operand='update'`` (the paper's pseudo-code) applies C1
    to the fresh update u_i; ``'model'`` (the authors' released code) applies it to the local
    model's deviation after the update, e_i - u_i, i.e. averages the C1 block of the local model,
    which also resets the error there. ``reset_step='both'`` sends C1 and C2 on every H-th step;
    ``'c2_only'`` (the released code) sends C2 instead of C1 on that step (the update then goes
    wholly into the error before the reset)."""
    name = "cser"
    needs_update = True
    local_models = True
    requires_summable = True
    state_kinds = ("err",)
    C1_OPERANDS = ("update", "model")
    RESET_STEPS = ("both", "c2_only")

    def __init__(self, compressor="grbs", compressor2=None, period=8, c1_operand="update",
                 reset_step="both"):
        super().__init__()
        self.c1 = make_compressor(compressor)
        self.period = _check_period(period)
        self.c2 = make_compressor(compressor2) if compressor2 is not None else error_compressor(self.c1, self.period)
        if c1_operand not in self.C1_OPERANDS:
            raise ValueError(f"c1_operand must be one of {', '.join(self.C1_OPERANDS)}, got {c1_operand!r}")
        if reset_step not in self.RESET_STEPS:
            raise ValueError(f"reset_step must be one of {', '.join(self.RESET_STEPS)}, got {reset_step!r}")
        self.c1_operand, self.reset_step = c1_operand, reset_step
        self._check(self.c1, "gradient (C1)")
        self._check(self.c2, "error (C2)")
        self.err = []

    @property
    def compressors(self):
        return [self.c1, self.c2]

    def after_update(self, before, step):
        comm, reset = self.comm, (step + 1) % self.period == 0
        use_c1 = not (reset and self.reset_step == "c2_only")
        work = []
        for b, u, e in zip(self.buckets, before, self.err):
            ws = b.weights()
            x = b.gather_weights("after")
            u -= x                                   # u_i = w_before - w_after (in the snapshot)
            if self.c1_operand == "model":
                e -= u                               # the local model took the whole update
                v = e
            else:
                v = u
            pl = self.c1.compress(b.shaped(v), b.key, step, dense=b.small, layout=b) if use_c1 else None
            ex = sync_payload(comm, pl, f"cser.c1.b{b.key}") if pl is not None else None
            work.append((b, ws, x, u, e, pl, ex))
        for b, ws, x, u, e, pl, ex in work:
            xs, es = b.shaped(x), b.shaped(e)
            if self.c1_operand == "update":
                e -= u                               # e_i -= r_i, r_i = u - C1(u)
            if pl is not None:
                # update: x_i = x_before - mean(C1(u)) - (u - C1(u)) = w_after + C1(u) - mean(C1(u)),
                #         e_i = e_i - u + C1(u)
                # model:  x_i = w_after - C1(e_i) + mean(C1(e_i)),  e_i = e_i - C1(e_i)  (e_i = e_i - u)
                sign = 1.0 if self.c1_operand == "update" else -1.0
                pl.add_to(xs, pl.tensors, sign)
                ex.add_to(xs, -sign)
                pl.add_to(es, pl.tensors, sign)
            if not reset and pl is not None and pl.tensors:   # C1 = zero leaves the model as it is
                b.scatter(x, ws)
        if not reset:
            return
        work2 = []
        for b, ws, x, _, e, _, _ in work:
            es = b.shaped(e)
            pl = self.c2.compress(es, b.key, step, dense=b.small, layout=b)
            work2.append((b, ws, x, es, pl, sync_payload(comm, pl, f"cser.c2.b{b.key}")))
        for b, ws, x, es, pl, ex in work2:
            # x_i = x_i - e_i + mean(C2(e)) + (e_i - C2(e_i)) = x_i - C2(e_i) + mean(C2(e))
            xs = b.shaped(x)
            ex.add_to(xs, 1.0)
            pl.add_to(xs, pl.tensors, -1.0)
            pl.add_to(es, pl.tensors, -1.0)          # e_i = e_i - C2(e_i)
            b.scatter(x, ws)

    def reset_for_resize(self):
        """Fold the residual into the model: x_i - e_i is the same on every worker (the CSER
        invariant), so after ``x_i <- x_i - e_i; e_i <- 0`` every worker holds that common model
        with no residual, whatever rank 0's local deviation was."""
        for b, e in zip(self.buckets, self.err):
            for (_, p), ev in zip(b.members, b.views(e)):
                w = p._data[0]
                write_plain(w - ev, w)
            b.broadcast_weights()
            e[:] = 0

    def config(self):
        return {"name": self.name, "c1": self.c1.config(), "c2": self.c2.config(),
                "period": self.period, "c1_operand": self.c1_operand, "reset_step": self.reset_step}


def cser_warmup_epochs(ratio, lr, epochs=None):
    """The CSER authors' linear learning-rate warm-up, in epochs: it grows with the first
    compression ratio R1 and the learning rate, W = max(4, round(R1 * 5/128 * lr/0.05 * 2))
    (10 epochs at R1 = 128 and lr 0.05, in their 200-epoch CIFAR runs). Our choice for short runs:
    at most half of a run of ``epochs`` epochs. A C1 without a finite ratio (``zero``: CSER-PL)
    or a dense one (``none``) gives 1 epoch."""
    ratio = float(ratio)
    if not math.isfinite(ratio) or ratio <= 1.0:
        warm = 1.0
    else:
        warm = float(max(4, round(ratio * 5.0 / 128.0 * float(lr) / 0.05 * 2.0)))
    if epochs is not None:
        warm = min(warm, 0.5 * float(epochs))
    return warm


def _check_period(period):
    if not (isinstance(period, int) or float(period).is_integer()) or int(period) < 1:
        raise ValueError(f"period must be an integer >= 1 (steps between synchronisations), got {period}")
    return int(period)
