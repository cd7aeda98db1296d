"""Logging for training runs: a console logger, JSON-lines metric logs and a per-epoch CSV summary."""
import csv
import json
import logging
import os
import sys


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
    """Append one JSON object per line to a file; each record is flushed at once so that a killed
    run keeps every line it logged. ``path=None`` makes a logger that discards records (non-zero
    ranks)."""

    def __init__(self, path, mode="a"):
        self.path = path
        self._f = None
        if path:
            os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
            self._f = open(path, mode, encoding="utf-8")

    def log(self, **record):
        """Write ``record`` as one line of JSON."""
        if self._f:
            self._f.write(json.dumps(record, sort_keys=True) + "\n")
            self._f.flush()

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
    """A CSV file with one row per epoch; the header comes from the first row's keys."""

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
        if new:
            self._fields = list(row)
        with open(self.path, "a", newline="", encoding="utf-8") as f:
            w = csv.DictWriter(f, fieldnames=self._fields, extrasaction="ignore")
            if new:
                w.writeheader()
            w.writerow(row)
