"""The built-in synchronisation algorithms: what a data-parallel job communicates, and when.
The contract they share is ``base.Algorithm``; each registers under its name with its options.

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
- ``local_adaalter`` (``local_adaalter.py``) and ``auto`` (``auto.py``) register beside them.
- ``cser``: CSER (docs/methods.md). Local models x_i = x̂ + e_i. Each step
  x_i <- x_before - allreduce_mean(C1(u_i)) - (u_i - C1(u_i)), e_i <- e_i - (u_i - C1(u_i));
  every H steps the error is partially synchronised with C2:
  x_i <- x_i - e_i + allreduce_mean(C2(e_i)) + (e_i - C2(e_i)), e_i <- e_i - C2(e_i).
  C1 = none is synchronous SGD, C1 = zero with C2 = none is local SGD, C1 = zero with C2 = grbs is
  CSER-PL.
"""
import dataclasses
import math

from ..utils.runconfig import option
from ..utils.validate import choice_of, ratio as ratio_value
from .base import Algorithm, AlgorithmOptions, check_period, sync_payload  # noqa: F401 (sync_payload: older imports)
from .comm import write_plain
from .compression import write_dense
from .costmodel import cser_cycle, pl_cycle, pl_delay, pl_periods_for
from .registry import algo_option, compressor_class, compressor_value, make_compressor, register_algorithm

MAX_SEPARATE_BUCKETS = 64     # sync: up to this many buckets get a collective each


@dataclasses.dataclass
class CompressedOptions(AlgorithmOptions):
    """An algorithm with one compressor: its name (or object) and ratio (None: its own)."""
    compressor: object = option("none", compressor_value, help="none, fp16, grbs, ...")
    ratio: float = option(None, ratio_value, help="compression ratio (dense bytes / sent bytes)")

    def compressor_object(self):
        """The compressor these options name, at their ratio, with the shared options."""
        return make_compressor(self.compressor, ratio=self.ratio, **self.compressor_common())


def _no_compressor(what, opts, hint=""):
    """ValueError unless ``opts.compressor`` sends every coordinate or nothing (a model-averaging
    algorithm's compressor is no choice)."""
    c = opts.compressor
    cls = type(c) if not isinstance(c, str) else compressor_class(c)
    if not (cls.identity or cls.sends_nothing):
        raise ValueError(f"{what} averages whole models and takes no compressor (got {c!r}){hint}")


@register_algorithm("sync")
class SyncSGD(Algorithm):
    """Synchronous SGD: the average gradient, dense or through a summable compressor (a lossy one
    drops what it does not send; pair lossy compressors with ``ef`` or ``cser`` instead)."""
    Options = CompressedOptions
    requires_summable = True
    gradients_identical = True
    keeps_inherited_compressor = False   # sync sends dense gradients unless a compressor is named for it
    candidate_kinds = ("sync", "fp16")

    @classmethod
    def from_options(cls, opts):
        return cls(opts.compressor_object())

    @classmethod
    def auto_candidates(cls, kind, plan):
        """``sync``: the dense synchronous step (the reference of every check); ``fp16``: its
        gradients in half precision (float32 gradients only)."""
        if kind == cls.candidate_kinds[0]:
            return [{"name": kind, "cycle": [1.0], "messages": [1], "algorithm": {"name": cls.name},
                     "flags": f"--algorithm {cls.name}", "reference": True}]
        if plan.grad_dtype != "float32":
            return []
        return [{"name": kind, "cycle": [2.0], "messages": [1], "algorithm": {"name": cls.name, "compressor": kind},
                 "flags": f"--algorithm {cls.name} --compressor {kind}"}]

    def __init__(self, compressor="none"):
        super().__init__()
        self.compressor = make_compressor(compressor)
        self._check(self.compressor, "gradient")

    @property
    def compressors(self):
        return [self.compressor]

    def reduce_gradients(self, step):
        comm = self.comm
        self.finite_flags = {}
        if self.compressor.identity:
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
            if pl.finite is not None and pl.dense and comm.size == 1:
                # the reduced gradient is this payload cast back: the cast's finiteness flag is
                # its verdict. Not with several workers: their float16 sum can overflow where no
                # worker's payload did
                self.finite_flags[b.key] = pl.finite
            work.append((g, sync_payload(comm, pl, f"sync.b{b.key}")))
        for g, ex in work:
            if ex.payload.dense and ex.arrays:  # every coordinate: write, no zero + add
                write_dense(g, ex.arrays[0])
                continue
            g[:] = 0
            ex.add_to(g)

    def config(self):
        return {"name": self.name, "compressor": self.compressor.config()}


@register_algorithm("ef")
class ErrorFeedbackSGD(Algorithm):
    """EF-SGD: compress the update plus the carried error; one global model on all workers."""
    Options = CompressedOptions
    needs_update = True
    state_kinds = ("err",)

    def __init__(self, compressor="none"):
        super().__init__()
        self.compressor = make_compressor(compressor)
        self.err = []

    @classmethod
    def from_options(cls, opts):
        return cls(opts.compressor_object())

    @property
    def compressors(self):
        return [self.compressor]

    def after_update(self, before, step):
        work = []
        for b, wb, e in zip(self.buckets, before, self.err):
            ws = b.weights()
            e += wb
            e -= b.gather_weights("after")               # p_i = u_i + e_i, kept in e
            # the payload of p_i and e_i <- p_i - C(p_i) in one call (one operator for top-k on
            # the compiled path); the payload's tensors are its own, so e may change before they
            # are sent
            pl = self.compressor.compress_feedback(None, b.shaped(e), b.key, step, dense=b.small, layout=b)
            work.append((b, ws, wb, sync_payload(self.comm, pl, f"ef.b{b.key}")))
        for b, ws, wb, ex in work:
            ex.add_to(b.shaped(wb), -1.0)            # x = x_before - mean(C(p))
            b.scatter(wb, ws)

    def config(self):
        return {"name": self.name, "compressor": self.compressor.config()}


@dataclasses.dataclass
class LocalOptions(AlgorithmOptions):
    """Local SGD's options: the period H (steps between averages of the models)."""
    period: int = option(8, check_period, help="steps between averages of the models")
    compressor: object = option("none", compressor_value, help="none (local SGD averages whole models)")

    def check(self, what):
        _no_compressor(what, self, "; for compressed model averaging use algorithm='cser' with compressor='zero' "
                                   "and compressor2='grbs' (CSER-PL)")


@register_algorithm("local")
class LocalSGD(Algorithm):
    """Local SGD: local optimizer steps, models averaged every ``period`` steps (momentum local)."""
    Options = LocalOptions
    local_models = True

    def __init__(self, period=8):
        super().__init__()
        self.period = check_period(period)

    @classmethod
    def from_options(cls, opts):
        return cls(opts.period)

    def after_update(self, before, step):
        if (step + 1) % self.period == 0 and self.comm.size > 1:
            self._average_models("local.models")

    def config(self):
        return {"name": self.name, "period": self.period}


@dataclasses.dataclass
class CSEROptions(CompressedOptions):
    """CSER's options: C1 (``compressor`` at ``ratio``), the period H, C2 (``compressor2`` at
    ``ratio2``; default: what C1's ``error_compressor`` says) and the variant."""
    period: int = option(8, check_period, help="steps between resets of the error")
    compressor2: object = option(None, compressor_value, help="CSER's reset compressor")
    ratio2: float = option(None, ratio_value, help="its ratio")
    c1_operand: str = algo_option("update", choice_of(("update", "model"), "C1 operand"), own=True,
                                  help="update (the paper) or model (the released code)")
    reset_step: str = algo_option("both", choice_of(("both", "c2_only"), "reset step"), own=True,
                                  help="both (the paper) or c2_only (the released code)")


@register_algorithm("cser")
class CSER(Algorithm):
    """Communication-efficient SGD with error reset (docs/methods.md, "CSER"): partial synchronisation of the
    update with C1 every step and of the residual error with C2 every ``period`` steps.

    Variants (docs/distributed.md): ``c1_operand='update'`` (the paper's pseudo-code) applies C1
    to the fresh update u_i; ``'model'`` (the authors' released code) applies it to the local
    model's deviation after the update, e_i - u_i, i.e. averages the C1 block of the local model,
    which also resets the error there. ``reset_step='both'`` sends C1 and C2 on every H-th step;
    ``'c2_only'`` (the released code) sends C2 instead of C1 on that step (the update then goes
    wholly into the error before the reset). Without ``compressor2``, C2 is C1's
    ``error_compressor(period)``."""
    Options = CSEROptions
    candidate_kinds = ("cser", "cser_pl")
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
        self.period = check_period(period)
        self.c2 = make_compressor(compressor2) if compressor2 is not None else self.c1.error_compressor(self.period)
        if c1_operand not in self.C1_OPERANDS:
            raise ValueError(f"c1_operand must be one of {', '.join(self.C1_OPERANDS)}, got {c1_operand!r}")
        if reset_step not in self.RESET_STEPS:
            raise ValueError(f"reset_step must be one of {', '.join(self.RESET_STEPS)}, got {reset_step!r}")
        self.c1_operand, self.reset_step = c1_operand, reset_step
        self._check(self.c1, "gradient (C1)")
        self._check(self.c2, "error (C2)")
        self.err = []

    @classmethod
    def from_options(cls, opts):
        c1 = opts.compressor_object()
        c2 = (c1.error_compressor(opts.period, opts.ratio2) if opts.compressor2 is None
              else make_compressor(opts.compressor2, ratio=opts.ratio2, **opts.compressor_common(7919)))
        return cls(c1, c2, opts.period, c1_operand=opts.c1_operand, reset_step=opts.reset_step)

    @classmethod
    def auto_candidates(cls, kind, plan):
        """``cser``: GRBS at every ratio R1 of the plan, period H; ``cser_pl``: nothing sent between
        resets, the model's deviation at every R2 (1: plain local SGD) and period of the plan."""
        if kind == cls.candidate_kinds[0]:
            out, h = [], plan.period
            for r in sorted(set(float(x) for x in plan.ratios)):
                if not r >= 1:
                    raise ValueError(f"CSER ratios must be >= 1, got {r}")
                out.append({"name": f"{kind} R1={r:g} H={h}", "cycle": cser_cycle(r, h),
                            "messages": [1] * (h - 1) + [2],
                            "algorithm": {"name": cls.name, "compressor": "grbs", "ratio": r, "period": h},
                            "flags": f"--algorithm {cls.name} --compressor grbs --ratio {r:g} --period {h}"})
            return out
        rs = sorted(set(float(x) for x in plan.pl_ratios))
        bad = [r for r in rs if not r >= 1]
        if bad:
            raise ValueError(f"CSER-PL ratios must be >= 1, got {bad[0]:g}")
        grid = sorted(((r, h) for r in rs for h in pl_periods_for(plan.period, plan.pl_periods)),
                      key=lambda rh: (rh[0] * rh[1], pl_delay(*rh)))
        out = []
        for r, h in grid:
            c2 = {"compressor2": "grbs", "ratio2": r} if r > 1 else {"compressor2": "none"}
            flags = f"--compressor2 grbs --ratio2 {r:g}" if r > 1 else "--compressor2 none"
            out.append({"name": f"cser-pl R2={r:g} H={h}", "cycle": pl_cycle(r, h), "messages": [0] * (h - 1) + [1],
                        "algorithm": {"name": cls.name, "compressor": "zero", "period": h, **c2}, "local": True,
                        "flags": f"--algorithm {cls.name} --compressor zero --period {h} {flags}"})
        return out

    @property
    def local_between_resets(self):
        """C1 sends nothing: local steps between resets (CSER-PL, or local SGD with C2 = none)."""
        return self.c1.sends_nothing

    def suggested_warmup_epochs(self, lr, epochs=None):
        """The authors' warm-up, growing with C1's ratio (``cser_warmup_epochs``)."""
        return cser_warmup_epochs(self.c1.ratio, lr, epochs)

    @property
    def compressors(self):
        return [self.c1, self.c2]

    def after_update(self, before, step):
        comm, reset = self.comm, (step + 1) % self.period == 0
        use_c1 = not (reset and self.reset_step == "c2_only")
        # update: x_i = x_before - mean(C1(u)) - (u - C1(u)) = w_after + C1(u) - mean(C1(u)),
        #         e_i = e_i - u + C1(u)
        # model:  x_i = w_after - C1(e_i) + mean(C1(e_i)),  e_i = e_i - C1(e_i)  (e_i = e_i - u)
        sign = 1.0 if self.c1_operand == "update" else -1.0
        work = []
        for b, u, e in zip(self.buckets, before, self.err):
            # u_i = w_before - w_after, e_i -= u_i in one pass; w_after gathered into x only where
            # the weights cannot take C1's blocks in place (Bucket.writable_in_place)
            x = None if b.writable_in_place else b.buffer("after")
            if not b.subtract_weights(u, e, x):
                x = b.gather_weights("after")
                u -= x
                e -= u
            v = e if self.c1_operand == "model" else u
            pl = self.c1.compress(b.shaped(v), b.key, step, dense=b.small, layout=b) if use_c1 else None
            ex = sync_payload(comm, pl, f"cser.c1.b{b.key}") if pl is not None else None
            work.append([b, x, e, pl, ex])
        for w in work:
            b, x, e, pl, ex = w
            if pl is None or not pl.tensors:          # C1 = zero leaves the model as it is
                continue
            if x is None and pl.blocks is not None and pl.summable:
                b.add_blocks(pl.tensors[0], pl.blocks, sign)     # into the weights themselves
                b.add_blocks(ex.arrays[0], pl.blocks, -sign)
            else:
                x = w[1] = b.gather_weights("after") if x is None else x
                pl.add_to(b.shaped(x), pl.tensors, sign)
                ex.add_to(b.shaped(x), -sign)
                if not reset:
                    b.scatter(x, b.weights())
            pl.add_to(b.shaped(e), pl.tensors, sign)
        if not reset:
            return
        work2 = []
        for b, x, e, _, _ in work:
            es = b.shaped(e)
            pl = self.c2.compress(es, b.key, step, dense=b.small, layout=b)
            work2.append((b, x, es, pl, sync_payload(comm, pl, f"cser.c2.b{b.key}")))
        for b, x, es, pl, ex in work2:
            # x_i = x_i - e_i + mean(C2(e)) + (e_i - C2(e_i)) = x_i - C2(e_i) + mean(C2(e))
            if x is None and pl.blocks is not None and pl.summable:
                b.add_blocks(ex.arrays[0], pl.blocks, 1.0)      # into the weights themselves
                b.add_blocks(pl.tensors[0], pl.blocks, -1.0)
            elif x is not None or pl.tensors:            # x may hold C1's additions: written back
                x = b.gather_weights("after") if x is None else x
                ex.add_to(b.shaped(x), 1.0)
                pl.add_to(b.shaped(x), pl.tensors, -1.0)
                b.scatter(x, b.weights())
            pl.add_to(es, pl.tensors, -1.0)          # e_i = e_i - C2(e_i)

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
