"""``algorithm="auto"``: the trainer measures the job, picks the least gradient compression that
reaches a target scaling factor, checks the pick against measured steps, and settles on it,
identically on every worker.

1. Measure. After ``skip_steps`` steps (the first steps set up kernels and memory),
   ``measure_steps`` steps are timed on every worker, with the engine drained (``waitall``) at each
   boundary: compute c (from the end of the previous update until the gradients are ready: data,
   forward, backward) and the update o. How the link is measured depends on the candidates:
   - With CSER-PL among them (and H > 1), the measuring steps send nothing: every worker takes
     local steps (CSER-PL with the whole model averaged every H steps, i.e. local SGD). Every other
     measured step sends a probe of ``PROBE_VALUES`` float32 values: its fastest time over the
     measured steps is the fixed cost t0 of a collective, its median less t0 the wait w for the
     slowest worker. The first average of the models after the measured steps is timed, too: less
     o, it is w + K t0 + W/B for the K gradient buckets, W = sum_k 2(n-1)/n s_k wire bytes of s_k
     bytes each on n workers, which gives the bandwidth B. The decision follows that average, so
     the models are equal when it is taken.
   - Otherwise synchronous SGD runs: after a barrier (its time less t0 is w) the gradient buckets'
     allreduce a = K t0 + W/B is timed, then the probe p ~ t0: t0 = min(p, a/K) and
     1/B = (a - K t0)/W.
   ``link_mbit`` replaces the measured B and ``latency_s`` the measured t0 and w (e.g. to plan for
   another network, or in tests).
2. Agree. Each worker takes the median of each time over its measured steps; one allreduce gives
   every worker their mean over workers.
3. Predict. Each candidate (``candidate_list``: synchronous SGD, fp16 gradients, CSER with GRBS at
   R1 = 4 ... 256 and error-reset period H, and CSER-PL: nothing sent for H' - 1 steps, then the
   model's deviation at R2 = 1 ... 8 with GRBS, 1 being plain local SGD, at H' = H unless
   ``pl_periods`` names more periods) is a cycle of steps, step
   j sending the dense bytes over r_j with m_j collectives per bucket (CSER's reset step: two; a
   CSER-PL step between averages: none). Step j takes c + o + [m_j > 0] w + K m_j t0 + W / (r_j B);
   SF = (c + o) / (the cycle's mean step). Communication is not overlapped with backward here (a
   conservative choice), and compression's own compute time is not counted: the check measures it.
4. Choose (``choose``, the rule ``whatif.advise`` uses too): the candidate of the smallest overall
   ratio whose SF reaches ``target_sf`` (sync first, then fp16, then CSER, then CSER-PL; among
   CSER-PL candidates of one ratio H' R2, the longest period first: averaging all of the deviation
   every H' steps leaves each coordinate's change waiting H'/2 steps on average, a 1/R2 share
   every H' steps H' (R2 - 1/2), so at a fixed ratio the smaller R2 waits least); when none does,
   the one of the highest SF. Rank 0's choice is broadcast and every worker builds the
   same algorithm from the same arguments. CSER-PL continues from the measuring steps' local models;
   any other choice starts from the workers' averaged models and averaged optimizer states. One
   line is logged and ``decision`` holds the measurements and every candidate's prediction.
5. Check (``verify=True``, for a choice other than sync). After one cycle (at least 2 steps;
   ``verify_skip``) the choice runs for whole cycles (at least ``measure_steps`` steps) timed
   between two drains, so that its work overlaps as in training. A pause of the loop inside the
   window (a step began more than ``PAUSE_FACTOR`` times the median gap between steps plus
   ``PAUSE_S`` after the previous one ended, on any worker: an evaluation) restarts the window
   (at most ``MAX_RESTARTS`` times; the last window takes each pause's excess over the median gap
   out of its time, since a window longer than the stretch between two evaluations is never
   clean). The reference is sync's step:
   - a clear call (sync predicted at least ``RACE_BELOW`` times the choice's step): its predicted
     step, or its measured one when the measuring phase ran sync;
   - a close call: the workers average their models and optimizer states and run sync for as many
     steps, timed the same way.
   The choice is kept if its step is at most (1 - ``verify_margin``) times sync's (default margin
   1 - ``target_sf``: compression must save more than the target lets communication cost); the
   decision records both times and one more line is logged. Otherwise sync runs from one model
   (averaged models and optimizer states).

On one worker nothing is communicated: ``auto`` is synchronous SGD without measuring. An elastic
reset (``reset_for_resize``) measures and decides again in the new world; a checkpoint restores
the decision it was saved with.
"""
import dataclasses
import math
import sys
import time

import mxnet as mx

from ..utils.runconfig import option
from ..utils.validate import choice_of, float_range, positive_int, ratio as ratio_value
from .auto_check import CheckWindows
from .auto_decide import Decision
from .base import AlgorithmOptions, check_period
from .costmodel import CANDIDATE_KINDS, CSER_RATIOS, PL_RATIOS, PROBE_VALUES, candidate_kinds, candidate_list, pl_periods_for
# the cost model's names, where older code imports them
from .costmodel import (GRADIENT_KINDS, RACE_BELOW, choose, cser_cycle, link_model, overall_ratio,  # noqa: F401
                        pl_cycle, pl_delay, predict_candidates, window_step_time)
from .proxy import Delegating
from .registry import (algo_option, algorithm_class, compressor_class, compressor_value, make_algorithm,
                       register_algorithm)


def _print_rank0(rank):
    def log(line):
        if rank == 0:
            print(line, file=sys.stdout, flush=True)
    return log


@dataclasses.dataclass
class AutoOptions(AlgorithmOptions):
    """``auto``'s options (the scripts' flags in brackets): ``target_sf`` [--target-sf], the
    candidate kinds [--auto-candidates], CSER's ratios [--auto-ratios] or one pinned ratio
    [--ratio], the period H [--period] and CSER-PL's periods [--auto-periods]. It chooses the
    compressors itself, so ``compressor`` stays none."""
    target_sf: float = algo_option(0.9, float_range(0, 1, low_open=True, what="a scaling factor"), own=True,
                                   help="the scaling factor the choice must reach (default 0.9)")
    candidates: tuple = algo_option(None, choice_of(candidate_kinds, "auto candidate"), many=True, own=True,
                                    key="auto_candidates", help="the kinds to choose among (default all)")
    cser_ratios: tuple = algo_option(None, ratio_value, many=True, own=True, key="auto_ratios",
                                     help="CSER's ratios R1 to consider")
    pl_periods: tuple = algo_option(None, positive_int, many=True, own=True, key="auto_periods",
                                    help="CSER-PL's periods to consider (default H)")
    ratio: float = option(None, ratio_value, help="pins CSER's ratio R1")
    period: int = option(None, check_period, help="CSER's period H (and the measuring local SGD's)")
    compressor: object = option("none", compressor_value, help="none: auto chooses the compressor")
    compressor2: object = option(None, compressor_value, help="none: auto chooses the compressor")
    ratio2: float = option(None, ratio_value, help="none: auto chooses the compressor")

    def check(self, what):
        c = self.compressor
        if not (type(c) if not isinstance(c, str) else compressor_class(c)).identity or self.compressor2 is not None \
                or self.ratio2 is not None:
            raise ValueError(f"{what} chooses the compressor itself (got compressor {c!r}); leave it at none, or "
                             "name an algorithm and compressor")
        if self.ratio is not None and self.cser_ratios:
            raise ValueError("give auto either a ratio (one CSER ratio) or cser_ratios (several), not both")


@register_algorithm("auto")
class AutoAlgorithm(Decision, CheckWindows, Delegating):
    """The measuring phase, then the chosen algorithm, checked (module docstring). Options:
    ``target_sf`` (default 0.9), ``candidates`` (of ``CANDIDATE_KINDS``), ``cser_ratios`` and
    ``period`` (CSER's R1 values and H; H is also the measuring local SGD's period), ``pl_ratios``
    and ``pl_periods`` (CSER-PL's R2 values and periods; default 1, 2, 4, 8 and H),
    ``skip_steps``/``measure_steps``, ``link_mbit`` and ``latency_s`` (replace the measured link),
    ``min_size``/``warmup_steps``/``seed`` (passed to the chosen algorithm's compressors), ``log``
    (one line per decision; default: print on rank 0), ``verify``, ``verify_margin`` (keep a
    compressed choice only if its measured step is at most
    (1 - margin) times sync's; default 1 - ``target_sf``) and ``verify_skip`` (steps before the
    timing; default one cycle). Everything the trainer asks of an algorithm goes to the current one;
    ``decision`` is None until the choice is made."""

    Options = AutoOptions
    chooses_compression = True

    @classmethod
    def from_options(cls, opts):
        kw = dict(opts.compressor_common(), target_sf=opts.target_sf)
        if opts.ratio is not None:
            kw["cser_ratios"] = (float(opts.ratio),)
        if opts.cser_ratios:
            kw["cser_ratios"] = tuple(sorted({float(r) for r in opts.cser_ratios}))
        if opts.period is not None:
            kw["period"] = opts.period
        if opts.candidates:
            kw["candidates"] = tuple(opts.candidates)
        if opts.pl_periods:
            kw["pl_periods"] = tuple(opts.pl_periods)
        return cls(**kw)

    def __init__(self, target_sf=0.9, candidates=CANDIDATE_KINDS, cser_ratios=CSER_RATIOS, period=8,
                 skip_steps=2, measure_steps=5, link_mbit=None, latency_s=None, min_size=0, warmup_steps=0,
                 seed=0, log=None, verify=True, verify_margin=None, verify_skip=None, pl_ratios=PL_RATIOS,
                 pl_periods=None):
        if not 0 < float(target_sf) <= 1:
            raise ValueError(f"target scaling factor must be in (0, 1], got {target_sf}")
        if int(measure_steps) < 1 or int(skip_steps) < 0:
            raise ValueError(f"measure_steps must be >= 1 and skip_steps >= 0, got {measure_steps}, {skip_steps}")
        if link_mbit is not None and not float(link_mbit) > 0:
            raise ValueError(f"link_mbit must be > 0 (the link's rate in Mbit/s), got {link_mbit}")
        if latency_s is not None and not float(latency_s) >= 0:
            raise ValueError(f"latency_s must be >= 0 (seconds per collective), got {latency_s}")
        if verify_margin is not None and not 0 <= float(verify_margin) <= 1:
            raise ValueError(f"verify_margin must be in [0, 1], got {verify_margin}")
        cands = candidate_list(candidates, "float32", cser_ratios, period, pl_ratios, pl_periods)   # checks names, values
        self.target_sf = float(target_sf)
        self.kinds, self.cser_ratios, self.period = tuple(candidates), tuple(cser_ratios), int(period)
        self.pl_ratios = tuple(pl_ratios)
        self.pl_periods = None if pl_periods is None else tuple(int(h) for h in pl_periods)
        self.skip_steps, self.measure_steps = int(skip_steps), int(measure_steps)
        self.link_mbit = None if link_mbit is None else float(link_mbit)
        self.latency_s = None if latency_s is None else float(latency_s)
        self._common = {"min_size": int(min_size), "warmup_steps": int(warmup_steps), "seed": int(seed)}
        self._log = log
        self.verify = bool(verify)
        self.verify_margin = 1.0 - self.target_sf if verify_margin is None else float(verify_margin)
        self.verify_skip = None if verify_skip is None else max(1, int(verify_skip))
        self._bind_args = None
        self.decision = None
        self._racing = False
        # what a choice is checked against: dense synchronous SGD, a candidate of its own or not
        self._reference = dict(next((c for c in cands if c["reference"]), None)
                               or next(c for c in candidate_list(candidate_kinds()) if c["reference"]))
        self._inner = self._measurer()
        self._restart()

    def _restart(self):
        self._start = None
        self._samples, self._current, self._t_end = [], None, None
        self._window = None
        self._left = None
        self._reset = None

    def _local_candidate(self):
        """The candidate that averages the whole model every H steps and sends nothing between
        (CSER-PL at R2 = 1: local SGD), when one of the kinds offers it."""
        if self.period <= 1:
            return None
        cands = candidate_list(self.kinds, "float32", self.cser_ratios, self.period, (1,), (self.period,))
        return next((c for c in cands if c["local"] and c["cycle"][-1] == 1.0), None)

    @property
    def local_start(self):
        """True when the measuring phase takes local steps (CSER-PL is a candidate): nothing is sent
        while the compute is timed, and a CSER-PL choice continues from those steps."""
        return self._local is not None

    def _plain(self):
        """The reference algorithm (dense synchronous SGD), with this job's ``min_size``."""
        return self._build(self._reference["algorithm"])

    def _measurer(self):
        """The algorithm of the measuring phase: CSER-PL with the whole model averaged every H steps
        (plain local SGD) when CSER-PL is a candidate, else synchronous SGD."""
        self._local = self._local_candidate()   # looked up once: the phase asks at every step
        return self._build(self._local["algorithm"]) if self._local is not None else self._plain()

    def restrict(self, kinds):
        """Keep only the candidates of ``kinds``; before ``bind`` only."""
        self.kinds = tuple(k for k in self.kinds if k in kinds) or (self._reference["kind"],)
        self._local = self._local_candidate()
        if self._bind_args is None and self.decision is None:
            self._inner = self._measurer()

    def allow_master_weights(self):
        """Float16 weights with float32 master copies: only the kinds whose every candidate leaves
        the weights to the optimizer stay candidates."""
        def leaves_weights(kind):
            algos = [self._build(c["algorithm"]) for c in candidate_list((kind,))]
            return all(not (a.needs_update or a.local_models) for a in algos)
        self.restrict(tuple(k for k in self.kinds if leaves_weights(k)))
        return True

    def bind(self, params, comm, bucket_mb=None, network_position=None):
        kw = {} if bucket_mb is None else {"bucket_mb": bucket_mb}
        self._bind_args = (params, kw, network_position)
        if comm.size == 1 and self.decision is None:
            self._inner = self._plain()
            ref = self._reference
            self.decision = {"choice": ref["name"], "algorithm": ref["algorithm"], "workers": 1, "step": 0,
                             "reached": True, "reference": True, "reason": "one worker: nothing is communicated"}
            self._inner.bind(params, comm, network_position=network_position, **kw)
            self._say("auto: one worker, nothing is communicated: sync without compression")
            return
        self._inner.bind(params, comm, network_position=network_position, **kw)

    def config(self):
        return {"name": self.name, "target_sf": self.target_sf, "candidates": list(self.kinds),
                "cser_ratios": list(self.cser_ratios), "period": self.period, "pl_ratios": list(self.pl_ratios),
                "pl_periods": pl_periods_for(self.period, self.pl_periods), "current": self._inner.config(),
                "racing": self._racing, "decision": self.decision}

    def reset_for_resize(self):
        """Elastic resize: the current algorithm folds its state (CSER: residual into the model),
        then the measuring phase runs again and the choice is made anew for the new world."""
        self._inner.reset_for_resize()
        if self._bind_args is not None:
            self._switch(self._measurer())
        self.decision = None
        self._restart()

    def restore(self, config):
        """Take the decision a checkpoint was saved with (its ``config()``): build that algorithm
        at once, so that its per-worker state (residuals) can be loaded into it. A checkpoint taken
        while the check ran sync against the choice (a race) resumes with sync, whose state it holds;
        the check does not resume."""
        config = config or {}
        dec = config.get("decision")
        if not dec or self.comm is None or dec.get("workers") != self.comm.size:
            return
        if dec.get("reference") or config.get("racing"):
            self._switch(self._plain())
        else:
            self._switch(self._build(dec["algorithm"]))
        self.decision = dec

    # --- the measuring phase --------------------------------------------------------------------
    def _phase(self, step):
        """What the measuring phase does at ``step``: None (decided), 'skip', 'sample' (a timed
        step) or, with local steps, 'reset' (the measuring local SGD's averaging of the models,
        timed: after ``measure_steps`` samples, the first such step)."""
        if self.decision is not None:
            return None
        if self._start is None:
            self._start = step
        if step < self._start + self.skip_steps or self._t_end is None:
            return "skip"
        if self.local_start and (step + 1) % self.period == 0:
            return "reset" if len(self._samples) >= self.measure_steps else "skip"
        return "sample" if len(self._samples) < self.measure_steps else "skip"

    def reduce_gradients(self, step):
        if self._window is not None and self._left is not None:
            self._window["gaps"].append(time.perf_counter() - self._left)
        phase = self._phase(step)
        if phase not in ("sample", "reset"):
            return self._inner.reduce_gradients(step)
        comm = self.comm
        mx.nd.waitall()
        ready = time.perf_counter()
        cur = {"phase": phase, "compute": ready - self._t_end, "ready": ready, "wait": math.nan,
               "allreduce": math.nan, "small": math.nan, "probes": 0.0, "t2": ready}
        ctx = self.buckets[0].context
        if self.local_start:
            if phase == "sample" and len(self._samples) % 2 == 0:
                # the fixed cost of a collective, with the wait for the slowest worker in it
                probe = mx.nd.zeros((PROBE_VALUES,), ctx=ctx)
                comm.allreduce_(probe, average=True, name="auto.probe")
                probe.wait_to_read()
                cur["t2"] = time.perf_counter()
                cur["small"] = cur["probes"] = cur["t2"] - ready
            self._inner.reduce_gradients(step)
        else:
            comm.barrier(name="auto.barrier")      # a slower worker's compute is not communication
            t_b = time.perf_counter()
            self._inner.reduce_gradients(step)
            mx.nd.waitall()
            t1 = time.perf_counter()
            probe = mx.nd.zeros((PROBE_VALUES,), ctx=ctx)
            comm.allreduce_(probe, average=True, name="auto.probe")
            probe.wait_to_read()
            cur["t2"] = time.perf_counter()
            cur.update(wait=t_b - ready, allreduce=t1 - t_b, small=cur["t2"] - t1, probes=cur["t2"] - t1)
        self._current = cur

    def after_update(self, before, step):
        self._inner.after_update(before, step)
        if self._window is not None:
            self._window_step(step)
            self._left = time.perf_counter()
            return
        if self.decision is not None or self._start is None:
            return
        if step + 1 >= self._start + self.skip_steps:   # the end of every step from the last skipped one
            mx.nd.waitall()
            now = time.perf_counter()
            cur = self._current
            if cur is not None and cur["phase"] == "reset":
                # the update and the measuring local SGD's average of the models (CSER-PL R2 = 1)
                self._reset = now - cur["ready"]
            elif cur is not None:
                # the whole step as a check times it (waits included), less the probe
                self._samples.append([cur["compute"], now - cur["t2"], cur["wait"], cur["allreduce"],
                                      cur["small"], now - self._t_end - cur["probes"]])
            self._t_end, self._current = now, None
            if self._reset is not None or (not self.local_start and len(self._samples) >= self.measure_steps):
                self._decide(step)

    def _take(self, spec, continue_local=False, models_equal=False):
        """Run the algorithm of ``spec`` from the next step. From local models (the measuring local
        SGD, or a checked CSER) to another algorithm, the workers first average their models (one
        collective) and their optimizer states, so every worker continues from one model; CSER-PL
        continues from the measuring steps' local models (their deviations become its residual), at
        another period only right after the models' average (nothing is left to carry over)."""
        old = self._inner
        new = self._build(spec)
        if new.config() == old.config() and not old.local_models:
            return                         # running it already
        pl = continue_local and old.local_between_resets and new.local_between_resets and (
            new.period == old.period or models_equal)
        if old.local_models and not pl:
            if not models_equal:
                old._average_models("auto.models")
            for kind in old.state_kinds:
                for v in getattr(old, kind):
                    v[:] = 0
            self.wants_optimizer_average = True   # the trainer averages the workers' momenta, too
        self._switch(new)
        if pl:
            for kind in new.state_kinds:
                setattr(new, kind, getattr(old, kind))

    def _build(self, spec):
        """The algorithm of a candidate's ``spec``, with this job's compressor options."""
        opts = {k: v for k, v in self._common.items() if k in algorithm_class(spec["name"]).Options.__dataclass_fields__}
        return make_algorithm(spec, **opts)

    def _switch(self, algo):
        """Continue with ``algo`` on the same buckets (its state starts at zero: the workers' models
        are identical after synchronous steps)."""
        if max([c.min_size for c in algo.compressors] + [0]) == max([c.min_size for c in self._inner.compressors] + [0]):
            algo.adopt(self._inner)
        else:
            params, kw, position = self._bind_args
            algo.bind(params, self.comm, network_position=position, **kw)
        self._inner = algo

    def _say(self, line):
        (self._log or _print_rank0(self.comm.rank if self.comm is not None else 0))(line)
