"""Tests of bench/gpu/measured.py (no GPU, no mirage binary: it is faked).

    python3 -m unittest discover -s bench/gpu -p 'test_*.py'
"""

import json
import os
import shutil
import subprocess
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


class FakeMirage:
    """show returns a one-graph program; hash is the graph's first op's tag."""

    def __init__(self):
        self.shown = []

    def show(self, path):
        self.shown.append(path)
        return {"graphs": [{"ops": [{"tag": "p"}], "outputs": [0]}]}

    def hash(self, g, name):
        return g["ops"][0]["tag"]


class MeasuredDocsTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, self.dir)
        self.prog = os.path.join(self.dir, "w.py")  # an absolute source
        open(self.prog, "w").close()
        write_json(os.path.join(self.dir, "superopt", "w", "w.ugraph.json"),
                   {"graphs": [graph("p"), graph("x"), graph("y")]})
        for name, source, cand in [
            ("w.unfused", self.prog, None),
            ("w.c0", "superopt/w/w.ugraph.json", 0),  # the program again
            ("w.c1", "superopt/w/w.ugraph.json", 1),
            ("w.c2", "superopt/w/w.ugraph.json", 2),
        ]:
            write_json(os.path.join(self.dir, name, "meta.json"), {"source": source, "candidate": cand})
        self.mirage = FakeMirage()

    def docs(self, entries):
        return measured.measured_docs(self.dir, {"entries": entries}, "r1", self.mirage)

    def test_graphs_times_and_baselines(self):
        d = self.docs([
            entry("w.unfused", "w", "p", 40.0, eager=30.0),
            entry("w.c0", "w", "p", 41.0),
            entry("w.c1", "w", "x", 20.0),
            entry("w.c2", "w", "y", 0, status="wrong"),
        ])["w"]
        self.assertEqual(d["meta"], {"arch": "sm_90", "eager_us": 30.0, "torch_compile_us": 15.0})
        # The program once (its first entry), c1 with its own graph; the
        # wrong entry is left out.
        self.assertEqual([g["meta"]["entry"] for g in d["graphs"]], ["r1:w.unfused", "r1:w.c1"])
        self.assertEqual([g["ops"] for g in d["graphs"]], [[{"tag": "p"}], [{"tag": "x"}]])
        m = d["graphs"][1]["meta"]
        self.assertEqual((m["measured_us"], m["measured_p10_us"], m["measured_p90_us"]), (20.0, 19.0, 21.0))
        self.assertEqual(m["estimated_us_then"], 18.0)
        self.assertEqual(m["rank"], 0)  # the candidate's own meta is kept
        self.assertEqual(self.mirage.shown, [self.prog])

    def test_dependent_launches_are_not_the_graphs_time(self):
        # prepare.sh's WORKLOAD.c0.pdl emits c0 with dependent launches:
        # other code under c0's hash, so its time is not c0's, even where
        # c0's own entry failed.
        pdl = dict(entry("w.c0.pdl", "w", "x", 15.0), variant="pdl")
        write_json(os.path.join(self.dir, "w.c0.pdl", "meta.json"), {"source": "superopt/w/w.ugraph.json", "candidate": 1})
        d = self.docs([entry("w.c1", "w", "x", 0, status="wrong"), pdl])
        self.assertEqual(d, {})

    def test_version_follows_the_stages(self):
        # A document is version 1 unless a block graph sets "stages", which
        # version 2 added (mirage refuses "stages" in version 1).
        d = self.docs([entry("w.c1", "w", "x", 20.0)])["w"]
        self.assertEqual(d["version"], 1)
        staged = {"ops": [{"op": "customized", "block": {"stages": 6}}], "outputs": [0]}
        plain = {"ops": [{"op": "customized", "block": {}}], "outputs": [0]}
        self.assertEqual(measured.doc_version([plain, staged]), 2)
        self.assertEqual(measured.doc_version([plain, {"ops": [{"op": "input"}]}]), 1)

    def test_a_graph_that_emits_as_another_hash_is_an_error(self):
        with self.assertRaisesRegex(measured.MeasuredError, "w.c1: graph 1 of .* emits as x, but the run measured z"):
            self.docs([entry("w.c1", "w", "z", 20.0)])

    def test_missing_candidate_is_an_error(self):
        write_json(os.path.join(self.dir, "w.c2", "meta.json"), {"source": "superopt/w/w.ugraph.json", "candidate": 7})
        with self.assertRaisesRegex(measured.MeasuredError, "has no graph 7"):
            self.docs([entry("w.c2", "w", "y", 20.0)])

    def test_missing_source_is_an_error(self):
        write_json(os.path.join(self.dir, "w.c2", "meta.json"), {"source": "nowhere/w.py", "candidate": None})
        with self.assertRaisesRegex(measured.MeasuredError, "nowhere/w.py: not under"):
            self.docs([entry("w.c2", "w", "y", 20.0)])

    def test_ok_without_a_median_is_an_error(self):
        e = entry("w.c1", "w", "x", 20.0)
        e["timing"] = {"median_us": None}
        with self.assertRaisesRegex(measured.MeasuredError, "w.c1: status ok but no median"):
            self.docs([e])

    def run_main(self, entries, *flags):
        gpu = os.path.join(self.dir, "gpu.json")
        write_json(gpu, {"entries": entries})
        return measured.main([self.dir, gpu, self.out, *flags], mirage=self.mirage)

    def test_main_writes_documents(self):
        self.out = os.path.join(self.dir, "out")
        self.assertEqual(self.run_main([entry("w.c1", "w", "x", 20.0)]), 0)
        d = measured.load_json(os.path.join(self.out, "w.measured.ugraph.json"))
        self.assertEqual(d["format"], "mirage-ugraph")
        self.assertEqual([g["meta"]["entry"] for g in d["graphs"]], ["out:w.c1"])
        self.assertEqual(os.listdir(self.out), ["w.measured.ugraph.json"])

    def test_main_writes_nothing_on_error(self):
        self.out = os.path.join(self.dir, "out")
        self.assertEqual(self.run_main([entry("w.c1", "w", "z", 20.0)]), 1)
        self.assertFalse(os.path.exists(self.out))

    def test_main_refuses_a_directory_with_sums(self):
        self.out = os.path.join(self.dir, "out")
        os.makedirs(self.out)
        open(os.path.join(self.out, "emitted.txt"), "w").close()
        self.assertEqual(self.run_main([entry("w.c1", "w", "x", 20.0)]), 1)
        self.assertEqual(os.listdir(self.out), ["emitted.txt"])
        self.assertEqual(self.run_main([entry("w.c1", "w", "x", 20.0)], "--force"), 0)
        self.assertIn("w.measured.ugraph.json", os.listdir(self.out))


class MirageHashTest(unittest.TestCase):
    """Mirage against the real binary, built here (Go's cache makes that
    quick after the README's test command's go test)."""

    def test_hash_of_a_program(self):
        if shutil.which("go") is None:
            self.skipTest("no Go to build mirage with")
        tmp = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, tmp)
        binary = os.path.join(tmp, "mirage")
        subprocess.run(["go", "build", "-o", binary, "./cmd/mirage"], cwd=measured.REPO, check=True)
        m = measured.Mirage(binary)
        doc = m.show(os.path.join(measured.REPO, "examples", "gated_mlp.py"))
        h = m.hash(doc["graphs"][0], "gated_mlp")
        self.assertRegex(h, "^[0-9a-f]{16}$")
        self.assertEqual(h, m.hash(doc["graphs"][0], "other_name"))  # the graph's, not its name's
        with self.assertRaisesRegex(measured.MeasuredError, "mirage show --json /nonexistent.py: exit 2"):
            m.show("/nonexistent.py")


if __name__ == "__main__":
    unittest.main()
