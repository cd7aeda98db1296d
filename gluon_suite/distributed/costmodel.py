"""The cost model and the choice rule behind ``algorithm="auto"`` and ``gluon-suite whatif``:
candidates as cycles of per-step compression ratios, each step's predicted time from the compute,
the gradient bytes, the link and the collectives it issues, the scaling factor, and the rule that
takes the least compression reaching a target (``auto.py``'s module docstring explains the model;
docs/whatif.md shows it against measurements). Pure functions: nothing here communicates.
"""
import dataclasses
import math

import numpy as np

from ..utils.errors import UserError
from .registry import ALGORITHMS

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


@dataclasses.dataclass(frozen=True)
class CandidatePlan:
    """What the candidates of one decision are built from: the gradients' ``grad_dtype``, CSER's
    ratios R1 and period H, CSER-PL's ratios R2 and periods (None: H alone)."""
    grad_dtype: str = "float32"
    ratios: tuple = CSER_RATIOS
    period: int = 8
    pl_ratios: tuple = PL_RATIOS
    pl_periods: tuple = None


def candidate_kinds():
    """Every kind of candidate the registered algorithms offer ``auto``, in registration order
    (the built-in ones: ``CANDIDATE_KINDS``)."""
    return tuple(k for cls in ALGORITHMS.values() for k in cls.candidate_kinds)


def _provider(kind):
    for cls in ALGORITHMS.values():
        if kind in cls.candidate_kinds:
            return cls
    raise UserError(f"unknown candidate {kind!r}; use some of {', '.join(candidate_kinds())}")


def candidate_list(kinds=GRADIENT_KINDS, grad_dtype="float32", ratios=CSER_RATIOS, period=8,
                   pl_ratios=PL_RATIOS, pl_periods=None):
    """The candidates of ``kinds``, each asked of the algorithm that offers it
    (``Algorithm.auto_candidates``), as ``[{'name', 'kind', 'cycle', 'messages', 'algorithm',
    'flags', 'reference', 'local'}]``: ``cycle`` the ratio of each step of one cycle, ``messages``
    its collectives per bucket, ``algorithm`` the spec ``make_algorithm`` builds it from
    (``{'name': ..., **options}``), ``flags`` the training scripts' flags for the same choice,
    ``reference`` true for the uncompressed synchronous step that a choice is checked against, and
    ``local`` true when it takes local steps between averages (a measuring phase that sends nothing
    can continue into it). CSER-PL's candidates are every R2 of ``pl_ratios`` at every period of
    ``pl_periods`` (default: H alone), ordered by overall ratio and, at one ratio, by ``pl_delay``
    (the longer period first)."""
    plan = CandidatePlan(grad_dtype, tuple(ratios), _period(period), tuple(pl_ratios),
                         None if pl_periods is None else tuple(pl_periods))
    out = []
    for kind in kinds:
        for c in _provider(kind).auto_candidates(kind, plan):
            out.append({"kind": kind, "reference": False, "local": False, **c})
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
                     "algorithm": c["algorithm"], "flags": c["flags"], "reference": c.get("reference", False)})
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
