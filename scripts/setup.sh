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

# System packages: Z3 for the abstract-expression oracle.
scripts/apt-install.sh libz3-dev

go build -o bin/mirage ./cmd/mirage
echo "setup: built bin/mirage ($(bin/mirage version))"

# The main job on a bundled example: check the hand-written fused μGraph
# against the RMSNorm+MatMul program.
set -x
bin/mirage verify examples/rmsnorm_matmul.py examples/rmsnorm_matmul_mugraph.py
