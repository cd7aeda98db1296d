"""The configuration groups of distributed training that every recipe shares (see
``utils.runconfig``): the algorithm and its compression, and elastic training."""
import dataclasses

from ..utils.hosts import COMMIT_EVERY, RAMP_STEPS
from ..utils.runconfig import option
from ..utils.validate import choice_of, float_range, nonneg_int, positive_int, ratio
from ..utils.validate import ratio as _ratio   # the field ``ratio`` below hides the name in the class
from .auto import CANDIDATE_KINDS
from .compression import COMPRESSORS
from .factory import ALGORITHMS


@dataclasses.dataclass
class CompressionOptions:
    """How gradients travel (docs/distributed.md): ``algorithm`` with ``compressor`` at ``ratio``,
    and for the periodic algorithms (local, cser, local_adaalter) their ``period``; for ``auto``
    the target scaling factor, the candidates it chooses among and CSER's ratios it considers."""
    algorithm: str = option("sync", choice_of(ALGORITHMS, "algorithm"), help="sync, ef, local, cser, ...")
    compressor: str = option("none", choice_of(COMPRESSORS, "compressor"), help="none, fp16, grbs, ...")
    ratio: float = option(None, ratio, help="compression ratio (dense bytes / sent bytes)")
    period: int = option(None, positive_int, help="steps between resets or averages")
    target_sf: float = option(None, float_range(0, 1, low_open=True, what="a scaling factor"),
                              help="algorithm auto: the scaling factor its choice must reach (default 0.9)")
    auto_candidates: list = option(None, choice_of(CANDIDATE_KINDS, "auto candidate"), many=True,
                                   help="algorithm auto: the kinds it chooses among (default all)")
    auto_ratios: list = option(None, _ratio, many=True, help="algorithm auto: CSER's ratios R1 it considers")
    auto_periods: list = option(None, positive_int, many=True,
                                help="algorithm auto: CSER-PL's periods it considers (default H)")

    def auto_options(self):
        """The keyword arguments of ``DistributedTrainer`` for ``auto`` (None: its defaults)."""
        return {"target_sf": self.target_sf, "auto_candidates": self.auto_candidates, "auto_ratios": self.auto_ratios,
                "auto_periods": self.auto_periods}


@dataclasses.dataclass
class SecondCompressorOptions:
    """CSER's second compressor and the compressor's reach (the vision recipe's extra knobs)."""
    compressor2: str = option(None, choice_of(COMPRESSORS, "compressor"), help="CSER's reset compressor")
    ratio2: float = option(None, ratio, help="its ratio")
    min_size: int = option(0, nonneg_int, help="tensors smaller than this go uncompressed")
    compress_warmup: int = option(0, nonneg_int, help="first steps uncompressed")


@dataclasses.dataclass
class ElasticOptions:
    """Elastic training (docs/elastic.md): workers may join, leave or die; the rate follows the
    worker count over ``ramp_steps``; the job state is committed every ``commit_every`` steps."""
    elastic: bool = option(False, help="run under Horovod Elastic")
    ramp_steps: int = option(RAMP_STEPS, positive_int, help="steps over which the LR moves to a new worker count")
    commit_every: int = option(COMMIT_EVERY, positive_int, help="steps between commits of the job state")
    ref_workers: int = option(None, positive_int, help="worker count the rate is meant for (default: the start)")
