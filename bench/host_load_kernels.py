#!/usr/bin/env python3
"""Helpers of bench/host-eval-under-load.sh.

  host_load_kernels.py ROOT DEST             instantiate the kernels to eval into DEST/*.cpp
  host_load_kernels.py --summary FILE NAME   one table row for a `kernelbrain record` file
"""
import itertools
import json
import os
import re
import sys

# What the README's main job found (docs/results.md), and the kernel issue 24 saw refused under load.
BEST = {
    "softmax": [("vectorized", {"EXP": 1, "UNROLL": 1, "VEC": 8}), ("vectorized", {"EXP": 1, "UNROLL": 2, "VEC": 16})],
    "rmsnorm": [("channel-strided-blocked", {"CU": 2, "HWB": 128, "INV": 0})],
    "matvec": [("vectorized", {"ROWS": 4, "UNROLL": 2, "VEC": 16})],
}


def admitted(space, constraints):
    names = list(space)
    for values in itertools.product(*(space[n] for n in names)):
        point = dict(zip(names, values))
        ok = True
        for c in constraints:
            e = c
            for n in sorted(names, key=len, reverse=True):
                e = re.sub(r"\b%s\b" % n, str(point[n]), e)
            if not eval(e.replace("||", " or ").replace("&&", " and ")):  # the catalogue's own constraints
                ok = False
        if ok:
            yield point


def instantiate(root, dest):
    for prob in ("softmax", "rmsnorm", "matvec"):
        pdir = os.path.join(root, "examples", "problems", prob)
        d = json.load(open(os.path.join(pdir, "problem.json")))
        chosen = []
        every = os.environ.get("ALL", "0")  # 1: each family's first and last point; first: its first
        if every in ("1", "first"):
            for h in d["catalogue"]:
                pts = list(admitted(h["parameters"], h.get("constraints", [])))
                chosen += [(h["name"], pts[0])] + ([(h["name"], pts[-1])] if every == "1" else [])
        if os.environ.get("BEST", "1") == "1":
            chosen += BEST.get(prob, [])
        for fam, p in chosen:
            h = next(x for x in d["catalogue"] if x["name"] == fam)
            src = open(os.path.join(pdir, h["template"])).read()
            for k, v in p.items():
                src = src.replace("${%s}" % k, str(v))
            name = "%s__%s__%s" % (prob, fam, "_".join("%s%s" % kv for kv in sorted(p.items())))
            open(os.path.join(dest, name + ".cpp"), "w").write(src)


def summary(path, name):
    points = gate = timed = refused = 0
    why = {}
    for line in open(path):
        e = json.loads(line)
        if "family" not in e:
            continue
        points += 1
        g = e.get("gate", {}).get("stage", "pass")
        if g == "pass":
            gate += 1
        else:
            why["gate " + g] = why.get("gate " + g, 0) + 1
        for s in e.get("shapes", []):
            if s.get("samples"):
                timed += 1
            else:
                refused += 1
                k = s.get("verdict", {}).get("stage", "?")
                why[k] = why.get(k, 0) + 1
    print("| %s | %d | %d | %d | %d%s |" % (name, points, gate, timed, refused, " " + json.dumps(why) if why else ""))


if __name__ == "__main__":
    if sys.argv[1] == "--summary":
        summary(sys.argv[2], sys.argv[3])
    else:
        instantiate(sys.argv[1], sys.argv[2])
