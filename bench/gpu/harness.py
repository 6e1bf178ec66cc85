#!/usr/bin/env python3
"""GPU benchmark harness for the CUDA that `mirage emit` writes.

For every entry of a build directory (one directory per emitted program,
with manifest.json from `mirage emit --json`, meta.json from prepare.sh and
the shared library that run.sh compiled), it

  1. draws random inputs (seeded, uniform in [-1, 1), attention inputs
     scaled so that exp stays in fp16 range) and rounds them to the input
     dtypes;
  2. calls the library's entry point mirage_NAME through ctypes on torch
     tensors, on torch's current CUDA stream;
  3. compares every output with a float64 torch reference of the program
     (relative error = max|got - ref| / max|ref|; an entry fails at or above
     --tol, 1e-2 by default: fp16 and bf16 outputs);
  4. times it with CUDA events: after --warmup runs, --runs (>= 200) runs,
     EACH TIMED INDIVIDUALLY between its own pair of events; the median is
     reported. Before each timed run the stream is kept busy
     (torch.cuda._sleep) for longer than the host needs to enqueue the run,
     so the events time the GPU's work alone, not Python's or ctypes'
     launch overhead, and the L2 cache is warm (--cold-l2 flushes it
     before each run instead);
  5. times the same program in PyTorch eager at the input dtype (cuBLAS for
     the matmuls) and under torch.compile (n/a where that fails), the same
     way, once per workload.

It prints a markdown table and writes RESULTS/gpu.md, RESULTS/gpu.json and
RESULTS/profile_ARCH.json (a profile for `mirage superopt --profile`: the
median of every entry that passed), and Kendall's tau between the cost
model's order (estimated_us from superopt) and the measured order of each
workload's superopt candidates. The exit status is 1 when any entry failed
(build, call or check), 2 for unusable arguments.

Each workload runs in a worker subprocess, so that a kernel that faults
(which poisons the CUDA context) fails only its own entry: the harness
starts a fresh worker for the entries after it.

torch is imported only where needed: --help, and the pure-Python parts that
test_harness.py checks, work without it.
"""

import argparse
import ctypes
import datetime
import fnmatch
import gc
import json
import math
import os
import platform
import re
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
import zlib

torch = None  # imported by _import_torch


def _import_torch():
    global torch
    if torch is None:
        import torch as _torch

        torch = _torch
    return torch


# ---------------------------------------------------------------------------
# The workloads: input shapes, input generation and the reference program,
# written with Mirage's semantics (see the .py programs named in `source`).
# Each reference function takes and returns torch tensors and keeps their
# dtype: in float64 it is the reference, at the input dtype it is "eager".
# ---------------------------------------------------------------------------


def rms_norm(x, ndim=1):
    """Mirage's rms_norm over the last ndim dims: x / sqrt(mean(x^2)), no
    epsilon, no weight."""
    dims = tuple(range(-ndim, 0))
    return x / torch.sqrt(torch.mean(x * x, dim=dims, keepdim=True))


def ref_rmsnorm_matmul(X, W):
    return (torch.matmul(rms_norm(X), W),)


def ref_gated_mlp(X, W1, W2):
    return (torch.nn.functional.silu(torch.matmul(X, W1)) * torch.matmul(X, W2),)


def ref_gqa(Q, K, V):
    E = torch.exp(torch.matmul(Q, K))
    S = torch.sum(E, dim=2, keepdim=True)
    return (torch.matmul(E / S, V),)


def ref_qknorm_gqa(Q, K, V):
    # Mirage's benchmark program: Q and V normalized over the head dim.
    E = torch.exp(torch.matmul(rms_norm(Q), K))
    S = torch.sum(E, dim=2, keepdim=True)
    return (torch.matmul(E / S, rms_norm(V)),)


def ref_gqa_repeat_kv(Q, ones, K, V):
    # The program's semantics: K and V multiplied by the broadcast tensor
    # (all ones, see gen_repeat_kv: HF's repeat_kv), the scaled softmax
    # written out.
    E = torch.exp(torch.matmul(Q, K * ones) * (1 / math.sqrt(128)))
    S = torch.sum(E, dim=3, keepdim=True)
    return (torch.matmul(E / S, V * ones),)


def ref_softmax_vocab(X):
    E = torch.exp(X)
    return (E / torch.sum(E, dim=1, keepdim=True),)


def ref_lora(X, W, A, B):
    return (torch.matmul(X, W) + torch.matmul(torch.matmul(X, A), B),)


def ref_lora_llama(X, W, A, B):
    # The adapter scaled by alpha/rank = 2, as bench/workloads/lora_llama.py.
    return (torch.matmul(X, W) + 2 * torch.matmul(torch.matmul(X, A), B),)


def ref_qkv_llama3(X, G, Wq, Wk, Wv):
    # The weighted norm, then q, k and v (bench/workloads/qkv_llama3.py).
    N = rms_norm(X) * G
    return (torch.matmul(N, Wq), torch.matmul(N, Wk), torch.matmul(N, Wv))


def ref_mqa_falcon(Q, ones, K, V):
    # Multi-query: one K/V head repeated over 71 query heads by the product
    # with ones, the scaled softmax written out (bench/workloads/mqa_falcon.py).
    E = torch.exp(torch.matmul(Q, K * ones) * 0.125)
    S = torch.sum(E, dim=2, keepdim=True)
    return (torch.matmul(E / S, V * ones),)


def ref_ntrans(H, X, alpha):
    A = rms_norm(H) + X
    C = X + alpha * A
    return (rms_norm(C),)


def ref_rmsnorm_prefill(X, G):
    return (rms_norm(X) * G,)


def ref_llama_mlp_block(X, W1, W3, W2):
    N = rms_norm(X)
    gate = torch.nn.functional.silu(torch.matmul(N, W1))
    return (X + torch.matmul(gate * torch.matmul(N, W3), W2),)


def ref_llama_layer(X, ones, Wq, Wk, Wv, Kc, Vc, Wo, W1, W3, W2):
    # The program's semantics, op by op: the heads a batch dim made by the
    # product with ones, the softmax written out, the output projection
    # summed over the heads.
    N = rms_norm(X)
    Nh = N * ones
    E = torch.exp(torch.matmul(torch.matmul(Nh, Wq), Kc) * (1 / math.sqrt(128)))
    O = torch.matmul(E / torch.sum(E, dim=2, keepdim=True), Vc)
    H1 = X + torch.sum(torch.matmul(O, Wo), dim=0, keepdim=True)
    N2 = rms_norm(H1)
    up = torch.nn.functional.silu(torch.matmul(N2, W1)) * torch.matmul(N2, W3)
    return (H1 + torch.matmul(up, W2), torch.matmul(Nh, Wk), torch.matmul(Nh, Wv))


def ref_stacked_layers(H, *Ws):
    # examples/stacked_layers.py: H = H + silu(rms_norm(H) W), once per weight.
    for W in Ws:
        H = H + torch.nn.functional.silu(torch.matmul(rms_norm(H), W))
    return (H,)


def ref_encoder_mlp(X, W1, B1, W2, B2):
    # bench/workloads/encoder_mlp.py: H = X + W2·silu(W1·n(X) + b1) + b2,
    # summed in the program's order.
    H = torch.nn.functional.silu(torch.matmul(rms_norm(X), W1) + B1)
    return ((torch.matmul(H, W2) + B2) + X,)


def _uniform(gen, shape, scale=1.0):
    """Uniform in [-scale, scale): for a power of two, bit for bit
    (rand * 2 - 1) * scale, as earlier runs drew their inputs, in a quarter
    of the time (no temporaries: a LLaMA block's weights took 15 s on one
    core)."""
    return torch.empty(shape, dtype=torch.float64).uniform_(-scale, scale, generator=gen)


def gen_uniform(scale):
    def gen(g, shapes):
        return [_uniform(g, s, scale) for s in shapes]

    return gen


def gen_qknorm_gqa(g, shapes):
    """Inputs for rms-normalized attention whose scores stay in fp16 range.

    rms_norm undoes any scaling of Q (and V), so only K's scale sets the
    scores: with uniform entries, rms_norm(Q) @ K over 64 features has a
    standard deviation of about 8 * 0.58 * scale; K scaled by 0.25 keeps it
    near 1.2, the largest score near 6 and the row sums of exp (over 4096
    keys) near 8000, under fp16's 65504."""
    qshape, kshape, vshape = shapes
    return [_uniform(g, qshape), _uniform(g, kshape, 0.25), _uniform(g, vshape)]


def gen_repeat_kv(g, shapes):
    """Inputs for grouped-query attention with K and V repeated by a
    product: Q, K and V uniform in [-1, 1), the tensor that repeats them
    all ones, as a model's program has it (the scores stay near 0.3, the
    row sums over 2048 keys near 2000, within fp16)."""
    qshape, oshape, kshape, vshape = shapes
    return [_uniform(g, qshape), torch.ones(oshape, dtype=torch.float64), _uniform(g, kshape), _uniform(g, vshape)]


def _weight_scale(shape):
    """The power of two nearest 1/sqrt(K), K the rows a weight of shape is
    multiplied over (its next-to-last dim), halves rounded up as Go's
    math.Round rounds them (enginerun.ModelInputs): Python's round() would
    round 2.5 to 2."""
    return 2.0 ** -math.floor(math.log2(math.sqrt(shape[-2])) + 0.5)


def gen_scaled_weights(g, shapes):
    """Inputs for a model's layer: the activations uniform in [-1, 1), each
    weight scaled by the power of two nearest 1/sqrt(K), K its rows, as a
    trained model's are (and as driver.RunEngine scales them), so that
    fp16 does not overflow at a model's shapes. A bias (1 x n) has one row:
    uniform in [-1, 1) too."""
    x, *weights = shapes
    out = [_uniform(g, x)]
    for s in weights:
        out.append(_uniform(g, s, _weight_scale(s)))
    return out


def gen_layer(g, shapes):
    """Inputs for a decoder layer (ref_llama_layer's order): X, the K and V
    caches uniform in [-1, 1), the tensor of ones all ones, and each weight
    scaled by the power of two nearest 1/sqrt(K), K the rows it is
    multiplied over (its next-to-last dim), as a trained model's are. The
    scores then stay near 0.3 and the row sums of exp near the cache's
    length, within fp16."""
    x, ones, wq, wk, wv, kc, vc, *ws = shapes
    out = [_uniform(g, x), torch.ones(ones, dtype=torch.float64)]
    for s in (wq, wk, wv):
        out.append(_uniform(g, s, _weight_scale(s)))
    out += [_uniform(g, kc), _uniform(g, vc)]
    for s in ws:
        out.append(_uniform(g, s, _weight_scale(s)))
    return out


class Workload:
    def __init__(self, name, inputs, outputs, ref, gen, note=""):
        self.name = name
        self.inputs = [tuple(s) for s in inputs]
        self.outputs = [tuple(s) for s in outputs]
        self.ref = ref
        self.gen = gen
        self.note = note


WORKLOADS = {
    w.name: w
    for w in [
        Workload("rmsnorm_matmul", [(16, 4096), (4096, 6144)], [(16, 6144)], ref_rmsnorm_matmul, gen_uniform(1.0)),
        Workload("gated_mlp", [(8, 4096), (4096, 4096), (4096, 4096)], [(8, 4096)], ref_gated_mlp, gen_uniform(1.0)),
        Workload(
            "gqa", [(2, 256, 64), (2, 64, 4096), (2, 4096, 64)], [(2, 256, 64)], ref_gqa, gen_uniform(0.25),
            note="inputs scaled by 0.25",
        ),
        Workload(
            "qknorm_gqa", [(2, 256, 64), (2, 64, 4096), (2, 4096, 64)], [(2, 256, 64)], ref_qknorm_gqa, gen_qknorm_gqa,
            note="K scaled by 0.25 (see gen_qknorm_gqa)",
        ),
        Workload("lora", [(16, 256), (256, 4096), (256, 16), (16, 4096)], [(16, 4096)], ref_lora, gen_uniform(1.0)),
        Workload("ntrans", [(32, 4096)] * 3, [(32, 4096)], ref_ntrans, gen_uniform(1.0)),
        Workload(
            "llama_mlp_block", [(8, 4096), (4096, 11008), (4096, 11008), (11008, 4096)], [(8, 4096)],
            ref_llama_mlp_block, gen_scaled_weights, note="weights scaled by 2^-round(log2 sqrt(K))",
        ),
        Workload(
            "gqa_repeat_kv", [(8, 4, 4, 128), (1, 4, 1, 1), (8, 1, 128, 2048), (8, 1, 2048, 128)], [(8, 4, 4, 128)],
            ref_gqa_repeat_kv, gen_repeat_kv, note="the repeating tensor all ones",
        ),
        Workload(
            "llama_layer",
            [(1, 4, 4096), (32, 1, 1), (32, 4096, 128), (32, 4096, 128), (32, 4096, 128), (32, 128, 1024),
             (32, 1024, 128), (32, 128, 4096), (1, 4096, 11008), (1, 4096, 11008), (1, 11008, 4096)],
            [(1, 4, 4096), (32, 4, 128), (32, 4, 128)],
            ref_llama_layer, gen_layer, note="weights scaled by 2^-round(log2 sqrt(K)), the ones tensor all ones",
        ),
        Workload(
            "stacked_layers", [(8, 4096)] + [(4096, 4096)] * 3, [(8, 4096)],
            ref_stacked_layers, gen_scaled_weights, note="weights scaled by 2^-round(log2 sqrt(K))",
        ),
        Workload(
            "encoder_mlp", [(197, 768), (768, 3072), (1, 3072), (3072, 768), (1, 768)], [(197, 768)],
            ref_encoder_mlp, gen_scaled_weights, note="weights scaled by 2^-round(log2 sqrt(K)), biases in [-1, 1)",
        ),
        Workload("softmax_vocab", [(16, 128256)], [(16, 128256)], ref_softmax_vocab, gen_uniform(1.0)),
        Workload(
            "lora_llama", [(8, 4096), (4096, 4096), (4096, 16), (16, 4096)], [(8, 4096)],
            ref_lora_llama, gen_scaled_weights, note="weights scaled by 2^-round(log2 sqrt(K))",
        ),
        Workload(
            "mqa_falcon", [(71, 1, 64), (71, 1, 1), (1, 64, 2048), (1, 2048, 64)], [(71, 1, 64)],
            ref_mqa_falcon, gen_repeat_kv, note="the repeating tensor all ones",
        ),
        Workload(
            "qkv_llama3", [(8, 4096), (1, 4096), (4096, 4096), (4096, 1024), (4096, 1024)],
            [(8, 4096), (8, 1024), (8, 1024)], ref_qkv_llama3, gen_scaled_weights,
            note="weights scaled by 2^-round(log2 sqrt(K)), γ in [-1, 1)",
        ),
        Workload("rmsnorm_prefill", [(2048, 4096), (1, 4096)], [(2048, 4096)], ref_rmsnorm_prefill, gen_uniform(1.0)),
    ]
}

WORKLOAD_ORDER = list(WORKLOADS)
VARIANT_ORDER = {"unfused": 0, "mugraph": 1, "superopt": 2, "launch": 3, "pdl": 4}

TORCH_DTYPES = {"float16": "float16", "bfloat16": "bfloat16", "float32": "float32"}

CUDA_ERRORS = {
    1: "cudaErrorInvalidValue",
    2: "cudaErrorMemoryAllocation",
    9: "cudaErrorInvalidConfiguration",
    98: "cudaErrorInvalidDeviceFunction",
    209: "cudaErrorNoKernelImageForDevice",
    218: "cudaErrorInvalidPtx",
    222: "cudaErrorUnsupportedPtxVersion",
    400: "cudaErrorInvalidResourceHandle",
    700: "cudaErrorIllegalAddress",
    701: "cudaErrorLaunchOutOfResources",
    702: "cudaErrorLaunchTimeout",
    719: "cudaErrorLaunchFailure",
}


# ---------------------------------------------------------------------------
# Pure Python: entries, Kendall's tau, the table. No torch here.
# ---------------------------------------------------------------------------


class Entry:
    """One emitted program: a directory with meta.json and, when the emit
    worked, manifest.json."""

    def __init__(self, path, meta, manifest):
        self.path = path
        self.meta = meta
        self.manifest = manifest
        self.name = meta.get("entry") or os.path.basename(path)
        self.workload = meta.get("workload") or workload_of_program((manifest or {}).get("program", self.name))
        self.variant = meta.get("variant") or "unknown"
        self.candidate = meta.get("candidate")

    @property
    def lib_name(self):
        return self.manifest["name"]

    def sort_key(self):
        w = WORKLOAD_ORDER.index(self.workload) if self.workload in WORKLOADS else len(WORKLOAD_ORDER)
        c = self.candidate if isinstance(self.candidate, int) else -1
        return (w, self.workload, VARIANT_ORDER.get(self.variant, 3), c, self.name)

    def label(self):
        """The table's candidate column."""
        if self.variant == "superopt" and isinstance(self.candidate, int):
            return str(self.candidate)
        if self.variant == "pdl" and isinstance(self.candidate, int):
            # prepare.sh's WORKLOAD.c0.pdl: the candidate, its graph-defined
            # kernels launched dependent (emit --dependent-launch)
            return "%d pdl" % self.candidate
        if self.variant == "launch" and self.name.startswith(self.workload + "."):
            # prepare.sh's WORKLOAD.tTHREADSsSTAGES: the launch it tries
            return self.name[len(self.workload) + 1:]
        return self.variant


def workload_of_program(program):
    """The workload of a program name without a meta.json: the
    hand-written μGraphs are named WORKLOAD_mugraph."""
    for suffix in ("_mugraph",):
        if program.endswith(suffix):
            return program[: -len(suffix)]
    return program


def load_entries(build_dir, patterns=None):
    """The entries of build_dir, sorted by workload, variant and candidate.
    A directory counts when it holds meta.json or manifest.json."""
    entries = []
    for d in sorted(os.listdir(build_dir)):
        path = os.path.join(build_dir, d)
        meta_path = os.path.join(path, "meta.json")
        man_path = os.path.join(path, "manifest.json")
        if not os.path.isdir(path) or not (os.path.exists(meta_path) or os.path.exists(man_path)):
            continue
        meta = _read_json(meta_path) if os.path.exists(meta_path) else {"entry": d}
        manifest = _read_json(man_path) if os.path.exists(man_path) else None
        e = Entry(path, meta, manifest)
        if patterns and not any(fnmatch.fnmatchcase(e.name, p) for p in patterns):
            continue
        entries.append(e)
    entries.sort(key=Entry.sort_key)
    return entries


def _read_json(path):
    with open(path) as f:
        return json.load(f)


def estimated_us(build_dir, entry, cache=None):
    """The cost model's estimate for a superopt candidate (from the superopt
    --json output that prepare.sh saved), or for the unfused program (its
    baseline_us); None when unknown."""
    rel = entry.meta.get("superopt")
    if entry.variant == "unfused":
        rel = os.path.join("superopt", entry.workload + ".json")
    if not rel:
        return None
    path = os.path.join(build_dir, rel)
    if cache is not None and path in cache:
        doc = cache[path]
    else:
        try:
            doc = _read_json(path)
        except (OSError, ValueError):
            doc = None
        if cache is not None:
            cache[path] = doc
    if not doc:
        return None
    if entry.variant == "unfused":
        v = doc.get("baseline_us")
        return float(v) if v is not None else None
    cands = doc.get("candidates") or []
    c = entry.candidate
    if isinstance(c, int) and 0 <= c < len(cands) and cands[c].get("estimated_us") is not None:
        return float(cands[c]["estimated_us"])
    return None


def kendall_tau(xs, ys):
    """Kendall's tau-b of two equally long sequences (ties in either count
    as neither concordant nor discordant and shrink the denominator).
    None when it is undefined: fewer than two items, or all of xs or all of
    ys tied."""
    if len(xs) != len(ys):
        raise ValueError("kendall_tau: sequences of different lengths")
    n = len(xs)
    conc = disc = tx = ty = 0
    for i in range(n):
        for j in range(i + 1, n):
            dx = xs[i] - xs[j]
            dy = ys[i] - ys[j]
            if dx == 0 and dy == 0:
                tx += 1
                ty += 1
            elif dx == 0:
                tx += 1
            elif dy == 0:
                ty += 1
            elif (dx > 0) == (dy > 0):
                conc += 1
            else:
                disc += 1
    n0 = n * (n - 1) // 2
    denom = math.sqrt((n0 - tx) * (n0 - ty))
    if denom == 0:
        return None
    return (conc - disc) / denom


def kendall_by_workload(results):
    """Kendall's tau between estimated and measured µs of each workload's
    superopt candidates that passed and were timed."""
    out = []
    workloads = []
    for r in results:
        if r["workload"] not in workloads:
            workloads.append(r["workload"])
    for w in workloads:
        cands = [
            r
            for r in results
            if r["workload"] == w
            and r["variant"] == "superopt"
            and r["status"] == "ok"
            and r.get("estimated_us") is not None
            and r.get("mirage_us") is not None
        ]
        if not any(r["workload"] == w and r["variant"] == "superopt" for r in results):
            continue
        cands.sort(key=lambda r: (r["candidate"] if isinstance(r["candidate"], int) else 1 << 30))
        est = [r["estimated_us"] for r in cands]
        meas = [r["mirage_us"] for r in cands]
        tau = kendall_tau(est, meas) if len(cands) >= 2 else None
        # The same with the unfused program (its estimate: superopt's
        # baseline_us) as one more point, where it passed.
        unf = [r for r in results if r["workload"] == w and r["variant"] == "unfused" and r["status"] == "ok"
               and r.get("estimated_us") is not None and r.get("mirage_us") is not None]
        tau_unfused = None
        if unf and cands:
            tau_unfused = kendall_tau(est + [unf[0]["estimated_us"]], meas + [unf[0]["mirage_us"]])
        if len(cands) < 2:
            why = "fewer than 2 candidates passed"
        elif tau is None:
            why = "the model ties all candidates" if len(set(est)) == 1 else "all measured times tie"
        else:
            why = ""
        out.append(
            {
                "workload": w,
                "candidates": [r["candidate"] for r in cands],
                "estimated_us": est,
                "measured_us": meas,
                "tau": tau,
                "tau_with_unfused": tau_unfused,
                "note": why,
                "best_measured": cands[min(range(len(cands)), key=lambda i: meas[i])]["candidate"] if cands else None,
            }
        )
    return out


def fmt_us(v):
    if v is None:
        return "n/a"
    if v >= 1000:
        return "%.0f" % v
    if v >= 100:
        return "%.1f" % v
    return "%.2f" % v


def fmt_err(v):
    if v is None:
        return "n/a"
    if v == math.inf or (isinstance(v, float) and math.isnan(v)):
        return "inf"
    return "%.1e" % v


def fmt_speedup(base, t):
    if base is None or t is None or t <= 0:
        return "n/a"
    return "%.2fx" % (base / t)


def md_escape(s):
    return str(s).replace("|", "\\|").replace("\n", " ")


def counters_summary(manifest):
    """The emulator's counters (`mirage emit --counters --json`) of an
    entry, summed over its kernels: bytes moved (32-byte sectors per warp
    request, no cache), distinct bytes (each sector a launch touches, once:
    the DRAM traffic were L2 to serve every re-read), the ideal bytes (each
    input read once, each output written once), coalescing (bytes used over bytes moved), bank conflicts
    per shared request, and each graph-defined kernel's weight problems.
    None when the manifest has no counters (prepare.sh without g++)."""
    kernels = (manifest or {}).get("kernels") or []
    if not kernels or any(not k.get("counters") for k in kernels):
        return None
    moved = distinct = ideal = used = requests = conflicts = 0
    problems = []
    for i, k in enumerate(kernels):
        c = k["counters"]
        moved += c["moved_bytes"]
        distinct += c.get("distinct_bytes", 0)
        ideal += c["ideal_bytes"]
        used += c.get("used_bytes", 0)
        requests += c.get("shared_requests", 0)
        conflicts += c.get("bank_conflicts", 0)
        if k.get("what") == "graph-defined":
            problems += ["kernel %d: %s" % (i, p) for p in c.get("weight_problems") or []]
    return {
        "moved_bytes": moved,
        "distinct_bytes": distinct,
        "ideal_bytes": ideal,
        "coalescing": used / moved if moved else None,
        "bank_conflicts_per_access": conflicts / requests if requests else 0.0,
        "weight_problems": problems,
    }


def fmt_mb(b):
    return "n/a" if b is None else "%.2f" % (b / 1e6)


def fmt_bandwidth(moved, us):
    """GB/s of moved bytes in us microseconds."""
    if moved is None or us is None or us <= 0:
        return "n/a"
    return "%.0f" % (moved / us / 1e3)


TABLE_COLUMNS = [
    "entry",
    "program",
    "candidate",
    "kernels",
    "max rel err",
    "mirage µs",
    "model µs",
    "moved MB",
    "GB/s",
    "distinct MB",
    "DRAM GB/s",
    "eager µs",
    "compile µs",
    "speedup vs eager",
    "status",
]


def format_table(results):
    """The markdown table of the entries' results (dicts as written to
    gpu.json)."""
    rows = [TABLE_COLUMNS, ["---"] * len(TABLE_COLUMNS)]
    for r in results:
        status = r["status"] if r["status"] == "ok" else "FAIL: " + (r.get("reason") or "")
        moved = (r.get("counters") or {}).get("moved_bytes")
        distinct = (r.get("counters") or {}).get("distinct_bytes")
        rows.append(
            [
                r["entry"],
                r.get("program") or "",
                r.get("label") or "",
                "" if r.get("kernels") is None else str(r["kernels"]),
                fmt_err(r.get("max_rel_err")),
                fmt_us(r.get("mirage_us")),
                fmt_us(r.get("estimated_us")),
                fmt_mb(moved),
                fmt_bandwidth(moved, r.get("mirage_us")),
                fmt_mb(distinct),
                fmt_bandwidth(distinct, r.get("mirage_us")),
                fmt_us(r.get("eager_us")),
                fmt_us(r.get("compile_us")),
                fmt_speedup(r.get("eager_us"), r.get("mirage_us")),
                status,
            ]
        )
    return "\n".join("| " + " | ".join(md_escape(c) for c in row) + " |" for row in rows) + "\n"


def format_kendall(taus):
    rows = [
        ["workload", "candidates", "Kendall tau", "tau with unfused", "model µs", "measured µs", "fastest measured"],
        ["---"] * 7,
    ]
    for t in taus:
        tu = t.get("tau_with_unfused")
        rows.append(
            [
                t["workload"],
                ", ".join("c%s" % c for c in t["candidates"]),
                ("%.2f" % t["tau"]) if t["tau"] is not None else "n/a (%s)" % t["note"],
                ("%.2f" % tu) if tu is not None else "n/a",
                ", ".join(fmt_us(v) for v in t["estimated_us"]),
                ", ".join(fmt_us(v) for v in t["measured_us"]),
                "" if t["best_measured"] is None else "c%s" % t["best_measured"],
            ]
        )
    return "\n".join("| " + " | ".join(md_escape(c) for c in row) + " |" for row in rows) + "\n"


def format_baseline_notes(baselines):
    """Why a workload's eager or torch.compile time is n/a, and the
    baselines' own errors against the reference, one line each."""
    lines = []
    for w, b in baselines.items():
        b = b or {"eager": {"error": "not run"}, "compile": {"error": "not run"}}
        for kind in ("eager", "compile"):
            x = b.get(kind) or {}
            if x.get("error"):
                lines.append("- %s %s: n/a: %s" % (w, kind, x["error"]))
            elif x.get("max_rel_err") is not None:
                lines.append("- %s %s: max rel err %s" % (w, kind, fmt_err(x["max_rel_err"])))
    if not lines:
        return ""
    return "\nBaselines (%s):\n\n" % "eager and torch.compile at the input dtype" + "\n".join(lines) + "\n"


def make_profile(results, arch, gpu, extra=None):
    """The profile (cost.LoadProfiles' format) of the entries that passed.
    A graph measured twice (the same program and hash, say an unfused
    program that superopt also returned) is recorded once, at its faster
    median: LoadProfiles rejects duplicates."""
    seen = {}
    for r in results:
        if r["status"] != "ok" or not r.get("mirage_us") or not r.get("hash") or not r.get("program"):
            continue
        key = (r["program"], r["hash"])
        m = {"program": r["program"], "hash": r["hash"], "median_us": r["mirage_us"], "runs": r.get("runs") or 0}
        t = r.get("timing") or {}
        if t.get("p10_us") is not None and t.get("p90_us") is not None:
            # The spread of the runs, for mirage bench --compare.
            m["p10_us"], m["p90_us"] = t["p10_us"], t["p90_us"]
        if r.get("estimated_us"):
            # The model's estimate beside it: superopt --profile puts the
            # graphs nobody measured on the measured times' scale.
            m["estimated_us"] = r["estimated_us"]
        if key not in seen or m["median_us"] < seen[key]["median_us"]:
            seen[key] = m
    prof = {"version": 1, "arch": arch, "gpu": gpu, "measurements": list(seen.values())}
    if extra:
        for k, v in extra.items():
            prof.setdefault(k, v)
    return prof


# ---------------------------------------------------------------------------
# Torch: inputs, the reference, calling the library, timing.
# ---------------------------------------------------------------------------


def torch_dtype(name):
    if name not in TORCH_DTYPES:
        raise ValueError("unsupported dtype %r" % name)
    return getattr(torch, TORCH_DTYPES[name])


def make_inputs(workload, dtypes, seed):
    """The workload's inputs, rounded to dtypes, as float64 CPU tensors."""
    g = torch.Generator()
    g.manual_seed(seed + zlib.crc32(workload.name.encode()))
    xs = workload.gen(g, workload.inputs)
    return [x.to(torch_dtype(dt)).to(torch.float64) for x, dt in zip(xs, dtypes)]


def rel_err(got, ref):
    """max|got - ref| / max|ref| in float64; inf when got is not finite."""
    got = got.to(torch.float64)
    ref = ref.to(torch.float64)
    if got.shape != ref.shape:
        return math.inf
    if not bool(torch.isfinite(got).all()):
        return math.inf
    scale = float(ref.abs().max())
    diff = float((got - ref).abs().max())
    if scale == 0:
        return 0.0 if diff == 0 else math.inf
    return diff / scale


class Timer:
    """Times a callable: CUDA events around each run (or the wall clock in
    --emulate), the median of runs after warmup."""

    def __init__(self, device, runs, warmup, cold_l2=False, pad=True):
        self.device = device
        self.runs = runs
        self.warmup = warmup
        self.cold_l2 = cold_l2
        self.cycles_per_us = None
        self.flush_buf = None
        if device == "cuda":
            if pad:
                self._calibrate()
            if cold_l2:
                l2 = getattr(torch.cuda.get_device_properties(0), "L2_cache_size", 64 << 20) or (64 << 20)
                self.flush_buf = torch.empty(2 * l2, dtype=torch.uint8, device="cuda")

    def _calibrate(self):
        """Clock cycles per µs of torch.cuda._sleep, which pads the stream."""
        if not hasattr(torch.cuda, "_sleep"):
            return
        torch.cuda._sleep(1000)
        torch.cuda.synchronize()
        best = None
        for _ in range(3):
            a = torch.cuda.Event(enable_timing=True)
            b = torch.cuda.Event(enable_timing=True)
            a.record()
            torch.cuda._sleep(2_000_000)
            b.record()
            b.synchronize()
            us = a.elapsed_time(b) * 1000
            if us > 0:
                best = us if best is None else min(best, us)
        if best:
            self.cycles_per_us = 2_000_000 / best

    def _pad(self, us):
        """Keep the stream busy for about us microseconds."""
        if self.cycles_per_us:
            torch.cuda._sleep(int(us * self.cycles_per_us))

    def time(self, fn):
        gc.collect()
        gc.disable()  # a collection in the timed loop could outlast the padding
        try:
            return self._time_wall(fn) if self.device != "cuda" else self._time_cuda(fn)
        finally:
            gc.enable()

    def _time_cuda(self, fn):
        host = []
        for i in range(self.warmup):
            t0 = time.perf_counter()
            fn()
            host.append((time.perf_counter() - t0) * 1e6)
        torch.cuda.synchronize()
        # Pad by twice the host's time to enqueue one run (its median over
        # the second half of the warm-up, past first-call costs), so that
        # start event, run and end event are all queued before the GPU
        # reaches them.
        tail = host[len(host) // 2 :] or [100.0]
        pad_us = 2 * statistics.median(tail) + 20
        starts = [torch.cuda.Event(enable_timing=True) for _ in range(self.runs)]
        ends = [torch.cuda.Event(enable_timing=True) for _ in range(self.runs)]
        for i in range(self.runs):
            if self.flush_buf is not None:
                self.flush_buf.zero_()
            self._pad(pad_us)
            starts[i].record()
            fn()
            ends[i].record()
            if i % 64 == 63:
                ends[i].synchronize()  # keep the queue short
        torch.cuda.synchronize()
        times = sorted(s.elapsed_time(e) * 1000 for s, e in zip(starts, ends))
        return self._summary(times, statistics.median(tail), pad_us if self.cycles_per_us else None)

    def _time_wall(self, fn):
        for _ in range(self.warmup):
            fn()
        times = []
        for _ in range(self.runs):
            t0 = time.perf_counter()
            fn()
            times.append((time.perf_counter() - t0) * 1e6)
        times.sort()
        return self._summary(times, None, None)

    @staticmethod
    def _summary(times, host_us, pad_us):
        n = len(times)
        if n == 0:
            return None
        q = lambda p: times[min(n - 1, int(p * n))]  # noqa: E731
        return {
            "median_us": statistics.median(times),
            "min_us": times[0],
            "p10_us": q(0.10),
            "p90_us": q(0.90),
            "runs": n,
            "host_us": host_us,
            "pad_us": pad_us,
        }


class MirageLib:
    """The entry point of one compiled library."""

    def __init__(self, path, name):
        self.lib = ctypes.CDLL(os.path.abspath(path))
        self.fn = getattr(self.lib, "mirage_" + name)
        self.fn.restype = ctypes.c_int
        self.fn.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.POINTER(ctypes.c_void_p), ctypes.c_void_p, ctypes.c_void_p]
        ws = getattr(self.lib, "mirage_" + name + "_workspace_bytes")
        ws.restype = ctypes.c_size_t
        ws.argtypes = []
        self.workspace_bytes = int(ws())


def aligned_ptr(t, align):
    p = t.data_ptr()
    return (p + align - 1) // align * align


def lib_path(entry, lib_tag):
    return os.path.join(entry.path, "lib%s.%s.so" % (entry.lib_name, lib_tag))


def log_tail(path, lines=3):
    try:
        with open(path, errors="replace") as f:
            text = [l.rstrip() for l in f if l.strip()]
    except OSError:
        return ""
    return " / ".join(text[-lines:])


_PTXAS_ENTRY = re.compile(r"Compiling entry function '([^']+)' for '(\w+)'")
_PTXAS_SPILL = re.compile(r"(\d+) bytes spill stores, (\d+) bytes spill loads")
_PTXAS_REGS = re.compile(r"Used (\d+) registers")


def kernel_name(mangled):
    """The kernel's own name in a mangled one (NAME_kernel3, gemm_kernel):
    the length-prefixed last part of a nested name that ends in kernel and
    a number; the mangled name when there is none."""
    for m in re.finditer(r"\d+", mangled):
        run, end = m.group(), m.end()
        for k in range(len(run)):
            n = int(run[k:])
            name = mangled[end:end + n]
            # A nested name's last part ends at E, or at I where template
            # arguments follow.
            if len(name) == n and re.fullmatch(r"[A-Za-z_]\w*kernel\d*", name) and mangled[end + n:end + n + 1] in ("E", "I"):
                return name
    return mangled


def parse_ptxas(text):
    """What ptxas -v said of each kernel it compiled: a list of
    {"kernel", "arch", "registers", "spill_bytes"} (stores and loads), in
    the log's order."""
    out = []
    for line in text.splitlines():
        m = _PTXAS_ENTRY.search(line)
        if m:
            out.append({"kernel": kernel_name(m.group(1)), "arch": m.group(2), "registers": None, "spill_bytes": 0})
            continue
        if not out:
            continue
        m = _PTXAS_SPILL.search(line)
        if m:
            out[-1]["spill_bytes"] = int(m.group(1)) + int(m.group(2))
        m = _PTXAS_REGS.search(line)
        if m:
            out[-1]["registers"] = int(m.group(1))
    return out


def format_ptxas(results):
    """A line per entry whose kernels spill, and the most registers a
    kernel of each workload took; empty when no entry has ptxas's report."""
    spills, most = [], {}
    for r in results:
        for k in r.get("ptxas") or []:
            if k["spill_bytes"]:
                spills.append("- %s: %s spills %d bytes (%s registers)" % (r["entry"], k["kernel"], k["spill_bytes"], k["registers"]))
            if k["registers"] is not None and k["registers"] > most.get(r["workload"], (0, ""))[0]:
                most[r["workload"]] = (k["registers"], "%s %s" % (r["entry"], k["kernel"]))
    if not most and not spills:
        return ""
    head = "Registers (ptxas -v): the most a kernel of each workload takes: " + "; ".join(
        "%s %d (%s)" % (w, n, where) for w, (n, where) in sorted(most.items())) + "."
    if not spills:
        return head + " No kernel spills.\n"
    return head + " Kernels that spill:\n\n" + "\n".join(spills) + "\n"


def emulator_build(entry, emu_include, lib):
    """Compile the entry for mirage's CPU emulator (g++), once."""
    cu = os.path.join(entry.path, entry.lib_name + ".cu")
    if os.path.exists(lib) and os.path.getmtime(lib) >= os.path.getmtime(cu):
        return None
    log = lib[: -len(".so")] + ".log"
    cmd = ["g++", "-std=c++17", "-O2", "-DMIRAGE_EMULATE", "-shared", "-fPIC", "-I" + emu_include, "-I" + entry.path,
           "-x", "c++", cu, "-o", lib]
    with open(log, "w") as f:
        rc = subprocess.call(cmd, stdout=f, stderr=subprocess.STDOUT)
    if rc != 0:
        return "g++ failed: " + log_tail(log)
    return None


class WorkloadRunner:
    """Runs one workload's entries (and its eager/compile baselines) in this
    process."""

    def __init__(self, args, workload, dtypes):
        _import_torch()
        self.args = args
        self.w = workload
        self.device = "cpu" if args.emulate else "cuda"
        self.dtypes = dtypes
        self.inputs64 = make_inputs(workload, dtypes, args.seed)
        ref_device = self.device if self.device == "cuda" else "cpu"
        with torch.no_grad():
            self.refs = [r.cpu() for r in workload.ref(*[x.to(ref_device) for x in self.inputs64])]
        self.inputs = [x.to(self.device).to(torch_dtype(dt)).contiguous() for x, dt in zip(self.inputs64, dtypes)]
        self.timer = Timer(self.device, args.runs, args.warmup, args.cold_l2, pad=not args.no_pad)

    def errors(self, outs):
        return [rel_err(o.cpu(), r) for o, r in zip(outs, self.refs)]

    def run_entry(self, e):
        """The result dict of one entry (no eager/compile fields)."""
        r = base_result(e)
        m = e.manifest
        if m is None:
            return fail(r, "emit: " + (log_tail(os.path.join(e.path, "emit.log"), 2) or "no manifest.json"))
        shapes = [tuple(t["shape"]) for t in m["inputs"]]
        if shapes != self.w.inputs:
            return fail(r, "inputs %s, the workload's are %s" % (shapes, self.w.inputs))
        oshapes = [tuple(t["shape"]) for t in m["outputs"]]
        if oshapes != self.w.outputs:
            return fail(r, "outputs %s, the workload's are %s" % (oshapes, self.w.outputs))
        if [t["dtype"] for t in m["inputs"]] != list(self.dtypes):
            return fail(r, "input dtypes %s differ from the workload's %s" % ([t["dtype"] for t in m["inputs"]], self.dtypes))
        tag = self.args.lib_tag
        path = lib_path(e, tag)
        if self.args.emulate:
            err = emulator_build(e, self.args.emu_include, path)
            if err:
                return fail(r, err)
        if not os.path.exists(path):
            log = os.path.join(e.path, "nvcc.%s.log" % tag)
            return fail(r, "build: " + (log_tail(log, 2) or "no %s" % os.path.basename(path)))
        if not self.args.emulate:
            try:
                with open(os.path.join(e.path, "nvcc.%s.log" % tag), errors="replace") as f:
                    r["ptxas"] = parse_ptxas(f.read())
            except OSError:
                pass
        try:
            lib = MirageLib(path, e.lib_name)
        except (OSError, AttributeError) as ex:
            return fail(r, "load: %s" % ex)
        wsb = max(lib.workspace_bytes, int(m.get("workspace_bytes") or 0))
        if lib.workspace_bytes != int(m.get("workspace_bytes") or 0):
            r["warnings"].append("workspace: library says %d bytes, manifest %s" % (lib.workspace_bytes, m.get("workspace_bytes")))
        r["workspace_bytes"] = wsb
        ws = torch.empty(wsb + 256, dtype=torch.uint8, device=self.device) if wsb else None
        ws_ptr = aligned_ptr(ws, 256) if ws is not None else None
        outs = [torch.full(t["shape"], float("nan"), dtype=torch_dtype(t["dtype"]), device=self.device) for t in m["outputs"]]
        for t in list(self.inputs) + outs:
            if t.data_ptr() % 16:
                return fail(r, "a tensor is not 16-byte aligned")
        in_arr = (ctypes.c_void_p * len(self.inputs))(*[t.data_ptr() for t in self.inputs])
        out_arr = (ctypes.c_void_p * len(outs))(*[t.data_ptr() for t in outs])
        stream = torch.cuda.current_stream().cuda_stream if self.device == "cuda" else None
        fn = lib.fn

        def call():
            rc = fn(out_arr, in_arr, ws_ptr, stream)
            if rc != 0:
                raise CudaCallError(rc)

        try:
            call()
            if self.device == "cuda":
                torch.cuda.synchronize()
        except CudaCallError as ex:
            return fail(r, "mirage_%s returned %s" % (e.lib_name, ex))
        except RuntimeError as ex:  # a fault: the CUDA context is lost
            r["fatal"] = True
            return fail(r, "CUDA error after the call: %s" % _one_line(ex))
        errs = self.errors(outs)
        r["rel_errs"] = errs
        r["max_rel_err"] = max(errs) if errs else None
        if r["max_rel_err"] is None or not r["max_rel_err"] < self.args.tol:
            fail(r, "max rel err %s >= %g" % (fmt_err(r["max_rel_err"]), self.args.tol))
        if self.args.runs > 0:
            try:
                t = self.timer.time(call)
            except CudaCallError as ex:
                return fail(r, "mirage_%s returned %s while timed" % (e.lib_name, ex))
            except RuntimeError as ex:
                r["fatal"] = True
                return fail(r, "CUDA error while timed: %s" % _one_line(ex))
            if t:
                r["mirage_us"] = t["median_us"]
                r["runs"] = t["runs"]
                r["timing"] = t
            # The outputs of the last timed run must still be right (a race
            # or a stale workspace would show here).
            errs2 = self.errors(outs)
            if max(errs2) > max(r["max_rel_err"], 0) * 2 and max(errs2) >= self.args.tol:
                fail(r, "after the timed runs: max rel err %s" % fmt_err(max(errs2)))
        return r

    def baselines(self):
        """eager and torch.compile of the reference at the input dtype."""
        out = {"workload": self.w.name, "dtypes": list(self.dtypes)}
        fn = self.w.ref
        args = self.inputs
        if self.args.emulate:
            # CPU kernels for half matmuls are missing from many torch builds.
            args = [x.float() for x in args]
            out["dtypes"] = ["float32"] * len(args)

        def run_eager():
            with torch.no_grad():
                return fn(*args)

        out["eager"] = self._baseline(run_eager)
        if self.args.no_compile:
            out["compile"] = {"error": "skipped (--no-compile)"}
        elif not hasattr(torch, "compile"):
            out["compile"] = {"error": "torch %s has no torch.compile" % torch.__version__}
        else:
            try:
                cfn = torch.compile(fn)
            except Exception as ex:  # noqa: BLE001: any failure means n/a
                out["compile"] = {"error": "torch.compile: %s" % _one_line(ex)}
            else:

                def run_compiled():
                    with torch.no_grad():
                        return cfn(*args)

                out["compile"] = self._baseline(run_compiled)
        return out

    def _baseline(self, run):
        try:
            res = run()
            if self.device == "cuda":
                torch.cuda.synchronize()
            errs = self.errors(res)
            t = self.timer.time(run) if self.args.runs > 0 else None
        except Exception as ex:  # noqa: BLE001: any failure means n/a
            return {"error": _one_line(ex)}
        return {"median_us": t["median_us"] if t else None, "timing": t, "max_rel_err": max(errs)}


class CudaCallError(Exception):
    def __init__(self, rc):
        super().__init__(rc)
        self.rc = rc

    def __str__(self):
        return "%d (%s)" % (self.rc, CUDA_ERRORS.get(self.rc, "see cudaError_t"))


def _one_line(ex):
    s = ("%s: %s" % (type(ex).__name__, ex)).strip().splitlines()
    return s[0][:300] if s else type(ex).__name__


def base_result(e):
    m = e.manifest or {}
    return {
        "entry": e.name,
        "workload": e.workload,
        "variant": e.variant,
        "candidate": e.candidate,
        "label": e.label(),
        "program": m.get("program"),
        "hash": m.get("hash"),
        "arch": m.get("arch") or e.meta.get("arch"),
        "kernels": len(m["kernels"]) if "kernels" in m else None,
        "kernel_launches": m.get("kernels"),
        "counters": counters_summary(m),
        "status": "ok",
        "reason": "",
        "warnings": [],
        "max_rel_err": None,
        "mirage_us": None,
    }


def fail(r, reason):
    r["status"] = "FAIL"
    r["reason"] = reason if not r["reason"] else r["reason"] + "; " + reason
    return r


# ---------------------------------------------------------------------------
# Workers and the driver.
# ---------------------------------------------------------------------------


def workload_dtypes(entries):
    for e in entries:
        if e.manifest:
            return [t["dtype"] for t in e.manifest["inputs"]]
    return None


def run_worker(args, workload_name, entry_names, do_baselines, emit):
    """Run the named entries of one workload and, with do_baselines, its
    baselines; emit(record) gets a record before and after each step."""
    entries = {e.name: e for e in load_entries(args.build)}
    todo = [entries[n] for n in entry_names]
    w = WORKLOADS[workload_name]
    dtypes = workload_dtypes(todo) or workload_dtypes([e for e in entries.values() if e.workload == workload_name])
    dtypes = dtypes or ["float16"] * len(w.inputs)
    if len(dtypes) != len(w.inputs):
        dtypes = ["float16"] * len(w.inputs)
    runner = WorkloadRunner(args, w, dtypes)
    if do_baselines:
        emit({"type": "start", "what": "baselines"})
        emit({"type": "baselines", **runner.baselines()})
    for e in todo:
        emit({"type": "start", "what": e.name})
        r = runner.run_entry(e)
        emit({"type": "result", **r})
        if r.get("fatal"):
            # The CUDA context is unusable: let the driver start a new worker.
            sys.stdout.flush()
            os._exit(3)


def worker_main(args):
    _import_torch()
    with open(args.worker_out, "a") as f:

        def emit(rec):
            f.write(json.dumps(rec) + "\n")
            f.flush()

        run_worker(args, args.worker, args.worker_entries.split(",") if args.worker_entries else [], args.worker_baselines, emit)
    return 0


def _worker_argv(args, workload, names, baselines, out_path):
    argv = [sys.executable, os.path.abspath(__file__), "--build", args.build, "--results", args.results,
            "--runs", str(args.runs), "--warmup", str(args.warmup), "--seed", str(args.seed), "--tol", repr(args.tol),
            "--lib-tag", args.lib_tag, "--worker", workload, "--worker-entries", ",".join(names), "--worker-out", out_path]
    if baselines:
        argv.append("--worker-baselines")
    for flag in ("emulate", "cold_l2", "no_compile", "no_pad"):
        if getattr(args, flag):
            argv.append("--" + flag.replace("_", "-"))
    if args.emulate:
        argv += ["--emu-include", args.emu_include]
    return argv


def run_workload_isolated(args, workload, entries, log):
    """Runs a workload's entries in worker processes; a worker that dies
    fails the step it was in, and a new one takes the rest."""
    pending = [e.name for e in entries]
    need_baselines = True
    results = {}
    baselines = None
    while pending or need_baselines:
        fd, out_path = tempfile.mkstemp(prefix="mirage-worker-", suffix=".jsonl")
        os.close(fd)
        argv = _worker_argv(args, workload, pending, need_baselines, out_path)
        t0 = time.time()
        try:
            p = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=args.worker_timeout)
            rc, text = p.returncode, p.stdout.decode(errors="replace")
        except subprocess.TimeoutExpired as ex:
            rc, text = "timeout", (ex.stdout or b"").decode(errors="replace")
        with open(out_path) as f:
            recs = [json.loads(l) for l in f if l.strip()]
        os.unlink(out_path)
        current = None
        progress = False
        for rec in recs:
            if rec["type"] == "start":
                current = rec["what"]
            elif rec["type"] == "baselines":
                baselines = rec
                need_baselines = False
                current = None
                progress = True
            elif rec["type"] == "result":
                rec.pop("type")
                results[rec["entry"]] = rec
                if rec["entry"] in pending:
                    pending.remove(rec["entry"])
                current = None
                progress = True
        if text.strip():
            log("worker %s (%.0f s, exit %s):\n%s" % (workload, time.time() - t0, rc, text.rstrip()))
        if not pending and not need_baselines:
            break
        why = "worker died (exit %s): %s" % (rc, _tail_line(text))
        if current is not None:
            # It died inside a step: that step fails, a new worker does the rest.
            if current == "baselines":
                baselines = {"workload": workload, "eager": {"error": why}, "compile": {"error": why}}
                need_baselines = False
            elif current in pending:
                e = next(x for x in entries if x.name == current)
                results[current] = fail(base_result(e), why)
                pending.remove(current)
        elif not progress:
            # It died before its first step (or exited without doing its
            # work): everything left fails.
            if need_baselines:
                baselines = {"workload": workload, "eager": {"error": why}, "compile": {"error": why}}
                need_baselines = False
            for n in pending:
                e = next(x for x in entries if x.name == n)
                results[n] = fail(base_result(e), why)
            pending = []
        # else: it stopped between steps (after a fault): go on with a new one.
    return [results[e.name] for e in entries], baselines


def _tail_line(text):
    lines = [l.strip() for l in text.splitlines() if l.strip()]
    return lines[-1][:300] if lines else "no output"


def run_workload_inprocess(args, workload, entries, log):
    recs = []
    run_worker(args, workload, [e.name for e in entries], True, recs.append)
    results = [{k: v for k, v in r.items() if k != "type"} for r in recs if r["type"] == "result"]
    baselines = next((r for r in recs if r["type"] == "baselines"), None)
    return results, baselines


def merge_baselines(results, baselines):
    b = baselines or {}
    eager = b.get("eager") or {}
    comp = b.get("compile") or {}
    for r in results:
        r["eager_us"] = eager.get("median_us")
        r["compile_us"] = comp.get("median_us")
        r["speedup_vs_eager"] = (r["eager_us"] / r["mirage_us"]) if r.get("eager_us") and r.get("mirage_us") else None
        r["speedup_vs_compile"] = (r["compile_us"] / r["mirage_us"]) if r.get("compile_us") and r.get("mirage_us") else None


def environment(args):
    env = {
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "host": platform.node(),
        "python": platform.python_version(),
        "torch": getattr(torch, "__version__", None),
        "torch_cuda": getattr(getattr(torch, "version", None), "cuda", None),
        "mode": "emulate (CPU, wall clock)" if args.emulate else "cuda",
    }
    if not args.emulate:
        props = torch.cuda.get_device_properties(0)
        env["gpu"] = torch.cuda.get_device_name(0)
        env["capability"] = "%d.%d" % torch.cuda.get_device_capability(0)
        env["sms"] = props.multi_processor_count
        try:
            env["driver"] = subprocess.run(
                ["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, timeout=30,
            ).stdout.decode().strip().splitlines()[0]
        except Exception:  # noqa: BLE001: informational only
            env["driver"] = None
    else:
        env["gpu"] = "CPU emulator"
    if args.nvcc:
        try:
            out = subprocess.run([args.nvcc, "--version"], stdout=subprocess.PIPE, timeout=30).stdout.decode()
            env["nvcc"] = [l for l in out.splitlines() if "release" in l][-1].strip()
        except Exception:  # noqa: BLE001: informational only
            env["nvcc"] = None
    return env


TIMING_NOTE = (
    "each run timed individually with its own pair of CUDA events; median of {runs} runs after {warmup} warm-up runs; "
    "before each run the stream is padded with torch.cuda._sleep for twice the host's enqueue time, so host launch "
    "overhead is excluded; L2 {l2}"
)


def main(argv=None):
    ap = argparse.ArgumentParser(
        description="Build-checked, timed runs of the CUDA that mirage emit writes (see bench/gpu/README.md).",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="The results: RESULTS/gpu.md, RESULTS/gpu.json and RESULTS/profile_ARCH.json. Exit status 1 when an entry failed.",
    )
    ap.add_argument("--build", required=True, help="an arch directory of prepare.sh's output (OUTDIR/sm_90), with the libraries run.sh built")
    ap.add_argument("--results", required=True, help="directory for gpu.md, gpu.json and profile_ARCH.json")
    ap.add_argument("--entries", action="append", metavar="GLOB", help="only entries whose name matches (repeatable), e.g. 'gqa.*'")
    ap.add_argument("--runs", type=int, default=200, help="timed runs per measurement (default 200; the median is reported)")
    ap.add_argument("--warmup", type=int, default=20, help="untimed runs first (default 20)")
    ap.add_argument("--tol", type=float, default=1e-2, help="fail at this max relative error or above (default 1e-2)")
    ap.add_argument("--seed", type=int, default=1, help="seed of the random inputs (default 1)")
    ap.add_argument("--lib-tag", default=None, help="the libraries are ENTRY/libNAME.TAG.so (default: sm_XY of the GPU, as run.sh names them)")
    ap.add_argument("--nvcc", default=None, help="the nvcc that built them (its version is recorded)")
    ap.add_argument("--cold-l2", action="store_true", help="flush the L2 cache before each timed run")
    ap.add_argument("--no-pad", action="store_true",
                    help="do not pad the stream before each timed run: the times then include the host's launch overhead where it "
                         "exceeds the GPU's time")
    ap.add_argument("--no-compile", action="store_true", help="skip torch.compile")
    ap.add_argument("--no-isolate", action="store_true", help="run everything in this process (a faulting kernel then fails the rest)")
    ap.add_argument("--worker-timeout", type=float, default=3600, help="seconds for one workload's worker (default 3600)")
    ap.add_argument("--budget", type=float, default=None, metavar="SECONDS",
                    help="start no workload after this many seconds (a GPU lease's limit): the workloads left are listed "
                         "as not run; gpu.md and gpu.json are rewritten after every workload either way, so that a run "
                         "stopped from outside keeps what it measured")
    ap.add_argument("--emulate", action="store_true",
                    help="developer check without a GPU: build each entry with g++ for mirage's CPU emulator and check it on the CPU "
                         "(wall-clock times, baselines in float32); writes no profile")
    ap.add_argument("--emu-include", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "templates", "emu"),
                    help="the emulator's cuda_runtime.h directory (default: templates/emu of this repository)")
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    ap.add_argument("--worker-entries", help=argparse.SUPPRESS)
    ap.add_argument("--worker-baselines", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--worker-out", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)

    if args.worker:
        return worker_main(args)

    if not os.path.isdir(args.build):
        ap.error("--build %s: no such directory" % args.build)
    entries = load_entries(args.build, args.entries)
    if not entries:
        ap.error("--build %s: no entries (directories with meta.json or manifest.json)%s"
                 % (args.build, " matching --entries" if args.entries else ""))
    unknown = sorted({e.workload for e in entries if e.workload not in WORKLOADS})
    if unknown:
        ap.error("no reference program for workload(s) %s: add them to WORKLOADS in %s" % (", ".join(unknown), __file__))
    if args.runs < 200 and not args.emulate:
        print("warning: --runs %d: the benchmark's protocol takes the median of at least 200" % args.runs, file=sys.stderr)

    _import_torch()
    if not args.emulate:
        if not torch.cuda.is_available():
            print("harness.py: torch sees no CUDA device (use --emulate for a CPU check)", file=sys.stderr)
            return 2
        if args.lib_tag is None:
            args.lib_tag = "sm_%d%d" % torch.cuda.get_device_capability(0)
    else:
        args.lib_tag = args.lib_tag or "emu"
        args.emu_include = os.path.abspath(args.emu_include)
        if not os.path.exists(os.path.join(args.emu_include, "cuda_runtime.h")):
            ap.error("--emu-include %s has no cuda_runtime.h" % args.emu_include)
    args.build = os.path.abspath(args.build)
    os.makedirs(args.results, exist_ok=True)
    args.results = os.path.abspath(args.results)

    def log(msg):
        print(msg, file=sys.stderr, flush=True)

    env = environment(args)
    log("harness: %d entries from %s on %s (torch %s)" % (len(entries), args.build, env.get("gpu"), env.get("torch")))
    est_cache = {}
    all_results = []
    all_baselines = {}
    groups = []
    for e in entries:
        if not groups or groups[-1][0] != e.workload:
            groups.append((e.workload, []))
        groups[-1][1].append(e)
    run, skipped = within_budget(groups, args.budget, time.monotonic)
    for workload, group in run:
        log("== %s: %s" % (workload, ", ".join(e.name for e in group)))
        runner = run_workload_inprocess if args.no_isolate else run_workload_isolated
        results, baselines = runner(args, workload, group, log)
        merge_baselines(results, baselines)
        for e, r in zip(group, results):
            r["estimated_us"] = estimated_us(args.build, e, est_cache)
        all_baselines[workload] = baselines
        for r in results:
            log("  %-22s %-4s err %-8s mirage %8s µs%s" % (r["entry"], r["status"], fmt_err(r.get("max_rel_err")),
                                                           fmt_us(r.get("mirage_us")), "  " + r["reason"] if r["reason"] else ""))
        b = baselines or {}
        log("  eager %s µs, torch.compile %s" % (
            fmt_us((b.get("eager") or {}).get("median_us")) if "median_us" in (b.get("eager") or {}) else (b.get("eager") or {}).get("error"),
            (fmt_us(b["compile"]["median_us"]) + " µs") if "median_us" in (b.get("compile") or {}) else (b.get("compile") or {}).get("error")))
        all_results.extend(results)
        write_report(args, env, all_results, all_baselines, skipped, final=False)
    if skipped:
        log("not run (the --budget of %g s was spent): %s" % (args.budget, ", ".join(skipped)))
    return write_report(args, env, all_results, all_baselines, skipped, final=True, log=log)


def within_budget(groups, budget, clock):
    """Yields the (workload, entries) groups to run, in order, while the
    clock has not passed budget seconds since the first was asked for;
    then stops and lists the rest, by workload, in the list it returns
    beside the generator (filled as the generator ends). budget None:
    all of them."""
    skipped = []

    def gen():
        start = clock()
        for i, (workload, group) in enumerate(groups):
            if budget is not None and i > 0 and clock() - start > budget:
                skipped.extend(w for w, _ in groups[i:])
                return
            yield workload, group

    return gen(), skipped


def write_report(args, env, all_results, all_baselines, skipped, final, log=None):
    """Writes gpu.md and gpu.json (and, when final, the profile) for the
    results so far, each file replaced whole; when final, also prints the
    table and returns the exit status."""
    taus = kendall_by_workload(all_results)
    arch = next((r["arch"] for r in all_results if r.get("arch")), "unknown")
    l2 = "flushed before each run" if args.cold_l2 else "warm (not flushed)"
    timing = TIMING_NOTE.format(runs=args.runs, warmup=args.warmup, l2=l2)
    if args.no_pad:
        timing = timing.replace("before each run the stream is padded with torch.cuda._sleep for twice the host's enqueue time, "
                                "so host launch overhead is excluded",
                                "the stream is not padded (--no-pad): host launch overhead counts where it exceeds the GPU's time")
    if args.emulate:
        timing = "CPU emulator: wall clock, median of %d runs; not a GPU measurement" % args.runs
    failed = [r for r in all_results if r["status"] != "ok"]

    md = []
    md.append("# mirage GPU benchmark\n")
    md.append("%s, %s, torch %s (CUDA %s)%s, %s.\n" % (
        env.get("gpu"), "sm " + env.get("capability", "?") if not args.emulate else "emulated", env.get("torch"),
        env.get("torch_cuda"), ", " + env["nvcc"] if env.get("nvcc") else "", env["date"]))
    md.append("Timing: %s. Relative error: max|got - ref| / max|ref| against a float64 torch reference; "
              "FAIL at %g or above. eager and compile: the program in torch at the input dtype.\n" % (timing, args.tol))
    md.append(format_table(all_results))
    if taus:
        md.append("\nCost model vs measurement: Kendall's tau-b between estimated and measured µs over each workload's superopt "
                  "candidates that passed (1 = the same order, -1 = reversed, n/a where the model ties them all); 'with unfused' "
                  "adds the unfused program at superopt's baseline_us:\n")
        md.append(format_kendall(taus))
    md.append(format_baseline_notes(all_baselines))
    md.append(format_ptxas(all_results))
    notes = [(w.name, w.note) for w in WORKLOADS.values() if w.note and any(r["workload"] == w.name for r in all_results)]
    if notes:
        md.append("\nInputs: uniform in [-1, 1) except " + "; ".join("%s: %s" % n for n in notes) + ".\n")
    if not args.emulate:
        md.append("\nThe measured times as a profile: profile_%s.json (mirage superopt --profile FILE).\n" % arch)
    if skipped:
        md.append("\nNot run: the harness's --budget of %g s was spent before %s.\n" % (args.budget, ", ".join(skipped)))
    if not final:
        md.append("\nIn progress: the run had not ended when this was written.\n")
    md.append("\n%d entries, %d failed.\n" % (len(all_results), len(failed)))
    text = "\n\n".join(part.strip("\n") for part in md if part.strip()) + "\n"
    if final:
        print(text)

    write_whole(os.path.join(args.results, "gpu.md"), text)
    doc = {
        "environment": env,
        "build": args.build,
        "timing": timing,
        "tolerance": args.tol,
        "seed": args.seed,
        "entries": all_results,
        "baselines": all_baselines,
        "kendall": taus,
        "failed": [r["entry"] for r in failed],
        "not_run": skipped,
        "complete": final,
    }
    write_whole(os.path.join(args.results, "gpu.json"), json.dumps(json_safe(doc), indent=2, allow_nan=False) + "\n")
    path = None
    if not args.emulate:
        prof = make_profile(all_results, arch, env.get("gpu"), {"created": env["date"], "torch": env.get("torch"),
                                                                "driver": env.get("driver"), "timing": timing})
        path = os.path.join(args.results, "profile_%s.json" % arch)
        write_whole(path, json.dumps(json_safe(prof), indent=2, allow_nan=False) + "\n")
    if not final:
        return None
    if path:
        log("wrote %s, %s and %s" % (os.path.join(args.results, "gpu.md"), os.path.join(args.results, "gpu.json"), path))
    else:
        log("wrote %s and %s (no profile in --emulate)" % (os.path.join(args.results, "gpu.md"), os.path.join(args.results, "gpu.json")))
    return 1 if failed else 0


def write_whole(path, text):
    """Replaces path by text at once: a reader, or a run stopped midway,
    sees the old file or the new one, never part of one."""
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        f.write(text)
    os.replace(tmp, path)


def json_safe(o):
    """o with inf and nan (which strict JSON lacks) written as strings."""
    if isinstance(o, float) and (math.isinf(o) or math.isnan(o)):
        return str(o)
    if isinstance(o, dict):
        return {k: json_safe(v) for k, v in o.items()}
    if isinstance(o, (list, tuple)):
        return [json_safe(v) for v in o]
    return o


if __name__ == "__main__":
    sys.exit(main())
