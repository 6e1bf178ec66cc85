#!/usr/bin/env bash
# Installs what mirage needs on a Debian machine, builds it into ./bin, and
# runs the main job on a bundled example. Run as root or with sudo rights.
set -euo pipefail
cd "$(dirname "$0")/.."

need_go=1.26
if ! command -v go >/dev/null 2>&1; then
	echo "setup: Go $need_go or later is required (https://go.dev/dl/); put it on PATH and rerun" >&2
	exit 1
fi

# System packages: Z3 for the abstract-expression oracle, gcc for its cgo
# binding, g++ for the CPU emulator that runs emitted CUDA in the tests.
scripts/apt-install.sh libz3-dev gcc g++

go build -o bin/mirage ./cmd/mirage
echo "setup: built bin/mirage ($(bin/mirage version))"

# The main job on a bundled example: superoptimize RMSNorm+MatMul into out/
# (out/rmsnorm_matmul.ugraph.json, ranked, and the best candidate's CUDA),
# then check the best candidate against the program in float64.
set -x
bin/mirage superopt examples/rmsnorm_matmul.py -o out --time-limit 120s
bin/mirage verify --method float examples/rmsnorm_matmul.py out/rmsnorm_matmul.ugraph.json
