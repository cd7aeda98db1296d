"""The contract of a synchronisation algorithm (``Algorithm``), what a payload's collective looks
like in flight (``Exchange``, ``sync_payload``), and the options every algorithm takes.

An algorithm registers under a name (``registry.register_algorithm``) with an ``Options``
dataclass, works on the trainer's buckets (``buckets.py``) and sees two moments of a training
step in ``DistributedTrainer``: ``reduce_gradients`` (after backward, before the optimizer) and
``after_update`` (after the local optimizer update, with the weights from before it). The trainer
and the recipes never ask an algorithm for its name: they ask what it can do (the capabilities
and events below; docs/distributed.md, "Your own algorithm or compressor").
"""
import inspect

import numpy as np

from .buckets import DEFAULT_BUCKET_MB, layout_buckets
from .registry import ALGORITHMS, AlgorithmOptions

__all__ = ["Algorithm", "AlgorithmOptions", "Exchange", "sync_payload", "check_period"]


class Exchange:
    """A payload's collective in flight: ``add_to(target, alpha)`` performs
    ``target += alpha * allreduce_mean(C(v))`` once the averaged (summable) or gathered payloads
    are there. ``arrays`` are the collective's results."""

    def __init__(self, payload, arrays, workers):
        self.payload, self.arrays, self.workers = payload, arrays, workers

    def add_to(self, target, alpha=1.0):
        """``target += alpha * allreduce_mean(C(v))`` in place."""
        if not self.arrays:
            return
        if self.payload.summable:
            self.payload.add_to(target, self.arrays, alpha)
        else:
            self.payload.add_gathered(target, self.arrays, self.workers, alpha / self.workers)


def sync_payload(comm, payload, name):
    """Start the collective of ``payload``: allreduce (mean) of a summable payload, allgather of a
    gathered one (one call per payload tensor), and return the ``Exchange``."""
    if not payload.tensors:
        return Exchange(payload, [], comm.size)
    if payload.summable:   # float16 payloads are summed in float32 (Communicator.allreduce_half)
        arrays = [comm.allreduce_half(t, name=f"{name}.{j}") if t.dtype == np.float16 else
                  comm.allreduce(t, average=True, name=f"{name}.{j}") for j, t in enumerate(payload.tensors)]
    else:
        arrays = [comm.allgather(t, name=f"{name}.{j}") for j, t in enumerate(payload.tensors)]
    return Exchange(payload, arrays, comm.size)


class Algorithm:
    """Base class: no communication. What an algorithm declares (class attributes, or properties
    where they depend on the options):

    - ``needs_update``: the trainer keeps the weights from before the optimizer update
      (``snapshot``: one flat vector per bucket) for ``after_update``;
    - ``local_models``: workers' models may differ between synchronisations;
    - ``gradients_identical``: after ``reduce_gradients`` every worker holds the same gradients
      (one model: nothing else needs to agree, e.g. on a loss scaler's overflow);
    - ``requires_summable``: gathered compressors are rejected;
    - ``state_kinds``: per-bucket state vectors (residuals) kept as attributes;
    - ``chooses_compression``: the algorithm picks its compressors itself (a config's compressor
      is dropped for it); ``keeps_inherited_compressor``: a compressor that a config file named
      for another algorithm still applies when the command line switches to this one;
    - ``candidate_kinds`` and ``auto_candidates(kind, plan)``: what it offers ``auto``.

    Events the trainer sends: ``allow_master_weights()`` (float16 weights with float32 master
    copies), ``restore(config)`` (a checkpoint's ``config()``, before its state arrays),
    ``reset_for_resize()`` (an elastic job's new world); ``wants_optimizer_average`` set by the
    algorithm asks the trainer to average the optimizer states after this step."""

    name = "base"
    Options = AlgorithmOptions
    needs_update = False
    local_models = False
    gradients_identical = False
    local_between_resets = False   # CSER with C1 = zero: nothing sent between resets (CSER-PL)
    requires_summable = False
    state_kinds = ()
    chooses_compression = False
    keeps_inherited_compressor = True
    candidate_kinds = ()
    wants_optimizer_average = False
    finite_flags = None   # {bucket key: (1,) float32 flag} of the last reduction (take_finite_flags)

    @classmethod
    def from_options(cls, opts):
        """Build from an ``Options`` instance; the default passes the fields that the constructor
        takes as keywords (all of them to a constructor with ``**kwargs``)."""
        params = inspect.signature(cls.__init__).parameters
        every = any(p.kind is p.VAR_KEYWORD for p in params.values())
        return cls(**{f: getattr(opts, f) for f in opts.__dataclass_fields__ if every or f in params})

    @classmethod
    def auto_candidates(cls, kind, plan):
        """The candidates of ``kind`` (one of ``candidate_kinds``) for ``auto``'s choice, given
        ``plan`` (``costmodel.CandidatePlan``): ``[{'name', 'cycle', 'messages', 'algorithm',
        'flags'}]`` (``costmodel.candidate_list`` says what each key holds)."""
        return []

    def suggested_warmup_epochs(self, lr, epochs=None):
        """The learning-rate warm-up, in epochs, that this algorithm suggests for a recipe's
        ``--warmup-epochs auto`` at peak rate ``lr`` in a run of ``epochs`` epochs: 1 by default."""
        return 1.0

    def allow_master_weights(self):
        """The optimizer writes the weights from float32 master copies (float16 weights): whether
        this algorithm can work so. One that changes the weights after the update cannot (the next
        step would undo it); one that chooses may narrow its choices and say yes."""
        return not (self.needs_update or self.local_models)

    def take_finite_flags(self):
        """What the last ``reduce_gradients`` learnt in passing of its reduced gradients:
        ``{bucket key: (1,) float32 NDArray}``, 1.0 when every value of that bucket's gradient is
        finite (sync's float16 cast on the compiled path, in a job of one worker). Taken once: a
        second call, or one after the update, returns {}; the loss scaler checks the buckets
        without a flag itself."""
        flags, self.finite_flags = self.finite_flags or {}, None
        return flags

    def restore(self, config):
        """A checkpoint's ``config()`` of this algorithm, before its state arrays are loaded."""

    def __init__(self):
        self.comm = None
        self.params = []
        self.buckets = []

    @property
    def compressors(self):
        """The compressors this algorithm applies."""
        return []

    def bind(self, params, comm, bucket_mb=DEFAULT_BUCKET_MB, network_position=None):
        """Attach the trainer's ``[(index, Parameter)]`` with gradients and the communicator; lay
        the parameters out in buckets (reverse network order: ``network_position[index]``) and
        point their gradients into them."""
        self.params, self.comm = params, comm
        min_size = max([c.min_size for c in self.compressors] + [0])
        self.buckets = layout_buckets(params, bucket_mb, min_size=min_size,
                                      network_position=network_position)
        for b in self.buckets:
            b.bind_gradients()
        for kind in self.state_kinds:
            setattr(self, kind, [b.zeros() for b in self.buckets])
        self._where = {i: (k, j) for k, b in enumerate(self.buckets) for j, i in enumerate(b.indices)}

    def adopt(self, other):
        """Continue from ``other``'s binding: the same parameters, communicator and buckets (their
        gradients stay where backward writes them); this algorithm's per-bucket state starts at
        zero. The layouts must agree (the same compressors' ``min_size``)."""
        self.params, self.comm, self.buckets = other.params, other.comm, other.buckets
        for kind in self.state_kinds:
            setattr(self, kind, [b.zeros() for b in self.buckets])
        self._where = other._where

    def snapshot(self):
        """The weights of every bucket, concatenated (one flat copy per bucket, in the bucket's
        work vector 'before': valid until the next snapshot)."""
        return [b.gather_weights("before") for b in self.buckets]

    def view(self, kind, index):
        """Parameter ``index``'s view (shared memory) of the per-bucket state ``kind``."""
        k, j = self._where[index]
        return self.buckets[k].views(getattr(self, kind)[k])[j]

    def reduce_gradients(self, step):
        """Called after backward, before the optimizer update (``step`` counts from 0)."""

    def after_update(self, before, step):
        """Called after the optimizer update; ``before[k]`` holds bucket k's weights before it."""

    def check_optimizer(self, optimizer):
        """Raise ValueError when the algorithm cannot work with ``optimizer``."""

    def owns_update(self, step):
        """True when the algorithm, not the optimizer, updates the weights at ``step``."""
        return False

    def local_update(self, optimizer, updater, step):
        """The algorithm's own update, called instead of the optimizer's when ``owns_update``:
        the trainer hands over its ``optimizer`` (rates, counts) and ``updater`` (which holds the
        optimizer's per-parameter states)."""

    def state_arrays(self):
        """Per-worker state to checkpoint, as ``{'<kind>.b<bucket>': flat NDArray}``."""
        return {f"{kind}.b{k}": v for kind in self.state_kinds for k, v in enumerate(getattr(self, kind))}

    def load_state_arrays(self, arrays):
        """Restore per-worker state given per parameter, ``{'<kind>.<index>': NDArray}`` (the
        trainer splits saved buckets into parameters, so any bucket layout can be read)."""
        for kind in self.state_kinds:
            for b, flat in zip(self.buckets, getattr(self, kind)):
                flat[:] = b.gather([arrays[f"{kind}.{i}"].as_in_context(b.context) for i in b.indices])

    def reset_for_resize(self):
        """Elastic resize: bring this worker's state to a form every worker can share before the
        parameters are broadcast from rank 0. Default: per-worker state restarts from zero."""
        for arr in self.state_arrays().values():
            arr[:] = 0

    def config(self):
        """Hyper-parameters as a JSON-ready dict."""
        return {"name": self.name}

    def _check(self, compressor, role):
        """Reject a gathered ``compressor`` where the algorithm needs allreduce-summable ones."""
        if self.requires_summable and not compressor.summable:
            raise ValueError(
                f"algorithm {self.name!r} needs an allreduce-summable {role} compressor, but "
                f"{compressor.name!r} goes through allgather; choose one of: none, fp16, grbs, randomk")

    def _average_models(self, name):
        """Every bucket's weights <- their mean over workers (one collective per bucket)."""
        flats = self.snapshot()
        self.comm.grouped_allreduce_(flats, average=True, name=name)
        for b, flat in zip(self.buckets, flats):
            b.scatter(flat, b.weights())


ALGORITHMS.base = Algorithm


def check_period(period):
    """``period`` as an int >= 1 (an integral float is accepted); ValueError otherwise."""
    if isinstance(period, bool) or not (isinstance(period, int) or float(period).is_integer()) or int(period) < 1:
        raise ValueError(f"period must be an integer >= 1 (steps between synchronisations), got {period}")
    return int(period)
