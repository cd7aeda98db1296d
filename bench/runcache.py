"""A run cache for the benches: finished runs as JSON lines ``{"key": ..., "run": ...}`` in one
file, read at start and appended to (and fsynced) as each run ends, so an interrupted bench resumes
where it stopped and a crash loses at most the run in progress. A line cut short by a crash is
ignored (that run is redone); a changed setting is a new key, so a new run."""
import json
import os


class RunCache:
    def __init__(self, path):
        self.path = path or ""
        self.runs = {}
        if self.path and os.path.exists(self.path):
            with open(self.path, encoding="utf-8") as f:
                for line in f:
                    try:
                        rec = json.loads(line)
                        self.runs[rec["key"]] = rec["run"]
                    except (ValueError, KeyError, TypeError):
                        pass

    def get(self, key, run):
        """The cached result for ``key`` (a JSON-ready value), or ``run()``'s, recorded."""
        key = json.dumps(key)
        if key not in self.runs:
            self.runs[key] = run()
            if self.path:
                os.makedirs(os.path.dirname(os.path.abspath(self.path)), exist_ok=True)
                with open(self.path, "a", encoding="utf-8") as f:
                    # a leading newline: a line cut short before this one stays a line of its own
                    f.write("\n" + json.dumps({"key": key, "run": self.runs[key]}) + "\n")
                    f.flush()
                    os.fsync(f.fileno())
        return self.runs[key]
