#!/usr/bin/env bash
# Stop the Grid Engine daemons started by start.sh (by pid file), execd first.
#   stop.sh            both daemons
#   stop.sh execd      only sge_execd (likewise: stop.sh qmaster)
set -euo pipefail

declare -A PIDFILE=(
  [execd]=/var/run/gridengine/execd.pid
  [qmaster]=/var/spool/gridengine/qmaster/qmaster.pid
)

# alive PID NAME: PID is a live (not zombie) process called NAME
alive() { local s; s=$(cat "/proc/$1/stat" 2>/dev/null) && [[ $s == "$1 ($2) "[!Z]* ]]; }

daemons=("$@"); [ $# -gt 0 ] || daemons=(execd qmaster)
for d in "${daemons[@]}"; do
  pidfile=${PIDFILE[$d]:-}; [ -n "$pidfile" ] || { echo "stop.sh: unknown daemon '$d' (execd|qmaster)" >&2; exit 2; }
  pid=$(cat "$pidfile" 2>/dev/null) || continue
  # Only signal the pid if it really is our daemon (pid files can go stale).
  if alive "$pid" "sge_$d"; then
    kill -TERM "$pid"
    for _ in $(seq 300); do alive "$pid" "sge_$d" || break; sleep 0.1; done  # <= 30 s
    if alive "$pid" "sge_$d"; then kill -KILL "$pid"; fi
    echo "stopped sge_$d (pid $pid)"
  fi
  rm -f "$pidfile"
done
