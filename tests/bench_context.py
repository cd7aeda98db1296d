"""A stand-in for the runner's Context (gluon_suite.evidence.runner.Context) for testing a bench's
evidence(ctx) without the runner: it records each measure() as (arm, seed, metrics) and each table
as (columns, rows); a figure goes to ``tmp_path/fig<suffix>``."""


class RecordingContext:
    def __init__(self, params, seeds, arms, tmp_path):
        self.params, self.seeds, self.arms, self.tmp = params, seeds, arms, tmp_path
        self.runs, self.tables, self.notes = [], {}, {}

    def progress(self, it, desc=None):
        return it

    def measure(self, arm, seed, fn):
        m = fn()
        self.runs.append((arm, seed, m))
        return m

    def table(self, name, columns, rows, caption=None):
        self.tables[name] = (columns, rows)

    def note(self, k, v):
        self.notes[k] = v

    def figure(self, suffix):
        return str(self.tmp / f"fig{suffix}")
