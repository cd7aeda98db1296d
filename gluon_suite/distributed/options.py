"""The configuration groups of distributed training that every recipe shares (see
``utils.runconfig``): the algorithm and its compression, and elastic training."""
import dataclasses

from ..utils.hosts import COMMIT_EVERY, RAMP_STEPS
from ..utils.runconfig import option
from ..utils.validate import nonneg_int, positive_int, ratio
from .auto import CANDIDATE_KINDS, CSER_RATIOS, AutoOptions
from .compression import COMPRESSORS
from .registry import ALGORITHMS
from .settle import algorithm_from_config, settle_compression

def algorithm_option(options_cls, name, help=None, **flag):
    """A configuration field for the option ``name`` of a registered algorithm's ``options_cls``:
    its check, list-ness and help (``help`` rewords it for the flag), default None (the
    algorithm's own default applies), and the flag settings ``flag``. The config key is the
    option's ``key`` (``auto_candidates`` for auto's ``candidates``)."""
    f = options_cls.__dataclass_fields__[name]
    return option(None, f.metadata["type"], many=f.metadata["many"], help=help or f.metadata["help"], **flag)


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
                             help="none, zero, fp16, bf16, grbs, randomk, topk or sign")
    ratio: float = option(None, ratio, help="compression ratio (dense bytes / sent bytes)")
    period: int = option(None, positive_int, help="steps between resets or averages")
    # auto's options, declared by its registered Options (their checks and help), as config keys
    target_sf: float = algorithm_option(AutoOptions, "target_sf", group=AUTO_GROUP)
    auto_candidates: list = algorithm_option(AutoOptions, "candidates", metavar="KIND", group=AUTO_GROUP,
                                             help=f"the kinds to choose among, of {', '.join(CANDIDATE_KINDS)} "
                                             "(default all)")
    auto_ratios: list = algorithm_option(AutoOptions, "cser_ratios", metavar="R", group=AUTO_GROUP,
                                         help=f"CSER's ratios R1 to consider (default "
                                         f"{' '.join(f'{r:g}' for r in CSER_RATIOS)})")
    auto_periods: list = algorithm_option(AutoOptions, "pl_periods", metavar="H", group=AUTO_GROUP,
                                          help="CSER-PL's periods to consider (default --period alone, itself 8 "
                                          "by default)")

    def settle_compression(self, workers):
        """``(settled config dict, notes)``: ``settle.settle_compression`` of this configuration for
        ``workers`` workers (``utils.runconfig.RecipeConfig.checked`` calls it)."""
        return settle_compression(self.to_dict(), self.flags, workers, elastic=bool(self.get("elastic")),
                                  source=self.origin)

    def algorithm_object(self):
        """The algorithm this configuration names, built from its options (``algorithm_from_config``)."""
        return algorithm_from_config(self)


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
