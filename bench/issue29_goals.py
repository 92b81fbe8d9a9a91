#!/usr/bin/env python3
"""Issue 29's goals table from bench/side_by_side.py output: for every benchmark shape measured against
PyTorch (rows with an eager time), the fastest of our kernels that passed the float64 check, its ratio over
eager and torch.compile in the same run, its share of the roofline floor, where it came from (the catalogue,
or the model: family "llm"), and the issue's goal for that row, met or not.

    python3 bench/issue29_goals.py side_by_side.json [more.json ...] > table.md

Goals (same-run ratios over PyTorch eager): linear_relu_div 1024x8192x8192 >= 1.3x; linear_relu_div_tf32 >= 1.0x;
sdpa_fp16 >= 1.0x everywhere and >= 1.15x at S >= 2048; sdpa 32x32x512x128 >= 1.0x; the ResNeXt grouped
convolution >= 1.0x; softmax, rmsnorm, matvec and the depthwise convolutions >= 1.0x (no regression) and >= 90%
of the roofline floor at their large shapes; every problem at the shapes of bench/unseen >= 1.0x."""
import json
import os
import re
import sys

# The problems at shapes in no example file are the folders of bench/unseen (bench/unseen/make.py writes them).
UNSEEN_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "unseen")


def seq_len(shape):
    """S of an sdpa shape named BxHxSxD (None when the name is not of that form)."""
    m = re.fullmatch(r"(\d+)x(\d+)x(\d+)x(\d+)", shape)
    return int(m.group(3)) if m else None


def goal(problem, shape, tier):
    """(minimum ratio over eager, minimum share of the floor or None, why) for one row."""
    if problem != "sdpa_fp16_sweep" and os.path.isdir(os.path.join(UNSEEN_DIR, problem)):
        return 1.0, None, "new shape"
    if problem in ("sdpa_fp16", "sdpa_fp16_sweep"):
        s = seq_len(shape)
        return (1.15 if s and s >= 2048 else 1.0), None, "sdpa_fp16" + (" S >= 2048" if s and s >= 2048 else "")
    if problem == "linear_relu_div":
        return 1.3, None, "strict fp32 GEMM"
    if problem in ("linear_relu_div_tf32", "sdpa"):
        return 1.0, None, problem
    if problem == "group_conv" and shape.startswith("resnext"):
        return 1.0, None, "ResNeXt"
    if problem in ("softmax", "rmsnorm", "matvec", "group_conv"):
        return 1.0, (0.9 if tier == "large" or shape.startswith("dw_16x64") else None), "no regression"
    return 1.0, None, "other"


def main(paths):
    rows = {}
    for p in paths:
        for r in json.load(open(p))["results"]:
            if r.get("kind") != "kernel" or not r.get("ok") or not r.get("eager_ms") or not r.get("ours_ms"):
                continue
            key = (r["problem"], r["shape"])
            if key not in rows or r["ours_ms"] < rows[key]["ours_ms"]:
                rows[key] = r
    print("| problem | shape | ours ms | eager ms | compile ms | vs eager | vs compile | % of floor | source | goal | met |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---|---|---|")
    met_all = 0
    for (prob, shape), r in sorted(rows.items()):
        g, floor_share, why = goal(prob, shape, r.get("tier"))
        ve = r["eager_ms"] / r["ours_ms"]
        vc = r["compile_ms"] / r["ours_ms"] if r.get("compile_ms") else None
        lb = r["lb_ms"] / r["ours_ms"] if r.get("lb_ms") else None
        ok = ve >= g and (floor_share is None or (lb is not None and lb >= floor_share))
        met_all += ok
        src = "model (family llm)" if r.get("family") == "llm" else f"catalogue ({r.get('family')})"
        want = f">= {g:.2f}x" + (f", >= {floor_share:.0%} of floor" if floor_share else "") + f" ({why})"
        comp = f"{r['compile_ms']:.4g}" if r.get("compile_ms") else "-"
        print(f"| {prob} | {shape} | {r['ours_ms']:.4g} | {r['eager_ms']:.4g} | {comp} | {ve:.2f}x | "
              f"{(f'{vc:.2f}x' if vc else '-')} | {(f'{lb:.0%}' if lb else '-')} | {src} | {want} | "
              f"{'yes' if ok else 'no'} |")
    print(f"\n{met_all} of {len(rows)} rows meet their goal.")


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    main(sys.argv[1:])
