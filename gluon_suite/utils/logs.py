"""Logging for training runs: a console logger, JSON-lines metric logs and a per-epoch CSV summary."""
import csv
import io
import json
import logging
import os
import sys

from .fileio import write_error


def append_line(path, f, text):
    """Append ``text`` to the binary unbuffered file ``f`` (opened on ``path``) whole or not at
    all: on a failed write (full disk, file-size limit) the file is cut back to its old length and
    a ``WriteError`` naming ``path`` is raised, so that a log never ends in half a line."""
    data = text.encode("utf-8")
    start = f.seek(0, os.SEEK_END)
    try:
        while data:
            data = data[f.write(data):]   # a short write is followed by one that raises
    except OSError as exc:
        try:
            f.truncate(start)
        except OSError:
            pass
        failed = write_error(exc, path, ours=True)
        if failed is None:
            raise
        raise failed from None


def get_logger(name="gluon_suite", level=logging.INFO):
    """Return a logger that writes ``time level message`` lines to stderr (configured once)."""
    logger = logging.getLogger(name)
    if not logger.handlers:
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(message)s", "%H:%M:%S"))
        logger.addHandler(handler)
        logger.propagate = False
    logger.setLevel(level)
    return logger


class JsonLinesLogger:
    """Append one JSON object per line to a file; each record is written at once so that a killed
    run keeps every line it logged, and whole (``append_line``) so that a full disk leaves no half
    line. ``path=None`` makes a logger that discards records (non-zero ranks)."""

    def __init__(self, path, mode="a"):
        self.path = path
        self._f = None
        if path:
            try:
                os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
                self._f = open(path, mode + "b" if "b" not in mode else mode, buffering=0)
            except OSError as exc:
                failed = write_error(exc, path, ours=True)
                if failed is None:
                    raise
                raise failed from None

    def log(self, **record):
        """Write ``record`` as one line of JSON."""
        if self._f:
            append_line(self.path, self._f, json.dumps(record, sort_keys=True) + "\n")

    def close(self):
        """Close the file."""
        if self._f:
            self._f.close()
            self._f = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


class CsvSummary:
    """A CSV file with one row per epoch; the header comes from the first row's keys. Each row is
    appended whole or not at all (``append_line``)."""

    def __init__(self, path):
        self.path = path
        self._fields = None
        if path and os.path.exists(path) and os.path.getsize(path) > 0:
            with open(path, newline="", encoding="utf-8") as f:
                self._fields = next(csv.reader(f), None)

    def add(self, **row):
        """Append ``row``; keys unknown to the header are ignored, missing ones left empty."""
        if not self.path:
            return
        new = self._fields is None
        fields = list(row) if new else self._fields
        text = io.StringIO(newline="")
        w = csv.DictWriter(text, fieldnames=fields, extrasaction="ignore")
        if new:
            w.writeheader()
        w.writerow(row)
        try:
            f = open(self.path, "ab", buffering=0)
        except OSError as exc:
            failed = write_error(exc, self.path, ours=True)
            if failed is None:
                raise
            raise failed from None
        with f:
            append_line(self.path, f, text.getvalue())
        self._fields = fields
