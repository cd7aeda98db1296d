"""Errors meant for users and the exit code each one ends a script with.

A user mistake (bad flag value, missing file, unknown model name) must end a script with a single
line that says what was wrong and how to fix it, and a non-zero exit; never a traceback. Library
code raises ``UserError`` (or ``ValueError``/``FileNotFoundError`` with such a message); scripts call
``run_cli(main)`` (``gluon_suite.utils.cli_run``), which prints ``error: <message>`` and exits with
the code of the table below, while real bugs still show their traceback.

Exit codes (docs/getting_started.md, "Exit codes"):

- 0: done;
- 1: the request was valid but the run could not finish: a download or a Horovod job failed,
  Horovod is broken, the disk filled up or an output file could not be written (``WriteError``),
  ``zoo verify`` found corrupt files (``RunFailed``);
- 2: bad input, to be fixed in the command line, a config or input file, or the environment:
  argparse's usage errors and every ``UserError``/``ValueError``/missing-file error;
- 130 / 143: interrupted (SIGINT / SIGTERM).
"""
EXIT_FAILED, EXIT_BAD_INPUT, EXIT_INTERRUPTED = 1, 2, 130


class GluonSuiteError(Exception):
    """Base class of the suite's own exceptions; ``exit_code`` is what ``run_cli`` exits with."""
    exit_code = EXIT_FAILED


class UserError(GluonSuiteError, ValueError):
    """A mistake in what the user asked for; the message says what was wrong and what to do."""
    exit_code = EXIT_BAD_INPUT


class Interrupted(KeyboardInterrupt):
    """Training was stopped by SIGINT or SIGTERM. ``where`` is ``(n, step)`` (the 1-based epoch,
    or phase for ``unit='phase'``, being trained, and the global steps done) or None before
    training started; ``exit_code`` is 130 for SIGINT and 143 for SIGTERM, as a shell reports a
    process killed by them."""

    RESUME = "resume with --resume auto"

    def __init__(self, signum, where=None, unit="epoch", hint=None):
        super().__init__(signum)
        self.signum, self.where, self.unit, self.hint = signum, where, unit, hint or self.RESUME
        self.exit_code = 128 + int(signum)

    def message(self):
        """The one line a script prints."""
        if self.where is None:
            return "interrupted before training started; nothing was saved"
        n, step = self.where
        return f"interrupted at {self.unit} {n} step {step}; {self.hint}"


class RunFailed(GluonSuiteError):
    """The request was valid but could not be carried out (network, workers, disk); the message
    says what happened and what to try."""
    exit_code = EXIT_FAILED


class WriteError(OSError):
    """Writing an output file failed (disk full, file-size limit, no permission, read-only file
    system): ``filename`` is the file the user knows (not its temporary name). Nothing half-written
    is left behind; ``run_cli`` reports it as one line and exits 1."""
    exit_code = EXIT_FAILED
