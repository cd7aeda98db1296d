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
statistics summed over the workers, ``log.jsonl`` rebuilt from the committed history, checkpoints,
``stop_after`` and a clean stop on SIGINT/SIGTERM. A recipe supplies only its step and what to
record: after every epoch (``end_epoch``, with a checkpoint per epoch) or after every step
(``end_step``, with a checkpoint every ``save_every`` steps, e.g. pretraining over a step budget).
The parts:

- :class:`FixedState`: a fixed world's state (the elastic one is ``elastic.GluonState``).
- :func:`train_loop`: the loop itself; :func:`world_totals` / :func:`world_sums`: sums over the
  workers.
- :class:`EpochEnd`, :class:`StepEnd`: what ``end_epoch`` and ``end_step`` are told.
- :func:`fit`: the whole run around the loop.

The run folder (:class:`~.runfolder.RunFolder`, :class:`~.runfolder.NoFolder`) and the signal
handling (:class:`~.interruption.Interruption`) live in their own modules and are importable from
here as well.
"""
import collections
import time

import mxnet as mx

from ..utils import progress, tensorboard
from .interruption import Interruption  # noqa: F401  (part of this module's interface)
from .runfolder import NoFolder, RunFolder, resume_folder, write_records  # noqa: F401  (likewise)
from .sampler import EpochSampler
from .state_handlers import CountersHandler, SamplerHandler


class FixedState:
    """The training state of a fixed world, from the handlers an elastic state has
    (``state_handlers.py``): ``counters`` as attributes and the ``sampler``, dealt out over
    ``trainer``'s workers once. ``commit()`` keeps nothing: a fixed-size job that loses a worker
    stops, and continues from its last checkpoint (``--resume``)."""

    def __init__(self, trainer, sampler, **counters):
        self.trainer, self.sampler = trainer, sampler
        self.handlers = [SamplerHandler(sampler), CountersHandler(self, counters)]
        for h in self.handlers:
            h.set_world(trainer.communicator)

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


def _number(v):
    return float(v.asscalar() if isinstance(v, mx.nd.NDArray) else v)


def world_sums(values, names, comm, name="loop.epoch.sums"):
    """``values[k]`` for each of ``names`` (numbers or one-element NDArrays; 0 when missing) added up
    over ``comm``'s workers (one allreduce, float64)."""
    names = sorted(names)
    if not names:
        return {}
    row = mx.nd.array([_number(values.get(k, 0.0)) for k in names], dtype="float64")
    return dict(zip(names, comm.allreduce(row, average=False, name=name).asnumpy().tolist()))


def world_totals(state, names, comm):
    """The epoch's step sums ``names`` (``state.sums``) added up over ``comm``'s workers (one
    allreduce, float64)."""
    return world_sums(state.sums, names, comm)


def train_loop(net, trainer, sampler, batch_size, epochs, train_step, end_epoch=None, commit_every=20,
               max_steps=None, counters=None, start=None, elastic=False, show_progress=False, load=None,
               end_step=None, desc=None):
    """Train ``net`` for ``epochs`` epochs (or ``max_steps`` global steps) over ``sampler``'s
    order; returns the state.

    Each global step calls ``train_step(state, idx, step_size)`` with this worker's sample indices;
    it runs forward/backward and ``trainer.step(step_size)`` and may return a dict of sums (numbers
    or one-element NDArrays, e.g. the batch's loss sum and sample count), which the loop adds up
    over the epoch into ``state.sums`` (read from the device only at a commit;
    :func:`world_totals` adds them up over the workers). ``end_step(state)``, when given, runs after
    every step (``state.step`` counts it), collectives allowed. ``end_epoch(state)`` runs once per
    epoch, collectives allowed (evaluation, logs, checkpoints); then the epoch count goes up and the
    state is committed, and also every ``commit_every`` steps. ``counters`` (JSON-ready) become
    attributes of the state, beside ``epoch``, ``step`` and ``sums``; ``start`` (``{"epoch": e,
    "step": s}``) continues a resumed run (a sampler already at epoch ``e`` continues from its
    position). ``show_progress``: a progress bar per epoch on rank 0, labelled ``desc`` (default
    "epoch E/N"). ``load(plan, state)``: turns the iterator of this worker's index lists into an
    iterator of batches (e.g. a ``DataLoader`` with it as ``batch_sampler``, whose workers may read
    ahead; the first comes for step ``state.step``); ``train_step`` then receives the batch instead.

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
            total = sampler.steps_left(batch_size)
            if max_steps is not None:
                total = min(total, max_steps - state.step)
            bar = progress(batches, total=total, desc=desc or f"epoch {state.epoch + 1}/{epochs}",
                           enabled=show_progress and trainer.communicator.rank == 0)
            for batch in bar:
                if done():
                    break
                count = counts.popleft()
                _add(pending, train_step(state, batch, sampler.step_size(count)))
                sampler.advance(count)
                state.step += 1
                if end_step is not None:
                    end_step(state)
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


class EpochEnd:
    """What a recipe's ``end_epoch`` is told by :func:`fit`: ``epoch`` (1-based, just trained),
    ``step`` (global steps so far), ``totals`` (the epoch's ``stats`` sums over all workers),
    ``sums`` (this worker's own sums, with ``time_s``: its wall time between the epoch's start and
    its last step, data loading included, and ``steps``), ``comm`` (the world now), ``state`` and
    ``elapsed_s`` (the run's time, resumed parts included)."""

    def __init__(self, epoch, step, totals, sums, comm, state, elapsed_s):
        self.epoch, self.step, self.totals, self.sums = epoch, step, totals, sums
        self.comm, self.state, self.elapsed_s = comm, state, elapsed_s


class StepEnd:
    """What a recipe's ``end_step`` is told by :func:`fit` after every global step: ``step`` (global
    steps so far, this one included), ``totals`` (this step's ``stats`` sums over all workers),
    ``sums`` (this worker's own sums of the step, with ``time_s`` and ``steps``), ``comm`` (the
    world now), ``state`` and ``elapsed_s`` (the run's time, resumed parts included)."""

    def __init__(self, step, totals, sums, comm, state, elapsed_s):
        self.step, self.totals, self.sums = step, totals, sums
        self.comm, self.state, self.elapsed_s = comm, state, elapsed_s


def fit(run, net, trainer, sampler, batch_size, epochs, step, end_epoch=None, stats=(), elastic=False,
        commit_every=20, stop_after=None, log=print, counters=None, summary=False, show_progress=False,
        load=None, end_step=None, save_every=None, max_steps=None, start=None, logged=None, stage=None):
    """A whole run of :func:`train_loop` in the run folder ``run`` (a :class:`RunFolder`, or None
    for no checkpoints and no log), fixed-size or elastic; returns the state (``state.history``:
    the records).

    Resumes from ``run``'s checkpoint (model, trainer state, history, position, ``counters``) or
    starts fresh with ``counters`` (JSON-ready values the recipe keeps across epochs, e.g. the best
    accuracy; committed with the state and written into every checkpoint). ``step(state, batch,
    step_size)`` is the recipe's global step (returning sums, ``stats`` among them). Records: each
    one is appended to the history and rank 0 rewrites ``log.jsonl`` (with ``summary``, also
    ``summary.csv``) from the history (only the records ``logged(rec)`` accepts, when given); those
    records also go, with the global step, into the TensorBoard folder of ``--tensorboard``
    (``utils.tensorboard``; a stage into its own subfolder), closed when the run ends or stops.

    - Per epoch (the default): ``end_epoch(EpochEnd)`` evaluates and returns the epoch's record (or
      None: nothing to record this epoch); every epoch ends with a checkpoint (``state.json``:
      epoch, step, history, elapsed_s and the counters).
    - Per step (``save_every`` steps): ``end_step(StepEnd)`` returns each step's record (or None);
      a checkpoint is written every ``save_every`` steps and when training ends, and ``state.json``
      also holds the sampler's position, so a resumed run continues mid-epoch. ``end_epoch`` is
      optional then.

    Training stops after ``epochs`` epochs, after ``max_steps`` global steps, or after
    ``stop_after`` epochs. ``start``: the record to continue from when the caller restored the model
    and trainer itself (a run in stages; ``run`` is then neither read nor cleared): ``history``,
    ``step``, ``sampler``, ``elapsed_s`` and counters, each optional. ``stage`` (``(name, index)``,
    e.g. ``("phase", 0)``) names a stage of such a run: interruptions name it, and the checkpoint
    holds ``{name: index, "step": ...}`` while it trains and ``{name: index + 1, "step": 0}`` once it
    is done. ``show_progress`` and ``load``: see :func:`train_loop`."""
    run = run or NoFolder()
    if start is None:
        saved = run.restore(net, trainer, log)
        run.start_fresh()
        start = {**saved, "step": saved.get("step", trainer.optimizer.num_update)} if saved else {}
    if start.get("sampler"):
        sampler.load_state_dict(start["sampler"])
    position = {"epoch": sampler.epoch if start.get("sampler") else start.get("epoch", 0),
                "step": start.get("step", 0)}
    t0 = time.time() - float(start.get("elapsed_s", 0.0))
    kept = {k: start.get(k, v) for k, v in (counters or {}).items()}
    history = list(start.get("history", []))
    shown = (lambda h: [r for r in h if logged(r)]) if logged else (lambda h: h)
    run.write_log(shown(history))
    if summary:
        run.summary(history)
    last = min(int(epochs), int(stop_after)) if stop_after else int(epochs)
    clock = [time.time()]   # the end of the last step, or the start of the epoch
    mine, saved_at, due = {}, [None], [False]   # this step's own sums; the last checkpoint's step; one due

    def train_step(state, batch, step_size):
        if stage:
            run.at(stage[1] + 1, state.step, unit=stage[0])
        else:
            run.at(state.epoch + 1, state.step)
        sums = dict(step(state, batch, step_size) or {})
        now = time.time()
        sums.update(time_s=now - clock[0], steps=1)
        clock[0] = now
        mine.clear()
        mine.update(sums)
        return sums

    def record(state, rec, comm):
        if rec is not None:
            state.history = state.history + [rec]
            run.write_log(shown(state.history), comm)
            if logged is None or logged(rec):
                board.add(rec, state.step, comm)
            if summary:
                run.summary(state.history, comm)

    def save(state, elapsed, boundary, over=False):
        # boundary: the epoch is over but not yet counted (end_epoch runs first); the checkpoint
        # then names the next epoch's start
        epoch = state.epoch + 1 if boundary else state.epoch
        if stage:
            name, index = stage
            where = {name: index + 1, "step": 0} if over else {name: index, "step": state.step}
        else:
            where = {"epoch": epoch, "step": state.step}
        if save_every and not (stage and over):
            where["sampler"] = {"epoch": epoch, "processed": 0} if boundary else sampler.state_dict()
        run.save(net, trainer, {**where, "history": state.history, "elapsed_s": elapsed,
                                **{k: getattr(state, k) for k in kept}}, tag=f"{epoch}.{state.step}")
        saved_at[0] = state.step

    def finished(state, epoch_over):
        # (stopping, over): the run ends after this step; ``over``: its whole budget is spent
        # (not only ``stop_after``)
        by_steps = max_steps is not None and state.step >= max_steps
        return by_steps or (epoch_over and state.epoch + 1 >= last), by_steps or (epoch_over and state.epoch + 1 >= epochs)

    def after_step(state):
        comm = trainer.communicator
        elapsed = round(time.time() - t0, 3)
        if end_step is not None:
            totals = world_sums(mine, stats, comm, name="loop.step.sums")
            record(state, end_step(StepEnd(state.step, totals, dict(mine), comm, state, elapsed)), comm)
        stopping, over = finished(state, sampler.epoch_over())
        if stopping or state.step % int(save_every) == 0:
            if sampler.epoch_over():
                due[0] = True   # after end_epoch, at the next epoch's start (see end)
            else:
                save(state, elapsed, False, over)

    def end(state):
        comm = trainer.communicator   # an elastic job's world may have changed since the start
        elapsed = round(time.time() - t0, 3)
        if end_epoch is not None:
            record(state, end_epoch(EpochEnd(state.epoch + 1, state.step, world_totals(state, stats, comm),
                                             dict(state.sums), comm, state, elapsed)), comm)
        epoch_over = bool(sampler.skipped or sampler.epoch_over())
        if not save_every:
            save(state, elapsed, True)
        else:
            stopping, over = finished(state, epoch_over)
            # due from the last step, or an epoch cut short (fewer samples left than workers)
            if due[0] or (stopping and saved_at[0] != state.step):
                save(state, elapsed, epoch_over, over)
        due[0] = False
        clock[0] = time.time()

    desc = f"{stage[0]} {stage[1] + 1}" if stage else None
    board = tensorboard.EventLog(tensorboard.current(), stage)
    with run, board:
        return train_loop(net, trainer, sampler, batch_size, last, train_step, end, commit_every=commit_every,
                          max_steps=max_steps, counters={**kept, "history": history}, start=position,
                          elastic=elastic, show_progress=show_progress, load=load,
                          end_step=after_step if save_every else None, desc=desc)


def train_elastic(net, trainer, num_samples, batch_size, epochs, train_step, end_epoch=None,
                  seed=0, commit_every=20, max_steps=None, counters=None, sampler=None, start=None):
    """``train_loop`` under Horovod Elastic over an ``EpochSampler(num_samples, seed)`` (or the
    ``sampler`` given, e.g. one a schedule of ``progress_of(sampler)`` was built on); returns the
    ``elastic.GluonState``. See ``train_loop`` for the arguments."""
    return train_loop(net, trainer, sampler or EpochSampler(num_samples, seed=seed), batch_size, epochs,
                      train_step, end_epoch, commit_every=commit_every, max_steps=max_steps, counters=counters,
                      start=start, elastic=True)
