#!/usr/bin/env bash
# Issue 10 on the H200: the model in the loop through the exchange client, one round per device call.
#   PART=tests  build, then ctest -L gpu (the profiler test: uncoalesced and register-starved kernels)
#   PART=first  the GPU profiler tests only, then a round (one device call)
#   PART=round  build the CLI and the worker, then run (or resume) the default composition with a model
#               for softmax, linear_relu_div (strict fp32) and sdpa_fp16 through --exchange; each search
#               stops at "waiting for N answers" (exit 75) or at its budget. State (journals, prompt and
#               answer files) lives in this folder's state/ and travels with the working tree.
#   PART=final  as round, then the side-by-side of the best model-written and best catalogue kernels
#               against PyTorch eager and torch.compile, and the journal summaries.
# Everything comes back in $OUT/issue10-<part>.tar.gz; the last lines printed are a short table.
set -uo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
cd "$HERE/../../.."
OUT=${OUT:-/tmp/out}
LOGS=$OUT/logs
mkdir -p "$LOGS"
t0=$(date +%s)
PART=${PART:-round}
BUDGET=${KB_BUDGET:-30s}
PROBLEMS=${KB_PROBLEMS:-softmax linear_relu_div sdpa_fp16}
targets="kernelbrain_cli kernelbrain_cuda_worker kernelbrain_kernel_prep"
{ date -u; nvidia-smi -L; command -v ncu; ncu --version 2>&1 | tail -1; } > "$LOGS/env.txt" 2>&1
cmake -S . -B build/release -G Ninja -DCMAKE_BUILD_TYPE=Release > "$LOGS/configure.log" 2>&1
cmake --build build/release -j "$(nproc)" --target $targets > "$LOGS/build.log" 2>&1 || { tail -40 "$LOGS/build.log"; exit 1; }
case "$PART" in tests|first)
  cmake --build build/release -j "$(nproc)" --target kernelbrain_gpu_tests > "$LOGS/build-gpu-tests.log" 2>&1 ||
    { echo "GPU tests did not build:"; grep -E "error" "$LOGS/build-gpu-tests.log" | head -10; } ;;
esac
echo "built in $(( $(date +%s) - t0 )) s"
K=build/release/apps/kernelbrain/kernelbrain
case "$PART" in
  tests)
    timeout ${KB_TIMEOUT:-420} ctest --test-dir build/release -L gpu --output-on-failure > "$LOGS/ctest-gpu.log" 2>&1
    echo "== ctest -L gpu rc $?, $(( $(date +%s) - t0 )) s =="
    grep -E "Test +#|tests passed|tests failed|profil|diagnos|TEST CASE|ERROR|CHECK" "$LOGS/ctest-gpu.log" | tail -40
    ;;
  first|round|final)
    if [ "$PART" = first ]; then
      timeout 120 build/release/tests/kernelbrain_gpu_tests -tc='*profil*,*diagnos*' > "$LOGS/gpu-profiler.log" 2>&1
      echo "== gpu profiler tests rc $? ($(( $(date +%s) - t0 )) s)"
      grep -vE "^\s*$" "$LOGS/gpu-profiler.log" | tail -25
    fi
    for p in $PROBLEMS; do
      [ "${KB_SKIP_SEARCH:-0}" = 1 ] && break
      S=$HERE/state/$p
      mkdir -p "$S"
      resume=""
      [ -f "$S/journal.jsonl" ] && resume="--resume"
      # The last round (KB_EXCHANGE_WAIT set): a prompt nobody answered within that many seconds is recorded
      # as failed and the search goes on to the end of its budget, evaluating every answered kernel.
      wait_opt=""
      [ -n "${KB_EXCHANGE_WAIT:-}" ] && wait_opt="--exchange-wait $KB_EXCHANGE_WAIT"
      timeout ${KB_SEARCH_TIMEOUT:-120} $K tune "$p" --backend cuda --budget "$BUDGET" --seed 1 $wait_opt \
        --exchange "$S/exchange" --journal "$S/journal.jsonl" --best-out "$S/best.json" --no-progress $resume \
        > "$S/tune-$(date +%H%M%S).log" 2>&1
      rc=$?
      echo "== $p rc $rc ($(( $(date +%s) - t0 )) s): $(grep -E 'stop reason' "$S"/tune-*.log | tail -1 | sed 's/ \+/ /g')"
      grep -hE "evaluations|model replies|model tokens|  speedup|  family|cache hits" $(ls -t "$S"/tune-*.log | head -1)
    done
    if [ "$PART" = final ] && [ "${KB_CATALOGUE:-0}" = 1 ]; then
      # Without a model (the catalogue alone), long enough for promotions to the profiled top rung:
      # the journal's top-rung outcomes carry Nsight Compute diagnoses.
      for p in $PROBLEMS; do
        S=$HERE/state/$p
        rm -f "$S/catalogue-only.jsonl"
        timeout 100 $K tune "$p" --backend cuda --budget "${KB_CATALOGUE_BUDGET:-8s}" --seed 1 \
          --journal "$S/catalogue-only.jsonl" --no-progress > "$S/catalogue-only.log" 2>&1
        echo "== catalogue-only $p rc $?: $(grep 'stop reason' "$S/catalogue-only.log" | sed 's/ \+/ /g')"
        python3 - "$S/catalogue-only.jsonl" <<'PY'
import json, sys
top = None
n = d = ncu = 0
for l in open(sys.argv[1]):
    o = json.loads(l)
    if o["type"] == "header":
        top = len(o["ladder"].split("/")[0].split(",")) - 1
    if o["type"] == "outcome" and o["rung"] == top and o["verdict"]["stage"] == "pass":
        n += 1
        d += bool(o["diagnosis"])
        ncu += bool(o["profile"])
        if o["diagnosis"] and d == 1:
            print("   first diagnosis:", o["id"], "|", o["diagnosis"].replace("\n", " | ")[:600])
print(f"   top-rung passes {n}, with a diagnosis {d}, with ncu metrics {ncu}")
PY
      done
    fi
    if [ "$PART" = final ]; then
      for p in $PROBLEMS; do
        S=$HERE/state/$p
        python3 "$HERE/journal_best.py" "$S/journal.jsonl" "examples/cuda_problems/$p" --out-dir "$S" > "$S/summary.md" 2>&1
        # One run per problem: the best model-written and the best catalogue kernel of each shape, with
        # PyTorch eager and torch.compile, in one process.
        python3 -c 'import json,sys; k=[]
for f in sys.argv[2:]:
    try: k += json.load(open(f))["kernels"]
    except OSError: pass
json.dump({"kernels": k}, open(sys.argv[1], "w"))' "$S/best-both.json" "$S/all-model.json" "$S/best-catalogue.json"
        timeout ${KB_SBS_TIMEOUT:-150} python3 bench/side_by_side.py --kernels "$S/best-both.json" \
          --prep build/release/kernelbrain_kernel_prep --samples 21 --tiers small,medium,large --out "$S/side-by-side.json" > "$S/side-by-side.log" 2>&1
        echo "== side by side $p rc $? ($(( $(date +%s) - t0 )) s)"
        tail -n 14 "$S/side-by-side.log"
      done
    fi
    tar czf "$OUT/issue10-state.tar.gz" -C "$HERE" state
    ;;
esac
tar czf "$OUT/issue10-$PART-logs.tar.gz" -C "$OUT" logs && rm -rf "$LOGS"
