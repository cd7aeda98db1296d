"""Errors meant for users, and the wrapper that turns them into one line on stderr.

A user mistake (bad flag value, missing file, unknown model name) must end a script with a single
line that says what was wrong and how to fix it, and a non-zero exit; never a traceback. Library
code raises ``UserError`` (or ``ValueError``/``FileNotFoundError`` with such a message); scripts call
``run_cli(main)``, which prints ``error: <message>`` and exits with status 1 for those, while real
bugs still show their traceback.
"""
import sys


class GluonSuiteError(Exception):
    """Base class of the suite's own exceptions."""


class UserError(GluonSuiteError, ValueError):
    """A mistake in what the user asked for; the message says what was wrong and what to do."""


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


# exceptions whose message is written for a user: shown as one line, exit status 1
_USER_FACING = (GluonSuiteError, ValueError, FileNotFoundError, NotADirectoryError,
                IsADirectoryError, PermissionError, KeyboardInterrupt)


def _one_line(exc):
    msg = str(exc) if not isinstance(exc, KeyboardInterrupt) else "interrupted"
    if isinstance(exc, OSError) and exc.filename and str(exc.filename) not in msg:
        msg = f"{msg}: {exc.filename}"
    msg = " ".join(msg.split()) or type(exc).__name__
    return msg


def run_cli(main, argv=None):
    """Run ``main(argv)`` and exit: 0 on success, 1 with ``error: ...`` for a user-facing error.

    ``SystemExit`` (e.g. argparse's exit 2 for bad usage) passes through unchanged.
    """
    if argv is None or argv is sys.argv[1:] or list(argv) == sys.argv[1:]:
        from .quiet import quiet_native_warnings, strip_verbose
        argv = strip_verbose(sys.argv[1:] if argv is None else list(argv))
        quiet_native_warnings()
    try:
        rc = main(argv)
    except Interrupted as exc:
        print(exc.message(), file=sys.stderr)
        sys.exit(exc.exit_code)
    except _USER_FACING as exc:
        print(f"error: {_one_line(exc)}", file=sys.stderr)
        sys.exit(130 if isinstance(exc, KeyboardInterrupt) else 1)
    sys.exit(int(rc or 0))
