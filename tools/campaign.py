#!/usr/bin/env python3
"""Drive a search with a model in the loop through exchange rounds: the campaign of docs/llm.md.

Without an API endpoint the model is whoever answers the prompt files (`tune --exchange DIR`): a person, or
a coding agent given one prompt file and nothing else. A campaign is a folder holding the search's journal,
its prompt and answer files and its state (campaign.json), so that it can be driven by hand or by a script
and picked up again after any interruption:

    tools/campaign.py init  runs/softmax --problem softmax --budget 600s --rounds 6 [--strategy S] [--lag N]
                            [--max-waiting N] [-- TUNE ARGS]
    tools/campaign.py step  runs/softmax     # run or resume the search until it waits for answers or ends
    tools/campaign.py pending runs/softmax   # the prompt files still without an answer, one path a line
    tools/campaign.py status runs/softmax    # rounds, prompts answered, tokens (estimated), device s, best

A round is one `step`: it runs `kernelbrain tune ... --exchange DIR/exchange --journal DIR/journal.jsonl`
(with --resume once the journal exists); the search stops with exit 75 when prompts wait for answers. Write
each answer as DIR/exchange/answer-<key>-<n>.md (under another name first, then rename it into place) and
step again. The campaign ends when the search ends (its budget: device seconds, tokens, evaluations) or
when --rounds rounds have run. `step` refuses to run while prompts are unanswered, unless --force.

A round writes the prompts of the generation requests made before the first of their answers is needed: the
search's --llm-lag. A campaign sets it to 16 (--lag): at tune's default of 1 a round of the host softmax wrote
one prompt, at 16 it wrote 6-10, at 32 13-16 (docs/llm.md, Campaigns). Once the model's kernels win, its share
of each request grows, and a round at lag 16 wrote 80 prompts; so a campaign also caps the prompts in flight
at 16 (--max-waiting, tune --llm-max-waiting).
"""
import argparse
import datetime
import json
import os
import re
import shlex
import subprocess
import sys

STATE = "campaign.json"
SUSPENDED = 75  # tune's exit code when the search waits for answers


def state_path(d):
    return os.path.join(d, STATE)


def load(d):
    try:
        with open(state_path(d)) as f:
            return json.load(f)
    except FileNotFoundError:
        sys.exit(f"campaign: {d} is not a campaign (no {STATE}; make one with: tools/campaign.py init {d} ...)")
    except json.JSONDecodeError as e:
        sys.exit(f"campaign: {state_path(d)} is damaged ({e}); the journal and the exchange folder are intact")


def save(d, st):
    tmp = state_path(d) + ".tmp"
    with open(tmp, "w") as f:
        json.dump(st, f, indent=1)
    os.replace(tmp, state_path(d))


def prompts(d):
    """(prompt path, answered?) for every prompt file of the exchange folder, in name order."""
    ex = os.path.join(d, "exchange")
    if not os.path.isdir(ex):
        return []
    out = []
    for name in sorted(os.listdir(ex)):
        m = re.fullmatch(r"prompt-(.+)\.md", name)
        if m:
            out.append((os.path.join(ex, name), os.path.exists(os.path.join(ex, f"answer-{m.group(1)}.md"))))
    return out


def journal_summary(path):
    """Device seconds, estimated tokens, exchanges by status and the best top-rung speedup in a journal."""
    s = {"device_seconds": 0.0, "tokens": 0, "exchanges": {}, "asked": {}, "best": None, "evaluations": 0, "stop": None,
         "model": {"proposed": 0, "rejected": {}, "top": 0, "new_bests": 0, "best": None}}
    if not os.path.exists(path):
        return s
    top = None
    model = set()  # ids of the model's kernels (proposed with an "llm:..." origin)
    exchanges = {}
    rejected = {}  # id -> the stage a model kernel was rejected at (the last verdict wins: a resume re-measures)
    at_top = set()
    with open(path) as f:
        for line in f:
            try:
                e = json.loads(line)
            except json.JSONDecodeError:
                continue  # a torn last line: the next resume supersedes it
            t = e.get("type")
            if t == "header":
                top = len(e.get("ladder", "x/").split("/")[0].split(",")) - 1
            elif t == "outcome":
                s["device_seconds"] += e.get("device_seconds", 0.0)
                s["evaluations"] += 1
                if e.get("id") in model:
                    stage = (e.get("verdict") or {}).get("stage", "pass")
                    if stage != "pass":
                        rejected[e["id"]] = stage
                    elif e.get("rung") == top:
                        at_top.add(e["id"])
            elif t == "event" and e.get("kind") == "proposed" and e.get("note", "").startswith("llm"):
                model.add(e.get("id"))
            elif t == "event" and e.get("kind") == "rejected" and e.get("id") in model:
                # Refused before any measurement (the policy gate): no outcome follows.
                rejected[e["id"]] = (e.get("verdict") or {}).get("stage", "?")
            elif t == "exchange":
                # One per prompt and occurrence: a resumed run journals again what it takes after the
                # point it resumed from (the run it supersedes had journaled it too).
                exchanges[(e.get("key"), e.get("occurrence"))] = e
            elif t == "event" and e.get("kind") == "stopped":
                s["stop"] = e.get("note", "")
            elif t == "event" and e.get("kind") == "new_best" and e.get("rung") == top and e.get("score"):
                s["best"] = e["score"].get("speedup")
                if e.get("id") in model:
                    s["model"]["new_bests"] += 1
                    s["model"]["best"] = e["score"].get("speedup")
    for e in exchanges.values():
        st = e.get("parse_status") or e.get("status", "?")
        s["exchanges"][st] = s["exchanges"].get(st, 0) + 1
        kind = e.get("purpose", "?").split(":")[0]  # explore, mutate, repair
        s["asked"][kind] = s["asked"].get(kind, 0) + 1
        s["tokens"] += int(e.get("input_tokens", 0) or 0) + int(e.get("output_tokens", 0) or 0)
    m = s["model"]
    m["proposed"] = len(model)
    for stage in rejected.values():
        m["rejected"][stage] = m["rejected"].get(stage, 0) + 1
    m["top"] = len(at_top)
    return s


def cmd_init(a):
    os.makedirs(a.dir, exist_ok=True)
    if os.path.exists(state_path(a.dir)) and not a.force:
        sys.exit(f"campaign: {a.dir} already holds a campaign (--force to start it again: the journal is kept)")
    tune_args = list(a.tune_args)
    for option, value in (("--llm-lag", a.lag), ("--llm-max-waiting", a.max_waiting)):  # the campaign's defaults
        if not any(x == option or x.startswith(option + "=") for x in tune_args):
            tune_args += [option, str(value)]
    st = {"problem": a.problem, "budget": a.budget, "strategy": a.strategy, "rounds": a.rounds,
          "kernelbrain": a.kernelbrain, "tune_args": tune_args, "history": [], "finished": None}
    save(a.dir, st)
    print(f"campaign {a.dir}: {a.problem}, budget {a.budget}, at most {a.rounds} rounds; next: tools/campaign.py step {a.dir}")


def cmd_step(a):
    st = load(a.dir)
    if st["finished"]:
        sys.exit(f"campaign: {a.dir} is finished ({st['finished']})")
    waiting = [p for p, done in prompts(a.dir) if not done]
    if waiting and not a.force:
        sys.exit(f"campaign: {len(waiting)} prompts wait for answers (tools/campaign.py pending {a.dir}); "
                 "answer them, or step --force to resume with what is there")
    if len(st["history"]) >= st["rounds"]:
        st["finished"] = f"{st['rounds']} rounds run"
        save(a.dir, st)
        sys.exit(f"campaign: {a.dir} has run its {st['rounds']} rounds")
    journal = os.path.join(a.dir, "journal.jsonl")
    cmd = [st["kernelbrain"], "tune", st["problem"], "--strategy", st["strategy"], "--budget", st["budget"],
           "--exchange", os.path.join(a.dir, "exchange"), "--journal", journal,
           # Each round leaves the best kernel of every shape so far, in bench/side_by_side.py's format.
           "--best-out", os.path.join(a.dir, "best.json")] + st["tune_args"]
    if os.path.exists(journal) and os.path.getsize(journal) > 0:
        cmd.append("--resume")
    n = len(st["history"]) + 1
    os.makedirs(os.path.join(a.dir, "rounds"), exist_ok=True)
    log = os.path.join(a.dir, "rounds", f"{n:02d}.log")
    started = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
    print(f"round {n}: {shlex.join(cmd)}", flush=True)
    with open(log, "w") as f:
        rc = subprocess.run(cmd, stdout=f, stderr=subprocess.STDOUT).returncode
    summary = journal_summary(journal)
    new = [p for p, done in prompts(a.dir) if not done]
    st["history"].append({"round": n, "started": started, "exit": rc, "log": log, "prompts_waiting": len(new),
                          "device_seconds": round(summary["device_seconds"], 3), "best": summary["best"]})
    # A round's --wall (a tune argument) ends the round, not the campaign: the search's own budget does.
    round_wall = rc == 0 and (summary["stop"] or "").startswith("wall-clock budget spent")
    if rc == 0 and not round_wall:
        st["finished"] = "the search ended (its budget, or its scheduler)"
    elif round_wall:
        print(f"round {n}: the round's wall-clock limit ended it; step again to go on")
    elif rc != SUSPENDED:
        print(f"round {n}: kernelbrain exited with {rc} (see {log}); the journal keeps what was measured, "
              f"step again to resume", file=sys.stderr)
    save(a.dir, st)
    with open(log) as f:
        tail = f.read().strip().splitlines()[-3:]
    print("\n".join(tail))
    if rc == SUSPENDED:
        print(f"round {n}: {len(new)} prompts wait for answers: tools/campaign.py pending {a.dir}")
    return 0 if rc in (0, SUSPENDED) else rc


def cmd_pending(a):
    load(a.dir)
    for p, done in prompts(a.dir):
        if not done:
            print(p)


def cmd_status(a):
    st = load(a.dir)
    ps = prompts(a.dir)
    s = journal_summary(os.path.join(a.dir, "journal.jsonl"))
    print(f"campaign {a.dir}: {st['problem']} ({st['strategy']}, budget {st['budget']})")
    print(f"  rounds: {len(st['history'])} of at most {st['rounds']}"
          + (f"; finished: {st['finished']}" if st["finished"] else ""))
    print(f"  prompts: {len(ps)} written, {sum(1 for _, d in ps if d)} answered")
    print(f"  exchanges journaled: " + (", ".join(f"{k} {v}" for k, v in sorted(s["exchanges"].items())) or "none")
          + (" (" + ", ".join(f"{k} {v}" for k, v in sorted(s["asked"].items())) + ")" if s["asked"] else ""))
    print(f"  tokens (estimated: the exchange reports no usage): {s['tokens']}")
    print(f"  evaluations: {s['evaluations']}, device seconds: {s['device_seconds']:.2f}")
    print(f"  best speedup confirmed at the top rung: {s['best'] if s['best'] is not None else '-'}")
    m = s["model"]
    rej = ", ".join(f"{k} {v}" for k, v in sorted(m["rejected"].items())) or "none"
    print(f"  model kernels: {m['proposed']} proposed, rejected: {rej}; {m['top']} measured at the top rung, "
          f"{m['new_bests']} new bests there" + (f" (best {m['best']})" if m["best"] is not None else ""))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    sub = ap.add_subparsers(dest="cmd", required=True)
    i = sub.add_parser("init")
    i.add_argument("dir")
    i.add_argument("--problem", required=True)
    i.add_argument("--budget", required=True, help="as tune --budget: 600s, 600s,200000tokens ...")
    i.add_argument("--rounds", type=int, default=6)
    i.add_argument("--strategy", default="default")
    i.add_argument("--kernelbrain", default=os.environ.get("KERNELBRAIN", "kernelbrain"))
    i.add_argument("--lag", type=int, default=16,
                   help="tune --llm-lag for the campaign (default 16, unless the tune arguments give one): the "
                        "generation requests between sending prompts and needing their answers, so how many "
                        "prompts a round writes (docs/llm.md, Campaigns)")
    i.add_argument("--max-waiting", type=int, default=16,
                   help="tune --llm-max-waiting for the campaign (default 16, unless the tune arguments give one): "
                        "the most prompts a round writes, about (0: no limit)")
    i.add_argument("--force", action="store_true")
    s = sub.add_parser("step")
    s.add_argument("dir")
    s.add_argument("--force", action="store_true")
    for name in ("pending", "status"):
        sub.add_parser(name).add_argument("dir")
    argv = sys.argv[1:]
    extra = argv[argv.index("--") + 1:] if "--" in argv else []  # init: more tune options (--backend, --seed ...)
    a = ap.parse_args(argv[:argv.index("--")] if "--" in argv else argv)
    a.tune_args = extra
    if getattr(a, "rounds", 1) < 1:
        sys.exit("campaign: --rounds must be at least 1")
    return {"init": cmd_init, "step": cmd_step, "pending": cmd_pending, "status": cmd_status}[a.cmd](a) or 0


if __name__ == "__main__":
    sys.exit(main())
