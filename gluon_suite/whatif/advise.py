"""Let the model decide: the least gradient compression that reaches a target scaling factor on a
given cluster, among synchronous SGD, fp16 gradients and CSER at several ratios.

Each candidate is a cycle of steps with a compression ratio each (dense bytes / sent bytes), and
the prediction is the cycle's mean step time (``model.predict`` per step, every bucket of the
dense layout compressed by the step's ratio, as the trainer does):

- ``sync``: every step dense (ratio 1);
- ``fp16``: every step sends float16 gradients, ratio 2 (only when the gradients are float32);
- ``cser`` with GRBS at ratio R1 and error-reset period H (as ``make_algorithm('cser',
  compressor='grbs', ratio=R1, period=H)`` builds it): every step sends the update at R1; every H-th
  step also sends the error at R2 = R1/H (dense when R1/H <= 1), so that step's ratio is
  1 / (1/R1 + 1/R2) and the cycle's overall ratio is H / (H/R1 + 1/R2).

The choice is the candidate of the smallest overall ratio whose scaling factor reaches the target
(ties go to the earlier candidate: sync, then fp16, then CSER); when none does, the one with the
highest scaling factor, marked as not reaching it. Compression's own compute time is not counted
unless ``compress_s_per_byte`` is given (then for every step that compresses; sync's steps do not).

The candidates and the rule are those of the trainer's ``algorithm="auto"``
(``distributed/auto.py``), which applies them to what it measures in the first steps of a job; the
trainer also weighs CSER-PL (steps that send nothing between model averages), which this per-step
model of every bucket's collective would overcharge, so the advice leaves it out.
"""
from ..distributed.costmodel import CANDIDATE_KINDS, candidate_list, choose, cser_cycle, overall_ratio  # noqa: F401
from ..utils.errors import UserError
from .model import predict_any_ratio


def evaluate(profile, workers, bandwidth, candidate, **cluster):
    """A candidate's predicted mean step time, scaling factor and overall ratio on the cluster
    (``cluster``: ``predict``'s keyword arguments)."""
    # each step compresses every bucket of the dense layout by its ratio (below 1 for CSER's step
    # that sends a dense error too); a step at ratio 1 (sync) runs no compressor, so no compute for one
    steps = [predict_any_ratio(profile, workers, bandwidth, ratio=c,
                               **(cluster if c != 1 else {**cluster, "compress_s_per_byte": 0.0}))["step_s"]
             for c in candidate["cycle"]]
    mean = sum(steps) / len(steps)
    base = profile.forward_s + profile.backward_s + profile.optimizer_s
    overall = overall_ratio(candidate["cycle"])
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
    index, reached = choose(rows, target_sf)
    choice = rows[index]
    return {"workers": workers, "bandwidth": bandwidth, "target_sf": target_sf, "reached": reached,
            "choice": choice, "candidates": rows}
