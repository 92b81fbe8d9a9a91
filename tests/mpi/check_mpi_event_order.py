#!/usr/bin/env python3
"""kernelbrain tune --mpi makes the same search as one process: the same fixed-seed synthetic search
(--in-flight 6, 300 evaluations) run once in one process and once over three MPI ranks on loopback,
each with --journal, writes the same journal events (kind, candidate id, rung, seq, in seq order; and
every other field of each event too), several hundred of them, with evaluations on more than one rank.

Usage: check_mpi_event_order.py --cli PATH --work DIR [--mpirun mpirun] [--keep DIR]
--keep DIR writes both journals, gzipped, into DIR (for a committed log).
Exit 0: passed; 1: failed (what failed is printed); 77: skipped (no mpirun), unless
KB_REQUIRE_MPI=1, which makes a skip a failure (CI installs Open MPI)."""
import argparse
import collections
import gzip
import json
import os
import shutil
import subprocess
import sys

# The search compared: the one docs/results.md describes ("MPI on the CPU").
SEARCH = ["synthetic:7", "--seed", "1", "--in-flight", "6", "--budget", "300evals", "--no-progress"]
MIN_EVENTS = 500
RANKS = 3

failures = []


def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what)
    if not ok:
        failures.append(what)
    return ok


def read_journal(path):
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.endswith("\n")]


def events(lines):
    """The journal's events in seq order (a run that was never resumed: no segment is superseded)."""
    return sorted((l for l in lines if l["type"] == "event"), key=lambda e: e["seq"])


def key(e):
    return (e["kind"], e["id"], e["rung"], e["seq"])


def first_difference(a, b, project=key):
    """The first position where the two event lists differ under `project` (a shorter list differs
    where it ends), or None."""
    for i, (x, y) in enumerate(zip(a, b)):
        if project(x) != project(y):
            return i
    return None if len(a) == len(b) else min(len(a), len(b))


def comparator_sees_a_swap(evs):
    """The comparison must fail on the same events in another order: swap the first two neighbours
    that differ (a dispatch and a measurement, say) and expect it to report their position."""
    for i in range(len(evs) - 1):
        if (evs[i]["kind"], evs[i]["id"], evs[i]["rung"]) != (evs[i + 1]["kind"], evs[i + 1]["id"], evs[i + 1]["rung"]):
            swapped = [dict(e) for e in evs]
            swapped[i], swapped[i + 1] = swapped[i + 1], swapped[i]
            # The swapped events keep their own seq, as a journal written in another order would not:
            # renumber, so that only the order of (kind, id, rung) tells them apart.
            for n, e in enumerate(swapped, start=1):
                e["seq"] = n
            return first_difference(evs, swapped) == i
    return False


def run(cmd, env, what):
    r = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600)
    if not check(r.returncode == 0, f"{what} exits 0 (got {r.returncode})"):
        print(r.stdout[-3000:], r.stderr[-3000:])
        return None
    check("evaluation budget spent" in r.stdout, f"{what}: the search ran to its budget")
    return r


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cli", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--mpirun", default="mpirun")
    ap.add_argument("--keep", help="write both journals here, gzipped")
    args = ap.parse_args()
    if shutil.which(args.mpirun) is None:
        print(f"SKIPPED: {args.mpirun} not found (apt-get install openmpi-bin)")
        return 1 if os.environ.get("KB_REQUIRE_MPI") == "1" else 77
    shutil.rmtree(args.work, ignore_errors=True)
    os.makedirs(args.work)
    env = dict(os.environ)
    env["KERNELBRAIN_CACHE_DIR"] = os.path.join(args.work, "cache")
    one = os.path.join(args.work, "one-process.jsonl")
    mpi = os.path.join(args.work, f"mpi-np{RANKS}.jsonl")

    one_cmd = [args.cli, "tune"] + SEARCH + ["--journal", one]
    print("one process: " + " ".join(one_cmd[1:]))
    if run(one_cmd, env, "one process") is None:
        return 1

    # Open MPI refuses to run as root (CI) unless told; loopback TCP only, ranks unbound on few cores.
    env.update({"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1", "OMPI_MCA_plm_rsh_agent": "",
                "OMPI_MCA_pml": "ob1"})
    mpi_cmd = [args.mpirun, "-np", str(RANKS), "--oversubscribe", "--bind-to", "none", "--mca", "btl", "self,tcp",
               "--mca", "btl_tcp_if_include", "lo", "--mca", "oob_tcp_if_include", "lo",
               args.cli, "tune"] + SEARCH + ["--mpi", "--journal", mpi]
    print(f"{RANKS} ranks:   mpirun -np {RANKS} ... tune " + " ".join(SEARCH + ["--mpi", "--journal", mpi]))
    r = run(mpi_cmd, env, f"mpirun -np {RANKS} kernelbrain tune --mpi")
    if r is None:
        return 1
    check(f"rank {RANKS - 1}" in r.stderr and "evaluation pool:" in r.stderr,
          "rank 0 says its pool holds the other ranks' members")

    a, b = events(read_journal(one)), events(read_journal(mpi))
    print(f"events: one process {len(a)}, {RANKS} ranks {len(b)}")
    check(len(a) >= MIN_EVENTS, f"the search is not trivial: at least {MIN_EVENTS} events (got {len(a)})")
    check([e["seq"] for e in a] == list(range(1, len(a) + 1)) and [e["seq"] for e in b] == list(range(1, len(b) + 1)),
          "each journal's events are numbered 1..N without a gap")
    diff = first_difference(a, b)
    check(diff is None, "the same events (kind, candidate id, rung, seq) in the same order; first differing position: "
          + ("none" if diff is None else f"{diff} (one process {key(a[diff]) if diff < len(a) else 'ended'}, "
                                         f"{RANKS} ranks {key(b[diff]) if diff < len(b) else 'ended'})"))
    full = first_difference(a, b, project=lambda e: json.dumps(e, sort_keys=True))
    check(full is None, "every field of every event is the same too (verdicts, scores, notes, candidates); "
          f"first differing position: {'none' if full is None else full}")
    kinds = collections.Counter(e["kind"] for e in a)
    print("event kinds: " + ", ".join(f"{k} {n}" for k, n in sorted(kinds.items())))
    members = collections.Counter(l["member"].split(" ")[1] if l["member"].startswith("rank ") else l["member"]
                                  for l in read_journal(mpi) if l["type"] == "outcome")
    print(f"evaluations per rank ({RANKS} ranks): " + ", ".join(f"rank {m} {n}" for m, n in sorted(members.items())))
    check(len(members) >= 2, f"evaluations ran on more than one rank ({len(members)})")
    check(comparator_sees_a_swap(a), "the comparison fails on the same events with two neighbours swapped")

    if args.keep:
        os.makedirs(args.keep, exist_ok=True)
        for path in (one, mpi):
            with open(path, "rb") as src, gzip.open(os.path.join(args.keep, os.path.basename(path) + ".gz"), "wb") as dst:
                shutil.copyfileobj(src, dst)
    if failures:
        print(f"{len(failures)} check(s) failed")
        return 1
    print("all checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
