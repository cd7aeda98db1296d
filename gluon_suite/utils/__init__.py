"""Small shared helpers: errors, input validation, YAML configs, atomic file IO, logging of
metrics, progress bars, seeding, data files inside installed packages."""
from .errors import GluonSuiteError, RunFailed, UserError
from .cli_run import run_cli
from .fileio import atomic_write, atomic_path, write_json
from .logs import JsonLinesLogger, CsvSummary, get_logger
from .packaged import package_file
from .progress import progress
from .seed import seed_everything

__all__ = [
    "GluonSuiteError", "RunFailed", "UserError", "run_cli",
    "atomic_write", "atomic_path", "write_json",
    "JsonLinesLogger", "CsvSummary", "get_logger",
    "progress", "seed_everything", "package_file",
]
