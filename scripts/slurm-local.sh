#!/usr/bin/env bash
# slurm-local.sh start DIR | stop DIR: a single-node Slurm cluster on this
# machine, for the tests of deploy/slurm (and for trying them by hand).
#
#   start DIR  installs Slurm and MUNGE if missing (8 Debian packages), then
#              starts munged (unless one answers already), slurmctld and
#              slurmd, with their configuration, state and logs under DIR,
#              and waits until the node takes jobs. It prints the line
#              export SLURM_CONF=DIR/slurm.conf, which the clients (sbatch,
#              squeue) need.
#   stop DIR   stops the daemons that start DIR started, by their pid files
#              in DIR, and no others.
#
# Made for a container without systemd or cgroup control (Debian 12,
# Slurm 22.05): processes are tracked through /proc, tasks share the node
# by CPU, and there is no accounting. Run as root.
set -euo pipefail
cmd=${1:-}
dir=${2:-}
if [ -z "$cmd" ] || [ -z "$dir" ]; then
	echo "usage: $0 start|stop DIR" >&2
	exit 2
fi
here=$(cd "$(dirname "$0")" && pwd)

stop_pid() { # stop_pid FILE: kill the process whose pid FILE holds, if it runs
	local f=$1 pid
	[ -s "$f" ] || return 0
	pid=$(cat "$f")
	if kill -0 "$pid" 2>/dev/null; then
		kill "$pid" 2>/dev/null || true
		for _ in $(seq 50); do
			kill -0 "$pid" 2>/dev/null || break
			sleep 0.1
		done
		kill -9 "$pid" 2>/dev/null || true
	fi
	rm -f "$f"
}

case "$cmd" in
stop)
	stop_pid "$dir/slurmd.pid"
	stop_pid "$dir/slurmctld.pid"
	stop_pid "$dir/munged.pid"
	exit 0
	;;
start) ;;
*)
	echo "usage: $0 start|stop DIR" >&2
	exit 2
	;;
esac

if [ "$(id -u)" -ne 0 ]; then
	echo "slurm-local: starting slurmctld and slurmd needs root" >&2
	exit 3
fi
"$here/apt-install.sh" slurmctld slurmd slurm-client munge >&2

mkdir -p "$dir/ctld" "$dir/d"
dir=$(cd "$dir" && pwd)

# MUNGE authenticates the daemons and clients to one another: one key, and
# munged running as the munge user.
if ! munge -n 2>/dev/null | unmunge >/dev/null 2>&1; then
	if [ ! -s /etc/munge/munge.key ]; then
		dd if=/dev/urandom of=/etc/munge/munge.key bs=1024 count=1 status=none
	fi
	chown munge:munge /etc/munge/munge.key
	chmod 0400 /etc/munge/munge.key
	mkdir -p /run/munge /var/log/munge /var/lib/munge
	chown munge:munge /run/munge /var/log/munge /var/lib/munge
	runuser -u munge -- /usr/sbin/munged --force
	pgrep -u munge -n munged >"$dir/munged.pid"
	for _ in $(seq 50); do
		munge -n 2>/dev/null | unmunge >/dev/null 2>&1 && break
		sleep 0.1
	done
fi

host=$(hostname -s)
cat >"$dir/slurm.conf" <<EOF
ClusterName=mirage-local
SlurmctldHost=$host(127.0.0.1)
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
MpiDefault=none
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
JobCompType=jobcomp/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SchedulerParameters=batch_sched_delay=0
ReturnToService=2
StateSaveLocation=$dir/ctld
SlurmdSpoolDir=$dir/d
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/slurmctld.log
SlurmdLogFile=$dir/slurmd.log
NodeName=$host NodeAddr=127.0.0.1 CPUs=$(nproc) State=UNKNOWN
PartitionName=local Nodes=ALL Default=YES MaxTime=INFINITE State=UP
EOF
export SLURM_CONF=$dir/slurm.conf
/usr/sbin/slurmctld -c -f "$SLURM_CONF"
/usr/sbin/slurmd -f "$SLURM_CONF" -N "$host"
for _ in $(seq 100); do
	if sinfo -h -N -o '%t' 2>/dev/null | grep -qE '^(idle|mix|alloc)'; then
		echo "export SLURM_CONF=$SLURM_CONF"
		exit 0
	fi
	sleep 0.2
done
echo "slurm-local: the node did not come up; see $dir/slurmctld.log and $dir/slurmd.log" >&2
tail -5 "$dir/slurmctld.log" "$dir/slurmd.log" >&2 || true
exit 1
