// The Python program that times PyTorch eager and torch.compile for a search (backends/common/
// pytorch_baseline.hpp runs it): one process of its own, on the evaluator's device, with the CUDA
// worker's method. Kept in a header so that the header-only library needs no installed data file;
// tests write it out and run it (tests/test_pytorch_baseline.cpp).
//
// Usage: python3 SCRIPT REQUEST.json RESULT.json. The request (pytorch_baseline.ipp writes it) holds
// the declaration's expression, each shape's tensor sizes and attribute values already evaluated, the
// tolerance, the sample count and the flush size. The result is one JSON object:
//   {"status": "measured" | "unavailable", "why": "...", "torch": "2.11.0", "cuda": "12.8",
//    "driver": 12080, "device": "NVIDIA H100 80GB HBM3", "python": "3.12.3", "settings": "...",
//    "device_seconds": 1.9,
//    "shapes": [{"name": ..., "eager_s": 1e-4, "compile_s": 9e-5, "eager_error": "", "compile_error": "",
//                "checked": true, "eager_ok": true, "eager_rel_err": 1e-7, "compile_ok": true, ...}]}
// It never raises past main(): whatever fails is said in the result ("why", or a shape's *_error).
#pragma once
#include <string_view>

namespace kernelbrain::detail {

inline constexpr std::string_view pytorch_script = R"PY(
import json, math, os, sys, time, traceback

def main(request_path, result_path):
    began = time.perf_counter()
    result = {"status": "unavailable", "why": "", "shapes": [], "device_seconds": 0.0,
              "python": sys.version.split()[0]}
    def finish():
        tmp = result_path + ".tmp"
        with open(tmp, "w") as f:
            json.dump(result, f)
        os.replace(tmp, result_path)
    with open(request_path) as f:
        req = json.load(f)
    try:
        import torch
    except Exception as e:  # no torch, or a broken one
        result["why"] = "cannot import torch (%s: %s)" % (type(e).__name__, str(e).splitlines()[0][:200] if str(e) else "")
        return finish()
    result["torch"] = str(torch.__version__)
    result["cuda"] = str(torch.version.cuda or "")
    device = req.get("device", "cuda")
    if device == "cuda":
        if not torch.cuda.is_available():
            result["why"] = "torch %s sees no CUDA device (torch.cuda.is_available() is false)" % torch.__version__
            return finish()
        try:
            import ctypes
            v = ctypes.c_int(0)
            ctypes.CDLL("libcuda.so.1").cuDriverGetVersion(ctypes.byref(v))
            result["driver"] = int(v.value)
        except Exception:
            result["driver"] = 0
        dev = torch.device("cuda")
        torch.empty(1, device=dev)
        result["device"] = torch.cuda.get_device_name(dev)
    else:
        dev = torch.device("cpu")
        result["device"] = "cpu"
    import torch.nn.functional as F
    precision = req.get("precision", "fp32")
    torch.backends.cuda.matmul.allow_tf32 = precision == "tf32"
    torch.set_float32_matmul_precision("high" if precision == "tf32" else "highest")
    # cuDNN's TF32 for convolutions stays at PyTorch's default (on): what a user of torch gets.
    result["settings"] = "matmul.allow_tf32=%s, float32_matmul_precision=%s, cudnn.allow_tf32=%s" % (
        torch.backends.cuda.matmul.allow_tf32, torch.get_float32_matmul_precision(), torch.backends.cudnn.allow_tf32)

    expression = req["expression"]
    if req.get("compat_requires"):
        obj = torch
        for part in req["compat_requires"].split(".")[1:]:
            obj = getattr(obj, part, None)
            if obj is None:
                expression = req["compat_expression"]
                break
    names = [t["name"] for t in req["inputs"]] + [a[1] for a in req.get("attributes", [])]
    scope = {"torch": torch, "F": F, "math": math}
    try:
        fn = eval("lambda %s: %s" % (", ".join(names), expression), scope)
    except Exception as e:
        result["why"] = "the declared expression does not compile: %s: %s" % (type(e).__name__, e)
        return finish()
    dtypes = {"f32": torch.float32, "f16": torch.float16}
    samples, warmup = max(1, int(req.get("samples", 30))), max(0, int(req.get("warmup", 1)))
    spin = int(req.get("spin_cycles", 1000000))
    flush = None
    if device == "cuda":
        l2 = int(getattr(torch.cuda.get_device_properties(dev), "L2_cache_size", 0) or 0)
        nbytes = int(req.get("flush_bytes", 0)) or (2 * l2 if l2 > 0 else 128 << 20)
        flush = torch.empty(max(1, nbytes // 4), dtype=torch.int32, device=dev)
    spent = [0.0]

    def sync():
        if device == "cuda":
            torch.cuda.synchronize()

    def time_fn(call):
        # The worker's method: per call a flush of the L2, a spin that keeps the GPU busy while Python
        # records the start event and launches, events around the call; warm-up calls untimed; the median.
        t0 = time.perf_counter()
        ts = []
        sync()
        for i in range(warmup + samples):
            if device == "cuda":
                flush.fill_(i)
                torch.cuda._sleep(spin)
                start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                start.record()
                call()
                end.record()
                torch.cuda.synchronize()
                if i >= warmup:
                    ts.append(start.elapsed_time(end) * 1e-3)
            else:
                a = time.perf_counter()
                call()
                b = time.perf_counter()
                if i >= warmup:
                    ts.append(b - a)
        spent[0] += time.perf_counter() - t0
        ts.sort()
        n = len(ts)
        return ts[n // 2] if n % 2 else 0.5 * (ts[n // 2 - 1] + ts[n // 2])

    def compare(out, ref, tol):
        o = out.reshape(-1).double()
        r = ref.reshape(-1)
        if o.numel() != r.numel():
            return False, float("inf"), "%d elements, expected %d" % (o.numel(), r.numel())
        bad = int((~torch.isfinite(o)).sum())
        if bad:
            return False, float("inf"), "%d non-finite elements" % bad
        scale = float(r.abs().max()) if r.numel() else 0.0
        worst = float((o - r).abs().max()) if r.numel() else 0.0
        bound = tol["atol"] + tol["rtol"] * scale
        rel = worst / scale if scale > 0 else worst
        return worst <= bound, rel, "max |error| %.3g, bound %.3g" % (worst, bound)

    gen = torch.Generator(device=dev)
    gen.manual_seed(int(req.get("seed", 1)))
    # From here on the result is written after every shape, so that a run killed at its time limit
    # keeps what it measured.
    result["status"] = "measured"
    deadline = float(req.get("deadline_seconds", 0) or 0)
    for sh in req["shapes"]:
        if deadline > 0 and time.perf_counter() - began > deadline:
            result["why"] = "out of time after %.0f s: shapes from '%s' on were not run" % (
                time.perf_counter() - began, sh["name"])
            break
        row = {"name": sh["name"], "checked": False}
        result["shapes"].append(row)
        try:
            args = []
            for t in req["inputs"]:
                n = 1
                for s in sh["sizes"][t["name"]]:
                    n *= s
                d = t.get("distribution", "normal")
                if d == "normal":
                    x = torch.randn(n, generator=gen, device=dev, dtype=torch.float32)
                elif d == "uniform":
                    x = torch.rand(n, generator=gen, device=dev, dtype=torch.float32)
                else:
                    x = torch.rand(n, generator=gen, device=dev, dtype=torch.float32) + 0.1
                args.append(x.to(dtypes[t.get("dtype", "f32")]).view(sh["sizes"][t["name"]]))
            args += [int(sh["attributes"][a[1]]) for a in req.get("attributes", [])]
            ninputs = len(req["inputs"])
            ref = None
            with torch.no_grad():
                if sh.get("check"):
                    t0 = time.perf_counter()
                    ref = fn(*([a.double() for a in args[:ninputs]] + args[ninputs:]))
                    sync()
                    spent[0] += time.perf_counter() - t0
                try:
                    out = fn(*args)
                    sync()
                    if ref is not None:
                        row["checked"] = True
                        row["eager_ok"], row["eager_rel_err"], row["eager_detail"] = compare(out, ref, req["tolerance"])
                    del out
                    if sh.get("timed"):
                        row["eager_s"] = time_fn(lambda: fn(*args))
                except Exception as e:
                    row["eager_error"] = "%s: %s" % (type(e).__name__, str(e).splitlines()[0][:300] if str(e) else "")
                if req.get("compile", True) and (sh.get("timed") or ref is not None):
                    try:
                        torch._dynamo.reset()
                        cf = torch.compile(fn, dynamic=False)
                        out = cf(*args)
                        sync()
                        if ref is not None:
                            row["compile_ok"], row["compile_rel_err"], row["compile_detail"] = compare(
                                out, ref, req["tolerance"])
                        del out
                        if sh.get("timed"):
                            row["compile_s"] = time_fn(lambda: cf(*args))
                    except Exception as e:
                        row["compile_error"] = "%s: %s" % (type(e).__name__,
                                                           str(e).splitlines()[0][:300] if str(e) else "")
            del args, ref
            if device == "cuda":
                torch.cuda.empty_cache()
        except Exception as e:
            row["error"] = "%s: %s" % (type(e).__name__, str(e).splitlines()[0][:300] if str(e) else "")
        result["device_seconds"] = spent[0]
        finish()
        print("pytorch baseline: shape %s done" % sh["name"], file=sys.stderr, flush=True)
    result["device_seconds"] = spent[0]
    return finish()

if __name__ == "__main__":
    try:
        main(sys.argv[1], sys.argv[2])
    except Exception:
        traceback.print_exc()
        sys.exit(3)
)PY";

}  // namespace kernelbrain::detail
