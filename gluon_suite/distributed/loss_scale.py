"""Dynamic loss scaling for float16 training with float32 master weights.

Float16 gradients underflow: values below 2^-24 become zero, and a BERT's small gradients lose
their low bits long before that. Loss scaling multiplies the loss by S before backward, so every
gradient is S times larger in float16, and divides it out again before the update (through the
trainer's ``rescale_grad``: ``trainer.update(batch_size * S)``, no extra pass over the tensors).
S is dynamic, as in GluonNLP's BERT scripts and MXNet's AMP: a step whose gradients hold an
inf or NaN is skipped and S halves; after ``window`` finite steps in a row S doubles.

Usage (the caller scales the loss, the scaler does the rest)::

    scaler = DynamicLossScaler()
    with autograd.record():
        loss = loss_fn(net(x), y)
    (loss * scaler.scale).backward()
    scaler.step(trainer, batch_size)      # False when the step was skipped

The overflow check reads one number back to the host per step, after the gradients are reduced
and outside ``trainer.step()``. Where the reduction already knows a bucket's verdict (``sync``
with ``fp16`` on the compiled kernels in a one-worker job: the float16 cast computes a finiteness
flag in the same pass, ``Payload.finite``), that flag is used and the bucket's gradients are not
read again; every other gradient is checked with ``multi_all_finite``. Every worker takes the same decision: with ``sync`` the reduced
gradients are identical everywhere; with any other algorithm the workers' verdicts are summed with
one scalar allreduce.
"""
import mxnet as mx

_CHUNK = 200   # arrays per multi_all_finite call


def for_dtype(opt_params, dtype):
    """``(optimizer parameters, loss scaler)`` for training in ``dtype``: float16 adds float32
    master weights (``multi_precision``) and a ``DynamicLossScaler``; float32 keeps the parameters
    as they are and has no scaler (None)."""
    if dtype != "float16":
        return dict(opt_params), None
    return {**opt_params, "multi_precision": True}, DynamicLossScaler()


class DynamicLossScaler:
    """``init_scale`` 2^10, doubled after ``window`` finite steps (2000), halved on overflow,
    kept within [``min_scale``, ``max_scale``] (GluonNLP's defaults for BERT)."""

    def __init__(self, init_scale=2.0 ** 10, factor=2.0, window=2000, min_scale=1.0,
                 max_scale=2.0 ** 24):
        if not (min_scale <= init_scale <= max_scale and factor > 1 and window >= 1):
            raise ValueError("loss scale: need min_scale <= init_scale <= max_scale, factor > 1 "
                             f"and window >= 1 (got {init_scale}, {factor}, {window}, "
                             f"{min_scale}, {max_scale})")
        self.scale = float(init_scale)
        self.factor = float(factor)
        self.window = int(window)
        self.min_scale = float(min_scale)
        self.max_scale = float(max_scale)
        self.good_steps = 0      # finite steps since the last change of scale
        self.skipped = 0         # steps skipped for overflow, in total

    def all_finite(self, trainer):
        """Whether every gradient the trainer will apply (its primary copies) is finite, on
        every worker."""
        algo = trainer.algorithm
        flags = algo.take_finite_flags()
        covered = [p for b in algo.buckets if b.key in flags for _, p in b.members]
        grads = trainer.primary_grads(exclude=covered)
        if not grads and not flags:
            return True
        flag = mx.nd.ones((1,), ctx=grads[0].context if grads else next(iter(flags.values())).context)
        for f in flags.values():   # the reduction's verdicts: 1.0 or 0.0 each
            flag *= f.as_in_context(flag.context)
        for i in range(0, len(grads), _CHUNK):
            part = [g.as_in_context(flag.context) for g in grads[i:i + _CHUNK]]
            mx.nd.multi_all_finite(*part, num_arrays=len(part), init_output=False, out=flag)
        comm = trainer.communicator
        if comm.size > 1 and not trainer.algorithm.gradients_identical:   # workers may disagree
            flag = comm.allreduce(flag, average=False, name="loss_scale.finite") / comm.size
        return float(flag.asscalar()) == 1.0

    def step(self, trainer, batch_size, ignore_stale_grad=False):
        """Reduce the gradients, then update with them divided by the scale if they are finite;
        adjust the scale. Returns whether the update was taken."""
        trainer.allreduce_grads()
        finite = self.all_finite(trainer)
        if finite:
            trainer.update(batch_size * self.scale, ignore_stale_grad=ignore_stale_grad)
        else:
            trainer.discard_gradients()   # the next backward writes fresh gradients
        self.update(finite)
        return finite

    def update(self, finite):
        """The scale after a step with finite (or not) gradients."""
        if finite:
            self.good_steps += 1
            if self.good_steps >= self.window:
                self.scale = min(self.max_scale, self.scale * self.factor)
                self.good_steps = 0
        else:
            self.skipped += 1
            self.scale = max(self.min_scale, self.scale / self.factor)
            self.good_steps = 0

    def state_dict(self):
        """JSON-ready state, for checkpoints."""
        return {"scale": self.scale, "good_steps": self.good_steps, "skipped": self.skipped}

    def load_state_dict(self, state):
        self.scale = float(state["scale"])
        self.good_steps = int(state["good_steps"])
        self.skipped = int(state.get("skipped", 0))

    # as elastic counters (``train_elastic(counters=...)``): committed, restored and sent to new
    # workers with the rest of the elastic state
    def counters(self):
        """The state as flat ``loss_scale*`` values (also the keys the recipes log)."""
        return {"loss_scale": self.scale, "loss_scale_good_steps": self.good_steps,
                "loss_scale_skipped": self.skipped}

    def load_counters(self, obj):
        """Take the state from the attributes (or keys) ``counters()`` names."""
        get = obj.get if isinstance(obj, dict) else lambda k: getattr(obj, k)
        if isinstance(get("loss_scale"), dict):   # a checkpoint that kept the scale as one state_dict()
            self.load_state_dict(get("loss_scale"))
            return
        self.load_state_dict({"scale": get("loss_scale"), "good_steps": get("loss_scale_good_steps"),
                              "skipped": get("loss_scale_skipped")})

    def store_counters(self, obj):
        """Write ``counters()`` into ``obj``'s attributes (an elastic state)."""
        for k, v in self.counters().items():
            setattr(obj, k, v)
