"""The training-loop skeleton shared by the cv, nlp and graph recipes.

Every recipe does the same things around its own forward/backward: decide where to resume from
(``--resume none|auto|FOLDER``), restore the model and trainer state, write per-epoch (or
per-N-steps) checkpoints that a resumed run continues from exactly, keep ``log.jsonl`` in step
with the checkpoint, and stop cleanly on SIGINT/SIGTERM. This module holds those parts once:

- :class:`RunFolder`: the run's output folder. Each rank writes ``{prefix}.rank{R}.params`` and
  ``.states``; after a barrier rank 0 commits ``state.json``, the one file that says which
  checkpoint is complete. Elastic runs keep one copy, written by whoever is rank 0.
- :class:`Interruption`: SIGINT/SIGTERM raise :class:`Interrupted` at once, except while a
  checkpoint is being committed (then right after it), so nothing is left half-written and the
  last committed checkpoint always matches its ``state.json``.
"""
import contextlib
import json
import os
import signal
import threading

from ..utils import CsvSummary, JsonLinesLogger, UserError, write_json
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


class RunFolder:
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

    def __enter__(self):
        self.interruption.__enter__()
        return self

    def __exit__(self, *exc):
        return self.interruption.__exit__(*exc)

    def at(self, epoch, step=None, unit="epoch"):
        """Record the training position for the message of an interruption."""
        self.interruption.at(epoch, step, unit)

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

    def logger(self, history=()):
        """Rank 0's ``log.jsonl``, rebuilt from the resumed ``history`` (so it matches the
        checkpoint even when the run was stopped after a later log line), then appended to."""
        path = os.path.join(self.out, "log.jsonl") if self.comm.rank == 0 else None
        if path:
            with atomic_path(path) as tmp, open(tmp, "w", encoding="utf-8") as f:
                f.writelines(json.dumps(rec, sort_keys=True) + "\n" for rec in history)
        return JsonLinesLogger(path, mode="a")

    def summary(self, history=()):
        """Rank 0's ``summary.csv`` (one row per epoch), rebuilt from the resumed ``history``."""
        path = os.path.join(self.out, "summary.csv") if self.comm.rank == 0 else None
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
