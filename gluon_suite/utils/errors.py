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
    try:
        rc = main(argv)
    except _USER_FACING as exc:
        print(f"error: {_one_line(exc)}", file=sys.stderr)
        sys.exit(130 if isinstance(exc, KeyboardInterrupt) else 1)
    sys.exit(int(rc or 0))
