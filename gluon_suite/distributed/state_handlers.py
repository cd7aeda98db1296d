"""The parts of a training job's state, each saved, restored and shared by a handler of its own
(``GluonState`` in ``elastic.py`` and ``FixedState`` in ``loop.py`` are lists of them), and the
learning-rate ramp as a reset callback.

A handler knows one thing: ``save()`` copies it (the commit point), ``restore()`` goes back to
that copy, ``arrays()`` lists the NDArrays that rank 0 broadcasts in place when the world changes,
``meta()``/``load_meta()`` carry the JSON part of the committed copy from rank 0 to everyone,
``before_sync()`` is the event that comes before the broadcast (the algorithm's resize event),
``after_broadcast()`` the one after, and ``set_world(comm)`` points the part at a new world. No
Horovod import here: a fixed world uses the same handlers."""
import mxnet as mx

from ..utils.errors import UserError


class StateHandler:
    """A part of the job's state (see the module docstring); every method does nothing by default."""

    def save(self):
        """Copy the current value: the commit point."""

    def restore(self):
        """Go back to the last ``save()``."""

    def arrays(self):
        """The NDArrays rank 0 broadcasts in place on a change of the world."""
        return []

    def meta(self):
        """The JSON-ready part of the last commit."""
        return None

    def load_meta(self, meta):
        """Take ``meta`` (rank 0's ``meta()``)."""

    def before_sync(self):
        """The world changed: bring per-worker state to a form every worker can share."""

    def after_broadcast(self):
        """The arrays now hold rank 0's values."""

    def set_world(self, comm):
        """Work in the world of ``comm`` from now on."""


def require_shapes(net, who="GluonState"):
    """Raise a one-line UserError when a parameter of ``net`` has no data yet: deferred shapes
    (``Dense(64)`` before its first forward pass) or no ``initialize()``; a state copies every
    parameter, which needs its shape."""
    for name, p in net.collect_params().items():
        try:
            p.data()
        except mx.gluon.parameter.DeferredInitializationError:
            raise UserError(f"{who}: parameter '{name}' has no shape yet (deferred, {p.shape}); run one "
                            "forward pass, net(x) with a batch, before creating the state") from None
        except RuntimeError:
            raise UserError(f"{who}: parameter '{name}' is not initialised; call net.initialize() and run "
                            "one forward pass before creating the state") from None


class ParametersHandler(StateHandler):
    """``net``'s parameters, in the order of their names (the same on every worker)."""

    def __init__(self, net):
        require_shapes(net)
        self.net = net
        self._names = sorted(net.collect_params().keys())
        self._saved = None

    def params(self):
        """The parameters, in the handler's order."""
        p = self.net.collect_params()
        return [p[n] for n in self._names]

    def save(self):
        self._saved = [p.data().copy() for p in self.params()]

    def restore(self):
        for p, a in zip(self.params(), self._saved):
            p.set_data(a.copy())

    def arrays(self):
        return [p.data() for p in self.params()]

    def after_broadcast(self):
        for p in self.params():   # a worker on several devices: every copy takes the broadcast one
            if len(p.list_ctx()) > 1:
                p.set_data(p.data().copy())


class TrainerHandler(StateHandler):
    """A ``DistributedTrainer``'s public state: optimizer arrays (created up front, so that every
    worker, one that joins a running job included, holds the same list), the algorithm's
    per-worker state, counts, rate and schedule. The algorithm's resize event
    (``reset_for_resize``) comes before every sync."""

    def __init__(self, trainer):
        self.trainer = trainer
        trainer.bind()  # the algorithm's per-worker state (residuals) exists from here on
        trainer.create_optimizer_states()
        self._arrays, self._meta = None, None

    def save(self):
        state = self.trainer.state_dict()
        self._arrays = {k: a.copy() for k, a in state["arrays"].items()}
        self._meta = state["meta"]

    def restore(self):
        self.trainer.load_state_dict({"meta": self._meta, "arrays": self._arrays})

    def arrays(self):
        live = self.trainer.state_dict()["arrays"]   # the trainer's own arrays, not copies
        return [live[k] for k in sorted(live) if k.startswith("opt.")]

    def meta(self):
        return self._meta

    def load_meta(self, meta):
        # rank 0's counts and schedule; the arrays were broadcast in place
        self.trainer.load_state_dict({"meta": meta}, source="rank 0's elastic state")

    def before_sync(self):
        self.trainer.algorithm.reset_for_resize()

    def set_world(self, comm):
        self.trainer.set_communicator(comm)


class SamplerHandler(StateHandler):
    """An ``EpochSampler``'s position; a new world re-shards the rest of the epoch over it."""

    def __init__(self, sampler):
        self.sampler = sampler
        self._saved = None

    def save(self):
        self._saved = self.sampler.state_dict()

    def restore(self):
        self.load_meta(self._saved)

    def meta(self):
        return self._saved

    def load_meta(self, meta):
        if meta:
            self.sampler.load_state_dict(meta)

    def set_world(self, comm):
        self.sampler.reshard(comm.rank, comm.size)


class CountersHandler(StateHandler):
    """JSON-ready counters kept as attributes of ``owner`` (``epoch``, ``step``, ...)."""

    def __init__(self, owner, counters):
        self.owner, self.names = owner, list(counters)
        for k, v in counters.items():
            setattr(owner, k, v)
        self._saved = None

    def save(self):
        self._saved = {k: getattr(self.owner, k) for k in self.names}

    def restore(self):
        self.load_meta(self._saved)

    def meta(self):
        return self._saved

    def load_meta(self, meta):
        for k, v in (meta or {}).items():
            setattr(self.owner, k, v)


def ramp_callback(trainer, batch_size):
    """A reset callback: tell the trainer's schedule, when it follows the worker count (an
    ``ElasticRamp``), the new global batch ``batch_size`` x workers, from the next update on (that
    update is the ramp's first step). Idempotent: safe to call after every reset and sync."""
    def tell_schedule():
        sched = getattr(trainer.optimizer, "lr_scheduler", None)
        if sched is not None and hasattr(sched, "set_global_batch") and batch_size:
            sched.set_global_batch(batch_size * trainer.communicator.size, trainer.optimizer.num_update + 1)
    return tell_schedule
