#!/usr/bin/env python3
"""bench/gpu/variants.py UGRAPH CANDIDATE OP OUTDIR NAME: write one μGraph
document per launch choice of a graph-defined kernel.

The search chooses each graph-defined kernel's block size and pipeline
depth with the cost model (search.blockSizes, among search.Config's
Threads and Stages); the first GPU runs measured only 128-thread kernels
at the plan's default depth, so the model's view of the rest is an
extrapolation. This writes candidate CANDIDATE of UGRAPH with op OP's
block graph at every other pair of THREADS x STAGES, each as
OUTDIR/NAME.tTHREADSsSTAGES.ugraph.json (one graph; stages 0 is the plan's
default depth), and prints the paths, one a line. prepare.sh emits and
times them (MIRAGE_LAUNCH_SWEEP) so that the run measures the choice.
Exit status 2, with a message, for unusable input.
"""

import copy
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from measured import doc_version  # noqa: E402

# search.Config's defaults (search/config.go: Complete, defaultStages).
THREADS = (128, 256, 512)
STAGES = (0, 2, 3, 6)


class VariantError(Exception):
    pass


def variants(doc, candidate, op):
    """(suffix, document) for each launch choice of the op other than its
    own, in THREADS x STAGES order."""
    graphs = doc.get("graphs") or []
    if not 0 <= candidate < len(graphs):
        raise VariantError("no graph %d (the document has %d)" % (candidate, len(graphs)))
    ops = graphs[candidate].get("ops") or []
    if not 0 <= op < len(ops) or "block" not in ops[op]:
        raise VariantError("op %d of graph %d is not a graph-defined kernel" % (op, candidate))
    block = ops[op]["block"]
    own = (block["block_dim"][0], block.get("stages", 0))
    out = []
    for threads in THREADS:
        for stages in STAGES:
            if (threads, stages) == own:
                continue
            g = copy.deepcopy(graphs[candidate])
            # The candidate's own meta (its rank, its estimate) describes
            # another kernel: say what this one is instead.
            g["meta"] = {"launch_of": candidate, "op": op, "threads": threads, "stages": stages}
            b = g["ops"][op]["block"]
            b["block_dim"] = [threads, 1, 1]
            b.pop("stages", None)
            if stages:
                b["stages"] = stages
            v = {k: val for k, val in doc.items() if k != "graphs"}
            v["graphs"] = [g]
            v["version"] = doc_version([g])
            out.append(("t%ds%d" % (threads, stages), v))
    return out


def main(argv):
    if len(argv) == 2 and argv[1] in ("-h", "--help"):
        print(__doc__.strip())
        return 0
    if len(argv) != 6:
        print(__doc__.strip().splitlines()[0], file=sys.stderr)
        return 2
    path, cand, op, outdir, name = argv[1:]
    try:
        with open(path) as f:
            doc = json.load(f)
        vs = variants(doc, int(cand), int(op))
    except (OSError, ValueError, KeyError, TypeError, VariantError) as e:
        print("variants.py: %s: %s" % (path, e), file=sys.stderr)
        return 2
    os.makedirs(outdir, exist_ok=True)
    for suffix, v in vs:
        p = os.path.join(outdir, "%s.%s.ugraph.json" % (name, suffix))
        with open(p + ".tmp", "w") as f:
            json.dump(v, f, indent=1)
        os.replace(p + ".tmp", p)
        print(p)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
