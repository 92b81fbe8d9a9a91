#!/usr/bin/env python3
"""kernelbrain report in a real browser (CTest: report.browser).

    python3 tests/report/check_report.py --cli build/apps/kernelbrain/kernelbrain --work SCRATCH_DIR

What it checks:
  1. The CLI's tune on the synthetic backend makes two journals of one strategy with different seeds (so
     the seed band is drawn) and prints the report command for its journal ("report: kernelbrain report ...").
  2. A hostile journal (a copy of one of them whose problem name, best kernel's source, family, origin,
     diagnosis and a model exchange hold "</script><script>...</script><img onerror=...>") is made.
  3. One report is made from the three committed H200 journals of bench/runs/2026-12-01-issue10 (an LLM in
     the loop), the two synthetic journals and the hostile one, and loaded in headless Chromium
     (--dump-dom). In the DOM:
       - body has data-kb-rendered="ok" and no data-kb-error (the page's script ran to the end);
       - there is one progress chart per problem and one funnel per (problem, strategy), and EVERY chart
         canvas has data-kb-points > 0 and data-kb-painted > 0 (an empty plot, or Chart.js missing from
         the page, fails here);
       - the candidate table has as many rows as there are distinct (journal, candidate) pairs, counted
         here from the journals' JSON lines (proposed events, superseded ones dropped as the reader does);
       - each H200 problem's section shows its best kernel's source (the incumbent the run ended with:
         its last new_best) exactly, and the sdpa_fp16 lineage holds the text of a model's reply;
       - the page loads nothing: no element with src, no <link>, no <iframe>; it names the Chart.js
         version it inlined;
       - the hostile strings are text: the section's heading, the source and the reply read back exactly,
         and there are no other <script> elements than the page's three, no <img>, no attribute set by an
         injected handler.
  4. A journal with a header and nothing else makes a page that renders, with every chart saying
     "no data" (data-kb-points="0").
  5. Failures exit 2 with a message naming what is wrong: a journal that does not exist, a file that is
     not a journal, no -o, -o into a folder that does not exist, a Chart.js file that does not exist.

  6. PyTorch as the headline: a report of the committed GPU journals in bench/runs/2026-12-06-issue27/journals (CUDA
     searches that timed PyTorch eager and torch.compile themselves) shows, in each problem's section, a
     badge "vs PyTorch eager" and one "vs torch.compile" whose figures are the geometric mean computed here
     from the journal (PyTorch's median / the best kernel's at each shape both timed), red where the kernel
     loses; the per-shape table has PyTorch's columns; the page drawn --over eager renders with data over
     eager, and --over eager on a journal without PyTorch fails naming it.

Without Chromium (chromium, chromium-browser or google-chrome) it prints SKIPPED and exits 77, unless
KB_REQUIRE_REPORT_TOOLS=1 (CI), when that is a failure.
"""
import argparse
import json
import math
import os
import re
import shutil
import subprocess
import sys
import time
from html.parser import HTMLParser
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
ISSUE10 = ROOT / "bench" / "runs" / "2026-12-01-issue10" / "state"
ISSUE27 = ROOT / "bench" / "runs" / "2026-12-06-issue27" / "journals"
H200_PROBLEMS = ["softmax", "sdpa_fp16", "linear_relu_div"]
HOSTILE = '</script><script>alert(1)</script><img src=x onerror="document.body.dataset.kbPwned=1">'
VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"}

failures = []


def check(ok, what):
    if not ok:
        failures.append(what)
        print("FAIL:", what)
    return ok


# ---- the DOM as Chromium dumped it -------------------------------------------------------------------


class Node:
    def __init__(self, tag, attrs, parent):
        self.tag, self.attrs, self.parent, self.kids = tag, dict(attrs), parent, []

    def text(self):
        return "".join(k if isinstance(k, str) else k.text() for k in self.kids)

    def walk(self):
        yield self
        for k in self.kids:
            if isinstance(k, Node):
                yield from k.walk()

    def find_all(self, tag=None, cls=None):
        return [n for n in self.walk() if (tag is None or n.tag == tag)
                and (cls is None or cls in (n.attrs.get("class") or "").split())]


class TreeBuilder(HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.root = Node("#document", {}, None)
        self.at = self.root

    def handle_starttag(self, tag, attrs):
        n = Node(tag, attrs, self.at)
        self.at.kids.append(n)
        if tag not in VOID:
            self.at = n

    def handle_startendtag(self, tag, attrs):
        self.at.kids.append(Node(tag, attrs, self.at))

    def handle_endtag(self, tag):
        n = self.at
        while n is not None and n.tag != tag:
            n = n.parent
        if n is not None and n.parent is not None:
            self.at = n.parent

    def handle_data(self, data):
        self.at.kids.append(data)


def parse_dom(html):
    b = TreeBuilder()
    b.feed(html)
    b.close()
    return b.root


# ---- journals, read here without the library -----------------------------------------------------------


def journal_lines(path):
    """The header, and the events and exchanges that stand (a resume line supersedes those after its seq)."""
    header, events, exchanges = None, [], []
    with open(path, encoding="utf-8") as f:
        for raw in f:
            if not raw.endswith("\n"):
                break  # a torn last line
            if not raw.strip():
                continue
            d = json.loads(raw)
            t = d.get("type")
            if t == "header":
                header = d
            elif t == "resume":
                events = [e for e in events if e["seq"] <= d["after_seq"]]
                exchanges = [x for x in exchanges if x["seq"] <= d["after_seq"]]
            elif t == "event":
                events.append(d)
            elif t == "exchange":
                exchanges.append(d)
    return header, events, exchanges


def distinct_candidates(path):
    _, events, _ = journal_lines(path)
    return {e["id"] for e in events if e["kind"] == "proposed"}


def final_incumbent(path):
    """(id, source) of the last new_best."""
    _, events, _ = journal_lines(path)
    best = [e for e in events if e["kind"] == "new_best"]
    if not best:
        return None, None
    bid = best[-1]["id"]
    for e in events:
        if e["kind"] == "proposed" and e["id"] == bid:
            return bid, e["candidate"]["source"]
    return bid, None


# ---- running things ----------------------------------------------------------------------------------


def run(cmd, timeout=120, env=None):
    return subprocess.run([str(c) for c in cmd], capture_output=True, text=True, timeout=timeout, env=env)


def find_chromium():
    for name in ("chromium", "chromium-browser", "google-chrome"):
        p = shutil.which(name)
        if p:
            return p
    return None


def dump_dom(chromium, page, work):
    """The DOM after the page's scripts ran, as Chromium serialises it."""
    profile = work / "chromium-profile"
    r = run([chromium, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", f"--user-data-dir={profile}",
             "--dump-dom", "--virtual-time-budget=10000", page.resolve().as_uri()], timeout=180)
    if r.returncode != 0 or "<body" not in r.stdout:
        raise SystemExit(f"FAIL: chromium could not load {page} (exit {r.returncode}):\n{r.stderr[-3000:]}")
    return r.stdout


def section_of(dom, heading):
    for s in dom.find_all("section", "problem"):
        h2 = s.find_all("h2")
        if h2 and h2[0].text() == heading:
            return s
    return None


def hostile_journal(source, target):
    """A copy of `source` with hostile strings where a journal holds text: the problem name, the best kernel's
    family, origin and source, an outcome's diagnosis, and a model exchange that wrote the best kernel."""
    lines = [json.loads(x) for x in Path(source).read_text().splitlines() if x.strip()]
    best = [d for d in lines if d["type"] == "event" and d["kind"] == "new_best"][-1]
    out = []
    for d in lines:
        if d["type"] == "header":
            d["problem"] = "hostile " + HOSTILE
        if d["type"] == "event" and d["kind"] == "proposed" and d["id"] == best["id"]:
            c = d["candidate"]
            c["source"] = "// " + HOSTILE + "\n__global__ void k() {}\n"
            c["family"] = "family " + HOSTILE
            c["origin"] = "origin " + HOSTILE
            d["note"] = c["origin"]
            out.append(d)
            out.append({"type": "exchange", "seq": d["seq"], "key": "0123456789abcdef", "occurrence": 0,
                        "purpose": "mutate:" + HOSTILE, "system": "system " + HOSTILE, "user": "user " + HOSTILE,
                        "reply": "reply " + HOSTILE, "status": "ok", "input_tokens": 1, "output_tokens": 2,
                        "estimated": True, "cost": 0.0, "latency_seconds": 0.1, "attempts": 1,
                        "model": "model " + HOSTILE, "finish_reason": "", "error": "", "parse_status": "ok",
                        "repairs": [HOSTILE], "parse_message": HOSTILE, "candidate": best["id"], "parent": None})
            continue
        if d["type"] == "outcome" and d["id"] == best["id"]:
            d["diagnosis"] = "hostile diagnosis " + HOSTILE + "\nsecond line"
            d["verdict"] = d.get("verdict") or {"stage": "pass", "detail": ""}
        out.append(d)
    Path(target).write_text("".join(json.dumps(d) + "\n" for d in out))
    return best["id"]


# ---- the checks ------------------------------------------------------------------------------------


def check_page(dom, journals, hostile_path):
    body = dom.find_all("body")[0]
    check(body.attrs.get("data-kb-rendered") == "ok",
          f"body data-kb-rendered is {body.attrs.get('data-kb-rendered')!r}, not 'ok'")
    check("data-kb-error" not in body.attrs, f"the page reported an error: {body.attrs.get('data-kb-error')!r}")

    # Charts: a progress chart per problem, a funnel per (problem, strategy), and, where a journal of the
    # problem holds a model exchange, three more (best so far against tokens, answered prompts and rounds);
    # every one drawn with data.
    problems, with_model = {}, set()
    for j in journals:
        h, _, xs = journal_lines(j)
        problems.setdefault(h["problem"], set()).add(h["strategy"])
        if xs:
            with_model.add(h["problem"])
    check(with_model, "no journal of the page holds a model exchange: the model-axis charts go untested")
    expected = sum(1 + len(s) + (3 if p in with_model else 0) for p, s in problems.items())
    axes = [f.attrs.get("data-axis") for f in dom.find_all("figure") if f.attrs.get("data-axis")]
    check(sorted(axes) == sorted(["device"] * len(problems) + ["tokens", "answers", "rounds"] * len(with_model)),
          f"progress figures by axis: {axes}")
    canvases = dom.find_all("canvas", "kb-chart")
    check(len(canvases) == expected, f"{len(canvases)} chart canvases, expected {expected}")
    for i, c in enumerate(canvases):
        pts, painted = c.attrs.get("data-kb-points"), c.attrs.get("data-kb-painted")
        check(pts is not None and pts.isdigit() and int(pts) > 0, f"chart {i}: data-kb-points={pts!r} (an empty plot)")
        check(painted is not None and painted.isdigit() and int(painted) > 0,
              f"chart {i}: data-kb-painted={painted!r} (nothing drawn)")

    # The candidate table: one row per distinct (journal, candidate).
    want = sum(len(distinct_candidates(j)) for j in journals)
    rows = dom.find_all("tr", "kb-cand")
    check(len(rows) == want, f"{len(rows)} candidate rows, expected {want} distinct (journal, candidate) pairs")

    # Each H200 problem: its best kernel's source, exactly.
    for p in H200_PROBLEMS:
        sec = section_of(dom, p)
        if not check(sec is not None, f"no section for {p}"):
            continue
        bid, source = final_incumbent(ISSUE10 / p / "journal.jsonl")
        sources = [n.text() for n in sec.find_all("pre", "kb-source")]
        check(source is not None and source in sources, f"{p}: the best kernel {bid}'s source is not on the page")
        codes = [n.text() for n in sec.find_all("code")]
        check(bid in codes, f"{p}: the best kernel's id {bid} is not on the page")

    # sdpa_fp16: the lineage shows a model's reply (an exchange that became a candidate).
    sec = section_of(dom, "sdpa_fp16")
    if sec is not None:
        _, _, exchanges = journal_lines(ISSUE10 / "sdpa_fp16" / "journal.jsonl")
        replies = [x["reply"] for x in exchanges if x.get("candidate") and x["reply"]]
        lineage_text = " ".join(n.text() for n in sec.find_all("ul", "kb-lineage"))
        check(replies and any(r in lineage_text for r in replies), "sdpa_fp16: no model reply in the lineage")
        shown = [n.text() for n in sec.find_all("pre", "kb-reply")]
        check(any(r in shown for r in replies), "sdpa_fp16: no model reply shown whole in a <pre>")

    # Offline: nothing to fetch. The inlined Chart.js is named.
    for n in dom.walk():
        if n.tag in ("link", "iframe", "object", "embed", "img", "audio", "video") or "src" in n.attrs:
            check(False, f"an element that may load something: <{n.tag} {n.attrs}>")
    gen = [m.attrs.get("content", "") for m in dom.find_all("meta") if m.attrs.get("name") == "generator"]
    check(gen and re.search(r"Chart\.js \d+\.\d+", gen[0]), f"the page does not name the Chart.js it inlined: {gen}")

    # Hostile strings are text.
    scripts = dom.find_all("script")
    check(len(scripts) == 3, f"{len(scripts)} <script> elements, expected the page's 3 (an injected one?)")
    check("data-kb-pwned" not in body.attrs, "an injected event handler ran")
    sec = section_of(dom, "hostile " + HOSTILE)
    if check(sec is not None, "the hostile journal's section (its heading read back as text) is missing"):
        src = [n.text() for n in sec.find_all("pre", "kb-source")]
        check(any(HOSTILE in s for s in src), "the hostile source is not shown as text")
        reps = [n.text() for n in sec.find_all("pre", "kb-reply")]
        check("reply " + HOSTILE in reps, "the hostile model reply is not shown as text")
        diag = [n.text() for n in sec.find_all("pre", "kb-diagnosis")]
        check(any(HOSTILE in d for d in diag), "the hostile diagnosis is not shown as text")
    return len(canvases), len(rows)


def check_empty_page(dom):
    body = dom.find_all("body")[0]
    check(body.attrs.get("data-kb-rendered") == "ok" and "data-kb-error" not in body.attrs,
          f"header-only journal: rendered={body.attrs.get('data-kb-rendered')!r} error={body.attrs.get('data-kb-error')!r}")
    canvases = dom.find_all("canvas", "kb-chart")
    check(len(canvases) == 2, f"header-only journal: {len(canvases)} charts, expected 2")
    check(all(c.attrs.get("data-kb-points") == "0" for c in canvases), "header-only journal: a chart claims data points")
    nodata = [n.text() for n in dom.find_all("div", "nodata")]
    check(nodata.count("no data") == 2, f"header-only journal: the charts do not say 'no data': {nodata}")


def check_failures(cli, work, good_journal):
    def expect_2(args, needles, what, env=None):
        r = run([cli, "report", *args], env=env)
        ok = r.returncode == 2 and all(n in r.stderr for n in needles)
        check(ok, f"{what}: exit {r.returncode}, stderr {r.stderr.strip()!r}; expected exit 2 naming {needles}")

    missing = work / "no-such-journal.jsonl"
    expect_2([missing, "-o", work / "x.html"], [str(missing)], "a journal that does not exist")
    not_journal = work / "not-a-journal.jsonl"
    not_journal.write_text('{"hello": "world"}\n')
    expect_2([not_journal, "-o", work / "x.html"], [str(not_journal), "line 1"], "a file that is not a journal")
    expect_2([good_journal], ["--output"], "no -o")
    nowhere = work / "no-such-folder"
    expect_2([good_journal, "-o", nowhere / "r.html"], [str(nowhere), "does not exist"], "-o into a missing folder")
    env = dict(os.environ, KERNELBRAIN_CHARTJS=str(work / "no-chart.js"))
    expect_2([good_journal, "-o", work / "x.html"], [str(work / "no-chart.js"), "apt-get install libjs-chart.js"],
             "a Chart.js that does not exist", env=env)


def torch_expectations(path):
    """From a journal: (problem, {"eager": geomean, "compile": geomean}) of its best kernel (its last new_best)
    over PyTorch, computed here from the outcome lines, at the shapes both were timed."""
    header, events, _ = journal_lines(path)
    baseline, outcomes = None, {}
    with open(path) as f:
        for line in f:
            o = json.loads(line)
            if o.get("type") == "baseline" and baseline is None:
                baseline = o
            elif o.get("type") == "outcome":
                outcomes[(o["id"], o["rung"])] = o
    best = None
    for e in events:
        if e.get("kind") == "new_best":
            best = (e["id"], e["rung"])
    pt = baseline["pytorch"]
    by_index = {s["index"]: s for s in pt["shapes"]}
    out = {}
    for side in ("eager", "compile"):
        logs = []
        for t in outcomes[best]["timings"]:
            s = by_index.get(t["shape"])
            theirs = s and s[side + "_seconds"]
            mine = t["median"]
            if theirs and mine:
                logs.append(math.log(theirs / mine))
        out[side] = math.exp(sum(logs) / len(logs)) if logs else None
    return header["problem"], out


def check_pytorch_page(cli, work, chromium):
    journals = sorted(ISSUE27.glob("*.jsonl"))
    if not journals:
        print(f"note: no GPU journals in {ISSUE27} yet (gpu-run.sh makes them): the PyTorch headline is not checked")
        return 0
    page = work / "pytorch.html"
    r = run([cli, "report", *journals, "-o", page])
    if not check(r.returncode == 0, f"report of the issue-27 journals: exit {r.returncode}: {r.stderr.strip()}"):
        return 0
    dom = parse_dom(dump_dom(chromium, page, work))
    body = dom.find_all("body")[0]
    check(body.attrs.get("data-kb-rendered") == "ok", "the issue-27 page did not render")
    badges = 0
    for j in journals:
        problem, want = torch_expectations(j)
        sec = section_of(dom, problem)
        if not check(sec is not None, f"no section for {problem}"):
            continue
        texts = [b.text() for b in sec.find_all("span", "kb-torch")]
        for side, label in (("eager", "vs PyTorch eager"), ("compile", "vs torch.compile")):
            got = [t for t in texts if label in t]
            if not check(len(got) == 1 and want[side] is not None, f"{problem}: one '{label}' badge expected, got {texts}"):
                continue
            shown = re.match(r"([0-9]+(?:\.[0-9]+)?)[x×]", got[0])
            check(shown is not None and abs(float(shown.group(1)) - want[side]) <= 0.006,
                  f"{problem}: badge {got[0]!r}, but the journal gives {want[side]:.4f}")
            lose = [b for b in sec.find_all("span", "kb-torch") if label in b.text()][0].attrs["class"].split()
            check(("lose" in lose) == (want[side] < 1), f"{problem}: badge {got[0]!r} coloured {lose}")
            badges += 1
        heads = [th.text() for th in sec.find_all("th")]
        check("PyTorch eager" in heads and "torch.compile" in heads, f"{problem}: no PyTorch columns in {heads}")
    over = work / "pytorch-over-eager.html"
    r = run([cli, "report", *journals, "--over", "eager", "-o", over])
    if check(r.returncode == 0, f"report --over eager: exit {r.returncode}: {r.stderr.strip()}"):
        d = parse_dom(dump_dom(chromium, over, work))
        check(d.find_all("body")[0].attrs.get("data-kb-rendered") == "ok", "the --over eager page did not render")
        data = json.loads([n for n in d.find_all("script") if n.attrs.get("id") == "kb-data"][0].text())
        check(data.get("over") == "eager", "the --over eager page's data is not over eager")
        curves = sum(len(g["progress"]["median"]) for p in data["problems"] for g in p["groups"])
        check(curves > 0, "the --over eager page has no progress points")
    r = run([cli, "report", ISSUE10 / "softmax" / "journal.jsonl", "--over", "eager", "-o", work / "no.html"])
    check(r.returncode == 2 and "holds no PyTorch measurement" in r.stderr,
          f"--over eager on a journal without PyTorch: exit {r.returncode}: {r.stderr.strip()}")
    return badges


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cli", required=True, help="the kernelbrain executable")
    ap.add_argument("--work", required=True, help="a scratch folder (emptied first)")
    a = ap.parse_args()
    start = time.monotonic()

    chromium = find_chromium()
    if chromium is None:
        if os.environ.get("KB_REQUIRE_REPORT_TOOLS") == "1":
            print("FAIL: no chromium, chromium-browser or google-chrome, and KB_REQUIRE_REPORT_TOOLS=1")
            return 1
        print("SKIPPED: kernelbrain report's browser test needs Chromium (apt-get install chromium)")
        return 77

    cli = Path(a.cli).resolve()
    work = Path(a.work)
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)

    # 1. Two seeds of one strategy on the synthetic backend; tune names the report command.
    synthetic = []
    for seed in (1, 2):
        j = work / f"synthetic_seed{seed}.jsonl"
        r = run([cli, "tune", "synthetic", "--budget", "60evals", "--seed", seed, "--strategy", "default",
                 "--journal", j, "--no-progress"])
        if r.returncode != 0:
            print(f"FAIL: tune seed {seed} exited {r.returncode}:\n{r.stderr}")
            return 1
        want = f"report: kernelbrain report {j} -o {work / f'synthetic_seed{seed}.html'}"
        check(want in r.stdout.splitlines(), f"tune does not print {want!r}:\n{r.stdout[-600:]}")
        synthetic.append(j)

    # 2. The hostile journal.
    hostile = work / "hostile.jsonl"
    hostile_journal(synthetic[0], hostile)

    # 3. The report, in Chromium.
    journals = [ISSUE10 / p / "journal.jsonl" for p in H200_PROBLEMS] + synthetic + [hostile]
    page = work / "report.html"
    r = run([cli, "report", *journals, "-o", page])
    if r.returncode != 0:
        print(f"FAIL: kernelbrain report exited {r.returncode}:\n{r.stdout}{r.stderr}")
        return 1
    size = page.stat().st_size
    dom = parse_dom(dump_dom(chromium, page, work))
    charts, rows = check_page(dom, journals, hostile)

    # 4. A journal with its header only.
    header_only = work / "header-only.jsonl"
    header_only.write_text(Path(synthetic[0]).read_text().splitlines()[0] + "\n")
    empty_page = work / "header-only.html"
    r = run([cli, "report", header_only, "-o", empty_page])
    if check(r.returncode == 0, f"a header-only journal: exit {r.returncode}: {r.stderr.strip()}"):
        check_empty_page(parse_dom(dump_dom(chromium, empty_page, work)))

    # 5. Failures.
    check_failures(cli, work, synthetic[0])

    # 6. PyTorch as the headline, from the GPU journals.
    badges = check_pytorch_page(cli, work, chromium)

    took = time.monotonic() - start
    if failures:
        print(f"report.browser: {len(failures)} check(s) failed ({took:.0f} s)")
        return 1
    print(f"report.browser: OK: {len(journals)} journals, {charts} charts drawn, {rows} candidate rows, page "
          f"{size / 1024:.0f} KiB; header-only page, hostile strings and 5 failure cases checked; {badges} PyTorch "
          f"badges checked against the GPU journals ({took:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
