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


def rel(src_dir, dst_dir, path):
    return os.path.relpath(os.path.join(src_dir, path), dst_dir)


for name, (src, shapes, why) in UNSEEN.items():
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
