"""How an entry point ends: ``run_cli(main)`` runs a script's or the command's ``main`` and turns
the errors meant for users into one ``error: ...`` line on stderr and the exit code of the table
in ``gluon_suite.utils.errors`` (0 done, 1 failed run, 2 bad input, 130/143 interrupted); real bugs
keep their traceback. It checks the environment first (``env.check_environment``), which is
why it lives apart from the exception classes that ``env`` and ``validate`` raise."""
import errno
import sys

from .errors import EXIT_BAD_INPUT, EXIT_FAILED, EXIT_INTERRUPTED, GluonSuiteError, Interrupted, WriteError
from .env import check_environment

__all__ = ["run_cli", "no_space_message", "write_error_message"]

# other exceptions whose message is written for a user: shown as one line, exit status 2
_BAD_INPUT = (ValueError, FileNotFoundError, NotADirectoryError, IsADirectoryError, PermissionError)
_NO_SPACE = {errno.ENOSPC, errno.EFBIG, getattr(errno, "EDQUOT", errno.ENOSPC)}
_NOT_WRITABLE = {errno.EACCES, errno.EPERM, errno.EROFS}


def _one_line(exc):
    msg = str(exc) if not isinstance(exc, KeyboardInterrupt) else "interrupted"
    if isinstance(exc, OSError) and exc.filename and str(exc.filename) not in msg:
        msg = f"{msg}: {exc.filename}"
    msg = " ".join(msg.split()) or type(exc).__name__
    return msg


_AGAIN = ("nothing half-written was kept and earlier checkpoints are intact; {fix}, then run again "
          "(a training run continues from its last checkpoint with --resume auto)")


def no_space_message(exc):
    """One line for a write that failed because the disk (or the file-size limit) is full."""
    where = f" while writing {exc.filename}" if getattr(exc, "filename", None) else ""
    fix = "free some space or choose another output folder"
    if exc.errno == errno.EFBIG:
        fix = "raise the file-size limit (ulimit -f), free some space or choose another output folder"
    return f"no space left{where} ({exc.strerror or 'disk full'}); " + _AGAIN.format(fix=fix)


def write_error_message(exc):
    """One line for a failed write of an output file: the file, the cause and the fix."""
    if exc.errno in _NO_SPACE or exc.errno is None:
        return no_space_message(exc)
    where = f" {exc.filename}" if getattr(exc, "filename", None) else " an output file"
    if exc.errno == errno.EROFS:
        cause, fix = "the file system is read-only", "choose an output folder on a writable disk"
    elif exc.errno in (errno.EACCES, errno.EPERM):
        cause, fix = "permission denied", "fix the folder's permissions or choose another output folder"
    else:
        cause, fix = exc.strerror or "input/output error", "check the disk or choose another output folder"
    return f"could not write{where} ({cause}); " + _AGAIN.format(fix=fix)


def run_cli(main, argv=None):
    """Check the environment, run ``main(argv)`` and exit: 0 on success, else one ``error: ...``
    line with the exit code of the table in ``gluon_suite.utils.errors``.

    ``SystemExit`` (e.g. argparse's exit 2 for bad usage) passes through unchanged.
    """
    if argv is None or argv is sys.argv[1:] or list(argv) == sys.argv[1:]:
        from .quiet import quiet_native_warnings, strip_verbose
        argv = strip_verbose(sys.argv[1:] if argv is None else list(argv))
        quiet_native_warnings()
    try:
        check_environment()
        rc = main(argv)
    except Interrupted as exc:
        print(exc.message(), file=sys.stderr)
        sys.exit(exc.exit_code)
    except KeyboardInterrupt:
        print("error: interrupted", file=sys.stderr)
        sys.exit(EXIT_INTERRUPTED)
    except WriteError as exc:
        print(f"error: {write_error_message(exc)}", file=sys.stderr)
        sys.exit(EXIT_FAILED)
    except OSError as exc:
        if exc.errno in _NO_SPACE or exc.errno == errno.EROFS:
            print(f"error: {write_error_message(exc)}", file=sys.stderr)
            sys.exit(EXIT_FAILED)
        if not isinstance(exc, _BAD_INPUT):
            raise
        print(f"error: {_one_line(exc)}", file=sys.stderr)
        sys.exit(EXIT_BAD_INPUT)
    except GluonSuiteError as exc:
        print(f"error: {_one_line(exc)}", file=sys.stderr)
        sys.exit(exc.exit_code)
    except ValueError as exc:
        print(f"error: {_one_line(exc)}", file=sys.stderr)
        sys.exit(EXIT_BAD_INPUT)
    sys.exit(int(rc or 0))
