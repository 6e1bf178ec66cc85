"""Tests of bench/gpu/harness.py that need no GPU.

    python3 -m unittest discover -s bench/gpu -p 'test_*.py'
    (or, in bench/gpu: python3 -m unittest test_harness)

The pure-Python parts (entries, Kendall's tau, the table, the profile) run
anywhere; the reference programs are checked where torch is importable
(CPU is enough). With MIRAGE_GPU_EMULATE_BUILD=DIR (an arch directory of
prepare.sh's output, e.g. /tmp/gpubuild/sm_90) and torch and g++ at hand,
the harness also runs DIR's ntrans and lora entries end to end in mirage's
CPU emulator.
"""

import ast
import importlib.util
import json
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)

import harness  # noqa: E402

HAVE_TORCH = importlib.util.find_spec("torch") is not None


def write_json(path, doc):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        json.dump(doc, f)


def manifest(name, program, hash_, inputs, outputs, kernels=1):
    return {
        "name": name,
        "program": program,
        "source": "x",
        "candidate": 0,
        "hash": hash_,
        "arch": "sm_90",
        "dir": "/elsewhere",
        "files": [name + ".cu", name + ".h", "mirage_runtime.cuh"],
        "workspace_bytes": 0,
        "inputs": [{"shape": list(s), "dtype": "float16"} for s in inputs],
        "outputs": [{"shape": list(s), "dtype": "float16"} for s in outputs],
        "kernels": [{"name": "k%d" % i, "what": "graph-defined", "grid": [1, 1, 1], "threads": 128, "smem_bytes": 0}
                    for i in range(kernels)],
    }


def result(entry, workload="lora", variant="superopt", candidate=0, status="ok", est=None, us=None, hash_="0123456789abcdef",
           program="lora"):
    return {"entry": entry, "workload": workload, "variant": variant, "candidate": candidate, "label": str(candidate),
            "program": program, "hash": hash_, "kernels": 1, "status": status, "reason": "" if status == "ok" else "bad",
            "max_rel_err": 1e-3, "mirage_us": us, "estimated_us": est, "eager_us": 10.0, "compile_us": None, "runs": 200}


class WeightScaleTest(unittest.TestCase):
    def test_nearest_power_of_two_as_the_engine(self):
        # Go's math.Round rounds halves up (enginerun.ModelInputs): K = 32,
        # 512, 8192 (log2 sqrt K = 2.5, 4.5, 6.5) take the smaller power.
        for k, want in [(4096, 2.0 ** -6), (11008, 2.0 ** -7), (32, 2.0 ** -3), (512, 2.0 ** -5), (8192, 2.0 ** -7), (1, 1.0)]:
            self.assertEqual(harness._weight_scale((k, 64)), want, "K=%d" % k)


class KendallTest(unittest.TestCase):
    def test_extremes(self):
        self.assertEqual(harness.kendall_tau([1, 2, 3, 4], [10, 20, 30, 40]), 1.0)
        self.assertEqual(harness.kendall_tau([1, 2, 3, 4], [4, 3, 2, 1]), -1.0)

    def test_known_value_with_ties(self):
        # scipy.stats.kendalltau's documented example (tau-b).
        tau = harness.kendall_tau([12, 2, 1, 12, 2], [1, 4, 7, 1, 0])
        self.assertAlmostEqual(tau, -0.47140452079103173, places=12)

    def test_brute_force(self):
        import itertools
        import random

        rnd = random.Random(3)
        for _ in range(50):
            n = rnd.randint(2, 7)
            xs = [rnd.randint(0, 3) for _ in range(n)]
            ys = [rnd.randint(0, 3) for _ in range(n)]
            c = d = tx = ty = 0
            for i, j in itertools.combinations(range(n), 2):
                sx = (xs[i] > xs[j]) - (xs[i] < xs[j])
                sy = (ys[i] > ys[j]) - (ys[i] < ys[j])
                c += sx * sy > 0
                d += sx * sy < 0
                tx += sx == 0
                ty += sy == 0
            n0 = n * (n - 1) // 2
            want = None if (n0 - tx) * (n0 - ty) == 0 else (c - d) / math.sqrt((n0 - tx) * (n0 - ty))
            got = harness.kendall_tau(xs, ys)
            if want is None:
                self.assertIsNone(got)
            else:
                self.assertAlmostEqual(got, want, places=12)

    def test_undefined(self):
        self.assertIsNone(harness.kendall_tau([1], [2]))
        self.assertIsNone(harness.kendall_tau([], []))
        self.assertIsNone(harness.kendall_tau([4.36, 4.36, 4.36], [1.0, 2.0, 3.0]))
        with self.assertRaises(ValueError):
            harness.kendall_tau([1, 2], [1])

    def test_by_workload(self):
        rs = [
            result("lora.unfused", variant="unfused", candidate=None, est=15.0, us=30.0),
            result("lora.c0", candidate=0, est=4.0, us=6.0),
            result("lora.c1", candidate=1, est=5.0, us=5.0),
            result("lora.c2", candidate=2, est=6.0, us=9.0),
            result("lora.c3", candidate=3, est=7.0, us=1.0, status="FAIL"),  # failed: left out
            result("ntrans.c0", workload="ntrans", candidate=0, est=4.0, us=3.0),
            result("ntrans.c1", workload="ntrans", candidate=1, est=4.0, us=2.0),
            result("gqa.mugraph", workload="gqa", variant="mugraph", candidate=None, us=9.0),
        ]
        taus = {t["workload"]: t for t in harness.kendall_by_workload(rs)}
        self.assertEqual(set(taus), {"lora", "ntrans"})
        self.assertEqual(taus["lora"]["candidates"], [0, 1, 2])
        self.assertAlmostEqual(taus["lora"]["tau"], 1 / 3)
        self.assertEqual(taus["lora"]["best_measured"], 1)
        self.assertIsNone(taus["ntrans"]["tau"])
        self.assertIn("ties", taus["ntrans"]["note"])
        # with unfused: est 4, 5, 6, 15 against 6, 5, 9, 30: 4 of 6 pairs concordant.
        self.assertAlmostEqual(taus["lora"]["tau_with_unfused"], 2 / 3)
        self.assertIsNone(taus["ntrans"]["tau_with_unfused"])
        table = harness.format_kendall(list(taus.values()))
        # The candidates by name: the estimates and times are theirs, in order.
        self.assertIn("| lora | c0, c1, c2 | 0.33 | 0.67 | 4.00, 5.00, 6.00 | 6.00, 5.00, 9.00 | c1 |", table)
        self.assertIn("n/a (the model ties all candidates)", table)


class FakeCuda:
    """torch.cuda's timing surface, on a simulated GPU clock: _sleep and the
    timed callable advance it; events read it."""

    def __init__(self):
        self.now_us = 0.0
        self.sleeps = []
        self.syncs = 0

    def _sleep(self, cycles):
        self.sleeps.append(cycles)
        self.now_us += cycles / 1000.0  # a 1 GHz clock

    def synchronize(self):
        self.syncs += 1

    def get_device_properties(self, i):
        return type("P", (), {"L2_cache_size": 1 << 20})()

    def Event(self, enable_timing=False):
        cuda = self

        class Ev:
            t = None

            def record(self):
                self.t = cuda.now_us

            def synchronize(self):
                pass

            def elapsed_time(self, other):
                return (other.t - self.t) / 1000.0  # ms

        return Ev()


class TimerTest(unittest.TestCase):
    """Timer's CUDA-event loop, on a fake torch.cuda."""

    def setUp(self):
        self.saved = harness.torch
        self.cuda = FakeCuda()
        harness.torch = type("T", (), {"cuda": self.cuda})

    def tearDown(self):
        harness.torch = self.saved

    def test_median_of_individual_runs(self):
        t = harness.Timer("cuda", runs=201, warmup=10)
        self.assertAlmostEqual(t.cycles_per_us, 1000.0)
        n = [0]

        def fn():
            n[0] += 1
            self.cuda.now_us += 5.0 if n[0] % 2 else 7.0  # alternate 5 and 7 µs

        r = t.time(fn)
        self.assertEqual(n[0], 211)
        self.assertEqual(r["runs"], 201)
        # The pads follow the host's real enqueue time, so the fake clock
        # reads fractions of a cycle: differences of it are exact to 1e-9.
        self.assertTrue(any(abs(r["median_us"] - m) < 1e-6 for m in (5.0, 7.0)), r["median_us"])
        self.assertAlmostEqual(r["min_us"], 5.0, places=6)
        self.assertGreater(r["pad_us"], 20)
        # one pad before every timed run, after the calibration's four sleeps
        self.assertEqual(len(self.cuda.sleeps), 4 + 201)
        self.assertTrue(all(c > 20 * 1000 for c in self.cuda.sleeps[4:]))

    def test_no_pad(self):
        t = harness.Timer("cuda", runs=200, warmup=0, pad=False)
        r = t.time(lambda: setattr(self.cuda, "now_us", self.cuda.now_us + 3.0))
        self.assertEqual(self.cuda.sleeps, [])
        self.assertIsNone(r["pad_us"])
        self.assertAlmostEqual(r["median_us"], 3.0)

    def test_cold_l2(self):
        zeroed = []
        harness.torch.empty = staticmethod(lambda n, dtype=None, device=None: type("B", (), {"zero_": lambda self: zeroed.append(n)})())
        harness.torch.uint8 = "uint8"
        t = harness.Timer("cuda", runs=200, warmup=2, cold_l2=True)
        t.time(lambda: None)
        self.assertEqual(zeroed, [2 << 20] * 200)

    def test_wall(self):
        r = harness.Timer("cpu", runs=3, warmup=1).time(lambda: None)
        self.assertEqual(r["runs"], 3)
        self.assertIsNone(r["pad_us"])


class EntriesTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp()
        lora_in = [(16, 256), (256, 4096), (256, 16), (16, 4096)]
        lora_out = [(16, 4096)]
        for i in (1, 0, 10):
            d = os.path.join(self.dir, "lora.c%d" % i)
            write_json(os.path.join(d, "manifest.json"), manifest("lora", "lora", "%016x" % i, lora_in, lora_out, kernels=1))
            write_json(os.path.join(d, "meta.json"), {"entry": "lora.c%d" % i, "workload": "lora", "variant": "superopt",
                                                      "candidate": i, "superopt": "superopt/lora.json"})
        d = os.path.join(self.dir, "lora.unfused")
        write_json(os.path.join(d, "manifest.json"), manifest("lora", "lora", "f" * 16, lora_in, lora_out, kernels=4))
        write_json(os.path.join(d, "meta.json"), {"entry": "lora.unfused", "workload": "lora", "variant": "unfused",
                                                  "candidate": None, "superopt": None})
        # An emit that failed: meta, no manifest.
        write_json(os.path.join(self.dir, "gqa.c0", "meta.json"), {"entry": "gqa.c0", "workload": "gqa", "variant": "superopt",
                                                                    "candidate": 0, "emitted": False})
        # A bare emit directory, without meta.json: the workload comes from the program name.
        write_json(os.path.join(self.dir, "x", "manifest.json"),
                   manifest("rmsnorm_matmul_mugraph", "rmsnorm_matmul_mugraph", "1" * 16, [(16, 4096), (4096, 6144)], [(16, 6144)]))
        # A launch variant of prepare.sh's sweep, with its estimate.
        d = os.path.join(self.dir, "lora.t256s3")
        write_json(os.path.join(d, "manifest.json"), manifest("lora", "lora", "e" * 16, lora_in, lora_out, kernels=1))
        write_json(os.path.join(d, "meta.json"), {"entry": "lora.t256s3", "workload": "lora", "variant": "launch",
                                                  "candidate": 0, "superopt": "launch/lora.t256s3.json"})
        write_json(os.path.join(self.dir, "launch", "lora.t256s3.json"), {"candidates": [{"estimated_us": 5.25}]})
        # prepare.sh's dependent-launch entry of c0.
        d = os.path.join(self.dir, "lora.c0.pdl")
        write_json(os.path.join(d, "manifest.json"), manifest("lora", "lora", "f" * 16, lora_in, lora_out, kernels=1))
        write_json(os.path.join(d, "meta.json"), {"entry": "lora.c0.pdl", "workload": "lora", "variant": "pdl",
                                                  "candidate": 0, "superopt": "superopt/lora.json"})
        os.makedirs(os.path.join(self.dir, "superopt"))  # not an entry
        write_json(os.path.join(self.dir, "superopt", "lora.json"),
                   {"baseline_us": 15.0, "candidates": [{"estimated_us": 4.0}, {"estimated_us": 4.5}]})

    def tearDown(self):
        shutil.rmtree(self.dir)

    def test_load_and_order(self):
        es = harness.load_entries(self.dir)
        self.assertEqual([e.name for e in es], ["x", "gqa.c0", "lora.unfused", "lora.c0", "lora.c1", "lora.c10", "lora.t256s3", "lora.c0.pdl"])
        x = es[0]
        self.assertEqual(x.workload, "rmsnorm_matmul")
        self.assertEqual(x.lib_name, "rmsnorm_matmul_mugraph")
        self.assertIsNone(es[1].manifest)
        self.assertEqual([e.label() for e in es[2:]], ["unfused", "0", "1", "10", "t256s3", "0 pdl"])

    def test_patterns(self):
        es = harness.load_entries(self.dir, ["lora.c*"])
        self.assertEqual([e.name for e in es], ["lora.c0", "lora.c1", "lora.c10", "lora.c0.pdl"])

    def test_estimated(self):
        es = {e.name: e for e in harness.load_entries(self.dir)}
        cache = {}
        self.assertEqual(harness.estimated_us(self.dir, es["lora.c1"], cache), 4.5)
        self.assertIsNone(harness.estimated_us(self.dir, es["lora.c10"], cache))  # past the candidates
        self.assertEqual(harness.estimated_us(self.dir, es["lora.unfused"], cache), 15.0)
        self.assertIsNone(harness.estimated_us(self.dir, es["x"], cache))
        self.assertIsNone(harness.estimated_us(self.dir, es["gqa.c0"], cache))  # no superopt json
        self.assertEqual(harness.estimated_us(self.dir, es["lora.t256s3"], cache), 5.25)

    def test_base_result_of_failed_emit(self):
        e = {e.name: e for e in harness.load_entries(self.dir)}["gqa.c0"]
        r = harness.fail(harness.base_result(e), "emit: boom")
        self.assertEqual(r["status"], "FAIL")
        self.assertIsNone(r["kernels"])
        self.assertIn("FAIL: emit: boom", harness.format_table([r]))


class TableTest(unittest.TestCase):
    def test_table(self):
        rs = [result("lora.c0", est=4.36, us=5.5), result("lora.c1", candidate=1, us=None, status="FAIL")]
        rs[1]["max_rel_err"] = math.inf
        rs[1]["reason"] = "max rel err inf >= 0.01 | x"
        harness.merge_baselines(rs, {"eager": {"median_us": 11.0}, "compile": {"error": "no triton"}})
        t = harness.format_table(rs)
        lines = t.strip().splitlines()
        self.assertEqual(len(lines), 4)
        ncols = len(harness.TABLE_COLUMNS)
        for l in lines:
            self.assertEqual(len(re.findall(r"(?<!\\)\|", l)), ncols + 1, l)
        self.assertIn("| lora.c0 | lora | 0 | 1 | 1.0e-03 | 5.50 | 4.36 | n/a | n/a | n/a | n/a | 11.00 | n/a | 2.00x | ok |", t)
        self.assertIn("| inf |", lines[3])
        self.assertIn("FAIL: max rel err inf >= 0.01 \\| x", lines[3])
        self.assertAlmostEqual(rs[0]["speedup_vs_eager"], 2.0)
        self.assertIsNone(rs[0]["speedup_vs_compile"])

    def test_counters(self):
        m = manifest("lora", "lora", "0123456789abcdef", [(16, 256)], [(16, 4096)], kernels=2)
        self.assertIsNone(harness.counters_summary(m))  # emitted without --counters
        m["kernels"][1]["what"] = "matmul"
        m["kernels"][0]["counters"] = {"moved_bytes": 3000000, "distinct_bytes": 2000000, "ideal_bytes": 2000000, "used_bytes": 2400000,
                                       "shared_requests": 10, "bank_conflicts": 5,
                                       "weight_problems": ["requests 1.50x the size of its largest input t1"]}
        m["kernels"][1]["counters"] = {"moved_bytes": 1000000, "distinct_bytes": 500000, "ideal_bytes": 1000000, "used_bytes": 1000000,
                                       "shared_requests": 10, "bank_conflicts": 0, "weight_problems": ["not judged"]}
        c = harness.counters_summary(m)
        self.assertEqual(c["moved_bytes"], 4000000)
        self.assertEqual(c["distinct_bytes"], 2500000)
        self.assertEqual(c["ideal_bytes"], 3000000)
        self.assertAlmostEqual(c["coalescing"], 0.85)
        self.assertAlmostEqual(c["bank_conflicts_per_access"], 0.25)
        self.assertEqual(c["weight_problems"], ["kernel 0: requests 1.50x the size of its largest input t1"])
        r = result("lora.c0", est=4.36, us=5.0)
        r["counters"] = c
        # 4 MB in 5 µs: 800 GB/s; 2.5 MB distinct: 500 GB/s from DRAM.
        self.assertIn("| 5.00 | 4.36 | 4.00 | 800 | 2.50 | 500 |", harness.format_table([r]))

    def test_baseline_notes(self):
        t = harness.format_baseline_notes({
            "lora": {"eager": {"median_us": 3.0, "max_rel_err": 2e-3}, "compile": {"error": "BackendCompilerFailed: x"}},
            "gqa": None,
        })
        self.assertIn("- lora eager: max rel err 2.0e-03", t)
        self.assertIn("- lora compile: n/a: BackendCompilerFailed: x", t)
        self.assertIn("- gqa eager: n/a: not run", t)
        self.assertEqual(harness.format_baseline_notes({}), "")

    def test_formats(self):
        self.assertEqual(harness.fmt_us(None), "n/a")
        self.assertEqual(harness.fmt_us(3.14159), "3.14")
        self.assertEqual(harness.fmt_us(123.45), "123.5")
        self.assertEqual(harness.fmt_us(12345.6), "12346")
        self.assertEqual(harness.fmt_err(math.nan), "inf")
        self.assertEqual(harness.fmt_speedup(10, 0), "n/a")

    def test_json_safe(self):
        doc = harness.json_safe({"a": [1.0, math.inf, {"b": math.nan}], "c": (2, "x")})
        self.assertEqual(json.loads(json.dumps(doc, allow_nan=False)), {"a": [1.0, "inf", {"b": "nan"}], "c": [2, "x"]})


# What nvcc 11.8 -Xptxas -v printed for an emitted layer (shortened to two
# kernels) and for the runtime's GEMM.
PTXAS_LOG = """ptxas info    : 0 bytes gmem
ptxas info    : Compiling entry function '_ZN49_GLOBAL__N__283765f0_16_llama7b_layer_cu_4db824a321llama7b_layer_kernel1EPK6__halfS2_S2_PS0_S3_' for 'sm_90'
ptxas info    : Function properties for _ZN49_GLOBAL__N__283765f0_16_llama7b_layer_cu_4db824a321llama7b_layer_kernel1EPK6__halfS2_S2_PS0_S3_
    8 bytes stack frame, 8 bytes spill stores, 12 bytes spill loads
ptxas info    : Used 64 registers
ptxas info    : Compiling entry function '_ZN6mirage11gemm_kernelI6__halfLi64ELi64ELi2ELi2EEEvPT_PKS2_S5_iiiii' for 'sm_90'
ptxas info    : Function properties for _ZN6mirage11gemm_kernelI6__halfLi64ELi64ELi2ELi2EEEvPT_PKS2_S5_iiiii
    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 122 registers, 384 bytes cmem[0]
"""


class PtxasTest(unittest.TestCase):
    def test_parse(self):
        got = harness.parse_ptxas(PTXAS_LOG)
        self.assertEqual(got, [
            {"kernel": "llama7b_layer_kernel1", "arch": "sm_90", "registers": 64, "spill_bytes": 20},
            {"kernel": "gemm_kernel", "arch": "sm_90", "registers": 122, "spill_bytes": 0},
        ])
        self.assertEqual(harness.parse_ptxas("nvcc fatal : no input files\n"), [])

    def test_format(self):
        rs = [result("llama7b_layer.c0"), result("lora.c0")]
        rs[0]["workload"] = "llama7b_layer"
        rs[0]["ptxas"] = harness.parse_ptxas(PTXAS_LOG)
        rs[1]["ptxas"] = [{"kernel": "lora_kernel0", "arch": "sm_90", "registers": 40, "spill_bytes": 0}]
        text = harness.format_ptxas(rs)
        self.assertIn("llama7b_layer 122 (llama7b_layer.c0 gemm_kernel)", text)
        self.assertIn("lora 40 (lora.c0 lora_kernel0)", text)
        self.assertIn("- llama7b_layer.c0: llama7b_layer_kernel1 spills 20 bytes (64 registers)", text)
        rs[0]["ptxas"] = rs[0]["ptxas"][1:]
        self.assertIn("No kernel spills.", harness.format_ptxas(rs))
        self.assertEqual(harness.format_ptxas([result("lora.c0")]), "")


class ProfileTest(unittest.TestCase):
    def test_profile(self):
        rs = [
            result("lora.unfused", variant="unfused", candidate=None, us=30.0, hash_="aaaaaaaaaaaaaaaa"),
            result("lora.c0", us=6.0, hash_="bbbbbbbbbbbbbbbb"),
            result("lora.c1", candidate=1, us=5.0, hash_="aaaaaaaaaaaaaaaa"),  # the same graph as unfused
            result("lora.c2", candidate=2, us=4.0, hash_="cccccccccccccccc", status="FAIL"),
            result("lora.c3", candidate=3, us=None, hash_="dddddddddddddddd"),
            result("lora.mugraph", variant="mugraph", us=7.0, hash_="aaaaaaaaaaaaaaaa", program="lora_mugraph"),
        ]
        rs[1]["timing"] = {"median_us": 6.0, "p10_us": 5.5, "p90_us": 7.0, "runs": 200}
        rs[1]["estimated_us"] = 4.5
        p = harness.make_profile(rs, "sm_90", "NVIDIA H100 80GB HBM3", {"torch": "2.11", "version": 99})
        self.assertEqual(p["version"], 1)  # extra fields never override the format's
        self.assertEqual(p["arch"], "sm_90")
        self.assertEqual(p["torch"], "2.11")
        ms = {(m["program"], m["hash"]): m for m in p["measurements"]}
        self.assertEqual(len(ms), 3)
        self.assertEqual(ms[("lora", "aaaaaaaaaaaaaaaa")]["median_us"], 5.0)
        self.assertEqual(ms[("lora", "bbbbbbbbbbbbbbbb")]["runs"], 200)
        self.assertIn(("lora_mugraph", "aaaaaaaaaaaaaaaa"), ms)
        # The spread travels with the median where the timing has it.
        self.assertEqual((ms[("lora", "bbbbbbbbbbbbbbbb")]["p10_us"], ms[("lora", "bbbbbbbbbbbbbbbb")]["p90_us"]), (5.5, 7.0))
        self.assertNotIn("p10_us", ms[("lora", "aaaaaaaaaaaaaaaa")])
        # The estimate travels too, where the entry has one.
        self.assertEqual(ms[("lora", "bbbbbbbbbbbbbbbb")]["estimated_us"], 4.5)
        self.assertNotIn("estimated_us", ms[("lora", "aaaaaaaaaaaaaaaa")])
        for m in p["measurements"]:
            self.assertRegex(m["hash"], r"^[0-9a-f]{16}$")
            self.assertGreater(m["median_us"], 0)


class WorkloadTableTest(unittest.TestCase):
    """The harness's shapes agree with the programs' .py files."""

    def shapes_of(self, path):
        with open(path) as f:
            src = f.read()
        # Names bound to integers at the top (tokens, hidden, mlp = 8, 4096, 11008).
        names = {}
        for node in ast.parse(src).body:
            if isinstance(node, ast.Assign) and len(node.targets) == 1:
                target, value = node.targets[0], node.value
                if isinstance(target, ast.Tuple) and isinstance(value, ast.Tuple):
                    pairs = zip(target.elts, value.elts)
                else:
                    pairs = [(target, value)]
                for t, v in pairs:
                    if isinstance(t, ast.Name) and isinstance(v, ast.Constant) and isinstance(v.value, int):
                        names[t.id] = v.value
        dim = lambda x: names[x] if x in names else int(x)  # noqa: E731

        # The inputs in the order the program makes them, a loop's
        # (for _ in range(N), as stacked_layers has) N times over.
        def inputs(stmts):
            out = []
            for node in stmts:
                if isinstance(node, ast.For):
                    (n,) = node.iter.args  # range(N)
                    out += inputs(node.body) * dim(ast.get_source_segment(src, n))
                    continue
                for m in re.findall(r"new_input\(dims=\(([^)]*)\)", ast.get_source_segment(src, node)):
                    out.append(tuple(dim(x.strip()) for x in m.split(",") if x.strip()))
            return out

        return inputs(ast.parse(src).body)

    def test_inputs_match_programs(self):
        for name, w in harness.WORKLOADS.items():
            for p in ("examples/%s.py" % name, "bench/workloads/%s.py" % name):
                path = os.path.join(REPO, p)
                if os.path.exists(path):
                    break
            else:
                self.fail("no program for workload %s" % name)
            self.assertEqual(self.shapes_of(path), w.inputs, name)
            mug = os.path.join(REPO, "examples", name + "_mugraph.py")
            if os.path.exists(mug):
                self.assertEqual(self.shapes_of(mug), w.inputs, name + "_mugraph")

    def test_prepare_workloads_known(self):
        with open(os.path.join(HERE, "prepare.sh")) as f:
            m = re.search(r"MIRAGE_WORKLOADS:-([^}]*)\}", f.read())
        self.assertEqual(m.group(1).split(), harness.WORKLOAD_ORDER)

    def test_prepare_sweeps_known_workloads(self):
        with open(os.path.join(HERE, "prepare.sh")) as f:
            m = re.search(r"MIRAGE_LAUNCH_SWEEP-([^}]*)\}", f.read())
        for w in m.group(1).split():
            self.assertIn(w, harness.WORKLOAD_ORDER)

    def test_workload_of_program(self):
        self.assertEqual(harness.workload_of_program("gqa_mugraph"), "gqa")
        self.assertEqual(harness.workload_of_program("lora"), "lora")


class CommandLineTest(unittest.TestCase):
    def test_help_without_torch(self):
        # -S -I: no site packages, so no torch even where it is installed.
        p = subprocess.run([sys.executable, "-S", "-I", os.path.join(HERE, "harness.py"), "--help"],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn(b"--results", p.stdout)

    def test_bad_build_dir(self):
        p = subprocess.run([sys.executable, "-S", "-I", os.path.join(HERE, "harness.py"), "--build", "/nonexistent/x",
                            "--results", "/tmp/x"], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self.assertEqual(p.returncode, 2)

    def test_scripts_parse(self):
        for s in ("prepare.sh", "run.sh", "device.sh"):
            p = subprocess.run(["bash", "-n", os.path.join(HERE, s)], stderr=subprocess.PIPE)
            self.assertEqual(p.returncode, 0, p.stderr)
            p = subprocess.run(["bash", os.path.join(HERE, s), "--help"], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
            self.assertEqual(p.returncode, 0, p.stderr)
            self.assertIn(b"bench/gpu/" + s.encode(), p.stdout)


@unittest.skipUnless(HAVE_TORCH, "torch is not installed")
class ReferenceTest(unittest.TestCase):
    def setUp(self):
        harness._import_torch()
        self.torch = harness.torch

    def test_rms_norm(self):
        t = self.torch
        x = t.tensor([[3.0, 4.0], [1.0, -1.0]], dtype=t.float64)
        y = harness.rms_norm(x)
        want = t.tensor([[3 / math.sqrt(12.5), 4 / math.sqrt(12.5)], [1.0, -1.0]], dtype=t.float64)
        self.assertTrue(t.allclose(y, want))
        z = harness.rms_norm(t.ones(2, 3, 4, dtype=t.float64) * 5, ndim=2)
        self.assertTrue(t.allclose(z, t.ones(2, 3, 4, dtype=t.float64)))

    def test_inputs_as_drawn_before(self):
        # The measured runs drew (rand * 2 - 1) * scale: the same inputs,
        # bit for bit, for every scale the workloads use (powers of two).
        t = self.torch
        for scale in (1.0, 0.25, 2.0 ** -7):
            g1, g2 = t.Generator().manual_seed(11), t.Generator().manual_seed(11)
            want = (t.rand((3, 1000), generator=g1, dtype=t.float64) * 2 - 1) * scale
            self.assertTrue(t.equal(harness._uniform(g2, (3, 1000), scale), want), scale)

    def test_small_programs(self):
        t = self.torch
        g = t.Generator().manual_seed(0)
        X = t.rand(3, 5, generator=g, dtype=t.float64)
        W = t.rand(5, 4, generator=g, dtype=t.float64)
        W2 = t.rand(5, 4, generator=g, dtype=t.float64)
        (o,) = harness.ref_rmsnorm_matmul(X, W)
        rms = (X * X).mean(1, keepdim=True).sqrt()
        self.assertTrue(t.allclose(o, (X / rms) @ W))
        (o,) = harness.ref_gated_mlp(X, W, W2)
        a = X @ W
        self.assertTrue(t.allclose(o, a / (1 + t.exp(-a)) * (X @ W2)))
        Q = t.rand(2, 3, 4, generator=g, dtype=t.float64)
        K = t.rand(2, 4, 6, generator=g, dtype=t.float64)
        V = t.rand(2, 6, 4, generator=g, dtype=t.float64)
        (o,) = harness.ref_gqa(Q, K, V)
        self.assertTrue(t.allclose(o, t.softmax(Q @ K, dim=-1) @ V))
        (o,) = harness.ref_qknorm_gqa(Q, K, V)
        qn = Q / (Q * Q).mean(-1, keepdim=True).sqrt()
        vn = V / (V * V).mean(-1, keepdim=True).sqrt()
        self.assertTrue(t.allclose(o, t.softmax(qn @ K, dim=-1) @ vn))
        A = t.rand(5, 2, generator=g, dtype=t.float64)
        B = t.rand(2, 4, generator=g, dtype=t.float64)
        (o,) = harness.ref_lora(X, W, A, B)
        self.assertTrue(t.allclose(o, X @ (W + A @ B)))
        Q4 = t.rand(2, 3, 2, 128, generator=g, dtype=t.float64)
        K4 = t.rand(2, 1, 128, 6, generator=g, dtype=t.float64)
        V4 = t.rand(2, 1, 6, 4, generator=g, dtype=t.float64)
        ones = t.ones(1, 3, 1, 1, dtype=t.float64)
        (o,) = harness.ref_gqa_repeat_kv(Q4, ones, K4, V4)
        Kr, Vr = K4.expand(2, 3, 128, 6), V4.expand(2, 3, 6, 4)  # HF's repeat_kv
        self.assertTrue(t.allclose(o, t.softmax(Q4 @ Kr / math.sqrt(128), dim=-1) @ Vr))
        H, Y, al = (t.rand(3, 5, generator=g, dtype=t.float64) for _ in range(3))
        (o,) = harness.ref_ntrans(H, Y, al)
        nrm = lambda v: v / (v * v).mean(-1, keepdim=True).sqrt()  # noqa: E731
        self.assertTrue(t.allclose(o, nrm(Y + al * (nrm(H) + Y))))

    def test_inputs_deterministic_and_rounded(self):
        w = harness.WORKLOADS["lora"]
        a = harness.make_inputs(w, ["float16"] * 4, 1)
        b = harness.make_inputs(w, ["float16"] * 4, 1)
        c = harness.make_inputs(w, ["float16"] * 4, 2)
        t = self.torch
        self.assertEqual([tuple(x.shape) for x in a], w.inputs)
        for x, y in zip(a, b):
            self.assertTrue(t.equal(x, y))
            self.assertEqual(x.dtype, t.float64)
            self.assertTrue(t.equal(x, x.half().double()))  # already rounded
            self.assertLess(float(x.abs().max()), 1.0 + 1e-9)
        self.assertFalse(t.equal(a[0], c[0]))

    def test_attention_inputs_in_fp16_range(self):
        t = self.torch
        for name in ("gqa", "qknorm_gqa"):
            w = harness.WORKLOADS[name]
            Q, K, V = harness.make_inputs(w, ["float16"] * 3, 1)
            f = harness.rms_norm if name == "qknorm_gqa" else (lambda x: x)
            A = t.matmul(f(Q), K)
            E = t.exp(A)
            S = E.sum(-1)
            self.assertLess(float(E.max()), 6e4, name)
            self.assertLess(float(S.max()), 6e4, name)
            self.assertGreater(float(A.std()), 0.1, name)  # the softmax is not flat
            # The fp16 program gives a finite answer close to the reference.
            (ref,) = w.ref(Q, K, V)
            Ah = t.matmul(f(Q.float()).half().float(), K.float()).half()
            Eh = t.exp(Ah.float()).half()
            Sh = Eh.float().sum(-1, keepdim=True).half()
            Oh = t.matmul((Eh.float() / Sh.float()).half().float(), f(V.float()).half().float())
            self.assertLess(harness.rel_err(Oh, ref), 1e-2, name)

    def test_llama_mlp_block(self):
        t = self.torch
        w = harness.WORKLOADS["llama_mlp_block"]
        X, W1, W3, W2 = harness.make_inputs(w, ["float16"] * 4, 1)
        # Each weight is scaled by the power of two nearest 1/sqrt(K).
        # (max and -min: abs() of 45 M doubles is a 360 MB temporary.)
        w1, w2 = max(float(W1.max()), -float(W1.min())), max(float(W2.max()), -float(W2.min()))
        self.assertLessEqual(w1, 1 / 64)
        self.assertGreater(w1, 1 / 128)
        self.assertLessEqual(w2, 1 / 128)  # sqrt(11008) = 104.9
        self.assertGreater(w2, 1 / 256)
        (ref,) = w.ref(X, W1, W3, W2)
        nrm = X / (X * X).mean(-1, keepdim=True).sqrt()
        a = nrm @ W1
        want = X + (a / (1 + t.exp(-a)) * (nrm @ W3)) @ W2
        self.assertTrue(t.allclose(ref, want))
        self.assertLess(float((ref - X).abs().max()), 1e3)  # in fp16 range, not flat
        self.assertGreater(float((ref - X).std()), 1e-3)

    def test_softmax_vocab(self):
        """The written-out softmax's reference is torch's softmax (the max
        shift changes nothing in exact arithmetic), rows summing to one."""
        t = self.torch
        w = harness.WORKLOADS["softmax_vocab"]
        (X,) = harness.make_inputs(w, ["float32"], 1)
        self.assertEqual(tuple(X.shape), (16, 128256))
        (ref,) = w.ref(X)
        self.assertTrue(t.allclose(ref, t.softmax(X, dim=1), rtol=1e-12, atol=0))
        self.assertTrue(t.allclose(ref.sum(1), t.ones(16, dtype=t.float64)))

    def test_lora_llama(self):
        """The scaled adapter's reference is the base product plus twice
        the adapter's, with A and B scaled as trained weights are (A by
        1/64 over its 4096 rows, B by 1/4 over its 16)."""
        t = self.torch
        w = harness.WORKLOADS["lora_llama"]
        X, W, A, B = harness.make_inputs(w, ["float16"] * 4, 1)
        self.assertLessEqual(float(A.abs().max()), 1 / 64)
        self.assertLessEqual(float(B.abs().max()), 1 / 4)
        (ref,) = w.ref(X, W, A, B)
        base = X @ W
        self.assertTrue(t.allclose(ref - base, 2 * (X @ A) @ B, rtol=1e-12, atol=1e-12))
        self.assertGreater(float((ref - base).abs().max()), 1e-3)  # the adapter counts

    def test_mqa_falcon(self):
        """Multi-query attention's reference against attention written with
        K and V expanded over the 71 heads by torch, and softmax."""
        t = self.torch
        w = harness.WORKLOADS["mqa_falcon"]
        Q, ones, K, V = harness.make_inputs(w, ["bfloat16"] * 4, 1)
        self.assertTrue(bool((ones == 1).all()))
        (ref,) = w.ref(Q, ones, K, V)
        Ke, Ve = K.expand(71, 64, 2048), V.expand(71, 2048, 64)
        want = t.softmax(t.matmul(Q, Ke) / 8, dim=2) @ Ve
        self.assertEqual(tuple(ref.shape), (71, 1, 64))
        self.assertTrue(t.allclose(ref, want, rtol=1e-9, atol=1e-12))

    def test_qkv_llama3(self):
        """Grouped-query projections' reference against one product with
        the weights concatenated, split after (as vLLM's fused qkv weight
        does), on the weighted norm."""
        t = self.torch
        w = harness.WORKLOADS["qkv_llama3"]
        X, G, Wq, Wk, Wv = harness.make_inputs(w, ["float16"] * 5, 1)
        self.assertEqual(tuple(G.shape), (1, 4096))
        self.assertLessEqual(float(Wk.abs().max()), 1 / 64)
        q, k, v = w.ref(X, G, Wq, Wk, Wv)
        nrm = X / (X * X).mean(-1, keepdim=True).sqrt() * G
        want = nrm @ t.cat([Wq, Wk, Wv], dim=1)
        self.assertEqual([tuple(o.shape) for o in (q, k, v)], [(8, 4096), (8, 1024), (8, 1024)])
        self.assertTrue(t.allclose(t.cat([q, k, v], dim=1), want, rtol=1e-9, atol=1e-12))
        self.assertGreater(float(k.std()), 1e-3)

    def test_llama_layer(self):
        """The layer's reference against an HF-style formulation: heads made
        by a view, not by a product with ones; softmax; the projection of
        the heads concatenated. Small shapes, float64."""
        t = self.torch
        g = t.Generator().manual_seed(3)
        T, D, H, HD, S, F = 2, 16, 4, 128, 6, 24
        r = lambda *s: t.rand(*s, generator=g, dtype=t.float64) * 2 - 1  # noqa: E731
        X, Kc, Vc = r(1, T, D), r(H, HD, S), r(H, S, HD)
        Wq, Wk, Wv, Wo = r(H, D, HD) / 4, r(H, D, HD) / 4, r(H, D, HD) / 4, r(H, HD, D) / 8
        W1, W3, W2 = r(1, D, F) / 4, r(1, D, F) / 4, r(1, F, D) / 4
        ones = t.ones(H, 1, 1, dtype=t.float64)
        out, kn, vn = harness.ref_llama_layer(X, ones, Wq, Wk, Wv, Kc, Vc, Wo, W1, W3, W2)
        nrm = lambda v: v / (v * v).mean(-1, keepdim=True).sqrt()  # noqa: E731
        x = X[0]  # T x D
        n = nrm(x)
        # Per-head weights as one D x (H*HD) matrix, heads along the columns.
        q = (n @ Wq.permute(1, 0, 2).reshape(D, H * HD)).view(T, H, HD).transpose(0, 1)
        k = (n @ Wk.permute(1, 0, 2).reshape(D, H * HD)).view(T, H, HD).transpose(0, 1)
        v = (n @ Wv.permute(1, 0, 2).reshape(D, H * HD)).view(T, H, HD).transpose(0, 1)
        p = t.softmax(q @ Kc / math.sqrt(HD), dim=-1)
        o = (p @ Vc).transpose(0, 1).reshape(T, H * HD)
        h = x + o @ Wo.reshape(H * HD, D)
        m = nrm(h)
        y = h + (t.nn.functional.silu(m @ W1[0]) * (m @ W3[0])) @ W2[0]
        self.assertTrue(t.allclose(out[0], y))
        self.assertTrue(t.allclose(kn, k))
        self.assertTrue(t.allclose(vn, v))

    def test_stacked_layers_and_encoder_mlp(self):
        """The references of the library rule's two workloads against the
        layers written another way (silu as x·sigmoid(x), the norm by
        rsqrt), small shapes, float64."""
        t = self.torch
        g = t.Generator().manual_seed(5)
        r = lambda *s: t.rand(*s, generator=g, dtype=t.float64) * 2 - 1  # noqa: E731
        nrm = lambda v: v * v.pow(2).mean(-1, keepdim=True).rsqrt()  # noqa: E731
        silu = lambda v: v * t.sigmoid(v)  # noqa: E731
        H, Ws = r(3, 8), [r(8, 8) for _ in range(3)]
        (out,) = harness.ref_stacked_layers(H, *Ws)
        want = H
        for W in Ws:
            want = want + silu(nrm(want) @ W)
        self.assertTrue(t.allclose(out, want))
        (one,) = harness.ref_stacked_layers(H, Ws[0])  # a layer is not the identity
        self.assertFalse(t.allclose(one, H))
        X, W1, B1, W2, B2 = r(3, 8), r(8, 12), r(1, 12), r(12, 8), r(1, 8)
        (out,) = harness.ref_encoder_mlp(X, W1, B1, W2, B2)
        want = X + B2.expand(3, 8) + silu(nrm(X) @ W1 + B1.expand(3, 12)) @ W2
        self.assertTrue(t.allclose(out, want))

    def test_encoder_mlp_inputs(self):
        # The workload's own inputs: the weights scaled by 1/sqrt(K), the
        # biases in [-1, 1), and the program computed in fp16 (each op's
        # result rounded) within the harness's tolerance of the reference.
        t = self.torch
        w = harness.WORKLOADS["encoder_mlp"]
        X, W1, B1, W2, B2 = harness.make_inputs(w, ["float16"] * 5, 1)
        for wt, bound in ((W1, 2.0 ** -5), (W2, 2.0 ** -6), (B1, 1.0), (B2, 1.0), (X, 1.0)):
            self.assertLessEqual(float(wt.abs().max()), bound)
            self.assertGreater(float(wt.abs().max()), bound / 2)
        (ref,) = w.ref(X, W1, B1, W2, B2)
        h = lambda v: v.half().double()  # noqa: E731
        N = h(harness.rms_norm(X))
        H = h(t.nn.functional.silu(h(h(N @ W1) + B1)))
        got = h(h(h(H @ W2) + B2) + X)
        self.assertLess(harness.rel_err(got, ref), 1e-2)
        self.assertGreater(float((ref - X).std()), 0.1)  # the MLP adds something

    def test_llama_layer_inputs(self):
        # The workload's shapes but for 4 heads and 8 columns of the MLP's
        # weights (the whole layer's inputs are 1.7 GB in float64): the
        # scales follow the dims multiplied over.
        t = self.torch
        shapes = [(1, 4, 4096), (4, 1, 1), (4, 4096, 128), (4, 4096, 128), (4, 4096, 128), (4, 128, 1024),
                  (4, 1024, 128), (4, 128, 4096), (1, 4096, 8), (1, 4096, 8), (1, 11008, 8)]
        xs = harness.gen_layer(t.Generator().manual_seed(1), shapes)
        self.assertEqual([tuple(x.shape) for x in xs], shapes)
        X, ones, Wq, Wk, Wv, Kc, Vc, Wo, W1, W3, W2 = xs
        self.assertTrue(t.equal(ones, t.ones_like(ones)))
        for wt, k in ((Wq, 4096), (Wo, 128), (W1, 4096), (W2, 11008)):
            bound = 2.0 ** -round(math.log2(math.sqrt(k)))
            self.assertLessEqual(float(wt.abs().max()), bound)
            self.assertGreater(float(wt.abs().max()), bound / 2)
        # The scores stay in fp16 range and the softmax is not flat.
        N = harness.rms_norm(X) * ones
        A = t.matmul(t.matmul(N, Wq), Kc) / math.sqrt(128)
        self.assertLess(float(t.exp(A).sum(-1).max()), 6e4)
        self.assertGreater(float(A.std()), 0.1)

    def test_rel_err(self):
        t = self.torch
        ref = t.tensor([1.0, -2.0, 4.0], dtype=t.float64)
        self.assertEqual(harness.rel_err(ref.clone(), ref), 0.0)
        self.assertAlmostEqual(harness.rel_err(t.tensor([1.0, -2.0, 4.4]), ref), 0.1, places=6)
        self.assertEqual(harness.rel_err(t.tensor([1.0, float("nan"), 4.0]), ref), math.inf)
        self.assertEqual(harness.rel_err(t.tensor([1.0, 2.0]), ref), math.inf)


FAKE_ENTRY = r"""
#include <cstdlib>
#include <cstddef>
#include <cstring>
extern "C" size_t mirage_ntrans_workspace_bytes(void) { return WS; }
extern "C" int mirage_ntrans(void* const* outputs, void const* const* inputs, void* workspace, void* stream) {
  MODE
}
"""

FAKE_MODES = {
    # (mode, body): what the fake entry point does
    "abort": "std::abort();",
    "error": "return 700;",
    "nowrite": "return 0;",
    "copy": "std::memcpy(outputs[0], inputs[1], 32 * 4096 * 2); return 0;",  # X instead of the answer
}


@unittest.skipUnless(HAVE_TORCH and shutil.which("g++"), "needs torch and g++")
class BudgetTest(unittest.TestCase):
    """--budget: no workload starts past it; the first always runs."""

    def run_with(self, budget, ticks):
        clock = iter(ticks)
        groups = [("a", [1]), ("b", [2]), ("c", [3])]
        gen, skipped = harness.within_budget(groups, budget, lambda: next(clock))
        return [w for w, _ in gen], skipped

    def test_stops_past_the_budget(self):
        # Asked at 0 (the start), then before b at 100 and before c at 400.
        self.assertEqual(self.run_with(300, [0, 100, 400]), (["a", "b"], ["c"]))

    def test_the_first_workload_runs_however_small_the_budget(self):
        self.assertEqual(self.run_with(0, [0, 1]), (["a"], ["b", "c"]))

    def test_no_budget(self):
        self.assertEqual(self.run_with(None, [0]), (["a", "b", "c"], []))

    def test_write_whole_replaces_the_file(self):
        d = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, d)
        path = os.path.join(d, "gpu.md")
        harness.write_whole(path, "first\n")
        harness.write_whole(path, "second\n")
        with open(path) as f:
            self.assertEqual(f.read(), "second\n")
        self.assertEqual(os.listdir(d), ["gpu.md"])


class FailureTest(unittest.TestCase):
    """Entries that crash, return an error, or compute the wrong thing fail
    alone: the harness goes on with the others (fake ntrans entry points,
    built with g++, run with --emulate on the CPU)."""

    def test_failures_are_isolated(self):
        build = tempfile.mkdtemp()
        res = tempfile.mkdtemp()
        try:
            shape = [32, 4096]
            for i, mode in enumerate(["abort", "error", "nowrite", "copy", "abort"]):
                d = os.path.join(build, "ntrans.c%d" % i)
                os.makedirs(d)
                with open(os.path.join(d, "ntrans.cu"), "w") as f:
                    f.write(FAKE_ENTRY.replace("MODE", FAKE_MODES[mode]).replace("WS", "64" if i == 2 else "0"))
                m = manifest("ntrans", "ntrans", "%016x" % i, [shape] * 3, [shape])
                m["workspace_bytes"] = 64 if i == 2 else 0
                write_json(os.path.join(d, "manifest.json"), m)
                write_json(os.path.join(d, "meta.json"), {"entry": "ntrans.c%d" % i, "workload": "ntrans",
                                                          "variant": "superopt", "candidate": i})
            p = subprocess.run([sys.executable, os.path.join(HERE, "harness.py"), "--build", build, "--results", res,
                                "--emulate", "--runs", "2", "--warmup", "0"],
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=600)
            out = p.stdout.decode()
            self.assertEqual(p.returncode, 1, out)
            with open(os.path.join(res, "gpu.json")) as f:
                doc = json.load(f)
            rs = {r["entry"]: r for r in doc["entries"]}
            self.assertEqual(len(rs), 5, out)
            for r in rs.values():
                self.assertEqual(r["status"], "FAIL", r)
            self.assertIn("worker died", rs["ntrans.c0"]["reason"])
            self.assertIn("worker died", rs["ntrans.c4"]["reason"])
            self.assertIn("700 (cudaErrorIllegalAddress)", rs["ntrans.c1"]["reason"])
            self.assertEqual(rs["ntrans.c2"]["max_rel_err"], "inf")
            self.assertIn("max rel err", rs["ntrans.c3"]["reason"])
            self.assertGreater(rs["ntrans.c3"]["max_rel_err"], 0.1)
            # The baselines ran once, before the first crash.
            self.assertIsNotNone(rs["ntrans.c3"]["eager_us"])
            self.assertEqual(doc["failed"], ["ntrans.c%d" % i for i in range(5)])
            self.assertEqual((doc["complete"], doc["not_run"]), (True, []))
            self.assertFalse(os.path.exists(os.path.join(res, "gpu.json.tmp")))
            with open(os.path.join(res, "gpu.md")) as f:
                self.assertIn("5 entries, 5 failed.", f.read())
        finally:
            shutil.rmtree(build)
            shutil.rmtree(res)


@unittest.skipUnless(HAVE_TORCH and shutil.which("g++") and os.environ.get("MIRAGE_GPU_EMULATE_BUILD"),
                     "set MIRAGE_GPU_EMULATE_BUILD=DIR (needs torch and g++)")
class EmulateTest(unittest.TestCase):
    def test_emulate(self):
        build = os.environ["MIRAGE_GPU_EMULATE_BUILD"]
        res = tempfile.mkdtemp()
        try:
            p = subprocess.run([sys.executable, os.path.join(HERE, "harness.py"), "--build", build, "--results", res,
                                "--emulate", "--runs", "1", "--warmup", "0", "--entries", "ntrans.*", "--entries", "lora.*"],
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
            out = p.stdout.decode()
            self.assertEqual(p.returncode, 0, out)
            with open(os.path.join(res, "gpu.json")) as f:
                doc = json.load(f)
            self.assertTrue(doc["entries"])
            for r in doc["entries"]:
                self.assertEqual(r["status"], "ok", r)
                self.assertLess(r["max_rel_err"], 1e-2)
            self.assertTrue(os.path.exists(os.path.join(res, "gpu.md")))
        finally:
            shutil.rmtree(res)


if __name__ == "__main__":
    unittest.main()
