#!/usr/bin/env bash
# Start a one-node Slurm cluster (munged, slurmctld, slurmd; CPU only) for the class-grading test.
#
#   tests/slurm/start-cluster.sh DIR      writes DIR/slurm.conf and starts the daemons (as root)
#   tests/slurm/start-cluster.sh --stop DIR
#
# Everything lives in DIR (config, state, logs, pid files); the ports are free ones picked
# here, so the system's own Slurm configuration, if any, is left alone. Client commands use
# the cluster with SLURM_CONF=DIR/slurm.conf. The node advertises a count-only "gpu" GRES
# (two stand-in devices, /dev/null and /dev/zero) so that a GPU-tier job script (--gres=gpu:1) passes `sbatch --test-only`;
# the simulator tier asks for CPUs only. On a GPU machine, SLURM_GPU_FILES="/dev/nvidia0 /dev/nvidia1" makes
# the GRES those real GPUs (slurmd then sets each task's CUDA_VISIBLE_DEVICES). SLURM_PLUGIN_DIR names another
# plugin folder (a carried bundle, tools/slurm_bundle.sh). Exit status 3 with a reason on stderr when the
# cluster cannot start (not root, Slurm or munge not installed, a daemon does not come up).
set -euo pipefail

stop=0
if [ "${1:-}" = --stop ]; then stop=1; shift; fi
dir=$(realpath -m "${1:?usage: start-cluster.sh [--stop] DIR}")

if [ $stop = 1 ]; then
  for name in slurmd slurmctld; do
    if [ -f "$dir/$name.pid" ]; then kill "$(cat "$dir/$name.pid")" 2>/dev/null || true; fi
  done
  if [ -f "$dir/munged.pid" ]; then kill "$(cat "$dir/munged.pid")" 2>/dev/null || true; fi
  exit 0
fi

fail() { echo "slurm cluster: $*" >&2; exit 3; }
[ "$(id -u)" = 0 ] || fail "needs root to start slurmd and munged"
for tool in slurmctld slurmd munged sbatch squeue scancel; do
  command -v "$tool" >/dev/null || PATH=$PATH:/usr/sbin command -v "$tool" >/dev/null \
    || fail "$tool not installed (apt-get install slurm-wlm munge)"
done
export PATH=$PATH:/usr/sbin
mkdir -p "$dir/state" "$dir/spool/gradenode" "$dir/munge"

# munge: a daemon of our own, with its own socket, unless a system one answers already
if munge -n </dev/null >/dev/null 2>&1; then
  socket=$(munge --help 2>/dev/null | sed -n 's/.*--socket.*\[\(.*\)\].*/\1/p' | head -1)
  socket=${socket:-/run/munge/munge.socket.2}
else
  socket="$dir/munge/munge.socket"
  [ -f /etc/munge/munge.key ] || fail "/etc/munge/munge.key missing (the munge package creates it)"
  mkdir -p /var/log/munge /var/lib/munge /run/munge
  munged --force --socket="$socket" --pid-file="$dir/munged.pid" --log-file="$dir/munged.log" \
    --seed-file="$dir/munge/seed" --key-file=/etc/munge/munge.key || fail "munged did not start: $(tail -3 "$dir/munged.log" 2>/dev/null)"
fi

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
host=$(hostname -s)
cpus=$(nproc)
gpu_files=${SLURM_GPU_FILES:-/dev/null /dev/zero}
n_gpus=$(echo $gpu_files | wc -w)
cat > "$dir/slurm.conf" <<CONF
ClusterName=grading
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=$(free_port)
SlurmdPort=$(free_port)
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$socket
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool/%n
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/slurmctld.log
SlurmdLogFile=$dir/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SwitchType=switch/none
MpiDefault=none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
GresTypes=gpu
${SLURM_PLUGIN_DIR:+PluginDir=$SLURM_PLUGIN_DIR}
ReturnToService=2
MinJobAge=3600
SlurmdTimeout=30
InactiveLimit=0
KillWait=5
NodeName=gradenode NodeAddr=127.0.0.1 CPUs=$cpus Gres=gpu:$n_gpus State=UNKNOWN
PartitionName=grading Nodes=gradenode Default=YES MaxTime=INFINITE State=UP OverSubscribe=NO
CONF
{ echo "AutoDetect=off"; for f in $gpu_files; do echo "NodeName=gradenode Name=gpu File=$f"; done; } > "$dir/gres.conf"
export SLURM_CONF="$dir/slurm.conf"
slurmctld -f "$SLURM_CONF" || fail "slurmctld did not start: $(tail -3 "$dir/slurmctld.log" 2>/dev/null)"
# slurmd loads a cgroup plugin even though this cluster tracks processes without cgroups. Its cgroup/v2 plugin
# needs D-Bus (libdbus and systemd's bus), which a container on a cgroup v2 host often lacks ("cannot create
# cgroup context for cgroup/v2"); the cgroup/v1 plugin loads without it, so that is the one tried next.
if ! slurmd -f "$SLURM_CONF" -N gradenode; then
  grep -q "cgroup" "$dir/slurmd.log" 2>/dev/null || fail "slurmd did not start: $(tail -3 "$dir/slurmd.log" 2>/dev/null)"
  echo "CgroupPlugin=cgroup/v1" > "$dir/cgroup.conf"
  slurmd -f "$SLURM_CONF" -N gradenode \
    || fail "slurmd did not start, with the autodetected cgroup plugin nor cgroup/v1: $(tail -3 "$dir/slurmd.log" 2>/dev/null)"
fi
for _ in $(seq 60); do
  if sinfo -h -N -o '%T' 2>/dev/null | grep -qE '^(idle|mixed|allocated)'; then
    echo "$SLURM_CONF"
    exit 0
  fi
  sleep 0.5
done
fail "the node did not become idle: $(sinfo -h -N -o '%T %E' 2>&1 | head -2); $(tail -3 "$dir/slurmd.log" 2>/dev/null)"
