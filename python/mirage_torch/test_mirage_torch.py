"""Tests of mirage_torch that need no GPU: the emitted code built for the CPU
emulator, called on CPU tensors through torch.ops.mirage (python3-torch,
Debian's 1.13, is enough).

Run from the repository: python3 -m unittest discover -s python -p 'test_*.py'
(scripts/test.sh does). They build bin/mirage with Go, or use $MIRAGE.
"""

import os
import shutil
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.dirname(HERE))

import mirage_torch  # noqa: E402

try:
    import torch
except ImportError:  # the module's own tests below still run
    torch = None

# torch 2.4 and later register the op's fake with torch.library.register_fake,
# and its kernels at the backend keys only (before, at the autograd keys too).
FAKE_API = torch is not None and hasattr(torch.library, "register_fake")

# A LLaMA MLP block at small shapes (the structure of
# examples/llama_mlp_block.py): H = X + W2·(silu(W1·n(X)) * W3·n(X)).
MLP = """import mirage as mi
g = mi.new_kernel_graph()
X = g.new_input(dims=(4, 64), dtype=mi.float16)
W1 = g.new_input(dims=(64, 96), dtype=mi.float16)
W3 = g.new_input(dims=(64, 96), dtype=mi.float16)
W2 = g.new_input(dims=(96, 64), dtype=mi.float16)
N = g.rms_norm(X, normalized_shape=(64,))
up = g.matmul(N, W3)
g.mark_output(g.add(g.matmul(g.mul(g.silu(g.matmul(N, W1)), up), W2), X))
"""

# Two outputs, one a row sum, in bf16.
TWO = """import mirage as mi
g = mi.new_kernel_graph()
A = g.new_input(dims=(3, 40), dtype=mi.bfloat16)
B = g.new_input(dims=(3, 40), dtype=mi.bfloat16)
S = g.add(g.exp(A), B)
g.mark_output(S)
g.mark_output(g.reduction(S, 1))
"""

# Per-head projections of a layer written head by head: m (the tokens)
# inside the heads, [3, m, 16], whose fewer rows are not the first of the
# tensor's memory (the entry point copies them through the workspace).
HEADS = """import mirage as mi
g = mi.new_kernel_graph()
X = g.new_input(dims=(1, 4, 32), dtype=mi.float16)
ones = g.new_input(dims=(3, 1, 1), dtype=mi.float16)
W = g.new_input(dims=(3, 32, 16), dtype=mi.float16)
g.mark_output(g.matmul(g.mul(g.rms_norm(X, normalized_shape=(32,)), ones), W))
"""


def mlp_reference(x, w1, w3, w2):
    x, w1, w3, w2 = (t.double() for t in (x, w1, w3, w2))
    n = x / torch.sqrt(torch.mean(x * x, dim=-1, keepdim=True))
    a = n @ w1
    return x + ((a / (1 + torch.exp(-a))) * (n @ w3)) @ w2


def mirage_binary():
    if os.environ.get("MIRAGE"):
        return os.environ["MIRAGE"]
    out = os.path.join(tempfile.gettempdir(), "mirage-torch-test-bin", "mirage")
    subprocess.run(["go", "build", "-o", out, "./cmd/mirage"], cwd=REPO, check=True)
    return out


class HeaderTest(unittest.TestCase):
    """The header parser, on headers written here by hand (no torch)."""

    def write(self, text):
        d = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, d)
        p = os.path.join(d, "p.h")
        with open(p, "w") as f:
            f.write(text)
        return p

    def test_static(self):
        p = mirage_torch.parse_header(self.write(
            "//   inputs[0]   float16  [8, 4096]        strides [4096 1]\n"
            "//   inputs[1]   bfloat16 [4096]           strides [1]\n"
            "//   outputs[0]  float32  [8, 4096]        strides [4096 1]\n"
            "// Link with -lcublasLt: the CUDA toolkit's cuBLASLt runs the pre-defined\n"
            "cudaError_t mirage_p(void* const* outputs, void const* const* inputs, void* workspace, cudaStream_t stream);\n"))
        self.assertEqual(p.name, "p")
        self.assertEqual([(t.dtype, t.dims) for t in p.inputs], [("float16", [8, 4096]), ("bfloat16", [4096])])
        self.assertEqual([(t.dtype, t.dims) for t in p.outputs], [("float32", [8, 4096])])
        self.assertIsNone(p.m_range)
        self.assertEqual(p.links, ["cublasLt"])

    def test_dynamic(self):
        p = mirage_torch.parse_header(self.write(
            "//   inputs[0]   float16  [m, 4096]\n"
            "//   outputs[0]  float16  [m, 6144]\n"
            "#define MIRAGE_P_M_MIN 1\n#define MIRAGE_P_M_MAX 64\n"
            "cudaError_t mirage_p(void* const* outputs, void const* const* inputs, int64_t m, void* workspace, cudaStream_t stream);\n"))
        self.assertEqual(p.m_range, (1, 64))
        self.assertEqual(p.inputs[0].shape(5), (5, 4096))
        self.assertEqual(p.links, [])

    def test_refused(self):
        for text, want in [
            ("// nothing\n", "no mirage_NAME entry point"),
            ("//   inputs[0]   int8  [8]\ncudaError_t mirage_p(void* const* outputs);\n", "unknown dtype"),
            ("//   inputs[0]   float16  [8, k]\ncudaError_t mirage_p(void* const* outputs);\n", "bad dim 'k'"),
            ("//   inputs[1]   float16  [8]\n//   outputs[0]  float16  [8]\ncudaError_t mirage_p(void* const* outputs);\n", "inputs numbered [1]"),
            ("//   inputs[0]   float16  [m]\n//   outputs[0]  float16  [m]\n"
             "cudaError_t mirage_p(void* const* outputs, void const* const* inputs, int64_t m, void* w, cudaStream_t s);\n", "M_MIN and M_MAX"),
        ]:
            with self.assertRaises(ValueError) as cm:
                mirage_torch.parse_header(self.write(text))
            self.assertIn(want, str(cm.exception))


    def test_not_utf8(self):
        d = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, d)
        p = os.path.join(d, "p.h")
        with open(p, "wb") as f:
            f.write(b"// caf\xe9\ncudaError_t mirage_p(void* const* outputs);\n")
        with self.assertRaises(ValueError) as cm:
            mirage_torch.parse_header(p)
        self.assertIn(p + ": not a header mirage emit wrote (not UTF-8", str(cm.exception))


class BuildTest(unittest.TestCase):
    """What the build links against (no torch, no toolkit)."""

    def test_toolkit_runpath(self):
        # The library finds cuBLASLt in the toolkit beside nvcc; a
        # distribution's toolkit is in the loader's own paths already.
        root = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, root)
        for d in ("bin", "lib64"):
            os.mkdir(os.path.join(root, d))
        nvcc = os.path.join(root, "bin", "nvcc")
        open(nvcc, "w").close()
        self.assertEqual(mirage_torch._toolkit_libs(nvcc), [os.path.join(os.path.realpath(root), "lib64")])
        self.assertEqual(mirage_torch._toolkit_libs("/usr/bin/nvcc"), [])


@unittest.skipIf(torch is None and not os.environ.get("MIRAGE_REQUIRE_TORCH"),
                 "torch is not installed (Debian: python3-torch); .ci/run installs it and sets MIRAGE_REQUIRE_TORCH")
class OpTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        if torch is None:
            raise RuntimeError("MIRAGE_REQUIRE_TORCH is set but %s has no torch (Debian: apt-get install python3-torch)" % sys.executable)
        cls.mirage = mirage_binary()
        cls.tmp = tempfile.mkdtemp()
        cls.dirs = {}
        for name, src, extra in [("mlp", MLP, []), ("two", TWO, []), ("name", TWO, []), ("None", TWO, []),
                                 ("dyn", MLP, ["--dynamic", "X:0=1..8"]),
                                 ("heads", HEADS, ["--dynamic", "X:1=1..8"])]:
            prog = os.path.join(cls.tmp, name + ".py")
            with open(prog, "w") as f:
                f.write(src)
            out = os.path.join(cls.tmp, "out-" + name)
            if extra:
                cmd = [cls.mirage, "superopt", prog, "-o", out, "--time-limit", "20s", "--no-cache"] + extra
            else:
                cmd = [cls.mirage, "emit", prog, "-o", out]
            subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
            for f in os.listdir(out):  # superopt writes the μGraph file too
                if f.endswith(".ugraph.json") or f.endswith(".manifest.json"):
                    os.remove(os.path.join(out, f))
            cls.dirs[name] = out
        cls.mlp = mirage_torch.load(cls.dirs["mlp"], devices=["cpu"])

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def inputs(self, m=4, seed=0):
        g = torch.Generator().manual_seed(seed)
        r = lambda *s: ((torch.rand(*s, generator=g) * 2 - 1) / (s[0] ** 0.5 if len(s) == 2 and s[0] > 8 else 1))  # noqa: E731
        return [r(m, 64).half(), (r(64, 96) / 8).half(), (r(64, 96) / 8).half(), (r(96, 64) / 8).half()]

    def test_registered_and_right(self):
        self.assertTrue(hasattr(torch.ops.mirage, "mlp"))
        x = self.inputs()
        y = torch.ops.mirage.mlp(*x)
        self.assertEqual((y.dtype, tuple(y.shape), y.device.type), (torch.float16, (4, 64), "cpu"))
        ref = mlp_reference(*x)
        err = float((y.double() - ref).abs().max() / ref.abs().max())
        self.assertLess(err, 1e-2)
        # The Op object calls the same op.
        self.assertTrue(torch.equal(self.mlp(*x), y))

    def test_two_outputs(self):
        op = mirage_torch.load(self.dirs["two"], devices=["cpu"])
        g = torch.Generator().manual_seed(1)
        a, b = (torch.rand(3, 40, generator=g) * 2 - 1).bfloat16(), (torch.rand(3, 40, generator=g) * 2 - 1).bfloat16()
        s, r = op(a, b)
        want = torch.exp(a.double()) + b.double()
        self.assertLess(float((s.double() - want).abs().max()), 2e-2 * float(want.abs().max()))
        rows = want.sum(1, keepdim=True)
        self.assertEqual(tuple(r.shape), (3, 1))
        self.assertLess(float((r.double() - rows).abs().max()), 2e-2 * float(rows.abs().max()))

    def test_dynamic_rows(self):
        op = mirage_torch.load(self.dirs["dyn"], devices=["cpu"])
        self.assertEqual(op.program.m_range, (1, 8))
        for m in (1, 3, 8):
            x = self.inputs(m=m, seed=m)
            y = torch.ops.mirage.dyn(*x)
            ref = mlp_reference(*x)
            self.assertEqual(tuple(y.shape), (m, 64))
            self.assertLess(float((y.double() - ref).abs().max() / ref.abs().max()), 1e-2, m)
        for m in (9, 16):
            with self.assertRaises(ValueError) as cm:
                op(*self.inputs(m=m))
            self.assertIn("outside the range 1..8", str(cm.exception))

    def test_dynamic_rows_inside_the_heads(self):
        op = mirage_torch.load(self.dirs["heads"], devices=["cpu"])
        g = torch.Generator().manual_seed(7)
        ones = torch.ones(3, 1, 1).half()
        w = ((torch.rand(3, 32, 16, generator=g) * 2 - 1) / 4).half()
        for m in (1, 3, 8, 5):
            x = (torch.rand(1, m, 32, generator=g) * 2 - 1).half()
            y = torch.ops.mirage.heads(x, ones, w)
            xd = x.double()
            ref = (xd / torch.sqrt(torch.mean(xd * xd, dim=-1, keepdim=True))) @ w.double()
            self.assertEqual(tuple(y.shape), (3, m, 16))
            self.assertLess(float((y.double() - ref).abs().max() / ref.abs().max()), 1e-2, m)

    def test_quick_path(self):
        # A call that matches the header takes one quick pass (the host
        # time a call, #43); anything check would refuse leaves it for the
        # full check, which says what is wrong.
        dyn = mirage_torch.load(self.dirs["dyn"], devices=["cpu"])
        miss = mirage_torch._MISMATCH
        self.assertIsNone(self.mlp._quick_m(self.inputs()))
        self.assertEqual(dyn._quick_m(self.inputs(m=3)), 3)
        x = self.inputs()
        for bad in ([x[0].float()] + x[1:], x[:3], [x[0].t()] + x[1:], [x[0], x[1].clone().requires_grad_()] + x[2:],
                    [torch._neg_view(x[0])] + x[1:], [x[0], x[1], x[2], torch.empty(96, 64, dtype=torch.float16, device="meta")],
                    [x[0].numpy()] + x[1:], [x[0].to_sparse()] + x[1:]):
            self.assertIs(self.mlp._quick_m(bad), miss)
        self.assertIs(dyn._quick_m(self.inputs(m=9)), miss)
        self.assertIs(dyn._quick_m(self.inputs(m=3)[:1] + [x[1].float()] + x[2:]), miss)

    def test_host_probe(self):
        # bench/gpu/torch_host.py, which a GPU lease runs (device.sh,
        # TORCH=1): here on the emulator, so a lease never finds it broken.
        probe = os.path.join(REPO, "bench", "gpu", "torch_host.py")
        out = subprocess.run([sys.executable, probe, self.dirs["dyn"], "--device", "cpu", "--runs", "5"],
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        self.assertEqual(out.returncode, 0, out.stdout)
        for m in (1, 8):
            self.assertIn("dyn, m = %d, cpu" % m, out.stdout)
        self.assertEqual(out.stdout.count("added by the wrapper"), 2, out.stdout)

    def test_bad_inputs_refused(self):
        x = self.inputs()
        cases = [
            (x[:3], "x3"),  # the op's schema: torch says the argument is missing
            ([x[0].float()] + x[1:], "input 0 is torch.float32, want torch.float16"),
            ([x[0][:, :32].contiguous()] + x[1:], "input 0 has shape [4, 32], want [4, 64]"),
            ([x[0], x[1].t().contiguous()] + x[2:], "input 1 has shape [96, 64], want [64, 96]"),
            ([x[0], x[1], x[2], torch.empty(96, 64, dtype=torch.float16, device="meta")], "input 3 is on meta"),
            ([x[0], x[1], x[2], torch.empty(64, 96, dtype=torch.float16).t()], "input 3 is not contiguous"),
            ([torch.empty(4 * 64 + 1, dtype=torch.float16)[1:].view(4, 64)] + x[1:], "not 16-byte aligned"),
            ([x[0].numpy()] + x[1:], "argument 'x0'"),  # torch's schema check
            ([x[0].reshape(256)] + x[1:], "input 0 has 1 dims (shape [256]), want 2"),
            ([x[0], x[1].clone().requires_grad_()] + x[2:], "input 1 requires grad"),
        ]
        if not FAKE_API:  # torch 1.13: the op runs above the Negative key
            cases.append(([torch._neg_view(x[0])] + x[1:], "lazily negated"))
        for args, want in cases:
            with self.assertRaises((ValueError, RuntimeError)) as cm:
                torch.ops.mirage.mlp(*args)
            self.assertIn(want, str(cm.exception), want)

    @unittest.skipUnless(FAKE_API, "torch < 2.4 refuses these calls (test_bad_inputs_refused)")
    def test_negated_view_resolved(self):
        # torch 2.4 and later resolve a lazily negated view before the op runs.
        x = self.inputs()
        neg = torch._neg_view(x[0])
        self.assertTrue(torch.equal(torch.ops.mirage.mlp(neg, *x[1:]), torch.ops.mirage.mlp(neg.resolve_neg(), *x[1:])))

    def test_name_taken_by_the_namespace(self):
        # torch.ops.mirage.name is the namespace's own attribute: an op of
        # that name could never be called.
        with self.assertRaises(ValueError) as cm:
            mirage_torch.load(self.dirs["name"], devices=["cpu"])
        self.assertIn("the name is taken", str(cm.exception))
        self.assertFalse([f for f in os.listdir(self.dirs["name"]) if f.endswith(".so")], "a library was built for a name refused")

    def test_keyword_name_refused(self):
        # None.py emits mirage_None, which torch's schemas cannot name.
        with self.assertRaises(ValueError) as cm:
            mirage_torch.load(self.dirs["None"], devices=["cpu"])
        self.assertIn("None.h: torch cannot name an op 'None'", str(cm.exception))
        self.assertIn("--name", str(cm.exception))
        self.assertFalse([f for f in os.listdir(self.dirs["None"]) if ".so" in f], "a library was built for a name refused")

    def test_inputs_without_memory(self):
        # A zero tensor and a wrapper subclass have elements but a NULL
        # data pointer: refused (torch 1.13 runs the op on them as they
        # are), or made real tensors before the op runs (a subclass's
        # __torch_dispatch__); never read at address 0.
        from torch.utils._pytree import tree_map

        class Wrapper(torch.Tensor):
            @staticmethod
            def __new__(cls, elem):
                r = torch.Tensor._make_wrapper_subclass(cls, elem.size(), strides=elem.stride(), dtype=elem.dtype,
                                                         device=elem.device, requires_grad=False)
                r.elem = elem
                return r

            @classmethod
            def __torch_dispatch__(cls, func, types, args=(), kwargs=None):
                un = lambda t: t.elem if isinstance(t, Wrapper) else t  # noqa: E731
                return func(*tree_map(un, args), **tree_map(un, kwargs or {}))

        x = self.inputs()
        for k, bare, real in [(0, torch._efficientzerotensor((4, 64), dtype=torch.float16), torch.zeros(4, 64, dtype=torch.float16)),
                              (2, Wrapper(x[2]), x[2])]:
            args = x[:k] + [bare] + x[k + 1:]
            try:
                y = torch.ops.mirage.mlp(*args)
            except ValueError as e:
                self.assertIn("input %d has no memory of its own" % k, str(e))
                continue
            self.assertTrue(torch.equal(y, torch.ops.mirage.mlp(*(x[:k] + [real] + x[k + 1:]))), k)

    def test_killed_build_cleaned_up(self):
        # A build killed before its cleanup leaves .libNAME.PID.XXXX.so.tmp;
        # the next build removes it, and leaves a running builder's alone.
        d = os.path.join(self.tmp, "killed")
        shutil.copytree(self.dirs["two"], d)
        for f in os.listdir(d):
            if ".so" in f:
                os.remove(os.path.join(d, f))
        gone = subprocess.Popen(["true"])
        gone.wait()
        orphan = os.path.join(d, ".libtwo.%d.k1ll3d.so.tmp" % gone.pid)
        running = os.path.join(d, ".libtwo.%d.bu1ld.so.tmp" % os.getppid())
        for f in (orphan, running):
            open(f, "w").close()
        mirage_torch._build(d, mirage_torch.parse_header(os.path.join(d, "two.h")), "cpu")
        self.assertFalse(os.path.exists(orphan))
        self.assertTrue(os.path.exists(running))

    def test_threads(self):
        # The CPU emulator keeps one global state: calls from several
        # threads take turns, and each gets its own answer.
        import threading
        xs = [self.inputs(seed=s) for s in range(4)]
        want = [torch.ops.mirage.mlp(*x) for x in xs]
        got, errors = [None] * 4, []

        def call(i):
            try:
                for _ in range(3):
                    got[i] = torch.ops.mirage.mlp(*xs[i])
            except Exception as e:  # reported below
                errors.append(e)
        threads = [threading.Thread(target=call, args=(i,)) for i in range(4)]
        for th in threads:
            th.start()
        for th in threads:
            th.join()
        self.assertEqual(errors, [])
        for i in range(4):
            self.assertTrue(torch.equal(got[i], want[i]), i)
        # Under no_grad a weight that requires grad is fine.
        with torch.no_grad():
            torch.ops.mirage.mlp(xs[0][0], xs[0][1].clone().requires_grad_(), *xs[0][2:])

    def test_meta_gives_shapes(self):
        x = [torch.empty(t.shape, dtype=t.dtype, device="meta") for t in self.inputs()]
        y = torch.ops.mirage.mlp(*x)
        self.assertEqual((y.device.type, tuple(y.shape), y.dtype), ("meta", (4, 64), torch.float16))

    def test_load_again(self):
        self.assertIs(mirage_torch.load(self.dirs["mlp"], devices=["cpu"]), self.mlp)
        # Another program under a registered name is refused.
        other = os.path.join(self.tmp, "other")
        shutil.copytree(self.dirs["two"], other)
        os.rename(os.path.join(other, "two.h"), os.path.join(other, "mlp.h"))
        with open(os.path.join(other, "mlp.h")) as f:
            text = f.read().replace("mirage_two", "mirage_mlp")
        with open(os.path.join(other, "mlp.h"), "w") as f:
            f.write(text)
        with self.assertRaises(ValueError) as cm:
            mirage_torch.load(other, devices=["cpu"])
        self.assertIn("already registered", str(cm.exception))

    def test_reload_keeps_the_ops(self):
        # A notebook's autoreload runs the module again: the ops registered
        # before stay, and loading again returns them.
        import importlib
        x = self.inputs(seed=3)
        before = torch.ops.mirage.mlp(*x)
        module = importlib.reload(mirage_torch)
        self.assertIs(module.load(self.dirs["mlp"], devices=["cpu"]), self.mlp)
        self.assertTrue(torch.equal(torch.ops.mirage.mlp(*x), before))
        two = module.load(self.dirs["two"], devices=["cpu"])
        self.assertIs(mirage_torch.load(self.dirs["two"], devices=["cpu"]), two)

    def test_failed_build_leaves_nothing(self):
        broken = os.path.join(self.tmp, "broken")
        shutil.copytree(self.dirs["two"], broken)
        for f in os.listdir(broken):
            if f.endswith(".so"):
                os.remove(os.path.join(broken, f))
        with open(os.path.join(broken, "two.cu"), "a") as f:
            f.write("\nthis is not C++;\n")
        before = sorted(os.listdir(broken))
        prog = mirage_torch.parse_header(os.path.join(broken, "two.h"))
        with self.assertRaises(mirage_torch.BuildError) as cm:
            mirage_torch._build(broken, prog, "cpu")
        self.assertIn("two.cu", str(cm.exception))
        self.assertEqual(sorted(os.listdir(broken)), before)

    def test_library_follows_its_sources(self):
        # A set copied over another with its old times kept (cp -p, tar):
        # the library built from the first is not taken for the second's.
        d = os.path.join(self.tmp, "stale")
        shutil.copytree(self.dirs["two"], d)
        prog = mirage_torch.parse_header(os.path.join(d, "two.h"))
        lib = mirage_torch._build(d, prog, "cpu")
        built = os.stat(lib).st_ino
        self.assertEqual(mirage_torch._build(d, prog, "cpu"), lib)
        self.assertEqual(os.stat(lib).st_ino, built, "the same sources were built again")
        cu = os.path.join(d, "two.cu")
        with open(cu, "a") as f:
            f.write("\n// another program's code\n")
        old = os.path.getmtime(lib) - 100
        os.utime(cu, (old, old))
        self.assertEqual(mirage_torch._build(d, prog, "cpu"), lib)
        self.assertNotEqual(os.stat(lib).st_ino, built, "the library of the earlier sources was kept")

    def test_edited_header_refused(self):
        # The set's manifest holds the sums mirage wrote: a header edited
        # since (its shapes) would describe other code.
        d = os.path.join(self.tmp, "edited")
        subprocess.run([self.mirage, "emit", os.path.join(self.tmp, "two.py"), "-o", d], check=True, stdout=subprocess.DEVNULL)
        h = os.path.join(d, "two.h")
        with open(h) as f:
            text = f.read()
        with open(h, "w") as f:
            f.write(text.replace("[3, 40]", "[3, 41]", 1))
        with self.assertRaises(ValueError) as cm:
            mirage_torch.load(d, devices=["cpu"])
        self.assertIn("two.h is not the file two.manifest.json lists", str(cm.exception))

    def test_missing_compiler(self):
        d = os.path.join(self.tmp, "nocompiler")
        shutil.copytree(self.dirs["two"], d)
        before = sorted(os.listdir(d))
        prog = mirage_torch.parse_header(os.path.join(d, "two.h"))
        with self.assertRaises(mirage_torch.BuildError) as cm:
            mirage_torch._build(d, prog, "cpu", cxx="/nonexistent/g++")
        self.assertIn("not on PATH (pass cxx= to load)", str(cm.exception))
        self.assertEqual(sorted(os.listdir(d)), before)

    def test_sparse_input_refused(self):
        x = self.inputs()
        x[1] = x[1].float().to_sparse().half() if hasattr(x[1], "to_sparse") else x[1]
        with self.assertRaises(ValueError) as cm:
            torch.ops.mirage.mlp(*x)
        self.assertIn("input 1 is a torch.sparse_coo tensor", str(cm.exception))

    def test_example_module(self):
        # examples/torch/llama_mlp.py on the small program, on the CPU.
        p = subprocess.run([sys.executable, os.path.join(REPO, "examples", "torch", "llama_mlp.py"), self.dirs["dyn"],
                            "--device", "cpu", "--steps", "1,2,5,8"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        self.assertEqual(p.returncode, 0, p.stdout)
        self.assertIn("decode loop: 4 steps", p.stdout)

    def test_example_module_steps(self):
        # The op takes 1..8 rows: by default the steps are brought into
        # that range; steps outside it are refused before anything runs.
        ex = os.path.join(REPO, "examples", "torch", "llama_mlp.py")
        p = subprocess.run([sys.executable, ex, self.dirs["dyn"], "--device", "cpu"],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        self.assertEqual(p.returncode, 0, p.stdout)
        self.assertIn("decode loop: 4 steps, m in [1, 3, 8, 5]", p.stdout)
        for steps, want in (("1,9,0", "--steps: 9, 0 outside the range 1..8"), ("1;2", "--steps '1;2': want token counts")):
            p = subprocess.run([sys.executable, ex, self.dirs["dyn"], "--device", "cpu", "--steps", steps],
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
            self.assertEqual(p.returncode, 1, p.stdout)
            self.assertIn(want, p.stdout)
            self.assertNotIn("decode loop", p.stdout)


if __name__ == "__main__":
    unittest.main()
