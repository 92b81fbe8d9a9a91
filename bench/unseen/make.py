#!/usr/bin/env python3
"""Makes the problems of bench/unseen/: CUDA problems of examples/cuda_problems at benchmark shapes that are in
no problem file, for recordings that no design decision of the default composition has seen (issue 28). Each
is its source problem with another name, its benchmark shapes replaced (the correctness shapes kept), and its
reference and templates read from the source problem's folder (paths made relative to the new folder).
  bench/unseen/make.py        (writes bench/unseen/<name>/problem.json)"""
import json, os

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))

# name: (source problem, new benchmark shapes (name, dims, tier, weight), why the sizes are realistic)
UNSEEN = {
    "softmax_vocab": ("softmax", [
        ("2048x32000", {"R": 2048, "C": 32000}, "medium", 1),
        ("512x128256", {"R": 512, "C": 128256}, "large", 1),
    ], "softmax over a language model's logits: 2048 tokens of a 32,000-word vocabulary (LLaMA-2), and 512 of "
       "128,256 (LLaMA-3)"),
    "rmsnorm_convnet": ("rmsnorm", [
        ("32x128x128x128", {"B": 32, "C": 128, "H": 128, "W": 128}, "medium", 1),
        ("8x256x224x224", {"B": 8, "C": 256, "H": 224, "W": 224}, "large", 1),
    ], "RMS normalisation of convolutional feature maps: a batch of 32 at 128 channels and 128x128 (a U-Net's "
       "second stage), and 8 images at 224x224 with 256 channels"),
}

# Issue 29, item 5: two realistic shapes per problem that are in no problem file (PyTorch side by side at
# them, bench/side_by_side.py), and the sdpa_fp16 sweep of ../shared/BENCHMARKS.md (D = 64 and 128,
# S = 512 ... 8192 at a constant B*S). Same form as UNSEEN; softmax and rmsnorm use UNSEEN's two.
NEW_SHAPES = {
    "matvec_decode": ("matvec", [
        ("4096x4096", {"M": 4096, "K": 4096}, "medium", 1),
        ("14336x4096", {"M": 14336, "K": 4096}, "large", 1),
    ], "a language model's decode step at batch 1: LLaMA-2-7B's attention projections (4096x4096), and "
       "LLaMA-3-8B's MLP up-projection (14336x4096)"),
    "group_conv_resnext_deep": ("group_conv", [
        ("resnext_32x512x14x14_g32", {"N": 32, "C": 512, "H": 14, "W": 14, "K": 512, "G": 32, "R": 3, "P": 1},
         "medium", 1),
        ("resnext_32x1024x7x7_g32", {"N": 32, "C": 1024, "H": 7, "W": 7, "K": 1024, "G": 32, "R": 3, "P": 1},
         "large", 1),
    ], "the grouped 3x3 convolutions of ResNeXt-50 32x4d's last two stages (stride-1 blocks), batch 32: "
       "width 512 at 14x14 and 1024 at 7x7"),
    "linear_relu_div_llm": ("linear_relu_div", [
        ("512x1024x4096", {"M": 512, "N": 4096, "K": 1024}, "medium", 1),
        ("2048x11008x4096", {"M": 2048, "N": 11008, "K": 4096}, "large", 1),
    ], "a transformer's MLP up-projection: BERT-large's (1024 -> 4096) over 512 tokens, and LLaMA-2-7B's "
       "(4096 -> 11008) over 2048 tokens"),
    "linear_relu_div_tf32_llm": ("linear_relu_div_tf32", [
        ("512x1024x4096", {"M": 512, "N": 4096, "K": 1024}, "medium", 1),
        ("2048x11008x4096", {"M": 2048, "N": 11008, "K": 4096}, "large", 1),
    ], "the same two MLP up-projections as linear_relu_div_llm, in TF32"),
    "sdpa_llm": ("sdpa", [
        ("8x16x1024x64", {"B": 8, "H": 16, "S": 1024, "D": 64}, "medium", 1),
        ("4x32x2048x128", {"B": 4, "H": 32, "S": 2048, "D": 128}, "large", 1),
    ], "attention in fp32: BERT-large's 16 heads of 64 over 1024 tokens at batch 8, and LLaMA-2-7B's prefill "
       "(32 heads of 128, 2048 tokens) at batch 4"),
    "sdpa_fp16_llm": ("sdpa_fp16", [
        ("8x16x1024x64", {"B": 8, "H": 16, "S": 1024, "D": 64}, "medium", 1),
        ("1x32x16384x128", {"B": 1, "H": 32, "S": 16384, "D": 128}, "large", 1),
    ], "fp16 attention: BERT-large's heads over 1024 tokens at batch 8, and a long-context prefill of 16384 "
       "tokens with LLaMA-2-7B's 32 heads of 128"),
    "sdpa_fp16_sweep": ("sdpa_fp16", [
        ("%dx32x%dx%d" % (16384 // s, s, d), {"B": 16384 // s, "H": 32, "S": s, "D": d}, "large", 1)
        for d in (64, 128) for s in (512, 1024, 2048, 4096, 8192)
    ], "BENCHMARKS.md's fp16 sweep: B*S = 16384 tokens, 32 heads, D = 64 and 128, S = 512 ... 8192"),
}


def rel(src_dir, dst_dir, path):
    return os.path.relpath(os.path.join(src_dir, path), dst_dir)


for name, (src, shapes, why) in {**UNSEEN, **NEW_SHAPES}.items():
    src_dir = os.path.join(ROOT, "examples", "cuda_problems", src)
    dst_dir = os.path.join(HERE, name)
    with open(os.path.join(src_dir, "problem.json")) as f:
        d = json.load(f)
    d["name"] = name
    d["description"] = d.get("description", "") + " (bench/unseen: " + why + ")"
    kept = [s for s in d["shapes"] if s["tier"] in ("smoke", "odd", "wide")]
    d["shapes"] = kept + [{"name": n, "dims": dims, "tier": t, "weight": w} for n, dims, t, w in shapes]
    d["reference"]["source"] = rel(src_dir, dst_dir, d["reference"]["source"])
    for c in d["catalogue"]:
        if "template" in c:
            c["template"] = rel(src_dir, dst_dir, c["template"])
    if isinstance(d.get("pytorch"), str):
        d["pytorch"] = rel(src_dir, dst_dir, d["pytorch"])
    os.makedirs(dst_dir, exist_ok=True)
    with open(os.path.join(dst_dir, "problem.json"), "w") as f:
        json.dump(d, f, indent=2)
        f.write("\n")
    print(dst_dir)
