#!/usr/bin/env bash
# capture.sh KERNELBRAIN OUTDIR: the outputs of ablate, report, export for a before/after diff.
K=$1; O=$2; R=/work/wt-cli
rm -rf "$O"; mkdir -p "$O"; cd "$O"
run() { local name=$1; shift; "$K" "$@" >"$name.out" 2>"$name.err"; echo "$?" >"$name.rc"; }
S=$R/bench/runs/2026-12-01-issue10/state
run ablate_replay ablate $R/bench/recordings/softmax.jsonl.gz --backend replay --seeds 3 --budget 60s
run ablate_replay2 ablate $R/bench/recordings/sdpa_fp16.jsonl.gz $R/bench/recordings/matvec.jsonl.gz --seeds 2 --strategies default,sha:eta=4,random --budget 20s --tolerance 0.1 --out ablate_out.md
run ablate_synth ablate synthetic synthetic:3 --seeds 3 --budget 100evals
run ablate_expect ablate synthetic --seeds 2 --budget 50evals --expect ablate_out.md
run ablate_bad ablate synthetic --strategies default,default --budget 10evals
run ablate_badrec ablate nosuch --recordings $R/bench/recordings --budget 10evals
run report report $S/softmax/journal.jsonl $S/sdpa_fp16/journal.jsonl $S/linear_relu_div/journal.jsonl -o report.html
run report_title report $S/softmax/journal.jsonl --title 'A <b> & title' -o report2.html
run report_bad report $S/softmax/journal.jsonl $S/softmax/journal.jsonl -o report3.html
for p in softmax sdpa_fp16 linear_relu_div; do
  run export_j_$p export $S/$p/journal.jsonl --to exp_j_$p
  run export_b_$p export $S/$p/best.json --to exp_b_$p --problem $R/examples/cuda_problems/$p
done
run export_host export $S/softmax/best.json --problem $R/examples/problems/softmax --to exp_host
run export_exists export $S/softmax/best.json --to exp_j_softmax
# the page's nonce and generation time vary from run to run
sed -i -E 's/nonce-[0-9a-f]{32}/nonce-X/g; s/nonce="[0-9a-f]{32}"/nonce="X"/g; s/"generated":"[^"]*"/"generated":"X"/g' report*.html
