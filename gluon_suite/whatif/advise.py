"""Let the model decide: the least gradient compression that reaches a target scaling factor on a
given cluster, among synchronous SGD, fp16 gradients and CSER at several ratios.

Each candidate is a cycle of steps with a compression ratio each (dense bytes / sent bytes), and
the prediction is the cycle's mean step time (``model.predict`` per step):

- ``sync``: every step dense (ratio 1);
- ``fp16``: every step sends float16 gradients, ratio 2 (only when the gradients are float32);
- ``cser`` with GRBS at ratio R1 and error-reset period H (as ``make_algorithm('cser',
  compressor='grbs', ratio=R1, period=H)`` builds it): every step sends the update at R1; every H-th
  step also sends the error at R2 = R1/H (dense when R1/H <= 1), so that step's ratio is
  1 / (1/R1 + 1/R2) and the cycle's overall ratio is H / (H/R1 + 1/R2).

The choice is the candidate of the smallest overall ratio whose scaling factor reaches the target
(ties go to the earlier candidate: sync, then fp16, then CSER); when none does, the one with the
highest scaling factor, marked as not reaching it. Compression's own compute time is not counted
unless ``compress_s_per_byte`` is given.
"""
from dataclasses import replace

from ..utils.errors import UserError
from .model import predict

CANDIDATE_KINDS = ("sync", "fp16", "cser")


def cser_cycle(r1, period):
    """Per-step ratios of one CSER cycle: ``period - 1`` steps at ``r1``, then one that also sends
    the error at ``r1 / period`` (dense when that is <= 1)."""
    r2 = max(1.0, float(r1) / period)
    return [float(r1)] * (period - 1) + [1.0 / (1.0 / r1 + 1.0 / r2)]


def candidate_list(kinds=CANDIDATE_KINDS, grad_dtype="float32", ratios=(4, 8, 16, 32, 64, 128, 256), period=8):
    """The candidates of ``kinds`` as ``[{'name', 'cycle', 'algorithm', 'flags'}]``: ``algorithm``
    holds the keyword arguments of ``distributed.algorithms.make_algorithm`` and ``flags`` the
    training scripts' flags for the same choice."""
    out = []
    for kind in kinds:
        if kind not in CANDIDATE_KINDS:
            raise UserError(f"unknown candidate {kind!r}; use some of {', '.join(CANDIDATE_KINDS)}")
        if kind == "sync":
            out.append({"name": "sync", "cycle": [1.0], "algorithm": {"name": "sync"},
                        "flags": "--algorithm sync"})
        elif kind == "fp16" and grad_dtype == "float32":
            out.append({"name": "fp16", "cycle": [2.0], "algorithm": {"name": "sync", "compressor": "fp16"},
                        "flags": "--algorithm sync --compressor fp16"})
        elif kind == "cser":
            if int(period) != period or period < 1:
                raise UserError(f"CSER's period must be an integer >= 1, got {period}")
            for r in sorted(set(float(x) for x in ratios)):
                if not r >= 1:
                    raise UserError(f"CSER ratios must be >= 1, got {r}")
                out.append({"name": f"cser R1={r:g} H={period}", "cycle": cser_cycle(r, period),
                            "algorithm": {"name": "cser", "compressor": "grbs", "ratio": r, "period": period},
                            "flags": f"--algorithm cser --compressor grbs --ratio {r:g} --period {period}"})
    if not out:
        raise UserError("no candidate left to choose from (fp16 alone cannot compress float16 gradients); "
                        "add sync or cser")
    return out


def evaluate(profile, workers, bandwidth, candidate, **cluster):
    """A candidate's predicted mean step time, scaling factor and overall ratio on the cluster
    (``cluster``: ``predict``'s keyword arguments)."""
    # a step may send more than the dense bytes (CSER's update plus a dense error: ratio < 1), which
    # predict's ratio does not take; scale the gradient bytes instead
    steps = [predict(replace(profile, grad_bytes=[b / c for b in profile.grad_bytes]), workers, bandwidth,
                     **cluster)["step_s"] for c in candidate["cycle"]]
    mean = sum(steps) / len(steps)
    base = profile.forward_s + profile.backward_s + profile.optimizer_s
    overall = len(candidate["cycle"]) / sum(1.0 / c for c in candidate["cycle"])
    return {"name": candidate["name"], "ratio": overall, "step_s": mean,
            "scaling_factor": base / mean if mean else 1.0, "algorithm": candidate["algorithm"],
            "flags": candidate["flags"]}


def advise(profile, workers, bandwidth, target_sf=0.9, candidates=None, **cluster):
    """The least compression reaching ``target_sf`` for ``workers`` GPUs on ``bandwidth`` bytes/s
    (see the module docstring). Returns ``{'choice', 'reached', 'candidates', 'workers',
    'bandwidth', 'target_sf'}``; ``choice['algorithm']`` can be passed to ``make_algorithm``."""
    if not 0 < target_sf <= 1:
        raise UserError(f"target scaling factor must be in (0, 1], got {target_sf}")
    cands = candidates if candidates is not None else candidate_list()
    rows = [evaluate(profile, workers, bandwidth, c, **cluster) for c in cands]
    order = sorted(range(len(rows)), key=lambda k: (rows[k]["ratio"], k))
    ok = [k for k in order if rows[k]["scaling_factor"] >= target_sf]
    if ok:
        choice, reached = rows[ok[0]], True
    else:
        choice, reached = max(rows, key=lambda r: (r["scaling_factor"], -r["ratio"])), False
    return {"workers": workers, "bandwidth": bandwidth, "target_sf": target_sf, "reached": reached,
            "choice": choice, "candidates": rows}
