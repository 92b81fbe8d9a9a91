#!/usr/bin/env bash
# Issue 28 on the GPU, 2026-12-07, with programs from tools/build-for-h200.sh (.h200/new, carried).
#   The first argument names the stages to run, in order (comma-separated; see the case below):
#   tests (the gpu-labelled tests), sdpa_fp16 and softmax (real CUDA searches of default and exhaustive,
#   3 seeds each, at 8 s and 20 s of device time, one journal per run: bench/journal_reach.py reads them
#   for the device seconds to 5% of the best and what the sanitizer and ncu runs cost), unseen (the two
#   landscapes no design decision saw, bench/unseen, recorded as bench/recordings were: --seed 1
#   --samples 20 --warmup 2, each under a time limit, so a partial sweep is a uniform sample) and
#   sdpa_rec (sdpa fp32 on this card, as long as the call has time). TOTAL, the second argument, is
#   the seconds the call may take. The archive is rewritten after each stage.
# Everything comes back in $OUT/part-<stages>.tgz; a short table is printed last.
set -u
PART=${1:-tests,sdpa_fp16}
TAG=${PART//,/-}
TOTAL=${2:-570}  # seconds this call may take (the device's limit for it, less a margin)
ROOT=$(pwd)
BIN=$ROOT/.h200/new
W=$OUT/p$TAG
mkdir -p "$W/logs" "$W/rec" "$W/journals"
export KERNELBRAIN_CUDA_WORKER=$BIN/kernelbrain-cuda-worker KERNELBRAIN_KERNEL_PREP=$BIN/kernelbrain_kernel_prep
export KERNELBRAIN_CUDA_PROBLEMS=$ROOT/examples/cuda_problems KERNELBRAIN_PYTHON=none
T0=$(date +%s)
el() { echo $(( $(date +%s) - T0 )); }
{ date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; } > "$W/logs/env.txt" 2>&1
record() {  # NAME DIR SECONDS
  KERNELBRAIN_CACHE_DIR=$OUT/cache-rec-$1 timeout $(( $3 + 60 )) "$BIN/kernelbrain" record "$2" --backend cuda --points 0 \
    --seed 1 --samples 20 --warmup 2 --max-shape-seconds 0.5 --time-limit "$3" --out "$W/rec/$1.jsonl" \
    > "$W/logs/record-$1.log" 2>&1
  echo "record $1 rc $? at $(el) s: $(tail -1 "$W/logs/record-$1.log" | cut -c1-240)" >> "$W/logs/rc.txt"
  [ -f "$W/rec/$1.jsonl" ] && gzip -9 -f "$W/rec/$1.jsonl"
}
search() {  # PROBLEM BUDGET [SEEDS]
  for seed in ${3:-1 2 3}; do for st in default exhaustive; do
    wall=$(( TOTAL - $(el) - 25 )); [ $wall -gt 100 ] && wall=100
    [ $wall -lt 20 ] && { echo "tune $1 $st seed $seed skipped: no time left at $(el) s" >> "$W/logs/rc.txt"; continue; }
    KERNELBRAIN_CACHE_DIR=$OUT/cache-$1 timeout $(( wall + 15 )) "$BIN/kernelbrain" tune "$ROOT/examples/cuda_problems/$1" --backend cuda \
      --strategy $st --budget "$2" --wall $wall --seed $seed --journal "$W/journals/$1-$st-$seed.jsonl" \
      > "$W/logs/tune-$1-$st-$seed.log" 2>&1
    echo "tune $1 $st seed $seed rc $? at $(el) s" >> "$W/logs/rc.txt"
  done; done
}
pack() { tar czf "$OUT/part-$TAG.tgz" -C "$OUT" "p$TAG"; }
tests() {  # [doctest filter]
  export KERNELBRAIN_CACHE_DIR=$OUT/cache-tests
  local left=$(( TOTAL - $(el) - 30 )); [ $left -gt 300 ] && left=300
  timeout $left "$BIN/kernelbrain_gpu_tests" ${1:+-tc="$1"} > "$W/logs/gpu.cuda_backend.log" 2>&1
  echo "gpu tests ${1:-all} rc $? at $(el) s: $(grep -E 'test cases' "$W/logs/gpu.cuda_backend.log")" >> "$W/logs/rc.txt"
  unset KERNELBRAIN_CACHE_DIR
}
reach() { python3 bench/journal_reach.py "$W"/journals/*.jsonl > "$W/reach.md" 2>&1; }
# PART is a comma-separated list of stages, run in order (each one packs what it made):
#   tests (every gpu-labelled test case), sdpa_fp16 / softmax (default against exhaustive, 3 seeds),
#   unseen (the two landscapes of bench/unseen), sdpa_rec (sdpa fp32 on this card, with the time left).
for stage in ${PART//,/ }; do
  case $stage in
    tests) tests ;;
    sdpa_fp16) search sdpa_fp16 8s; reach ;;
    sdpa_fp16_more) search sdpa_fp16 8s "4 5 6"; reach ;;
    softmax) search softmax 20s; reach ;;
    unseen) per=$(( (TOTAL - $(el) - 50) / 2 )); [ $per -gt 75 ] && per=75
            if [ $per -ge 30 ]; then record softmax_vocab bench/unseen/softmax_vocab $per
              record rmsnorm_convnet bench/unseen/rmsnorm_convnet $per; fi ;;
    sdpa_rec) left=$(( TOTAL - $(el) - 70 )); [ $left -gt 60 ] && record sdpa_h100 sdpa $left ;;
    *) echo "unknown stage $stage" >> "$W/logs/rc.txt" ;;
  esac
  pack
done
cat "$W/logs/env.txt" "$W/logs/rc.txt"
[ -f "$W/reach.md" ] && cat "$W/reach.md"
for f in "$W"/journals/*.jsonl; do [ -f "$f" ] && gzip -9 "$f"; done
rm -rf "$OUT"/cache-*
tar czf "$OUT/part-$TAG.tgz" -C "$OUT" "p$TAG" && rm -rf "$W"
echo "call total $(el) s"
