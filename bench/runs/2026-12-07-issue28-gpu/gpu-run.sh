#!/usr/bin/env bash
# Issue 28 on the GPU, 2026-12-07, with programs from tools/build-for-h200.sh (.h200/new, carried).
#   part 1: real CUDA searches of default and exhaustive, 3 seeds each, on sdpa_fp16 (8 s) and softmax
#           (20 s), one journal per run (bench/journal_reach.py reads them: device seconds to 5% of the
#           best, and what the sanitizer and ncu runs cost); then, with the call's time left (TOTAL, the
#           second argument), the gpu-labelled tests and the two landscapes no design decision saw
#           (bench/unseen, recorded as bench/recordings were: --seed 1 --samples 20 --warmup 2, each under a
#           time limit: a partial sweep is a uniform sample). The archive is rewritten after each stage.
#   part 2: the gpu-labelled tests, then a third new landscape: sdpa (fp32) on this card, as long as the
#           call has time.
#   part 3: (a session left with under five minutes of device time) the profiler's GPU tests, the
#           rationing's included, then sdpa_fp16 default against exhaustive at 8 s, seed 1 only.
# Everything comes back in $OUT/part<N>.tgz; a short table is printed last.
set -u
PART=${1:-1}
TOTAL=${2:-570}  # seconds this call may take (the device's limit for it, less a margin)
ROOT=$(pwd)
BIN=$ROOT/.h200/new
W=$OUT/p$PART
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
pack() { tar czf "$OUT/part$PART.tgz" -C "$OUT" "p$PART"; }
if [ "$PART" = 1 ]; then
  search sdpa_fp16 8s
  python3 bench/journal_reach.py "$W"/journals/*.jsonl > "$W/reach.md" 2>&1; pack
  search softmax 20s
  python3 bench/journal_reach.py "$W"/journals/*.jsonl > "$W/reach.md" 2>&1; pack
  left=$(( TOTAL - $(el) ))
  if [ $left -gt 100 ]; then
    export KERNELBRAIN_CACHE_DIR=$OUT/cache-tests
    timeout $(( left > 260 ? 240 : left - 20 )) "$BIN/kernelbrain_gpu_tests" > "$W/logs/gpu.cuda_backend.log" 2>&1
    echo "gpu.cuda_backend rc $? at $(el) s: $(grep -E 'test cases' "$W/logs/gpu.cuda_backend.log")" >> "$W/logs/rc.txt"
    pack
  fi
  left=$(( TOTAL - $(el) ))
  per=$(( (left - 50) / 2 )); [ $per -gt 75 ] && per=75
  if [ $per -ge 30 ]; then
    record softmax_vocab bench/unseen/softmax_vocab $per
    record rmsnorm_convnet bench/unseen/rmsnorm_convnet $per
  fi
elif [ "$PART" = 3 ]; then
  KERNELBRAIN_CACHE_DIR=$OUT/cache-tests timeout $(( TOTAL / 3 )) "$BIN/kernelbrain_gpu_tests" -tc='profiler*' \
    > "$W/logs/gpu.profiler.log" 2>&1
  echo "gpu profiler tests rc $? at $(el) s: $(grep -E 'test cases' "$W/logs/gpu.profiler.log")" >> "$W/logs/rc.txt"
  pack
  search sdpa_fp16 8s 1
  python3 bench/journal_reach.py "$W"/journals/*.jsonl > "$W/reach.md" 2>&1
else
  export KERNELBRAIN_CACHE_DIR=$OUT/cache-tests
  timeout 300 "$BIN/kernelbrain_gpu_tests" > "$W/logs/gpu.cuda_backend.log" 2>&1
  echo "gpu.cuda_backend rc $? at $(el) s: $(grep -E 'test cases' "$W/logs/gpu.cuda_backend.log")" >> "$W/logs/rc.txt"
  left=$(( 560 - $(el) ))
  [ $left -gt 120 ] && record sdpa_h100 sdpa $(( left - 70 ))
fi
cat "$W/logs/env.txt" "$W/logs/rc.txt"
[ -f "$W/reach.md" ] && cat "$W/reach.md"
for f in "$W"/journals/*.jsonl; do [ -f "$f" ] && gzip -9 "$f"; done
rm -rf "$OUT"/cache-*
tar czf "$OUT/part$PART.tgz" -C "$OUT" "p$PART" && rm -rf "$W"
echo "call total $(el) s"
