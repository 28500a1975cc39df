#!/usr/bin/env bash
# Install (if needed) and start a one-node Slurm cluster on this host, as root.
# Idempotent: when munge, slurmctld and slurmd are already up with the same
# config, this is a quick no-op.
#   PANGEO_HPC_SLURM_DIR       state dir (default /var/lib/pangeo-hpc-slurm)
#   PANGEO_HPC_SLURMCTLD_PORT  slurmctld port (default: 6817, or next free one)
#   PANGEO_HPC_SLURMD_PORT     slurmd port    (default: 6818, or next free one)
set -euo pipefail

STATE=${PANGEO_HPC_SLURM_DIR:-/var/lib/pangeo-hpc-slurm}
HOST=$(hostname -s)
# the machine's online CPUs, not this process's affinity (`nproc`): a start from a shell
# pinned to one core (taskset) must not shrink the node for every later job
CPUS=$(getconf _NPROCESSORS_ONLN)
CONF=/etc/slurm/slurm.conf
MARK="# managed by pangeo-hpc ci/slurm/start.sh"

die() {
  echo "start.sh: ERROR: $*" >&2
  for f in "$STATE"/log/slurmctld.log "$STATE"/log/slurmd.log; do
    [ -f "$f" ] && { echo "--- tail $f" >&2; tail -n 15 "$f" >&2; }
  done
  exit 1
}
# alive PIDFILE NAME: the pid in PIDFILE is a live (not zombie) process called NAME
alive() { local p s; p=$(cat "$1" 2>/dev/null) && s=$(cat "/proc/$p/stat" 2>/dev/null) && [[ $s == "$p ($2) "[!Z]* ]]; }
# port_ok PORT NAME: PORT is free, or listened on by our own NAME daemon
# (pid file in $STATE or in the state dir of the currently installed config)
port_ok() {
  command -v ss >/dev/null || return 0  # no iproute2: cannot check, assume free
  local l d; l=$(ss -Htlnp "sport = :$1" 2>/dev/null); [ -z "$l" ] && return 0
  for d in "$STATE" "${OLD:-$STATE}"; do
    alive "$d/run/$2.pid" "$2" && grep -q "pid=$(cat "$d/run/$2.pid")," <<<"$l" && return 0
  done
  return 1
}
# pick_port ENVVALUE DEFAULT NAME [EXCLUDE]: explicit port must be usable;
# otherwise the first usable port from DEFAULT upwards
pick_port() {
  if [ -n "$1" ]; then port_ok "$1" "$3" || die "port $1 for $3 is in use by another process"; echo "$1"; return; fi
  local p
  for p in $(seq "$2" $(($2 + 20))); do
    [ "$p" != "${4:-}" ] && port_ok "$p" "$3" && { echo "$p"; return; }
  done
  die "no free port for $3 in $2..$(($2 + 20))"
}

# 1. Packages (only if slurmctld is missing).
if ! command -v slurmctld >/dev/null; then
  export DEBIAN_FRONTEND=noninteractive
  apt-cache show slurm-wlm >/dev/null 2>&1 || apt-get update -q
  apt-get install -y -q slurm-wlm munge
fi

# 2. munge: key, runtime dir, daemon, self-test.
if [ ! -s /etc/munge/munge.key ]; then
  (umask 077; head -c 1024 /dev/urandom > /etc/munge/munge.key)
fi
chown munge:munge /etc/munge/munge.key && chmod 400 /etc/munge/munge.key
install -d -o munge -g munge -m 755 /run/munge
# The self-test doubles as the liveness check; (re)start munged until it passes.
munge_ok() { munge -n 2>/dev/null | unmunge >/dev/null 2>&1; }
for _ in $(seq 50); do  # <= ~10 s
  munge_ok && break
  alive /run/munge/munged.pid munged || runuser -u munge -- /usr/sbin/munged || true
  sleep 0.2
done
munge_ok || die "munge self-test (munge -n | unmunge) failed; see /var/log/munge/munged.log"

# 3. slurm.conf for this host (state/spool/log/pid files under $STATE).
mkdir -p "$STATE"/{state,spool,log,run}
# State dir of the currently installed config, if it is ours (may differ from $STATE).
OLD=$(grep -qxF "$MARK" "$CONF" 2>/dev/null && sed -n 's|^StateSaveLocation=\(.*\)/state$|\1|p' "$CONF") || true
CTLD_PORT=$(pick_port "${PANGEO_HPC_SLURMCTLD_PORT:-}" 6817 slurmctld)
SLURMD_PORT=$(pick_port "${PANGEO_HPC_SLURMD_PORT:-}" 6818 slurmd "$CTLD_PORT")
MEM_MB=$(( $(awk '/^MemTotal/ {print $2}' /proc/meminfo) / 1024 - 1024 ))
# Slurm can only bind to the address the hostname resolves to (not 0.0.0.0):
# do that when it is loopback; otherwise keep the default (bind to any).
BIND="# hostname does not resolve to loopback: daemons bind to all addresses"
if getent ahostsv4 "$HOST" | awk 'NR==1 {print $1}' | grep -q '^127\.'; then
  BIND="CommunicationParameters=NoCtldInAddrAny,NoInAddrAny"
fi
# The node is addressed as 127.0.0.1 even if the hostname resolves elsewhere.
# OverSubscribe=YES: jobs that ask with --oversubscribe may share cores (up to 4 jobs per
# core), e.g. 4 one-core worker jobs on a 2-CPU node at once; jobs that do not ask still
# get their cores to themselves (CR_Core_Memory), and memory is never shared.
NEW=$(cat <<EOF
$MARK
ClusterName=pangeo
SlurmctldHost=$HOST(127.0.0.1)
SlurmctldPort=$CTLD_PORT
SlurmdPort=$SLURMD_PORT
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
ReturnToService=2
MpiDefault=none
MailProg=/bin/true
$BIND
StateSaveLocation=$STATE/state
SlurmdSpoolDir=$STATE/spool
SlurmctldLogFile=$STATE/log/slurmctld.log
SlurmdLogFile=$STATE/log/slurmd.log
SlurmctldPidFile=$STATE/run/slurmctld.pid
SlurmdPidFile=$STATE/run/slurmd.pid
NodeName=$HOST NodeAddr=127.0.0.1 NodeHostname=$HOST CPUs=$CPUS RealMemory=$MEM_MB State=UNKNOWN
PartitionName=debug Nodes=$HOST Default=YES MaxTime=INFINITE State=UP OverSubscribe=YES
EOF
)
if [ "$NEW" != "$(cat "$CONF" 2>/dev/null)" ]; then
  # Keep a foreign (not ours) config around instead of silently clobbering it.
  if [ -f "$CONF" ] && ! grep -qxF "$MARK" "$CONF"; then cp -n "$CONF" "$CONF.pangeo-backup"; fi
  # Config changed: stop our daemons (found via the old config's state dir)
  # so that they restart with the new one below.
  PANGEO_HPC_SLURM_DIR=${OLD:-$STATE} "$(dirname "$0")/stop.sh" >/dev/null
  mkdir -p /etc/slurm && echo "$NEW" > "$CONF"
fi
cp "$CONF" "$STATE/slurm.conf"

# 4. Daemons (they daemonize themselves; early errors go to their log file).
if ! alive "$STATE/run/slurmctld.pid" slurmctld; then
  slurmctld </dev/null >>"$STATE/log/slurmctld.log" 2>&1 || die "slurmctld failed to start"
fi
if ! alive "$STATE/run/slurmd.pid" slurmd; then
  slurmd </dev/null >>"$STATE/log/slurmd.log" 2>&1 || die "slurmd failed to start"
fi

# 5. Wait (max ~60 s) until the node is usable; resume it if down/drained.
state=""
for _ in $(seq 120); do
  state=$(sinfo -h -n "$HOST" -o %T 2>/dev/null | head -n1) || true
  case "$state" in
    idle|mixed|allocated|completing) break ;;
    down*|drain*|fail*) scontrol update nodename="$HOST" state=resume 2>/dev/null || true ;;
  esac
  alive "$STATE/run/slurmctld.pid" slurmctld || die "slurmctld died"
  alive "$STATE/run/slurmd.pid" slurmd || die "slurmd died"
  sleep 0.5
done
case "$state" in idle|mixed|allocated|completing) ;; *) die "node $HOST not ready after 60 s (state: '${state:-none}')" ;; esac
echo "slurm up: cluster=pangeo node=$HOST state=$state cpus=$CPUS mem=${MEM_MB}M ports=$CTLD_PORT/$SLURMD_PORT conf=$CONF state_dir=$STATE"
