#!/usr/bin/env bash
# bench/gpu/device.sh RESULTS_DIR [BUILD_DIR]: everything one GPU lease
# measures, in one call, on the GPU machine (after prepare.sh here).
#
#   1. the harness's own tests, with torch (its reference programs);
#   2. bandwidth.cu: how fast grids of each size read device memory
#      (RESULTS_DIR/bandwidth.txt, bandwidth.json; seconds);
#   3. run.sh: build, check against float64, time against eager and
#      torch.compile (RESULTS_DIR/gpu.md, gpu.json, profile_ARCH.json),
#      starting no workload after BUDGET seconds of the harness;
#   4. mirage tune on the top candidates of the workloads in TUNE
#      (RESULTS_DIR/tune_W.json and tune_W.txt);
#   5. compute-sanitizer memcheck, racecheck and synccheck on the entries
#      in SANITIZE, each run once by the harness (RESULTS_DIR/sanitizer.txt);
#   6. the GPU, driver, nvcc and torch versions (RESULTS_DIR/versions.txt).
#
# A step that fails is reported and the next one runs; the exit status is
# 1 when any failed.
#
# Environment (all optional):
#   MIRAGE     the mirage binary for tune (default BUILD_DIR/mirage: build it
#              where it is prepared with CGO_ENABLED=0 go build -o
#              BUILD_DIR/mirage ./cmd/mirage, a static binary)
#   TUNE       workloads to tune (default "rmsnorm_matmul gated_mlp"; "" for none)
#   SANITIZE   harness entry patterns to sanitize (default: none)
#   SANITIZERS compute-sanitizer tools (default "memcheck racecheck synccheck")
#   TESTS      0: skip step 1 (about 100 s of the lease on an H100)
#   BANDWIDTH  0: skip step 2
#   BUDGET     seconds after which the harness starts no workload (default
#              360: with the probe and the nvcc builds before it (about a
#              minute; an entry builds in 1.5-3 s) and a workload begun
#              late, device.sh then ends within a lease's 10-minute call; the
#              harness rewrites gpu.md and gpu.json after each workload, so
#              a call stopped from outside keeps what it measured)
#   TORCH      1: also run examples/torch/llama_mlp.py on the layer prepare.sh
#              kept with MIRAGE_TORCH=1 (RESULTS_DIR/torch-example.txt): the op on
#              CUDA, torch.compile, a CUDA-graph replay, its time beside eager's;
#              and bench/gpu/torch_host.py on it (RESULTS_DIR/torch-host.txt):
#              the op's host time a call, part by part
#   HARNESS    more harness arguments for step 2
set -uo pipefail

usage() { sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'; }
case ${1:-} in -h | --help) usage; exit 0 ;; '' | -*) usage >&2; exit 2 ;; esac

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
results=$1
build=${2:-$repo/out/gpu}
mkdir -p "$results"
results=$(cd "$results" && pwd)
mirage=${MIRAGE:-$build/mirage}
tune=${TUNE-rmsnorm_matmul gated_mlp}
sanitize=${SANITIZE:-}
sanitizers=${SANITIZERS:-memcheck racecheck synccheck}
rc=0
step() { echo "== $* ($(date -u +%H:%M:%S))"; }

step versions
{
	date -u +%Y-%m-%dT%H:%M:%SZ
	nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,clocks.max.mem --format=csv
	nvcc --version | tail -n 2
	python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda)'
} >"$results/versions.txt" 2>&1
cat "$results/versions.txt"

if [ "${TESTS:-1}" != 0 ]; then
	step harness tests
	(cd "$here" && python3 -m unittest test_harness 2>&1 | tail -n 3) || rc=1
fi

if [ "${BANDWIDTH:-1}" != 0 ]; then
	step bandwidth
	cc=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader | head -n 1 | tr -d .)
	if nvcc -O3 -std=c++17 -arch="sm_$cc" -I "$repo/templates" "$here/bandwidth.cu" -o "$build/bandwidth"; then
		"$build/bandwidth" --json "$results/bandwidth.json" >"$results/bandwidth.txt" 2>&1 || rc=1
		cat "$results/bandwidth.txt"
	else
		rc=1
	fi
fi

step run.sh
# shellcheck disable=SC2086 # HARNESS is a list of arguments
"$here/run.sh" "$results" "$build" -- --budget "${BUDGET:-360}" ${HARNESS:-} || rc=1

# The target whose entries run.sh ran (h200 on an H200 where prepared).
arch=$(cat "$results/arch.txt" 2>/dev/null || ls "$build" | grep -m 1 '^sm_')
for w in $tune; do
	step tune "$w"
	f=$build/$arch/superopt/$w/$w.ugraph.json
	if [ -f "$f" ]; then
		"$mirage" tune "$f" --arch "$arch" --candidates 4 -o "$results/tune_$w.json" >"$results/tune_$w.txt" 2>&1 || rc=1
		cat "$results/tune_$w.txt"
	else
		echo "no $f" && rc=1
	fi
done

if [ "${TORCH:-0}" = 1 ]; then
	step torch example
	python3 "$repo/examples/torch/llama_mlp.py" "$build/$arch/torch/llama" --device cuda >"$results/torch-example.txt" 2>&1 || rc=1
	cat "$results/torch-example.txt"
	step torch host time
	python3 "$here/torch_host.py" "$build/$arch/torch/llama" >"$results/torch-host.txt" 2>&1 || rc=1
	cat "$results/torch-host.txt"
fi

if [ -n "$sanitize" ]; then
	: >"$results/sanitizer.txt"
	for tool in $sanitizers; do
		step compute-sanitizer "$tool"
		for p in $sanitize; do
			echo "--- $tool $p" >>"$results/sanitizer.txt"
			compute-sanitizer --tool "$tool" --print-limit 20 python3 "$here/harness.py" --build "$build/$arch" \
				--results "/tmp/sanitize.$tool" --lib-tag "sm_$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader | tr -d .)" \
				--entries "$p" --runs 1 --warmup 0 --no-compile --no-isolate 2>&1 |
				grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|========= (Invalid|Race|Barrier)|FAIL' | head -n 20 >>"$results/sanitizer.txt" || true
		done
	done
	cat "$results/sanitizer.txt"
fi
exit $rc
