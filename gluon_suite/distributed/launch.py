"""``gluon-suite launch``: ``horovodrun --gloo`` with the checks and messages it lacks.

``horovodrun`` hangs on ``--min-np`` > ``--max-np``, crashes with a Python traceback when a host
discovery script prints something that is not ``host[:slots]``, and ends a job that lost too many
workers with its own traceback after ``--elastic-timeout`` (600 s by default). This launcher:

- checks ``-np``/``--min-np``/``--max-np`` and runs the discovery script once before starting
  (a failing script, a malformed line or fewer slots than ``--min-np`` is one line naming the
  script, the line and the fix);
- hands Horovod a validating wrapper around the script, so malformed output met later in the run
  is reported (and ignored: Horovod keeps the last good host list) instead of being parsed;
- bounds the wait for replacements (``--elastic-timeout``, 120 s by default) and turns the
  ways a job ends badly (too few workers left, a worker that failed) into one line at the end,
  dropping the launcher's own traceback: Horovod's launcher runs in a child process whose
  workers' lines and own lines travel on separate pipes, its own framed per thread, so a traceback
  is recognised whole even when threads and workers print at once (the workers' output is passed
  through unchanged, line by line).

Fixed-size jobs (``-np`` alone, or ``-H``) are passed through with the same output handling.
"""
import argparse
import collections
import io
import os
import re
import shlex
import subprocess
import sys
import threading

from ..utils import RunFailed, UserError
from ..utils.hosts import (COMMIT_EVERY, RAMP_STEPS, parse_hosts, require_elastic_launch,  # noqa: F401
                           run_discovery)  # (re-exported)

DEFAULT_ELASTIC_TIMEOUT = 120


def check_sizes(np_, min_np, max_np):
    """Validate the worker counts of an elastic job; returns ``(np, min_np, max_np)`` filled in."""
    for flag, v in (("-np", np_), ("--min-np", min_np), ("--max-np", max_np)):
        if v is not None and v < 1:
            raise UserError(f"{flag} must be >= 1, got {v}")
    if min_np is None:
        min_np = np_ or 1
    if max_np is not None and min_np > max_np:
        raise UserError(f"--min-np {min_np} is larger than --max-np {max_np}; the job could never "
                        "start: use --min-np <= --max-np")
    if np_ is None:
        np_ = min_np
    if np_ < min_np or (max_np is not None and np_ > max_np):
        raise UserError(f"-np {np_} must lie between --min-np {min_np} and --max-np {max_np}")
    return np_, min_np, max_np


def wrapper_command(script):
    """The shell command Horovod runs for discovery: the user's script behind our validation."""
    return f"{shlex.quote(sys.executable)} -m gluon_suite.utils.hosts {shlex.quote(script)}"


def build_command(args, horovodrun):
    """The ``horovodrun`` command line for parsed ``args``."""
    cmd = [horovodrun, "--gloo"]
    elastic = bool(args.host_discovery_script or args.min_np or args.max_np)
    if elastic:
        if not args.host_discovery_script:
            raise UserError("an elastic job (--min-np/--max-np) needs --host-discovery-script; see "
                            "scripts/distributed/discover_hosts.sh")
        np_, min_np, max_np = check_sizes(args.np, args.min_np, args.max_np)
        hosts = run_discovery(args.host_discovery_script)
        slots = sum(hosts.values())
        if slots < min_np:
            raise UserError(f"host discovery script {args.host_discovery_script} lists {slots} slot(s); "
                            f"--min-np {min_np} needs at least {min_np}: list more hosts or lower --min-np")
        cmd += ["-np", str(np_), "--min-np", str(min_np), "--host-discovery-script",
                wrapper_command(args.host_discovery_script),
                "--elastic-timeout", str(args.elastic_timeout)]
        if max_np is not None:
            cmd += ["--max-np", str(max_np)]
    else:
        np_ = args.np or 1
        if np_ < 1:
            raise UserError(f"-np must be >= 1, got {np_}")
        cmd += ["-np", str(np_), "-H", args.hosts or f"localhost:{np_}"]
    if args.network_interface:
        cmd += ["--network-interface", args.network_interface]
    command = list(args.command or [])
    if command[:1] == ["--"]:
        command = command[1:]
    if not command:
        raise UserError("no command to launch; put it after --, e.g. gluon-suite launch -np 2 -- "
                        "python scripts/cv/train_classification.py")
    return cmd + command, elastic


_WORKER = re.compile(r"^\[\d+\]<(stdout|stderr)>:")
# a launcher line on the side channel: TAG, the writing thread's id, SEP, the line
_TAG, _SEP = "\x02gsl:", "\x03"
_FAILURE = "\x02gsl-failure\x03"
_TB_START = ("Traceback (most recent call last)", "Exception in thread",
             "Exception occurred during processing of request")
_TB_CONT = ("During handling of the above exception", "The above exception was the direct cause")
_DROP = ("Process name:", "Exit code:", "----------------------------------------")


class _LineRouter(io.TextIOBase):
    """``sys.stdout``/``sys.stderr`` of the wrapper around ``horovodrun``.

    Every thread of the launcher (the main thread, Horovod's output forwarders, its rendezvous
    server's handlers) assembles its own lines; a complete line is written in one ``os.write``.
    Workers' prefixed lines go to fd 1 as they are; everything else the launcher prints goes to
    fd 2 framed with the id of the thread that wrote it, so that the parent can drop a traceback
    line by line even when several threads print at once (a line printed with several ``write``
    calls can no longer be cut by another thread's line)."""

    def __init__(self, lock, fd, workers_fd=1, launcher_fd=2):
        super().__init__()
        self._local, self._lock, self._fd = threading.local(), lock, fd
        self._workers_fd, self._launcher_fd = workers_fd, launcher_fd

    def writable(self):
        return True

    def isatty(self):
        return False

    def fileno(self):
        return self._fd

    def write(self, text):
        buf = getattr(self._local, "buf", "") + text
        *done, rest = re.split(r"(?<=[\n\r])", buf)
        self._local.buf = rest
        for line in done:
            self.emit(line)
        return len(text)

    def flush(self):
        pass

    def close_thread(self):
        """Emit this thread's unfinished line (at exit)."""
        rest = getattr(self._local, "buf", "")
        self._local.buf = ""
        if rest:
            self.emit(rest + "\n")

    def emit(self, line):
        if _WORKER.match(line):
            fd, data = self._workers_fd, line
        else:
            fd, data = self._launcher_fd, f"{_TAG}{threading.get_ident()}{_SEP}{line.rstrip(chr(13) + chr(10))}\n"
        with self._lock:
            os.write(fd, data.encode("utf-8", "replace"))


def horovodrun_main(argv):
    """``python -m gluon_suite.distributed.launch --horovodrun ARGS``: Horovod's launcher with its
    output routed by :class:`_LineRouter` and its own exception reported as one framed line (no
    traceback) instead of being printed."""
    lock = threading.Lock()
    out, err = _LineRouter(lock, 1), _LineRouter(lock, 2)
    sys.stdout, sys.stderr = out, err
    sys.argv = ["horovodrun", *argv]
    try:
        from horovod.runner.launch import run_commandline
        rc = run_commandline()
    except KeyboardInterrupt:
        rc = 130
    except SystemExit as exc:
        rc = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    except BaseException as exc:  # noqa: BLE001  the launcher's failure, summarised by the parent
        msg = " ".join(str(exc).split())[:300]
        with lock:
            os.write(2, f"{_FAILURE}{type(exc).__name__}: {msg}\n".encode("utf-8", "replace"))
        rc = 1
    out.close_thread()
    err.close_thread()
    return int(rc or 0)


class _LauncherFilter:
    """Decides, per writing thread, which of the launcher's own lines a user sees: tracebacks
    (from their first line to their exception line) and Horovod's failure details are dropped,
    since the job's end is summarised in one line; everything else is shown."""

    def __init__(self):
        self.in_tb = {}

    def keep(self, thread, line):
        text = line.rstrip("\n")
        if text.startswith(_TB_START):
            self.in_tb[thread] = True
            return False
        if self.in_tb.get(thread):
            if not text or text[0].isspace() or text.startswith(_TB_CONT) or text.startswith(_TB_START):
                return False
            self.in_tb[thread] = False  # the exception's own line ends the block
            return False
        return not text.startswith(_DROP)


def _summarise(text, args, failure=None):
    """One line for a failed job, from what horovodrun printed."""
    if "minimum number of slots" in text or "Timed out waiting for" in text:
        m = re.search(r"at least (\d+) Horovod processes", text)
        need = m.group(1) if m else args.min_np
        return (f"the elastic job stopped: fewer than --min-np {need} workers were left for "
                f"{args.elastic_timeout} s (workers died or hosts were removed); list more hosts in the "
                "discovery script or lower --min-np, then start the job again")
    m = re.search(r"Process name: (\S+)\s+Exit code: (-?\d+)", text)
    if m:
        return (f"worker {m.group(1)} exited with code {m.group(2)}, which ended the job; its own "
                "message is in the output above")
    m = re.search(r"Process (\d+) exit with status code (-?\d+)", text)
    if m:
        return (f"worker {m.group(1)} exited with code {m.group(2)}, which ended the job; its own "
                "message is in the output above")
    if failure:
        return f"horovodrun failed ({failure}); see its output above"
    return None


def launch(args, out=None):
    """Run the job; returns the exit status (0 on success). Workers' output is passed through
    line by line; the launcher's own traceback is dropped and the failure summarised in one line.

    Horovod's launcher runs in a child process (:func:`horovodrun_main`) whose workers' lines
    arrive on one pipe and whose own lines arrive, framed per thread, on another, so the two can
    never be cut into each other."""
    cmd, elastic = build_command(args, "horovodrun")
    out = out or sys.stdout
    child = [sys.executable, "-m", "gluon_suite.distributed.launch", "--horovodrun", *cmd[1:]]
    p = subprocess.Popen(child, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    lock, kept, failure = threading.Lock(), collections.deque(maxlen=400), []
    filt = _LauncherFilter()

    def show(line):
        with lock:
            out.write(line if line.endswith("\n") else line + "\n")
            out.flush()

    def pump_workers():
        for raw in p.stdout:
            show(raw.decode("utf-8", "replace"))

    def pump_launcher():
        for raw in p.stderr:
            line = raw.decode("utf-8", "replace")
            if line.startswith(_FAILURE):
                failure.append(line[len(_FAILURE):].strip())
                continue
            thread = "raw"  # written around the router (C++ code, child processes)
            if line.startswith(_TAG) and _SEP in line:
                thread, line = line[len(_TAG):].split(_SEP, 1)
            with lock:
                kept.append(line)
            if filt.keep(thread, line):
                show(line)

    pumps = [threading.Thread(target=f, daemon=True) for f in (pump_workers, pump_launcher)]
    for t in pumps:
        t.start()
    try:
        rc = p.wait()
    except KeyboardInterrupt:
        p.terminate()
        p.wait()
        raise
    for t in pumps:
        t.join()
    if rc != 0:
        msg = _summarise("".join(kept), args, failure[0] if failure else None)
        raise RunFailed(msg or f"horovodrun failed with exit code {rc}")  # the job ran and failed: exit 1
    return 0


def add_arguments(p):
    """The flags of ``gluon-suite launch``."""
    p.add_argument("-np", "--num-proc", dest="np", type=int,
                   help="workers to start (elastic: default --min-np)")
    p.add_argument("-H", "--hosts", help="fixed-size job: host:slots,... (default localhost:NP)")
    p.add_argument("--min-np", type=int, help="elastic: fewest workers the job runs with")
    p.add_argument("--max-np", type=int, help="elastic: most workers the job grows to")
    p.add_argument("--host-discovery-script", help="elastic: prints one host:slots line per host")
    p.add_argument("--elastic-timeout", type=int, default=DEFAULT_ELASTIC_TIMEOUT,
                   help="elastic: seconds to wait for --min-np workers before stopping")
    p.add_argument("--network-interface", help="interface the workers talk over (lo on one machine)")
    p.add_argument("command", nargs=argparse.REMAINDER, help="the training command, after --")



def main(argv=None):
    """``python -m gluon_suite.distributed.launch --horovodrun ARGS``: Horovod's launcher with routed
    output, run by :func:`launch` (the discovery wrapper is :mod:`gluon_suite.utils.hosts`)."""
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--horovodrun"]:
        return horovodrun_main(argv[1:])
    print("usage: python -m gluon_suite.distributed.launch --horovodrun ARGS (use `gluon-suite launch`)",
          file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
