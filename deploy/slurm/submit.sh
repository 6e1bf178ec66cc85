#!/usr/bin/env bash
# submit.sh FILE N [sbatch options] [-- superopt flags]: submits a sharded
# mirage superopt of FILE to Slurm: an array of N tasks, one per shard
# (superopt.sbatch), then the merge (merge.sbatch), which starts once every
# task has succeeded (--dependency=afterok). It prints the two job ids:
#
#   array 1234
#   merge 1235
#
# The sbatch options (a partition, --cpus-per-task, --time) go to both
# jobs; the superopt flags (--time-limit, --config) to every shard. The
# environment (MIRAGE, MIRAGE_SHARD_DIR, MIRAGE_OUT: see the .sbatch files)
# goes with the jobs. A task that fails leaves the merge pending for ever
# (DependencyNeverSatisfied): run the index again alone, with the sbatch
# options and superopt flags the run was submitted with (a shard searched
# with other flags is another run's, which merge refuses):
#   sbatch --array=I --export=ALL,MIRAGE_SHARDS=N [sbatch options] superopt.sbatch FILE [superopt flags]
# then sbatch [sbatch options] merge.sbatch FILE.
set -euo pipefail
if [ $# -lt 2 ]; then
	echo "usage: $0 FILE N [sbatch options] [-- superopt flags]" >&2
	exit 2
fi
file=$1
n=$2
shift 2
if ! [[ "$n" =~ ^[0-9]+$ ]] || [ "$n" -lt 1 ]; then
	echo "submit.sh: N=$n: want a number of shards, at least 1" >&2
	exit 2
fi
if [ ! -f "$file" ]; then
	echo "submit.sh: $file: no such program" >&2
	exit 2
fi
sbatch_opts=()
while [ $# -gt 0 ] && [ "$1" != "--" ]; do
	sbatch_opts+=("$1")
	shift
done
[ "${1:-}" = "--" ] && shift
here=$(cd "$(dirname "$0")" && pwd)

array=$(sbatch --parsable --array="0-$((n - 1))" --export="ALL,MIRAGE_SHARDS=$n" "${sbatch_opts[@]}" \
	"$here/superopt.sbatch" "$file" "$@")
array=${array%%;*} # --parsable prints id;cluster on multi-cluster setups
merge=$(sbatch --parsable --dependency="afterok:$array" --kill-on-invalid-dep=yes "${sbatch_opts[@]}" \
	"$here/merge.sbatch" "$file")
merge=${merge%%;*}
echo "array $array"
echo "merge $merge"
