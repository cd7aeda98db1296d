"""``algorithm="auto"``: the trainer measures the job, picks the least gradient compression that
reaches a target scaling factor, and switches to it once, identically on every worker.

1. Measure. Synchronous SGD runs from the start. After ``skip_steps`` steps (the first steps set up
   kernels and memory), ``measure_steps`` steps are timed on every worker, with the engine drained
   (``waitall``) at each boundary: compute c (from the end of the previous update until the
   gradients are ready: data, forward, backward), the allreduce a of the gradient buckets (after a
   barrier, so a slower worker's compute is not counted as communication), an allreduce p of a
   probe of ``PROBE_VALUES`` float32 values, and the optimizer update o.
2. Agree. Each worker takes the median of each time over the measured steps; one allreduce of these
   four numbers gives every worker their mean over workers.
3. The link. Each collective costs a fixed t0 plus its ring wire bytes over the bandwidth B. With K
   buckets of s_k bytes on n workers, W = sum_k 2(n-1)/n s_k, so a = K t0 + W/B and p ~ t0:
   t0 = min(p, a/K) and 1/B = (a - K t0)/W. ``link_mbit`` and ``latency_s`` replace the measured B
   and t0 (e.g. to plan for another network, or in tests).
4. Predict. Each candidate (``candidate_list``: synchronous SGD, fp16 gradients, CSER with GRBS at
   R1 = 4 ... 256 and error-reset period H, and CSER-PL: nothing sent for H - 1 steps, then the
   model's deviation at R2 = 1 ... 8 with GRBS, 1 being plain local SGD) is a cycle of steps, step
   j sending the dense bytes over r_j with m_j collectives per bucket (CSER's reset step: two; a
   CSER-PL step between averages: none). Step j takes c + o + K m_j t0 + W / (r_j B); SF = (c + o)
   / (the cycle's mean step). Communication is not overlapped with backward here, as it was not in
   the measured c (a conservative choice). Compression's own compute time is not counted.
5. Choose (``choose``, the rule ``whatif.advise`` uses too): the candidate of the smallest overall
   ratio whose SF reaches ``target_sf`` (sync first, then fp16, then CSER, then CSER-PL); when
   none does, the one of the highest SF. Rank 0's choice is broadcast, every worker builds the same
   algorithm from the same arguments, takes over the synchronous phase's buckets and continues;
   one line is logged and ``decision`` holds the measurements and every candidate's prediction.
6. Verify (``verify=True``). The chosen algorithm's steps are timed for whole cycles (at least
   ``measure_steps`` steps), after one cycle (at least 2 steps; ``verify_skip``) in which its
   compressors set up; if their mean over workers is longer than the measured synchronous step
   (timed the same way, from the end of one update to the end of the next, less the probe), the
   prediction missed a cost it does not model (compression's own compute), and synchronous SGD
   comes back: the algorithm folds its state into the model first
   (CSER: x_i - e_i, the same on every worker) and the trainer averages the optimizer states
   (momentum), so every worker continues from one model. The decision records both times; a second
   line is logged when it reverts.

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
PROBE_VALUES = 256


def cser_cycle(r1, period):
    """Per-step ratios of one CSER cycle: ``period - 1`` steps at ``r1``, then one that also sends
    the error at ``r1 / period`` (dense when that is <= 1)."""
    r2 = max(1.0, float(r1) / period)
    return [float(r1)] * (period - 1) + [1.0 / (1.0 / r1 + 1.0 / r2)]


def pl_cycle(r2, period):
    """Per-step ratios of one CSER-PL cycle: ``period - 1`` steps that send nothing, then the
    model's deviation at ``r2``."""
    return [math.inf] * (period - 1) + [float(r2)]


def candidate_list(kinds=GRADIENT_KINDS, grad_dtype="float32", ratios=CSER_RATIOS, period=8,
                   pl_ratios=PL_RATIOS):
    """The candidates of ``kinds`` as ``[{'name', 'cycle', 'messages', 'algorithm', 'flags'}]``:
    ``cycle`` the ratio of each step of one cycle, ``messages`` its collectives per bucket,
    ``algorithm`` the keyword arguments of ``make_algorithm`` and ``flags`` the training scripts'
    flags for the same choice."""
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
            period = _period(period)
            for r in sorted(set(float(x) for x in pl_ratios)):
                if not r >= 1:
                    raise UserError(f"CSER-PL ratios must be >= 1, got {r}")
                c2 = {"compressor2": "grbs", "ratio2": r} if r > 1 else {"compressor2": "none"}
                flags = f"--compressor2 grbs --ratio2 {r:g}" if r > 1 else "--compressor2 none"
                out.append({"name": f"cser-pl R2={r:g} H={period}", "cycle": pl_cycle(r, period),
                            "messages": [0] * (period - 1) + [1],
                            "algorithm": {"name": "cser", "compressor": "zero", "period": period, **c2},
                            "flags": f"--algorithm cser --compressor zero --period {period} {flags}"})
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


def predict_candidates(candidates, compute_s, bucket_bytes, workers, t0, s_per_byte):
    """Each candidate's mean step time, scaling factor and overall ratio (module docstring, step 4)."""
    k = len(bucket_bytes)
    wire = sum(2.0 * (workers - 1) / workers * s for s in bucket_bytes)
    rows = []
    for c in candidates:
        steps = [compute_s + k * m * t0 + wire * s_per_byte / r for r, m in zip(c["cycle"], c["messages"])]
        mean = sum(steps) / len(steps)
        rows.append({"name": c["name"], "ratio": overall_ratio(c["cycle"]), "step_s": mean,
                     "scaling_factor": compute_s / mean if mean > 0 else 1.0,
                     "algorithm": c["algorithm"], "flags": c["flags"]})
    return rows


def _print_rank0(rank):
    def log(line):
        if rank == 0:
            print(line, file=sys.stdout, flush=True)
    return log


class AutoAlgorithm(Algorithm):
    """Synchronous SGD while measuring, then the chosen algorithm (module docstring). Options:
    ``target_sf`` (default 0.9), ``candidates`` (of ``CANDIDATE_KINDS``), ``cser_ratios`` and
    ``period`` (CSER's R1 values and H), ``skip_steps``/``measure_steps``, ``link_mbit`` and
    ``latency_s`` (replace the measured link), ``min_size``/``warmup_steps``/``seed`` (passed to the
    chosen algorithm's compressors), ``log`` (one line per decision; default: print on rank 0),
    ``verify``, ``verify_margin`` (keep the choice only if its measured step is at most
    (1 - margin) times sync's) and ``verify_skip`` (steps before the timing; default one cycle).
    Everything the trainer asks of an algorithm goes to the current one; ``decision`` is None until
    the choice is made."""

    name = "auto"

    def __init__(self, target_sf=0.9, candidates=CANDIDATE_KINDS, cser_ratios=CSER_RATIOS, period=8,
                 skip_steps=2, measure_steps=5, link_mbit=None, latency_s=None, min_size=0, warmup_steps=0,
                 seed=0, log=None, verify=True, verify_margin=0.0, verify_skip=None):
        if not 0 < float(target_sf) <= 1:
            raise ValueError(f"target scaling factor must be in (0, 1], got {target_sf}")
        if int(measure_steps) < 1 or int(skip_steps) < 0:
            raise ValueError(f"measure_steps must be >= 1 and skip_steps >= 0, got {measure_steps}, {skip_steps}")
        if link_mbit is not None and not float(link_mbit) > 0:
            raise ValueError(f"link_mbit must be > 0 (the link's rate in Mbit/s), got {link_mbit}")
        if latency_s is not None and not float(latency_s) >= 0:
            raise ValueError(f"latency_s must be >= 0 (seconds per collective), got {latency_s}")
        candidate_list(candidates, "float32", cser_ratios, period)   # names and values checked here
        self.target_sf = float(target_sf)
        self.kinds, self.cser_ratios, self.period = tuple(candidates), tuple(cser_ratios), int(period)
        self.skip_steps, self.measure_steps = int(skip_steps), int(measure_steps)
        self.link_mbit = None if link_mbit is None else float(link_mbit)
        self.latency_s = None if latency_s is None else float(latency_s)
        self._common = {"min_size": int(min_size), "warmup_steps": int(warmup_steps), "seed": int(seed)}
        self._log = log
        self.verify, self.verify_margin = bool(verify), float(verify_margin)
        self.verify_skip = None if verify_skip is None else max(1, int(verify_skip))
        self._inner = make_algorithm("sync", min_size=self._common["min_size"])
        self._bind_args = None
        self.decision = None
        self._restart()

    def _restart(self):
        self._start = None
        self._samples, self._current, self._t_end = [], None, None
        self._check = None

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
        allow only algorithms that leave the weights to the optimizer)."""
        self.kinds = tuple(k for k in self.kinds if k in kinds) or ("sync",)

    def bind(self, params, comm, bucket_mb=None, network_position=None):
        kw = {} if bucket_mb is None else {"bucket_mb": bucket_mb}
        self._bind_args = (params, kw, network_position)
        self._inner.bind(params, comm, network_position=network_position, **kw)
        if comm.size == 1 and self.decision is None:
            self.decision = {"choice": "sync", "algorithm": {"name": "sync"}, "workers": 1, "step": 0,
                             "reached": True, "reason": "one worker: nothing is communicated"}
            self._say("auto: one worker, nothing is communicated: sync without compression")

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
                "cser_ratios": list(self.cser_ratios), "period": self.period, "current": self._inner.config(),
                "decision": self.decision}

    def reset_for_resize(self):
        """Elastic resize: the current algorithm folds its state (CSER: residual into the model),
        then synchronous SGD runs again and the choice is made anew for the new world."""
        self._inner.reset_for_resize()
        if self._bind_args is not None:
            self._switch(make_algorithm("sync", min_size=self._common["min_size"]))
        self.decision = None
        self._restart()

    def restore(self, config):
        """Take the decision a checkpoint was saved with (its ``config()``): build that algorithm
        at once, so that its per-worker state (residuals) can be loaded into it."""
        dec = (config or {}).get("decision")
        if not dec or self.comm is None or dec.get("workers") != self.comm.size:
            return
        if dec["algorithm"] != {"name": "sync"}:
            self._switch(self._build(dec["algorithm"]))
        self.decision = dec

    # --- the step -------------------------------------------------------------------------------
    def _measuring(self, step):
        if self.decision is not None:
            return False
        if self._start is None:
            self._start = step
        return step >= self._start + self.skip_steps

    def reduce_gradients(self, step):
        if not self._measuring(step):
            return self._inner.reduce_gradients(step)
        comm = self.comm
        mx.nd.waitall()
        ready = time.perf_counter()
        comm.barrier(name="auto.barrier")
        t0 = time.perf_counter()
        self._inner.reduce_gradients(step)
        mx.nd.waitall()
        t1 = time.perf_counter()
        probe = mx.nd.zeros((PROBE_VALUES,), ctx=self.buckets[0].context)
        comm.allreduce_(probe, average=True, name="auto.probe")
        probe.wait_to_read()
        t2 = time.perf_counter()
        self._current = None if self._t_end is None else [ready - self._t_end, t1 - t0, t2 - t1, t2]

    def after_update(self, before, step):
        self._inner.after_update(before, step)
        if self._check is not None:
            return self._verify_step(step)
        if self.decision is not None or self._start is None:
            return
        if step + 1 >= self._start + self.skip_steps:
            mx.nd.waitall()
            now = time.perf_counter()
            if self._current is not None:
                compute, allreduce, probe, sync_end = self._current
                # the whole step as the check will time the chosen one (waits included), less the probe
                whole = now - self._t_end - probe
                self._samples.append([compute, now - sync_end, allreduce, probe, whole])
            self._t_end, self._current = now, None
            if len(self._samples) >= self.measure_steps:
                self._decide(step)

    # --- the decision ---------------------------------------------------------------------------
    def _decide(self, step):
        comm = self.comm
        mine = np.median(np.array(self._samples, dtype=np.float64), axis=0)
        agreed = mx.nd.array(mine, dtype="float64")
        comm.allreduce_(agreed, average=True, name="auto.measured")
        compute, optimizer, allreduce, probe, whole = (float(v) for v in agreed.asnumpy())
        n = comm.size
        sizes = [float(b.nbytes) for b in self.buckets]
        t0, s_per_byte = link_model(allreduce, probe, sizes, n)
        source = "measured"
        if self.link_mbit is not None:
            s_per_byte, source = 8.0 / (self.link_mbit * 1e6), "given"
        if self.latency_s is not None:
            t0 = self.latency_s
        dtype = "float16" if any(b.dtype == np.float16 for b in self.buckets) else "float32"
        cands = candidate_list(self.kinds, dtype, self.cser_ratios, self.period)
        rows = predict_candidates(cands, compute + optimizer, sizes, n, t0, s_per_byte)
        index, reached = choose(rows, self.target_sf)
        chosen = mx.nd.array([index], dtype="float64")
        comm.broadcast_(chosen, 0, name="auto.choice")   # rank 0's word is final on every worker
        index = int(chosen.asscalar())
        row = rows[index]
        mbit = 8e-6 / s_per_byte if s_per_byte > 0 else float("inf")
        sync_sf = next((r["scaling_factor"] for r in rows if r["name"] == "sync"), None)
        reason = (f"predicted SF {row['scaling_factor']:.3f} {'>=' if reached else '< (none reaches)'} target "
                  f"{self.target_sf:g} at ratio {row['ratio']:.2f} on {n} workers"
                  + (f" (sync: {sync_sf:.3f})" if sync_sf is not None else "")
                  + f"; compute {1e3 * (compute + optimizer):.1f} ms/step, allreduce of {sum(sizes) / 1e6:.3g} MB "
                  f"in {len(sizes)} bucket(s) {1e3 * allreduce:.1f} ms: link {mbit:.4g} Mbit/s ({source}) "
                  f"+ {1e3 * t0:.2f} ms per collective")
        self.decision = {"choice": row["name"], "algorithm": row["algorithm"], "flags": row["flags"],
                         "reached": reached, "target_sf": self.target_sf, "workers": n, "step": step + 1,
                         "measured": {"compute_s": compute, "optimizer_s": optimizer, "allreduce_s": allreduce,
                                      "probe_s": probe, "sync_step_s": whole, "steps": len(self._samples)},
                         "link": {"mbit": mbit, "per_collective_s": t0, "source": source},
                         "gradient_bytes": sum(sizes), "buckets": len(sizes), "reason": reason,
                         "candidates": rows}
        if row["algorithm"] != {"name": "sync"}:
            self._switch(self._build(row["algorithm"]))
            if self.verify:
                cycle = len(next(c["cycle"] for c in cands if c["name"] == row["name"]))
                # whole cycles (CSER's reset step costs more), after a cycle of setting up (the first
                # steps of a compressor build their per-shape index patterns)
                steps = cycle * -(-self.measure_steps // cycle)
                skip = max(cycle, 2) if self.verify_skip is None else self.verify_skip
                self._check = {"from": step + 1 + skip, "to": step + 1 + skip + steps, "t": None, "times": [],
                               "sync_step_s": whole}
        self._say(f"auto: {row['name']} from step {step + 1} ({row['flags']}): {reason}")

    def _verify_step(self, step):
        """After the switch: time whole steps of the chosen algorithm; if their mean over workers is
        longer than the measured synchronous step (timed end to end, less the probe), the prediction
        missed a cost it does not model (compression's own compute), and synchronous SGD comes
        back: the current algorithm folds its state into the model (CSER: x_i - e_i, the same on
        every worker), so every worker continues from one model."""
        chk = self._check
        if step + 1 < chk["from"]:
            return
        mx.nd.waitall()
        now = time.perf_counter()
        if chk["t"] is not None:
            chk["times"].append(now - chk["t"])
        chk["t"] = now
        if step + 1 < chk["to"]:
            return
        self._check = None
        comm = self.comm
        mean = mx.nd.array([sum(chk["times"]) / len(chk["times"])], dtype="float64")
        comm.allreduce_(mean, average=True, name="auto.verify")
        measured = float(mean.asscalar())
        keep = mx.nd.array([1.0 if measured <= chk["sync_step_s"] * (1.0 - self.verify_margin) else 0.0],
                           dtype="float64")
        comm.broadcast_(keep, 0, name="auto.verify.choice")
        self.decision["verified"] = {"step_s": measured, "sync_step_s": chk["sync_step_s"],
                                     "steps": len(chk["times"]), "kept": bool(keep.asscalar())}
        if keep.asscalar():
            return
        was = self.decision["choice"]
        self._inner.reset_for_resize()
        self._switch(make_algorithm("sync", min_size=self._common["min_size"]))
        self.wants_optimizer_average = True   # the trainer averages the workers' momenta, too
        self.decision.update(choice="sync", algorithm={"name": "sync"}, flags="--algorithm sync",
                             reverted_from=was, reverted_at=step + 1)
        self._say(f"auto: back to sync from step {step + 1}: {was} measured {1e3 * measured:.1f} ms/step, "
                  f"longer than sync's {1e3 * chk['sync_step_s']:.1f} ms (its own compute is not in the prediction)")

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
