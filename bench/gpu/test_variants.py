"""Tests of bench/gpu/variants.py (no GPU, no mirage binary).

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

import variants  # noqa: E402


def doc(block_dim=128, stages=None):
    block = {"grid": [64, 1, 1], "block_dim": [block_dim, 1, 1], "forloop_range": 64, "reduction_dimx": 64, "ops": []}
    if stages is not None:
        block["stages"] = stages
    g = {"ops": [{"op": "input", "shape": [8, 4096], "dtype": "float16"},
                 {"op": "customized", "in": [0], "block": block}], "outputs": [1]}
    return {"format": "mirage-ugraph", "version": 1, "name": "w", "meta": {"arch": "sm_90"}, "graphs": [g, g]}


class VariantsTest(unittest.TestCase):
    def test_every_other_choice(self):
        vs = variants.variants(doc(), 1, 1)
        self.assertEqual(len(vs), len(variants.THREADS) * len(variants.STAGES) - 1)
        names = [n for n, _ in vs]
        self.assertNotIn("t128s0", names)  # the op's own
        self.assertEqual(names[0], "t128s2")
        for name, v in vs:
            self.assertEqual(len(v["graphs"]), 1)
            self.assertEqual(v["name"], "w")
            b = v["graphs"][0]["ops"][1]["block"]
            threads, stages = name[1:].split("s")
            self.assertEqual(b["block_dim"], [int(threads), 1, 1])
            self.assertEqual(b.get("stages", 0), int(stages))
            if stages == "0":  # the default depth is no field, as the search writes it
                self.assertNotIn("stages", b)
            # version 2 added "stages"; the graph's meta names the variant
            self.assertEqual(v["version"], 1 if stages == "0" else 2)
            self.assertEqual(v["graphs"][0]["meta"], {"launch_of": 1, "op": 1, "threads": int(threads), "stages": int(stages)})

    def test_own_depth_skipped_and_input_untouched(self):
        d = doc(512, 6)
        vs = variants.variants(d, 0, 1)
        self.assertNotIn("t512s6", [n for n, _ in vs])
        self.assertIn("t512s0", [n for n, _ in vs])
        self.assertEqual(d["graphs"][0]["ops"][1]["block"]["stages"], 6)
        self.assertEqual(d["graphs"][0]["ops"][1]["block"]["block_dim"], [512, 1, 1])

    def test_errors(self):
        with self.assertRaisesRegex(variants.VariantError, "no graph 2"):
            variants.variants(doc(), 2, 1)
        with self.assertRaisesRegex(variants.VariantError, "op 0 of graph 0 is not a graph-defined kernel"):
            variants.variants(doc(), 0, 0)

    def test_command_line(self):
        tmp = tempfile.mkdtemp()
        try:
            src = os.path.join(tmp, "w.ugraph.json")
            with open(src, "w") as f:
                json.dump(doc(), f)
            out = os.path.join(tmp, "launch")
            p = subprocess.run([sys.executable, os.path.join(HERE, "variants.py"), src, "0", "1", out, "w"],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True)
            self.assertEqual(p.returncode, 0, p.stderr)
            paths = p.stdout.split()
            self.assertEqual(len(paths), 11)
            self.assertEqual(sorted(os.listdir(out)), sorted(os.path.basename(x) for x in paths))
            p = subprocess.run([sys.executable, os.path.join(HERE, "variants.py"), src, "0", "0", out, "w"],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True)
            self.assertEqual(p.returncode, 2)
            self.assertIn("not a graph-defined kernel", p.stderr)
        finally:
            shutil.rmtree(tmp)


if __name__ == "__main__":
    unittest.main()
