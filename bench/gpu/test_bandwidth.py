"""Tests of bandwidth.cu, the probe of how fast grids of each size read
device memory: it builds for the CPU emulator and runs there on a small
buffer (every grid's XOR of the words it read checked against the host's,
with and without re-reads of a region every block reads),
and it compiles with nvcc for sm_80 and sm_90 without spills."""

import json
import os
import shutil
import subprocess
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
SOURCE = os.path.join(HERE, "bandwidth.cu")
TEMPLATES = os.path.join(REPO, "templates")


@unittest.skipUnless(shutil.which("g++"), "needs g++ (the CPU emulator)")
class EmulatedTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, self.dir)
        self.bin = os.path.join(self.dir, "bandwidth")
        p = subprocess.run(["g++", "-std=c++17", "-O1", "-DMIRAGE_EMULATE", "-Wall", "-Wno-unknown-pragmas",
                            "-Wno-unused-function", "-I", os.path.join(TEMPLATES, "emu"), "-I", TEMPLATES,
                            "-x", "c++", SOURCE, "-o", self.bin], stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        self.assertEqual(p.returncode, 0, p.stdout.decode())
        self.assertEqual(p.stdout, b"", "g++ warnings:\n" + p.stdout.decode())

    def test_every_grid_reads_the_whole_buffer(self):
        js = os.path.join(self.dir, "bw.json")
        p = subprocess.run([self.bin, "--mib", "1", "--runs", "1", "--sms", "4", "--json", js],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self.assertEqual(p.returncode, 0, p.stderr.decode())
        with open(js) as f:
            doc = json.load(f)
        self.assertEqual((doc["sms"], doc["bytes"], doc["runs"]), (4, 1 << 20, 1))
        # 4 SMs: grids of a quarter and a third of them (1), a half and two
        # thirds (2), three quarters and 90% (3), all, 2, 4 and 8 waves; an
        # eighth is no block, and repeats are dropped.
        grids = [1, 2, 3, 4, 8, 16, 32]
        want = [(b, t, u) for t in (128, 256, 512) for u in (1, 4, 8, 16) for b in grids]
        self.assertEqual([(r["blocks"], r["threads"], r["unroll"]) for r in doc["results"]], want)
        self.assertTrue(all(r["median_ms"] > 0 for r in doc["results"]))
        # The shared sweep: grids of half the SMs and all of them, regions
        # of 64 KiB and (capped by the 1 MiB buffer) 1 MiB, and of every 8
        # copies e from the region: e/(8-e) of the buffer's bytes re-read
        # (each thread's last group of copies rounds its share up).
        want = [(b, kib, e) for b in (2, 4) for kib in (64, 1024) for e in (0, 1, 2, 4, 6)]
        got = [(r["blocks"], r["region_bytes"] // 1024, r["shared_eighths"]) for r in doc["shared"]]
        self.assertEqual(got, want)
        for r in doc["shared"]:
            e, reread = r["shared_eighths"], r["reread_bytes"]
            ideal = (1 << 20) * e / (8 - e)
            self.assertGreaterEqual(reread, ideal, r)
            self.assertLessEqual(reread, ideal + r["blocks"] * 512 * e * 16, r)
            if e == 0:
                self.assertEqual((reread, r["reread_cost"]), (0, 0), r)

    def test_bad_arguments(self):
        for args in (["--mib", "0"], ["--runs", "-1"], ["--frobnicate"], ["--mib"]):
            p = subprocess.run([self.bin] + args, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
            self.assertEqual(p.returncode, 2, args)
            self.assertIn(b"bandwidth", p.stderr)
        p = subprocess.run([self.bin, "--help"], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self.assertEqual(p.returncode, 0)
        self.assertIn(b"usage: bandwidth", p.stdout)


@unittest.skipUnless(shutil.which("nvcc"), "needs nvcc (the CUDA toolkit)")
class NvccTest(unittest.TestCase):
    def test_compiles_without_spills(self):
        with tempfile.TemporaryDirectory() as d:
            for arch in ("sm_80", "sm_90"):
                p = subprocess.run(["nvcc", "-O3", "-std=c++17", "-arch=" + arch, "-Xptxas", "-v,-warn-spills",
                                    "-Xcompiler", "-Wall", "-I", TEMPLATES, SOURCE, "-o", os.path.join(d, arch)],
                                   stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
                out = p.stdout.decode()
                self.assertEqual(p.returncode, 0, out)
                self.assertNotIn("warning", out.lower(), out)
                for line in out.splitlines():
                    if "spill" in line:
                        self.assertIn("0 bytes spill stores, 0 bytes spill loads", line, line)


if __name__ == "__main__":
    unittest.main()
