#!/usr/bin/env bash
# Install (if needed) and start a one-node Son of Grid Engine cluster on this
# host, as root (Debian gridengine-* packages, cell "default", queue all.q with
# one slot per CPU). Idempotent: when qmaster and execd are already up and
# configured, this is a quick no-op.
set -euo pipefail

export SGE_ROOT=/var/lib/gridengine SGE_CELL=default
COMMON=$SGE_ROOT/$SGE_CELL/common
HOST=$(hostname)
# the machine's online CPUs, not this process's affinity (`nproc`): a start from a shell
# pinned to one core (taskset) must not shrink the node for every later job
CPUS=$(getconf _NPROCESSORS_ONLN)
QMASTER_PID=/var/spool/gridengine/qmaster/qmaster.pid
EXECD_PID=/var/run/gridengine/execd.pid
QMASTER_LOG=/var/spool/gridengine/qmaster/messages
EXECD_LOG=/var/spool/gridengine/execd/*/messages  # spool dir name: as execd resolves its host
TMP=$(mktemp -d); trap 'rm -rf "$TMP"' EXIT

die() {
  echo "start.sh: ERROR: $*" >&2
  for f in "$QMASTER_LOG" $EXECD_LOG /tmp/qmaster_messages* /tmp/execd_messages*; do
    [ -f "$f" ] && { echo "--- tail $f" >&2; tail -n 15 "$f" >&2; }
  done
  exit 1
}
# alive PIDFILE NAME: the pid in PIDFILE is a live (not zombie) process called NAME
alive() { local p s; p=$(cat "$1" 2>/dev/null) && s=$(cat "/proc/$p/stat" 2>/dev/null) && [[ $s == "$p ($2) "[!Z]* ]]; }
# qc ARGS...: qconf, quiet unless it fails
qc() { local out; out=$(qconf "$@" 2>&1) || die "qconf $*: $out"; }
# retry N CMD...: run CMD up to N times, 0.5 s apart, until it succeeds
retry() { local n=$1; shift; for _ in $(seq "$n"); do "$@" >/dev/null 2>&1 && return 0; sleep 0.5; done; return 1; }
# set_attrs FILE KEY VALUE [KEY VALUE...]: set "KEY VALUE" lines in a qconf dump;
# fails (returns 1) if all values were already set
set_attrs() {
  local f=$1 k v rc=1; shift
  while [ $# -gt 0 ]; do
    k=$1 v=$2; shift 2
    [ "$(awk -v k="$k" '$1 == k {$1 = ""; print substr($0, 2)}' "$f")" = "$v" ] && continue
    rc=0
    if grep -q "^$k " "$f"; then sed -i "s|^$k .*|$k $v|" "$f"; else echo "$k $v" >>"$f"; fi
  done
  return $rc
}

# 1. Packages (only if missing). Debconf answers make the packages create the
#    cell (bootstrap, act_qmaster) and initialise the qmaster spool.
if [ ! -x /usr/lib/gridengine/sge_qmaster ] || [ ! -x /usr/lib/gridengine/sge_execd ] \
   || [ ! -x /usr/lib/gridengine/qsub ]; then
  export DEBIAN_FRONTEND=noninteractive
  debconf-set-selections <<EOF
gridengine-common shared/gridengineconfig boolean true
gridengine-common shared/gridenginecell string $SGE_CELL
gridengine-common shared/gridenginemaster string $HOST
EOF
  apt-cache show gridengine-master >/dev/null 2>&1 || apt-get update -q
  # The packages try to start the daemons; the policy-rc.d of this image stops that
  # (fine either way: step 3 starts what is not running).
  apt-get install -y -q --no-install-recommends \
    gridengine-master gridengine-exec gridengine-client gridengine-common
fi
[ -s "$COMMON/act_qmaster" ] && [ -e /var/spool/gridengine/spooldb/sge ] \
  || die "cell $COMMON not initialised (debconf shared/gridengineconfig was false?); purge and reinstall the gridengine packages"

# 2. The hostname may resolve back from 127.0.0.1 as "localhost" (first name in
#    /etc/hosts); qmaster then rejects local clients. Make localhost an alias.
ALIASES="$HOST localhost"
if [ "$HOST" != localhost ] && [ "$(cat "$COMMON/host_aliases" 2>/dev/null)" != "$ALIASES" ]; then
  "$(dirname "$0")/stop.sh" >/dev/null  # daemons read the file at start-up only
  echo "$ALIASES" >"$COMMON/host_aliases"
fi
install -d -o sgeadmin -g sgeadmin /var/run/gridengine

# 3. qmaster (daemonizes itself; it also runs the scheduler thread).
started=""
if ! alive "$QMASTER_PID" sge_qmaster; then
  /usr/sbin/sge_qmaster </dev/null || die "sge_qmaster failed to start"
  retry 20 alive "$QMASTER_PID" sge_qmaster || die "sge_qmaster not running 10 s after start"
  started+=" qmaster"
fi
retry 60 qconf -sh || die "qmaster does not answer (qconf -sh) after 30 s"

# 4. Configuration: submit + exec host, root may run jobs, scheduler runs every
#    second, queue all.q with one slot per CPU. Each change only if needed.
changed=""
qconf -ss 2>/dev/null | grep -qxF "$HOST" || { qc -as "$HOST"; changed+=" submit-host"; }
# (-Mconf takes the config name from the file name, path included: hence the cd)
qconf -sconf global >"$TMP/global"
if set_attrs "$TMP/global" min_uid 0 min_gid 0; then
  (cd "$TMP" && qc -Mconf global); changed+=" global-conf"
fi
qconf -ssconf >"$TMP/sconf"
if set_attrs "$TMP/sconf" schedule_interval 0:0:1; then
  qc -Msconf "$TMP/sconf"; changed+=" sched-conf"
fi
if ! qconf -se "$HOST" >/dev/null 2>&1; then
  printf '%s\n' "hostname $HOST" "load_scaling NONE" "complex_values NONE" "user_lists NONE" \
    "xuser_lists NONE" "projects NONE" "xprojects NONE" "usage_scaling NONE" "report_variables NONE" >"$TMP/exechost"
  qc -Ae "$TMP/exechost"; changed+=" exec-host"
fi
if qconf -sq all.q >"$TMP/q" 2>/dev/null; then
  op=-Mq
else
  # No option prints the queue template: qconf -aq hands it to $EDITOR, and an
  # "editor" that copies it and fails makes qconf add nothing.
  printf '#!/bin/sh\ncp "$1" "%s"; exit 1\n' "$TMP/q" >"$TMP/grab" && chmod +x "$TMP/grab"
  EDITOR=$TMP/grab qconf -aq all.q >/dev/null 2>&1 || true
  [ -s "$TMP/q" ] || die "could not get the queue template from qconf -aq"
  op=-Aq; set_attrs "$TMP/q" pe_list NONE || true  # the template's PEs do not exist
fi
if set_attrs "$TMP/q" hostlist "$HOST" slots "$CPUS" load_thresholds NONE || [ $op = -Aq ]; then
  qc $op "$TMP/q"; changed+=" all.q"
fi

# 5. execd. It reads min_uid/min_gid at start-up, and takes ~25 s to notice a
#    new qmaster: restart it if either changed.
if [[ $changed == *global-conf* || $started == *qmaster* ]] && alive "$EXECD_PID" sge_execd; then
  "$(dirname "$0")/stop.sh" execd >/dev/null
fi
if ! alive "$EXECD_PID" sge_execd; then
  SGE_EXECD_PIDFILE=$EXECD_PID /usr/sbin/sge_execd </dev/null || die "sge_execd failed to start"
  # (the daemonized child writes the pid file a moment later)
  retry 20 alive "$EXECD_PID" sge_execd || die "sge_execd not running 10 s after start"
  started+=" execd"
fi

# 6. Wait (max ~90 s in all) until the host reports load and the queue instance
#    is usable (no a/u/d/E state), then (if anything was started or changed) run
#    a test job. An already running, unchanged cluster costs two qstat calls.
QI="all.q@$HOST"
deadline=$((SECONDS + 90)) state="" ok=""
while [ $SECONDS -lt $deadline ]; do
  # qstat -f columns: queuename qtype resv/used/tot. load_avg arch [states]
  line=$(qstat -f -q "$QI" 2>/dev/null | awk -v q="$QI" '$1 == q') || true
  state=$(awk '{print ($4 == "-NA-" ? "NA" : "") $6}' <<<"$line")  # NA: no load report yet
  [ -n "$line" ] && [ -z "$state" ] && { ok=1; break; }
  # Error state (e.g. left by an earlier failed job) or disabled: clear/enable.
  [[ $state == *E* ]] && { qmod -c "$QI" >/dev/null 2>&1 && changed+=" cleared-E" || true; }
  [[ $state == *d* ]] && { qmod -e "$QI" >/dev/null 2>&1 && changed+=" enabled" || true; }
  alive "$QMASTER_PID" sge_qmaster || die "sge_qmaster died"
  alive "$EXECD_PID" sge_execd || die "sge_execd died"
  sleep 0.5
done
[ -n "$ok" ] || { qstat -f >&2 || true; die "queue instance $QI not ready within 90 s (state: '${state:-missing}')"; }
if [ -n "$started$changed" ]; then
  left=$((deadline - SECONDS)); [ $left -ge 10 ] || left=10
  if ! (cd "$TMP" && timeout $left qsub -sync y -b y -N pangeo-hpc-check -o /dev/null -e /dev/null true >/dev/null); then
    qstat -f >&2 || true; qdel pangeo-hpc-check >/dev/null 2>&1 || true
    die "test job (qsub -sync y -b y true) failed or timed out (${left} s)"
  fi
fi
SLOTS=$(qstat -f -q "$QI" | awk -v q="$QI" '$1 == q {print $3}')
echo "sge up: cell=$SGE_CELL host=$HOST queue=$QI slots(resv/used/tot)=$SLOTS started:${started:- none} changed:${changed:- none} SGE_ROOT=$SGE_ROOT"
