"""Rerunnable evidence: protocols fixed before their runs (``bench/protocols``), result files that are
never rewritten (``bench/results/NAME/``), one statistics module for every comparison, and docs
tables rendered from the results. ``gluon-suite bench`` is its command; docs/benchmarks.md explains
it."""
from . import protocols, render, stats, store
from .runner import Context, run

__all__ = ["protocols", "render", "stats", "store", "Context", "run"]
