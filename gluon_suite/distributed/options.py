"""The configuration groups of distributed training that every recipe shares (see
``utils.runconfig``): the algorithm and its compression, and elastic training."""
import dataclasses

from ..utils.hosts import COMMIT_EVERY, RAMP_STEPS
from ..utils.runconfig import option
from ..utils.validate import choice_of, float_range, nonneg_int, positive_int, ratio
from ..utils.validate import ratio as _ratio   # the field ``ratio`` below hides the name in the class
from .auto import CANDIDATE_KINDS, CSER_RATIOS
from .compression import COMPRESSORS
from .registry import ALGORITHMS
from .settle import algorithm_from_config, settle_compression

# the help groups of the flags (utils.flags)
AUTO_GROUP = "algorithm auto (docs/distributed.md, 'Letting the trainer choose')"
ELASTIC_GROUP = "elastic (launch with gluon-suite launch --min-np/--max-np, see docs/elastic.md)"


@dataclasses.dataclass
class CompressionOptions:
    """How gradients travel (docs/distributed.md): ``algorithm`` with ``compressor`` at ``ratio``,
    and for the periodic algorithms (local, cser, local_adaalter) their ``period``; for ``auto``
    the target scaling factor, the candidates it chooses among and CSER's ratios it considers."""
    algorithm: str = option("sync", ALGORITHMS.checker(),
                            help="sync, ef, local, cser, local_adaalter or auto")
    compressor: str = option("none", COMPRESSORS.checker(),
                             help="none, zero, fp16, grbs, randomk, topk or sign")
    ratio: float = option(None, ratio, help="compression ratio (dense bytes / sent bytes)")
    period: int = option(None, positive_int, help="steps between resets or averages")
    target_sf: float = option(None, float_range(0, 1, low_open=True, what="a scaling factor"), group=AUTO_GROUP,
                              help="the scaling factor the choice must reach (default 0.9)")
    auto_candidates: list = option(None, choice_of(CANDIDATE_KINDS, "auto candidate"), many=True, metavar="KIND",
                                   group=AUTO_GROUP, help=f"the kinds to choose among, of {', '.join(CANDIDATE_KINDS)} "
                                   "(default all)")
    auto_ratios: list = option(None, _ratio, many=True, metavar="R", group=AUTO_GROUP,
                               help=f"CSER's ratios R1 to consider (default {' '.join(f'{r:g}' for r in CSER_RATIOS)})")
    auto_periods: list = option(None, positive_int, many=True, metavar="H", group=AUTO_GROUP,
                                help="CSER-PL's periods to consider (default --period alone, itself 8 by default)")

    def settle_compression(self, workers):
        """``(settled config dict, notes)``: ``settle.settle_compression`` of this configuration for
        ``workers`` workers (``utils.runconfig.RecipeConfig.checked`` calls it)."""
        return settle_compression(self.to_dict(), self.flags, workers, elastic=bool(self.get("elastic")),
                                  source=self.origin)

    def algorithm_object(self):
        """The algorithm this configuration names, built from its options (``algorithm_from_config``)."""
        return algorithm_from_config(self)

    def auto_options(self):
        """The keyword arguments of ``DistributedTrainer`` for ``auto`` (None: its defaults)."""
        return {"target_sf": self.target_sf, "auto_candidates": self.auto_candidates, "auto_ratios": self.auto_ratios,
                "auto_periods": self.auto_periods}


@dataclasses.dataclass
class SecondCompressorOptions:
    """CSER's second compressor and the compressor's reach (the vision recipe's extra knobs)."""
    compressor2: str = option(None, COMPRESSORS.checker(),
                              help="CSER's reset compressor (default: derived)")
    ratio2: float = option(None, ratio, help="its ratio")
    min_size: int = option(0, nonneg_int, help="tensors smaller than this go uncompressed")
    compress_warmup: int = option(0, nonneg_int, help="first steps uncompressed")


@dataclasses.dataclass
class ElasticOptions:
    """Elastic training (docs/elastic.md): workers may join, leave or die; the rate follows the
    worker count over ``ramp_steps``; the job state is committed every ``commit_every`` steps."""
    elastic: bool = option(False, group=ELASTIC_GROUP,
                           help="workers may join, leave or die; the LR follows the worker count smoothly")
    ramp_steps: int = option(RAMP_STEPS, positive_int, group=ELASTIC_GROUP,
                             help="steps over which the LR moves to a new worker count")
    commit_every: int = option(COMMIT_EVERY, positive_int, group=ELASTIC_GROUP,
                               help="steps between commits of the job state")
    ref_workers: int = option(None, positive_int, group=ELASTIC_GROUP,
                              help="worker count the learning rate is meant for (default: the count the job "
                              "starts with)")
