#!/usr/bin/env bash
# bench/gpu/run.sh RESULTS_DIR [BUILD_DIR] [-- HARNESS_ARGS...]: build and
# time the emitted CUDA on this machine's GPU.
#
# Needs an NVIDIA GPU (sm_80 or sm_90: A100, H100, H200), CUDA 12 or 13's
# nvcc and PyTorch with CUDA. BUILD_DIR (default: out/gpu in the repository)
# is what bench/gpu/prepare.sh wrote; when it has nothing for this GPU's
# architecture and Go is on PATH, run.sh runs prepare.sh itself first.
#
# Then it compiles every entry of BUILD_DIR/ARCH into
# BUILD_DIR/ARCH/ENTRY/libNAME.sm_XY.so (nvcc -O3 -arch=sm_XY -shared, in
# parallel; the log beside it as nvcc.sm_XY.log; an up-to-date library is
# kept) and runs bench/gpu/harness.py, which checks and times each one and
# writes RESULTS_DIR/gpu.md, gpu.json and profile_ARCH.json (and arch.txt:
# the mirage target whose entries ran). Arguments after
# "--" go to the harness (python3 bench/gpu/harness.py --help lists them).
#
# Environment (all optional):
#   PYTHON       the Python with torch (default python3)
#   NVCC         the nvcc to use (default: on PATH, else $CUDA_HOME/bin, /usr/local/cuda/bin)
#   NVCC_FLAGS   more nvcc flags
#   NVCC_ARCH    nvcc's -arch (default sm_XY of the GPU)
#   MIRAGE_ARCH  the emitted architecture to use (default sm_90 on 9.x, sm_80 on 8.x;
#                h200 on an H200 where BUILD_DIR has h200 entries)
#   JOBS         parallel nvcc jobs (default: the CPU count)
# and prepare.sh's, when it runs.
set -euo pipefail

usage() { sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; }
case ${1:-} in -h | --help) usage; exit 0 ;; '' | -*) usage >&2; exit 2 ;; esac

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
results=$1
shift
build=$repo/out/gpu
if [ $# -gt 0 ] && [ "${1#-}" = "$1" ]; then
	build=$1
	shift
fi
[ "${1:-}" = "--" ] && shift
python=${PYTHON:-python3}

# The GPU: its compute capability and name, from torch.
cap=$("$python" -c 'import torch, sys
if not torch.cuda.is_available(): sys.exit("torch sees no CUDA device")
print("%d %d %s" % (*torch.cuda.get_device_capability(0), torch.cuda.get_device_name(0)))') || {
	echo "run.sh: cannot read the GPU's compute capability through $python and torch" >&2
	exit 2
}
read -r major minor gpu_name <<<"$cap"
case $major in
9) emitted=sm_90 ;;
8) emitted=sm_80 ;;
*) emitted= ;;
esac
# An H200 runs sm_90 code; where prepare.sh emitted for mirage's h200
# target (ranked by the H200's figures), those entries are the ones to run.
case $gpu_name in
*H200*) if [ -z "${MIRAGE_ARCH:-}" ] && ls "$build/h200"/*/meta.json >/dev/null 2>&1; then emitted=h200; fi ;;
esac
emitted=${MIRAGE_ARCH:-$emitted}
if [ -z "$emitted" ]; then
	echo "run.sh: compute capability $major.$minor: mirage emits for sm_80 (8.x) and sm_90 (9.x); set MIRAGE_ARCH to try one" >&2
	exit 2
fi
nvcc_arch=${NVCC_ARCH:-sm_$major$minor}
echo "GPU: $gpu_name, compute capability $major.$minor; code emitted for $emitted, built for $nvcc_arch"
mkdir -p "$results"
echo "$emitted" >"$results/arch.txt" # the target whose entries ran (device.sh tunes for it)

# The emitted sources: prepare them here when they are missing.
if ! ls "$build/$emitted"/*/meta.json >/dev/null 2>&1; then
	if command -v go >/dev/null; then
		echo "run.sh: no entries in $build/$emitted: running prepare.sh"
		MIRAGE_ARCHS=$emitted "$here/prepare.sh" "$build"
	else
		echo "run.sh: no entries in $build/$emitted and no Go here: run" >&2
		echo "  MIRAGE_ARCHS=$emitted bench/gpu/prepare.sh $build" >&2
		echo "on a machine with Go and copy $build here" >&2
		exit 2
	fi
fi
dir=$(cd "$build/$emitted" && pwd)

# nvcc, CUDA 12 or 13.
nvcc=${NVCC:-}
if [ -z "$nvcc" ]; then
	for c in "$(command -v nvcc || true)" "${CUDA_HOME:-}/bin/nvcc" /usr/local/cuda/bin/nvcc; do
		if [ -n "$c" ] && [ -x "$c" ]; then nvcc=$c; break; fi
	done
fi
[ -n "$nvcc" ] || { echo "run.sh: no nvcc (set NVCC or put it on PATH)" >&2; exit 2; }
release=$("$nvcc" --version | sed -n 's/.*release \([0-9][0-9]*\)\.\([0-9]*\).*/\1.\2/p')
case $release in
12.* | 13.*) echo "nvcc: $nvcc (CUDA $release)" ;;
*) echo "run.sh: warning: $nvcc is CUDA ${release:-of unknown release}; the harness is meant for CUDA 12 or 13" >&2 ;;
esac

# Compile every entry that has a manifest, in parallel.
export nvcc nvcc_arch
export NVCC_FLAGS=${NVCC_FLAGS:-}
# shellcheck disable=SC2317 # run by xargs, through export -f
compile_one() {
	local edir=$1 cu name lib log
	for cu in "$edir"/*.cu; do break; done
	[ -f "$cu" ] || return 0
	name=$(basename "$cu" .cu)
	lib=$edir/lib$name.$nvcc_arch.so
	log=$edir/nvcc.$nvcc_arch.log
	if [ -f "$lib" ] && [ "$lib" -nt "$cu" ] && [ "$lib" -nt "$edir/mirage_runtime.cuh" ]; then
		return 0
	fi
	rm -f "$lib"
	# The libraries of the CUDA toolkit that the code calls (its header says).
	local links=()
	grep -q '^#define MIRAGE_CUBLASLT' "$cu" && links+=(-lcublasLt)
	# shellcheck disable=SC2086 # NVCC_FLAGS is a list of flags
	# -Xptxas -v: each kernel's registers and spills, in the log the
	# harness reads into gpu.json and gpu.md.
	if "$nvcc" -O3 -std=c++17 -arch="$nvcc_arch" -shared -Xcompiler -fPIC -Xptxas -v $NVCC_FLAGS \
		-o "$lib.tmp" "$cu" "${links[@]}" >"$log" 2>&1; then
		mv "$lib.tmp" "$lib"
	else
		rm -f "$lib.tmp"
		echo "  nvcc FAILED for $(basename "$edir"): $(tail -n 1 "$log")"
	fi
	return 0
}
export -f compile_one
jobs=${JOBS:-$(nproc 2>/dev/null || echo 4)}
entries=()
for m in "$dir"/*/manifest.json; do
	[ -f "$m" ] && entries+=("$(dirname "$m")")
done
echo "compiling ${#entries[@]} entries with $jobs jobs"
start=$(date +%s)
if [ ${#entries[@]} -gt 0 ]; then
	# shellcheck disable=SC2016 # $1 is the inner shell's
	printf '%s\0' "${entries[@]}" | xargs -0 -n 1 -P "$jobs" bash -c 'compile_one "$1"' _
fi
echo "compiled in $(($(date +%s) - start)) s"

mkdir -p "$results"
rc=0
"$python" "$here/harness.py" --build "$dir" --results "$results" --lib-tag "$nvcc_arch" --nvcc "$nvcc" "$@" || rc=$?

# The dynamic batch's decode loop (prepare.sh's dynamic/engine): one entry
# point, m changing at every step, each step checked and timed.
if [ -x "$dir/dynamic/engine/run-gpu.sh" ]; then
	echo "== the decode loop of examples/engine on the GPU (m in 1..64)"
	NVCC=$nvcc "$dir/dynamic/engine/run-gpu.sh" "$nvcc_arch" | tee "$results/engine.txt" || rc=1
fi
exit $rc
