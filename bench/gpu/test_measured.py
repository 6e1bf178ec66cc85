"""Tests of bench/gpu/measured.py (no GPU, no mirage binary: show is faked).

    python3 -m unittest discover -s bench/gpu -p 'test_*.py'
"""

import json
import os
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import measured  # noqa: E402


def write_json(path, doc):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        json.dump(doc, f)


def graph(tag):
    return {"ops": [{"tag": tag}], "outputs": [0], "meta": {"rank": 0}}


def entry(name, workload, h, us, status="ok", eager=None):
    return {"entry": name, "workload": workload, "hash": h, "status": status, "arch": "sm_90",
            "timing": {"median_us": us, "p10_us": us - 1, "p90_us": us + 1} if status == "ok" else None,
            "max_rel_err": 1e-4, "estimated_us": us * 0.9, "kernel_launches": [{"what": "graph-defined"}],
            "eager_us": eager, "compile_us": eager and eager / 2}


class MeasuredDocsTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp()
        write_json(os.path.join(self.dir, "superopt", "w", "w.ugraph.json"),
                   {"graphs": [graph("c0"), graph("c1"), graph("c2")]})
        for name, source, cand, h in [
            ("w.unfused", "prog/w.py", None, "p"),
            ("w.c0", "superopt/w/w.ugraph.json", 0, "p"),  # the program again
            ("w.c1", "superopt/w/w.ugraph.json", 1, "x"),
            ("w.c2", "superopt/w/w.ugraph.json", 2, "y"),
        ]:
            write_json(os.path.join(self.dir, name, "meta.json"), {"source": source, "candidate": cand})
            write_json(os.path.join(self.dir, name, "manifest.json"), {"hash": h})
        self.shown = []

    def show(self, path):
        self.shown.append(path)
        return {"graphs": [{"ops": [{"tag": "program"}], "outputs": [0]}]}

    def run_doc(self, entries):
        return measured.measured_docs(self.dir, {"entries": entries}, "r1", self.show)

    def test_graphs_times_and_baselines(self):
        docs = self.run_doc([
            entry("w.unfused", "w", "p", 40.0, eager=30.0),
            entry("w.c0", "w", "p", 41.0),
            entry("w.c1", "w", "x", 20.0),
            entry("w.c2", "w", "y", 0, status="wrong"),
        ])
        self.assertEqual(list(docs), ["w"])
        d = docs["w"]
        self.assertEqual(d["meta"], {"arch": "sm_90", "eager_us": 30.0, "torch_compile_us": 15.0})
        # The program once (its first entry), c1 with its own graph; the
        # wrong entry is left out.
        self.assertEqual([g["meta"]["entry"] for g in d["graphs"]], ["r1:w.unfused", "r1:w.c1"])
        self.assertEqual(d["graphs"][0]["ops"], [{"tag": "program"}])
        self.assertEqual(d["graphs"][1]["ops"], [{"tag": "c1"}])
        m = d["graphs"][1]["meta"]
        self.assertEqual((m["measured_us"], m["measured_p10_us"], m["measured_p90_us"]), (20.0, 19.0, 21.0))
        self.assertEqual(m["estimated_us_then"], 18.0)
        self.assertEqual(m["rank"], 0)  # the candidate's own meta is kept
        self.assertEqual(self.shown, ["prog/w.py"])

    def test_hash_mismatch_is_an_error(self):
        with self.assertRaisesRegex(measured.MeasuredError, "w.c1: emitted graph x, but the run measured z"):
            self.run_doc([entry("w.c1", "w", "z", 20.0)])

    def test_missing_candidate_is_an_error(self):
        write_json(os.path.join(self.dir, "w.c2", "meta.json"), {"source": "superopt/w/w.ugraph.json", "candidate": 7})
        with self.assertRaisesRegex(measured.MeasuredError, "has no graph 7"):
            self.run_doc([entry("w.c2", "w", "y", 20.0)])

    def test_main_writes_nothing_on_error(self):
        out = os.path.join(self.dir, "out")
        gpu = os.path.join(self.dir, "gpu.json")
        write_json(gpu, {"entries": [entry("w.c1", "w", "z", 20.0)]})
        self.assertEqual(measured.main([self.dir, gpu, out, "--mirage", "/nonexistent"]), 1)
        self.assertFalse(os.path.exists(out))

    def test_main_writes_documents(self):
        out = os.path.join(self.dir, "out")
        gpu = os.path.join(self.dir, "gpu.json")
        write_json(gpu, {"entries": [entry("w.c1", "w", "x", 20.0)]})
        self.assertEqual(measured.main([self.dir, gpu, out]), 0)
        with open(os.path.join(out, "w.measured.ugraph.json")) as f:
            d = json.load(f)
        self.assertEqual(d["format"], "mirage-ugraph")
        self.assertEqual([g["meta"]["entry"] for g in d["graphs"]], ["out:w.c1"])
        self.assertEqual(os.listdir(out), ["w.measured.ugraph.json"])


if __name__ == "__main__":
    unittest.main()
