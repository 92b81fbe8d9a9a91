#!/usr/bin/env python3
"""kernelbrain tune --mpi under mpirun: one host-backend search over three ranks on loopback gets a
complete journal, with work and baselines from every rank; a run whose rank 2 is killed mid-search
(Open MPI then ends the whole job) is resumed from its journal and finishes with nothing measured twice.

Usage: check_mpi_cli.py --cli PATH --work DIR [--mpirun mpirun]
Exit 0: passed; 1: failed (what failed is printed); 77: skipped (no mpirun), unless
KB_REQUIRE_MPI=1, which makes a skip a failure (CI installs Open MPI)."""
import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import time

failures = []


def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what)
    if not ok:
        failures.append(what)
    return ok


def read_journal(path):
    lines = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            if not line.endswith("\n"):
                break  # torn by a kill: the reader ignores it too
            lines.append(json.loads(line))
    return lines


def mpi_command(args, ranks, journal, budget, extra):
    # Open MPI refuses to run as root (CI) unless told; loopback TCP, no InfiniBand probing.
    return [args.mpirun, "-np", str(ranks), "--oversubscribe", "--mca", "btl", "self,tcp",
            "--mca", "btl_tcp_if_include", "lo",
            args.cli, "tune", "softmax", "--backend", "host", "--budget", budget, "--seed", "2",
            "--journal", journal, "--mpi", "--no-progress"] + extra


def mpi_env():
    env = dict(os.environ)
    env.update({"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1",
                "OMPI_MCA_plm_rsh_agent": "", "OMPI_MCA_pml": "ob1"})
    return env


def outcome_keys(lines):
    return [(l["id"], l["rung"]) for l in lines if l["type"] == "outcome"]


def evaluations(lines):
    """Finished evaluations of the run the journal records (events measured or rejected after a
    dispatch, superseded segments dropped as the reader drops them)."""
    events = []
    for l in lines:
        if l["type"] == "resume":
            events = [e for e in events if e["seq"] <= l["after_seq"]]
        elif l["type"] == "event":
            events.append(l)
    finished = sum(1 for e in events if e["kind"] in ("measured", "rejected") and
                   any(d["kind"] == "dispatched" and d["id"] == e["id"] and d["rung"] == e["rung"] for d in events))
    return events, finished


def rank_pids(journal, rank):
    """The pids of the kernelbrain processes of this run (their command line names the journal) that
    are MPI rank `rank`."""
    pids = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                cmd = f.read().split(b"\0")
            if not cmd or not cmd[0].endswith(b"kernelbrain") or journal.encode() not in cmd:
                continue
            with open(f"/proc/{entry}/environ", "rb") as f:
                env = f.read().split(b"\0")
            if f"OMPI_COMM_WORLD_RANK={rank}".encode() in env:
                pids.append(int(entry))
        except OSError:
            continue
    return pids


def complete_run(args):
    journal = os.path.join(args.work, "three-ranks.jsonl")
    r = subprocess.run(mpi_command(args, 3, journal, "24evals", []), env=mpi_env(), capture_output=True,
                       text=True, timeout=900)
    if not check(r.returncode == 0, f"mpirun -np 3 kernelbrain tune --mpi exits 0 (got {r.returncode})"):
        print(r.stdout[-3000:], r.stderr[-3000:])
        return
    check("evaluation budget spent" in r.stdout, "the search ran to its budget")
    check("evaluation pool:" in r.stderr and "rank 1" in r.stderr and "rank 2" in r.stderr,
          "rank 0 says its pool holds the other ranks' members")
    lines = read_journal(journal)
    header = lines[0]
    check(header["type"] == "header", "the journal starts with its header")
    baselines = [l for l in lines if l["type"] == "baseline"]
    slots = sorted(l.get("slot", 0) for l in baselines)
    check(slots == [0, 1, 2], f"one baseline per rank's member, by slot (got {slots})")
    members = {l["member"] for l in baselines}
    check(any(m.startswith("rank 0") for m in members) and any(m.startswith("rank 1") for m in members) and
          any(m.startswith("rank 2") for m in members), f"baselines name their ranks ({sorted(members)})")
    outcomes = [l for l in lines if l["type"] == "outcome"]
    worked = {o["member"].split(" ")[1] for o in outcomes}
    check(len(worked) >= 2, f"evaluations ran on several ranks (ranks {sorted(worked)})")
    keys = outcome_keys(lines)
    check(len(keys) == len(set(keys)), "no evaluation is journaled twice")
    events, finished = evaluations(lines)
    check(events and events[-1]["kind"] == "stopped", "the journal ends with the search's stop")
    check(finished == 24, f"24 evaluations finished (got {finished})")
    check(len(outcomes) == 24, f"24 outcomes journaled (got {len(outcomes)})")


def killed_and_resumed(args):
    journal = os.path.join(args.work, "killed.jsonl")
    # Slowed (each measurement sleeps 400 ms) so that the kill lands mid-search.
    cmd = mpi_command(args, 3, journal, "30evals", ["--slow-eval-ms", "400"])
    p = subprocess.Popen(cmd, env=mpi_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 600
    killed = False
    while time.time() < deadline and p.poll() is None:
        time.sleep(0.3)
        try:
            n = sum(1 for l in read_journal(journal) if l["type"] == "outcome")
        except (OSError, ValueError):
            continue
        if n >= 8:
            pids = rank_pids(journal, 2)
            if pids:
                for pid in pids:
                    os.kill(pid, signal.SIGKILL)
                killed = True
                break
    if not check(killed, "rank 2 was killed after 8 outcomes were journaled"):
        p.kill()
        out, err = p.communicate()
        print(out[-2000:], err[-2000:])
        return
    try:
        out, err = p.communicate(timeout=120)
    except subprocess.TimeoutExpired:
        p.kill()
        out, err = p.communicate()
        check(False, "mpirun ended the job within 120 s of rank 2's death")
        return
    check(p.returncode != 0, f"the job ended with a failure when rank 2 died (exit {p.returncode})")
    before = read_journal(journal)
    done_before = len(outcome_keys(before))
    check(done_before >= 8, f"what was measured before the kill is in the journal ({done_before} outcomes)")
    r = subprocess.run(cmd + ["--resume"], env=mpi_env(), capture_output=True, text=True, timeout=900)
    if not check(r.returncode == 0, f"the resumed job exits 0 (got {r.returncode})"):
        print(r.stdout[-3000:], r.stderr[-3000:])
        return
    check(f"{done_before} finished evaluations will be reused" in r.stderr,
          "the resumed run reuses every evaluation journaled before the kill")
    lines = read_journal(journal)
    keys = outcome_keys(lines)
    check(len(keys) == len(set(keys)), f"nothing was measured twice ({len(keys)} outcomes, {len(set(keys))} distinct)")
    baselines = [l for l in lines if l["type"] == "baseline"]
    check(len(baselines) == 3, f"the baselines were not measured again ({len(baselines)} baseline lines)")
    check(any(l["type"] == "resume" for l in lines), "the journal records the resume")
    events, finished = evaluations(lines)
    check(events and events[-1]["kind"] == "stopped", "the resumed run ends with the search's stop")
    check(finished == 30, f"30 evaluations finished over both runs (got {finished})")
    check("evaluation budget spent" in r.stdout, "the resumed search ran to its budget")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cli", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--mpirun", default="mpirun")
    args = ap.parse_args()
    if shutil.which(args.mpirun) is None:
        why = f"SKIPPED: {args.mpirun} not found (apt-get install openmpi-bin)"
        print(why)
        return 1 if os.environ.get("KB_REQUIRE_MPI") == "1" else 77
    shutil.rmtree(args.work, ignore_errors=True)
    os.makedirs(args.work)
    # One artifact cache for the run (compiled host candidates), not the user's.
    os.environ["KERNELBRAIN_CACHE_DIR"] = os.path.join(args.work, "cache")
    complete_run(args)
    killed_and_resumed(args)
    if failures:
        print(f"{len(failures)} check(s) failed")
        return 1
    print("all checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
