#!/usr/bin/env bash
# Throw-away single-node Slurm cluster on this machine (real slurmctld +
# slurmd, authenticated by a private munged), everything kept in one folder.
#
#   scripts/slurm_local.sh start  DIR   # DIR: an empty folder the caller made
#   scripts/slurm_local.sh status DIR
#   scripts/slurm_local.sh stop   DIR
#
# Needs (Debian 12): apt-get install --no-install-recommends slurm-wlm munge
# Runs as root (SlurmUser=root; the system munge/slurm services stay unused).
# Client commands (sbatch, squeue, sinfo, scancel, scontrol) find this
# cluster only with  export SLURM_CONF=DIR/slurm.conf  (no accounting, so no
# sacct).  Ports: SLURM_LOCAL_PORT (slurmctld, default 6817) and that + 1.
set -euo pipefail

usage() { echo "usage: $0 start|stop|status DIR" >&2; exit 2; }
[[ $# -eq 2 ]] || usage
cmd=$1
dir=$(cd "$2" && pwd)          # absolute path: it goes into slurm.conf
export SLURM_CONF=$dir/slurm.conf
node=$(hostname -s)            # slurmd must find its own NodeName
port=${SLURM_LOCAL_PORT:-6817}

# Stop the process whose pid is in file $1 (if any), waiting up to 15 s.
stop_pid() {
    local f=$1 pid i
    [[ -s $f ]] || return 0
    pid=$(cat "$f")
    if kill "$pid" 2>/dev/null; then
        for ((i = 0; i < 150; i++)); do
            kill -0 "$pid" 2>/dev/null || break
            sleep 0.1
        done
        kill -9 "$pid" 2>/dev/null || true
    fi
    rm -f "$f"
}

start() {
    mkdir -p "$dir/state" "$dir/spool"
    chmod 0755 "$dir"          # munged: not group/world-writable, but x for all

    # --- munge: own key, socket, pid, log and seed in DIR ---------------
    if [[ ! -s $dir/munge.key ]]; then
        dd if=/dev/urandom of="$dir/munge.key" bs=1024 count=1 status=none
    fi
    chmod 0400 "$dir/munge.key"
    # --force: tolerate loose permissions above DIR and a stale socket.
    munged --force --socket="$dir/munge.socket" --key-file="$dir/munge.key" \
        --pid-file="$dir/munged.pid" --log-file="$dir/munged.log" \
        --seed-file="$dir/munged.seed"

    # --- slurm.conf ------------------------------------------------------
    # The node is addressed as 127.0.0.1, so the hostname need not resolve.
    local cpus mem
    cpus=$(nproc)
    mem=$(( $(free -m | awk '/^Mem:/ {print $2}') * 9 / 10 ))
    cat > "$SLURM_CONF" <<EOF
ClusterName=local
SlurmctldHost=$node(127.0.0.1)
SlurmctldPort=$port
SlurmdPort=$((port + 1))
SlurmUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$dir/munge.socket
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/slurmctld.log
SlurmdLogFile=$dir/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
# CR_Core: memory is not a consumable (else each job takes all of it).
SelectTypeParameters=CR_Core
SchedulerType=sched/backfill
# Schedule at once on submit/completion (default: batched every 3 s).
SchedulerParameters=batch_sched_delay=0,sched_min_interval=0
MpiDefault=none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
ReturnToService=2
MailProg=/bin/true
# Cancel a job whose dependency failed instead of leaving it pending.
DependencyParameters=kill_invalid_depend
SlurmdTimeout=30
NodeName=$node NodeAddr=127.0.0.1 CPUs=$cpus RealMemory=$mem State=UNKNOWN
PartitionName=debug Nodes=$node Default=YES MaxTime=INFINITE State=UP
EOF
    # Slurm >= 24.05's slurmd starts its cgroup plugin whatever the task and
    # proctrack plugins are, and fails where /sys/fs/cgroup is not mounted
    # (a chroot, some containers). This cluster uses no cgroup: say so.
    local version
    version=$(slurmd -V | awk '{print $2}')
    if [[ $(printf '%s\n' 24.05 "$version" | sort -V | head -1) == 24.05 ]]; then
        echo "CgroupPlugin=disabled" > "$dir/cgroup.conf"
    fi

    # --- daemons (both fork into the background) -------------------------
    local since
    since=$(date +%FT%T)
    slurmctld -f "$SLURM_CONF"
    slurmd -f "$SLURM_CONF" -N "$node"

    # --- wait (max 60 s) until the node is idle and registered by this
    # slurmd (a restart in the same DIR recovers "idle" from saved state).
    local i st="" t
    for ((i = 0; i < 120; i++)); do
        st=$(sinfo -h -N -o %t 2>/dev/null || true)
        t=$(scontrol show node "$node" 2>/dev/null |
            grep -o 'SlurmdStartTime=[^ ]*' || true)
        [[ $st == idle && ! ${t#*=} < $since ]] && break
        sleep 0.5
    done
    if [[ $st != idle || ${t#*=} < $since ]]; then
        echo "slurm_local: node not idle after 60 s (state: '$st')" >&2
        tail -n 20 "$dir"/*.log >&2 || true
        exit 1
    fi
    echo "slurm_local: cluster up; client commands need:"
    echo "export SLURM_CONF=$SLURM_CONF"
}

stop() {
    # In parallel: each daemon takes 1-2 s to exit.
    stop_pid "$dir/slurmd.pid" &
    stop_pid "$dir/slurmctld.pid" &
    stop_pid "$dir/munged.pid" &
    wait
}

status() {
    sinfo
    squeue
}

case $cmd in
    start | stop | status) "$cmd" ;;
    *) usage ;;
esac
