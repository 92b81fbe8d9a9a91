K=/work/main/build/h200/apps/kernelbrain/kernelbrain
for mb in 2 8; do for lag in 1 4 16 32; do
d=/tmp/lm-$mb-$lag; rm -rf $d
python3 /work/main/tools/campaign.py init $d --problem /work/main/examples/problems/softmax --budget 60s,400000tokens --strategy default:mutate_batch=$mb --kernelbrain $K -- --seed 1 --no-pytorch --llm-lag $lag --wall 120 >/dev/null
python3 /work/main/tools/campaign.py step $d >/dev/null 2>&1
echo "mutate_batch=$mb lag=$lag prompts=$(python3 /work/main/tools/campaign.py pending $d | wc -l) $(grep -E '^  (evaluations|device seconds)' $d/rounds/01.log | tr -s ' ' | tr '\n' ' ')"
done; done
