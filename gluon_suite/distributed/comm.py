"""Communicators: the collectives a data-parallel job needs, with byte counters on every call.

``HorovodCommunicator`` runs them through ``horovod.mxnet`` (Gloo, MPI or NCCL underneath);
``LocalCommunicator`` is the single-process case (size 1), so every script runs with or without
``horovodrun``. ``get_communicator()`` picks the right one from the environment.

Byte accounting (``CommStats``), per worker:

- ``payload_bytes``: bytes this worker handed to collectives (what it "sent" at the API level);
- ``wire_bytes``: the bytes a bandwidth-optimal algorithm puts on this worker's link: ring
  allreduce ``2(n-1)/n * b``, ring allgather ``(n-1) * b`` (each worker forwards every other
  worker's block), broadcast ``b`` on the root and 0 elsewhere (``HorovodCommunicator`` carries a
  broadcast as an allreduce, so there it is the ring allreduce's, on every worker). With n = 1
  nothing crosses a wire.
"""
import abc
import json
import os
from dataclasses import asdict, dataclass, field

import mxnet as mx
import numpy as np

from . import native


@dataclass
class CommStats:
    """Counters of one communicator: calls and bytes per collective kind."""
    calls: dict = field(default_factory=dict)
    payload_bytes: dict = field(default_factory=dict)
    wire_bytes: dict = field(default_factory=dict)

    def add(self, kind, payload, wire):
        """Record one call of ``kind`` moving ``payload`` bytes with ``wire`` bytes on the link."""
        self.calls[kind] = self.calls.get(kind, 0) + 1
        self.payload_bytes[kind] = self.payload_bytes.get(kind, 0) + int(payload)
        self.wire_bytes[kind] = self.wire_bytes.get(kind, 0) + float(wire)

    @property
    def total_payload(self):
        """All payload bytes, every kind together."""
        return sum(self.payload_bytes.values())

    @property
    def total_wire(self):
        """All estimated wire bytes, every kind together."""
        return sum(self.wire_bytes.values())

    def reset(self):
        """Zero every counter."""
        self.calls.clear()
        self.payload_bytes.clear()
        self.wire_bytes.clear()

    def as_dict(self):
        """A JSON-ready copy with totals."""
        d = asdict(self)
        d["total_payload"] = self.total_payload
        d["total_wire"] = self.total_wire
        return d


def write_plain(src, dst):
    """Copy ``src`` into ``dst`` so that ``dst`` ends in the plain (default) layout.

    After an inference forward, oneDNN keeps convolution weights in a blocked layout; a plain
    ``dst[:] = src`` keeps that layout, and later slicing or Horovod calls on ``dst`` then fail.
    Writing through an ordinary element-wise operator (x + 0) gives ``dst`` the plain layout.
    """
    mx.nd._internal._plus_scalar(src, scalar=0.0, out=dst)


def _nbytes(arr):
    return int(np.prod(arr.shape)) * np.dtype(arr.dtype).itemsize


class Communicator(abc.ABC):
    """Base class: rank, size and the collectives, all on MXNet NDArrays, with byte counters.

    Subclasses implement the ``_allreduce``, ``_allgather`` and ``_broadcast`` primitives; the public
    methods add accounting. ``name`` keys an operation across workers: the same collective must get
    the same name on every worker (Horovod matches operations by name).
    """

    rank = 0
    size = 1
    local_rank = 0
    local_size = 1

    def __init__(self):
        self.stats = CommStats()

    # --- accounting -----------------------------------------------------------------------
    def _ring(self, b):
        return 2.0 * (self.size - 1) / self.size * b

    # --- public collectives -------------------------------------------------------------
    def allreduce(self, tensor, average=True, name=None):
        """Return the sum (or the mean with ``average``) of ``tensor`` over all workers; the input
        is not modified."""
        b = _nbytes(tensor)
        self.stats.add("allreduce", b, self._ring(b))
        return self._allreduce(tensor, average, name, inplace=False)

    def allreduce_(self, tensor, average=True, name=None, relayout=False):
        """In-place ``allreduce``: ``tensor`` holds the result afterwards; returns it.

        Set ``relayout`` for parameter arrays: an inference forward of a oneDNN (MKLDNN) convolution
        re-lays its weight out in a blocked format that Horovod cannot read, so the collective runs
        on a plain-layout copy that is written back.
        """
        return self.grouped_allreduce_([tensor], average, name, relayout)[0]

    def grouped_allreduce_(self, tensors, average=True, name=None, relayout=False):
        """In-place allreduce of a list of tensors as one fused operation (see ``allreduce_`` for
        ``relayout``)."""
        if not tensors:
            return tensors
        b = sum(_nbytes(t) for t in tensors)
        self.stats.add("allreduce", b, self._ring(b))
        if self.size == 1:
            return tensors
        work = [t.copy() for t in tensors] if relayout else list(tensors)
        if len(work) == 1:
            self._allreduce(work[0], average, name, inplace=True)
        else:
            self._grouped_allreduce(work, average, name)
        if relayout:
            for t, w in zip(tensors, work):
                write_plain(w, t)
        return tensors

    def allreduce_half(self, tensor, name=None):
        """The mean over workers of a float16 ``tensor`` (a compressor's payload), as float16,
        summed in float32 where the compiled kernels can: a reduce-scatter (``alltoall`` of equal
        slices; each worker averages the slices it receives in float32 and rounds once) then an
        ``allgather`` of the averaged slices, the bytes of a ring allreduce. Horovod's own float16
        allreduce sums in float16 in software: on two workers on loopback it took about twice its
        float32 allreduce of twice the bytes (docs/methods.md, "fp16"). Elsewhere (another device,
        no kernels, fewer values than workers) it is ``allreduce``. The result is only read (a
        payload's decode): on one worker it is ``tensor`` itself, not a copy."""
        b = _nbytes(tensor)
        self.stats.add("allreduce", b, self._ring(b))
        if self.size == 1:
            return tensor
        if tensor.size < self.size or not native.usable(tensor, dtype=np.float16):
            return self._allreduce(tensor, True, name, inplace=False)
        return self._allreduce_half(tensor, name)

    def _allreduce_half(self, tensor, name):
        return self._allreduce(tensor, True, name, inplace=False)

    def allgather(self, tensor, name=None):
        """Concatenate every worker's ``tensor`` along axis 0 (first dims may differ), in rank order."""
        b = _nbytes(tensor)
        self.stats.add("allgather", b, (self.size - 1) * b)
        return self._allgather(tensor, name)

    def broadcast_(self, tensor, root_rank=0, name=None):
        """Overwrite ``tensor`` on every worker with the root's value; returns it."""
        b = _nbytes(tensor)
        self.stats.add("broadcast", b if self.rank == root_rank else 0, self._broadcast_wire(b, root_rank))
        if self.size == 1:
            return self._broadcast(tensor, root_rank, name)
        work = tensor.copy()  # plain layout (see allreduce_'s relayout): broadcasts carry parameters
        self._broadcast(work, root_rank, name)
        write_plain(work, tensor)
        return tensor

    def broadcast_many_(self, tensors, root_rank=0, name=None):
        """``broadcast_`` of many tensors with one collective per dtype: they are packed into a
        flat vector (one copy each), broadcast, and written back. A few large collectives instead
        of hundreds of small ones (a model's parameters and optimizer states): faster, and fewer
        operations in flight. Each group's collective is waited for before the next one is pushed
        (this runs at start-up and at elastic resets, never in a training step). The native crash
        once blamed on many broadcasts in flight was Horovod's broadcast reading freed memory (see
        ``HorovodCommunicator._broadcast``): more broadcasts only gave it more chances."""
        tensors = list(tensors)
        if self.size == 1 or not tensors:
            # nothing to send (one worker holds the root's values); pushing a broadcast per tensor
            # under one name failed in Horovod ("the same name as another tensor")
            return tensors
        groups = {}
        for t in tensors:
            groups.setdefault((np.dtype(t.dtype).str, str(t.context)), []).append(t)
        for g, (key, members) in enumerate(sorted(groups.items())):
            sizes = [int(np.prod(t.shape)) for t in members]
            flat = mx.nd.zeros((sum(sizes),), dtype=members[0].dtype, ctx=members[0].context)
            offsets = np.cumsum([0] + sizes[:-1])
            for t, o, n in zip(members, offsets, sizes):
                write_plain(t, flat[int(o):int(o) + n].reshape(t.shape))   # t itself: no view of it
            self.broadcast_(flat, root_rank, name=None if name is None else f"{name}.{g}")
            flat.wait_to_read()
            for t, o, n in zip(members, offsets, sizes):
                write_plain(flat[int(o):int(o) + n].reshape(t.shape), t)
        return tensors

    def broadcast_object(self, obj, root_rank=0, name="broadcast_object"):
        """Broadcast a JSON-serialisable object from ``root_rank`` (JSON, never pickle)."""
        if self.size == 1:
            return json.loads(json.dumps(obj))
        data = np.frombuffer(json.dumps(obj).encode("utf-8"), dtype=np.uint8) if self.rank == root_rank \
            else np.zeros(0, dtype=np.uint8)
        length = mx.nd.array([len(data)], dtype="int64")
        self.broadcast_(length, root_rank, name=name + ".len")
        n = int(length.asscalar())
        buf = mx.nd.array(data, dtype="uint8") if self.rank == root_rank else mx.nd.zeros((n,), dtype="uint8")
        self.broadcast_(buf, root_rank, name=name + ".data")
        return json.loads(buf.asnumpy().tobytes().decode("utf-8"))

    def barrier(self, name="barrier"):
        """Block until every worker reaches this call."""
        if self.size > 1:
            self.allreduce_(mx.nd.zeros((1,)), False, name).wait_to_read()

    def wire_summary(self):
        """The counters as a JSON-ready dict, with rank and size."""
        return {"rank": self.rank, "size": self.size, **self.stats.as_dict()}

    def _broadcast_wire(self, b, root_rank):
        """Estimated bytes a ``b``-byte broadcast puts on this worker's link."""
        return b if (self.rank == root_rank and self.size > 1) else 0

    # --- primitives ------------------------------------------------------------------------
    @abc.abstractmethod
    def _allreduce(self, tensor, average, name, inplace):
        """Primitive of the subclass."""

    def _grouped_allreduce(self, tensors, average, name):
        for i, t in enumerate(tensors):
            self._allreduce(t, average, None if name is None else f"{name}.{i}", inplace=True)
        return tensors

    @abc.abstractmethod
    def _allgather(self, tensor, name):
        """Primitive of the subclass."""

    @abc.abstractmethod
    def _broadcast(self, tensor, root_rank, name):
        """Primitive of the subclass."""


class LocalCommunicator(Communicator):
    """The single-process communicator: size 1, every collective is the identity, no wire bytes."""

    def _allreduce(self, tensor, average, name, inplace):
        return tensor if inplace else tensor.copy()

    def _grouped_allreduce(self, tensors, average, name):
        return tensors

    def _allgather(self, tensor, name):
        return tensor.copy()

    def _broadcast(self, tensor, root_rank, name):
        if root_rank != 0:
            raise ValueError(f"root_rank {root_rank} does not exist in a job of size 1; use 0")
        return tensor


class HorovodCommunicator(Communicator):
    """Collectives through ``horovod.mxnet``; calls ``hvd.init()`` (idempotent) on construction."""

    def __init__(self):
        super().__init__()
        import horovod.mxnet as hvd
        self._hvd = hvd
        hvd.init()
        self.rank, self.size = hvd.rank(), hvd.size()
        self.local_rank, self.local_size = hvd.local_rank(), hvd.local_size()

    def _allreduce(self, tensor, average, name, inplace):
        op = self._hvd.Average if average else self._hvd.Sum
        fn = self._hvd.allreduce_ if inplace else self._hvd.allreduce
        return fn(tensor, name=name, op=op)

    def _grouped_allreduce(self, tensors, average, name):
        op = self._hvd.Average if average else self._hvd.Sum
        return self._hvd.grouped_allreduce_(list(tensors), name=name, op=op)

    def _allgather(self, tensor, name):
        return self._hvd.allgather(tensor, name=name)

    def _allreduce_half(self, tensor, name):
        n, size = tensor.size, self.size
        splits = [(n * (r + 1)) // size - (n * r) // size for r in range(size)]
        got, _ = self._hvd.alltoall(tensor.reshape((-1,)), splits=splits, name=f"{name}.scatter")
        mean = mx.nd.empty((splits[self.rank],), ctx=tensor.context)
        native.fp16_add(mean, got, 1.0 / size, assign=True)   # rows: every worker's slice; no zero fill
        half, _ = native.cast_fp16(mean)
        return self._hvd.allgather(half, name=f"{name}.gather").reshape(tensor.shape)

    def _broadcast_wire(self, b, root_rank):
        return self._ring(b)  # carried by an allreduce (see _broadcast)

    def _broadcast(self, tensor, root_rank, name):
        # Not hvd.broadcast_: in Horovod 0.28.1 its MXNet operation reads the operation's name
        # after handing the tensor to Horovod's background thread, which may already have finished
        # the broadcast and let MXNet free the operation, name included. Under load that read of
        # freed memory crashed a worker (SIGSEGV, or a runaway copy of gigabytes) in about one
        # elastic test job in 50-150. Horovod's allreduce reads nothing after the hand-over, so a
        # broadcast is done as a sum in which every worker but the root contributes zeros: x + 0
        # is exactly x in every dtype (a -0.0 arrives as +0.0).
        if self.size == 1:
            if root_rank != 0:
                raise ValueError(f"root_rank {root_rank} does not exist in a job of size 1; use 0")
            return tensor
        if self.rank != root_rank:
            tensor[:] = 0
        self._hvd.allreduce_(tensor, name=None if name is None else f"bcast.{name}", op=self._hvd.Sum)
        return tensor


_HOROVOD_ENV = ("HOROVOD_RANK", "OMPI_COMM_WORLD_RANK", "PMI_RANK")


def traffic_line(sent, dense):
    """One line comparing the bytes a run put on the wire with a dense allreduce's: "Nx less" only
    when fewer were sent, "Nx more" when more (index payloads, model averaging), "the same" within
    5% either way."""
    ratio = dense / max(sent, 1.0)
    if 1 / 1.05 <= ratio <= 1.05:
        how = "about the same"
    elif ratio > 1:
        how = f"{ratio:.1f}x less"
    else:
        how = f"{sent / max(dense, 1.0):.1f}x more"
    return (f"training traffic per worker: {sent / 1e6:.2f} MB on the wire vs {dense / 1e6:.2f} MB "
            f"for dense allreduce ({how})")


def launched_by_horovodrun():
    """True when this process was started by ``horovodrun``/``mpirun`` (rank variables are set)."""
    return any(v in os.environ for v in _HOROVOD_ENV)


def get_communicator(kind="auto"):
    """Return a communicator: ``'horovod'``, ``'local'``, or ``'auto'`` (Horovod when started by
    ``horovodrun``, else local)."""
    if kind == "auto":
        kind = "horovod" if launched_by_horovodrun() else "local"
    if kind == "horovod":
        return HorovodCommunicator()
    if kind == "local":
        return LocalCommunicator()
    raise ValueError(f"unknown communicator {kind!r}; choose one of: auto, horovod, local")
