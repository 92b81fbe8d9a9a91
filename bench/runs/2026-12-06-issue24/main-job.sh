#!/usr/bin/env bash
# The README's main job (tools/run-main.sh's three host searches: default strategy, 60 evaluations,
# seed 1) with a given CLI, journals into OUT_DIR; then per problem: the speedup, the wall time, and
# the mean wall seconds of the evaluations that passed the gate (gate + smoke) and of each rung.
#   bash main-job.sh CLI OUT_DIR
set -euo pipefail
cli=$1
out=$2
mkdir -p "$out"
for p in softmax rmsnorm matvec; do
  start=$(date +%s.%N)
  "$cli" tune "$p" --backend host --strategy default --budget 60evals --seed 1 --journal "$out/$p.jsonl" >"$out/$p.log" 2>&1
  end=$(date +%s.%N)
  echo "$p wall $(echo "$end - $start" | bc)" >>"$out/walls.txt"
done
python3 - "$out" <<'PY'
import json, os, re, sys
out = sys.argv[1]
walls = dict(l.split(" wall ") for l in open(os.path.join(out, "walls.txt")).read().split("\n") if l)
print("| problem | speedup (geomean) | search wall s | gated evaluations | gate + smoke, mean s | screen, mean s | confirm, mean s | device s |")
print("|---|---|---|---|---|---|---|---|")
for p in ("softmax", "rmsnorm", "matvec"):
    by_rung = {}
    gated = []
    device = 0.0
    for line in open(os.path.join(out, p + ".jsonl")):
        e = json.loads(line)
        if e.get("type") != "outcome":
            continue
        device += e.get("device_seconds", 0)
        if e.get("gated"):
            gated.append(e["wall_seconds"])
        else:
            by_rung.setdefault(e["rung"], []).append(e["wall_seconds"])
    log = open(os.path.join(out, p + ".log")).read()
    m = re.findall(r"^ +speedup +([0-9.]+x) over", log, re.M)
    mean = lambda v: "%.3f (%d)" % (sum(v) / len(v), len(v)) if v else "-"
    print("| %s | %s | %.0f | %d | %s | %s | %s | %.1f |" % (p, m[-1] if m else "-", float(walls[p]), len(gated), mean(gated),
          mean(by_rung.get(1, [])), mean(by_rung.get(2, [])), device))
PY
