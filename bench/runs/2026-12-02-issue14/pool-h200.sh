#!/usr/bin/env bash
# Issue 14 on one H200 (the machine lent had one GPU): the same softmax search (default strategy, 80
# evaluations, --in-flight 4, seeds 1 and 2, a cold artifact cache each) run three ways, in one call:
#   one   one worker process (today's search)
#   two   --workers-per-device 2: two worker processes on the GPU, one pool member each; their timings
#         take turns, their compiles, sanitizer runs and correctness trials overlap
#   mpi2  mpirun -np 2 --mpi: rank 0 and rank 1 one member each, on the same GPU (same device key, so
#         they take turns timing through rank 0)
# then the costs the throughput model rests on: NVRTC compile seconds per candidate (the candidates of
# one run, compiled one after another with the worker's --compile), and the search rank's own ceiling
# (a synthetic search over 8 MPI ranks, whose evaluations cost nothing). Prebuilt binaries in .h200/new
# (tools/build-for-h200.sh). Everything lands in $OUT.
set -uo pipefail
B=$PWD/.h200/new
K=$B/kernelbrain
export KERNELBRAIN_CUDA_WORKER=$B/kernelbrain-cuda-worker
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
OUT=${OUT:-/tmp/kb-out}
mkdir -p "$OUT/journals" "$OUT/logs"
exec > >(tee "$OUT/logs/run.txt") 2>&1
date -u
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.max.mem --format=csv
mpirun --version | head -1
if ldd "$K" | grep -q "not found"; then
  lib=$(find /usr /opt -name 'libmpi.so.40' 2>/dev/null | head -1)
  [ -n "$lib" ] && export LD_LIBRARY_PATH=$(dirname "$lib")${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
fi
ldd "$K" | grep -E "mpi|not found"
"$KERNELBRAIN_CUDA_WORKER" --version
MPIRUN=(mpirun --oversubscribe --bind-to none --mca btl self,tcp --mca pml ob1 --mca btl_tcp_if_include lo
        --mca oob_tcp_if_include lo)

run() {  # NAME SEED COMMAND...
  local name=$1 seed=$2; shift 2
  local cache; cache=$(mktemp -d)
  local start end
  start=$(date +%s.%N)
  KERNELBRAIN_CACHE_DIR=$cache "$@" > "$OUT/logs/$name-s$seed.txt" 2>&1
  local rc=$?
  end=$(date +%s.%N)
  local took; took=$(python3 -c "print(round($end - $start, 2))")
  echo "$name seed $seed: exit $rc, $took s wall (process)"
  echo "wall_process $took" >> "$OUT/logs/$name-s$seed.txt"
  rm -rf "$cache"
}
common=(tune softmax --backend cuda --budget 80evals --in-flight 4 --no-progress)
for seed in 1 2; do
  run one $seed "$K" "${common[@]}" --seed $seed --journal "$OUT/journals/one-s$seed.jsonl"
  run two $seed "$K" "${common[@]}" --seed $seed --workers-per-device 2 --journal "$OUT/journals/two-s$seed.jsonl"
  run mpi2 $seed "${MPIRUN[@]}" -np 2 env KERNELBRAIN_CACHE_DIR=/tmp/kb-mpi2-cache-$seed "$K" "${common[@]}" --seed $seed --mpi \
    --journal "$OUT/journals/mpi2-s$seed.jsonl"
  rm -rf /tmp/kb-mpi2-cache-$seed
done

# NVRTC seconds per candidate: the sources proposed in one run, compiled one after another.
python3 - "$OUT/journals/one-s1.jsonl" "$OUT/compile" <<'PY'
import json, os, sys
os.makedirs(sys.argv[2], exist_ok=True)
n = 0
for line in open(sys.argv[1]):
    l = json.loads(line)
    if l.get("type") == "event" and l.get("kind") == "proposed" and "candidate" in l:
        with open(os.path.join(sys.argv[2], f"{n:03d}.cu"), "w") as f:
            f.write(l["candidate"]["source"])
        n += 1
print(f"{n} candidate sources")
PY
start=$(date +%s.%N)
count=0
for f in "$OUT"/compile/*.cu; do
  "$KERNELBRAIN_CUDA_WORKER" --compile "$f" "${f%.cu}.cubin" --gpu-architecture=sm_90 -default-device --std=c++17 \
    > /dev/null 2>&1 && count=$((count + 1))
done
end=$(date +%s.%N)
echo "nvrtc: $count compiles in $(python3 -c "print(round($end - $start, 2))") s, one at a time"
rm -f "$OUT"/compile/*.cubin "$OUT"/compile/*.cu
echo "cores: $(nproc)"

# The search rank's ceiling: a synthetic search (no device work) over 8 ranks of this machine, and alone.
for np in 1 8; do
  rm -f /tmp/kb-synth-$np.jsonl
  start=$(date +%s.%N)
  if [ $np = 1 ]; then
    "$K" tune synthetic --budget 20000evals --in-flight 16 --no-progress --journal /tmp/kb-synth-$np.jsonl > "$OUT/logs/synth-np$np.txt" 2>&1
  else
    "${MPIRUN[@]}" -np $np "$K" tune synthetic --budget 20000evals --in-flight 16 --mpi --no-progress \
      --journal /tmp/kb-synth-$np.jsonl > "$OUT/logs/synth-np$np.txt" 2>&1
  fi
  end=$(date +%s.%N)
  echo "synthetic np=$np: 20000 evaluations in $(python3 -c "print(round($end - $start, 2))") s"
  grep -E "wall seconds|best candidate" "$OUT/logs/synth-np$np.txt"
done

# The GPU tests of the CUDA backend's device plumbing and the gate (the children now get CUDA_VISIBLE_DEVICES).
timeout 300 "$B/kernelbrain_gpu_tests" -tc="cuda devices*" 2>&1 | tail -4
date -u
tar -C "$OUT" -czf "$OUT/issue14-h200.tgz" journals logs
