"""Host lists of an elastic job's discovery script: parsing and validation, and the wrapper Horovod
runs in its place (``python -m gluon_suite.utils.hosts SCRIPT``).

Horovod's elastic driver runs the discovery command about once a second for the whole job, so the
wrapper imports nothing heavy: this module needs only the standard library and ``utils.errors``
(importing ``gluon_suite.distributed`` would load MXNet, about a second of CPU per call).
"""
import os
import re
import subprocess
import sys

from .errors import UserError

RAMP_STEPS, COMMIT_EVERY = 50, 20  # the elastic defaults of every training script

HOST_LINE = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)(?::([0-9]+))?$")


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


def require_elastic_launch(script, elastic=True):
    """Raise a UserError when ``elastic`` is asked for but this process does not run under an
    elastic ``horovodrun``."""
    if elastic and os.environ.get("HOROVOD_ELASTIC") != "1":
        raise UserError(f"--elastic needs an elastic launch: gluon-suite launch --min-np N --max-np M "
                        f"--host-discovery-script S -- python {script} --elastic ...")


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


if __name__ == "__main__":
    if len(sys.argv) != 2:
        print("usage: python -m gluon_suite.utils.hosts SCRIPT (the wrapper `gluon-suite launch` gives Horovod)",
              file=sys.stderr)
        sys.exit(2)
    sys.exit(discover_main(sys.argv[1]))
