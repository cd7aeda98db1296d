#!/bin/sh
# Example host-discovery script for `horovodrun --host-discovery-script`: prints one "host:slots"
# line per available host. Here it reads them from a file, runs/hosts.txt under the folder the job
# starts in (or $HOSTS_FILE), so adding or removing a line adds or removes workers while the job runs.
#
# On one machine, list distinct names for it with one slot each (Horovod blacklists a failed
# *host*; with all slots on "localhost" one death would take every slot out):
#   localhost:1
#   127.0.0.1:1
#   <output of hostname>:1
set -e
HOSTS_FILE="${HOSTS_FILE:-runs/hosts.txt}"
if [ ! -r "$HOSTS_FILE" ]; then
  echo "discover_hosts.sh: cannot read $HOSTS_FILE (set HOSTS_FILE)" >&2
  exit 1
fi
grep -E '^[A-Za-z0-9._-]+:[0-9]+$' "$HOSTS_FILE"
