#!/usr/bin/env python3
"""Summarise a journal of a search with a model: the model's exchanges (purposes, parse statuses,
repairs, tokens), what the gate and the rungs made of the model's kernels, the lineage of the best
model-written kernel, and the best model-written and best catalogue kernel per shape at the top rung,
written as best-model.json and best-catalogue.json (the format bench/side_by_side.py --kernels reads).

    journal_best.py JOURNAL PROBLEM_DIR --out-dir DIR   (prints markdown)
"""
import argparse, collections, json, os, sys

ap = argparse.ArgumentParser()
ap.add_argument("journal")
ap.add_argument("problem_dir")
ap.add_argument("--out-dir", default=".")
a = ap.parse_args()

prob = json.load(open(os.path.join(a.problem_dir, "problem.json")))
shapes = [s["name"] for s in prob["shapes"]]
lines = [json.loads(l) for l in open(a.journal) if l.strip()]
header = next(l for l in lines if l["type"] == "header")
nrungs = len(header["ladder"].split("/")[0].split(","))
top = nrungs - 1
# The latest run segment's view: events after a resume line that supersedes them are dropped.
events, exchanges = [], []
for l in lines:
    if l["type"] == "resume":
        events = [e for e in events if e["seq"] <= l["after_seq"]]
        exchanges = [x for x in exchanges if x["seq"] <= l["after_seq"]]
    elif l["type"] == "event":
        events.append(l)
    elif l["type"] == "exchange":
        exchanges.append(l)
cands = {e["id"]: e["candidate"] for e in events if e["kind"] == "proposed" and "candidate" in e}
outcomes = {}
for l in lines:
    if l["type"] == "outcome":
        outcomes[(l["id"], l["rung"])] = l
baseline = next((l for l in lines if l["type"] == "baseline"), None)
stop = [e["note"] for e in events if e["kind"] == "stopped"]

def is_model(cid):
    return cands.get(cid, {}).get("origin", "").startswith("llm")

print(f"## {prob['name']}\n")
print(f"- stop: {stop[-1] if stop else '(no stop event: killed?)'}")
print(f"- candidates: {len(cands)} ({sum(is_model(c) for c in cands)} written by the model)")
print(f"- model exchanges: {len(exchanges)}; tokens in {sum(x['input_tokens'] for x in exchanges)}, out "
      f"{sum(x['output_tokens'] for x in exchanges)}"
      f"{' (estimated: the exchange client reports no usage)' if any(x['estimated'] for x in exchanges) else ''}")
print(f"- purposes: {dict(collections.Counter(x['purpose'].split(':')[0] for x in exchanges))}")
print(f"- parse statuses: {dict(collections.Counter(x['parse_status'] or x['status'] for x in exchanges))}")
rep = [r for x in exchanges for r in x["repairs"]]
print(f"- replies repaired: {sum(1 for x in exchanges if x['repairs'])} ({'; '.join(sorted(set(rep))) or 'none'})")
verd = collections.Counter()
for (cid, rung), o in outcomes.items():
    if not is_model(cid):
        continue
    if o["gated"] and o["gate"]["stage"] != "pass":
        verd["gate: " + o["gate"]["stage"]] += 1
    elif o["verdict"]["stage"] != "pass":
        verd[f"rung {rung}: " + o["verdict"]["stage"]] += 1
    else:
        verd[f"rung {rung}: measured"] += 1
print(f"- the model's kernels, by outcome: {dict(verd)}")

def best_per_shape(pred):
    best = {}
    for (cid, rung), o in outcomes.items():
        if rung != top or o["verdict"]["stage"] != "pass" or cid not in cands or not pred(cid):
            continue
        for t in o["timings"]:
            s = t["shape"]
            if s not in best or t["median"] < best[s][1]:
                best[s] = (cid, t["median"])
    return best

def write(best, path):
    ks = []
    for s, (cid, med) in sorted(best.items()):
        c = cands[cid]
        launch = c["launch"]
        try:
            launch = json.loads(launch)
        except Exception:
            pass
        ks.append({"problem_dir": a.problem_dir, "problem": prob["name"], "shape": shapes[s], "family": c["family"],
                   "params": c["params"], "candidate": cid, "origin": c["origin"], "source": c["source"],
                   "launch": launch})
    if ks:
        json.dump({"kernels": ks}, open(path, "w"))

bm, bc = best_per_shape(is_model), best_per_shape(lambda c: not is_model(c))
write(bm, os.path.join(a.out_dir, "best-model.json"))
write(bc, os.path.join(a.out_dir, "best-catalogue.json"))
# Every model-written kernel, at every shape ("*"): the search's budget may have ended before the ladder
# reached some of them; bench/side_by_side.py checks each against float64 and times it.
allm = []
for cid, c in cands.items():
    if not is_model(cid):
        continue
    launch = c["launch"]
    try:
        launch = json.loads(launch)
    except Exception:
        pass
    allm.append({"problem_dir": a.problem_dir, "problem": prob["name"], "shape": "*", "family": "model:" + cid,
                 "params": {}, "candidate": cid, "origin": c["origin"], "source": c["source"], "launch": launch})
if allm:
    json.dump({"kernels": allm}, open(os.path.join(a.out_dir, "all-model.json"), "w"))
print("\n| shape | reference (ms) | best catalogue (ms) | best model-written (ms) | model / catalogue |")
print("|---|---|---|---|---|")
for s in sorted(set(bm) | set(bc)):
    ref = baseline["seconds"][s] * 1e3 if baseline else float("nan")
    c = bc.get(s, (None, float("nan")))[1] * 1e3
    m = bm.get(s, (None, float("nan")))[1] * 1e3
    print(f"| {shapes[s]} | {ref:.4f} | {c:.4f} | {m:.4f} | {m / c:.3f} |")

# Lineage of the best model-written kernel (by its time at the largest-weight shape it was timed at).
if bm:
    s = max(bm, key=lambda k: prob["shapes"][k].get("weight", 1.0))
    cid = bm[s][0]
    print(f"\n### Lineage of the best model-written kernel at {shapes[s]}: {cid}\n")
    chain, seen = [], set()
    while cid and cid not in seen:
        seen.add(cid)
        chain.append(cid)
        cid = cands.get(cid, {}).get("parent")
    for cid in reversed(chain):
        c = cands.get(cid, {})
        x = next((x for x in exchanges if x.get("candidate") == cid), None)
        print(f"- {cid} ({c.get('origin', '?')}, family {c.get('family', '?')})")
        if x:
            diag = "diagnosis: yes" if "Profiler diagnosis:\n" in x["user"] else "no diagnosis in the prompt"
            print(f"  - prompt {x['key']}#{x['occurrence']} ({x['purpose']}; {len(x['user'])} bytes, {diag}) -> "
                  f"reply {len(x['reply'])} bytes, parse {x['parse_status']}, repairs {x['repairs'] or 'none'}")
        for r in range(nrungs):
            o = outcomes.get((cid, r))
            if not o:
                continue
            st = o["gate"]["stage"] if o["gated"] and o["gate"]["stage"] != "pass" else o["verdict"]["stage"]
            meds = ", ".join(f"{shapes[t['shape']]} {t['median'] * 1e3:.4f} ms" for t in o["timings"])
            print(f"  - rung {r}: {st}{': ' + meds if meds else ''}")
            if o.get("diagnosis"):
                print("    - diagnosis: " + o["diagnosis"].replace("\n", "; "))
