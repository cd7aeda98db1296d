"""The algorithm and compressor a run uses, settled against what the user named and the worker
count (``settle_compression``), and the algorithm built from a recipe's configuration
(``algorithm_from_config``). Every question about an algorithm goes to its registered class
(``chooses_compression``, ``keeps_inherited_compressor``, its ``own`` options), never to its name."""
import dataclasses

from ..utils.errors import UserError
from .registry import ALGORITHMS, algorithm_class, algorithm_from, compressor_class, option_key


def own_keys():
    """``{config key: [algorithm names]}`` of the options that algorithms declare as their own."""
    out = {}
    for cls in ALGORITHMS.values():
        for f in dataclasses.fields(cls.Options):
            if f.metadata.get("own"):
                out.setdefault(option_key(f), []).append(cls.name)
    return out


def algorithm_from_config(cfg):
    """The algorithm of a recipe's (settled) configuration: ``cfg['algorithm']`` built from the
    config keys its options declare (``compress_warmup`` is ``warmup_steps``, ``auto_candidates``
    is auto's ``candidates``, ...); other keys are the other algorithms' and are left alone."""
    values = {k: cfg[k] for k in cfg.keys() if k != "algorithm"}
    try:
        return algorithm_from(cfg["algorithm"], values, keyed=True)
    except ValueError as exc:
        raise UserError(str(exc)) from None


_COMPRESSION_KEYS = ("compressor", "ratio", "compressor2", "ratio2")


def _compression(cfg):
    """``grbs (ratio 32)``-style text of the compression in ``cfg``."""
    parts = []
    for c, r in (("compressor", "ratio"), ("compressor2", "ratio2")):
        if cfg.get(c) and not compressor_class(cfg[c]).identity:
            parts.append(f"{cfg[c]}" + (f" (ratio {cfg[r]:g})" if cfg.get(r) is not None else ""))
    return " + ".join(parts)


def settle_compression(cfg, flags, workers, elastic=False, source="the config"):
    """The algorithm/compressor pair a run uses, said out loud: returns ``(cfg, notes)``, the
    config to run and the lines to log.

    ``cfg`` is the merged config (defaults, then the ``--config`` file, then the flags) and
    ``flags`` the keys the command line set. Two combinations nobody named are resolved:

    - ``--algorithm`` changed the file's algorithm while its compressor came from the file: the
      compressor belonged to the file's algorithm. For ``sync`` it is dropped (synchronous SGD
      sends dense gradients unless ``--compressor`` says otherwise), for ``auto`` too (auto
      chooses the compression); for another algorithm it is kept, and a note says what the pair
      resolved to.
    - one worker (not elastic): there is nothing to send, so no compression is applied (a lossy
      compressor would only throw gradient away) and a note says so.
    """
    cfg, notes, keys = dict(cfg), [], set(cfg)   # a recipe without a second compressor gets none
    named = set(flags)
    algo = algorithm_class(cfg.get("algorithm") or "sync")
    own = {k: owners for k, owners in own_keys().items()
           if cfg.get(k) not in (None, []) and algo.name not in owners}
    if own:
        given = " and ".join("--" + k.replace("_", "-") for k in own)
        owners = " or ".join(sorted({o for v in own.values() for o in v}))
        raise UserError(f"{given} {'apply' if len(own) > 1 else 'applies'} to --algorithm {owners} only, and the "
                        f"algorithm is {cfg.get('algorithm')}; remove {given} or use --algorithm {owners}")
    lossy = _compression(cfg)
    if "algorithm" in named and lossy and not named & set(_COMPRESSION_KEYS):
        if algo.chooses_compression:
            period = "" if "period" in named or cfg.get("period") is None else f" and period {cfg['period']}"
            notes.append(f"--algorithm {algo.name}: the compressor {lossy}{period} from {source} belonged to its "
                         f"algorithm and {'are' if period else 'is'} dropped; {algo.name} chooses the compression "
                         "itself (--auto-ratios or --ratio, and --period, pin CSER's)")
            cfg.update(compressor="none", ratio=None, compressor2=None, ratio2=None,
                       **({"period": None} if period else {}))
        elif not algo.keeps_inherited_compressor:
            notes.append(f"--algorithm {algo.name}: the compressor {lossy} from {source} belonged to its algorithm "
                         "and is dropped, so it sends dense gradients (give --compressor to compress them)")
            cfg.update(compressor="none", ratio=None, compressor2=None, ratio2=None)
        else:
            notes.append(f"resolved to algorithm {cfg['algorithm']} (from --algorithm) with compressor {lossy} "
                         f"(from {source}); give --compressor none to send dense updates")
    if cfg.get("auto_ratios") and cfg.get("ratio") is not None:
        raise UserError("--ratio and --auto-ratios both pin auto's CSER ratios; give one of them (--ratio R for one, "
                        "--auto-ratios R ... for several)")
    lossy = _compression(cfg)
    if workers == 1 and not elastic and lossy:
        notes.append(f"one worker: nothing is communicated, so no compression is applied (compressor {lossy} "
                     "ignored)")
        cfg.update(compressor="none", ratio=None, compressor2=None, ratio2=None)
    return {k: v for k, v in cfg.items() if k in keys or k not in _COMPRESSION_KEYS}, notes
