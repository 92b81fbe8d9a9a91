#!/usr/bin/env bash
# Issue 29, item 4: searches without a model find the adopted kernels. A catalogue-only search (no model) on the
# problems as shipped, focused on the shape each adopted kernel won at; prints the best family per shape. Programs
# of tools/build-for-h200.sh (.h200/new, carried), on the GPU machine.
set -u
BIN=$PWD/.h200/new
export KERNELBRAIN_CUDA_WORKER=$BIN/kernelbrain-cuda-worker KERNELBRAIN_CUDA_PROBLEMS=$PWD/examples/cuda_problems KERNELBRAIN_PYTHON=none
mkdir -p "$OUT/adopted"
for e in group_conv@resnext_32x256x56x56_g32 linear_relu_div_tf32@128x512x1024; do
  p=${e%%@*}; s=${e#*@}
  KERNELBRAIN_CACHE_DIR=$OUT/cache-adopted timeout 70 "$BIN/kernelbrain" tune "examples/cuda_problems/$p" --backend cuda --focus "$s" \
    --budget 20s --wall 40 --seed 1 --no-progress --no-pytorch --journal "$OUT/adopted/$p.jsonl" --best-out "$OUT/adopted/$p-best.json" \
    > "$OUT/adopted/$p.log" 2>&1
  echo "$p@$s rc $?: $(grep -A3 'best candidate' "$OUT/adopted/$p.log" | tr -s ' ' | tr '\n' ' ')"
  grep -c '"family":"llm-' "$OUT/adopted/$p.jsonl" | sed "s/^/  events naming an adopted family: /"
done
rm -rf "$OUT/cache-adopted"
