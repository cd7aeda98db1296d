"""Elastic training for MXNet/Gluon on Horovod's framework-neutral elastic core.

Horovod Elastic ships for TensorFlow and PyTorch only; ``horovod.common.elastic`` (``State``,
``run_fn``) is framework-neutral. This module adds what MXNet needs:

- ``GluonState``: commits and restores parameters, the ``DistributedTrainer``'s optimizer state,
  the algorithm's residuals, step count, the schedule, an ``ElasticSampler``'s position and any
  counters, each through a handler (``state_handlers.py``), as Horovod's own states are built;
  ``sync()`` broadcasts all of it from rank 0 after every reset (a new worker starts from the
  current state). Before that, the algorithm's resize event runs: CSER folds each worker's
  residual into its model (``x - e`` is the common model) and error feedback drops its residual.
- ``ElasticSampler`` (``sampler.EpochSampler``): the epoch's shuffled order is fixed by (seed,
  epoch); after a resize the *remaining* samples are re-sharded over the new workers, so none is
  repeated or skipped.
- ``run(func)``: ``run_fn`` with the reset ``hvd.shutdown(); hvd.init()``, and MXNet's error for a
  dead peer ("Horovod has been shut down", raised from a collective or a later read) translated
  into ``HorovodInternalError`` so that the survivors restore the last commit instead of crashing.

The loop itself is ``loop.train_loop(elastic=True)`` (or ``loop.train_elastic``), the same one a
fixed-size job runs. The learning rate follows the worker count through ``ElasticRamp``
(``GluonState``'s reset callback tells it the new global batch on every reset). Launch with ``horovodrun --gloo --min-np/--max-np
--host-discovery-script ... --network-interface lo`` (see docs/elastic.md).
"""
import functools
import os
import socket
import sys
import time

import mxnet as mx
import numpy as np
from horovod.common.elastic import State, run_fn
from horovod.common.exceptions import HorovodInternalError

from .sampler import VIRTUAL_STEPS, over_epochs, progress_of  # noqa: F401  (first defined here)
from .sampler import EpochSampler as ElasticSampler  # noqa: F401  (the name it had here first)
from ..utils.env import env
from .state_handlers import CountersHandler, ParametersHandler, SamplerHandler, TrainerHandler, ramp_callback

EXIT_CUT_OFF = 75          # EX_TEMPFAIL: the worker left the job, cut off from the rendezvous server
RENDEZVOUS_TRIES, RENDEZVOUS_WAIT_S = 5, 1.0


class GluonState(State):
    """Elastic state of a Gluon training job, made of handlers (``state_handlers.py``): ``net``'s
    parameters, ``trainer`` (a ``DistributedTrainer``: optimizer state, the algorithm's residuals
    and its resize event, counts, schedule), the ``sampler`` position and ``counters`` (JSON-ready
    values exposed as attributes, e.g. ``epoch``, ``step``); ``handlers`` adds parts of your own.
    The learning-rate ramp is a reset callback (``ramp_callback``: ``batch_size`` is per worker);
    ``reset_callbacks`` adds more (Horovod's ``register_reset_callbacks``); each runs after every
    reset and every sync."""

    def __init__(self, net, trainer, sampler=None, batch_size=None, handlers=(), reset_callbacks=(), **counters):
        import horovod.mxnet as hvd
        self._hvd, self.net, self.trainer, self.sampler = hvd, net, trainer, sampler
        self.batch_size = batch_size
        self._params_handler = ParametersHandler(net)
        self.handlers = [self._params_handler, TrainerHandler(trainer)]
        self.handlers += [SamplerHandler(sampler)] if sampler is not None else []
        self.handlers += [CountersHandler(self, counters), *handlers]
        self.resets = 0
        super().__init__(bcast_object=self._bcast_object_json, get_rank=hvd.rank)
        self.register_reset_callbacks([ramp_callback(trainer, batch_size), *reset_callbacks])
        self.save()

    # JSON broadcast (never pickle): the State base uses it for host-update messages too. Names
    # are fixed (never numbered per reset): a worker that joins late must use the same names.
    def _bcast_object_json(self, obj):
        return self.trainer.communicator.broadcast_object(
            obj if not isinstance(obj, tuple) else list(obj), name="elastic.obj")

    def _params(self):
        return self._params_handler.params()

    def save(self):
        """Copy the current state (the commit point). Every operation already pushed runs first:
        MXNet skips an operation whose inputs carry a failed operation's error (a collective a dead
        peer broke), so copies pushed behind such a step would leave uninitialised memory as the
        commit. The wait raises that error instead (``run`` makes it a restore of the last good
        commit); it costs one pipeline drain per commit."""
        mx.nd.waitall()
        for h in self.handlers:
            h.save()

    def restore(self):
        """Go back to the last commit. A failed collective's error is first taken off the engine:
        until it is, MXNet skips every operation that writes an array the failed step touched, so
        the copies below would silently not happen, and a worker went on from uninitialised values
        (a survivor of a lost peer trained on NaN in about one such job in six)."""
        try:
            mx.nd.waitall()
        except mx.base.MXNetError:
            pass  # the peer's death, which is why we are restoring
        for h in self.handlers:
            h.restore()

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
        # the resize event first: CSER folds its residual into the model (x - e is the same
        # everywhere), error feedback drops it; then rank 0's state goes to everyone
        for h in self.handlers:
            h.before_sync()
        # the same list everywhere (optimizer states created up front); one collective per dtype
        comm.broadcast_many_([a for h in self.handlers for a in h.arrays()], 0, name="elastic.state")
        for h in self.handlers:
            h.after_broadcast()
        metas = comm.broadcast_object([h.meta() for h in self.handlers], name="elastic.meta")
        for h, meta in zip(self.handlers, metas):
            h.load_meta(meta)
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
        left): take the new world over (the reset callbacks follow, from ``on_reset``)."""
        self._adopt_world(callbacks=False)

    def _adopt_world(self, callbacks=True):
        """Point every handler at the current Horovod world (the trainer's communicator, the
        sampler's shards) and, unless Horovod calls them next, run the reset callbacks (the rate
        ramp); idempotent."""
        from .comm import HorovodCommunicator
        comm = HorovodCommunicator()
        for h in self.handlers:
            h.set_world(comm)
        for callback in self._reset_callbacks if callbacks else ():
            callback()
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
    leave_if_cut_off()
    hvd.init()


def leave_if_cut_off(environ=None, tries=RENDEZVOUS_TRIES, wait_s=RENDEZVOUS_WAIT_S,
                     connect=socket.create_connection, sleep=time.sleep, leave=os._exit):
    """Before a reset's ``hvd.init()``: leave the job cleanly if the rendezvous server cannot be
    reached. Horovod's Gloo rendezvous client gives up after three tries half a second apart and
    then ends the process natively (an uncaught C++ error: "terminate called", SIGABRT); a worker
    that a network fault has cut off from the server (``HOROVOD_GLOO_RENDEZVOUS_ADDR``/``_PORT``,
    set by horovodrun) would die that way in its reset. This tries a TCP connection to the server
    ``tries`` times, each waiting up to ``wait_s`` and ``wait_s`` apart; when none succeeds it
    writes one line to stderr and exits with status ``EXIT_CUT_OFF`` (75). Horovod's driver treats
    the host as failed, as it would the abort, and the other workers go on from the last commit;
    the host can be added back later under another name. Outside an elastic horovodrun job (no
    server named) it does nothing."""
    addr = env("HOROVOD_GLOO_RENDEZVOUS_ADDR", environ)
    port = env("HOROVOD_GLOO_RENDEZVOUS_PORT", environ)
    if not addr or not port:
        return
    last = None
    for attempt in range(tries):
        try:
            connect((addr, int(port)), timeout=wait_s).close()
            return
        except (OSError, ValueError) as exc:
            last = exc
            if attempt + 1 < tries:
                sleep(wait_s)
    sys.stderr.write(f"gluon-suite elastic: this worker cannot reach the rendezvous server {addr}:{port} "
                     f"({tries} tries, {last}); it leaves the job and the others go on from the last commit\n")
    sys.stderr.flush()
    leave(EXIT_CUT_OFF)


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
