"""Local AdaAlter (docs/methods.md, "AdaAlter and Local AdaAlter") as a synchronisation
algorithm, with the ``adaalter`` optimizer.

Fully synchronous AdaAlter for ``warmup_steps`` steps (gradients averaged per bucket), then local
steps ``x_i <- x_i - lr*(g_i/sqrt(B_s + eps) + wd*x_i)`` with the accumulator B_s frozen at the
last synchronisation, accumulating ``A_i += g_i^2`` (one flat vector per bucket); every ``period``
steps ``x_i <- mean(x_i)``, ``B_s <- B_s + mean(A_i)``, ``A_i <- 0``, one collective per bucket for
the models and one for the accumulators. ``pad="constant"`` (the default) keeps eps constant, as the
authors' released code does; ``pad="per_step"`` divides by ``sqrt(B_s + k*eps)`` at the k-th local
step since the last synchronisation (a reading of the paper's text that the authors tried and
reverted; measured worse in bench/local_adaalter_lm.py).
"""
import dataclasses

import mxnet as mx

from ..utils.runconfig import option
from ..utils.validate import choice_of
from .base import Algorithm, AlgorithmOptions, check_period
from .registry import compressor_class, compressor_value, register_algorithm


@dataclasses.dataclass
class LocalAdaAlterOptions(AlgorithmOptions):
    """Local AdaAlter's options: the period H, ``warmup_steps`` fully synchronous steps first, and
    the padding of the frozen accumulator (``pad``)."""
    period: int = option(4, check_period, help="steps between synchronisations")
    pad: str = option("constant", choice_of(("constant", "per_step"), "pad"),
                      help="constant (the released code) or per_step")
    compressor: object = option("none", compressor_value, help="none (Local AdaAlter sends dense models)")

    def check(self, what):
        c = self.compressor
        if not (type(c) if not isinstance(c, str) else compressor_class(c)).identity:
            raise ValueError(f"{what} takes no compressor (got {c!r})")


@register_algorithm("local_adaalter")
class LocalAdaAlter(Algorithm):
    """Local AdaAlter: fully synchronous AdaAlter for ``warmup_steps`` steps, then local steps with
    the accumulator B_s frozen at the last synchronisation; every ``period`` steps models and
    accumulated squares are averaged. Needs the ``adaalter`` optimizer, whose state holds B_s.
    ``pad``: ``"constant"`` (default, the released code: ``sqrt(B_s + eps)``) or ``"per_step"``
    (``sqrt(B_s + k*eps)`` at the k-th local step since the last synchronisation)."""
    Options = LocalAdaAlterOptions
    local_models = True
    state_kinds = ("acc",)
    PADS = ("constant", "per_step")

    def __init__(self, period=4, warmup_steps=0, pad="constant"):
        super().__init__()
        self.period = check_period(period)
        if warmup_steps < 0:
            raise ValueError(f"warmup_steps must be >= 0, got {warmup_steps}")
        if pad not in self.PADS:
            raise ValueError(f"pad must be one of {', '.join(self.PADS)} (got {pad!r}); 'constant' "
                             "divides every local step by sqrt(B_s + eps)")
        self.warmup = int(warmup_steps)
        self.pad = pad
        self.acc = []

    @classmethod
    def from_options(cls, opts):
        return cls(opts.period, opts.warmup_steps, opts.pad)

    def check_optimizer(self, optimizer):
        if type(optimizer).__name__.lower() != "adaalter":
            raise ValueError(f"algorithm 'local_adaalter' needs the 'adaalter' optimizer, got "
                             f"'{type(optimizer).__name__.lower()}'")
        if getattr(optimizer, "multi_precision", False):
            raise ValueError("algorithm 'local_adaalter' does not support multi_precision")

    def reduce_gradients(self, step):
        if step < self.warmup and self.comm.size > 1:
            self.comm.grouped_allreduce_([b.grad for b in self.buckets], average=True,
                                         name="ladaalter.grads")

    def owns_update(self, step):
        return step >= self.warmup

    def local_update(self, optimizer, updater, step):
        opt = optimizer
        k = (step - self.warmup) % self.period + 1 if self.pad == "per_step" else 1
        for b, acc in zip(self.buckets, self.acc):
            for i, p in b.members:
                w = p._data[0]
                if i not in updater.states:
                    updater.states[i] = opt.create_state(i, w)
                    updater.states_synced[i] = True
                opt._update_count(i)
                lr, wd = opt._get_lr(i), opt._get_wd(i)
                g = opt.prepare_grad(p._grad[0])
                delta = g / mx.nd.sqrt(updater.states[i] + k * opt.epsilon)
                if wd:
                    delta = delta + wd * w
                w -= lr * delta
            # A_i += g_i^2 for the whole bucket at once (prepare_grad: rescale and clip)
            acc += mx.nd.square(opt.prepare_grad(b.grad))
        if (step - self.warmup + 1) % self.period == 0:
            if self.comm.size > 1:
                self._average_models("ladaalter.models")
                self.comm.grouped_allreduce_(self.acc, average=True, name="ladaalter.acc")
            for b, acc in zip(self.buckets, self.acc):
                for (i, _), a in zip(b.members, b.views(acc)):
                    updater.states[i] += a
                acc[:] = 0

    def config(self):
        return {"name": self.name, "period": self.period, "warmup_steps": self.warmup, "pad": self.pad}
