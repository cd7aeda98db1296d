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
import math
import sys
import time

import mxnet as mx
import numpy as np

from ..utils.errors import UserError
from .algorithms import Algorithm


def make_algorithm(name, **kwargs):
    """``factory.make_algorithm``, looked up when auto builds its choice: the factory names auto
    among the algorithms, so it imports this module, not the other way round."""
    from .factory import make_algorithm as make
    return make(name, **kwargs)


CANDIDATE_KINDS = ("sync", "fp16", "cser", "cser_pl")
GRADIENT_KINDS = ("sync", "fp16", "cser")   # those that send gradients every step (what-if's advice)
CSER_RATIOS = (4, 8, 16, 32, 64, 128, 256)
PL_RATIOS = (1, 2, 4, 8)   # CSER-PL's R2: the share of the model averaged every H steps (1: all)
PROBE_VALUES = 256          # the small probe: its time is the fixed cost of one collective
RACE_BELOW = 2.0            # a predicted gain below this is checked against measured sync steps
PAUSE_FACTOR, PAUSE_S = 5.0, 0.05   # a gap between steps this long is a pause of the loop (evaluation)
MAX_RESTARTS = 3            # timing windows restarted after a pause before one is taken as it is


def cser_cycle(r1, period):
    """Per-step ratios of one CSER cycle: ``period - 1`` steps at ``r1``, then one that also sends
    the error at ``r1 / period`` (dense when that is <= 1)."""
    r2 = max(1.0, float(r1) / period)
    return [float(r1)] * (period - 1) + [1.0 / (1.0 / r1 + 1.0 / r2)]


def pl_cycle(r2, period):
    """Per-step ratios of one CSER-PL cycle: ``period - 1`` steps that send nothing, then the
    model's deviation at ``r2``."""
    return [math.inf] * (period - 1) + [float(r2)]


def pl_delay(r2, period):
    """The mean number of steps a coordinate's local change waits before CSER-PL averages it: half
    a period to the next average, then ``r2 - 1`` more periods on average (each average takes a
    1/r2 share, GRBS)."""
    return period * (float(r2) - 0.5)


def pl_periods_for(period, pl_periods=None):
    """CSER-PL's periods: ``pl_periods``, else ``period`` alone (2H and 4H as well were measured on
    the testbed and gained nothing there: docs/whatif.md)."""
    return sorted(set(_period(h) for h in ([period] if pl_periods is None else pl_periods)))


def candidate_list(kinds=GRADIENT_KINDS, grad_dtype="float32", ratios=CSER_RATIOS, period=8,
                   pl_ratios=PL_RATIOS, pl_periods=None):
    """The candidates of ``kinds`` as ``[{'name', 'cycle', 'messages', 'algorithm', 'flags'}]``:
    ``cycle`` the ratio of each step of one cycle, ``messages`` its collectives per bucket,
    ``algorithm`` the keyword arguments of ``make_algorithm`` and ``flags`` the training scripts'
    flags for the same choice. CSER-PL's candidates are every R2 of ``pl_ratios`` at every period
    of ``pl_periods`` (default: H alone), ordered by overall ratio and, at one ratio, by
    ``pl_delay`` (the longer period first)."""
    out = []
    for kind in kinds:
        if kind not in CANDIDATE_KINDS:
            raise UserError(f"unknown candidate {kind!r}; use some of {', '.join(CANDIDATE_KINDS)}")
        if kind == "sync":
            out.append({"name": "sync", "cycle": [1.0], "messages": [1], "algorithm": {"name": "sync"},
                        "flags": "--algorithm sync"})
        elif kind == "fp16" and grad_dtype == "float32":
            out.append({"name": "fp16", "cycle": [2.0], "messages": [1],
                        "algorithm": {"name": "sync", "compressor": "fp16"},
                        "flags": "--algorithm sync --compressor fp16"})
        elif kind == "cser":
            period = _period(period)
            for r in sorted(set(float(x) for x in ratios)):
                if not r >= 1:
                    raise UserError(f"CSER ratios must be >= 1, got {r}")
                out.append({"name": f"cser R1={r:g} H={period}", "cycle": cser_cycle(r, period),
                            "messages": [1] * (period - 1) + [2],
                            "algorithm": {"name": "cser", "compressor": "grbs", "ratio": r, "period": period},
                            "flags": f"--algorithm cser --compressor grbs --ratio {r:g} --period {period}"})
        elif kind == "cser_pl":
            rs = sorted(set(float(x) for x in pl_ratios))
            bad = [r for r in rs if not r >= 1]
            if bad:
                raise UserError(f"CSER-PL ratios must be >= 1, got {bad[0]:g}")
            periods = pl_periods_for(_period(period), pl_periods)
            grid = sorted(((r, h) for r in rs for h in periods), key=lambda rh: (rh[0] * rh[1], pl_delay(*rh)))
            for r, h in grid:
                c2 = {"compressor2": "grbs", "ratio2": r} if r > 1 else {"compressor2": "none"}
                flags = f"--compressor2 grbs --ratio2 {r:g}" if r > 1 else "--compressor2 none"
                out.append({"name": f"cser-pl R2={r:g} H={h}", "cycle": pl_cycle(r, h),
                            "messages": [0] * (h - 1) + [1],
                            "algorithm": {"name": "cser", "compressor": "zero", "period": h, **c2},
                            "flags": f"--algorithm cser --compressor zero --period {h} {flags}"})
    if not out:
        raise UserError("no candidate left to choose from (fp16 alone cannot compress float16 gradients); "
                        "add sync or cser")
    return out


def _period(period):
    if int(period) != period or period < 1:
        raise UserError(f"CSER's period must be an integer >= 1, got {period}")
    return int(period)


def overall_ratio(cycle):
    """Dense bytes over sent bytes across one cycle."""
    return len(cycle) / sum(1.0 / c for c in cycle)


def choose(rows, target_sf):
    """The rule: among ``rows`` (``{'ratio', 'scaling_factor'}``), the index of the smallest ratio
    whose scaling factor reaches ``target_sf`` (ties: the earlier row), else of the highest scaling
    factor (ties: the smaller ratio). Returns ``(index, reached)``."""
    order = sorted(range(len(rows)), key=lambda k: (rows[k]["ratio"], k))
    ok = [k for k in order if rows[k]["scaling_factor"] >= target_sf]
    if ok:
        return ok[0], True
    return max(range(len(rows)), key=lambda k: (rows[k]["scaling_factor"], -rows[k]["ratio"])), False


def link_model(allreduce_s, probe_s, bucket_bytes, workers):
    """``(t0, seconds per wire byte)`` from the measured allreduce of the buckets and of the probe
    (module docstring, step 3)."""
    k = len(bucket_bytes)
    wire = sum(2.0 * (workers - 1) / workers * s for s in bucket_bytes)
    t0 = max(0.0, min(probe_s, allreduce_s / k))
    return t0, max(allreduce_s - k * t0, 0.0) / wire


def predict_candidates(candidates, compute_s, bucket_bytes, workers, t0, s_per_byte, wait_s=0.0):
    """Each candidate's mean step time, scaling factor and overall ratio (module docstring, step 4):
    a step that communicates also waits ``wait_s`` for the slowest worker."""
    k = len(bucket_bytes)
    wire = sum(2.0 * (workers - 1) / workers * s for s in bucket_bytes)
    rows = []
    for c in candidates:
        steps = [compute_s + (wait_s if m else 0.0) + k * m * t0 + wire * s_per_byte / r
                 for r, m in zip(c["cycle"], c["messages"])]
        mean = sum(steps) / len(steps)
        rows.append({"name": c["name"], "ratio": overall_ratio(c["cycle"]), "step_s": mean,
                     "scaling_factor": compute_s / mean if mean > 0 else 1.0,
                     "algorithm": c["algorithm"], "flags": c["flags"]})
    return rows


def window_step_time(elapsed, gaps, steps, subtract=False):
    """``(seconds per step, paused)`` of a timed window of ``steps`` steps that took ``elapsed``
    seconds, with ``gaps`` the times between its steps outside the trainer: a gap over
    ``PAUSE_FACTOR`` times their median plus ``PAUSE_S`` is a pause of the loop (an evaluation).
    ``subtract``: each pause's excess over the median gap is taken out of ``elapsed``."""
    gaps = list(gaps) or [0.0]
    med = float(np.median(gaps))
    pauses = [g - med for g in gaps if g > PAUSE_FACTOR * med + PAUSE_S]
    if subtract:
        elapsed -= sum(pauses)
    return elapsed / steps, bool(pauses)


def _is_pl(algo):
    """CSER with a zero C1: CSER-PL, or local SGD (the measuring phase's algorithm)."""
    return algo.name == "cser" and algo.c1.name == "zero"


def _print_rank0(rank):
    def log(line):
        if rank == 0:
            print(line, file=sys.stdout, flush=True)
    return log


class AutoAlgorithm(Algorithm):
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

    name = "auto"

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
        candidate_list(candidates, "float32", cser_ratios, period, pl_ratios, pl_periods)   # checks names, values
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
        self._inner = self._measurer()
        self._restart()

    def _restart(self):
        self._start = None
        self._samples, self._current, self._t_end = [], None, None
        self._window = None
        self._left = None
        self._reset = None

    @property
    def local_start(self):
        """True when the measuring phase takes local steps (CSER-PL is a candidate): nothing is sent
        while the compute is timed, and a CSER-PL choice continues from those steps."""
        return "cser_pl" in self.kinds and self.period > 1

    def _measurer(self):
        """The algorithm of the measuring phase: CSER-PL with the whole model averaged every H steps
        (plain local SGD) when CSER-PL is a candidate, else synchronous SGD."""
        if self.local_start:
            return self._build(candidate_list(("cser_pl",), period=self.period, pl_ratios=(1,),
                                              pl_periods=(self.period,))[0]["algorithm"])
        return make_algorithm("sync", min_size=self._common["min_size"])

    # --- the current algorithm answers for everything the trainer asks --------------------------
    current = property(lambda self: self._inner, doc="The algorithm running now.")
    needs_update = property(lambda self: self._inner.needs_update)
    local_models = property(lambda self: self._inner.local_models)
    requires_summable = property(lambda self: self._inner.requires_summable)
    state_kinds = property(lambda self: self._inner.state_kinds)
    compressors = property(lambda self: self._inner.compressors)
    params = property(lambda self: self._inner.params)
    buckets = property(lambda self: self._inner.buckets)

    @property
    def comm(self):
        return self._inner.comm

    @comm.setter
    def comm(self, comm):
        self._inner.comm = comm

    def restrict(self, kinds):
        """Keep only the candidates of ``kinds`` (e.g. float16 weights with float32 master copies
        allow only algorithms that leave the weights to the optimizer); before ``bind`` only."""
        self.kinds = tuple(k for k in self.kinds if k in kinds) or ("sync",)
        if self._bind_args is None and self.decision is None:
            self._inner = self._measurer()

    def bind(self, params, comm, bucket_mb=None, network_position=None):
        kw = {} if bucket_mb is None else {"bucket_mb": bucket_mb}
        self._bind_args = (params, kw, network_position)
        if comm.size == 1 and self.decision is None:
            self._inner = make_algorithm("sync", min_size=self._common["min_size"])
            self.decision = {"choice": "sync", "algorithm": {"name": "sync"}, "workers": 1, "step": 0,
                             "reached": True, "reason": "one worker: nothing is communicated"}
            self._inner.bind(params, comm, network_position=network_position, **kw)
            self._say("auto: one worker, nothing is communicated: sync without compression")
            return
        self._inner.bind(params, comm, network_position=network_position, **kw)

    def snapshot(self):
        return self._inner.snapshot()

    def view(self, kind, index):
        return self._inner.view(kind, index)

    def check_optimizer(self, optimizer):
        self._inner.check_optimizer(optimizer)

    def owns_update(self, step):
        return self._inner.owns_update(step)

    def local_update(self, optimizer, updater, step):
        self._inner.local_update(optimizer, updater, step)

    def state_arrays(self):
        return self._inner.state_arrays()

    def load_state_arrays(self, arrays):
        self._inner.load_state_arrays(arrays)

    def config(self):
        return {"name": self.name, "target_sf": self.target_sf, "candidates": list(self.kinds),
                "cser_ratios": list(self.cser_ratios), "period": self.period, "pl_ratios": list(self.pl_ratios),
                "pl_periods": pl_periods_for(self.period, self.pl_periods), "current": self._inner.config(),
                "decision": self.decision}

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
        racing = (config.get("current") or {}).get("name") == "sync" and dec["algorithm"].get("name") != "sync"
        if dec["algorithm"] == {"name": "sync"} or racing:
            self._switch(make_algorithm("sync", min_size=self._common["min_size"]))
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

    # --- the decision ---------------------------------------------------------------------------
    def _agree(self):
        """Each time's median over this worker's measured steps (the small probe: also its
        minimum, the fixed cost without waiting), averaged over the workers (one collective)."""
        arr = np.array(self._samples, dtype=np.float64)

        def med(c, f=np.median):
            c = c[~np.isnan(c)]
            return float(f(c)) if c.size else -1.0
        mine = [med(c) for c in arr.T] + [med(arr[:, 4], np.min), -1.0 if self._reset is None else self._reset]
        agreed = mx.nd.array(mine, dtype="float64")
        self.comm.allreduce_(agreed, average=True, name="auto.measured")
        return [float(v) for v in agreed.asnumpy()]

    def _decide(self, step):
        comm = self.comm
        compute, optimizer, wait, allreduce, small, whole, small_min, reset = self._agree()
        n = comm.size
        sizes = [float(b.nbytes) for b in self.buckets]
        k, wire = len(sizes), sum(2.0 * (n - 1) / n * s for s in sizes)
        measured = {"compute_s": compute, "optimizer_s": optimizer, "probe_s": small,
                    "steps": len(self._samples), "start": "local" if self.local_start else "sync"}
        if self.local_start:
            # small probe: t0 + waiting (its fastest: t0); the models' average: waiting + K t0 + W / B
            t0 = max(small_min, 0.0)
            wait_s = max(small - t0, 0.0)
            average = max(reset - optimizer, 0.0)
            s_per_byte = max(average - wait_s - k * t0, 0.0) / wire
            measured.update(probe_min_s=small_min, average_s=average, local_step_s=whole, wait_s=wait_s)
        else:
            t0, s_per_byte = link_model(allreduce, small, sizes, n)
            wait_s = max(wait - t0, 0.0)      # the barrier's own fixed cost is not waiting
            measured.update(allreduce_s=allreduce, sync_step_s=whole, wait_s=wait_s)
        source = "measured"
        if self.link_mbit is not None:
            s_per_byte, source = 8.0 / (self.link_mbit * 1e6), "given"
        if self.latency_s is not None:   # a given per-collective cost: all a collective costs beyond its bytes
            t0, wait_s = self.latency_s, 0.0
        dtype = "float16" if any(b.dtype == np.float16 for b in self.buckets) else "float32"
        cands = candidate_list(self.kinds, dtype, self.cser_ratios, self.period, self.pl_ratios, self.pl_periods)
        rows = predict_candidates(cands, compute + optimizer, sizes, n, t0, s_per_byte, wait_s)
        index, reached = choose(rows, self.target_sf)
        chosen = mx.nd.array([index], dtype="float64")
        comm.broadcast_(chosen, 0, name="auto.choice")   # rank 0's word is final on every worker
        index = int(chosen.asscalar())
        row = rows[index]
        mbit = 8e-6 / s_per_byte if s_per_byte > 0 else float("inf")
        sync_row = next((r for r in rows if r["name"] == "sync"), None)
        reason = (f"predicted SF {row['scaling_factor']:.3f} {'>=' if reached else '< (none reaches)'} target "
                  f"{self.target_sf:g} at ratio {row['ratio']:.2f} on {n} workers"
                  + (f" (sync: {sync_row['scaling_factor']:.3f})" if sync_row is not None else "")
                  + f"; compute {1e3 * (compute + optimizer):.1f} ms/step, {sum(sizes) / 1e6:.3g} MB of gradients "
                  f"in {len(sizes)} bucket(s): link {mbit:.4g} Mbit/s ({source}) + {1e3 * t0:.2f} ms per "
                  f"collective + {1e3 * wait_s:.2f} ms waiting")
        self.decision = {"choice": row["name"], "algorithm": row["algorithm"], "flags": row["flags"],
                         "reached": reached, "target_sf": self.target_sf, "workers": n, "step": step + 1,
                         "measured": measured,
                         "link": {"mbit": mbit, "per_collective_s": t0, "source": source},
                         "gradient_bytes": sum(sizes), "buckets": len(sizes), "reason": reason,
                         "candidates": rows}
        self._say(f"auto: {row['name']} from step {step + 1} ({row['flags']}): {reason}")
        # with local steps the models were averaged on this very step: only the momenta differ
        self._take(row["algorithm"], continue_local=True, models_equal=self.local_start)
        if self.verify and row["algorithm"] != {"name": "sync"}:
            # the reference: sync's measured step (a synchronous measuring phase), else its prediction
            sync_s = whole if not self.local_start else (sync_row["step_s"] if sync_row else math.inf)
            race = sync_row is not None and sync_row["step_s"] < RACE_BELOW * row["step_s"]
            cycle = len(next(c["cycle"] for c in cands if c["name"] == row["name"]))
            self._open_window(step, "chosen", cycle, race=race, sync_s=sync_s)

    def _take(self, spec, continue_local=False, models_equal=False):
        """Run the algorithm of ``spec`` from the next step. From local models (the measuring local
        SGD, or a checked CSER) to another algorithm, the workers first average their models (one
        collective) and their optimizer states, so every worker continues from one model; CSER-PL
        continues from the measuring steps' local models (their deviations become its residual), at
        another period only right after the models' average (nothing is left to carry over)."""
        old = self._inner
        if spec == {"name": "sync"} and old.name == "sync" and old.compressor.name == "none":
            return                         # plain sync already
        if spec == {"name": "sync"}:
            new = make_algorithm("sync", min_size=self._common["min_size"])
        else:
            new = self._build(spec)
        pl = continue_local and _is_pl(old) and _is_pl(new) and (new.period == old.period or models_equal)
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

    # --- the check: whole cycles timed between two drains ---------------------------------------
    def _open_window(self, step, leg, cycle, race, sync_s, restarts=0, result=None, length=None):
        """Time the current algorithm for ``length`` steps (default: whole cycles of ``cycle``
        steps, at least ``measure_steps``), after ``verify_skip`` steps (default one cycle, at least
        2), starting on a cycle boundary; a pause of the loop inside the window restarts it."""
        skip = (max(cycle, 2) if self.verify_skip is None else self.verify_skip) if leg == "chosen" else 1
        first = step + 1 + skip if restarts == 0 else step + 1   # (in steps done)
        first += (-first) % cycle
        length = cycle * -(-self.measure_steps // cycle) if length is None else length
        self._window = {"leg": leg, "cycle": cycle, "from": first, "to": first + length,
                        "t": None, "gaps": [], "race": race, "sync_s": sync_s, "restarts": restarts,
                        "result": result or {}}
        if first == step + 1:     # a restart, at a cycle boundary: the engine was just drained
            self._window["t"] = time.perf_counter()

    def _window_step(self, step):
        w = self._window
        if step + 1 == w["from"]:      # the step before the window: drain, start the clock
            mx.nd.waitall()
            w["t"], w["gaps"] = time.perf_counter(), []
            return
        if step + 1 != w["to"] or w["t"] is None:
            return
        mx.nd.waitall()
        elapsed = time.perf_counter() - w["t"]
        # the last window allowed keeps its pauses out of its time: a window longer than the loop's
        # stretch between two evaluations would never be clean
        last = w["restarts"] >= MAX_RESTARTS
        mine, paused = window_step_time(elapsed, w["gaps"], w["to"] - w["from"], subtract=last)
        agreed = mx.nd.array([mine, 1.0 if paused else 0.0], dtype="float64")
        self.comm.allreduce_(agreed, average=True, name=f"auto.window.{w['leg']}")
        step_s, paused = (float(v) for v in agreed.asnumpy())
        if paused > 0 and w["restarts"] < MAX_RESTARTS:
            self._open_window(step, w["leg"], w["cycle"], w["race"], w["sync_s"], w["restarts"] + 1, w["result"],
                              w["to"] - w["from"])
            return
        res = dict(w["result"])
        res[w["leg"]] = step_s
        res["steps"] = w["to"] - w["from"]
        res["restarts"] = res.get("restarts", 0) + w["restarts"]
        self._window = None
        if w["leg"] == "chosen" and w["race"]:
            # a close call: time sync itself, from one model, for as many steps
            self._take({"name": "sync"})
            res["sync_from"] = step + 1
            self._open_window(step, "sync", 1, True, w["sync_s"], 0, res, w["to"] - w["from"])
            return
        self._verdict(step, res, w["sync_s"])

    def _verdict(self, step, res, sync_predicted):
        measured_sync = "sync" in res
        sync_s = res["sync"] if measured_sync else sync_predicted
        keep = mx.nd.array([1.0 if res["chosen"] <= (1.0 - self.verify_margin) * sync_s else 0.0], dtype="float64")
        self.comm.broadcast_(keep, 0, name="auto.verify.choice")
        kept = bool(keep.asscalar())
        dec = self.decision
        dec["verified"] = {"step_s": res["chosen"], "sync_step_s": sync_s,
                           "sync": "measured" if measured_sync else ("measured, drained" if not self.local_start
                                                                     else "predicted"),
                           "steps": res["steps"], "restarts": res["restarts"], "margin": self.verify_margin,
                           "kept": kept, "at": step + 1, **({"sync_from": res["sync_from"]} if "sync_from" in res else {})}
        was = dec["choice"]
        if kept:
            if measured_sync:    # the race ran sync last: back to the choice, from one model
                self._take(dec["algorithm"])
            self._say(f"auto: {was} kept from step {step + 1}: {1e3 * res['chosen']:.1f} ms/step against sync's "
                      f"{1e3 * sync_s:.1f} ms ({dec['verified']['sync']})")
            return
        if not measured_sync:
            self._take({"name": "sync"})
        dec.update(choice="sync", algorithm={"name": "sync"}, flags="--algorithm sync",
                   reverted_from=was, reverted_at=step + 1)
        self._say(f"auto: back to sync from step {step + 1}: {was} measured {1e3 * res['chosen']:.1f} ms/step, "
                  f"not below {1 - self.verify_margin:.2f} x sync's {1e3 * sync_s:.1f} ms ({dec['verified']['sync']})")

    def _build(self, spec):
        spec = dict(spec)
        return make_algorithm(spec.pop("name"), **spec, **self._common)

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
