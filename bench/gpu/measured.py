#!/usr/bin/env python3
"""Turn a GPU run into calibration data for the cost model.

    bench/gpu/measured.py PREPARED GPU_JSON OUTDIR [--mirage bin/mirage] [--run NAME] [--force]

PREPARED is the architecture directory that prepare.sh wrote and run.sh
measured (out/gpu/sm_90, or out/gpu/h200 on an H200: RESULTS/arch.txt), GPU_JSON the run's gpu.json. For every entry the
run measured right (status ok, with a median), the script takes the graph
that was emitted (candidate N of the superopt document, or the program or
hand-written μGraph itself, through `mirage show --json`), checks that it
emits under the hash the run measured (`mirage emit --json`), and writes
it, by workload, to OUTDIR/WORKLOAD.measured.ugraph.json with
meta.measured_us (the median), p10, p90, the estimate at the time and the
kernels launched, and the document's meta.arch the target the entries were
emitted for (the cost model's tests estimate them for it): the format of
cost/testdata/h100-2026-11-27. A graph
measured twice in the run (the program as "unfused" and as candidate 0)
is written once. Programs named relative to the repository (prepare.sh
names them so) are found from the repository's root, wherever this runs.

Run it at the commit that was measured, then record what that code was:
    go test ./codegen/cuda -run TestMeasuredCodeIsCurrent -record-measured
(it records emitted.txt and runtime.txt only in a directory that has
none). An entry whose graph cannot be found, or whose graph emits under
another hash than the one measured, is an error and nothing is written:
the data would describe other code. OUTDIR holding recorded sums already
is refused without --force (new documents would not match them).

Exit status: 0 when written, 1 for an error in the data, 2 for bad usage.
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))


class MeasuredError(Exception):
    pass


def load_json(path):
    with open(path) as f:
        return json.load(f)


class Mirage:
    """The two mirage commands the script needs."""

    def __init__(self, binary):
        self.binary = binary

    def run(self, *args):
        out = subprocess.run([self.binary, *args], capture_output=True, text=True)
        if out.returncode != 0:
            raise MeasuredError("mirage %s: exit %d: %s" % (" ".join(args), out.returncode, out.stderr.strip()))
        return out.stdout

    def show(self, path):
        """The μGraph document of a program or μGraph file."""
        return json.loads(self.run("show", "--json", path))

    def hash(self, graph, name):
        """The hash `mirage emit` gives graph (what gpu.json records)."""
        tmp = tempfile.mkdtemp(prefix="measured-")
        try:
            doc = os.path.join(tmp, name + ".ugraph.json")
            with open(doc, "w") as f:
                json.dump({"format": "mirage-ugraph", "version": doc_version([graph]), "name": name, "graphs": [graph]}, f)
            return json.loads(self.run("emit", doc, "-o", os.path.join(tmp, "out"), "--json"))["hash"]
        finally:
            shutil.rmtree(tmp, ignore_errors=True)


def source_path(prepared, source):
    """Where a meta.json's source is: absolute, or under the prepared
    directory (superopt's documents), or under the repository (programs)."""
    if os.path.isabs(source):
        return source
    for base in (prepared, REPO):
        p = os.path.join(base, source)
        if os.path.exists(p):
            return p
    raise MeasuredError("%s: not under %s nor under the repository %s" % (source, prepared, REPO))


def entry_graph(prepared, entry, mirage):
    """The graph that prepare.sh emitted for entry (a gpu.json entry)."""
    edir = os.path.join(prepared, entry["entry"])
    meta = load_json(os.path.join(edir, "meta.json"))
    source = source_path(prepared, meta["source"])
    doc = load_json(source) if source.endswith(".ugraph.json") else mirage.show(source)
    graphs = doc.get("graphs") or []
    i = meta.get("candidate")
    i = 0 if i is None else i
    if not 0 <= i < len(graphs):
        raise MeasuredError("%s: %s has no graph %d" % (entry["entry"], source, i))
    got = mirage.hash(graphs[i], entry["workload"])
    if got != entry.get("hash"):
        raise MeasuredError("%s: graph %d of %s emits as %s, but the run measured %s: PREPARED is not the prepared directory of this run"
                            % (entry["entry"], i, source, got, entry.get("hash")))
    return graphs[i]


def measured_docs(prepared, run, run_name, mirage):
    """The measured documents of run (a parsed gpu.json), by workload."""
    baselines = {}
    for e in run.get("entries", []):
        if e.get("eager_us") is not None:
            baselines.setdefault(e["workload"], (e.get("eager_us"), e.get("compile_us")))
    docs = {}
    seen = set()
    for e in run.get("entries", []):
        if e.get("status") != "ok":
            continue
        if e.get("variant") == "pdl":
            # The graph's code with dependent launches (emit
            # --dependent-launch), which its hash does not name: not a
            # time of the graph as emitted.
            continue
        t = e.get("timing") or {}
        if not t.get("median_us"):
            raise MeasuredError("%s: status ok but no median time" % e["entry"])
        # A graph measured twice (the program as "unfused" and as a
        # candidate) counts once, as its first entry: the calibration's
        # ranks would tie it with itself.
        key = (e["workload"], e.get("hash"))
        if key in seen:
            continue
        seen.add(key)
        g = dict(entry_graph(prepared, e, mirage))
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
    for d in docs.values():
        d["version"] = doc_version(d["graphs"])
    return docs


def doc_version(graphs):
    """The .ugraph.json version that holds graphs: 2 where a block graph
    sets its pipeline depth ("stages", which version 2 added), else 1, as
    mirage writes it."""
    for g in graphs:
        for op in g.get("ops") or []:
            if (op.get("block") or {}).get("stages"):
                return 2
    return 1


def main(argv=None, mirage=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("prepared", help="prepare.sh's architecture directory (out/gpu/sm_90)")
    ap.add_argument("gpu_json", help="the run's gpu.json")
    ap.add_argument("outdir", help="where WORKLOAD.measured.ugraph.json go (cost/testdata/GPU-DATE-COMMIT: h100-… or h200-…)")
    ap.add_argument("--mirage", default=os.path.join(REPO, "bin", "mirage"), help="the mirage binary (default: the repository's bin/mirage)")
    ap.add_argument("--run", default="", help="the run's name, prefixed to each entry (default: OUTDIR's name)")
    ap.add_argument("--force", action="store_true", help="write into a directory that records sums already")
    a = ap.parse_args(argv)
    mirage = mirage or Mirage(a.mirage)

    recorded = [f for f in ("emitted.txt", "runtime.txt") if os.path.exists(os.path.join(a.outdir, f))]
    if recorded and not a.force:
        print("measured.py: %s already records %s: new documents would not match them (--force writes anyway)"
              % (a.outdir, " and ".join(recorded)), file=sys.stderr)
        return 1
    try:
        docs = measured_docs(a.prepared, load_json(a.gpu_json), a.run or os.path.basename(os.path.normpath(a.outdir)), mirage)
    except (MeasuredError, OSError, KeyError, ValueError) as err:
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
