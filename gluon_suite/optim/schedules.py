"""Learning-rate schedules as ``mx.lr_scheduler.LRScheduler`` subclasses, counted per update
(``schedule(t)`` with t = 1 on the first update, as MXNet's optimizers call them).

- ``WarmupConstantDecay``: the LANS schedule: linear warm-up, a constant plateau, then polynomial
  decay to a floor (docs/methods.md, "LANS and LAMB").
- ``WarmupCosine``: linear warm-up, then cosine decay to a floor.
- ``WarmupMultiStep``: linear warm-up, then a step decay at milestones.
- ``Sequential``: phases of schedules one after another (each sees its own step count from 1).
- ``ElasticRamp``: wraps any schedule; when the global batch changes from B_old to B_new at step t0,
  the target becomes base(t)·B_new/B_ref; on growth the rate moves to it linearly over K steps, on
  a shrink it drops to it at once (Dynamic SGD, docs/methods.md).
"""
import math

from mxnet.lr_scheduler import LRScheduler


def _check_steps(total, warmup, constant=0):
    for name, v in (("total_steps", total), ("warmup_steps", warmup), ("constant_steps", constant)):
        if v < 0 or int(v) != v:
            raise ValueError(f"{name} must be an integer >= 0, got {v}")
    if total < 1:
        raise ValueError(f"total_steps must be >= 1, got {total}")
    if warmup + constant > total:
        raise ValueError(f"warmup_steps + constant_steps ({warmup} + {constant}) must be <= "
                         f"total_steps ({total})")


def _check_lr(max_lr, min_lr):
    if not max_lr >= 0 or not min_lr >= 0:
        raise ValueError(f"learning rates must be >= 0 (got max_lr {max_lr}, min_lr {min_lr})")
    if min_lr > max_lr:
        raise ValueError(f"min_lr ({min_lr}) must be <= max_lr ({max_lr})")


class WarmupConstantDecay(LRScheduler):
    """η(t) = η_max·t/T_w for t ≤ T_w; η_max for T_w < t ≤ T_w + T_c; then
    η_min + (η_max − η_min)·(1 − (t − T_w − T_c)/(T − T_w − T_c))^p; η_min after T."""

    def __init__(self, max_lr, total_steps, warmup_steps=0, constant_steps=0, min_lr=0.0, power=1.0):
        _check_steps(total_steps, warmup_steps, constant_steps)
        _check_lr(max_lr, min_lr)
        if not power > 0:
            raise ValueError(f"power must be > 0, got {power}")
        super().__init__(base_lr=max_lr)
        self.max_lr, self.min_lr, self.power = max_lr, min_lr, power
        self.total, self.warmup, self.constant = int(total_steps), int(warmup_steps), int(constant_steps)

    def __call__(self, t):
        if self.warmup and t <= self.warmup:
            return self.max_lr * max(t, 0) / self.warmup
        if t <= self.warmup + self.constant:
            return self.max_lr
        span = self.total - self.warmup - self.constant
        if t >= self.total or span == 0:
            return self.min_lr
        frac = 1.0 - (t - self.warmup - self.constant) / span
        return self.min_lr + (self.max_lr - self.min_lr) * frac ** self.power


class WarmupCosine(LRScheduler):
    """η(t) = η_max·t/T_w for t ≤ T_w; then η_min + (η_max − η_min)·(1 + cos(π·s))/2 with
    s = (t − T_w)/(T − T_w); η_min after T."""

    def __init__(self, max_lr, total_steps, warmup_steps=0, min_lr=0.0):
        _check_steps(total_steps, warmup_steps)
        _check_lr(max_lr, min_lr)
        super().__init__(base_lr=max_lr)
        self.max_lr, self.min_lr = max_lr, min_lr
        self.total, self.warmup = int(total_steps), int(warmup_steps)

    def __call__(self, t):
        if self.warmup and t <= self.warmup:
            return self.max_lr * max(t, 0) / self.warmup
        if t >= self.total:
            return self.min_lr
        s = (t - self.warmup) / (self.total - self.warmup)
        return self.min_lr + (self.max_lr - self.min_lr) * (1 + math.cos(math.pi * s)) / 2


class WarmupMultiStep(LRScheduler):
    """η(t) = η_max·t/T_w for t ≤ T_w; afterwards η_max·factor^(number of milestones ≤ t)."""

    def __init__(self, max_lr, milestones, factor=0.1, warmup_steps=0):
        if sorted(milestones) != list(milestones) or any(m < 1 for m in milestones):
            raise ValueError(f"milestones must be increasing steps >= 1, got {milestones}")
        if not 0 < factor <= 1:
            raise ValueError(f"factor must be in (0, 1], got {factor}")
        _check_lr(max_lr, 0.0)
        super().__init__(base_lr=max_lr)
        self.max_lr, self.milestones, self.factor = max_lr, list(milestones), factor
        self.warmup = int(warmup_steps)

    def __call__(self, t):
        if self.warmup and t <= self.warmup:
            return self.max_lr * max(t, 0) / self.warmup
        return self.max_lr * self.factor ** sum(1 for m in self.milestones if t >= m)


class Sequential(LRScheduler):
    """Phases ``[(steps, schedule), ...]`` one after another; phase k sees t counted from 1 at its
    start. After the last phase the last schedule keeps being called with its own count."""

    def __init__(self, phases):
        if not phases:
            raise ValueError("Sequential needs at least one (steps, schedule) phase")
        for steps, sched in phases:
            if steps < 1 or not callable(sched):
                raise ValueError(f"each phase is (steps >= 1, schedule); got ({steps}, {sched!r})")
        super().__init__(base_lr=phases[0][1](1))
        self.phases = list(phases)

    def __call__(self, t):
        start = 0
        for steps, sched in self.phases[:-1]:
            if t <= start + steps:
                return sched(t - start)
            start += steps
        return self.phases[-1][1](t - start)


class ElasticRamp(LRScheduler):
    """Dynamic SGD's learning-rate change on a resize (docs/methods.md, "Dynamic SGD").

    ``base`` is any schedule (a callable of t) tuned for the global batch ``ref_batch``. After
    ``set_global_batch(B_new, t0)`` the target is ``target(t) = base(t)·B_new/ref_batch``, and with
    η(t0) the rate in force when the resize happened:

    - growth (B_new > B_old): ``η(t0+k) = η(t0) + (target(t0+k) − η(t0))·min(1, (k+1)/K)``, a
      K-step ramp (K = ``ramp_steps``), so that momentum gathered at the small batch does not act
      at the large batch's full rate at once;
    - shrink, ``down="jump"`` (the default): ``η = target`` from the first step at the new batch.

    With ``down="jump"`` the rate is ``min(ramp, target)`` at every step: it never exceeds the
    linearly scaled rate of the batch in force, also when ``base`` decays during a growth ramp.
    ``down="ramp"`` (experimental, not the method's rule) ramps downwards over K steps as well; the
    smaller batch then runs for up to K steps at up to B_old/B_new times its own rate, which
    diverged on a 128 -> 16 worker shrink in bench/dynamic_sgd.py. The momentum buffer is never
    rescaled (MXNet's SGD keeps the rate inside it). ``state_dict``/``load_state_dict`` carry the
    resize across checkpoints (JSON-ready; states written before ``down`` existed load unchanged).
    """

    DOWN_POLICIES = ("jump", "ramp")

    def __init__(self, base, ref_batch, ramp_steps=100, global_batch=None, down="jump"):
        if not callable(base):
            raise ValueError("base must be a schedule (a callable of the step)")
        if ref_batch < 1 or int(ramp_steps) < 1:
            raise ValueError(f"ref_batch and ramp_steps must be >= 1 (got {ref_batch}, {ramp_steps})")
        if down not in self.DOWN_POLICIES:
            raise ValueError(f"down must be one of {', '.join(self.DOWN_POLICIES)} (got {down!r}); "
                             "'jump' drops the rate to the new target at once when workers leave")
        super().__init__(base_lr=base(1))
        self.base, self.ref_batch, self.K, self.down = base, ref_batch, int(ramp_steps), down
        self.batch = global_batch or ref_batch
        self.t0, self.lr0 = None, None
        self.last_t, self.last_lr = 0, None

    def target(self, t):
        """The linearly scaled rate for the current global batch."""
        return self.base(t) * self.batch / self.ref_batch

    def set_global_batch(self, batch, step=None):
        """Tell the schedule the global batch changed to ``batch`` at ``step`` (default: the last
        step it was asked about)."""
        if batch < 1:
            raise ValueError(f"global batch must be >= 1, got {batch}")
        if batch == self.batch:  # nothing changed (also: a repeated call never restarts a ramp)
            return
        t0 = self.last_t if step is None else step
        self.lr0 = self(t0) if t0 > 0 else self.target(1)
        self.t0, self.batch = t0, batch

    def __call__(self, t):
        target = self.target(t)
        if self.t0 is None:
            lr = target
        else:
            k = t - self.t0
            alpha = min(1.0, max(0.0, (k + 1) / self.K)) if k >= 0 else 0.0
            lr = self.lr0 + (target - self.lr0) * alpha
            if self.down == "jump":
                lr = min(lr, target)
        self.last_t, self.last_lr = t, lr
        return lr

    def state_dict(self):
        """JSON-ready state: current batch and the ramp's anchor."""
        return {"batch": self.batch, "ref_batch": self.ref_batch, "t0": self.t0, "lr0": self.lr0,
                "last_t": self.last_t}

    def load_state_dict(self, state):
        """Restore what ``state_dict`` returned."""
        self.batch, self.t0, self.lr0 = state["batch"], state["t0"], state["lr0"]
        self.ref_batch = state.get("ref_batch", self.ref_batch)
        self.last_t = state.get("last_t", 0)
