"""Algorithms by name, as the scripts' ``--algorithm`` flag and configs give them: ``ALGORITHMS``
(every name) and ``make_algorithm``, which builds one from names and numbers (compressor, ratios,
period). The classes live below: ``algorithms`` (the contract and the sync/ef/local/cser family),
``local_adaalter`` and ``auto`` (which builds the algorithm it picks through ``make_algorithm``,
at run time)."""
from .algorithms import CSER, Algorithm, ErrorFeedbackSGD, LocalSGD, SyncSGD, _check_period, error_compressor
from .auto import AutoAlgorithm
from .compression import Compressor, make_compressor
from .local_adaalter import LocalAdaAlter

ALGORITHMS = {a.name: a for a in (SyncSGD, ErrorFeedbackSGD, LocalSGD, CSER, LocalAdaAlter, AutoAlgorithm)}


def make_algorithm(name="sync", compressor="none", ratio=None, period=None, compressor2=None,
                   ratio2=None, min_size=0, warmup_steps=0, seed=0, c1_operand="update",
                   reset_step="both", target_sf=None, candidates=None,
                   cser_ratios=None, pl_periods=None):
    """Build an algorithm from names, as scripts expose them as flags.

    ``make_algorithm('cser', compressor='grbs', ratio=64, period=16)`` gives CSER with GRBS at
    ratio 64 for the update (C1) and, unless ``compressor2``/``ratio2`` say otherwise, the same
    compressor at ratio R1/H (at least 1: dense) for the error (C2), so the overall ratio is about
    R1/2. ``min_size`` and ``warmup_steps`` apply to every compressor; ``seed`` seeds the shared
    randomness of grbs/randomk (the same on every worker). For ``local_adaalter``,
    ``warmup_steps`` is the number of fully synchronous steps before local updates start and
    ``period`` the number of steps between synchronisations (default 4). ``c1_operand`` and
    ``reset_step`` choose CSER's variant (``CSER``); other algorithms accept only their defaults.
    ``auto`` takes ``target_sf`` (the scaling factor its choice must reach, default 0.9) and
    ``candidates`` (the kinds it chooses among: sync, fp16, cser, cser_pl; default all) and
    ``cser_ratios`` (CSER's ratios R1 it considers; ``ratio`` pins one) and ``pl_periods`` (CSER-PL's
    periods it considers; default the period H alone), options of ``auto`` alone.
    """
    if isinstance(name, Algorithm):
        return name
    key = str(name).lower()
    if key == "auto":
        return _make_auto(compressor, ratio, period, compressor2, ratio2, min_size, warmup_steps, seed,
                          c1_operand, reset_step, target_sf, candidates, cser_ratios, pl_periods)
    if target_sf is not None or candidates or cser_ratios or pl_periods:
        raise ValueError(f"target_sf, the candidates, cser_ratios and pl_periods are options of algorithm 'auto', not {name!r}; "
                         "drop them or use algorithm 'auto'")
    if key not in ALGORITHMS:
        raise ValueError(f"unknown algorithm {name!r}; choose one of: {', '.join(ALGORITHMS)}")
    if ratio is not None and not float(ratio) >= 1:
        raise ValueError(f"ratio must be >= 1 (dense bytes / sent bytes), got {ratio}")
    if ratio2 is not None and not float(ratio2) >= 1:
        raise ValueError(f"ratio2 must be >= 1 (dense bytes / sent bytes), got {ratio2}")
    if period is not None:
        period = _check_period(period)
    common = {"min_size": min_size, "warmup_steps": warmup_steps}
    if key != "cser" and (c1_operand, reset_step) != ("update", "both"):
        raise ValueError(f"c1_operand and reset_step are options of algorithm 'cser', not {key!r}")

    def comp(cname, r, seed_offset):
        if isinstance(cname, Compressor):
            return cname
        return make_compressor(cname, ratio=r, seed=seed + seed_offset, **common)

    if key == "sync":
        return SyncSGD(comp(compressor, ratio, 0))
    if key == "ef":
        return ErrorFeedbackSGD(comp(compressor, ratio, 0))
    if key == "local_adaalter":
        if str(compressor).lower() != "none":
            raise ValueError(f"algorithm 'local_adaalter' takes no compressor (got {compressor!r})")
        return LocalAdaAlter(period or 4, warmup_steps)
    if key == "local":
        if str(compressor).lower() not in ("none", "zero"):
            raise ValueError(f"algorithm 'local' averages whole models and takes no compressor "
                             f"(got {compressor!r}); for compressed model averaging use "
                             "algorithm='cser' with compressor='zero' and compressor2='grbs' (CSER-PL)")
        return LocalSGD(period or 8)
    period = period or 8
    c1 = comp(compressor, ratio, 0)
    c2 = error_compressor(c1, period, ratio2) if compressor2 is None else comp(compressor2, ratio2, 7919)
    return CSER(c1, c2, period, c1_operand=c1_operand, reset_step=reset_step)


def _make_auto(compressor, ratio, period, compressor2, ratio2, min_size, warmup_steps, seed, c1_operand,
               reset_step, target_sf=None, candidates=None, cser_ratios=None, pl_periods=None):
    """``auto`` picks the compressor itself: a ratio pins CSER's first ratio, a period its period."""
    if str(compressor).lower() != "none" or compressor2 is not None or ratio2 is not None:
        raise ValueError(f"algorithm 'auto' chooses the compressor itself (got compressor {compressor!r}); "
                         "leave it at none, or name an algorithm and compressor")
    if (c1_operand, reset_step) != ("update", "both"):
        raise ValueError("c1_operand and reset_step are options of algorithm 'cser', not 'auto'")
    kw = {"min_size": min_size, "warmup_steps": warmup_steps, "seed": seed}
    if ratio is not None and cser_ratios:
        raise ValueError("give auto either a ratio (one CSER ratio) or cser_ratios (several), not both")
    if ratio is not None:
        kw["cser_ratios"] = (float(ratio),)
    if cser_ratios:
        kw["cser_ratios"] = tuple(sorted({float(r) for r in cser_ratios}))
    if period is not None:
        kw["period"] = period
    if target_sf is not None:
        kw["target_sf"] = float(target_sf)
    if candidates:
        kw["candidates"] = tuple(candidates)
    if pl_periods:
        kw["pl_periods"] = tuple(pl_periods)
    return AutoAlgorithm(**kw)
