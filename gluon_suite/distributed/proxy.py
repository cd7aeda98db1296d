"""``Delegating``: an algorithm that runs another one and can change it during training (``auto``
is one). Everything the trainer asks of an algorithm, capabilities and per-step work alike, goes
to the current one, ``_inner``, so that a choice settled on sync costs what sync costs."""
from .base import Algorithm


class Delegating(Algorithm):
    """The base of an algorithm that runs ``_inner`` (set by the subclass) and may switch it."""

    current = property(lambda self: self._inner, doc="The algorithm running now.")
    needs_update = property(lambda self: self._inner.needs_update)
    local_models = property(lambda self: self._inner.local_models)
    gradients_identical = property(lambda self: self._inner.gradients_identical)
    local_between_resets = property(lambda self: self._inner.local_between_resets)
    requires_summable = property(lambda self: self._inner.requires_summable)
    state_kinds = property(lambda self: self._inner.state_kinds)
    compressors = property(lambda self: self._inner.compressors)
    params = property(lambda self: self._inner.params)
    buckets = property(lambda self: self._inner.buckets)

    @property
    def comm(self):
        """The current algorithm's communicator."""
        return self._inner.comm

    @comm.setter
    def comm(self, comm):
        self._inner.comm = comm

    def snapshot(self):
        return self._inner.snapshot()

    def view(self, kind, index):
        return self._inner.view(kind, index)

    def check_optimizer(self, optimizer):
        self._inner.check_optimizer(optimizer)

    def owns_update(self, step):
        return self._inner.owns_update(step)

    def local_update(self, optimizer, updater, step):
        self._inner.local_update(optimizer, updater, step)

    def state_arrays(self):
        return self._inner.state_arrays()

    def load_state_arrays(self, arrays):
        self._inner.load_state_arrays(arrays)

    def suggested_warmup_epochs(self, lr, epochs=None):
        return self._inner.suggested_warmup_epochs(lr, epochs)
