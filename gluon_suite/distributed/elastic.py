"""Elastic training for MXNet/Gluon on Horovod's framework-neutral elastic core.

Horovod Elastic ships for TensorFlow and PyTorch only; ``horovod.common.elastic`` (``State``,
``run_fn``) is framework-neutral. This module adds what MXNet needs:

- ``GluonState``: commits and restores parameters, the ``DistributedTrainer``'s optimizer state,
  the algorithm's residuals, step count, the schedule, an ``ElasticSampler``'s position and any
  counters; ``sync()`` broadcasts all of it from rank 0 after every reset (a new worker starts
  from the current state). Before that, CSER folds each worker's residual into its model
  (``x - e`` is the common model) and error feedback drops its residual.
- ``ElasticSampler`` (``sampler.EpochSampler``): the epoch's shuffled order is fixed by (seed,
  epoch); after a resize the *remaining* samples are re-sharded over the new workers, so none is
  repeated or skipped.
- ``run(func)``: ``run_fn`` with the reset ``hvd.shutdown(); hvd.init()``, and MXNet's error for a
  dead peer ("Horovod has been shut down", raised from a collective or a later read) translated
  into ``HorovodInternalError`` so that the survivors restore the last commit instead of crashing.

The loop itself is ``loop.train_loop(elastic=True)``, the same one a fixed-size job runs.
The learning rate follows the worker count through ``ElasticRamp`` (``GluonState`` tells it the
new global batch on every reset). Launch with ``horovodrun --gloo --min-np/--max-np
--host-discovery-script ... --network-interface lo`` (see docs/elastic.md).
"""
import functools

import mxnet as mx
import numpy as np
from horovod.common.elastic import State, run_fn
from horovod.common.exceptions import HorovodInternalError

from .sampler import VIRTUAL_STEPS, over_epochs, progress_of  # noqa: F401  (first defined here)
from .sampler import EpochSampler as ElasticSampler  # noqa: F401  (the name it had here first)


def _require_shapes(net):
    """Raise a one-line UserError when a parameter of ``net`` has no data yet: deferred shapes
    (``Dense(64)`` before its first forward pass) or no ``initialize()``; the state copies every
    parameter, which needs its shape."""
    from ..utils.errors import UserError
    for name, p in net.collect_params().items():
        try:
            p.data()
        except mx.gluon.parameter.DeferredInitializationError:
            raise UserError(f"GluonState: parameter '{name}' has no shape yet (deferred, {p.shape}); run one "
                            "forward pass, net(x) with a batch, before creating the state") from None
        except RuntimeError:
            raise UserError(f"GluonState: parameter '{name}' is not initialised; call net.initialize() and run "
                            "one forward pass before creating the state") from None


class GluonState(State):
    """Elastic state of a Gluon training job: ``net``'s parameters, ``trainer`` (a
    ``DistributedTrainer``) state, ``sampler`` position and ``counters`` (JSON-ready values exposed
    as attributes, e.g. ``epoch``, ``step``). ``batch_size`` is per worker (used to tell an
    ``ElasticRamp`` schedule the new global batch)."""

    def __init__(self, net, trainer, sampler=None, batch_size=None, **counters):
        import horovod.mxnet as hvd
        _require_shapes(net)
        self._hvd, self.net, self.trainer, self.sampler = hvd, net, trainer, sampler
        self.batch_size = batch_size
        self._names = sorted(net.collect_params().keys())
        self._counters = dict(counters)
        for k, v in counters.items():
            setattr(self, k, v)
        self.resets = 0
        trainer.bind()  # the algorithm's per-worker state (residuals) exists from here on
        # the optimizer creates its state (momentum, moments) at a parameter's first update; a
        # worker that joins a running job has none yet: create them all now, so that every worker
        # holds the same list of arrays to broadcast
        trainer.create_optimizer_states()
        super().__init__(bcast_object=self._bcast_object_json, get_rank=hvd.rank)
        self.save()

    # JSON broadcast (never pickle): the State base uses it for host-update messages too. Names
    # are fixed (never numbered per reset): a worker that joins late must use the same names.
    def _bcast_object_json(self, obj):
        return self.trainer.communicator.broadcast_object(
            obj if not isinstance(obj, tuple) else list(obj), name="elastic.obj")

    def _schedule(self):
        return getattr(self.trainer.optimizer, "lr_scheduler", None)

    def _params(self):
        p = self.net.collect_params()
        return [p[n] for n in self._names]

    def _opt_arrays(self):
        """The optimizer's state arrays (the trainer's own, not copies), in one order everywhere."""
        arrays = self.trainer.state_dict()["arrays"]
        return [arrays[k] for k in sorted(arrays) if k.startswith("opt.")]

    def save(self):
        """Copy the current state (the commit point). Every operation already pushed runs first:
        MXNet skips an operation whose inputs carry a failed operation's error (a collective a dead
        peer broke), so copies pushed behind such a step would leave uninitialised memory as the
        commit. The wait raises that error instead (``run`` makes it a restore of the last good
        commit); it costs one pipeline drain per commit."""
        mx.nd.waitall()
        self._saved_params = [p.data().copy() for p in self._params()]
        trainer = self.trainer.state_dict()
        self._saved_arrays = {k: a.copy() for k, a in trainer["arrays"].items()}
        self._saved_meta = {"counters": {k: getattr(self, k) for k in self._counters},
                            "sampler": self.sampler.state_dict() if self.sampler else None,
                            "trainer": trainer["meta"]}

    def restore(self):
        """Go back to the last commit. A failed collective's error is first taken off the engine:
        until it is, MXNet skips every operation that writes an array the failed step touched, so
        the copies below would silently not happen, and a worker went on from uninitialised values
        (a survivor of a lost peer trained on NaN in about one such job in six)."""
        try:
            mx.nd.waitall()
        except mx.base.MXNetError:
            pass  # the peer's death, which is why we are restoring
        for p, a in zip(self._params(), self._saved_params):
            p.set_data(a.copy())
        self.trainer.load_state_dict({"meta": self._saved_meta["trainer"], "arrays": self._saved_arrays})
        self._apply_meta(self._saved_meta)

    def _apply_meta(self, meta):
        for k, v in meta["counters"].items():
            setattr(self, k, v)
        if self.sampler and meta["sampler"]:
            self.sampler.load_state_dict(meta["sampler"])

    def sync(self):
        """Make every worker hold rank 0's committed state (new workers included). Horovod calls
        this before the training function, outside ``run``'s translation: a peer that dies during
        it surfaces here as MXNet's "Horovod has been shut down", which becomes
        ``HorovodInternalError`` so that this worker restores the last commit and resets instead of
        exiting."""
        try:
            self._sync()
        except mx.base.MXNetError as exc:
            if "Horovod has been shut down" not in str(exc):
                raise
            raise _internal_error(exc) from None

    def _sync(self):
        comm = self._adopt_world()
        # per-worker algorithm state first: CSER folds its residual into the model (x - e is the
        # same everywhere), error feedback drops it; then rank 0's state goes to everyone
        self.trainer.algorithm.reset_for_resize()
        # the same list everywhere (optimizer states created up front); one collective per dtype
        comm.broadcast_many_([p.data() for p in self._params()] + self._opt_arrays(), 0,
                             name="elastic.state")
        for p in self._params():   # a worker on several devices: every copy takes the broadcast one
            if len(p.list_ctx()) > 1:
                p.set_data(p.data().copy())
        meta = comm.broadcast_object(self._saved_meta, name="elastic.meta")
        # rank 0's counts and schedule; the arrays were broadcast in place just now
        self.trainer.load_state_dict({"meta": meta["trainer"]}, source="rank 0's elastic state")
        self._apply_meta(meta)
        self._adopt_world()
        mx.nd.waitall()
        self._check_identical(comm)
        self.save()
        self.resets += 1

    def _check_identical(self, comm):
        """Compare a float64 fingerprint of every parameter across the workers (one allgather);
        a difference after the broadcast would be a bug, reported rather than trained on."""
        if comm.size == 1:
            return
        fp = mx.nd.stack(*[p.data().astype("float64").sum() for p in self._params()]).reshape((1, -1))
        rows = comm.allgather(fp, name="elastic.fingerprint").asnumpy()
        if not (rows == rows[:1]).all():
            bad = sorted({int(r) for r in np.nonzero((rows != rows[:1]).any(axis=1))[0]})
            from ..utils import GluonSuiteError
            raise GluonSuiteError(f"after the elastic reset the parameters of worker(s) {bad} differ from "
                                  "rank 0's; this is a bug: please report it with the job's output")

    def reset(self):
        """After Horovod re-initialised (before ``sync``, which Horovod skips when workers only
        left): take the new world over."""
        self._adopt_world()

    def _adopt_world(self):
        """Point the trainer at the current Horovod world, re-shard the sampler and tell the
        schedule the new global batch (idempotent)."""
        from .comm import HorovodCommunicator
        comm = HorovodCommunicator()
        self.trainer.set_communicator(comm)
        if self.sampler:
            self.sampler.reshard(comm.rank, comm.size)
        sched = self._schedule()
        if sched is not None and hasattr(sched, "set_global_batch") and self.batch_size:
            # the new batch applies from the next update on: that update is the ramp's first step
            sched.set_global_batch(self.batch_size * comm.size, self.trainer.optimizer.num_update + 1)
        return comm


def _internal_error(exc):
    """MXNet's error for a dead peer as Horovod's ``HorovodInternalError`` (restore, then reset),
    its message on one line."""
    return HorovodInternalError(" ".join(str(exc).split())[:300])


def _reset():
    """Horovod's reset, ``hvd.shutdown(); hvd.init()``, once MXNet's engine has run every operation
    already pushed. MXNet runs Horovod's collectives asynchronously: a step's allreduce may still be
    queued when a host update interrupts the commit that follows it, and shutting Horovod down under
    a queued collective crashes the worker (SIGSEGV/SIGABRT, seen about once in 20 added-worker
    runs on a loaded machine)."""
    import horovod.mxnet as hvd
    try:
        mx.nd.waitall()
    except mx.base.MXNetError:
        pass  # a collective that failed because a peer died: the state is restored from the commit
    hvd.shutdown()
    hvd.init()


def run(func):
    """Decorator: run ``func(state, ...)`` elastically (see the module docstring)."""
    @functools.wraps(func)
    def translated(state, *args, **kwargs):
        try:
            return func(state, *args, **kwargs)
        except mx.base.MXNetError as exc:
            # a peer died: MXNet surfaces Horovod's shutdown as its own error
            raise _internal_error(exc) from None
    return run_fn(translated, _reset)


def train_elastic(net, trainer, num_samples, batch_size, epochs, train_step, end_epoch=None,
                  seed=0, commit_every=20, max_steps=None, counters=None, sampler=None, start=None):
    """``loop.train_loop`` under Horovod Elastic over an ``ElasticSampler(num_samples, seed)`` (or
    the ``sampler`` given, e.g. one a schedule of ``progress_of(sampler)`` was built on); returns
    the ``GluonState``. See ``train_loop`` for the arguments."""
    from .loop import train_loop
    return train_loop(net, trainer, sampler or ElasticSampler(num_samples, seed=seed), batch_size, epochs,
                      train_step, end_epoch, commit_every=commit_every, max_steps=max_steps, counters=counters,
                      start=start, elastic=True)
