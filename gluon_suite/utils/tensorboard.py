"""TensorBoard event files of a run's logged scalars (``--tensorboard DIR``).

Every training recipe's configuration has the ``tensorboard`` key (``runconfig.RecipeConfig``);
its ``checked()``, at the start of every recipe, hands the folder to :func:`use` (which fails at
once, in one line, when mxboard cannot be imported). The loop that emits the run's records (what
``log.jsonl`` holds: ``distributed.loop.fit``, and the quick-start's own loop) opens an
:class:`EventLog` for its duration and gives it each record as it is logged, with the global step.
Rank 0 of the world at that moment writes; the other workers write nothing.

What is written: every value of the record that is a finite number (bools, text, lists, None, NaN
and infinities are left out), except ``step`` (the x axis), as one scalar each, tagged by
:func:`tag_of`: ``train_loss`` -> ``train/loss``, ``val_ppl`` -> ``val/ppl``, ``test_acc`` ->
``test/acc``, ``dev_f1`` -> ``dev/f1`` (a ``train_``/``val_``/``test_``/``dev_`` key goes under its
split), the bare ``loss`` of the graph and pretraining records -> ``train/loss``, everything else
(``lr``, ``samples_per_s``, ``wire_bytes``, ``epoch``...) as it is named in the log. TensorBoard
stores a scalar as float32.

The writer is mxboard's ``SummaryWriter`` (MXNet's own TensorBoard writer; pinned with the
protobuf its generated modules need in ``constraints.txt``). The file is created on the first
record (a run refused before it began leaves nothing), flushed after every record (a killed run
keeps what it logged) and closed when the loop ends, normally or by an interruption. A run in
stages (pretraining's phases, whose steps count from 0 again) writes each stage into a subfolder
(``DIR/phase1``, ``DIR/phase2``): TensorBoard shows them as runs side by side. A resumed run adds
new event files beside those of the first part; give it the same folder.
"""
import itertools
import math
import numbers
import os

from .errors import UserError

__all__ = ["use", "current", "require_writer", "scalars", "tag_of", "EventLog", "INSTALL"]

INSTALL = "pip install -c constraints.txt mxboard"
SPLITS = ("train", "val", "test", "dev")
_folder = [None]          # the folder of the recipe that started last (``use``); None: no event files
_serial = itertools.count()


def require_writer():
    """mxboard's ``SummaryWriter`` class; a ``UserError`` that says how to install it when mxboard
    is absent or cannot be imported."""
    try:
        from mxboard import SummaryWriter
    except ModuleNotFoundError as exc:
        if exc.name not in (None, "mxboard"):
            raise UserError(f"--tensorboard: mxboard cannot be imported (it lacks {exc.name}); "
                            f"install it with: {INSTALL}") from None
        raise UserError(f"--tensorboard needs mxboard (MXNet's TensorBoard writer), which is not installed; "
                        f"install it with: {INSTALL}") from None
    except Exception as exc:  # noqa: BLE001  a protobuf too new for its generated modules raises TypeError
        reason = " ".join(str(exc).split())[:160]
        raise UserError(f"--tensorboard: mxboard cannot be imported ({reason}); install it with the pinned "
                        f"protobuf: {INSTALL}") from None
    return SummaryWriter


def use(folder):
    """Make ``folder`` (None: none) the event folder of the runs that start now; checks at once that
    mxboard can be imported (``require_writer``). Called by ``RecipeConfig.checked``."""
    if folder:
        require_writer()
    _folder[0] = folder or None


def current():
    """The event folder set by the last ``use`` (None: no event files)."""
    return _folder[0]


def tag_of(key):
    """The TensorBoard tag of the log key ``key`` (see the module docstring)."""
    if key == "loss":
        return "train/loss"
    split, _, rest = key.partition("_")
    return f"{split}/{rest}" if split in SPLITS and rest else key


def scalars(record):
    """``{tag: float}`` of the finite numbers in ``record`` (a log record), ``step`` left out."""
    out = {}
    for key, value in record.items():
        if key == "step" or isinstance(value, bool) or not isinstance(value, numbers.Real):
            continue
        value = float(value)
        if math.isfinite(value):
            out[tag_of(key)] = value
    return out


class EventLog:
    """Rank 0's event file of one loop's records in ``folder`` (None: a log that writes nothing),
    in the subfolder ``{name}{index + 1}`` for ``stage=(name, index)``. A context manager: the file
    is closed when the block ends."""

    def __init__(self, folder, stage=None):
        if folder and stage:
            folder = os.path.join(folder, f"{stage[0]}{int(stage[1]) + 1}")
        self.folder = folder
        self._writer = None

    def add(self, record, step, comm):
        """Write ``record``'s scalars (``scalars``) at global step ``step`` when ``comm``'s rank is 0,
        and flush them to the file."""
        if not self.folder or comm.rank != 0:
            return
        values = scalars(record)
        if not values:
            return
        if self._writer is None:
            # the suffix keeps two writers of one second and host apart (the name holds only those)
            self._writer = require_writer()(self.folder, filename_suffix=f".{os.getpid()}.{next(_serial)}",
                                            verbose=False)
        for tag, value in values.items():
            self._writer.add_scalar(tag, value, global_step=int(step))
        self._writer.flush()

    def close(self):
        """Flush and close the event file (nothing when none was opened)."""
        if self._writer is not None:
            writer, self._writer = self._writer, None
            writer.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False
