#!/usr/bin/env bash
# same-output.sh [REV]: checks that the working tree's mirage writes the
# same files and prints the same results as REV's (default HEAD) on every
# example and bench program: a refactor's proof that nothing changed.
#
# Compared byte for byte: the CUDA and manifests emit writes for every
# program and μGraph file (sm_80 and sm_90; a dynamic program too), emit
# --json, show (text, --absexpr, --estimate --json), eval --json, verify
# (ff and float) and every command's --help; and what superopt writes for
# each example with a fixed state budget, one worker and no cache (its
# seeds and enumeration are then deterministic; its .ugraph.json, which
# records timings, is left out).
# Exit status 0 when everything is identical, 1 with the differences.
set -euo pipefail
cd "$(dirname "$0")/.."
rev=${1:-HEAD}
work=$(mktemp -d)
trap 'git worktree remove --force "$work/base" >/dev/null 2>&1 || true; rm -rf "$work"' EXIT

git worktree add --detach "$work/base" "$rev" >/dev/null 2>&1
(cd "$work/base" && go build -o "$work/old" ./cmd/mirage)
go build -o "$work/new" ./cmd/mirage

programs=(examples/*.py bench/workloads/*.py)
graphs=(ugraph/kernel/testdata/*.ugraph.json cost/testdata/*/*.measured.ugraph.json)

# out FILE CMD...: what CMD prints, both streams, and its exit status.
out() {
	local file=$1
	shift
	"$@" >"$file" 2>&1 && echo "exit 0" >>"$file" || echo "exit $?" >>"$file"
}

# run BIN DIR: everything the comparison covers, into DIR.
run() {
	local bin=$1 dir=$2 f name arch
	mkdir -p "$dir/emit" "$dir/superopt"
	for f in "${programs[@]}" "${graphs[@]}"; do
		name=$(basename "$f" .py)
		name=${name%.ugraph.json}
		for arch in sm_80 sm_90; do
			"$bin" emit "$f" --arch "$arch" -o "$dir/emit/$name-$arch" --json >"$dir/emit/$name-$arch.stdout" 2>&1 || echo "exit $?" >>"$dir/emit/$name-$arch.stdout"
		done
		out "$dir/show-$name.txt" "$bin" show "$f"
		out "$dir/absexpr-$name.txt" "$bin" show "$f" --absexpr
		out "$dir/estimate-$name.json" "$bin" show "$f" --estimate --json
		out "$dir/eval-$name.json" "$bin" eval "$f" --json --max-memory 2GiB
	done
	for f in examples/*_mugraph.py bench/workloads/*_mugraph.py; do
		name=$(basename "$f" _mugraph.py)
		out "$dir/verify-ff-$name.txt" "$bin" verify "${f%_mugraph.py}.py" "$f"
		out "$dir/verify-float-$name.txt" "$bin" verify "${f%_mugraph.py}.py" "$f" --method float
		out "$dir/verify-wrong-$name.txt" "$bin" verify "$f" examples/gqa.py
	done
	for c in "" superopt merge emit bench show eval verify tune version; do
		out "$dir/help-${c:-mirage}.txt" "$bin" $c --help
	done
	out "$dir/emit/dynamic.stdout" "$bin" emit examples/rmsnorm_matmul.py --dynamic 0:0=1..64 -o "$dir/emit/dynamic" --json
	out "$dir/eval-dynamic.txt" "$bin" eval examples/rmsnorm_matmul.py --dynamic 0:0=1..64 --rows 5
	out "$dir/show-dynamic.txt" "$bin" show examples/rmsnorm_matmul.py --dynamic 0:0=1..64
	for f in examples/*.py; do
		name=$(basename "$f" .py)
		"$bin" superopt "$f" --no-cache --workers 1 --max-states 2000 --time-limit 120s -o "$dir/superopt/$name" >/dev/null 2>&1 || echo "exit $?" >"$dir/superopt/$name.failed"
		rm -f "$dir/superopt/$name/"*.ugraph.json "$dir/superopt/$name/"*.manifest.json
	done
}
run "$work/old" "$work/out/old" &
run "$work/new" "$work/out/new"
wait
# Paths printed in the outputs name each side's directory.
find "$work/out/old" -type f -exec sed -i "s|$work/out/old|OUT|g" {} +
find "$work/out/new" -type f -exec sed -i "s|$work/out/new|OUT|g" {} +
n=$(find "$work/out/new" -type f | wc -l)
if diff -r "$work/out/old" "$work/out/new"; then
	echo "same-output: $n files identical to $rev's"
else
	echo "same-output: the files above differ from $rev's" >&2
	exit 1
fi
