"""The training loop shared by the cv, nlp and graph recipes, for a fixed world and for Horovod
Elastic alike.

In Horovod's model elastic training *is* the loop: one function of a state that it commits now
and then. :func:`train_loop` is that function for every job: each global step takes this worker's
share of the epoch's order (:class:`~.sampler.EpochSampler`) and calls the recipe's step; the
state is committed every ``commit_every`` steps and at the end of each epoch. Under
``elastic=True`` the state is a ``GluonState`` and the loop runs inside ``elastic.run`` (restore,
reset, re-sharding and the rate schedule on a resize); in a fixed world it is a
:class:`FixedState`, whose commit keeps nothing, and the same function simply runs once.
:func:`fit` adds what every recipe does around it, once: resume (``--resume none|auto|FOLDER``),
the epoch's statistics summed over the workers, ``log.jsonl`` rebuilt from the committed history,
a checkpoint after every epoch, ``stop_after`` and a clean stop on SIGINT/SIGTERM. A recipe
supplies only its step and what to evaluate and record at the end of an epoch. The parts:

- :class:`RunFolder`: the run's output folder. Each rank writes ``{prefix}.rank{R}.params`` and
  ``.states``; after a barrier rank 0 commits ``state.json``, the one file that says which
  checkpoint is complete. Elastic runs keep one copy, written by whoever is rank 0.
- :class:`Interruption`: SIGINT/SIGTERM raise :class:`Interrupted` at once, except while a
  checkpoint is being committed (then right after it), so nothing is left half-written and the
  last committed checkpoint always matches its ``state.json``.
- :class:`NoFolder`: the same interface for a job that keeps no checkpoints (``fit(run=None)``).
- :class:`FixedState`: a fixed world's state (the elastic one is ``elastic.GluonState``).
- :func:`train_loop`, :func:`world_totals`, :class:`EpochEnd`, :func:`fit`: the loop itself, the
  epoch's sums over the workers, what ``end_epoch`` is told, and the whole run around the loop.
"""
import collections
import contextlib
import json
import os
import signal
import threading
import time

import mxnet as mx

from ..utils import CsvSummary, JsonLinesLogger, UserError, progress, write_json
from ..utils.errors import Interrupted
from ..utils.fileio import atomic_path, atomic_paths

class Interruption:
    """Context manager turning SIGINT/SIGTERM into :class:`Interrupted` in the main thread.

    ``at(epoch, step)`` records the position the message names; ``with held():`` defers a signal
    until the block ends (used around checkpoint commits). Outside the main thread (where Python
    cannot install handlers) it does nothing. ``hint`` replaces "resume with --resume auto" in the
    message, for loops that keep no checkpoints."""

    def __init__(self, hint=None):
        self.where, self.count_steps, self._hold, self._pending, self._old = None, None, 0, None, None
        self.unit, self.hint = "epoch", hint

    def __enter__(self):
        if threading.current_thread() is threading.main_thread():
            self._old = {s: signal.signal(s, self._handler) for s in (signal.SIGINT, signal.SIGTERM)}
        return self

    def __exit__(self, *exc):
        self._pending = None
        if self._old:
            for s, h in self._old.items():
                signal.signal(s, h)
            self._old = None
        return False

    def at(self, epoch, step=None, unit="epoch"):
        """Record the position: ``epoch`` (1-based, being trained; a ``unit`` such as 'phase'
        for pretraining) and ``step`` (global steps done; when None, ``count_steps()`` is asked
        at the moment of the signal)."""
        self.where, self.unit = (int(epoch), None if step is None else int(step)), unit
        self.check()

    def position(self):
        """``(epoch, step)`` now, or None before training started."""
        if self.where is None:
            return None
        epoch, step = self.where
        if step is None:
            step = int(self.count_steps()) if self.count_steps else 0
        return epoch, step

    def _handler(self, signum, frame):
        # remembered as well as raised: a signal that lands in a finalizer (an NDArray's __del__)
        # would have its exception swallowed by Python, which prints it as "Exception ignored
        # in ... Traceback": there it is only remembered, and raised at the next check()
        self._pending = signum
        if not self._hold and not _in_finalizer(frame):
            raise Interrupted(signum, self.position(), self.unit, self.hint)

    def check(self):
        """Raise a signal received earlier whose exception was lost (see ``_handler``)."""
        if self._pending is not None and not self._hold:
            signum, self._pending = self._pending, None
            raise Interrupted(signum, self.position(), self.unit, self.hint)

    @contextlib.contextmanager
    def held(self):
        """Defer SIGINT/SIGTERM while the block runs (a checkpoint being committed)."""
        self._hold += 1
        try:
            yield
        finally:
            self._hold -= 1
            if not self._hold and self._pending is not None:
                signum, self._pending = self._pending, None
                raise Interrupted(signum, self.position(), self.unit, self.hint)


def write_records(path, records):
    """Write ``records`` as JSON lines to ``path`` at once (atomically): a log rebuilt from a
    committed history, never one with a line the history lacks."""
    with atomic_path(path) as tmp, open(tmp, "w", encoding="utf-8") as f:
        f.writelines(json.dumps(rec, sort_keys=True) + "\n" for rec in records)


def _in_finalizer(frame):
    while frame is not None:
        if frame.f_code.co_name == "__del__":
            return True
        frame = frame.f_back
    return False


def epochs(interruption, start, end, trainer=None):
    """``range(start, end)`` with ``interruption``'s handlers installed while the loop runs; an
    interruption names the epoch and the trainer's update count at that moment."""
    if trainer is not None:
        interruption.count_steps = lambda: trainer.optimizer.num_update
    with interruption:
        for epoch in range(start, end):
            interruption.at(epoch + 1)
            yield epoch


def resume_folder(resume, out):
    """The folder to resume from for ``--resume`` ``resume`` ('none', 'auto' or a run folder) and
    output folder ``out``; None for a fresh start."""
    if resume in (None, "none"):
        return None
    if resume == "auto":
        return out if os.path.exists(os.path.join(out, "state.json")) else None
    if not os.path.isdir(resume):
        raise UserError(f"--resume takes none, auto or a run folder; {resume} is none of these")
    return resume


class _Guarded:
    """A run's SIGINT/SIGTERM handling (``self.interruption``), installed while ``with`` runs."""

    def __enter__(self):
        self.interruption.__enter__()
        return self

    def __exit__(self, *exc):
        return self.interruption.__exit__(*exc)

    def at(self, epoch, step=None, unit="epoch"):
        """Record the training position for the message of an interruption."""
        self.interruption.at(epoch, step, unit)


class RunFolder(_Guarded):
    """A run's output folder: where it resumes from, its checkpoints and its log (see the module
    docstring). ``required`` lists the keys ``state.json`` must hold to be resumed."""

    LOGS = ("log.jsonl", "summary.csv", "state.json")

    def __init__(self, out, resume, comm, prefix="last", elastic=False, required=("history",),
                 interruption=None):
        self.out, self.comm, self.prefix, self.elastic = out, comm, prefix, elastic
        self.required = tuple(required)
        self.interruption = interruption or Interruption()
        os.makedirs(out, exist_ok=True)
        self.folder = resume_folder(resume, out)

    def epochs(self, start, end, trainer=None):
        """``range(start, end)`` with SIGINT/SIGTERM handled while the loop runs (see
        :func:`epochs`)."""
        return epochs(self.interruption, start, end, trainer)

    def paths(self, folder=None, rank=None):
        """``(params, states)`` file names of ``rank`` (elastic runs: always rank 0's copy)."""
        folder = folder or self.out
        r = 0 if self.elastic else (self.comm.rank if rank is None else rank)
        return (os.path.join(folder, f"{self.prefix}.rank{r}.params"),
                os.path.join(folder, f"{self.prefix}.rank{r}.states"))

    def read_state(self):
        """The committed ``state.json`` of the folder to resume from (None for a fresh start),
        checked for the keys this recipe needs and for the worker count."""
        if self.folder is None:
            return None
        path = os.path.join(self.folder, "state.json")
        if not os.path.exists(path):
            raise UserError(f"{self.folder} holds no checkpoint (state.json); resume a run folder or use "
                            "--resume auto")
        try:
            with open(path, encoding="utf-8") as f:
                state = json.load(f)
        except (OSError, ValueError) as exc:
            raise UserError(f"{path} is not a readable checkpoint record ({exc.__class__.__name__}); "
                            "start afresh with --resume none") from None
        missing = [k for k in (*self.required, "workers") if not isinstance(state, dict) or k not in state]
        if missing:
            raise UserError(f"{path} lacks {', '.join(missing)}: it was not written by this recipe; "
                            "start afresh with --resume none")
        if self.elastic and not state.get("elastic"):
            raise UserError(f"{self.folder} is not an elastic run's checkpoint; resume it without --elastic")
        if not self.elastic and state.get("elastic"):
            raise UserError(f"{self.folder} was written by an elastic run; resume it with --elastic")
        if not self.elastic and (state["workers"] != self.comm.size
                                 or not os.path.exists(self.paths(self.folder)[0])):
            raise UserError(f"{self.folder} was written by {state['workers']} worker(s); resume it with the "
                            f"same number (this job has {self.comm.size})")
        return state

    def restore(self, net, trainer=None, log=print, what=None):
        """Load the model (and trainer state) to resume from; returns the state dict or None."""
        state = self.read_state()
        if state is None:
            return None
        params, states = self.paths(self.folder)
        try:
            net.load_parameters(params)
        except Exception as exc:  # noqa: BLE001  MXNet raises plain errors for foreign files
            raise UserError(f"{params} does not hold this model's parameters ({' '.join(str(exc).split())[:120]}); "
                            "resume with the same model and options, or start afresh with --resume none") from None
        if trainer is not None and os.path.exists(states):
            trainer.load_states(states)
        if self.comm.rank == 0:
            log(f"resumed from {self.folder} after {what or 'epoch ' + str(state.get('epoch'))}")
        return state

    def start_fresh(self):
        """A fresh run replaces the logs and checkpoint record of an earlier one in ``out``."""
        if self.folder is None and self.comm.rank == 0:
            for f in self.LOGS:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(os.path.join(self.out, f))

    def write_log(self, history, comm=None):
        """Rewrite ``log.jsonl`` from ``history`` on rank 0 of ``comm`` (default: the run's): the
        log always equals the committed history, also after an elastic restore."""
        if (comm or self.comm).rank == 0:
            write_records(os.path.join(self.out, "log.jsonl"), history)

    def logger(self, history=()):
        """Rank 0's ``log.jsonl``, rebuilt from the resumed ``history`` (so it matches the
        checkpoint even when the run was stopped after a later log line), then appended to."""
        path = os.path.join(self.out, "log.jsonl") if self.comm.rank == 0 else None
        if path:
            write_records(path, history)
        return JsonLinesLogger(path, mode="a")

    def summary(self, history=(), comm=None):
        """Rank 0's (of ``comm``, default the run's) ``summary.csv`` (one row per epoch), rebuilt
        from ``history``."""
        path = os.path.join(self.out, "summary.csv") if (comm or self.comm).rank == 0 else None
        if path:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(path)
            if history:
                with atomic_path(path) as tmp:
                    rows = CsvSummary(tmp)
                    for rec in history:
                        rows.add(**rec)
        return CsvSummary(path)

    def save(self, net, trainer, record, tag):
        """Commit a checkpoint: every rank writes its model and trainer state, then (after a
        barrier named by ``tag``) rank 0 writes ``state.json`` = ``record`` + the worker count.
        Elastic runs: only the current rank 0 writes, one copy. Signals wait until it is done."""
        comm = getattr(trainer, "communicator", None) or self.comm  # elastic: the current world
        rank = comm.rank
        with self.interruption.held():
            if not self.elastic or rank == 0:
                params, states = self.paths()
                # both or neither: parameters of one step with the trainer state of another would
                # resume inconsistently
                with atomic_paths(params, states) as (tmp_params, tmp_states):
                    net.save_parameters(tmp_params)
                    trainer.save_states(tmp_states)
            if not self.elastic:
                comm.barrier(name=f"ckpt.{tag}")
            if rank == 0:
                extra = {"elastic": True} if self.elastic else {}
                write_json(os.path.join(self.out, "state.json"), {**record, **extra, "workers": comm.size})


class FixedState:
    """The training state of a fixed world: ``counters`` as attributes and the ``sampler``, dealt
    out over ``trainer``'s workers once. ``commit()`` keeps nothing: a fixed-size job that loses a
    worker stops, and continues from its last checkpoint (``--resume``)."""

    def __init__(self, trainer, sampler, **counters):
        self.trainer, self.sampler = trainer, sampler
        for k, v in counters.items():
            setattr(self, k, v)
        comm = trainer.communicator
        sampler.reshard(comm.rank, comm.size)

    def commit(self):
        """A commit point (nothing to keep in a fixed world)."""


def _add(pending, sums):
    """``pending`` + ``sums`` key by key (values stay on their device until flushed)."""
    for k, v in (sums or {}).items():
        pending[k] = pending[k] + v if k in pending else v


def _flush(state, pending):
    """Move the step sums not yet read into the state's JSON-ready ``sums`` (one read per commit)."""
    if pending:
        sums = dict(state.sums)
        for k, v in pending.items():
            sums[k] = sums.get(k, 0.0) + float(v.asscalar() if isinstance(v, mx.nd.NDArray) else v)
        state.sums = sums
        pending.clear()


def world_totals(state, names, comm):
    """The epoch's step sums ``names`` (``state.sums``) added up over ``comm``'s workers (one
    allreduce, float64)."""
    names = sorted(names)
    if not names:
        return {}
    row = mx.nd.array([state.sums.get(k, 0.0) for k in names], dtype="float64")
    return dict(zip(names, comm.allreduce(row, average=False, name="loop.epoch.sums").asnumpy().tolist()))


def train_loop(net, trainer, sampler, batch_size, epochs, train_step, end_epoch=None, commit_every=20,
               max_steps=None, counters=None, start=None, elastic=False, show_progress=False, load=None):
    """Train ``net`` for ``epochs`` epochs (or ``max_steps`` global steps) over ``sampler``'s
    order; returns the state.

    Each global step calls ``train_step(state, idx, step_size)`` with this worker's sample indices;
    it runs forward/backward and ``trainer.step(step_size)`` and may return a dict of sums (numbers
    or one-element NDArrays, e.g. the batch's loss sum and sample count), which the loop adds up
    over the epoch into ``state.sums`` (read from the device only at a commit;
    :func:`world_totals` adds them up over the workers). ``end_epoch(state)`` runs once per epoch,
    collectives allowed (evaluation, logs, checkpoints); then the epoch count goes up and the state
    is committed, and also every ``commit_every`` steps. ``counters`` (JSON-ready) become
    attributes of the state, beside ``epoch``, ``step`` and ``sums``; ``start`` (``{"epoch": e,
    "step": s}``) continues a resumed run. ``show_progress``: a progress bar per epoch on rank 0.
    ``load(plan, state)``: turns the iterator of this worker's index lists into an iterator of
    batches (e.g. a ``DataLoader`` with it as ``batch_sampler``, whose workers may read ahead; the
    first comes for step ``state.step``); ``train_step`` then receives the batch instead.

    ``elastic=True``: the state is a ``GluonState`` committed and restored through the trainer's
    public state, and the loop runs under ``elastic.run`` (launch with ``gluon-suite launch
    --min-np ... --max-np ...``); a schedule that is an ``ElasticRamp`` follows the worker count.
    Otherwise it is a :class:`FixedState` and the loop runs once."""
    start = start or {}
    counters = {"epoch": int(start.get("epoch", 0)), "step": int(start.get("step", 0)), "sums": {},
                **(counters or {})}
    if elastic:
        from .elastic import GluonState, run
        state, wrap = GluonState(net, trainer, sampler, batch_size=batch_size, **counters), run
    else:
        state, wrap = FixedState(trainer, sampler, **counters), (lambda f: f)
    pending = {}

    def done():
        return state.epoch >= epochs or (max_steps is not None and state.step >= max_steps)

    def commit():
        _flush(state, pending)
        state.commit()

    def plan(counts):
        # this worker's indices step after step, from a cursor of its own, so that a loader may
        # read ahead of the steps taken (a resize restarts the loop, and with it the plan)
        position = sampler.processed
        while True:
            idx, count = sampler.next_batch(batch_size, position)
            if idx is None:
                return
            position += count
            counts.append(count)
            yield idx

    @wrap
    def loop(state):
        pending.clear()   # sums of steps after the commit that was just restored
        while not done():
            if sampler.epoch != state.epoch:
                sampler.set_epoch(state.epoch)
            counts = collections.deque()
            batches = load(plan(counts), state) if load else plan(counts)
            bar = progress(batches, total=sampler.steps_left(batch_size), desc=f"epoch {state.epoch + 1}/{epochs}",
                           enabled=show_progress and trainer.communicator.rank == 0)
            for batch in bar:
                if done():
                    break
                count = counts.popleft()
                _add(pending, train_step(state, batch, sampler.step_size(count)))
                sampler.advance(count)
                state.step += 1
                if commit_every and state.step % int(commit_every) == 0:
                    commit()
            epoch_over = sampler.skipped or sampler.epoch_over()
            if epoch_over or done():
                _flush(state, pending)
                if end_epoch is not None:
                    end_epoch(state)
                if epoch_over:
                    state.epoch += 1
                    state.sums = {}
                    sampler.set_epoch(state.epoch)
                commit()

    loop(state)
    return state


class NoFolder(_Guarded):
    """The run folder of a job that keeps no checkpoints and no log: :func:`fit` with ``run=None``
    trains from scratch and only handles SIGINT/SIGTERM (``hint``: what to say instead of "resume
    with --resume auto")."""

    def __init__(self, hint=None):
        self.interruption = Interruption(hint=hint)

    def restore(self, net, trainer=None, log=print, what=None):
        """Nothing to resume from."""
        return None

    def start_fresh(self):
        """Nothing to clear."""

    def write_log(self, history, comm=None):
        """No log kept."""

    def summary(self, history=(), comm=None):
        """No summary kept."""

    def save(self, net, trainer, record, tag):
        """No checkpoint kept."""


class EpochEnd:
    """What a recipe's ``end_epoch`` is told by :func:`fit`: ``epoch`` (1-based, just trained),
    ``step`` (global steps so far), ``totals`` (the epoch's ``stats`` sums over all workers),
    ``sums`` (this worker's own sums, with ``time_s``: its wall time between the epoch's start and
    its last step, data loading included, and ``steps``), ``comm`` (the world now), ``state`` and
    ``elapsed_s`` (the run's time, resumed parts included)."""

    def __init__(self, epoch, step, totals, sums, comm, state, elapsed_s):
        self.epoch, self.step, self.totals, self.sums = epoch, step, totals, sums
        self.comm, self.state, self.elapsed_s = comm, state, elapsed_s


def fit(run, net, trainer, sampler, batch_size, epochs, step, end_epoch, stats=(), elastic=False,
        commit_every=20, stop_after=None, log=print, counters=None, summary=False, show_progress=False,
        load=None):
    """A whole run of :func:`train_loop` in the run folder ``run`` (a :class:`RunFolder`, or None
    for no checkpoints and no log), fixed-size or elastic; returns the state (``state.history``:
    the records).

    Resumes from ``run``'s checkpoint (model, trainer state, history, position, ``counters``) or
    starts fresh with ``counters`` (JSON-ready values the recipe keeps across epochs, e.g. the best
    accuracy; committed with the state and written into every checkpoint). ``step(state, batch,
    step_size)`` is the recipe's global step (returning sums, ``stats`` among them);
    ``end_epoch(EpochEnd)`` evaluates and returns the epoch's record (or None: nothing to record
    this epoch). Each record is appended to the history and rank 0 rewrites ``log.jsonl`` (and
    with ``summary``, ``summary.csv``) from it; then every epoch ends with a checkpoint
    (``state.json``: epoch, step, history, elapsed_s and the counters). Training stops after
    ``epochs`` epochs, or after ``stop_after`` of them. ``show_progress`` and ``load``: see
    :func:`train_loop`."""
    run = run or NoFolder()
    saved = run.restore(net, trainer, log)
    start = {"epoch": saved["epoch"], "step": saved.get("step", trainer.optimizer.num_update)} if saved else {}
    t0 = time.time() - float((saved or {}).get("elapsed_s", 0.0))
    kept = {k: (saved or {}).get(k, v) for k, v in (counters or {}).items()}
    history = list(saved["history"]) if saved else []
    run.start_fresh()
    run.write_log(history)
    if summary:
        run.summary(history)
    clock = [time.time()]   # the end of the last step, or the start of the epoch

    def train_step(state, batch, step_size):
        run.at(state.epoch + 1, state.step)
        sums = dict(step(state, batch, step_size) or {})
        now = time.time()
        sums.update(time_s=now - clock[0], steps=1)
        clock[0] = now
        return sums

    def end(state):
        comm = trainer.communicator   # an elastic job's world may have changed since the start
        elapsed = round(time.time() - t0, 3)
        rec = end_epoch(EpochEnd(state.epoch + 1, state.step, world_totals(state, stats, comm), dict(state.sums),
                                 comm, state, elapsed))
        if rec is not None:
            state.history = state.history + [rec]
            run.write_log(state.history, comm)
            if summary:
                run.summary(state.history, comm)
        run.save(net, trainer, {"epoch": state.epoch + 1, "step": state.step, "history": state.history,
                                "elapsed_s": elapsed, **{k: getattr(state, k) for k in kept}}, tag=state.epoch)
        clock[0] = time.time()

    last = min(int(epochs), int(stop_after)) if stop_after else int(epochs)
    with run:
        return train_loop(net, trainer, sampler, batch_size, last, train_step, end, commit_every=commit_every,
                          counters={**kept, "history": history}, start=start, elastic=elastic,
                          show_progress=show_progress, load=load)
