"""Errors meant for users, and the wrapper that turns them into one line on stderr.

A user mistake (bad flag value, missing file, unknown model name) must end a script with a single
line that says what was wrong and how to fix it, and a non-zero exit; never a traceback. Library
code raises ``UserError`` (or ``ValueError``/``FileNotFoundError`` with such a message); scripts call
``run_cli(main)``, which prints ``error: <message>`` and exits with the code of the table below,
while real bugs still show their traceback.

Exit codes (docs/getting_started.md, "Exit codes"):

- 0: done;
- 1: the request was valid but the run could not finish: a download or a Horovod job failed,
  Horovod is broken, the disk filled up or an output file could not be written (``WriteError``),
  ``zoo verify`` found corrupt files (``RunFailed``);
- 2: bad input, to be fixed in the command line, a config or input file, or the environment:
  argparse's usage errors and every ``UserError``/``ValueError``/missing-file error;
- 130 / 143: interrupted (SIGINT / SIGTERM).
"""
import errno
import sys

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
    line with the code of the module docstring's table.

    ``SystemExit`` (e.g. argparse's exit 2 for bad usage) passes through unchanged.
    """
    from .validate import check_environment
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
