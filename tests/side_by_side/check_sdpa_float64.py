#!/usr/bin/env python3
"""bench/side_by_side.py's float64 attention reference, computed a block of query rows at a time so that the
large sdpa_fp16 sweep shapes fit in memory (the whole score tensor of S = 16384 takes 64 GiB), equals the
whole computation: on the CPU, at sizes where the row blocks do not divide S, against the unblocked formula
and PyTorch's own scaled_dot_product_attention in float64 (where PyTorch has it, >= 2.0; else the softmax
written out with einsum).

Runs under a python3 that imports torch (this one, $KB_TORCH_PYTHON, python3 on the PATH or /usr/bin/python3).
Exits 77 (skipped) without one, unless KB_REQUIRE_REPORT_TOOLS=1 (CI installs it)."""
import importlib.util
import math
import os
import shutil
import subprocess
import sys
from pathlib import Path

try:
    import torch
    import torch.nn.functional as F
except ImportError:
    # Another python3 may have it (the distribution's, beside a pyenv one): run this file with that one.
    if not os.environ.get("KB_SDPA_CHECK_REEXEC"):
        for c in [os.environ.get("KB_TORCH_PYTHON"), shutil.which("python3"), "/usr/bin/python3"]:
            if c and os.path.realpath(c) != os.path.realpath(sys.executable) and os.access(c, os.X_OK) and \
                    subprocess.run([c, "-c", "import torch"], capture_output=True).returncode == 0:
                os.environ["KB_SDPA_CHECK_REEXEC"] = "1"
                os.execv(c, [c, os.path.abspath(__file__)])
    if os.environ.get("KB_REQUIRE_REPORT_TOOLS") == "1":
        sys.exit("side_by_side reference: PyTorch (python3-torch) is required here and missing")
    print("side_by_side reference: skipped: no PyTorch (python3-torch)")
    sys.exit(77)

spec = importlib.util.spec_from_file_location(
    "side_by_side", Path(__file__).resolve().parents[2] / "bench" / "side_by_side.py")
sbs = importlib.util.module_from_spec(spec)
spec.loader.exec_module(sbs)

failures = []
gen = torch.Generator().manual_seed(29)
for B, H, S, D, limit in [(1, 2, 37, 8, 2 * 37 * 5), (2, 3, 100, 72, 1), (1, 1, 16, 32, 1 << 28), (2, 2, 257, 64, 4000)]:
    q, k, v = (torch.randn(B, H, S, D, generator=gen, dtype=torch.float64) for _ in range(3))
    q *= 3  # spread the scores, so that a wrong row block or a wrong scale shows
    whole = torch.softmax(torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(D), dim=-1) @ v
    blocks = sbs.sdpa_float64(q, k, v, max_elements=limit)
    if hasattr(F, "scaled_dot_product_attention"):  # PyTorch >= 2.0
        torch_sdpa = F.scaled_dot_product_attention(q, k, v)
    else:  # Debian 12's 1.13: the softmax written out, max subtracted, row by row
        s = torch.einsum("bhid,bhjd->bhij", q, k) / math.sqrt(D)
        w = torch.exp(s - s.amax(dim=-1, keepdim=True))
        torch_sdpa = torch.einsum("bhij,bhjd->bhid", w / w.sum(dim=-1, keepdim=True), v)
    rows = max(1, limit // (B * H * S))
    err_whole = float((blocks - whole).abs().max())
    err_torch = float((blocks - torch_sdpa).abs().max())
    label = f"B={B} H={H} S={S} D={D}, {rows} query rows a block"
    if blocks.shape != whole.shape or blocks.dtype != torch.float64:
        failures.append(f"{label}: shape {tuple(blocks.shape)} {blocks.dtype}")
    elif not (err_whole <= 1e-12 and err_torch <= 1e-12):
        failures.append(f"{label}: max |blocks - whole| {err_whole:.3g}, |blocks - torch| {err_torch:.3g}")
    else:
        print(f"ok: {label}: max difference {max(err_whole, err_torch):.3g}")
if failures:
    sys.exit("side_by_side reference: " + "; ".join(failures))
print("side_by_side reference: the blocked float64 attention equals the whole computation")
