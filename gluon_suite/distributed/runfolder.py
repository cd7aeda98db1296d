"""A training run's output folder: where it resumes from, its checkpoints and its log.

- :class:`RunFolder`: each rank writes ``{prefix}.rank{R}.params`` and ``.states``; after a barrier
  rank 0 commits ``state.json``, the one file that says which checkpoint is complete. Elastic runs
  keep one copy, written by whoever is rank 0. ``log.jsonl`` always equals the committed history
  (rewritten from it, or appended to while it only grows).
- :class:`NoFolder`: the same interface for a job that keeps no checkpoints and no log.
- :func:`resume_folder`: what ``--resume none|auto|FOLDER`` names.

Both hold the run's :class:`~.interruption.Interruption` (SIGINT/SIGTERM), installed while
``with run:`` lasts; checkpoints are committed with signals held.
"""
import contextlib
import json
import os

from ..utils import CsvSummary, UserError, write_json
from ..utils.fileio import atomic_path, atomic_paths
from .interruption import Interruption


def write_records(path, records):
    """Write ``records`` as JSON lines to ``path`` at once (atomically): a log rebuilt from a
    committed history, never one with a line the history lacks."""
    with atomic_path(path) as tmp, open(tmp, "w", encoding="utf-8") as f:
        f.writelines(json.dumps(rec, sort_keys=True) + "\n" for rec in records)


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


def _stamp(path):
    """What tells whether a file changed: its inode, size and modification time (None: no file)."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return None
    return st.st_ino, st.st_size, st.st_mtime_ns


def _current_rank(comm):
    """This worker's rank in the world of now (an elastic job's world may have changed since
    ``comm`` was made)."""
    try:
        import horovod.mxnet as hvd
        return hvd.rank() if hvd.is_initialized() else comm.rank
    except ImportError:
        return comm.rank


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
        self._logged = (None, None)   # records this process last wrote to log.jsonl, and the file's stamp

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
        """Make ``log.jsonl`` equal ``history`` on rank 0 of ``comm`` (default: the run's), also
        after an elastic restore: the records past those this process last wrote are appended while
        the file is as it left it and the history only grew; otherwise it is rewritten at once."""
        if (comm or self.comm).rank != 0:
            return
        path = os.path.join(self.out, "log.jsonl")
        count, stamp = self._logged
        if count is not None and len(history) >= count and _stamp(path) == stamp:
            with open(path, "a", encoding="utf-8") as f:
                f.writelines(json.dumps(rec, sort_keys=True) + "\n" for rec in history[count:])
        else:
            write_records(path, history)
        self._logged = (len(history), _stamp(path))

    def stages(self, first, count, log=print, unit="phase"):
        """The stages (e.g. pretraining phases) ``first`` .. ``count - 1`` still to train. An elastic
        launch trains one of them: a worker that joins later starts from the run folder, which names
        one stage, so every launch stays within it (launch again with --resume auto for the next)."""
        if not self.elastic:
            yield from range(first, count)
            return
        if first >= count:
            raise UserError(f"{self.out} has finished all {count} {unit}(s); nothing left to train")
        yield first
        if first + 1 < count and _current_rank(self.comm) == 0:
            log(f"{unit} {first + 1} done; an elastic launch trains one {unit}: launch again with "
                "--resume auto for the next")

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
