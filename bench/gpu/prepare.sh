#!/usr/bin/env bash
# bench/gpu/prepare.sh OUTDIR: write the CUDA sources that bench/gpu/run.sh
# builds and times. Needs Go (or MIRAGE=path/to/mirage), no GPU.
#
# For each target architecture (MIRAGE_ARCHS) and each of the sixteen workloads
# it writes, under OUTDIR/ARCH/:
#
#   WORKLOAD.unfused/     mirage emit of the program itself (one kernel per op)
#   WORKLOAD.mugraph/     mirage emit of the hand-written fused μGraph
#                         (examples/ or bench/workloads/WORKLOAD_mugraph.py,
#                         where there is one)
#   WORKLOAD.cN/          mirage emit --candidate N of the superopt result,
#                         N = 0 .. MIRAGE_TOP_K-1 (0 = the model's best)
#   superopt/WORKLOAD.json   superopt --json (estimated_us of every candidate)
#   superopt/WORKLOAD.log    its stderr
#   superopt/WORKLOAD/WORKLOAD.ugraph.json   the candidates
#   prepare.txt           how and from what this was made
#
# Each entry directory holds NAME.cu, NAME.h, mirage_runtime.cuh,
# manifest.json (emit --json) and meta.json (workload, variant, candidate).
# An emit that fails leaves meta.json and emit.log but no manifest.json;
# the harness reports such an entry as FAIL. OUTDIR is relocatable: nothing
# in it refers to another path of this machine that the harness reads.
#
# Environment (all optional):
#   MIRAGE                  the mirage binary (default: go build -o bin/mirage ./cmd/mirage)
#   MIRAGE_ARCHS            mirage targets to emit for (default "sm_90 h200": an H100's and an
#                           H200's answers, both sm_90 code, each ranked by its GPU's figures;
#                           run.sh takes the one of the GPU it runs on; add sm_80 for an A100)
#   MIRAGE_TOP_K            superopt candidates to emit per workload (default 4): superopt
#                           runs with --max-candidates K and writes its K best answers
#   MIRAGE_CANDIDATES       which candidates instead, by index (e.g. "0 1 5 15": spread-out
#                           ones test the model's order); superopt then keeps every verified
#                           answer (--max-candidates 0)
#   MIRAGE_SEED_RULES       seed rules (package seed) whose best verified candidate each workload
#                           also emits, as WORKLOAD.cN beside the top K (default "split_k": the
#                           model ranks split reductions below one-kernel forms, and the run
#                           tests it); superopt then keeps every verified answer, so it verifies
#                           until the time limit; "" for none (and with MIRAGE_TOP_K=0, none)
#   MIRAGE_FILL             1 (default, with python3): also emit each workload's best-ranked
#                           fused candidate (its kernel moving the most bytes, 4 MB or more, is
#                           graph-defined) whose every kernel moving 4 MB or more fills the GPU
#                           (show --estimate's fills_gpu: 90% of the SMs busy, 8 warps on each),
#                           scanning the first MIRAGE_FILL_SCAN (default 400): the model ranks
#                           some below kernels on fewer SMs, and the run tests it; 0: not
#   MIRAGE_LAUNCH_SWEEP     workloads whose best fused answer's heaviest graph-defined kernel is also
#                           emitted at every other block size and pipeline depth the search
#                           chooses among (bench/gpu/variants.py: 128, 256, 512 threads by the
#                           plan's default depth, 2, 3 or 6 stages), as WORKLOAD.tTHREADSsSTAGES
#                           with the model's estimate (launch/): the measured data held only
#                           128-thread kernels at the default depth, and the run tests the model
#                           on both axes (default, with python3: "gated_mlp llama_mlp_block";
#                           "" for none)
#   MIRAGE_PDL              1 (default, with python3): also emit each workload's best answer (c0) with
#                           emit --dependent-launch, as WORKLOAD.c0.pdl, where it launches two kernels
#                           or more and one is graph-defined: programmatic dependent launches (sm_90),
#                           which the cost model does not price, and the run measures; 0: not
#   MIRAGE_TIME_LIMIT       superopt --time-limit per workload and arch (default 60s)
#   MIRAGE_SUPEROPT_FLAGS   more superopt flags (default "--no-cache": a cached
#                           result may come from a search with another time limit)
#   MIRAGE_WORKLOADS        which workloads (default: all sixteen: rmsnorm_matmul gated_mlp
#                           gqa qknorm_gqa lora ntrans llama_mlp_block gqa_repeat_kv
#                           llama_layer stacked_layers encoder_mlp softmax_vocab
#                           lora_llama mqa_falcon qkv_llama3 rmsnorm_prefill)
#   MIRAGE_COUNTERS         1: emit --counters (each entry run once in the CPU emulator,
#                           seconds each, for the harness's "moved MB" and "GB/s");
#                           0: not; default: 1 where g++ is on PATH
#   MIRAGE_DYNAMIC          1: also superopt rmsnorm_matmul with m dynamic in 1..64 and keep
#                           the decode loop of examples/engine over its one entry point in
#                           OUTDIR/ARCH/dynamic/engine (checked in the CPU emulator first;
#                           run.sh runs it on the GPU); 0: not; default: 1 where g++ is on PATH.
#                           Its inputs take about 100 MB an arch: more than the device tool
#                           carries (prepare.sh says so at the end)
#   MIRAGE_TORCH            1: also superopt llama_mlp_block with m dynamic in 1..16 into
#                           OUTDIR/ARCH/torch/llama, for examples/torch/llama_mlp.py on the
#                           GPU (device.sh's TORCH=1); default: 0
set -euo pipefail

usage() { sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; }
case $#:${1:-} in
1:-h | 1:--help) usage; exit 0 ;;
1:-*) usage >&2; exit 2 ;;
1:*) ;;
*) usage >&2; exit 2 ;;
esac

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
mkdir -p "$1"
out=$(cd "$1" && pwd)

archs=${MIRAGE_ARCHS:-sm_90 h200}
top_k=${MIRAGE_TOP_K:-4}
seed_rules=${MIRAGE_SEED_RULES-split_k}
time_limit=${MIRAGE_TIME_LIMIT:-60s}
superopt_flags=${MIRAGE_SUPEROPT_FLAGS---no-cache}
workloads=${MIRAGE_WORKLOADS:-rmsnorm_matmul gated_mlp gqa qknorm_gqa lora ntrans llama_mlp_block gqa_repeat_kv llama_layer stacked_layers encoder_mlp softmax_vocab lora_llama mqa_falcon qkv_llama3 rmsnorm_prefill}
counters=${MIRAGE_COUNTERS:-}
if [ -z "$counters" ]; then
	if command -v g++ >/dev/null; then counters=1; else counters=0; fi
fi

fill=${MIRAGE_FILL:-}
if [ -z "$fill" ]; then
	if command -v python3 >/dev/null; then fill=1; else fill=0; fi
fi
fill_scan=${MIRAGE_FILL_SCAN:-400}
pdl=${MIRAGE_PDL:-}
if [ -z "$pdl" ]; then
	if command -v python3 >/dev/null; then pdl=1; else pdl=0; fi
fi
if command -v python3 >/dev/null; then
	launch_sweep=${MIRAGE_LAUNCH_SWEEP-gated_mlp llama_mlp_block}
else
	launch_sweep=${MIRAGE_LAUNCH_SWEEP-}
fi

case $top_k in '' | *[!0-9]*) echo "prepare.sh: MIRAGE_TOP_K=$top_k is not a number" >&2; exit 2 ;; esac
case $fill_scan in '' | *[!0-9]*) echo "prepare.sh: MIRAGE_FILL_SCAN=$fill_scan is not a number" >&2; exit 2 ;; esac

cd "$repo" # so that the manifests name their sources relative to the repository

mirage=${MIRAGE:-}
if [ -z "$mirage" ]; then
	command -v go >/dev/null || { echo "prepare.sh: needs Go on PATH (or MIRAGE=path/to/mirage)" >&2; exit 2; }
	echo "building bin/mirage"
	go build -o bin/mirage ./cmd/mirage
	mirage=$repo/bin/mirage
fi

# source_of WORKLOAD: the program's .py file.
source_of() {
	local f
	for f in "examples/$1.py" "bench/workloads/$1.py"; do
		[ -f "$f" ] && { echo "$f"; return 0; }
	done
	return 1
}

# first_filling UGRAPH ARCH N: the index of the first of UGRAPH's N graphs
# (best first) whose kernel moving the most bytes is graph-defined and
# moves 4 MB or more, and whose every kernel moving 4 MB or more fills the
# GPU, by show --estimate --json; nothing when none of the first
# MIRAGE_FILL_SCAN does.
first_filling() {
	local i
	for ((i = 0; i < $3 && i < fill_scan; i++)); do
		if "$mirage" show --estimate --json --arch "$2" --candidate "$i" "$1" 2>/dev/null | python3 -c '
import json, sys
ks = json.load(sys.stdin)["kernels"]
top = max(ks, key=lambda k: k["bytes"])
big = [k for k in ks if k["bytes"] >= 4e6]
sys.exit(0 if top["code"] == "graph-defined" and top in big and all(k["fills_gpu"] for k in big) else 1)'; then
			echo "$i"
			return 0
		fi
	done
}

# heaviest_graph_defined UGRAPH ARCH CANDIDATE: the op index of the
# candidate's graph-defined kernel moving the most bytes, by show
# --estimate --json; nothing when it has none.
heaviest_graph_defined() {
	"$mirage" show --estimate --json --arch "$2" --candidate "$3" "$1" 2>/dev/null | python3 -c '
import json, sys
ks = [k for k in json.load(sys.stdin)["kernels"] if k["code"] == "graph-defined"]
if ks:
    print(max(ks, key=lambda k: k["bytes"])["op"])' || true
}

# launch_variants DIR ARCH WORKLOAD UGRAPH N: emit the heaviest
# graph-defined kernel of the best-ranked of UGRAPH's N candidates that has
# one at every other launch choice (variants.py), each with the model's
# estimate in launch/ENTRY.json as superopt's would be.
launch_variants() {
	local dir=$1 arch=$2 w=$3 ugraph=$4 n=$5 c op= f entry est
	for ((c = 0; c < n && c < 16; c++)); do
		op=$(heaviest_graph_defined "$ugraph" "$arch" "$c")
		[ -z "$op" ] || break
	done
	if [ -z "$op" ]; then
		printf '  %-24s %s\n' "(launch)" "no answer of the first $c has a graph-defined kernel"
		return 0
	fi
	mkdir -p "$dir/launch"
	local list=$dir/launch/$w.list
	if ! python3 "$here/variants.py" "$ugraph" "$c" "$op" "$dir/launch" "$w" >"$list" 2>"$list.err"; then
		printf '  %-24s %s\n' "(launch)" "FAILED: $(tail -n 1 "$list.err")"
		return 0
	fi
	# The candidate the variants change is timed too: it is their reference.
	[ -d "$dir/$w.c$c" ] || emit_entry "$dir" "$arch" "$w.c$c" "$w" superopt "$ugraph" "$c" "superopt/$w.json"
	while read -r f <&3; do
		entry=$(basename "$f" .ugraph.json)
		if ! est=$("$mirage" show --estimate --json --arch "$arch" "$f" 2>/dev/null |
			python3 -c 'import json, sys; print(json.load(sys.stdin)["estimated_us"])'); then
			printf '  %-24s %s\n' "$entry" "skipped: $("$mirage" show --estimate --arch "$arch" "$f" 2>&1 | tail -n 1)"
			continue
		fi
		printf '{"candidates": [{"estimated_us": %s}]}\n' "$est" >"$dir/launch/$entry.json"
		emit_entry "$dir" "$arch" "$entry" "$w" launch "$f" 0 "launch/$entry.json"
	done 3<"$list"
	echo "launch: $w op $op of c$c at every other block size and depth (launch/)" >>"$dir/prepare.txt"
}

# chained MANIFEST: whether an entry launches two kernels or more, one of
# them graph-defined (emit --json's manifest): where a dependent launch
# can hide a launch behind the kernel before it.
chained() {
	[ -f "$1" ] && python3 -c '
import json, sys
ks = json.load(open(sys.argv[1]))["kernels"]
sys.exit(0 if len(ks) >= 2 and any(k["what"] == "graph-defined" for k in ks) else 1)' "$1"
}

# json_str S: S as a JSON string (the names here need no more than quotes).
json_str() { printf '"%s"' "${1//\"/\\\"}"; }

# write_meta EDIR ENTRY WORKLOAD VARIANT SOURCE ARCH CANDIDATE|"" SUPEROPT_JSON|"" EMITTED
write_meta() {
	local edir=$1 entry=$2 workload=$3 variant=$4 source=$5 arch=$6 cand=$7 sojson=$8 ok=$9
	{
		printf '{\n'
		printf '  "entry": %s,\n' "$(json_str "$entry")"
		printf '  "workload": %s,\n' "$(json_str "$workload")"
		printf '  "variant": %s,\n' "$(json_str "$variant")"
		printf '  "candidate": %s,\n' "${cand:-null}"
		printf '  "source": %s,\n' "$(json_str "$source")"
		printf '  "arch": %s,\n' "$(json_str "$arch")"
		if [ -n "$sojson" ]; then printf '  "superopt": %s,\n' "$(json_str "$sojson")"; else printf '  "superopt": null,\n'; fi
		printf '  "emitted": %s\n' "$ok"
		printf '}\n'
	} >"$edir/meta.json"
}

# emit_entry ARCHDIR ARCH ENTRY WORKLOAD VARIANT FILE CANDIDATE|"" SUPEROPT_JSON|"" [EMIT-FLAGS...]
# FILE is the path emit reads; the meta records it relative to ARCHDIR when
# it lies there, else as given (relative to the repository).
emit_entry() {
	local dir=$1 arch=$2 entry=$3 workload=$4 variant=$5 file=$6 cand=$7 sojson=$8
	shift 8
	local edir=$dir/$entry
	rm -rf "$edir"
	mkdir -p "$edir"
	local args=(emit "$file" -o "$edir" --arch "$arch" --json "$@")
	[ -n "$cand" ] && args+=(--candidate "$cand")
	[ "$counters" = 1 ] && args+=(--counters)
	local ok=true
	if "$mirage" "${args[@]}" >"$edir/manifest.json.tmp" 2>"$edir/emit.log"; then
		mv "$edir/manifest.json.tmp" "$edir/manifest.json"
		printf '  %-24s %s\n' "$entry" "ok"
	else
		ok=false
		rm -f "$edir/manifest.json.tmp"
		printf '  %-24s EMIT FAILED: %s\n' "$entry" "$(tail -n 1 "$edir/emit.log")"
	fi
	write_meta "$edir" "$entry" "$workload" "$variant" "${file#"$dir"/}" "$arch" "$cand" "$sojson" "$ok"
}

for arch in $archs; do
	dir=$out/$arch
	mkdir -p "$dir/superopt"
	{
		echo "prepared by bench/gpu/prepare.sh on $(date -u +%Y-%m-%dT%H:%M:%SZ)"
		echo "mirage: $("$mirage" version 2>&1 | head -n 1)"
		echo "commit: $(git rev-parse HEAD 2>/dev/null || echo unknown)$(git diff --quiet HEAD 2>/dev/null || echo ' (with uncommitted changes)')"
		echo "arch: $arch; top K: $top_k; seed rules: ${seed_rules:-none}; fill: $fill (scan $fill_scan); launch sweep: ${launch_sweep:-none}; dependent launches: $pdl; superopt --time-limit $time_limit $superopt_flags"
		echo "workloads: $workloads"
	} >"$dir/prepare.txt"
	for w in $workloads; do
		src=$(source_of "$w") || { echo "prepare.sh: no program for workload $w" >&2; exit 2; }
		echo "== $arch $w ($src)"
		emit_entry "$dir" "$arch" "$w.unfused" "$w" unfused "$src" "" ""
		for m in "examples/${w}_mugraph.py" "bench/workloads/${w}_mugraph.py"; do
			if [ -f "$m" ]; then
				emit_entry "$dir" "$arch" "$w.mugraph" "$w" mugraph "$m" "" ""
			fi
		done
		sodir=$dir/superopt/$w
		# Entries of an earlier run into OUTDIR would be timed as this one's.
		rm -rf "$sodir" "$dir/superopt/$w.failed" "$dir/$w".c[0-9]* "$dir/$w".t[0-9]* "$dir/launch/$w".t*
		[ "$top_k" -gt 0 ] || [ -n "${MIRAGE_CANDIDATES:-}" ] || continue
		echo "  superopt --time-limit $time_limit ..."
		rc=0
		max_candidates=$top_k
		[ -n "${MIRAGE_CANDIDATES:-}${seed_rules}" ] && max_candidates=0
		# shellcheck disable=SC2086 # superopt_flags is a list of flags
		"$mirage" superopt "$src" -o "$sodir" --json --arch "$arch" --time-limit "$time_limit" \
			--max-candidates "$max_candidates" $superopt_flags >"$dir/superopt/$w.json" 2>"$dir/superopt/$w.log" || rc=$?
		ugraph=
		for f in "$sodir"/*.ugraph.json; do [ -f "$f" ] && ugraph=$f && break; done
		n=0
		if [ $rc -eq 0 ] && [ -n "$ugraph" ]; then
			# The document's graphs, best first (the unfused program among
			# them): each has one "outputs" member, written at this indent.
			n=$(grep -c '^      "outputs": ' "$ugraph" || true)
		fi
		if [ "$n" -eq 0 ] || [ -z "$ugraph" ]; then
			# Leave an entry that the harness reports as failed, so that a
			# search that found nothing is seen in the table.
			echo "superopt found no candidate (exit $rc, --time-limit $time_limit): $(tail -n 1 "$dir/superopt/$w.log")" >"$dir/superopt/$w.failed"
			mkdir -p "$dir/$w.c0"
			cp "$dir/superopt/$w.failed" "$dir/$w.c0/emit.log"
			write_meta "$dir/$w.c0" "$w.c0" "$w" superopt "$src" "$arch" 0 "superopt/$w.json" false
			printf '  %-24s %s\n' "$w.c*" "$(cat "$dir/superopt/$w.failed")"
			continue
		fi
		echo "  $n candidate(s) ($(grep -o '"stopped": "[^"]*"' "$dir/superopt/$w.json" | head -n 1 || echo 'search completed'))"
		# shellcheck disable=SC2046,SC2086 # word splitting joins the list onto one line
		picked=" $(echo ${MIRAGE_CANDIDATES:-$(seq 0 $((top_k - 1)))}) "
		for rule in $seed_rules; do
			# The best-ranked candidate the rule built: its meta (one line)
			# holds its rank, its place in the document, and the rules of
			# its parts ("rows+split_k" where the program has several).
			r=$(grep -oE '"rank": [0-9]+, [^}]*"seed": "([^"]*\+)?'"$rule"'(\+[^"]*)?"' "$ugraph" | head -n 1 | sed 's/^"rank": \([0-9]*\),.*/\1/' || true)
			if [ -z "$r" ]; then
				printf '  %-24s %s\n' "($rule)" "no verified candidate of this rule"
			elif [[ $picked != *" $r "* ]]; then
				picked="$picked$r "
			fi
		done
		if [ "$fill" = 1 ]; then
			r=$(first_filling "$ugraph" "$arch" "$n")
			if [ -z "$r" ]; then
				printf '  %-24s %s\n' "(fill)" "no fused candidate of the first $fill_scan fills the GPU"
			else
				printf '  %-24s %s\n' "(fill)" "$w.c$r: the best-ranked fused candidate that fills the GPU"
				echo "fill: $w.c$r is the best-ranked fused candidate that fills the GPU" >>"$dir/prepare.txt"
				[[ $picked == *" $r "* ]] || picked="$picked$r "
			fi
		fi
		for i in $picked; do
			[ "$i" -lt "$n" ] || continue
			emit_entry "$dir" "$arch" "$w.c$i" "$w" superopt "$ugraph" "$i" "superopt/$w.json"
		done
		if [[ " $launch_sweep " == *" $w "* ]]; then
			launch_variants "$dir" "$arch" "$w" "$ugraph" "$n"
		fi
		if [ "$pdl" = 1 ] && [ "$arch" != sm_80 ] && chained "$dir/$w.c0/manifest.json"; then
			emit_entry "$dir" "$arch" "$w.c0.pdl" "$w" pdl "$ugraph" 0 "superopt/$w.json" --dependent-launch
		fi
	done
done
# The dynamic batch (issue #23): one entry point for m in 1..64, its decode
# loop run in the emulator here and kept for the GPU.
dynamic=${MIRAGE_DYNAMIC:-}
if [ -z "$dynamic" ]; then
	if command -v g++ >/dev/null; then dynamic=1; else dynamic=0; fi
fi
if [ "$dynamic" = 1 ]; then
	for arch in $archs; do
		ddir=$out/$arch/dynamic
		rm -rf "$ddir"
		mkdir -p "$ddir"
		echo "== $arch dynamic rmsnorm_matmul (m in 1..64)"
		# shellcheck disable=SC2086 # superopt_flags is a list of flags
		if "$mirage" superopt examples/rmsnorm_matmul.py --dynamic X:0=1..64 -o "$ddir/superopt" --json --arch "$arch" \
			--time-limit "$time_limit" $superopt_flags >"$ddir/superopt.json" 2>"$ddir/superopt.log" &&
			"$mirage" verify examples/rmsnorm_matmul.py "$ddir/superopt/rmsnorm_matmul.ugraph.json" --dynamic X:0=1..64 \
				--engine 1,3,5,13,33,64,0,65 --engine-dir "$ddir/engine" >"$ddir/emulated.txt" 2>&1; then
			echo "  the decode loop passed in the emulator; kept in $ddir/engine"
		else
			echo "  FAILED: see $ddir"
		fi
	done
fi

# The torch-ops example's layer (issue #43): the LLaMA MLP block, one
# entry point for 1..16 tokens.
if [ "${MIRAGE_TORCH:-0}" = 1 ]; then
	for arch in $archs; do
		tdir=$out/$arch/torch
		rm -rf "$tdir"
		mkdir -p "$tdir"
		echo "== $arch torch: llama_mlp_block, m in 1..16"
		# shellcheck disable=SC2086 # superopt_flags is a list of flags
		if "$mirage" superopt examples/llama_mlp_block.py --dynamic X:0=1..16 -o "$tdir/llama" --arch "$arch" \
			--time-limit "$time_limit" $superopt_flags >"$tdir/superopt.txt" 2>&1; then
			echo "  kept in $tdir/llama"
		else
			echo "  FAILED: see $tdir/superopt.txt"
		fi
	done
fi

metas=("$out"/*/*/meta.json)
[ -f "${metas[0]}" ] || metas=()
echo "prepared ${#metas[@]} entries under $out"
# The device tool carries at most 64 MiB, the checkout (a few MB) included.
size_mb=$(du -sm "$out" | cut -f1)
if [ "$size_mb" -gt 48 ]; then
	echo "prepare.sh: $out holds $size_mb MB, more than the device tool carries (64 MiB with the checkout):" \
		"MIRAGE_DYNAMIC=0 leaves out the decode loop's inputs (about 100 MB an arch), and MIRAGE_ARCHS" \
		"names only the GPU's target (h200 on an H200)" >&2
fi
