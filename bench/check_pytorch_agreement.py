#!/usr/bin/env python3
"""Does the search's own PyTorch measurement agree with bench/side_by_side.py's, on the same card?

    python3 bench/check_pytorch_agreement.py JOURNAL... --side-by-side RESULTS.json [--tolerance 0.10]
        [--floor-us 2]

JOURNAL: journals of `kernelbrain tune` on the CUDA backend (the baseline line's "pytorch" holds PyTorch
eager's and torch.compile's medians per benchmark shape, measured by the search). RESULTS.json: what
`bench/side_by_side.py --out` wrote in the same device call, for the same problems and shapes (its rows carry
eager_ms and compile_ms). For every (problem, shape, eager|compile) present in both it prints the two
medians and their difference, and it fails (exit 1) when any pair differs by more than the tolerance (10% by
default, the tolerance of bench/check_side_by_side_agreement.sh, which compares the worker with
side_by_side.py the same way) plus --floor-us microseconds (2 by default: the spread a few-microsecond call
shows between two processes; see the note printed). Exit 2: nothing to compare (a journal without PyTorch
times, or no row of the results at its shapes).
"""
import argparse
import json
import sys


def journal_pytorch(path):
    problem, pytorch = None, None
    with open(path) as f:
        for line in f:
            line = line.strip()
            if not line:
                continue
            o = json.loads(line)
            if o.get("type") == "header":
                problem = o.get("problem")
            elif o.get("type") == "baseline" and "pytorch" in o and pytorch is None:
                pytorch = o["pytorch"]
    return problem, pytorch


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("journals", nargs="+")
    ap.add_argument("--side-by-side", required=True, help="bench/side_by_side.py --out file")
    ap.add_argument("--tolerance", type=float, default=0.10)
    ap.add_argument("--floor-us", type=float, default=2.0)
    args = ap.parse_args()
    with open(args.side_by_side) as f:
        rows = json.load(f)["results"]
    sbs = {}
    for r in rows:
        key = (r.get("problem"), r.get("shape"))
        for side in ("eager", "compile"):
            v = r.get(side + "_ms")
            if v:
                sbs.setdefault((key, side), v * 1e-3)
    compared, bad = 0, 0
    print("| problem | shape | | search (ms) | side_by_side (ms) | difference |")
    print("|---|---|---|---:|---:|---:|")
    for path in args.journals:
        problem, pt = journal_pytorch(path)
        if not pt or pt.get("status") != "measured":
            print("%s: no PyTorch measurement in the journal (%s)" % (path, (pt or {}).get("why", "none")),
                  file=sys.stderr)
            return 2
        for s in pt["shapes"]:
            for side in ("eager", "compile"):
                mine = s.get(side + "_seconds") or 0
                theirs = sbs.get(((problem, s["shape"]), side))
                if not mine or not theirs:
                    continue
                diff = (mine - theirs) / theirs
                ok = abs(mine - theirs) <= args.tolerance * theirs + args.floor_us * 1e-6
                compared += 1
                bad += 0 if ok else 1
                print("| %s | %s | %s | %.4f | %.4f | %+.1f%%%s |" % (problem, s["shape"], side, mine * 1e3, theirs * 1e3,
                                                                   100 * diff, "" if ok else " **FAIL**"))
    if compared == 0:
        print("nothing to compare: no (problem, shape) in both", file=sys.stderr)
        return 2
    print("\n%d pairs compared, %d outside %.0f%% + %.1f us" % (compared, bad, 100 * args.tolerance, args.floor_us))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
