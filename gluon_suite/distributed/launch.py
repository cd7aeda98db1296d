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
  dropping the launcher's own traceback (the workers' output is passed through unchanged).

Fixed-size jobs (``-np`` alone, or ``-H``) are passed through with the same output handling.
"""
import argparse
import os
import re
import shlex
import subprocess
import sys

from ..utils import RunFailed, UserError

HOST_LINE = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)(?::([0-9]+))?$")
DEFAULT_ELASTIC_TIMEOUT = 120


def parse_hosts(text, source):
    """``{host: slots}`` from discovery output: one ``host`` or ``host:slots`` per line (blank
    lines ignored; a host without slots gets 1). Raises UserError naming ``source`` and the line."""
    hosts = {}
    for no, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line:
            continue
        m = HOST_LINE.match(line)
        if not m or (m.group(2) is not None and int(m.group(2)) < 1):
            shown = line if len(line) <= 60 else line[:57] + "..."
            raise UserError(f"host discovery script {source} printed {shown!r} on line {no}; each line "
                            "must be 'host' or 'host:slots' with slots >= 1 (e.g. localhost:2)")
        hosts[m.group(1)] = hosts.get(m.group(1), 0) + int(m.group(2) or 1)
    return hosts


def run_discovery(script, timeout=30):
    """Run the discovery command ``script`` once; returns ``{host: slots}``."""
    try:
        p = subprocess.run(script, shell=True, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise UserError(f"host discovery script {script} did not finish within {timeout} s; it must print "
                        "the available hosts and exit") from None
    if p.returncode != 0:
        why = (p.stderr.strip().splitlines() or [""])[-1][:200]
        raise UserError(f"host discovery script {script} failed (exit {p.returncode}"
                        f"{': ' + why if why else ''}); it must print one 'host:slots' line per host "
                        "and exit 0")
    return parse_hosts(p.stdout, script)


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
    return f"{shlex.quote(sys.executable)} -m gluon_suite.distributed.launch --discover {shlex.quote(script)}"


def discover_main(script):
    """The wrapper: print the validated host list, or a one-line reason on stderr and exit 1
    (Horovod then keeps the last good host list and retries)."""
    try:
        hosts = run_discovery(script)
    except UserError as exc:
        print(f"gluon-suite launch: {exc} (ignored; keeping the last good host list)", file=sys.stderr)
        return 1
    for h, s in hosts.items():
        print(f"{h}:{s}")
    return 0


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


def _summarise(text, args):
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
    return None


def launch(args, horovodrun=None, out=None):
    """Run the job; returns the exit status (0 on success). Workers' output is passed through;
    the launcher's own traceback is replaced by one line."""
    horovodrun = horovodrun or os.path.join(os.path.dirname(sys.executable), "horovodrun")
    cmd, elastic = build_command(args, horovodrun)
    out = out or sys.stdout
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, bufsize=1)
    kept, in_tb = [], False
    try:
        for line in p.stdout:
            kept.append(line)
            if len(kept) > 400:
                del kept[:200]
            if _WORKER.match(line):
                in_tb = False
                out.write(line)
            elif line.startswith("Traceback (most recent call last)") or in_tb:
                in_tb = True  # the launcher's traceback: summarised below
            elif line.startswith(("Exception in thread", "Process name:", "Exit code:")):
                continue
            else:
                out.write(line)
            out.flush()
    except KeyboardInterrupt:
        p.terminate()
        p.wait()
        raise
    rc = p.wait()
    if rc != 0:
        msg = _summarise("".join(kept), args) or f"horovodrun failed with exit code {rc}"
        raise RunFailed(msg)  # the job ran and failed: exit 1, not the bad-input 2
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


RAMP_STEPS, COMMIT_EVERY = 50, 20  # the elastic defaults of every training script


def add_elastic_arguments(p, defaults=False, elastic_help=None, lr_name="--lr"):
    """The ``--elastic`` flag group shared by the training scripts. ``defaults=True`` fills the
    numbers in here; otherwise the script's recipe supplies them (as it does for its other flags)."""
    def num(value):
        return {"default": value} if defaults else {}

    def note(value):
        return "" if defaults else f" (default {value})"

    g = p.add_argument_group("elastic (launch with gluon-suite launch --min-np/--max-np, see docs/elastic.md)")
    g.add_argument("--elastic", action="store_true", help=elastic_help or
                   "workers may join, leave or die; the LR follows the worker count smoothly")
    g.add_argument("--ramp-steps", type=int, **num(RAMP_STEPS),
                   help="steps over which the LR moves to a new worker count" + note(RAMP_STEPS))
    g.add_argument("--commit-every", type=int, **num(COMMIT_EVERY),
                   help="steps between commits of the job state" + note(COMMIT_EVERY))
    g.add_argument("--ref-workers", type=int,
                   help=f"worker count {lr_name} is meant for (default: the count the job starts with)")
    return g


def require_elastic_launch(script):
    """Raise a UserError unless this process runs under an elastic ``horovodrun``."""
    if os.environ.get("HOROVOD_ELASTIC") != "1":
        raise UserError(f"--elastic needs an elastic launch: gluon-suite launch --min-np N --max-np M "
                        f"--host-discovery-script S -- python {script} --elastic ...")


def main(argv=None):
    """``python -m gluon_suite.distributed.launch --discover SCRIPT`` (the wrapper Horovod runs)."""
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) == 2 and argv[0] == "--discover":
        return discover_main(argv[1])
    print("usage: python -m gluon_suite.distributed.launch --discover SCRIPT (use `gluon-suite launch`)",
          file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
