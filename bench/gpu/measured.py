#!/usr/bin/env python3
"""Turn a GPU run into calibration data for the cost model.

    bench/gpu/measured.py PREPARED GPU_JSON OUTDIR [--mirage bin/mirage]

PREPARED is the architecture directory that prepare.sh wrote and run.sh
measured (out/gpu/sm_90), GPU_JSON the run's gpu.json. For every entry the
run measured right (status ok), the script takes the graph that was emitted
(candidate N of the superopt document, or the program or hand-written
μGraph itself, through `mirage show --json`) and writes it, by workload, to
OUTDIR/WORKLOAD.measured.ugraph.json with meta.measured_us (the median),
p10, p90, the estimate at the time and the kernels launched: the format of
cost/testdata/h100-2026-11-27. A graph measured twice in the run (the
program as "unfused" and as candidate 0) is written once.

Run it at the commit that was measured, then record what that code was:
    go test ./codegen/cuda -run TestMeasuredCodeIsCurrent -record-measured
(it records emitted.txt only in directories that have none). An entry whose
graph cannot be found, or whose emitted hash differs from the one measured,
is an error: the data would describe other code.
"""

import argparse
import json
import os
import subprocess
import sys


class MeasuredError(Exception):
    pass


def load_json(path):
    with open(path) as f:
        return json.load(f)


def entry_graph(prepared, entry, show):
    """The graph that prepare.sh emitted for entry (a gpu.json entry), and
    its document's name. show(path) returns `mirage show --json path`."""
    edir = os.path.join(prepared, entry["entry"])
    meta = load_json(os.path.join(edir, "meta.json"))
    manifest = load_json(os.path.join(edir, "manifest.json"))
    if manifest.get("hash") != entry.get("hash"):
        raise MeasuredError(
            "%s: emitted graph %s, but the run measured %s: PREPARED is not the prepared directory of this run"
            % (entry["entry"], manifest.get("hash"), entry.get("hash")))
    source = meta["source"]
    if not os.path.isabs(source):
        source = os.path.join(prepared, source)
        if not os.path.exists(source):  # programs are named from the repository
            source = meta["source"]
    cand = meta.get("candidate")
    doc = load_json(source) if source.endswith(".ugraph.json") else show(source)
    graphs = doc.get("graphs") or []
    i = cand if cand is not None else 0
    if not 0 <= i < len(graphs):
        raise MeasuredError("%s: %s has no graph %d" % (entry["entry"], source, i))
    return graphs[i]


def measured_docs(prepared, run, run_name, show):
    """The measured documents of run (a parsed gpu.json), by workload."""
    baselines = {}
    for e in run.get("entries", []):
        if e.get("eager_us") is not None:
            baselines.setdefault(e["workload"], (e.get("eager_us"), e.get("compile_us")))
    docs = {}
    seen = set()
    for e in run.get("entries", []):
        if e.get("status") != "ok" or not e.get("timing"):
            continue
        # A graph measured twice (the program as "unfused" and as a
        # candidate) counts once, as its first entry: the calibration's
        # ranks would tie it with itself.
        key = (e["workload"], e.get("hash"))
        if key in seen:
            continue
        seen.add(key)
        g = dict(entry_graph(prepared, e, show))
        t = e["timing"]
        meta = dict(g.get("meta") or {})
        meta.update({
            "entry": "%s:%s" % (run_name, e["entry"]),
            "measured_us": t["median_us"],
            "measured_p10_us": t.get("p10_us"),
            "measured_p90_us": t.get("p90_us"),
            "max_rel_err": e.get("max_rel_err"),
            "estimated_us_then": e.get("estimated_us"),
            "kernel_launches": e.get("kernel_launches"),
        })
        g["meta"] = meta
        w = e["workload"]
        if w not in docs:
            eager, compiled = baselines.get(w, (None, None))
            docs[w] = {"format": "mirage-ugraph", "version": 1, "name": w,
                       "meta": {"arch": e.get("arch"), "eager_us": eager, "torch_compile_us": compiled},
                       "graphs": []}
        docs[w]["graphs"].append(g)
    return docs


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("prepared", help="prepare.sh's architecture directory (out/gpu/sm_90)")
    ap.add_argument("gpu_json", help="the run's gpu.json")
    ap.add_argument("outdir", help="where WORKLOAD.measured.ugraph.json go (cost/testdata/h100-DATE)")
    ap.add_argument("--mirage", default="bin/mirage", help="the mirage binary (default bin/mirage)")
    ap.add_argument("--run", default="", help="the run's name, prefixed to each entry (default: OUTDIR's name)")
    a = ap.parse_args(argv)

    def show(path):
        out = subprocess.run([a.mirage, "show", "--json", path], check=True, capture_output=True, text=True)
        return json.loads(out.stdout)

    try:
        docs = measured_docs(a.prepared, load_json(a.gpu_json), a.run or os.path.basename(os.path.normpath(a.outdir)), show)
    except (MeasuredError, OSError, KeyError, ValueError, subprocess.CalledProcessError) as err:
        print("measured.py: %s" % err, file=sys.stderr)
        return 1
    if not docs:
        print("measured.py: %s has no entry measured right" % a.gpu_json, file=sys.stderr)
        return 1
    os.makedirs(a.outdir, exist_ok=True)
    for w, doc in sorted(docs.items()):
        path = os.path.join(a.outdir, w + ".measured.ugraph.json")
        tmp = path + ".tmp"
        with open(tmp, "w") as f:
            json.dump(doc, f, indent=1)
            f.write("\n")
        os.replace(tmp, path)
        print("%s: %d graphs" % (path, len(doc["graphs"])))
    return 0


if __name__ == "__main__":
    sys.exit(main())
