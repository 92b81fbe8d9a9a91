#!/usr/bin/env bash
# Issue 10, second day, on the H200.
#   PART=tests    build; ctest -L gpu (every GPU test); then the default composition without a model on
#                 softmax, linear_relu_div and sdpa_fp16 (journals: diagnosis-steered template moves)
#   PART=steer    the searches of PART=tests alone (after a scheduler change that does not touch GPU code)
#   PART=overlap  build the CLI and the worker; the default composition with a slow scripted model on
#                 loopback (slow_model.py: LATENCY s per reply) at --llm-lag 0, 1 and 2, and without a
#                 model, each with the same evaluation budget: wall time, device time, replies
# Everything comes back in $OUT/issue10b-<part>.tar.gz; the last lines printed are a short table.
set -uo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
cd "$HERE/../../.."
OUT=${OUT:-/tmp/out}
LOGS=$OUT/logs
mkdir -p "$LOGS"
t0=$(date +%s)
PART=${PART:-tests}
targets="kernelbrain_cli kernelbrain_cuda_worker kernelbrain_kernel_prep"
[ "$PART" = tests ] && targets="$targets kernelbrain_gpu_tests kernelbrain_tests"
{ date -u; git log -1 --format='%H %s' 2>/dev/null; nvidia-smi -L; nvidia-smi --query-gpu=driver_version --format=csv,noheader;
  command -v ncu; ncu --version 2>&1 | tail -1; nvcc --version | tail -1; } > "$LOGS/env.txt" 2>&1
cmake -S . -B build/release -G Ninja -DCMAKE_BUILD_TYPE=Release > "$LOGS/configure.log" 2>&1
cmake --build build/release -j "$(nproc)" --target $targets > "$LOGS/build.log" 2>&1 || { grep -E "error|FAILED" "$LOGS/build.log" | head -20; exit 1; }
echo "built in $(( $(date +%s) - t0 )) s"
K=build/release/apps/kernelbrain/kernelbrain
case "$PART" in
  tests|steer)
    if [ "$PART" = tests ]; then
      timeout ${KB_CTEST_TIMEOUT:-300} ctest --test-dir build/release -L gpu --output-on-failure > "$LOGS/ctest-gpu.log" 2>&1
      echo "== ctest -L gpu rc $? ($(( $(date +%s) - t0 )) s)"
      grep -E "Test +#|tests passed|tests failed|Total Test" "$LOGS/ctest-gpu.log" | tail -12
    fi
    for p in softmax linear_relu_div sdpa_fp16; do
      timeout 100 $K tune "$p" --backend cuda --budget "${KB_BUDGET:-10s}" --seed 1 --journal "$LOGS/$p.jsonl" --no-progress > "$LOGS/$p.log" 2>&1
      echo "== $p rc $? ($(( $(date +%s) - t0 )) s): $(grep -E 'stop reason' "$LOGS/$p.log" | sed 's/ \+/ /g')"
      python3 - "$LOGS/$p.jsonl" <<'PY'
import json, sys
steered = mutations = diag = 0
first = None
for l in open(sys.argv[1]):
    o = json.loads(l)
    if o["type"] == "event" and o["kind"] == "proposed" and o.get("note", "").startswith("mutation:"):
        mutations += 1
        if "(diagnosis:" in o["note"]:
            steered += 1
            first = first or o["note"]
    if o["type"] == "outcome" and o.get("diagnosis"):
        diag += 1
print(f"   outcomes with a diagnosis {diag}; template mutations {mutations}, steered by a diagnosis {steered}; first: {first}")
PY
      grep -hE "  speedup|evaluations|  family" "$LOGS/$p.log" | head -4
    done
    ;;
  overlap)
    LAT=${KB_LATENCY:-6}
    P=${KB_PROBLEM:-softmax}
    python3 "$HERE/slow_model.py" 18431 "$LAT" "examples/cuda_problems/$P" > "$LOGS/slow_model.log" 2>&1 &
    server=$!
    sleep 1
    export KERNELBRAIN_LLM_KEY=loopback
    printf "%-18s %8s %8s %6s %8s  %s\n" run wall_s device_s evals replies stop > "$LOGS/table.txt"
    for run in ${KB_RUNS:-none default-lag0 default-lag1 llm-only-lag0 llm-only-lag1}; do
      model=()
      strategy=${run%-lag*}
      [ "$run" = none ] && strategy=default
      case $run in *lag*) model=(--model slow-scripted --llm-url http://127.0.0.1:18431/v1 --llm-api openai --llm-lag "${run##*lag}" --llm-concurrency 4) ;; esac
      timeout ${KB_RUN_TIMEOUT:-110} $K tune "$P" --backend cuda --strategy "$strategy" --budget "${KB_EVALS:-40evals}" --seed 1 "${model[@]}" \
        --journal "$LOGS/$run.jsonl" --no-progress > "$LOGS/$run.log" 2>&1
      rc=$?
      sum() { grep -E "^  $1 " "$LOGS/$run.log" | head -1 | sed -E "s/^  $1 +//"; }
      printf "%-18s %8s %8s %6s %8s  %s (rc %s)\n" "$run" "$(sum 'wall seconds')" "$(sum 'device seconds')" "$(sum evaluations)" \
        "$(sum 'model replies' | cut -d' ' -f1)" "$(sum 'stop reason')" "$rc" >> "$LOGS/table.txt"
    done
    kill $server
    cat "$LOGS/table.txt"
    ;;
esac
tar czf "$OUT/issue10b-$PART.tar.gz" -C "$OUT" logs && rm -rf "$LOGS"
