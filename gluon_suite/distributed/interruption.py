"""SIGINT/SIGTERM during training: a clean stop that names where the run was and never leaves a
checkpoint half-written.

:class:`Interruption` turns either signal into :class:`~gluon_suite.utils.errors.Interrupted` in the
main thread, at once, except inside ``held()`` (a checkpoint being committed), where it waits until
the block ends. The exception carries the position (epoch or phase, and global steps) for the one
line a script prints (``run_cli``) and the exit code a shell expects (130/143).
"""
import contextlib
import signal
import threading

from ..utils.errors import Interrupted


class Interruption:
    """Context manager turning SIGINT/SIGTERM into :class:`Interrupted` in the main thread.

    ``at(epoch, step)`` records the position the message names; ``with held():`` defers a signal
    until the block ends (used around checkpoint commits). Outside the main thread (where Python
    cannot install handlers) it does nothing. ``hint`` replaces "resume with --resume auto" in the
    message, for loops that keep no checkpoints."""

    def __init__(self, hint=None):
        self.where, self.count_steps, self._hold, self._pending, self._old = None, None, 0, None, None
        self.unit, self.hint, self._depth = "epoch", hint, 0

    def __enter__(self):
        # re-entrant: a run in stages holds it around all of them and each stage's loop again
        self._depth += 1
        if self._depth == 1 and threading.current_thread() is threading.main_thread():
            self._old = {s: signal.signal(s, self._handler) for s in (signal.SIGINT, signal.SIGTERM)}
        return self

    def __exit__(self, *exc):
        self._depth -= 1
        if self._depth:
            return False
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
