#!/usr/bin/env bash
# A team's regression check, for its CI: search the team's own layers (and
# mirage's built-in workloads, unless ONLY_OURS=1) and compare with the
# baseline committed beside them. Exit 0 when nothing got worse, 1 on a
# regression (a lost fused result, a worse estimate, no verified
# candidates, a slower search or measured kernel) or a changed program, 2
# on unusable input (a missing or foreign baseline, a broken program).
#
#   examples/ci/bench-regress.sh [LAYERS_DIR [BASELINE]]
#
# LAYERS_DIR: the team's programs (.py, .ugraph.json); default: examples/.
# BASELINE:   the results.json of an accepted run; default: LAYERS_DIR/baseline.json.
#             Record it (again) after a change meant to move it:
#               RECORD=1 examples/ci/bench-regress.sh LAYERS_DIR
# The run's results.json, history.jsonl, latest.md and speedup.svg go to
# $OUT (default: bench-out/), to keep as the job's artifacts.
set -euo pipefail

layers=${1:-examples}
baseline=${2:-$layers/baseline.json}
out=${OUT:-bench-out}
mirage=${MIRAGE:-mirage}
only=()
if [[ ${ONLY_OURS:-0} == 1 ]]; then
	only=(--only-paths)
fi
# The search's budget per workload; keep it the same as the baseline's.
limit=${TIME_LIMIT:-2m}

if [[ ${RECORD:-0} == 1 ]]; then
	"$mirage" bench "${only[@]}" "$layers" --time-limit "$limit" -o "$out"
	cp "$out/results.json" "$baseline"
	echo "recorded $baseline: commit it with a message that says why the figures moved"
	exit 0
fi
# On shared CI runners the calibrated search time is noisy: pass
# --time-ratio 0 there (TIME_RATIO=0) and keep the check for dedicated ones.
exec "$mirage" bench "${only[@]}" "$layers" --time-limit "$limit" -o "$out" \
	--compare "$baseline" --time-ratio "${TIME_RATIO:-1.5}"
