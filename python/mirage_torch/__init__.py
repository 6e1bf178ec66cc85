"""mirage_torch: the CUDA that ``mirage emit`` (or ``superopt``) writes, as
PyTorch ops.

    import mirage_torch
    mirage_torch.load("out/llama")          # builds NAME.cu once, registers the op
    y = torch.ops.mirage.llama_mlp_block(x, w1, w3, w2)

``load`` reads the emitted directory's ``NAME.h`` (the entry point, each
tensor's dtype and shape, the dynamic range of m, the libraries to link),
builds ``NAME.cu`` into a shared library (nvcc for a CUDA device; for the
CPU, g++ with mirage's CPU emulator, whose "device" pointers are host
memory: slow, for tests) and registers ``torch.ops.mirage.NAME``:

- every input is checked against the header before anything launches:
  count, dtype, shape (m from the rows of the inputs that have it, within
  the range), device (one for all), contiguity and 16-byte alignment; a
  mismatch raises ``ValueError`` naming the op, the input and what was
  expected;
- outputs and the workspace come from torch's allocator, and the kernels
  run on torch's current stream, with no host synchronisation: a CUDA
  graph can capture a call once one eager call at the same m has run (the
  first call at an m loads the kernels and makes cuBLASLt's plans);
- a fake (meta) implementation gives the outputs' shapes, so
  ``torch.compile`` traces through the op (torch 2.4 and later).

``torch.library.Library`` registers it, with ``torch.library.register_fake``
for the fake where torch has it (2.4 and later); ``torch.library.custom_op``
would add some 25 µs of Python to every call. Before 2.4 (1.13 to 2.3)
calls are eager only: there the op runs at the autograd keys, which
torch.compile's fake tensors reach too. The op has no backward: a call that
asks for a gradient is refused. On 1.13 so is a lazily negated view; on 2.4
and later torch itself resolves the view first.
"""

import ctypes
import hashlib
import json
import os
import re
import shutil
import subprocess
import tempfile
import threading

__all__ = ["load", "Op", "Program", "parse_header", "BuildError"]

_DTYPES = {"float16": "float16", "bfloat16": "bfloat16", "float32": "float32"}
_ALIGN = 16  # bytes: every tensor the emitted code takes is 16-byte aligned
_WS_ALIGN = 256  # bytes: the workspace's alignment (the entry point refuses less)


class BuildError(RuntimeError):
    """The compiler refused the emitted code; its output is the message."""


class Tensor:
    """One tensor of the entry point: its dtype and dims, "m" for the
    dynamic row count."""

    def __init__(self, dtype, dims):
        self.dtype = dtype
        self.dims = dims

    def shape(self, m):
        return tuple(m if d == "m" else d for d in self.dims)

    def has_m(self):
        return "m" in self.dims

    def __repr__(self):
        return "%s[%s]" % (self.dtype, ", ".join(str(d) for d in self.dims))


class Program:
    """What NAME.h says: the entry point's name, its tensors, the range of m
    (None for a static program) and the libraries to link."""

    def __init__(self, name, inputs, outputs, m_range, links, header):
        self.name = name
        self.inputs = inputs
        self.outputs = outputs
        self.m_range = m_range
        self.links = links
        self.header = header


_TENSOR_RE = re.compile(r"^//\s+(inputs|outputs)\[(\d+)\]\s+(\w+)\s+\[([^\]]*)\]")
_ENTRY_RE = re.compile(r"^cudaError_t mirage_(\w+)\((.*)\);$")


def parse_header(path):
    """Reads the header ``mirage emit`` wrote (``NAME.h``) into a Program.
    Raises ValueError, naming the file and line, on anything else."""
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except UnicodeDecodeError as e:
        raise ValueError("%s: not a header mirage emit wrote (not UTF-8: %s)" % (path, e)) from None
    tensors = {"inputs": {}, "outputs": {}}
    name, dynamic, links, defines = None, False, [], {}
    for lineno, line in enumerate(text.splitlines(), 1):
        m = _TENSOR_RE.match(line)
        if m:
            kind, k, dtype, dims = m.group(1), int(m.group(2)), m.group(3), m.group(4)
            if dtype not in _DTYPES:
                raise ValueError("%s:%d: unknown dtype %r" % (path, lineno, dtype))
            parsed = []
            for d in dims.split(","):
                d = d.strip()
                if d == "m" or d.isdigit():
                    parsed.append(d if d == "m" else int(d))
                else:
                    raise ValueError("%s:%d: bad dim %r in %s[%d]" % (path, lineno, d, kind, k))
            tensors[kind][k] = Tensor(dtype, parsed)
            continue
        m = _ENTRY_RE.match(line)
        if m:
            name, dynamic = m.group(1), "int64_t m" in m.group(2)
            continue
        m = re.match(r"^#define MIRAGE_\w+_(M_MIN|M_MAX) (\d+)$", line)
        if m:
            defines[m.group(1)] = int(m.group(2))
            continue
        for lib in re.findall(r"^//.*Link with ((?:-l\w+ ?)+)", line):
            links += [f[2:] for f in lib.split()]
    if name is None:
        raise ValueError("%s: no mirage_NAME entry point declared: not a header mirage emit wrote" % path)
    for kind in ("inputs", "outputs"):
        if sorted(tensors[kind]) != list(range(len(tensors[kind]))):
            raise ValueError("%s: %s numbered %s, want 0..%d" % (path, kind, sorted(tensors[kind]), len(tensors[kind]) - 1))
    if not tensors["outputs"]:
        raise ValueError("%s: no outputs" % path)
    m_range = None
    if dynamic:
        if "M_MIN" not in defines or "M_MAX" not in defines:
            raise ValueError("%s: a dynamic entry point without its M_MIN and M_MAX" % path)
        m_range = (defines["M_MIN"], defines["M_MAX"])
    ins = [tensors["inputs"][k] for k in range(len(tensors["inputs"]))]
    outs = [tensors["outputs"][k] for k in range(len(tensors["outputs"]))]
    return Program(name, ins, outs, m_range, links, text)


def _emulator_headers():
    """The CPU emulator's headers: the package's emu/ (a link to the
    repository's templates/emu), or MIRAGE_EMU_INCLUDE."""
    d = os.environ.get("MIRAGE_EMU_INCLUDE") or os.path.join(os.path.dirname(os.path.abspath(__file__)), "emu")
    if not os.path.isfile(os.path.join(d, "cuda_runtime.h")):
        raise BuildError("no CPU emulator headers in %s (set MIRAGE_EMU_INCLUDE to mirage's templates/emu)" % d)
    return d


def _toolkit_libs(nvcc):
    """The CUDA toolkit's library directories beside nvcc, which the built
    library finds the toolkit libraries it links (cuBLASLt) in at load time
    without LD_LIBRARY_PATH (a torch wheel may bring another CUDA's)."""
    root = os.path.dirname(os.path.dirname(os.path.realpath(shutil.which(nvcc) or nvcc)))
    if root in ("/", "/usr"):  # a distribution's toolkit, in the loader's own paths
        return []
    dirs = [os.path.join(root, "lib64"), os.path.join(root, "targets", "x86_64-linux", "lib"), os.path.join(root, "lib")]
    return [d for d in dirs if os.path.isdir(d)]


def _build(directory, program, device, arch=None, nvcc=None, cxx=None):
    """Builds NAME.cu in directory into a shared library for device ("cuda"
    or "cpu") and returns its path. A library built from the same sources
    with the same command is kept (its stamp, beside it, holds their sum:
    files copied in with their old times, cp -p or tar, are not taken for
    the ones it was built from); a failed build leaves nothing behind."""
    cu = os.path.join(directory, program.name + ".cu")
    if not os.path.isfile(cu):
        raise FileNotFoundError("%s: no %s.cu beside the header" % (directory, program.name))
    sources = [cu, os.path.join(directory, program.name + ".h")]
    runtime = os.path.join(directory, "mirage_runtime.cuh")
    if os.path.isfile(runtime):
        sources.append(runtime)
    # -fno-gnu-unique keeps the runtime's function-local statics (cuBLASLt's
    # plans and handles) each library's own: as GNU unique symbols the
    # dynamic linker would share them among every mirage library loaded.
    if device == "cuda":
        tag = arch
        compiler = nvcc or shutil.which("nvcc") or "/usr/local/cuda/bin/nvcc"
        cmd = [compiler, "-O3", "-std=c++17", "-arch=" + arch, "-shared", "-Xcompiler", "-fPIC,-fno-gnu-unique", cu]
        cmd += ["-l" + lib for lib in program.links]
        for d in _toolkit_libs(compiler):
            cmd += ["-Xlinker", "-rpath=" + d]
    else:
        tag = "emu"
        compiler = cxx or shutil.which("g++") or "g++"
        emu = _emulator_headers()
        cmd = [compiler, "-std=c++17", "-O2", "-shared", "-fPIC", "-DMIRAGE_EMULATE", "-I" + emu, "-I" + directory,
               "-x", "c++", cu]
        if "clang" not in os.path.basename(compiler):  # a GCC flag
            cmd.insert(1, "-fno-gnu-unique")
    if device == "cpu":
        sources += [os.path.join(emu, f) for f in os.listdir(emu) if f.endswith(".h")]
    lib = os.path.join(directory, "lib%s.%s.so" % (program.name, tag))
    digest = hashlib.sha256("\0".join(cmd).encode())
    for path in sorted(sources):
        with open(path, "rb") as f:
            digest.update(b"\0" + os.path.basename(path).encode() + b"\0" + f.read())
    digest = digest.hexdigest()
    stamp = lib + ".sha256"
    if os.path.isfile(lib) and _read(stamp) == digest:
        return lib
    if shutil.which(compiler) is None:
        raise BuildError("building %s for %s needs %s, which is not on PATH (pass %s= to load)"
                         % (cu, device, compiler, "nvcc" if device == "cuda" else "cxx"))
    _remove_orphans(directory, program.name)
    # The builder's pid in the name: a build killed before its cleanup
    # (SIGTERM, SIGKILL) leaves a file the next build knows is an orphan.
    fd, tmp = tempfile.mkstemp(prefix=".lib%s.%d." % (program.name, os.getpid()), suffix=".so.tmp", dir=directory)
    os.close(fd)
    try:
        p = subprocess.run(cmd + ["-o", tmp], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        if p.returncode != 0:
            raise BuildError("building %s for %s failed (%s):\n%s" % (cu, device, " ".join(cmd), p.stdout))
        os.chmod(tmp, 0o755)  # mkstemp made it private
        # The library first, then its stamp: killed between, the old
        # stamp makes the next load build again.
        os.replace(tmp, lib)
        _write(stamp, digest)
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)
    return lib


def _remove_orphans(directory, name):
    """Removes the temporary libraries (.libNAME.PID.XXXX.so.tmp) of builds
    whose process is gone: killed before they could clean up."""
    pattern = re.compile(r"^\.lib%s\.(\d+)\.\w+\.so\.tmp$" % re.escape(name))
    for entry in os.listdir(directory):
        m = pattern.match(entry)
        if not m:
            continue
        try:
            os.kill(int(m.group(1)), 0)
            continue  # its builder is still running
        except ProcessLookupError:
            pass
        except (PermissionError, OverflowError):
            continue  # another user's process, or no pid at all
        try:
            os.remove(os.path.join(directory, entry))
        except FileNotFoundError:
            pass


def _check_manifests(directory, name):
    """Refuses NAME.h or NAME.cu where a manifest of directory (the sums
    mirage wrote with its set) lists it with other contents: edited or
    replaced since, its header would describe other code."""
    for entry in sorted(os.listdir(directory)):
        if not entry.endswith(".manifest.json"):
            continue
        try:
            with open(os.path.join(directory, entry)) as f:
                files = json.load(f).get("files", [])
        except (OSError, ValueError, AttributeError):
            continue  # not a manifest of mirage's
        for listed in files if isinstance(files, list) else []:
            fname = listed.get("name") if isinstance(listed, dict) else None
            if fname not in (name + ".h", name + ".cu"):
                continue
            with open(os.path.join(directory, fname), "rb") as f:
                got = hashlib.sha256(f.read()).hexdigest()
            if got != listed.get("sha256"):
                raise ValueError("%s: %s is not the file %s lists (edited or replaced since mirage wrote it); emit the program again"
                                 % (directory, fname, entry))


def _read(path):
    """The text of path, or None."""
    try:
        with open(path) as f:
            return f.read()
    except OSError:
        return None


def _write(path, text):
    """Writes text to path atomically."""
    fd, tmp = tempfile.mkstemp(prefix="." + os.path.basename(path) + ".", suffix=".tmp", dir=os.path.dirname(path))
    try:
        with os.fdopen(fd, "w") as f:
            f.write(text)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)


class Op:
    """A registered op: call it, or torch.ops.mirage.NAME, with the inputs.

    A call's host time is what the wrapper adds to the kernels' own launch
    (#43 asks for a few µs): the header's checks are tables made here, a
    call that passes them all takes one quick pass over the inputs, and the
    full check, with its messages, runs only when that pass finds
    something to explain."""

    def __init__(self, torch, program, directory, libs):
        self._torch = torch
        self.program = program
        self.directory = directory
        self._entry = {}
        self._cpu_lock = threading.Lock()
        self._overload = None
        self._dtypes = tuple(self._dtype(t.dtype) for t in program.inputs)
        self._out_dtypes = tuple(self._dtype(t.dtype) for t in program.outputs)
        # Where m is read: the first input that has it, and its axis.
        self._m_at = next(((k, t.dims.index("m")) for k, t in enumerate(program.inputs) if t.has_m()), None)
        self._shapes = {}  # m -> (the inputs' shapes, the outputs' shapes)
        self._ws = {}  # (device type, m) -> workspace bytes
        self._get_device = getattr(torch._C, "_cuda_getDevice", None)
        self._raw_stream = getattr(torch._C, "_cuda_getCurrentRawStream", None)
        self._out_array = ctypes.c_void_p * len(program.outputs)
        self._in_array = ctypes.c_void_p * max(1, len(program.inputs))
        for device, path in libs.items():
            so = ctypes.CDLL(path)
            entry = getattr(so, "mirage_" + program.name)
            ws = getattr(so, "mirage_%s_workspace_bytes" % program.name)
            ws.restype = ctypes.c_size_t
            entry.restype = ctypes.c_int
            if program.m_range:
                entry.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64, ctypes.c_void_p, ctypes.c_void_p]
                ws.argtypes = [ctypes.c_int64]
            else:
                entry.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p]
                ws.argtypes = []
            self._entry[device] = (so, entry, ws)

    @property
    def name(self):
        return self.program.name

    def __call__(self, *inputs):
        if self._overload is None:
            self._overload = getattr(self._torch.ops.mirage, self.program.name).default
        return self._overload(*inputs)

    def _dtype(self, name):
        return getattr(self._torch, _DTYPES[name])

    def _shapes_at(self, m):
        """The inputs' and outputs' shapes at m (None when static)."""
        got = self._shapes.get(m)
        if got is None:
            p = self.program
            got = (tuple(t.shape(m) for t in p.inputs), tuple(t.shape(m) for t in p.outputs))
            if len(self._shapes) < 4096:  # m is an int of a bounded range; a bound all the same
                self._shapes[m] = got
        return got

    def _quick_m(self, inputs):
        """m when every input matches the header, by one pass that reads
        what check reads; _MISMATCH when something does not (check then
        says what)."""
        torch, p = self._torch, self.program
        if len(inputs) != len(self._dtypes):
            return _MISMATCH
        try:
            m = None
            if self._m_at is not None:
                k, axis = self._m_at
                m = inputs[k].shape[axis]
                if type(m) is not int or not p.m_range[0] <= m <= p.m_range[1]:
                    return _MISMATCH  # a symbolic m (torch.compile's) takes check's way
            shapes = self._shapes_at(m)[0]
            device = inputs[0].device
            grad = torch.is_grad_enabled()
            strided = torch.strided
            for x, dtype, shape in zip(inputs, self._dtypes, shapes):
                if (x.dtype is not dtype or x.shape != shape or x.layout is not strided or x.device != device
                        or x.is_neg() or x.is_conj() or (grad and x.requires_grad)):
                    return _MISMATCH
            return m
        except (AttributeError, IndexError, TypeError):  # not a tensor, too few dims: check explains
            return _MISMATCH

    def check(self, inputs):
        """Checks the inputs' metadata against the header (count, dtype,
        shape, m's range, one device, no lazy negation or conjugation, no
        gradient asked for); returns m (None when static). Fake tensors
        (torch.compile's) pass through it: it reads no data pointer."""
        m = self._quick_m(inputs)
        if m is not _MISMATCH:
            return m
        torch, p = self._torch, self.program
        what = "torch.ops.mirage.%s" % p.name
        if len(inputs) != len(p.inputs):
            raise ValueError("%s takes %d inputs (%s), got %d" % (what, len(p.inputs), ", ".join(map(repr, p.inputs)), len(inputs)))
        m = None
        for k, (x, want) in enumerate(zip(inputs, p.inputs)):
            if not isinstance(x, torch.Tensor):
                raise ValueError("%s: input %d is a %s, not a tensor" % (what, k, type(x).__name__))
            if x.layout != torch.strided:
                raise ValueError("%s: input %d is a %s tensor; the kernels read dense row-major tensors: pass .to_dense()" % (what, k, x.layout))
            if x.dim() != len(want.dims):
                raise ValueError("%s: input %d has %d dims (shape %s), want %d: %r" % (what, k, x.dim(), list(x.shape), len(want.dims), want))
            if want.has_m():
                got = x.shape[want.dims.index("m")]
                if m is None:
                    m = got
                elif got != m:
                    raise ValueError("%s: input %d has %d rows (m), the inputs before it %d: one m for all" % (what, k, got, m))
        if p.m_range and m is not None and not p.m_range[0] <= m <= p.m_range[1]:
            raise ValueError("%s: m = %d rows, outside the range %d..%d it was built for" % (what, m, p.m_range[0], p.m_range[1]))
        device = inputs[0].device if inputs else None
        for k, (x, want) in enumerate(zip(inputs, p.inputs)):
            shape = want.shape(m)
            if x.dtype != self._dtype(want.dtype):
                raise ValueError("%s: input %d is %s, want %s" % (what, k, x.dtype, "torch." + want.dtype))
            if tuple(x.shape) != shape:
                raise ValueError("%s: input %d has shape %s, want %s" % (what, k, list(x.shape), list(shape)))
            if x.device != device:
                raise ValueError("%s: input %d is on %s, input 0 on %s: all on one device" % (what, k, x.device, device))
            if (hasattr(x, "is_neg") and x.is_neg()) or x.is_conj():
                raise ValueError("%s: input %d is a lazily negated or conjugated view; pass .resolve_neg().resolve_conj()" % (what, k))
            if x.requires_grad and torch.is_grad_enabled():
                raise ValueError("%s: input %d requires grad, and the op has no backward: call it under torch.no_grad() "
                                 "or torch.inference_mode(), or pass .detach()" % (what, k))
        return m

    def check_data(self, inputs):
        """Checks what the kernels read in memory: dense row-major tensors,
        16-byte aligned."""
        for x in inputs:
            ptr = x.data_ptr()
            if not ptr or ptr % _ALIGN or not x.is_contiguous():
                break
        else:
            return
        what = "torch.ops.mirage.%s" % self.program.name
        for k, x in enumerate(inputs):
            if not x.is_contiguous():
                raise ValueError("%s: input %d is not contiguous (strides %s): the kernels read dense row-major tensors; pass .contiguous()" % (what, k, list(x.stride())))
            if x.numel() and x.data_ptr() == 0:
                raise ValueError("%s: input %d has no memory of its own (a zero tensor, or a tensor subclass wrapping another?); pass a materialized tensor (.clone())" % (what, k))
            if x.numel() and x.data_ptr() % _ALIGN:
                raise ValueError("%s: input %d is not %d-byte aligned (a view into another tensor?); pass a copy" % (what, k, _ALIGN))

    def fake(self, *inputs):
        """The outputs' shapes on the inputs' device, computing nothing."""
        m = self.check(inputs)
        dev = inputs[0].device
        outs = [self._torch.empty(t.shape(m), dtype=self._dtype(t.dtype), device=dev) for t in self.program.outputs]
        return outs[0] if len(outs) == 1 else tuple(outs)

    def run(self, *inputs):
        torch, p = self._torch, self.program
        m = self.check(inputs)
        self.check_data(inputs)
        dev = inputs[0].device
        if dev.type == "cuda" and "cuda" in self._entry:
            # The kernels launch on the inputs' GPU: made current only when
            # it is not (a device guard costs more than the check).
            if self._get_device is not None and self._get_device() == dev.index:
                return self._launch(dev, m, inputs)
            with torch.cuda.device(dev):
                return self._launch(dev, m, inputs)
        if dev.type not in self._entry:
            raise ValueError("torch.ops.mirage.%s was built for %s, not %s: load(..., devices=[%r])" % (
                p.name, ", ".join(sorted(self._entry)), dev.type, dev.type))
        # The CPU emulator keeps one global state: one call at a time.
        with self._cpu_lock:
            return self._launch(dev, m, inputs)

    def _launch(self, dev, m, inputs):
        torch, p = self._torch, self.program
        _, entry, ws_bytes = self._entry[dev.type]
        out_shapes = self._shapes_at(m)[1]
        outs = [torch.empty(s, dtype=d, device=dev) for s, d in zip(out_shapes, self._out_dtypes)]
        nws = self._ws.get((dev.type, m))
        if nws is None:
            nws = ws_bytes(m) if p.m_range else ws_bytes()
            self._ws[(dev.type, m)] = nws
        # torch's CPU allocator aligns to 64 bytes: take 256 more and start
        # at the first multiple of 256 in them.
        ws_ptr = None
        if nws:
            ws = torch.empty(nws + _WS_ALIGN, dtype=torch.uint8, device=dev)
            ws_ptr = -(-ws.data_ptr() // _WS_ALIGN) * _WS_ALIGN
        out_ptrs = self._out_array(*[o.data_ptr() for o in outs])
        in_ptrs = self._in_array(*[x.data_ptr() for x in inputs])
        stream = None
        if dev.type == "cuda":
            if self._raw_stream is not None:
                stream = self._raw_stream(dev.index)
            else:
                stream = torch.cuda.current_stream(dev).cuda_stream
        if p.m_range:
            rc = entry(out_ptrs, in_ptrs, m, ws_ptr, stream)
        else:
            rc = entry(out_ptrs, in_ptrs, ws_ptr, stream)
        if rc != 0:
            raise RuntimeError("torch.ops.mirage.%s: mirage_%s returned CUDA error %d" % (p.name, p.name, rc))
        return outs[0] if len(outs) == 1 else tuple(outs)


_MISMATCH = object()  # what Op._quick_m returns when check must look closer


# The registry outlives importlib.reload (which runs this file again in the
# same namespace): torch keeps the ops registered, and a reload that forgot
# them would drop torch 1.x's Library (unregistering every op) or register a
# name torch 2.x already holds.
if "_registered" not in globals():
    _lock = threading.Lock()
    _registered = {}  # name -> (header digest, Op)
    _library = None  # torch.library.Library("mirage", "DEF"), made at the first load


def _schema(program):
    args = ", ".join("Tensor x%d" % k for k in range(len(program.inputs)))
    ret = "Tensor" if len(program.outputs) == 1 else "(%s)" % ", ".join(["Tensor"] * len(program.outputs))
    return "(%s) -> %s" % (args, ret)


def _register(torch, op):
    """Defines mirage::NAME and registers op's kernels. torch.library.Library
    on every torch: torch.library.custom_op (2.4 and later) wraps each call
    in Python layers of its own, some 25 µs a call on the H200's host
    (bench/results/h200/2026-12-04-5392502/torch-host-probe.txt) where the
    dispatcher's own hop costs a few."""
    global _library
    name = op.program.name
    if _library is None:
        _library = torch.library.Library("mirage", "DEF")
    _library.define(name + _schema(op.program))
    for key in ("CPU", "CUDA"):
        _library.impl(name, op.run, key)
    if hasattr(torch.library, "register_fake"):  # torch >= 2.4
        # The backend keys only: torch's Negative and Conjugate fallbacks
        # resolve lazy views before the op runs, and its autograd fallback
        # passes a call through with grad mode as it is, so check refuses
        # an input that asks for a gradient. The fake kernel is what
        # torch.compile's fake tensors and meta tensors reach.
        torch.library.register_fake("mirage::" + name, op.fake, lib=_library)
        return
    _library.impl(name, op.fake, "Meta")
    # Below the autograd keys grad mode reads off: the autograd kernel is
    # where a call that asks for a gradient is seen (and refused by check),
    # and it runs the op itself, which has no backward to record. Meta
    # tensors get their shapes there too (torch 1.x has no fallthrough).
    _library.impl(name, op.run, "AutogradCPU")
    _library.impl(name, op.run, "AutogradCUDA")
    _library.impl(name, op.fake, "AutogradMeta")


def _default_devices(torch):
    return ["cuda"] if torch.cuda.is_available() else ["cpu"]


def load(directory, devices=None, arch=None, nvcc=None, cxx=None):
    """Builds the emitted code in directory (the NAME.h there, or the
    header's path) and registers torch.ops.mirage.NAME; returns the Op.

    devices: "cuda" and/or "cpu" (default: cuda where torch sees a GPU, else
    cpu, through mirage's CPU emulator). arch: nvcc's -arch (default: the
    current GPU's sm_XY). Loading the same header again returns the op
    already registered; another program under a registered name is refused.
    """
    import torch

    header = directory
    if os.path.isdir(directory):
        found = sorted(f for f in os.listdir(directory) if f.endswith(".h"))
        if len(found) != 1:
            raise ValueError("%s: want one NAME.h that mirage emit wrote, found %s" % (directory, found or "none"))
        header = os.path.join(directory, found[0])
    directory = os.path.dirname(os.path.abspath(header))
    program = parse_header(header)
    _check_manifests(directory, program.name)
    digest = hashlib.sha256(program.header.encode())
    cu = os.path.join(directory, program.name + ".cu")
    if os.path.isfile(cu):
        with open(cu, "rb") as f:
            digest.update(f.read())
    digest = digest.hexdigest()
    devices = list(devices or _default_devices(torch))
    for d in devices:
        if d not in ("cuda", "cpu"):
            raise ValueError("devices: %r is neither 'cuda' nor 'cpu'" % d)
    with _lock:
        if program.name in _registered:
            old_digest, old = _registered[program.name]
            if old_digest != digest:
                raise ValueError("torch.ops.mirage.%s is already registered from %s; this is another program of that name (emit it under another name)"
                                 % (program.name, old.directory))
            missing = [d for d in devices if d not in old._entry]
            if missing:
                raise ValueError("torch.ops.mirage.%s is already registered for %s; load it for %s before its first load"
                                 % (program.name, ", ".join(sorted(old._entry)), ", ".join(missing)))
            return old
        try:
            torch._C.parse_schema("mirage::" + program.name + _schema(program))
        except RuntimeError:
            raise ValueError("%s: torch cannot name an op %r (a keyword of TorchScript's schemas); emit the program under another name (mirage emit --name)"
                             % (header, program.name)) from None
        ns = torch.ops.mirage
        if program.name in vars(ns) or hasattr(type(ns), program.name):
            raise ValueError("torch.ops.mirage.%s: the name is taken by torch.ops.mirage's own attribute %r; emit the program under another name"
                             % (program.name, program.name))
        libs = {}
        for d in devices:
            a = arch
            if d == "cuda":
                if not torch.cuda.is_available():
                    raise ValueError("devices: cuda, but torch sees no CUDA device")
                major, minor = torch.cuda.get_device_capability()
                if major < 8:
                    raise ValueError("the emitted code needs an sm_80 or newer GPU; this one is sm_%d%d" % (major, minor))
                a = a or "sm_%d%d" % (major, minor)
            libs[d] = _build(directory, program, d, arch=a, nvcc=nvcc, cxx=cxx)
        op = Op(torch, program, directory, libs)
        _register(torch, op)
        _registered[program.name] = (digest, op)
        return op
