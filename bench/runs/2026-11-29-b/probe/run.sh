#!/usr/bin/env bash
# One-off probe on the H200: time chosen catalogue points side by side and profile three kernels
# with Nsight Compute (hardware counters), to steer kernel work. Output under $OUT.
set -u
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/probe}; mkdir -p "$OUT"
P=bench/runs/2026-11-29-b/probe/points-2026-11-29.txt
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv > "$OUT/env.txt" 2>&1
timeout 300 python3 bench/side_by_side.py --kernels-from-catalogue --points-file $P --points-only --no-references \
  --problems sdpa_fp16,group_conv,linear_relu_div_tf32,softmax \
  --shapes 32x32x512x128,dw_16x64x512x512,1024x8192x8192,4096x393216 --no-compile --out "$OUT/points.json" > "$OUT/points.log" 2>&1
echo "points rc=$?"; tail -30 "$OUT/points.log"
NCU="ncu --clock-control none --target-processes all --section SpeedOfLight --section MemoryWorkloadAnalysis --section ComputeWorkloadAnalysis --section Occupancy --section WarpStateStats --section SchedulerStats --section LaunchStats --section InstructionStats --section SourceCounters -c 1"
prof() { # name kernel-regex point shape
  timeout 100 $NCU -k "regex:$2" python3 bench/side_by_side.py --kernels-from-catalogue --point "$3" --points-only --no-references \
    --problems "${3%%:*}" --shapes "$4" --check-only --jobs 4 > "$OUT/ncu-$1.txt" 2>&1; echo "ncu $1 rc=$?"; }
prof flash sdpa_flash_f16 "sdpa_fp16:flash:BQ=64,BKV=32,STAGES=2" 32x32x512x128
prof tf32 "gemm|mma|linear" "linear_relu_div_tf32:tf32:BM=128,BN=128,BK=32,WM=2,WN=4,STAGES=3,PREC=1,RND=0" 1024x8192x8192
prof dw groupconv_dw_vec_sweep "group_conv:vec-sweep:BX=128,BY=1,VH=16" dw_16x64x512x512
grep -h -E "^  [A-Z].*(Throughput|Duration|Occupancy|Registers|Stall|Issued|Pipe|Bank|Hit Rate)" "$OUT"/ncu-*.txt | head -80
