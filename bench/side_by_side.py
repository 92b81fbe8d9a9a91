#!/usr/bin/env python3
"""PyTorch side by side with our CUDA kernels, on one GPU, with the worker's timing method.

For every (problem, shape, kernel) it builds the problem's inputs with torch, runs PyTorch eager
and torch.compile, runs our kernel (its cubin loaded through the CUDA driver API and launched per
its resolved launch plan, clusters included), checks our output against a float64 computation
with the problem's magnitude-aware tolerance (|out - ref| <= atol + rtol * max|ref|, NaN/Inf never
pass, two runs with different output poison must agree bit for bit, inputs unchanged at the
correctness shapes), and times all three the same way. One table at the end: eager,
compile and our times, speedups, the lower bound LB = max(bytes / 4.3 TB/s, flops / peak) and % of
LB; a time below LB is flagged as a BUG.

What is ours and what is the library's. Everything about a kernel except running it comes from the
C++ library through tools/kernel_prep.cpp (kernelbrain_kernel_prep, --prep): loading and checking
the problems, template spaces (central, given and seeded random points, constraints, ${PARAM}
substitution), the NVRTC compile (the worker's --compile mode with the backend's options), the
launch plan resolved at every shape and checked against the cubin, tensor sizes and the cost model
per shape. It writes a manifest (resolved plans: kernel, grid, block, cluster, dynamic smem, args as
buffer indices or dim values, scratch sizes) and the cubins; this script reads them. What stays in
Python is what only Python can do, because PyTorch must run in the same process as our kernel: the
PyTorch version of each problem (eager, torch.compile, the float64 reference), inputs made with
torch, cuModuleLoadData + launching the resolved plan on torch's stream, the float64 comparison,
and the timing loop.

Timing is the worker's method (events, L2 flush, median): see the comment below the docstring.

Kernels come from a JSON file of best kernels (the search's output, `kernelbrain tune --best-out`):
    {"kernels": [{"problem_dir": "examples/cuda_problems/softmax", "shape": "4096x65536",
                  "family": "...", "params": {...}, "source": "..." | "source_file": "...",
                  "launch": {...} (already substituted)}]}
("shape" missing or "*" means every shape of the problem; relative paths are against the
repository root), or, with --kernels-from-catalogue, straight from the problems' catalogues at each
template's central point (or at --point values), so that the kernels can be checked on the GPU
before any search exists.

Each kernel runs in a worker process; a crash or a sticky CUDA error costs that row only: the
orchestrator prints an error row and starts a fresh worker for the rest.

With --export DIR (a folder written by `kernelbrain export ... --to DIR`; repeatable) each worker, a
fresh Python process, also imports the exported PyTorch module of the row's problem (DIR/torch/kb_<problem>),
builds its library before any timing, and for each kernel row where the module dispatches to a tuned
kernel checks its output against the same float64 reference and times its call (allocation of the
outputs, the ctypes launch) the same way, beside eager, torch.compile and our launch of the cubin; our
launch is timed a second time after it, so that the table shows the run-to-run spread the export's
difference is to be read against.

Examples (repository root, on the GPU machine, after building kernelbrain_kernel_prep):
    python3 bench/side_by_side.py --kernels-from-catalogue
    python3 bench/side_by_side.py --kernels-from-catalogue --problems softmax --no-compile
    python3 bench/side_by_side.py --kernels-from-catalogue --check-only --random-points 4 --tiers smoke
    python3 bench/side_by_side.py --kernels best.json --out results.json
    python3 bench/side_by_side.py --prep build/h200/kernelbrain_kernel_prep --kernels-from-catalogue
    python3 bench/side_by_side.py --kernels best.json --export exported/softmax
"""
# Measurement method: the worker's (src/cuda_worker/worker.cpp, time(); docs/evaluation-plane.md), for
# eager, torch.compile and our kernel alike. Per sample: write a flush buffer of twice the device's
# L2 (the worker's default flush_bytes; a fill with the sample's index, as cuMemsetD32Async), then
# (our kernel only) poison the plan's scratch buffers, then a CUDA event, the call, an event, and a
# synchronize; --warmup calls (default 1, the rung default) the same way but untimed; then the median
# of --samples samples (mean of the two middle ones for an even count, as core/statistics.hpp).
# What differs from the worker, and why it does not matter for the time:
#   - the worker poisons the outputs before each call's flush; here outputs are poisoned for the
#     correctness runs only (the flush that follows evicts whatever the poisoning wrote, and eager
#     and torch.compile allocate their own outputs);
#   - the worker reads each call's inputs from a window at a random offset of a larger field (so a
#     kernel cannot profit from recognising a repeat) and checks some timed calls' outputs; here the
#     inputs stay put (after the flush neither side has them in L2; cheating kernels are the gate's
#     business, not this table's);
#   - the worker resets the persisting L2 once per request; nothing here sets a persisting window;
#   - the worker runs on its own stream of the primary context; here torch's current stream of the
#     same primary context.
#   - here a spin kernel (torch.cuda._sleep) runs between the flush and the start event, so that
#     Python's slower launches are enqueued before the GPU gets to them; the worker launches from
#     C++ and needs none. Without it the agreement check failed on 2026-12-01 for an 18 us kernel
#     (+10.3%: launch latency timed); see bench/runs/2026-12-01-issue9/.
# bench/check_side_by_side_agreement.sh measures one kernel both ways and fails when the medians
# differ by more than its stated tolerance.
import argparse
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
import traceback
import zlib

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PROBLEMS_DIR = os.path.join(ROOT, "examples", "cuda_problems")
DEFAULT_PREP = os.path.join(ROOT, "build", "release", "kernelbrain_kernel_prep")
HBM_BYTES_PER_S = 4.3e12  # BENCHMARKS.md's LB bandwidth (measured copy)
HBM_PEAK_BYTES_PER_S = 4.8e12  # the datasheet peak: below bytes / this is physically impossible
RESULT_TAG = "@@RESULT "
# GPU cycles the spin before each timed call lasts (about 0.5 ms at the H100's and H200's clocks): longer
# than Python takes to record an event and launch a plan, or torch.compile's wrapper to check its guards and
# launch, so no launch gap is timed (see time_fn). It was 100,000 (about 50 us) until 2026-12-06, when on an
# H100 torch.compile at softmax 16x16384 measured 20 us here and 30 us in the search's own PyTorch
# measurement: its Python dispatch outlasted the spin (bench/runs/2026-12-06-issue27/).
SPIN_CYCLES = 1_000_000


# ---------------------------------------------------------------------------------------------
# The library's side: kernelbrain_kernel_prep compiles the kernels and resolves their plans.
def find_prep(args):
    """--prep, else $KERNELBRAIN_KERNEL_PREP, else beside $KERNELBRAIN_CUDA_WORKER (a prebuilt set of
    programs), else build/release/kernelbrain_kernel_prep."""
    path = args.prep or os.environ.get("KERNELBRAIN_KERNEL_PREP")
    if not path and os.environ.get("KERNELBRAIN_CUDA_WORKER"):
        beside = os.path.join(os.path.dirname(os.environ["KERNELBRAIN_CUDA_WORKER"]), "kernelbrain_kernel_prep")
        path = beside if os.path.isfile(beside) else None
    path = path or DEFAULT_PREP
    if not (os.path.isfile(path) and os.access(path, os.X_OK)):
        raise SystemExit("side_by_side: no kernelbrain_kernel_prep at %s: build it (cmake --build BUILD --target "
                         "kernelbrain_kernel_prep) and pass --prep BUILD/kernelbrain_kernel_prep "
                         "(or set KERNELBRAIN_KERNEL_PREP)" % path)
    return path


UNSEEN_DIR = os.path.join(ROOT, "bench", "unseen")  # the problems at shapes in no example file (make.py there)


def problem_dirs_in(root):
    return [os.path.join(root, n) for n in sorted(os.listdir(root)) if os.path.isfile(os.path.join(root, n, "problem.json"))]


def all_problem_dirs(named=None):
    """The example CUDA problems, or those named (bench/unseen/'s too, by name: softmax_vocab, sdpa_fp16_sweep)."""
    if not named:
        return problem_dirs_in(PROBLEMS_DIR)
    want = set(named)
    return [d for d in problem_dirs_in(PROBLEMS_DIR) + problem_dirs_in(UNSEEN_DIR) if os.path.basename(d) in want]


def prep_command(args, prep, out_dir):
    """The kernelbrain_kernel_prep command line for this run's kernels and shapes."""
    cmd = [prep, "--out", out_dir, "--jobs", str(max(1, args.jobs))]
    if args.shapes:
        cmd += ["--shapes", ",".join(args.shapes)]
    if args.tiers:
        cmd += ["--tiers", ",".join(args.tiers)]
    if args.kernels:
        return cmd + ["--kernels", os.path.abspath(args.kernels), "--base", ROOT]
    cmd += ["--seed", str(args.seed), "--random-points", str(args.random_points)]
    if args.references:
        cmd.append("--references")
    if args.families:
        cmd += ["--families", ",".join(args.families)]
    for p in args.point or []:
        cmd += ["--point", p]
    if args.points_file:
        cmd += ["--points-file", os.path.abspath(args.points_file)]
    if args.points_only:
        cmd.append("--points-only")
    dirs = all_problem_dirs(args.problems)
    return cmd + dirs if dirs else None


def tasks_of(manifest, prep_dir):
    """One task per (kernel, shape) of the manifest; a kernel that did not compile gives an error
    task at each of its shapes."""
    tasks = []
    for k in manifest["kernels"]:
        prob = manifest["problems"][k["problem"]]
        base = dict(kind=k["kind"], problem_index=k["problem"], problem=prob["name"], family=k["family"], params=k["params"])
        if k.get("error"):
            for s in k["shapes"]:
                tasks.append(dict(base, shape=s, error=k["error"]))
            continue
        for p in k["plans"]:
            t = dict(base, shape=p["shape"], cubin=os.path.join(prep_dir, k["cubin"]))
            if p.get("error"):
                t["error"] = p["error"]
            else:
                t["plan"] = {key: p[key] for key in ("launches", "scratch_bytes")}
            tasks.append(t)
    # Each shape's rows together (inputs are built once per shape), the reference first.
    order = {(i, s["name"]): n for i, pr in enumerate(manifest["problems"]) for n, s in enumerate(pr["shapes"])}
    tasks.sort(key=lambda t: (t["problem_index"], order.get((t["problem_index"], t["shape"]), 0), t["kind"] != "reference"))
    return tasks


# ---------------------------------------------------------------------------------------------
# Worker: everything that touches the GPU.
def sdpa_float64(q, k, v, max_elements=1 << 28):
    """softmax(q k^T / sqrt(D)) v over [B, H, S, D] tensors (float64 for the reference), a block of query rows
    at a time, so that the [B, H, rows, S] score block stays under max_elements (2 GiB of float64 by default):
    whole, the scores of S = 16384 at 16384 tokens a head take 64 GiB. Each query row's softmax and weighted
    sum are the same operations whichever block it is in, so the result is the whole computation's."""
    import torch
    B, H, S, D = q.shape
    rows = max(1, max_elements // max(1, B * H * k.shape[2]))
    out = torch.empty(B, H, S, v.shape[3], dtype=q.dtype, device=q.device)
    for i in range(0, S, rows):
        scores = torch.matmul(q[:, :, i:i + rows], k.transpose(-1, -2)) / math.sqrt(D)
        out[:, :, i:i + rows] = torch.softmax(scores, dim=-1) @ v
        del scores
    return out


def worker_main(args):
    import numpy as np
    import torch
    import torch._dynamo
    import torch.nn.functional as F
    try:
        from cuda.bindings import driver as cu
    except ImportError:  # older cuda-python layout
        from cuda import cuda as cu

    with open(args.worker_tasks) as f:
        doc = json.load(f)
    problems, tasks = doc["problems"], doc["tasks"]
    torch.cuda.init()
    dev = torch.device("cuda")
    torch.empty(1, device=dev)  # creates the primary context and makes it current
    # The worker's flush: twice the L2 (cuda_options::flush_bytes = 0), 128 MiB when unknown.
    l2 = int(getattr(torch.cuda.get_device_properties(dev), "L2_cache_size", 0) or 0)
    flush = torch.empty((2 * l2 if l2 > 0 else 128 << 20) // 4, dtype=torch.int32, device=dev)

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

    exported = load_exports(args.export or [])

    modules = {}

    def load_module(path):
        if path not in modules:
            with open(path, "rb") as f:
                image = np.frombuffer(f.read(), dtype=np.uint8).copy()
            modules[path] = cu_check(cu.cuModuleLoadData(image.ctypes.data), "cuModuleLoadData " + os.path.basename(path))
        return modules[path]

    DT = {"f32": torch.float32, "f16": torch.float16, "f64": torch.float64}

    class Plan:
        """A resolved launch plan bound to buffers (inputs, outputs, then its own scratch, as the
        backend numbers them): runs all its launches on the current stream."""

        def __init__(self, cubin, plan, buffers):
            module = load_module(cubin)
            # Scratch is uninitialised for the kernel: poisoned (0xff bytes: NaN as f32 and as f16).
            self.scratch = [torch.empty(max(int(b), 1), dtype=torch.uint8, device=dev) for b in plan["scratch_bytes"]]
            self.poison_scratch()
            ptrs = [t.data_ptr() for t in buffers] + [t.data_ptr() for t in self.scratch]
            self.launches, self.keep = [], []
            for l in plan["launches"]:
                func = cu_check(cu.cuModuleGetFunction(module, l["kernel"].encode()), "cuModuleGetFunction " + l["kernel"])
                smem = int(l["smem"])
                if smem > 48 * 1024:
                    cu_check(cu.cuFuncSetAttribute(func, cu.CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, smem),
                             "cuFuncSetAttribute(max dynamic smem %d)" % smem)
                holders = []
                for a in l["args"]:  # every parameter is 8 bytes: a pointer or a long long dim
                    if "buffer" in a:
                        holders.append(np.array([ptrs[int(a["buffer"])]], dtype=np.uint64))
                    else:
                        holders.append(np.array([int(a["value"])], dtype=np.int64))
                argv = np.array([h.ctypes.data for h in holders], dtype=np.uint64)
                self.keep.append((holders, argv))
                self.launches.append((l["kernel"], func, [int(v) for v in l["grid"]], [int(v) for v in l["block"]],
                                      [int(v) for v in l["cluster"]], smem, argv))

        def poison_scratch(self):
            for t in self.scratch:
                t.fill_(255)

        def __call__(self):
            stream = cu.CUstream(torch.cuda.current_stream().cuda_stream)
            for name, func, grid, block, cluster, smem, argv in self.launches:
                if cluster == [1, 1, 1]:
                    cu_check(cu.cuLaunchKernel(func, grid[0], grid[1], grid[2], block[0], block[1], block[2], smem,
                                               stream, argv.ctypes.data, 0), "launch " + name)
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
                    cu_check(cu.cuLaunchKernelEx(cfg, func, argv.ctypes.data, 0), "cluster launch " + name)

    # --- the problems in torch terms -----------------------------------------------------------
    def torch_ops(pname, dims, precision):
        """(eager fn over the input tensors, float64 reference fn over float64 inputs, output shape)."""
        # The operator from the name: a problem of bench/unseen/ is its source's name with a suffix
        # (softmax_vocab, sdpa_fp16_sweep, linear_relu_div_tf32_llm); the precision comes separately.
        kind = next((k for k in ("softmax", "rmsnorm", "matvec", "linear_relu_div", "group_conv", "sdpa")
                     if pname == k or pname.startswith(k + "_")), pname)
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
            return f, sdpa_float64, views
        raise RuntimeError("side_by_side: no PyTorch baseline for problem kind '%s'" % kind)

    def set_precision(precision):
        torch.backends.cuda.matmul.allow_tf32 = precision == "tf32"
        torch.backends.cudnn.allow_tf32 = args.conv_tf32 != "off"  # PyTorch's default is on
        torch.set_float32_matmul_precision("high" if precision == "tf32" else "highest")

    def time_fn(fn, samples, prepare=None):
        """The worker's method (see the top of this file): per call a flush of twice the L2, then
        `prepare` (scratch poison), events around the call, a synchronize; warm-up calls untimed;
        the median."""
        warmup = max(0, args.warmup)
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        ts = []
        torch.cuda.synchronize()
        for i in range(warmup + samples):
            flush.fill_(i)
            if prepare is not None:
                prepare()
            # Keep the GPU busy while Python enqueues the start event and the launch: without this,
            # a short kernel's time can include the host's launch latency (cuda-python launches take
            # microseconds), which the worker's C++ launches do not pay. Not timed: it runs before start.
            torch.cuda._sleep(SPIN_CYCLES)
            start.record()
            fn()
            end.record()
            torch.cuda.synchronize()
            if i >= warmup:
                ts.append(start.elapsed_time(end))
        ts.sort()
        n = len(ts)
        return ts[n // 2] if n % 2 else 0.5 * (ts[n // 2 - 1] + ts[n // 2])

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

    def shape_state(task):
        key = (task["problem_index"], task["shape"])
        if cache["key"] == key:
            return cache["state"]
        cache.clear()
        cache["key"] = None
        torch.cuda.empty_cache()
        prob = problems[task["problem_index"]]
        shape = next(s for s in prob["shapes"] if s["name"] == task["shape"])
        dims = {k: int(v) for k, v in shape["dims"].items()}
        precision = prob["precision"]
        set_precision(precision)
        eager, ref_fn, views = torch_ops(prob["name"], dims, precision)
        gen = torch.Generator(device=dev)
        gen.manual_seed(zlib.crc32((prob["name"] + "/" + shape["name"]).encode()) + args.seed)
        inputs = []
        for spec, n, view in zip(prob["inputs"], shape["input_elements"], views):
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
        out_n = shape["output_elements"][0]
        if ref64.numel() != out_n:
            raise RuntimeError("output size %d != torch's %d" % (out_n, ref64.numel()))
        nbytes, flops = float(shape["bytes"]), float(shape["flops"])
        peak = float(prob["machine"].get("flops_per_second", 0) or 0)
        lb = max(nbytes / HBM_BYTES_PER_S, flops / peak if peak > 0 else 0.0) * 1e3  # ms
        hard = max(nbytes / HBM_PEAK_BYTES_PER_S, flops / peak if peak > 0 else 0.0) * 1e3
        st = dict(dims=dims, shape=shape, inputs=inputs, ref64=ref64, eager=eager, precision=precision, lb=lb, hard=hard,
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
        if task.get("error"):  # did not compile, or its plan was rejected at this shape (kernel_prep)
            res["error"] = task["error"].strip()[:600]
            emit(res)
            continue
        sticky = False
        try:
            prob = problems[task["problem_index"]]
            st = shape_state(task)
            res["lb_ms"], res["hard_ms"] = st["lb"], st["hard"]
            res["tier"] = st["tier"]
            if task["kind"] == "kernel":
                baselines(st, prob)
            res["eager_ms"], res["compile_ms"], res["eager_err"] = st["eager_ms"], st["compile_ms"], st["eager_err"]
            outs = [torch.empty(n, dtype=DT[spec.get("dtype", "f32")], device=dev)
                    for spec, n in zip(prob["outputs"], st["shape"]["output_elements"])]
            out = outs[0]
            plan = Plan(task["cubin"], task["plan"], list(st["inputs"]) + outs)
            sticky = True  # from here on a failure may have poisoned the context
            before = [t.clone() for t in st["inputs"]] if st["tier"] in ("smoke", "odd") else None
            out.fill_(float("nan"))
            plan()
            torch.cuda.synchronize()
            first = out.clone()
            out.fill_(1.0e30 if out.dtype != torch.float16 else 6.0e4)
            plan.poison_scratch()
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
                res["ours_ms"] = time_fn(plan, args.samples, prepare=plan.poison_scratch)
                sticky = False
                if task["problem"] in exported:
                    sticky = True
                    run_export(exported[task["problem"]], st, prob, res, time_fn, compare, args.samples)
                    res["ours2_ms"] = time_fn(plan, args.samples, prepare=plan.poison_scratch)
                    sticky = False
            del plan, out, outs
        except Exception as e:
            res["error"] = "%s: %s" % (type(e).__name__, str(e).strip()[:600])
            if args.verbose:
                traceback.print_exc()
        emit(res)
        if sticky:
            print("worker: CUDA state may be corrupt after this failure; exiting for a fresh worker", file=sys.stderr)
            sys.exit(3)
    return 0


def load_exports(dirs):
    """{problem name: (module, attribute kwargs per dims)} for every kb_<problem> package under DIR/torch,
    each built now (nvcc), so that no timing includes a compile. Runs inside a fresh worker process."""
    import importlib
    out = {}
    for d in dirs:
        tdir = os.path.join(os.path.abspath(d), "torch")
        names = sorted(n for n in os.listdir(tdir) if n.startswith("kb_") and os.path.isdir(os.path.join(tdir, n)))
        if not names:
            raise SystemExit("side_by_side: no kb_<problem> package in %s" % tdir)
        sys.path.insert(0, tdir)
        for n in names:
            mod = importlib.import_module(n)
            problem = n[3:]
            with open(os.path.join(PROBLEMS_DIR, problem, "problem.json")) as f:
                attributes = json.load(f)["pytorch"].get("attributes", {})
            print("export: %s from %s, library %s" % (n, mod.__file__, mod.build()), file=sys.stderr, flush=True)
            out[problem] = (mod, attributes)
    return out


def run_export(entry, st, prob, res, time_fn, compare, samples):
    """The exported module on this row's inputs: its dispatch decision (a tuned kernel exactly at the
    shapes it lists in TUNED, PyTorch's operator elsewhere), its output against the float64 reference
    either way, and, where a tuned kernel runs, its time (the whole call, as a user makes it)."""
    mod, attributes = entry
    kwargs = {arg: int(st["dims"][dim]) for dim, arg in attributes.items()}
    res["export_dispatch"] = mod.dispatch(*st["inputs"], **kwargs)
    res["export_tuned"] = st["shape"]["name"] in mod.TUNED
    if res["export_tuned"] != res["export_dispatch"].startswith("kernel"):
        res.update(export_ok=False, export_detail="dispatch disagrees with TUNED: " + res["export_dispatch"])
        return
    out = mod.forward(*st["inputs"], **kwargs)
    if isinstance(out, (tuple, list)):
        out = out[0]
    if out.is_cuda:
        import torch
        torch.cuda.synchronize()
    ok, rel, detail = compare(out, st["ref64"], prob["tolerance"])
    res.update(export_ok=ok, export_rel_err=rel, export_detail=detail)
    del out
    if ok and res["export_tuned"]:
        res["export_ms"] = time_fn(lambda: mod.forward(*st["inputs"], **kwargs), samples)


# ---------------------------------------------------------------------------------------------
# Orchestrator: no torch here; kernel_prep prepares the kernels, workers do the GPU work.
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
    if any("export_dispatch" in r for r in results):
        print_export_table(results, tasks)


def print_export_table(results, tasks):
    """--export: the exported module beside our launch of the same cubin (timed before and after it)."""
    head = ["problem", "shape", "eager ms", "compile ms", "ours ms", "ours again", "export ms", "export/ours",
            "spread", "export check"]
    rows, bad = [], 0
    for r in results:
        if "export_dispatch" not in r:
            continue
        ours, again, ex = r.get("ours_ms"), r.get("ours2_ms"), r.get("export_ms")
        if not r.get("export_ok"):
            check = "FAIL " + str(r.get("export_detail", ""))
            bad += 1
        elif r["export_dispatch"].startswith("kernel"):
            check = "ok %.1e" % r.get("export_rel_err", 0)
        else:  # not tuned for this shape: PyTorch's operator ran, and was checked the same way
            check = "ok %.1e, %s" % (r.get("export_rel_err", 0), r["export_dispatch"].split(";")[0])
        rows.append([r["problem"], r["shape"], fmt_ms(r.get("eager_ms")), fmt_ms(r.get("compile_ms")), fmt_ms(ours),
                     fmt_ms(again), fmt_ms(ex), "%.3f" % (ex / ours) if ex and ours else "-",
                     "%.1f%%" % (100 * abs(again - ours) / ours) if again and ours else "-", check])
    widths = [max(len(str(x[i])) for x in rows + [head]) for i in range(len(head))]
    line = lambda x: "  ".join(str(v).ljust(widths[i]) for i, v in enumerate(x))
    print()
    print(line(head))
    print(line(["-" * w for w in widths]))
    for x in rows:
        print(line(x))
    print("\nexport: %d rows, %d failed (a wrong output, or a dispatch that disagrees with TUNED)" % (len(rows), bad))


def dry_run(tasks):
    """--dry-run: the tasks and their resolved launches, no GPU work."""
    for t in tasks:
        kern = t["family"] + ("[" + ",".join("%s=%s" % kv for kv in sorted(t["params"].items())) + "]" if t["params"] else "")
        print("%s  %s  %s" % (t["problem"], t["shape"], kern))
        if t.get("error"):
            print("    ERROR " + t["error"].strip().splitlines()[0][:200])
            continue
        for b in t["plan"]["scratch_bytes"]:
            print("    scratch %d bytes" % b)
        for l in t["plan"]["launches"]:
            args = ",".join("b%d" % a["buffer"] if "buffer" in a else "%s=%d" % (a["dim"], a["value"]) for a in l["args"])
            print("    %s grid %s block %s cluster %s smem %d (%s)" % (
                l["kernel"], "x".join(map(str, l["grid"])), "x".join(map(str, l["block"])),
                "x".join(map(str, l["cluster"])), l["smem"], args))
    bad = sum(1 for t in tasks if t.get("error"))
    print("\n%d tasks, %d with errors" % (len(tasks), bad))
    return 0 if bad == 0 else 2


def orchestrate(args):
    prep = find_prep(args)
    prep_dir = tempfile.mkdtemp(prefix="sbs_prep_")
    path = None
    try:
        cmd = prep_command(args, prep, prep_dir)
        if cmd is None:
            print("no tasks (no problem matches --problems)")
            return 1
        if args.verbose:
            print(" ".join(cmd), file=sys.stderr)
        rc = subprocess.call(cmd, stdout=sys.stderr, cwd=ROOT)
        if rc != 0:
            print("side_by_side: kernelbrain_kernel_prep failed (exit %d)" % rc, file=sys.stderr)
            return 1
        with open(os.path.join(prep_dir, "manifest.json")) as f:
            manifest = json.load(f)
        tasks = tasks_of(manifest, prep_dir)
        if not tasks:
            print("no tasks (check --problems / --shapes / --tiers / --kernels)")
            return 1
        if args.dry_run:
            return dry_run(tasks)
        fd, path = tempfile.mkstemp(prefix="sbs_tasks_", suffix=".json")
        with os.fdopen(fd, "w") as f:
            json.dump(dict(problems=manifest["problems"], tasks=tasks), f)
        print("%d tasks" % len(tasks), file=sys.stderr)
        results = {}
        start = 0
        passthrough = [a for a in sys.argv[1:]]
        while start < len(tasks):
            cmd = [sys.executable, os.path.abspath(__file__), "--worker-tasks", path, "--worker-start", str(start)] + passthrough
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
    finally:
        if path:
            os.unlink(path)
        shutil.rmtree(prep_dir, ignore_errors=True)
    res = [results[i] for i in sorted(results)]
    print()
    print_table(res, tasks)
    if args.out:
        with open(args.out, "w") as f:
            json.dump(dict(results=res, tasks=[{k: v for k, v in t.items() if k not in ("plan", "cubin")} for t in tasks]), f, indent=1)
    export_bad = any("export_dispatch" in r and not r.get("export_ok") for r in res)  # fallbacks are checked too
    return 0 if all(r.get("ok") and not r.get("error") for r in res) and not export_bad else 2


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
    ap.add_argument("--prep", help="kernelbrain_kernel_prep (default: $KERNELBRAIN_KERNEL_PREP, else "
                                   "build/release/kernelbrain_kernel_prep); kernelbrain-cuda-worker must be beside it "
                                   "(or in $KERNELBRAIN_CUDA_WORKER)")
    ap.add_argument("--point", action="append",
                    help="PROBLEM:FAMILY:K=V,K=V (repeatable; FAMILY may be a substring) instead of the central point")
    ap.add_argument("--points-file", help="file of --point values, one per line")
    ap.add_argument("--points-only", action="store_true", help="with --point/--points-file: skip families not named")
    ap.add_argument("--random-points", type=int, default=0, help="also N seeded random admitted points per family")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--problems", type=lambda s: s.split(","),
                    help="comma-separated problem directory names (examples/cuda_problems, or bench/unseen by name)")
    ap.add_argument("--families", type=lambda s: s.split(","), help="substrings of family names to keep")
    ap.add_argument("--shapes", type=lambda s: s.split(","), help="comma-separated shape names")
    ap.add_argument("--tiers", type=lambda s: s.split(","), help="comma-separated tiers (smoke,small,medium,large)")
    ap.add_argument("--references", action=argparse.BooleanOptionalAction, default=None,
                    help="also check each problem's reference.cu against float64 (default: on in catalogue mode)")
    ap.add_argument("--samples", type=int, default=21, help="timed samples per measurement (>= 20)")
    ap.add_argument("--warmup", type=int, default=1, help="untimed calls before the samples, flushed like them (default 1)")
    ap.add_argument("--no-compile", action="store_true", help="skip torch.compile")
    ap.add_argument("--check-only", action="store_true", help="correctness only, no timing")
    ap.add_argument("--conv-tf32", choices=["default", "on", "off"], default="default",
                    help="cuDNN TF32 for PyTorch's fp32 convolutions (PyTorch's default is on)")
    ap.add_argument("--out", help="write all results as JSON here")
    ap.add_argument("--export", action="append", metavar="DIR",
                    help="also time the PyTorch module `kernelbrain export` wrote to DIR (repeatable; see above)")
    ap.add_argument("--dry-run", action="store_true",
                    help="no GPU work: prepare the kernels and print each task's resolved launches")
    ap.add_argument("--verbose", action="store_true")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 4, help="parallel NVRTC compiles")
    ap.add_argument("--worker-tasks", help=argparse.SUPPRESS)
    ap.add_argument("--worker-start", type=int, default=0, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.references is None:
        args.references = bool(args.kernels_from_catalogue)
    if args.samples < 1:
        ap.error("--samples must be positive")
    if args.warmup < 0:
        ap.error("--warmup must be >= 0")
    if args.worker_tasks:
        return worker_main(args)
    if args.table_from:
        return merge_tables(args.table_from, args.out)
    if not args.kernels and not args.kernels_from_catalogue:
        ap.error("give --kernels FILE or --kernels-from-catalogue")
    return orchestrate(args)


if __name__ == "__main__":
    sys.exit(main())
