#!/usr/bin/env python3
"""PyTorch side by side with our CUDA kernels, on one GPU, with one timing method.

For every (problem, shape, kernel) it builds the problem's inputs with torch, runs PyTorch eager
and torch.compile, runs our kernel (NVRTC with the backend's options, launched per its declarative
launch plan through the CUDA driver API, clusters included), checks our output against a float64
computation with the problem's magnitude-aware tolerance (|out - ref| <= atol + rtol * max|ref|,
NaN/Inf never pass, two runs with different output poison must agree bit for bit), and times all
three the same way: CUDA events around each call, L2 flushed (a 256 MB buffer written) before
every sample, warm-up excluded, median of >= 20 samples. One table at the end: eager, compile and
our times, speedups, the lower bound LB = max(bytes / 4.3 TB/s, flops / peak) and % of LB; a time
below LB is flagged as a BUG.

Kernels come from a JSON file of best kernels (the search's output):
    {"kernels": [{"problem_dir": "examples/cuda_problems/softmax", "shape": "4096x65536",
                  "family": "...", "params": {...}, "source": "..." | "source_file": "...",
                  "launch": {...} (already substituted)}]}
("shape" missing or "*" means every shape of the problem), or, with --kernels-from-catalogue,
straight from the problems' catalogues at each template's central point (or at --point values),
so that the kernels can be checked on the GPU before any search exists.

Each kernel runs in a worker process; a crash or a sticky CUDA error costs that row only: the
orchestrator prints an error row and starts a fresh worker for the rest.

Examples (repository root, on the GPU machine):
    python3 bench/side_by_side.py --kernels-from-catalogue
    python3 bench/side_by_side.py --kernels-from-catalogue --problems softmax --no-compile
    python3 bench/side_by_side.py --kernels-from-catalogue --check-only --random-points 4 --tiers smoke
    python3 bench/side_by_side.py --kernels best.json --out results.json
"""
import argparse
import hashlib
import json
import math
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import time
import traceback
import zlib

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PROBLEMS_DIR = os.path.join(ROOT, "examples", "cuda_problems")
HBM_BYTES_PER_S = 4.3e12  # BENCHMARKS.md's LB bandwidth (measured copy)
HBM_PEAK_BYTES_PER_S = 4.8e12  # the datasheet peak: below bytes / this is physically impossible
NVRTC_OPTIONS = ["-default-device", "--std=c++17"]  # plus --gpu-architecture=<the problem's "arch">


def nvrtc_options(arch):
    return ["--gpu-architecture=" + (arch or "sm_90")] + NVRTC_OPTIONS


def source_key(src, arch):
    return hashlib.sha1(((arch or "sm_90") + "\n" + src).encode()).hexdigest()
RESULT_TAG = "@@RESULT "


# ---------------------------------------------------------------------------------------------
# Integer expressions: the grammar of include/kernelbrain/core/expr.hpp (C-like precedence:
# || && == != < <= > >= + - * / % unary - !, parentheses, min max ceil_div pow2).
class _Expr:
    def __init__(self, text, env):
        self.t, self.env, self.p = text, env, 0

    def fail(self, what):
        raise ValueError('expression "%s": %s at column %d' % (self.t, what, self.p + 1))

    def skip(self):
        while self.p < len(self.t) and self.t[self.p].isspace():
            self.p += 1

    def eat(self, op):
        self.skip()
        if self.t.startswith(op, self.p):
            self.p += len(op)
            return True
        return False

    def parse(self):
        v = self.p_or()
        self.skip()
        if self.p != len(self.t):
            self.fail("unexpected '%s'" % self.t[self.p])
        return v

    def p_or(self):
        v = self.p_and()
        while self.eat("||"):
            r = self.p_and()
            v = 1 if (v != 0 or r != 0) else 0
        return v

    def p_and(self):
        v = self.p_cmp()
        while self.eat("&&"):
            r = self.p_cmp()
            v = 1 if (v != 0 and r != 0) else 0
        return v

    def p_cmp(self):
        v = self.p_add()
        while True:
            if self.eat("=="): v = int(v == self.p_add())
            elif self.eat("!="): v = int(v != self.p_add())
            elif self.eat("<="): v = int(v <= self.p_add())
            elif self.eat(">="): v = int(v >= self.p_add())
            elif self.eat("<"): v = int(v < self.p_add())
            elif self.eat(">"): v = int(v > self.p_add())
            else: return v

    def p_add(self):
        v = self.p_mul()
        while True:
            if self.eat("+"): v += self.p_mul()
            elif self.eat("-"): v -= self.p_mul()
            else: return v

    def p_mul(self):
        v = self.p_unary()
        while True:
            if self.eat("*"):
                v *= self.p_unary()
            elif self.eat("/"):
                d = self.p_unary()
                if d == 0: self.fail("division by zero")
                q = abs(v) // abs(d)
                v = q if (v >= 0) == (d >= 0) else -q  # C++ truncation
            elif self.eat("%"):
                d = self.p_unary()
                if d == 0: self.fail("division by zero")
                r = abs(v) % abs(d)
                v = r if v >= 0 else -r
            else:
                return v

    def p_unary(self):
        if self.eat("-"): return -self.p_unary()
        if self.eat("!"): return int(self.p_unary() == 0)
        return self.p_primary()

    def p_primary(self):
        self.skip()
        if self.eat("("):
            v = self.p_or()
            if not self.eat(")"): self.fail("missing ')'")
            return v
        m = re.compile(r"\d+").match(self.t, self.p)
        if m:
            self.p = m.end()
            return int(m.group(0))
        m = re.compile(r"[A-Za-z_][A-Za-z_0-9]*").match(self.t, self.p)
        if not m: self.fail("unexpected end" if self.p >= len(self.t) else "unexpected '%s'" % self.t[self.p])
        name = m.group(0)
        self.p = m.end()
        if self.eat("("):
            a = self.p_or()
            b = self.p_or() if self.eat(",") else None
            if not self.eat(")"): self.fail("missing ')' after arguments of " + name)
            if name == "pow2" and b is None: return int(a > 0 and (a & (a - 1)) == 0)
            if b is None: self.fail(name + " needs two arguments")
            if name == "min": return min(a, b)
            if name == "max": return max(a, b)
            if name == "ceil_div":
                if b == 0: self.fail("division by zero")
                return -((-a) // b)  # the exact ceiling for every sign, as core/expr.hpp
            self.fail("unknown function '%s'" % name)
        if name in self.env: return int(self.env[name])
        self.fail("unknown symbol '%s'" % name)


def evaluate(text, env):
    if isinstance(text, (int, float)):
        return int(text)
    return _Expr(str(text), env).parse()


# ---------------------------------------------------------------------------------------------
# Problems, parameter spaces, substitution.
def load_problem(path):
    d = path if os.path.isabs(path) else os.path.join(ROOT, path)
    if os.path.isfile(d):
        d = os.path.dirname(d)
    with open(os.path.join(d, "problem.json")) as f:
        p = json.load(f)
    p["_dir"] = d
    return p


def all_problem_dirs():
    out = []
    for name in sorted(os.listdir(PROBLEMS_DIR)):
        if os.path.isfile(os.path.join(PROBLEMS_DIR, name, "problem.json")):
            out.append(os.path.join(PROBLEMS_DIR, name))
    return out


def space_of(entry):
    params = list(entry.get("parameters", {}).items())
    return params, entry.get("constraints", [])


def admits(space, point):
    params, cons = space
    for name, values in params:
        if point.get(name) not in values:
            return False
    return all(evaluate(c, point) != 0 for c in cons)


def central_point(space):
    params, _ = space
    if not params:
        return {}
    p = {name: values[(len(values) - 1) // 2] for name, values in params}
    return p if admits(space, p) else None


def random_points(space, n, rng, exclude=()):
    params, _ = space
    out, seen = [], [dict(e) for e in exclude]
    for _ in range(200 * max(n, 1)):
        if len(out) >= n:
            break
        p = {name: rng.choice(values) for name, values in params}
        if p not in seen and admits(space, p):
            seen.append(p)
            out.append(p)
    return out


def substitute(text, point):
    def rep(m):
        k = m.group(1)
        return str(point[k]) if k in point else m.group(0)
    return re.sub(r"\$\{([A-Za-z_][A-Za-z_0-9]*)\}", rep, text)


def parse_point(text):
    p = {}
    for kv in text.split(","):
        if kv.strip():
            k, v = kv.split("=")
            p[k.strip()] = int(v)
    return p


def shapes_of(problem, args):
    out = []
    for s in problem["shapes"]:
        if args.shapes and s["name"] not in args.shapes:
            continue
        if args.tiers and s.get("tier", "default") not in args.tiers:
            continue
        out.append(s)
    return out


def build_tasks(args):
    tasks = []
    if args.kernels:
        with open(args.kernels) as f:
            doc = json.load(f)
        for k in doc.get("kernels", []):
            prob = load_problem(k["problem_dir"])
            src = k.get("source")
            if src is None:
                sf = k["source_file"]
                with open(sf if os.path.isabs(sf) else os.path.join(ROOT, sf)) as f:
                    src = f.read()
            launch = k["launch"] if isinstance(k["launch"], str) else json.dumps(k["launch"])
            shp = k.get("shape", "*")
            for s in shapes_of(prob, args):
                if shp in ("*", s["name"]):
                    tasks.append(dict(kind="kernel", problem_dir=prob["_dir"], problem=prob["name"], shape=s["name"], arch=prob.get("arch", "sm_90"),
                                      family=k.get("family", "?"), params=k.get("params", {}), source=src, launch=launch))
        return tasks
    rng = random.Random(args.seed)
    specs = list(args.point or [])
    if args.points_file:
        with open(args.points_file) as f:
            specs += [l.strip() for l in f if l.strip() and not l.startswith("#")]
    points = []  # (problem, family substring, point)
    for spec in specs:
        prob, fam, pt = spec.split(":", 2)
        points.append((prob, fam, parse_point(pt)))
    dirs = all_problem_dirs()
    if args.problems:
        want = set(args.problems)
        dirs = [d for d in dirs if os.path.basename(d) in want]
    for d in dirs:
        prob = load_problem(d)
        shapes = shapes_of(prob, args)
        if args.references:
            ref = prob["reference"]
            with open(os.path.join(d, ref["source"])) as f:
                src = f.read()
            for s in shapes:
                tasks.append(dict(kind="reference", problem_dir=d, problem=prob["name"], shape=s["name"], arch=prob.get("arch", "sm_90"),
                                  family="reference", params={}, source=src, launch=json.dumps(ref["launch"])))
        for entry in prob["catalogue"]:
            if "template" not in entry:
                continue
            if args.families and not any(f in entry["name"] for f in args.families):
                continue
            space = space_of(entry)
            pts = [pt for pr, fam, pt in points if pr == prob["name"] and fam in entry["name"]] or None
            if pts is None and args.points_only and points:
                continue
            if pts is not None:
                bad = [pt for pt in pts if not admits(space, pt)]
                for pt in bad:
                    print("warning: %s / %s: point %s is not admitted; skipped" % (prob["name"], entry["name"], pt), file=sys.stderr)
                pts = [pt for pt in pts if admits(space, pt)]
            else:
                c = central_point(space)
                pts = [c] if c is not None else []
                if c is None:
                    print("warning: %s / %s: central point not admitted" % (prob["name"], entry["name"]), file=sys.stderr)
                pts += random_points(space, args.random_points, rng, exclude=pts)
            with open(os.path.join(d, entry["template"])) as f:
                tsrc = f.read()
            tlaunch = json.dumps(entry["launch"])
            for pt in pts:
                src, launch = substitute(tsrc, pt), substitute(tlaunch, pt)
                for s in shapes:
                    tasks.append(dict(kind="kernel", problem_dir=d, problem=prob["name"], shape=s["name"], arch=prob.get("arch", "sm_90"),
                                      family=entry["name"], params=pt, source=src, launch=launch))
    return tasks


# ---------------------------------------------------------------------------------------------
# Worker: everything that touches the GPU.
def worker_main(args):
    import numpy as np
    import torch
    import torch._dynamo
    import torch.nn.functional as F
    try:
        from cuda.bindings import driver as cu, nvrtc
    except ImportError:  # older cuda-python layout
        from cuda import cuda as cu, nvrtc

    with open(args.worker_tasks) as f:
        tasks = json.load(f)
    torch.cuda.init()
    dev = torch.device("cuda")
    torch.empty(1, device=dev)  # creates the primary context and makes it current
    flush = torch.empty(64 * 1024 * 1024, dtype=torch.float32, device=dev)  # 256 MB

    def emit(res):
        sys.stdout.write(RESULT_TAG + json.dumps(res) + "\n")
        sys.stdout.flush()

    def code(err):
        return err.value if hasattr(err, "value") else int(err)

    def cu_check(res, what):
        err = res[0] if isinstance(res, tuple) else res
        if code(err) != 0:
            try:
                name = cu.cuGetErrorName(err)[1].decode()
            except Exception:
                name = str(err)
            raise RuntimeError("%s failed: %s" % (what, name))
        if isinstance(res, tuple):
            return res[1] if len(res) == 2 else res[1:]
        return None

    modules = {}

    def compile_module(src, arch):
        key = source_key(src, arch)
        if key in modules:
            return modules[key]
        cached = os.path.join(args.cubin_cache, key + ".cubin") if args.cubin_cache else None
        if cached and os.path.isfile(cached):
            with open(cached, "rb") as f:
                image = np.frombuffer(f.read(), dtype=np.uint8).copy()
            module = cu_check(cu.cuModuleLoadData(image.ctypes.data), "cuModuleLoadData")
            modules[key] = module
            return module
        err, prog = nvrtc.nvrtcCreateProgram(src.encode(), b"candidate.cu", 0, [], [])
        if code(err) != 0:
            raise RuntimeError("nvrtcCreateProgram failed")
        opts = [o.encode() for o in nvrtc_options(arch)]
        (err,) = nvrtc.nvrtcCompileProgram(prog, len(opts), opts)
        if code(err) != 0:
            _, n = nvrtc.nvrtcGetProgramLogSize(prog)
            log = b" " * n
            nvrtc.nvrtcGetProgramLog(prog, log)
            raise RuntimeError("NVRTC compile error:\n" + log.decode(errors="replace")[:4000])
        _, n = nvrtc.nvrtcGetCUBINSize(prog)
        cubin = b" " * n
        nvrtc.nvrtcGetCUBIN(prog, cubin)
        nvrtc.nvrtcDestroyProgram(prog)
        image = np.frombuffer(cubin, dtype=np.uint8).copy()
        module = cu_check(cu.cuModuleLoadData(image.ctypes.data), "cuModuleLoadData")
        modules[key] = module
        return module

    DT = {"f32": torch.float32, "f16": torch.float16, "f64": torch.float64}

    class Plan:
        """A launch plan bound to tensors: runs all its launches on the current stream."""

        def __init__(self, src, plan_text, tensors, dims, arch="sm_90"):
            self.plan = json.loads(plan_text)
            module = compile_module(src, arch)
            self.scratch = {}
            for s in self.plan.get("scratch", []):
                n = evaluate(s["size"], dims)
                t = torch.empty(max(n, 1), dtype=DT[s.get("dtype", "f32")], device=dev)
                t.fill_(float("nan"))  # scratch is uninitialised: poison it
                self.scratch[s["name"]] = t
            self.launches = []
            self.keep = []
            for l in self.plan["launches"]:
                func = cu_check(cu.cuModuleGetFunction(module, l["kernel"].encode()), "cuModuleGetFunction " + l["kernel"])
                grid = [evaluate(e, dims) for e in l["grid"]]
                block = [evaluate(e, dims) for e in l["block"]]
                cluster = [evaluate(e, dims) for e in l.get("cluster", ["1", "1", "1"])]
                smem = evaluate(l.get("smem", "0"), dims)
                if smem > 48 * 1024:
                    cu_check(cu.cuFuncSetAttribute(func, cu.CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, smem),
                             "cuFuncSetAttribute(max dynamic smem %d)" % smem)
                holders = []
                for a in l["args"]:
                    if a in tensors:
                        holders.append(np.array([tensors[a].data_ptr()], dtype=np.uint64))
                    elif a in self.scratch:
                        holders.append(np.array([self.scratch[a].data_ptr()], dtype=np.uint64))
                    elif a in dims:
                        holders.append(np.array([int(dims[a])], dtype=np.int64))
                    else:
                        raise RuntimeError("launch argument '%s' names no tensor, scratch or dim" % a)
                ptrs = np.array([h.ctypes.data for h in holders], dtype=np.uint64)
                self.keep.append((holders, ptrs))
                self.launches.append((l["kernel"], func, grid, block, cluster, smem, ptrs))

        def __call__(self):
            stream = cu.CUstream(torch.cuda.current_stream().cuda_stream)
            for name, func, grid, block, cluster, smem, ptrs in self.launches:
                if cluster == [1, 1, 1]:
                    cu_check(cu.cuLaunchKernel(func, grid[0], grid[1], grid[2], block[0], block[1], block[2], smem,
                                               stream, ptrs.ctypes.data, 0), "launch " + name)
                else:
                    cfg = cu.CUlaunchConfig()
                    cfg.gridDimX, cfg.gridDimY, cfg.gridDimZ = grid
                    cfg.blockDimX, cfg.blockDimY, cfg.blockDimZ = block
                    cfg.sharedMemBytes = smem
                    cfg.hStream = stream
                    attr = cu.CUlaunchAttribute()
                    attr.id = cu.CUlaunchAttributeID.CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION
                    attr.value.clusterDim.x, attr.value.clusterDim.y, attr.value.clusterDim.z = cluster
                    cfg.attrs = [attr]
                    cfg.numAttrs = 1
                    cu_check(cu.cuLaunchKernelEx(cfg, func, ptrs.ctypes.data, 0), "cluster launch " + name)

    # --- the problems in torch terms -----------------------------------------------------------
    def torch_ops(pname, dims, precision):
        """(eager fn over the input tensors, float64 reference fn over float64 inputs, output shape)."""
        kind = re.sub(r"_(tf32|3xtf32|fp16)$", "", pname)
        g = lambda k: int(dims[k])
        if kind == "softmax":
            R, C = g("R"), g("C")
            views = [(R, C)]
            f = lambda x: torch.softmax(x, dim=1)
            return f, f, views
        if kind == "rmsnorm":
            B, C, H, W = g("B"), g("C"), g("H"), g("W")
            views = [(B, C, H, W)]
            f = lambda x: x / torch.sqrt(torch.mean(x * x, dim=1, keepdim=True) + 1e-5)
            return f, f, views
        if kind == "matvec":
            M, K = g("M"), g("K")
            views = [(M, K), (K, 1)]
            f = lambda A, x: torch.matmul(A, x)
            return f, f, views
        if kind == "linear_relu_div":
            M, N, K = g("M"), g("N"), g("K")
            views = [(M, K), (N, K), (N,)]
            f = lambda x, W, b: torch.relu(F.linear(x, W, b)) / 2
            return f, f, views
        if kind == "group_conv":
            N, C, H, W, K, G, R, P = (g(k) for k in ("N", "C", "H", "W", "K", "G", "R", "P"))
            views = [(N, C, H, W), (K, C // G, R, R)]
            f = lambda x, w: F.conv2d(x, w, stride=1, padding=P, groups=G)
            return f, f, views
        if kind == "sdpa":
            B, H, S, D = g("B"), g("H"), g("S"), g("D")
            views = [(B, H, S, D)] * 3
            f = lambda q, k, v: F.scaled_dot_product_attention(q, k, v)
            ref = lambda q, k, v: torch.softmax(torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(D), dim=-1) @ v
            return f, ref, views
        raise RuntimeError("side_by_side: no PyTorch baseline for problem kind '%s'" % kind)

    def set_precision(precision):
        torch.backends.cuda.matmul.allow_tf32 = precision == "tf32"
        torch.backends.cudnn.allow_tf32 = args.conv_tf32 != "off"  # PyTorch's default is on
        torch.set_float32_matmul_precision("high" if precision == "tf32" else "highest")

    def time_fn(fn, samples):
        fn()
        fn()
        torch.cuda.synchronize()
        starts = [torch.cuda.Event(enable_timing=True) for _ in range(samples)]
        ends = [torch.cuda.Event(enable_timing=True) for _ in range(samples)]
        for i in range(samples):
            flush.fill_(float(i))
            starts[i].record()
            fn()
            ends[i].record()
        torch.cuda.synchronize()
        ts = sorted(s.elapsed_time(e) for s, e in zip(starts, ends))
        return ts[len(ts) // 2]

    def compare(out, ref64, tol):
        """(ok, max |out - ref| / max|ref|, detail)."""
        o, r = out.reshape(-1), ref64.reshape(-1)
        scale = float(r.abs().max()) if r.numel() else 0.0
        bound = tol["atol"] + tol["rtol"] * scale
        worst, nonfinite = 0.0, 0
        step = 1 << 27
        for i in range(0, o.numel(), step):
            od = o[i:i + step].double()
            nonfinite += int((~torch.isfinite(od)).sum())
            if nonfinite == 0:
                worst = max(worst, float((od - r[i:i + step]).abs().max()))
        if nonfinite:
            return False, float("inf"), "%d non-finite outputs" % nonfinite
        rel = worst / scale if scale > 0 else worst
        return worst <= bound, rel, "max err %.3g (bound %.3g)" % (worst, bound)

    cache = {"key": None}

    def shape_state(task, prob):
        key = (task["problem_dir"], task["shape"])
        if cache["key"] == key:
            return cache["state"]
        cache.clear()
        cache["key"] = None
        torch.cuda.empty_cache()
        shape = next(s for s in prob["shapes"] if s["name"] == task["shape"])
        dims = {k: int(v) for k, v in shape["dims"].items()}
        precision = prob.get("precision", "fp32")
        set_precision(precision)
        eager, ref_fn, views = torch_ops(prob["name"], dims, precision)
        gen = torch.Generator(device=dev)
        gen.manual_seed(zlib.crc32((prob["name"] + "/" + shape["name"]).encode()) + args.seed)
        inputs = []
        for spec, view in zip(prob["inputs"], views):
            n = evaluate(spec["size"], dims)
            dist = spec.get("distribution", "normal")
            if dist == "normal":
                t = torch.randn(n, generator=gen, device=dev, dtype=torch.float32)
            elif dist == "uniform":
                t = torch.rand(n, generator=gen, device=dev, dtype=torch.float32)
            else:
                t = torch.rand(n, generator=gen, device=dev, dtype=torch.float32) + 0.1
            inputs.append(t.to(DT[spec.get("dtype", "f32")]).view(view))
        with torch.no_grad():
            ref64 = ref_fn(*[t.double() for t in inputs])
            torch.cuda.synchronize()
        out_specs = prob["outputs"]
        out_n = evaluate(out_specs[0]["size"], dims)
        if ref64.numel() != out_n:
            raise RuntimeError("output size %d != torch's %d" % (out_n, ref64.numel()))
        cost = prob.get("cost", {})
        nbytes = evaluate(cost.get("bytes", "0"), dims)
        flops = evaluate(cost.get("flops", "0"), dims)
        peak = float(prob.get("machine", {}).get("flops_per_second", 0) or 0)
        lb = max(nbytes / HBM_BYTES_PER_S, flops / peak if peak > 0 else 0.0) * 1e3  # ms
        hard = max(nbytes / HBM_PEAK_BYTES_PER_S, flops / peak if peak > 0 else 0.0) * 1e3
        st = dict(dims=dims, inputs=inputs, ref64=ref64, eager=eager, precision=precision, lb=lb, hard=hard,
                  tier=shape.get("tier", "default"), eager_ms=None, compile_ms=None, eager_err=None, baseline_done=False)
        cache["key"], cache["state"] = key, st
        return st

    def baselines(st, prob):
        if st["baseline_done"] or args.check_only or st["tier"] in ("smoke", "odd"):
            return
        st["baseline_done"] = True
        with torch.no_grad():
            try:
                out = st["eager"](*st["inputs"])
                torch.cuda.synchronize()
                _, st["eager_err"], _ = compare(out, st["ref64"], prob["tolerance"])
                del out
                st["eager_ms"] = time_fn(lambda: st["eager"](*st["inputs"]), args.samples)
            except Exception as e:
                st["eager_ms"] = None
                print("eager failed: %s" % e, file=sys.stderr)
            if not args.no_compile:
                try:
                    torch._dynamo.reset()
                    cf = torch.compile(st["eager"], dynamic=False)
                    cf(*st["inputs"])
                    torch.cuda.synchronize()
                    st["compile_ms"] = time_fn(lambda: cf(*st["inputs"]), args.samples)
                except Exception as e:
                    st["compile_ms"] = None
                    print("torch.compile failed: %s" % str(e).splitlines()[0][:200], file=sys.stderr)
            torch.cuda.empty_cache()

    for idx in range(args.worker_start, len(tasks)):
        task = tasks[idx]
        res = dict(index=idx, problem=task["problem"], shape=task["shape"], family=task["family"],
                   params=task["params"], kind=task["kind"], ok=False, error=None)
        print("[%d/%d] %s %s %s %s" % (idx + 1, len(tasks), task["problem"], task["shape"], task["family"],
                                       ",".join("%s=%s" % kv for kv in sorted(task["params"].items()))),
              file=sys.stderr, flush=True)
        sticky = False
        try:
            prob = load_problem(task["problem_dir"])
            st = shape_state(task, prob)
            res["lb_ms"], res["hard_ms"] = st["lb"], st["hard"]
            res["tier"] = st["tier"]
            if task["kind"] == "kernel":
                baselines(st, prob)
            res["eager_ms"], res["compile_ms"], res["eager_err"] = st["eager_ms"], st["compile_ms"], st["eager_err"]
            spec = prob["outputs"][0]
            out = torch.empty(evaluate(spec["size"], st["dims"]), dtype=DT[spec.get("dtype", "f32")], device=dev)
            tensors = {s["name"]: t for s, t in zip(prob["inputs"], st["inputs"])}
            tensors[spec["name"]] = out
            try:
                plan = Plan(task["source"], task["launch"], tensors, st["dims"], task.get("arch", "sm_90"))
            except RuntimeError as e:
                raise RuntimeError(str(e)) from None
            sticky = True  # from here on a failure may have poisoned the context
            before = [t.clone() for t in st["inputs"]] if st["tier"] in ("smoke", "odd") else None
            out.fill_(float("nan"))
            plan()
            torch.cuda.synchronize()
            first = out.clone()
            out.fill_(1.0e30 if out.dtype != torch.float16 else 6.0e4)
            plan()
            torch.cuda.synchronize()
            sticky = False
            ok, rel, detail = compare(out, st["ref64"], prob["tolerance"])
            same = bool(torch.equal(first, out))
            if before is not None and not all(torch.equal(a, b) for a, b in zip(before, st["inputs"])):
                ok, detail = False, "kernel wrote its inputs"
            if not same:
                ok, detail = False, "two runs differ (unwritten outputs or a race); " + detail
            res.update(ok=ok, rel_err=rel, detail=detail)
            del first
            if ok and not args.check_only and st["tier"] != "smoke" and task["kind"] == "kernel":
                sticky = True
                res["ours_ms"] = time_fn(plan, args.samples)
                sticky = False
            del plan, out
        except Exception as e:
            res["error"] = "%s: %s" % (type(e).__name__, str(e).strip()[:600])
            if args.verbose:
                traceback.print_exc()
        emit(res)
        if sticky:
            print("worker: CUDA state may be corrupt after this failure; exiting for a fresh worker", file=sys.stderr)
            sys.exit(3)
    return 0


# ---------------------------------------------------------------------------------------------
# Orchestrator: no torch here; workers do the GPU work.
def _precompile(job):
    """NVRTC only (no CUDA context): source -> cubin file; returns (key, error or None)."""
    src, arch, out_dir = job
    key = source_key(src, arch)
    try:
        try:
            from cuda.bindings import nvrtc
        except ImportError:
            from cuda import nvrtc
        val = lambda e: e.value if hasattr(e, "value") else int(e)
        err, prog = nvrtc.nvrtcCreateProgram(src.encode(), b"candidate.cu", 0, [], [])
        opts = [o.encode() for o in nvrtc_options(arch)]
        (err,) = nvrtc.nvrtcCompileProgram(prog, len(opts), opts)
        if val(err) != 0:
            return key, "compile error"  # the worker compiles again and reports the log
        _, n = nvrtc.nvrtcGetCUBINSize(prog)
        cubin = b" " * n
        nvrtc.nvrtcGetCUBIN(prog, cubin)
        nvrtc.nvrtcDestroyProgram(prog)
        with open(os.path.join(out_dir, key + ".cubin"), "wb") as f:
            f.write(cubin)
        return key, None
    except Exception as e:  # precompilation is only a speed-up
        return key, str(e)


def fmt_ms(v):
    if v is None:
        return "-"
    return "%.4f" % v if v < 1 else "%.3f" % v


def print_table(results, tasks):
    rows = []
    head = ["problem", "shape", "kernel", "eager ms", "compile ms", "ours ms", "vs eager", "vs compile", "LB ms", "% LB", "check"]
    for r in results:
        t = tasks[r["index"]]
        kern = t["family"] + ("[" + ",".join("%s=%s" % kv for kv in sorted(t["params"].items())) + "]" if t["params"] else "")
        ours = r.get("ours_ms")
        e, c, lb = r.get("eager_ms"), r.get("compile_ms"), r.get("lb_ms")
        if r.get("error"):
            check = "ERROR " + r["error"].splitlines()[0][:120]
        elif not r.get("ok"):
            check = "FAIL " + str(r.get("detail", ""))
        else:
            check = "ok %.1e" % r.get("rel_err", 0)
            if ours is not None and lb and ours < lb:
                # Below BENCHMARKS.md's LB (4.3 TB/s, the measured copy rate): a bug, unless a
                # read-dominated kernel really streams faster than a copy; below the datasheet
                # peak (4.8 TB/s) or the flop peak it is certainly a bug.
                check += " BUG(<LB)" if ours < r.get("hard_ms", lb) else " <LB(read-bound? check)"
        rows.append([t["problem"], t["shape"], kern, fmt_ms(e), fmt_ms(c), fmt_ms(ours),
                     "%.2fx" % (e / ours) if e and ours else "-", "%.2fx" % (c / ours) if c and ours else "-",
                     fmt_ms(lb), "%.0f%%" % (100 * lb / ours) if lb and ours else "-", check])
    widths = [max(len(str(x[i])) for x in rows + [head]) for i in range(len(head))]
    widths[2] = min(widths[2], 60)
    line = lambda x: "  ".join(str(v)[:widths[i]].ljust(widths[i]) for i, v in enumerate(x))
    print(line(head))
    print(line(["-" * w for w in widths]))
    for x in rows:
        print(line(x))
    nfail = sum(1 for r in results if r.get("error") or not r.get("ok"))
    print("\n%d rows, %d failed or errored" % (len(rows), nfail))


def orchestrate(args):
    tasks = build_tasks(args)
    if not tasks:
        print("no tasks (check --problems / --shapes / --tiers / --kernels)")
        return 1
    # Keep each shape's rows together so that a worker builds each shape's inputs once.
    order = {}
    tasks.sort(key=lambda t: (t["problem_dir"], t["shape"], t["kind"] != "reference"))
    for t in tasks:
        order.setdefault((t["problem_dir"], t["shape"]), len(order))
    fd, path = tempfile.mkstemp(prefix="sbs_tasks_", suffix=".json")
    with os.fdopen(fd, "w") as f:
        json.dump(tasks, f)
    print("%d tasks" % len(tasks), file=sys.stderr)
    cubin_dir = tempfile.mkdtemp(prefix="sbs_cubins_")
    sources = sorted({(t["source"], t.get("arch", "sm_90")) for t in tasks})
    t0 = time.time()
    try:
        import multiprocessing as mp
        with mp.get_context("spawn").Pool(max(1, args.jobs)) as pool:
            errs = [e for _, e in pool.map(_precompile, [(s, a, cubin_dir) for s, a in sources]) if e]
        print("precompiled %d sources in %.1f s (%d failed)" % (len(sources), time.time() - t0, len(errs)), file=sys.stderr)
    except Exception as e:
        print("precompilation skipped: %s" % e, file=sys.stderr)
    results = {}
    start = 0
    passthrough = [a for a in sys.argv[1:]]
    while start < len(tasks):
        cmd = [sys.executable, os.path.abspath(__file__), "--worker-tasks", path, "--worker-start", str(start),
               "--cubin-cache", cubin_dir] + passthrough
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)
        last = start - 1
        for line in proc.stdout:
            if line.startswith(RESULT_TAG):
                r = json.loads(line[len(RESULT_TAG):])
                results[r["index"]] = r
                last = r["index"]
            else:
                sys.stderr.write(line)
        rc = proc.wait()
        if last + 1 >= len(tasks):
            break
        if rc in (0, 3):  # 3: the worker reported a failure and left to get a fresh CUDA context
            start = last + 1
            continue
        # The worker died: blame the task it was on, which it did not report.
        nxt = last + 1
        if nxt not in results:
            results[nxt] = dict(index=nxt, problem=tasks[nxt]["problem"], shape=tasks[nxt]["shape"], ok=False,
                                error="worker died (exit %d) while running this kernel" % rc)
            nxt += 1
        start = nxt
    os.unlink(path)
    shutil.rmtree(cubin_dir, ignore_errors=True)
    res = [results[i] for i in sorted(results)]
    print()
    print_table(res, tasks)
    if args.out:
        with open(args.out, "w") as f:
            json.dump(dict(results=res, tasks=[{k: v for k, v in t.items() if k not in ("source",)} for t in tasks]), f, indent=1)
    return 0 if all(r.get("ok") and not r.get("error") for r in res) else 2


def merge_tables(files, out):
    """One table (and one JSON) from several runs' --out files; a missing or broken file is reported."""
    results, tasks, bad = [], [], 0
    for fn in files:
        try:
            with open(fn) as f:
                doc = json.load(f)
        except (OSError, ValueError) as e:
            print("warning: %s: %s" % (fn, e), file=sys.stderr)
            bad += 1
            continue
        base = len(tasks)
        tasks += doc.get("tasks", [])
        for r in doc.get("results", []):
            r = dict(r)
            r["index"] = r["index"] + base
            results.append(r)
    order = sorted(range(len(results)), key=lambda i: (tasks[results[i]["index"]]["problem"], tasks[results[i]["index"]]["shape"]))
    results = [results[i] for i in order]
    print_table(results, tasks)
    if out:
        with open(out, "w") as f:
            json.dump(dict(results=results, tasks=tasks), f, indent=1)
    return 0 if not bad and all(r.get("ok") and not r.get("error") for r in results) else 2


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    src = ap.add_mutually_exclusive_group()
    src.add_argument("--kernels", help="JSON file of best kernels (see above)")
    src.add_argument("--kernels-from-catalogue", action="store_true", help="template central points (or --point)")
    src.add_argument("--table-from", nargs="+", metavar="JSON",
                     help="no GPU work: merge the --out files of earlier runs (e.g. one per GPU) into one table")
    ap.add_argument("--point", action="append",
                    help="PROBLEM:FAMILY:K=V,K=V (repeatable; FAMILY may be a substring) instead of the central point")
    ap.add_argument("--points-file", help="file of --point values, one per line")
    ap.add_argument("--points-only", action="store_true", help="with --point/--points-file: skip families not named")
    ap.add_argument("--random-points", type=int, default=0, help="also N seeded random admitted points per family")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--problems", type=lambda s: s.split(","), help="comma-separated problem directory names")
    ap.add_argument("--families", type=lambda s: s.split(","), help="substrings of family names to keep")
    ap.add_argument("--shapes", type=lambda s: s.split(","), help="comma-separated shape names")
    ap.add_argument("--tiers", type=lambda s: s.split(","), help="comma-separated tiers (smoke,small,medium,large)")
    ap.add_argument("--references", action=argparse.BooleanOptionalAction, default=None,
                    help="also check each problem's reference.cu against float64 (default: on in catalogue mode)")
    ap.add_argument("--samples", type=int, default=21, help="timed samples per measurement (>= 20)")
    ap.add_argument("--no-compile", action="store_true", help="skip torch.compile")
    ap.add_argument("--check-only", action="store_true", help="correctness only, no timing")
    ap.add_argument("--conv-tf32", choices=["default", "on", "off"], default="default",
                    help="cuDNN TF32 for PyTorch's fp32 convolutions (PyTorch's default is on)")
    ap.add_argument("--out", help="write all results as JSON here")
    ap.add_argument("--verbose", action="store_true")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 4, help="parallel NVRTC compiles")
    ap.add_argument("--worker-tasks", help=argparse.SUPPRESS)
    ap.add_argument("--cubin-cache", help=argparse.SUPPRESS)
    ap.add_argument("--worker-start", type=int, default=0, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.references is None:
        args.references = bool(args.kernels_from_catalogue)
    if args.samples < 1:
        ap.error("--samples must be positive")
    if args.worker_tasks:
        return worker_main(args)
    if args.table_from:
        return merge_tables(args.table_from, args.out)
    if not args.kernels and not args.kernels_from_catalogue:
        ap.error("give --kernels FILE or --kernels-from-catalogue")
    return orchestrate(args)


if __name__ == "__main__":
    sys.exit(main())
