"""An algorithm and a compressor registered outside the package, as a user registers theirs in
their own module (docs/distributed.md, "Your own algorithm or compressor"): nothing in
gluon_suite names them. test_registry.py trains with both through ``DistributedTrainer`` and
through a training script's ``--algorithm``/``--compressor``
(``tests.distributed.plugin_algorithms:every_other``) on real Horovod workers."""
import dataclasses
import math

from gluon_suite.distributed import (Algorithm, AlgorithmOptions, Compressor, Payload, register_algorithm,
                                     register_compressor)
from gluon_suite.utils.runconfig import option
from gluon_suite.utils.validate import nonneg_int


@register_algorithm("every_other")
class EveryOtherSync(Algorithm):
    """Synchronous SGD every other step: on steps ``offset``, ``offset + 2``, ... the gradients are
    averaged over the workers (one allreduce per bucket); on the others each worker steps with its
    own gradient, so the workers' models differ between synchronised steps."""
    local_models = True
    candidate_kinds = ("every_other",)   # auto may choose it

    @classmethod
    def auto_candidates(cls, kind, plan):
        """One candidate for ``auto``: a cycle of a dense step and a step that sends nothing."""
        return [{"name": kind, "cycle": [1.0, math.inf], "messages": [1, 0], "algorithm": {"name": cls.name},
                 "flags": f"--algorithm {__name__}:{cls.name}"}]

    @dataclasses.dataclass
    class Options(AlgorithmOptions):
        """The step parity that synchronises."""
        offset: int = option(0, nonneg_int, help="the first step that averages the gradients")

    def __init__(self, offset=0):
        super().__init__()
        self.offset = int(offset)

    def reduce_gradients(self, step):
        if (step - self.offset) % 2 == 0 and self.comm.size > 1:
            for b in self.buckets:
                self.comm.allreduce_(b.grad, average=True, name=f"every_other.b{b.key}")

    def config(self):
        return {"name": self.name, "offset": self.offset}


@register_compressor("strided")
class Strided(Compressor):
    """Every ``ratio``-th coordinate of a tensor or bucket, from offset ``step % ratio``: every worker
    picks the same coordinates, so the payloads are summable (one allreduce)."""
    summable = True

    def __init__(self, ratio=2.0, **kw):
        super().__init__(ratio, **kw)

    def _compress(self, v, key, step):
        r = int(self.ratio)
        offset = step % r
        kept = v.reshape((-1,))[offset::r].copy()

        def add_to(target, tensors, alpha):
            flat = target.reshape((-1,))   # a view: the slice assignment writes into target
            flat[offset::r] += alpha * tensors[0].astype(target.dtype)
        return Payload([kept], add_to)
