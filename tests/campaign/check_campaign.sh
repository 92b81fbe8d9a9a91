#!/usr/bin/env bash
# tools/campaign.py drives exchange rounds (issue 29, item 1): on the host backend's softmax, a campaign is
# made, a round stops with prompts waiting, a step is refused while they are unanswered, an answer with no
# code is put in place (a test of the plumbing, not a model's answer), the next round resumes the journal
# and journals that exchange as no_code, and the round limit ends the campaign. Each round leaves
# best.json (the best kernel of each shape, bench/side_by_side.py's format).
#   check_campaign.sh KERNELBRAIN
set -euo pipefail
K=$1
HERE=$(cd "$(dirname "$0")" && pwd)
C="python3 $HERE/../../tools/campaign.py"
command -v python3 > /dev/null || { echo "skipped: no python3"; exit 77; }
D=$(mktemp -d)
trap 'rm -rf "$D"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
KERNELBRAIN=$K $C init "$D/c" --problem softmax --budget 200evals --rounds 2 --lag 1 -- --backend host --seed 1
$C step "$D/c" > "$D/step1.txt" || fail "round 1 exited $?"
grep -q "prompts wait for answers" "$D/step1.txt" || fail "round 1 did not stop for answers: $(cat "$D/step1.txt")"
grep -q -- "--llm-lag 1" "$D/step1.txt" || fail "the round does not pass --lag 1 on as --llm-lag: $(cat "$D/step1.txt")"
python3 -c 'import json,sys; k=json.load(open(sys.argv[1]))["kernels"]; assert k and all(x["source"] for x in k), k' \
  "$D/c/best.json" || fail "round 1 left no best.json with the best kernel of each shape"
mapfile -t waiting < <($C pending "$D/c")
[ ${#waiting[@]} -ge 1 ] || fail "no prompt pending after round 1"
if $C step "$D/c" > "$D/refused.txt" 2>&1; then fail "a step ran with prompts unanswered"; fi
grep -q "wait for answers" "$D/refused.txt" || fail "the refusal does not say why: $(cat "$D/refused.txt")"
for p in "${waiting[@]}"; do
  a=${p/prompt-/answer-}
  echo "No kernel from me." > "$a.tmp" && mv "$a.tmp" "$a"
done
$C step "$D/c" > "$D/step2.txt" || fail "round 2 exited $?"
grep -q -- "--resume" "$D/step2.txt" || fail "round 2 did not resume the journal"
$C status "$D/c" > "$D/status.txt"
cat "$D/status.txt"
grep -q "rounds: 2 of at most 2" "$D/status.txt" || fail "status does not count two rounds"
grep -q "no_code ${#waiting[@]}" "$D/status.txt" || fail "the answers with no code are not journaled as no_code"
for p in $($C pending "$D/c"); do a=${p/prompt-/answer-}; echo "none" > "$a"; done
if $C step "$D/c" > "$D/third.txt" 2>&1; then fail "a third round ran past --rounds 2"; fi
grep -q "has run its 2 rounds" "$D/third.txt" || fail "the round limit is not named: $(cat "$D/third.txt")"
# A round that its --wall ended (exit 0, "wall-clock budget spent") leaves the campaign open; one that the
# search's own budget ended closes it. A stand-in for kernelbrain writes each journal's last line.
cat > "$D/fake-kb" <<'FAKE'
#!/usr/bin/env bash
j=""; while [ $# -gt 0 ]; do [ "$1" = --journal ] && j=$2; shift; done
printf '{"type":"event","seq":1,"kind":"stopped","note":"%s"}\n' "$(cat "$(dirname "$j")/next-stop")" >> "$j"
FAKE
chmod +x "$D/fake-kb"
KERNELBRAIN=$D/fake-kb $C init "$D/w" --problem softmax --budget 10s --rounds 5 -- --wall 60
echo "wall-clock budget spent" > "$D/w/next-stop"
$C step "$D/w" > "$D/wall1.txt" || fail "the wall-ended round exited $?"
grep -q "step again" "$D/wall1.txt" || fail "a round ended by its --wall does not say to step again: $(cat "$D/wall1.txt")"
echo "device-second budget spent" > "$D/w/next-stop"
$C step "$D/w" > "$D/wall2.txt" || fail "a round after a wall-ended one did not run: $?"
if $C step "$D/w" > "$D/wall3.txt" 2>&1; then fail "a step ran after the search's budget ended the campaign"; fi
grep -q "is finished" "$D/wall3.txt" || fail "the finished campaign's refusal does not say so: $(cat "$D/wall3.txt")"
# status counts the model's kernels from the journal: proposed, rejected by stage, measured at the top rung,
# new bests there. A journal written here (a ladder of two rungs) stands in for a search's.
mkdir -p "$D/s"
KERNELBRAIN=$D/fake-kb $C init "$D/s" --problem softmax --budget 10s -- --seed 2 > /dev/null
python3 -c 'import json, sys; sys.exit(json.load(open(sys.argv[1]))["tune_args"] != ["--seed", "2", "--llm-lag", "16", "--llm-max-waiting", "16"])' \
  "$D/s/campaign.json" || fail "a campaign does not search at --llm-lag 16 and --llm-max-waiting 16 by default: $(cat "$D/s/campaign.json")"
cat > "$D/s/journal.jsonl" <<'JOURNAL'
{"type":"header","ladder":"smoke,confirm/0"}
{"type":"event","kind":"proposed","id":"a","note":"llm:mutate:x"}
{"type":"event","kind":"proposed","id":"b","note":"llm:explore:x"}
{"type":"event","kind":"proposed","id":"c","note":"llm:mutate:y"}
{"type":"event","kind":"proposed","id":"d","note":"expert:f"}
{"type":"outcome","id":"a","rung":0,"verdict":{"stage":"pass"},"device_seconds":0.5}
{"type":"outcome","id":"a","rung":1,"verdict":{"stage":"pass"},"device_seconds":1.0}
{"type":"event","kind":"new_best","id":"a","rung":1,"score":{"speedup":2.5}}
{"type":"outcome","id":"b","rung":0,"verdict":{"stage":"compile"},"device_seconds":0.0}
{"type":"outcome","id":"c","rung":0,"verdict":{"stage":"correctness"},"device_seconds":0.1}
{"type":"outcome","id":"d","rung":1,"verdict":{"stage":"pass"},"device_seconds":1.0}
{"type":"exchange","key":"k1","occurrence":0,"purpose":"mutate:a:x","parse_status":"ok"}
{"type":"exchange","key":"k2","occurrence":0,"purpose":"repair:c","parse_status":"no_code"}
{"type":"exchange","key":"k1","occurrence":0,"purpose":"mutate:a:x","parse_status":"ok"}
JOURNAL
$C status "$D/s" > "$D/s/status.txt"
grep -q "model kernels: 3 proposed, rejected: compile 1, correctness 1; 1 measured at the top rung, 1 new bests there (best 2.5)" \
  "$D/s/status.txt" || fail "status miscounts the model's kernels: $(cat "$D/s/status.txt")"
grep -q "exchanges journaled: no_code 1, ok 1 (mutate 1, repair 1)" "$D/s/status.txt" \
  || fail "status does not count each exchange once, by kind: $(cat "$D/s/status.txt")"
echo "campaign rounds: ok"
