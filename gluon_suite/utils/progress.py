"""Progress bars that show only where a user is watching: rank 0, and not when disabled.

On a terminal the bar is tqdm's. Where output is not a terminal (a log file, CI, or the prefixed
lines of ``horovodrun``, where a bar's carriage returns turn into one garbled line per update)
it degrades to one plain line each ``GLUON_SUITE_PROGRESS_EVERY`` percent (default 100: one line
at the end of each epoch, so a log holds one progress line per epoch).
"""
import os
import sys
import time

from tqdm.auto import tqdm

from .env import env


def _plain_every():
    return env("GLUON_SUITE_PROGRESS_EVERY")


def _is_terminal(stream):
    try:
        return stream.isatty() and "HOROVOD_RANK" not in os.environ
    except (AttributeError, ValueError):
        return False


class LineProgress:
    """Iterate ``iterable`` and print ``desc: P% (k/n, r it/s)`` each time another ``every``
    percent is done (and at the end); with no known total, every 10**j items."""

    def __init__(self, iterable, total=None, desc=None, every=None, stream=None):
        self.iterable, self.desc = iterable, desc or "progress"
        if total is None:
            try:
                total = len(iterable)
            except TypeError:
                total = None
        self.total, self.every = total, every or _plain_every()
        self.stream = stream or sys.stderr

    def __len__(self):
        return self.total if self.total is not None else len(self.iterable)

    def _say(self, k, t0):
        rate = k / max(time.perf_counter() - t0, 1e-9)
        pct = f"{100.0 * k / self.total:3.0f}% " if self.total else ""
        of = f"/{self.total}" if self.total else ""
        self.stream.write(f"{self.desc}: {pct}({k}{of}, {rate:.1f} it/s)\n")
        self.stream.flush()

    def __iter__(self):
        t0, k, next_mark = time.perf_counter(), 0, self.every
        for item in self.iterable:
            yield item
            k += 1
            if self.total:
                if 100.0 * k / self.total >= next_mark - 1e-9:
                    self._say(k, t0)
                    while next_mark <= 100.0 * k / self.total + 1e-9:
                        next_mark += self.every
            elif k & (k - 1) == 0 and k >= 8:   # 8, 16, 32, ...: rarer as the run goes on
                self._say(k, t0)


def progress(iterable=None, total=None, desc=None, enabled=True, **kwargs):
    """Wrap ``iterable`` in a progress display when ``enabled`` (pass ``rank == 0``), else return
    it as is: a tqdm bar on a terminal, :class:`LineProgress` lines elsewhere."""
    if not enabled:
        return iterable if iterable is not None else range(total or 0)
    if iterable is None:
        iterable = range(total or 0)
    if not _is_terminal(sys.stderr):
        return LineProgress(iterable, total=total, desc=desc)
    return tqdm(iterable, total=total, desc=desc, dynamic_ncols=True, leave=False, mininterval=0.5,
                **kwargs)
