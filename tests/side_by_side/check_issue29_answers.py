#!/usr/bin/env python3
"""bench/issue29_answers.py on a hand-written journal whose answers are known.

Catalogue kernel c1 (smoke 2.0x, top 1.5x), model kernels: m1 explore (smoke 3.0x: beats the best so far,
top 2.5x), m2 a mutation of m1 (smoke 2.5x: beats neither m1 nor the best so far), m3 refused by the gate
when measured (compile: an outcome with that verdict), m4 a mutation of c1 (smoke 2.2x: beats its parent, not the
best), m5 refused by the policy gate before any measurement (a rejected event, no outcome). Device seconds: smoke 0.1 each,
top 1.0 (c1) and 3.0 (m1): mean top cost 2.0 s, 4 candidates measured -> 8.0 s instead of 4.4 s (0.55x).
"""
import importlib.util
import json
import os
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
spec = importlib.util.spec_from_file_location("answers", os.path.join(HERE, "..", "..", "bench", "issue29_answers.py"))
answers = importlib.util.module_from_spec(spec)
spec.loader.exec_module(answers)


def ev(kind, i, rung=0, speedup=None, stage="pass", note="", cand=None):
    d = {"type": "event", "kind": kind, "id": i, "rung": rung, "verdict": {"stage": stage, "detail": ""},
         "score": None if speedup is None else {"value": speedup, "speedup": speedup}, "note": note}
    if cand is not None:
        d["candidate"] = cand
    return d


def out(i, rung, secs, stage="pass"):
    return {"type": "outcome", "id": i, "rung": rung, "device_seconds": secs, "verdict": {"stage": stage, "detail": ""}}


lines = [
    {"type": "header", "problem": "toy", "strategy": "default+model", "evaluator": "cuda/v2; device: Card X; gate: on",
     "ladder": "smoke,confirm/0"},
    ev("proposed", "c1", note="expert:fam", cand={"family": "fam"}),
    ev("measured", "c1", 0, 2.0), out("c1", 0, 0.1),
    ev("proposed", "m1", note="llm:explore", cand={"family": "llm"}),
    ev("measured", "m1", 0, 3.0), out("m1", 0, 0.1),
    ev("proposed", "m2", note="llm:mutate:fam", cand={"family": "llm", "parent": "m1"}),
    ev("measured", "m2", 0, 2.5), out("m2", 0, 0.1),
    ev("proposed", "m3", note="llm:explore", cand={"family": "llm"}),
    out("m3", 0, 0.0, stage="compile"),
    ev("proposed", "m4", note="llm:mutate:fam", cand={"family": "llm", "parent": "c1"}),
    ev("measured", "m4", 0, 2.2), out("m4", 0, 0.1),
    ev("proposed", "m5", note="llm:explore", cand={"family": "llm"}),
    ev("rejected", "m5", 0, None, stage="policy"),
    ev("measured", "c1", 1, 1.5), out("c1", 1, 1.0),
    ev("measured", "m1", 1, 2.5), out("m1", 1, 3.0),
]

failures = []


def check(name, got, want):
    if got != want:
        failures.append(f"{name}: got {got!r}, want {want!r}")


with tempfile.TemporaryDirectory() as d:
    path = os.path.join(d, "journal.jsonl")
    with open(path, "w") as f:
        f.write("\n".join(json.dumps(x) for x in lines) + "\n")
        f.write('{"type": "event", "kind": "meas')  # a torn last line, as a killed run leaves it
    r = answers.analyse(path)
    check("device", r["device"], "Card X")
    check("top rung", r["top"], 1)
    check("model kernels", r["model"], 5)
    check("refused", dict(r["refused"]), {"compile": 1, "policy": 1})
    check("smoke speed-ups", sorted(r["smoke"]), [2.2, 2.5, 3.0])
    check("top speed-ups", r["top_speed"], [2.5])
    check("beat the best so far", r["beat_best"], 1)
    check("mutations", (r["mutate"], r["beat_parent"], r["parent_known"]), (2, 1, 2))
    check("spent", {k: round(v, 6) for k, v in r["spent"].items()}, {0: 0.4, 1: 4.0})
    check("stopped", dict(r["stopped"]), {0: 2, 1: 2})
    check("mean top cost", r["mean_top"], 2.0)
    check("candidates", r["candidates"], 4)
    # The printed tables carry the same figures.
    import io
    import contextlib
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        answers.main([path])
    text = buf.getvalue()
    for want in ("| 5 | compile 1, policy 1 | 3 | 2.50x (3.00x) | 1 | 1 of 2 | 1 | 2.50x |", "| 0.40, 4.00 | 2, 2 | 2.000 s | 8.00 s | 0.55x |"):
        if want not in text:
            failures.append(f"table lacks {want!r}:\n{text}")

if failures:
    print("\n".join(failures))
    sys.exit(1)
print("issue29_answers: all checks passed")
