#!/usr/bin/env bash
# A single-node Slurm cluster on this machine, for testing `study --slurm` and `sweep --slurm` (CI starts one).
#   local-slurm.sh start   installs slurm-wlm and munge when missing (Debian, as root), starts munged, slurmctld
#                          and slurmd on localhost with a private configuration, waits until the node is idle and
#                          prints `export SLURM_CONF=...` for the shell that submits
#   local-slurm.sh stop    stops the daemons it started
# State, logs and slurm.conf live in $NVL_SLURM_DIR (default /tmp/nvl72emu-slurm); /etc/slurm is not touched.
set -euo pipefail
dir=${NVL_SLURM_DIR:-/tmp/nvl72emu-slurm}
conf=$dir/slurm.conf

stop() {
  for pid_file in "$dir/slurmd.pid" "$dir/slurmctld.pid" "$dir/munged.pid"; do
    [ -f "$pid_file" ] && kill "$(cat "$pid_file")" 2>/dev/null || true
    rm -f "$pid_file"
  done
}

start() {
  if ! command -v slurmctld > /dev/null || ! command -v munged > /dev/null; then
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends slurm-wlm munge > /dev/null
  fi
  stop
  mkdir -p "$dir/state" "$dir/spool"
  # munged: its own key and socket in $dir, run as root (--force: it refuses root-owned paths otherwise).
  [ -f "$dir/munge.key" ] || { dd if=/dev/urandom of="$dir/munge.key" bs=1 count=1024 status=none; chmod 400 "$dir/munge.key"; }
  munged --force --key-file="$dir/munge.key" --socket="$dir/munge.socket" --pid-file="$dir/munged.pid" \
    --log-file="$dir/munged.log" --seed-file="$dir/munge.seed"
  local host mem_mb
  host=$(hostname -s)
  mem_mb=$(awk '/MemTotal/ {print int($2 / 1024 * 0.9)}' /proc/meminfo)
  cat > "$conf" << EOF
ClusterName=nvl72emu-local
SlurmctldHost=$host(127.0.0.1)
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$dir/munge.socket
CredType=cred/munge
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/slurmctld.log
SlurmdLogFile=$dir/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
MpiDefault=none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
DefMemPerCPU=1024
ReturnToService=2
NodeName=$host NodeAddr=127.0.0.1 CPUs=$(nproc) RealMemory=$mem_mb State=UNKNOWN
PartitionName=local Nodes=ALL Default=YES MaxTime=INFINITE State=UP
EOF
  export SLURM_CONF=$conf
  slurmctld -f "$conf"
  slurmd -f "$conf"
  for _ in $(seq 60); do
    if sinfo -h -o %T 2>/dev/null | grep -qx idle; then
      echo "export SLURM_CONF=$conf"
      return 0
    fi
    sleep 1
  done
  echo "local-slurm: the node did not become idle in 60 s; see $dir/*.log" >&2
  sinfo >&2 || true
  return 1
}

case "${1:-}" in
  start) start ;;
  stop) stop ;;
  *) echo "usage: local-slurm.sh start|stop" >&2; exit 2 ;;
esac
