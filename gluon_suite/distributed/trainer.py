"""``DistributedTrainer``: a drop-in for ``gluon.Trainer`` that composes an optimizer, a
synchronisation algorithm (with its compressors) and a communicator.

    trainer = DistributedTrainer(net.collect_params(), "sgd", {"learning_rate": 0.1, "momentum": 0.9},
                                 algorithm=make_algorithm("cser", compressor="grbs", ratio=64, period=16))
    ...
    loss.backward()
    trainer.step(batch_size)               # batch_size per worker, as with gluon.Trainer
    with trainer.averaged():               # evaluate the worker-averaged model
        evaluate(net)

Parameters start identical on every worker (broadcast from rank 0 when they are initialised,
deferred initialisation included). Per-parameter state is keyed by the parameter's index in the
sorted parameter list, the same on every worker (state files also record each parameter's position
in the network, so another instance of the network, with other block names, resumes them). ``save_states``/``load_states`` write this worker's
optimizer and algorithm state to one MXNet NDArray file (metadata inside as JSON), atomically;
no pickle.
"""
import contextlib
import time
import os
import types

import mxnet as mx
import numpy as np
from mxnet import gluon

from . import averaging
from .averaging import copy_to_replicas as _copy_to_replicas
from .registry import resolve_algorithm
from .buckets import DEFAULT_BUCKET_MB, bucket_layout_json
from .comm import get_communicator
from .trainer_state import (FORMAT, check_format, flatten_state, per_parameter, read_file,
                            to_network_order, unflatten_state, write_file)

_per_parameter = per_parameter   # the name older tests and tools import


class DistributedTrainer(gluon.Trainer):
    """``gluon.Trainer`` with a pluggable synchronisation algorithm and compressor.

    Arguments as ``gluon.Trainer`` (no kvstore), plus ``algorithm``: a registered name (``sync``,
    ``ef``, ``local``, ``cser``, ``local_adaalter``, ``auto``, or yours: ``registry.py``), an
    ``Algorithm`` object, or its options (``make_algorithm``'s ``{"name": ..., **options}`` or an
    ``Options`` instance), so that an algorithm's options travel with it; ``compressor`` (a name or
    a ``Compressor`` object: the algorithm's compressor, as Horovod's ``compression=``);
    ``communicator`` (default: Horovod under ``horovodrun``, else single-process); ``bucket_mb``
    (size of the flat gradient buckets, default 25 MB; 0: one bucket per tensor; see
    ``buckets.py``); ``profile_comm`` and ``prefix`` (of the collectives' names, for several
    trainers in one job). The keywords of earlier versions (``ratio``, ``period``, ``compressor2``,
    ``ratio2``, ``min_size``, ``warmup_steps``, ``seed``, ``c1_operand``, ``reset_step``,
    ``target_sf``, ``auto_candidates``, ``auto_ratios``, ``auto_periods``) still work for this
    release, with a one-line deprecation notice. Bad names or values raise ValueError here, before
    any training step. Parameters may live on several contexts (GluonCV's
    ``split_and_load``): the gradients of a worker's contexts are summed into the first context's
    copy, the optimizer and the algorithm work on that copy, and the other copies receive its
    weights after every step (all copies identical). With ``profile_comm=True`` the time spent in the algorithm's
    synchronisation (communication plus compression) is measured between barriers and summed in
    ``sync_seconds`` (the barriers cost some overlap: use it to measure, not to train fast).
    """

    def __init__(self, params, optimizer, optimizer_params=None, algorithm="sync", compressor=None,
                 communicator=None, bucket_mb=DEFAULT_BUCKET_MB, profile_comm=False, prefix="", **deprecated):
        self._algo = resolve_algorithm(algorithm, compressor, deprecated)
        if not float(bucket_mb) >= 0:
            raise ValueError(f"bucket_mb must be >= 0 (0: one bucket per tensor), got {bucket_mb}")
        self._bucket_mb = float(bucket_mb)
        self._comm = communicator or get_communicator()
        self._prefix = prefix
        # sorted by name, as gluon.Trainer and Horovod do: the same order on every worker. Names
        # are not the same between two instances of a network in one process (Gluon numbers
        # blocks with a global counter, and 'dense10' sorts before 'dense9'), so state files also
        # record each parameter's position in the network's own order (see load_states)
        given = list(params.values()) if isinstance(params, (dict, gluon.ParameterDict)) else list(params)
        position = {id(p): k for k, p in enumerate(given)}
        params = sorted(given, key=lambda p: p.name)
        optimizer_params = dict(optimizer_params or {})
        sched = optimizer_params.get("lr_scheduler")
        if isinstance(optimizer, str) and sched is not None and "learning_rate" not in optimizer_params:
            # optimizers with a default learning rate (LAMB, Adam) would otherwise print that the
            # schedule's base rate "has been overwritten" and reset it to that default
            optimizer_params["learning_rate"] = sched.base_lr
        super().__init__(params, optimizer, optimizer_params=optimizer_params, kvstore=None)
        self._algo.check_optimizer(self._optimizer)
        self._check_master_weights()
        self._network_position = [position[id(p)] for p in self._params]
        self._step_count = 0
        self._bound = False
        self._profile = bool(profile_comm)
        self.sync_seconds = 0.0
        self.last_averaged = None
        self._broadcast_initial()

    def _check_master_weights(self):
        """float16 weights with float32 master copies (``multi_precision``): the optimizer writes
        the weights from its master copy, so an algorithm that changes the weights after the
        update (ef, cser, local averaging) would be undone at the next step."""
        if getattr(self._optimizer, "multi_precision", False) and any(
                np.dtype(p.dtype) == np.float16 for p in self._params) and not self._algo.allow_master_weights():
            raise ValueError(f"algorithm {self._algo.name!r} changes the weights after the optimizer "
                             "update, which float16 weights with float32 master copies "
                             "(multi_precision) would undo; use algorithm 'sync' with float16, or "
                             "train in float32")

    # --- properties ---------------------------------------------------------------------------
    @property
    def communicator(self):
        """The communicator (rank, size, byte counters)."""
        return self._comm

    @property
    def algorithm(self):
        """The synchronisation algorithm."""
        return self._algo

    @property
    def step_count(self):
        """Optimizer steps taken by this trainer."""
        return self._step_count

    @property
    def parameters(self):
        """The trainer's parameters in its own order (sorted by name; state keys index it)."""
        return list(self._params)

    @property
    def updater(self):
        """The updater that applies the optimizer and holds its per-parameter states."""
        return self._updaters[0]

    def set_communicator(self, comm):
        """Use ``comm`` from now on (the trainer's and the algorithm's): an elastic job's new world
        after a reset."""
        self._comm = comm
        self._algo.comm = comm

    def create_optimizer_states(self):
        """Create the optimizer state of every trainable parameter that has none yet, as the
        updater would at its first update: every worker then holds the same arrays (an elastic
        worker that joins a running job has taken no step)."""
        upd, opt = self.updater, self._optimizer
        for i, p in enumerate(self._params):
            if p.grad_req != "null" and i not in upd.states:
                upd.states[i] = opt.create_state_multi_precision(i, p.data())
                upd.states_synced[i] = True

    def primary_grads(self, exclude=()):
        """The gradients the update applies: each trainable parameter's first-context copy (but
        those of the Parameters in ``exclude``)."""
        skip = {id(p) for p in exclude}
        return [p.list_grad()[0] for p in self._params
                if p.grad_req != "null" and p._grad is not None and id(p) not in skip]

    def discard_gradients(self):
        """Skip this step's update (e.g. a loss scaler's overflow): the gradients are marked
        consumed, so the next backward writes fresh ones and ``step`` does not call them stale."""
        self._algo.finite_flags = None
        for p in self._params:
            for d in (p.list_data() if p._data is not None else []):
                d._fresh_grad = False

    # --- initial broadcast --------------------------------------------------------------------
    def _broadcast_initial(self):
        comm = self._comm
        if comm.size == 1 or os.environ.get("HOROVOD_ELASTIC") == "1":
            # elastic jobs: GluonState.sync() broadcasts everything on every (re)start; a broadcast
            # here would be matched by no other worker when this one joins a running job
            return
        ready = [p for p in self._params if p._data is not None]
        comm.broadcast_many_([p._data[0] for p in ready], 0, name=f"{self._prefix}init.ready")
        for p in ready:
            _copy_to_replicas(p)
        for i, p in enumerate(self._params):
            name = f"{self._prefix}init.{i}"
            if p._data is None:  # deferred: broadcast right after the parameter is initialised
                init_impl = p._init_impl

                def wrapped(param, *args, _impl=init_impl, _name=name, **kwargs):
                    _impl(*args, **kwargs)
                    comm.broadcast_(param._data[0], 0, name=_name)
                    _copy_to_replicas(param)
                p._init_impl = types.MethodType(wrapped, p)

    def bind(self):
        """Lay the trainable parameters out in buckets and hand them to the algorithm (once; the
        first step does it too). The algorithm's per-worker state exists from here on."""
        if not self._bound:
            trainable = [(i, p) for i, p in enumerate(self._params) if p.grad_req != "null"]
            self._algo.bind(trainable, self._comm, bucket_mb=self._bucket_mb,
                            network_position=self._network_position)
            self._bound = True

    # --- the step -------------------------------------------------------------------------------
    @contextlib.contextmanager
    def _timed(self):
        if not self._profile:
            yield
            return
        mx.nd.waitall()
        t0 = time.perf_counter()
        yield
        mx.nd.waitall()
        self.sync_seconds += time.perf_counter() - t0

    def _allreduce_grads(self):
        self.bind()
        for b in self._algo.buckets:   # several contexts: their sum, on the primary copy
            b.sum_replica_grads()
        with self._timed():
            self._algo.reduce_gradients(self._step_count)

    def _update(self, ignore_stale_grad=False):
        self.bind()
        if self._algo.owns_update(self._step_count):
            self._algo.local_update(self._optimizer, self.updater, self._step_count)
            for _, p in self._algo.params:
                for d in p.list_data():
                    d._fresh_grad = False
        else:
            before = self._algo.snapshot() if self._algo.needs_update else None
            self._update_primary(ignore_stale_grad)
            with self._timed():
                self._algo.after_update(before, self._step_count)
            if self._algo.wants_optimizer_average:
                self._average_optimizer_states()
        for b in self._algo.buckets:   # every other copy <- the primary's weights
            b.broadcast_weights()
        self._algo.finite_flags = None   # the reduction's verdicts belong to gradients now used
        self._step_count += 1

    def _average_optimizer_states(self):
        """Every worker's optimizer state <- its mean over workers (one grouped collective): an
        algorithm that goes from local models back to one model (auto reverting to sync) asks for
        it, so that momentum, like the model, is the same everywhere from then on."""
        arrays = {}
        for i, state in sorted(self.updater.states.items()):
            flatten_state(state, f"opt.{i}", arrays)
        if arrays and self._comm.size > 1:
            self._comm.grouped_allreduce_(list(arrays.values()), average=True, name=f"{self._prefix}optimizer.mean")
        self._algo.wants_optimizer_average = False

    def _update_primary(self, ignore_stale_grad=False):
        """``gluon.Trainer._update`` on the primary (first-context) copy of each parameter only:
        its gradient already holds the sum over the worker's contexts, and the other copies
        receive its weights afterwards (one optimizer state, no per-context drift)."""
        loss_scaler = getattr(self, "_amp_loss_scaler", None)
        if loss_scaler is not None and loss_scaler.has_overflow(self._params):
            return  # skip on overflow, as gluon.Trainer
        work = []
        for i, p in enumerate(self._params):
            if p.grad_req == "null":
                continue
            datas = p._check_and_get(p._data, list)
            if not ignore_stale_grad:
                for d in datas:
                    if not d._fresh_grad:
                        raise UserWarning(
                            f"Gradient of Parameter `{p.name}` on context {d.context} has not been "
                            "updated by backward since last `step`. This could mean a bug in your "
                            "model that made it only use a subset of the Parameters (Blocks) for "
                            "this iteration. If you are intentionally only using a subset, call step "
                            "with ignore_stale_grad=True to suppress this warning and skip updating "
                            "of Parameters with stale gradient")
            if not ignore_stale_grad or datas[0]._fresh_grad:
                work.append((i, p._grad[0], datas[0]))
            for d in datas:
                d._fresh_grad = False
        if work:
            index, grads, weights = zip(*work)
            self.updater(index, grads, weights)

    # --- evaluation on the averaged model -------------------------------------------------------
    @contextlib.contextmanager
    def averaged(self, net=None, bn_batches=None, bn="auto", bn_num_batches=8):
        """Within the block the parameters are the average over workers; every local parameter and
        statistic (and every gradient) is restored exactly afterwards. Yields an
        ``AveragedReport`` (``bn``, ``batches``, ``seconds``), also kept as ``last_averaged``.

        BatchNorm running statistics (``averaging.averaged_model``, docs/distributed.md):
        ``bn='recompute'`` computes them for the averaged weights by forward + backward in training
        mode of ``net`` on up to ``bn_num_batches`` inputs from ``bn_batches`` (an iterable, or a
        callable returning one, of inputs or (data, label) tuples: this worker's training data),
        averaged over workers; ``'average'`` averages them like the weights; ``'local'`` keeps each
        worker's own. ``'auto'`` (default) is ``recompute`` where the network has BatchNorm and the
        algorithm keeps local models on several workers, else ``average``; it raises ValueError
        when the recompute lacks ``net`` or ``bn_batches``. On one worker the model is its own
        average and nothing changes unless ``bn='recompute'`` is asked for explicitly."""
        with averaging.averaged_model(self._params, self._algo, self._comm, f"{self._prefix}averaged", net,
                                      bn_batches, bn, bn_num_batches) as report:
            self.last_averaged = report
            yield report

    # --- state ---------------------------------------------------------------------------------
    def state_dict(self):
        """This worker's trainer state, ``{"meta": JSON-ready dict, "arrays": {key: NDArray}}``
        (layout in ``trainer_state.py``): optimizer state of every parameter at any nesting depth
        (``multi_precision`` masters, moments), update counts, step count, learning rate and the
        schedule's state, the algorithm's per-worker state per bucket. The arrays are the trainer's
        own, not copies: copy them to keep a snapshot."""
        self.bind()
        arrays, layout = {}, {}
        for i, state in self.updater.states.items():
            layout[str(i)] = flatten_state(state, f"opt.{i}", arrays)
        for k, v in self._algo.state_arrays().items():
            arrays[f"algo.{k}"] = v
        opt = self._optimizer
        meta = {"format": FORMAT, "step_count": self._step_count,
                "num_update": opt.num_update, "begin_num_update": opt.begin_num_update,
                "index_update_count": {str(k): v for k, v in opt._index_update_count.items()},
                "learning_rate": self.learning_rate, "optimizer": type(opt).__name__.lower(),
                "algorithm": self._algo.config(), "opt_layout": layout,
                "rank": self._comm.rank, "size": self._comm.size, "network_position": self._network_position,
                "buckets": bucket_layout_json(self._algo.buckets),
                "param_shapes": [list(p.shape) if p.shape else None for p in self._params],
                "lr_scheduler": (opt.lr_scheduler.state_dict()
                                 if hasattr(opt.lr_scheduler, "state_dict") else None)}
        return {"meta": meta, "arrays": arrays}

    def load_state_dict(self, state, source="the trainer state"):
        """Restore a ``state_dict()`` (of this trainer, of another instance of the network, or read
        from a file of format 1 or 2); the arrays are copied. Without ``"arrays"`` only the counts,
        step count, learning rate and schedule are taken (the elastic sync, which broadcasts the
        arrays in place). ValueError (one line, naming ``source``) for a state of another format or
        another network."""
        self.bind()
        meta = state["meta"]
        check_format(meta, source)
        arrays = dict(state.get("arrays") or {})
        if arrays and meta["format"] == FORMAT:
            arrays = per_parameter(meta, arrays, source)
        meta, arrays = to_network_order(meta, arrays, source, self._network_position,
                                        [list(p.shape) if p.shape else None for p in self._params])
        if "arrays" in state:
            self._algo.restore(meta.get("algorithm"))   # e.g. auto: the algorithm it had chosen, before its state
        if "arrays" in state:
            updater = self.updater
            for key, spec in meta["opt_layout"].items():
                # on the parameter's (primary) device: files load onto the CPU
                ctx = self._params[int(key)]._data[0].context
                updater.states[int(key)] = unflatten_state(spec, arrays, ctx)
                updater.states_synced[int(key)] = True
            self._algo.load_state_arrays({k[5:]: v for k, v in arrays.items() if k.startswith("algo.")})
        opt = self._optimizer
        opt.num_update = meta["num_update"]
        opt.begin_num_update = meta["begin_num_update"]
        # the optimizer keeps one count dict per device and points _index_update_count at the
        # current one: update that dict in place so the link survives
        opt._index_update_count.clear()
        opt._index_update_count.update({int(k): v for k, v in meta["index_update_count"].items()})
        if opt.lr_scheduler is None:
            self.set_learning_rate(meta["learning_rate"])
        elif meta.get("lr_scheduler") is not None and hasattr(opt.lr_scheduler, "load_state_dict"):
            opt.lr_scheduler.load_state_dict(meta["lr_scheduler"])
        self._step_count = meta["step_count"]

    def save_states(self, fname):
        """Write this worker's ``state_dict()`` to ``fname`` (MXNet NDArray file with JSON metadata
        inside), atomically. Each worker saves its own file."""
        write_file(fname, self.state_dict())

    def load_states(self, fname):
        """Restore what ``save_states`` wrote (this version's files or format 1's)."""
        self.load_state_dict(read_file(fname), source=fname)
