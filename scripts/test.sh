#!/usr/bin/env bash
# Runs everything that proves the tree works: vet, the unit tests, and a few
# seconds of every fuzz target.
set -euo pipefail
cd "$(dirname "$0")/.."
fuzztime=${FUZZTIME:-5s}

go vet ./...
go test -count=1 ./...

# The GPU harness's pure-Python parts (the parts that need torch and a GPU
# skip themselves).
if command -v python3 >/dev/null 2>&1; then
	python3 -m unittest discover -s bench/gpu -p 'test_*.py'
fi

# Each Fuzz function runs alone: go test -fuzz takes one target at a time.
grep -rl --include='*_test.go' '^func Fuzz' . | while read -r f; do
	pkg="./$(dirname "${f#./}")"
	for target in $(sed -n 's/^func \(Fuzz[A-Za-z0-9_]*\)(.*/\1/p' "$f"); do
		echo "fuzz $pkg $target ($fuzztime)"
		go test -run='^$' -fuzz="^${target}\$" -fuzztime="$fuzztime" "$pkg"
	done
done
echo "test.sh: all passed"
