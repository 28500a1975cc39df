#!/usr/bin/env bash
# Stop the slurmd and slurmctld started by start.sh (by pid file); munge keeps running.
set -euo pipefail

STATE=${PANGEO_HPC_SLURM_DIR:-/var/lib/pangeo-hpc-slurm}

# alive PID NAME: PID is a live (not zombie) process called NAME
alive() { local s; s=$(cat "/proc/$1/stat" 2>/dev/null) && [[ $s == "$1 ($2) "[!Z]* ]]; }

for d in slurmd slurmctld; do
  pidfile="$STATE/run/$d.pid"
  pid=$(cat "$pidfile" 2>/dev/null) || continue
  # Only signal the pid if it really is our daemon (pid files can go stale).
  if alive "$pid" "$d"; then
    kill -TERM "$pid"
    for _ in $(seq 100); do alive "$pid" "$d" || break; sleep 0.1; done  # <= 10 s
    if alive "$pid" "$d"; then kill -KILL "$pid"; fi
    echo "stopped $d (pid $pid)"
  fi
  rm -f "$pidfile"
done
