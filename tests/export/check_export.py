#!/usr/bin/env python3
"""kernelbrain export: its outputs built and used (CTest: export.standalone_nvcc, export.torch_cpu).

    python3 tests/export/check_export.py standalone|torch --cli build/apps/kernelbrain/kernelbrain --work DIR

Inputs: the three committed H200 journals of bench/runs/2026-12-01-issue10 (softmax, sdpa_fp16,
linear_relu_div), their best.json files, and for each of the ten CUDA problems a best.json made here from the
problem's own reference kernel (reference.cu and its launch plan) at every benchmark shape, so that every
CUDA problem (each declares its PyTorch computation in problem.json) is exported, compiled and imported.

Both modes first check the command line (no tool needed):
  - a journal and the best.json written by the same run export the same kernel per shape (the journal's best
    per shape is tune's per_shape_best), benchmark shapes only;
  - exit 2 with a clear message for: a missing input, a journal where nothing passed the top rung, a host
    problem (--problem examples/problems/softmax), a journal written by the host backend, a PyTorch declaration whose
    view does not match the tensor's size, --to a non-empty directory without --force; with --force the
    package directory is replaced (a stale file in it goes) and other files stay.

standalone (needs nvcc; without it: SKIPPED, exit 77): for every export, `make` in DIR/cuda (the .cu to an
object with the README's nvcc command, example.cpp against the header into an executable, which runs: without
a GPU it stops after its host-side part), and a host program written here from manifest.json that calls
is_tuned / workspace_bytes / forward with good and bad arguments and expects true/false, the right workspace
and std::invalid_argument messages (wrong sizes listing every tuned shape, rank, dtype, strides, null pointer,
output sizes, missing workspace); none of these calls reaches the GPU. The header lists every tuned shape. The
PyTorch package's library is built by its own build path (`python3 _build.py`, no torch needed) for the three
journals and group_conv (attributes), and its C ABI is called through ctypes with arguments it must refuse
before any launch (wrong sizes, null pointer, wrong dtype code, missing workspace): return codes and messages.

torch (needs a python3 that imports torch, e.g. Debian's CPU python3-torch 1.13; without one: SKIPPED, exit
77): each exported package imported in a fresh process, with HOME and XDG_CACHE_HOME in the work directory:
TUNED lists the manifest's shapes and sizes; importing built nothing (no library in the package or the cache);
`python3 -m kb_<problem> info` works; at every tuned shape, meta tensors (no memory) get "fallback: ... meta"
(which dispatch() says only after the dtypes and sizes matched); the smallest tuned shape of each f32 problem,
when its tensors take at most 600 MB, as CPU tensors: dispatch() says fallback because of the CPU and
forward() equals reference() exactly; f16 problems use meta tensors only there (CPU half kernels are missing
from many PyTorch builds); at the problem's smoke sizes (never tuned): dispatch() says untuned sizes and
forward() equals reference() (or both raise the same error); a wrong dtype, requires_grad, a wrong attribute
value and a non-integer attribute give their fallback reasons; with $KB_<PROBLEM>_LIBRARY naming a missing
file the library fails to load with one warning and is not retried.

KB_REQUIRE_REPORT_TOOLS=1 (CI) turns a missing tool into a failure.
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
ISSUE10 = ROOT / "bench" / "runs" / "2026-12-01-issue10" / "state"
H200_PROBLEMS = ["softmax", "sdpa_fp16", "linear_relu_div"]
CUDA_PROBLEMS = ROOT / "examples" / "cuda_problems"
CORRECTNESS_TIERS = ("smoke", "odd", "wide")

failures = []


def check(ok, what):
    if not ok:
        failures.append(what)
        print("FAIL:", what, flush=True)
    return ok


def skip(why, package):
    if os.environ.get("KB_REQUIRE_REPORT_TOOLS") == "1":
        print("FAIL: %s (%s), and KB_REQUIRE_REPORT_TOOLS=1" % (why, package))
        sys.exit(1)
    print("SKIPPED: %s (%s)" % (why, package))
    sys.exit(77)


def run(cmd, cwd=None, env=None, timeout=600):
    p = subprocess.run([str(c) for c in cmd], cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       universal_newlines=True, timeout=timeout)
    return p.returncode, p.stdout, p.stderr


def problem_json(name):
    with open(CUDA_PROBLEMS / name / "problem.json") as f:
        return json.load(f)


def benchmark_shapes(prob):
    return [s for s in prob["shapes"] if s.get("tier", "default") not in CORRECTNESS_TIERS]


# ---- expressions of the problem format (core/expr.hpp), for views at a shape ----------------------------

def evaluate(text, dims):
    """An integer expression of the problem format at `dims` (+ - * / % and the grammar's functions)."""
    if not re.fullmatch(r"[\w\s+\-*/%(),]*", text):
        raise ValueError("unexpected expression %r" % text)

    def ceil_div(a, b):
        return -(-a // b)
    python = re.sub(r"(?<![/])/(?![/])", "//", text)
    return int(eval(python, {"__builtins__": {}}, dict(dims, min=min, max=max, ceil_div=ceil_div)))


# ---- exporting -----------------------------------------------------------------------------------------

class Exporter:
    def __init__(self, cli, work):
        self.cli, self.work = cli, work

    def export(self, source, name, extra=()):
        out = self.work / "out" / name
        if out.exists():
            shutil.rmtree(out)
        rc, so, se = run([self.cli, "export", source, "--to", out] + list(extra))
        if not check(rc == 0, "export %s (%s): exit %d\n%s%s" % (name, source, rc, so, se)):
            return None
        with open(out / "manifest.json") as f:
            manifest = json.load(f)
        return out, manifest


def reference_best_json(work, name):
    """A best.json holding the problem's reference kernel at every benchmark shape."""
    prob = problem_json(name)
    with open(CUDA_PROBLEMS / name / prob["reference"]["source"]) as f:
        source = f.read()
    kernels = [dict(problem_dir=str(CUDA_PROBLEMS / name), problem=name, shape=s["name"], family="reference",
                    params={}, candidate="reference", origin="reference", source=source,
                    launch=prob["reference"]["launch"], speedup_vs_reference=1.0) for s in prob["shapes"]]
    path = work / "inputs" / ("reference-%s.json" % name)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w") as f:
        json.dump({"kernels": kernels}, f)
    return path


def all_exports(ex, work):
    """(name, directory, manifest) for the three journals, one best.json and the ten reference exports."""
    done = []
    for p in H200_PROBLEMS:
        r = ex.export(ISSUE10 / p / "journal.jsonl", "journal-" + p)
        if r:
            done.append(("journal-" + p,) + r)
    r = ex.export(ISSUE10 / "softmax" / "best.json", "best-softmax")
    if r:
        done.append(("best-softmax",) + r)
    for d in sorted(CUDA_PROBLEMS.iterdir()):
        if (d / "problem.json").exists():
            r = ex.export(reference_best_json(work, d.name), "reference-" + d.name)
            if r:
                done.append(("reference-" + d.name,) + r)
    check(len(done) == 14, "expected 14 exports, made %d" % len(done))
    return done


# ---- the command line's checks (both modes) ------------------------------------------------------------

def expect_failure(cli, args, pattern, what):
    rc, so, se = run([cli, "export"] + args)
    check(rc == 2, "%s: exit %d, expected 2\n%s%s" % (what, rc, so, se))
    check(re.search(pattern, se) is not None, "%s: stderr does not match %r:\n%s" % (what, pattern, se))


def cli_checks(cli, work, exports):
    by_name = {n: m for n, _, m in exports}
    # A journal and the best.json of the same run: the same kernel per benchmark shape.
    for p in H200_PROBLEMS:
        out = Exporter(cli, work).export(ISSUE10 / p / "best.json", "best-" + p)
        journal = by_name.get("journal-" + p)
        if not out or not journal:
            continue
        best = out[1]
        prob = problem_json(p)
        names = [s["name"] for s in benchmark_shapes(prob)]
        got = [(s["name"], s["candidate"], round(s["speedup_vs_reference"], 9)) for s in journal["shapes"]]
        want = [(s["name"], s["candidate"], round(s["speedup_vs_reference"], 9)) for s in best["shapes"]]
        check(got == want, "%s: journal and best.json export different kernels:\n  %s\n  %s" % (p, got, want))
        check(all(s["name"] in names for s in journal["shapes"]), "%s: a correctness shape was exported" % p)
        with open(ISSUE10 / p / "best.json") as f:
            raw = json.load(f)
        benchmark_in_best = [k["shape"] for k in raw["kernels"] if k["shape"] in names]
        check([s["name"] for s in best["shapes"]] == benchmark_in_best, "%s: not every benchmark shape exported" % p)

    journal = ISSUE10 / "softmax" / "journal.jsonl"
    out = work / "bad"
    expect_failure(cli, [work / "no-such-journal.jsonl", "--to", out], r"no-such-journal\.jsonl",
                   "a missing input")
    # Nothing passed the top rung: the journal without its top-rung outcomes.
    lines = journal.read_text().splitlines()
    header = json.loads(lines[0])
    top = len(header["ladder"].split("/")[0].split(",")) - 1
    kept = [l for l in lines if not (json.loads(l).get("type") == "outcome" and json.loads(l)["rung"] == top)]
    nothing = work / "inputs" / "nothing-passed.jsonl"
    nothing.write_text("\n".join(kept) + "\n")
    expect_failure(cli, [nothing, "--to", out], r"no candidate passed the top rung", "nothing passed the top rung")
    # The same where the outcomes are there but failed.
    failed = []
    for l in lines:
        o = json.loads(l)
        if o.get("type") == "outcome" and o["rung"] == top:
            o["verdict"] = {"stage": "correctness", "detail": "made up for the test"}
            l = json.dumps(o)
        failed.append(l)
    failed_path = work / "inputs" / "all-failed.jsonl"
    failed_path.write_text("\n".join(failed) + "\n")
    expect_failure(cli, [failed_path, "--to", out], r"no candidate passed the top rung", "every top-rung outcome failed")
    expect_failure(cli, [journal, "--to", out, "--problem", ROOT / "examples" / "problems" / "softmax"],
                   r"host problem: only CUDA problems can be exported", "a host problem")
    host = work / "inputs" / "host-journal.jsonl"
    h = dict(header, evaluator="host/v1; compiler: g++")
    host.write_text("\n".join([json.dumps(h)] + lines[1:]) + "\n")
    expect_failure(cli, [host, "--to", out], r"only CUDA kernels can be exported", "a host journal")
    # A PyTorch declaration whose view of y does not have y's element count: the problem's loader refuses it.
    bad_problem = work / "inputs" / "softmax-bad-view"
    if bad_problem.exists():
        shutil.rmtree(bad_problem)
    shutil.copytree(CUDA_PROBLEMS / "softmax", bad_problem)
    desc = json.loads((bad_problem / "problem.json").read_text())
    desc["pytorch"]["views"]["y"] = ["R", "C", 2]
    (bad_problem / "problem.json").write_text(json.dumps(desc))
    expect_failure(cli, [journal, "--to", out, "--problem", bad_problem],
                   r"views\.y at shape 'smoke': \[3, 257, 2\] has 1542 elements, but problem\.json's size of 'y'",
                   "a view that does not match the size")
    # --to: not empty without --force; with --force the package is replaced, other files stay.
    busy = work / "busy"
    if busy.exists():
        shutil.rmtree(busy)
    (busy / "torch" / "kb_softmax").mkdir(parents=True)
    (busy / "notes.txt").write_text("mine")
    (busy / "torch" / "kb_softmax" / "stale.txt").write_text("old")
    expect_failure(cli, [journal, "--to", busy], r"exists and is not empty: give --force", "--to a non-empty directory")
    check((busy / "torch" / "kb_softmax" / "stale.txt").exists(), "a refused export touched the directory")
    rc, so, se = run([cli, "export", journal, "--to", busy, "--force"])
    check(rc == 0, "--force: exit %d\n%s" % (rc, se))
    check(not (busy / "torch" / "kb_softmax" / "stale.txt").exists(), "--force left a stale file in the package")
    check((busy / "notes.txt").read_text() == "mine", "--force removed a file it does not write")
    check((busy / "torch" / "kb_softmax" / "__init__.py").exists(), "--force did not write the package")


# ---- standalone: nvcc ----------------------------------------------------------------------------------

def find_nvcc():
    home = os.environ.get("CUDA_HOME")
    for c in ([os.path.join(home, "bin", "nvcc")] if home else []) + ["/usr/local/cuda/bin/nvcc"]:
        if os.path.isfile(c) and os.access(c, os.X_OK):
            return c
    return shutil.which("nvcc")


def cpp_check_program(manifest):
    """A host program that exercises the generated API without reaching the GPU; prints "ok" when all is well."""
    api, tensors, shapes = manifest["api"], manifest["tensors"], manifest["shapes"]
    inputs = [t for t in tensors if not t["output"]]
    attrs = [a["name"] for a in manifest["attributes"]]

    def tensor(t, sizes, data="nullptr", dtype=None, strides="{}"):
        dt = dtype or t["dtype"]
        return "api::tensor{%s, api::dtype::%s, {%s}, %s}" % (data, dt, ", ".join(str(v) for v in sizes), strides)

    def select_args(shape, first=None, attr_delta=0):
        args = []
        for i, t in enumerate(inputs):
            args.append(first if (i == 0 and first) else tensor(t, shape["sizes"][t["name"]]))
        for j, a in enumerate(attrs):
            args.append(str(shape["attributes"][a] + (attr_delta if j == 0 else 0)))
        return ", ".join(args)

    def forward_args(shape, replace=None, workspace="nullptr, 0"):
        args = []
        for k, t in enumerate(tensors):
            fake = "reinterpret_cast<void*>(std::uintptr_t{0x100000} * %d)" % (k + 1)
            args.append(replace[1] if replace and replace[0] == k else tensor(t, shape["sizes"][t["name"]], data=fake))
        args += [str(shape["attributes"][a]) for a in attrs]
        return ", ".join(args) + ", " + workspace

    body = []
    names = [s["name"] for s in shapes]
    for s in shapes:
        body.append('expect(api::is_tuned(%s), "is_tuned at %s");' % (select_args(s), s["name"]))
        body.append('expect(api::workspace_bytes(%s) == %dULL, "workspace_bytes at %s");'
                    % (select_args(s), s["workspace_bytes"], s["name"]))
    s0 = shapes[0]
    t0 = inputs[0]
    off = list(s0["sizes"][t0["name"]])
    off[-1] += 1
    wrong = tensor(t0, off)
    other = "f16" if t0["dtype"] == "f32" else "f32"
    body.append('expect(!api::is_tuned(%s), "is_tuned, one size off");' % select_args(s0, first=wrong))
    body.append('expect(!api::is_tuned(%s), "is_tuned, wrong dtype");'
                % select_args(s0, first=tensor(t0, s0["sizes"][t0["name"]], dtype=other)))
    if attrs:
        body.append('expect(!api::is_tuned(%s), "is_tuned, attribute off");' % select_args(s0, attr_delta=1))
    body.append('throws([&] { (void)api::workspace_bytes(%s); }, {"no tuned kernel for", %s}, "workspace_bytes, '
                'one size off");' % (select_args(s0, first=wrong), ", ".join('"%s ("' % n for n in names)))
    body.append('throws([&] { (void)api::workspace_bytes(%s); }, {"%s has rank %d"}, "workspace_bytes, rank");'
                % (select_args(s0, first=tensor(t0, s0["sizes"][t0["name"]] + [1])), t0["name"],
                   len(s0["sizes"][t0["name"]]) + 1))
    out_index = len(inputs)
    out_t = tensors[out_index]
    out_sizes = list(s0["sizes"][out_t["name"]])
    out_sizes[0] += 1
    fake = "reinterpret_cast<void*>(std::uintptr_t{0x100000} * 9)"
    body.append('throws([&] { api::forward(%s); }, {"output %s has sizes"}, "forward, output sizes");'
                % (forward_args(s0, (out_index, tensor(out_t, out_sizes, data=fake))), out_t["name"]))
    body.append('throws([&] { api::forward(%s); }, {"%s is %s; the kernels take %s"}, "forward, dtype");'
                % (forward_args(s0, (0, tensor(t0, s0["sizes"][t0["name"]], data=fake, dtype=other))), t0["name"],
                   other, t0["dtype"]))
    rank = len(s0["sizes"][t0["name"]])
    if rank >= 2 and s0["sizes"][t0["name"]][-1] > 1:
        strides = "{%s}" % ", ".join(["1"] * rank)
        body.append('throws([&] { api::forward(%s); }, {"has strides", "row-major dense"}, "forward, strides");'
                    % forward_args(s0, (0, tensor(t0, s0["sizes"][t0["name"]], data=fake, strides=strides))))
    body.append('throws([&] { api::forward(%s); }, {"%s has a null data pointer"}, "forward, null pointer");'
                % (forward_args(s0, (0, tensor(t0, s0["sizes"][t0["name"]]))), t0["name"]))
    body.append('throws([&] { api::forward(%s); }, {"not 256-byte aligned"}, "forward, unaligned pointer");'
                % forward_args(s0, (0, tensor(t0, s0["sizes"][t0["name"]],
                                              data="reinterpret_cast<void*>(std::uintptr_t{0x100004})"))))
    for s in shapes:
        if s["workspace_bytes"] > 0:
            body.append('throws([&] { api::forward(%s); }, {"needs a workspace of %d bytes"}, "forward, no '
                        'workspace at %s");' % (forward_args(s), s["workspace_bytes"], s["name"]))
            body.append('throws([&] { api::forward(%s); }, {"needs a workspace of %d bytes", "got %d bytes"}, '
                        '"forward, small workspace at %s");'
                        % (forward_args(s, workspace="reinterpret_cast<void*>(std::uintptr_t{0x900000}), %d"
                                        % (s["workspace_bytes"] - 1)), s["workspace_bytes"], s["workspace_bytes"] - 1,
                           s["name"]))
            break
    return textwrap.dedent("""\
        #include <cstdint>
        #include <cstdio>
        #include <initializer_list>
        #include <stdexcept>
        #include <string>
        #include "%(problem)s.h"

        namespace api = %(api)s;
        static int failures = 0;
        static void expect(bool ok, char const* what) {
          if (!ok) { ++failures; std::printf("FAIL: %%s\\n", what); }
        }
        template <class F>
        static void throws(F f, std::initializer_list<char const*> parts, char const* what) {
          try {
            f();
            ++failures;
            std::printf("FAIL: %%s: no exception\\n", what);
          } catch (std::invalid_argument const& e) {
            for (auto p : parts)
              if (std::string(e.what()).find(p) == std::string::npos) {
                ++failures;
                std::printf("FAIL: %%s: '%%s' not in: %%s\\n", what, p, e.what());
              }
          }
        }
        int main() {
        %(body)s
          std::printf("%%s\\n", failures == 0 ? "ok" : "failed");
          return failures == 0 ? 0 : 1;
        }
        """) % dict(problem=manifest["problem"], api=api, body="\n".join("  " + b for b in body))


def capi_checks(package, manifest):
    """The C ABI of a built library, called with arguments it must refuse before launching anything."""
    import ctypes
    libs = sorted(package.glob("libkb_*.so"))
    if not check(len(libs) == 1, "%s: expected one built library, found %s" % (package, libs)):
        return
    lib = ctypes.CDLL(str(libs[0].resolve()))
    problem = manifest["problem"]
    bid = getattr(lib, "kb_%s_build_id" % problem)
    bid.restype = ctypes.c_char_p
    check(bid().decode() == manifest["build_id"], "%s: library build id %s, manifest %s"
          % (problem, bid().decode(), manifest["build_id"]))
    probe = getattr(lib, "kb_%s_probe" % problem)
    probe.argtypes = [ctypes.c_char_p, ctypes.c_size_t]
    probe.restype = ctypes.c_int
    err = ctypes.create_string_buffer(1024)
    rc = probe(err, len(err))
    check(rc == 0 or (rc == 2 and err.value.decode().startswith("kb_%s: the library's CUDA runtime" % problem)),
          "%s C ABI probe: %d %s" % (problem, rc, err.value.decode()))
    print("%s: probe %d %s" % (problem, rc, err.value.decode()), flush=True)
    f = getattr(lib, "kb_%s_forward_c" % problem)
    f.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.POINTER(ctypes.c_int), ctypes.POINTER(ctypes.c_longlong),
                  ctypes.POINTER(ctypes.c_longlong), ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p,
                  ctypes.c_char_p, ctypes.c_size_t]
    f.restype = ctypes.c_int
    tensors = manifest["tensors"]
    shape = manifest["shapes"][0]
    n = len(tensors)

    def call(sizes=None, pointers=None, codes=None, workspace=(None, 0), error_len=2048):
        flat = sizes or [v for t in tensors for v in shape["sizes"][t["name"]]]
        ptrs = pointers or [0x100000 * (k + 1) for k in range(n)]
        dts = codes or [1 if t["dtype"] == "f16" else 0 for t in tensors]
        attrs = [shape["attributes"][a["name"]] for a in manifest["attributes"]]
        err = ctypes.create_string_buffer(error_len)
        rc = f((ctypes.c_void_p * n)(*ptrs), (ctypes.c_int * n)(*dts), (ctypes.c_longlong * len(flat))(*flat),
               (ctypes.c_longlong * len(attrs))(*attrs) if attrs else None, workspace[0], workspace[1], None, err,
               error_len)
        return rc, err.value.decode()

    good = [v for t in tensors for v in shape["sizes"][t["name"]]]
    bad = list(good)
    bad[0] += 1
    rc, msg = call(sizes=bad)
    check(rc == 1 and "no tuned kernel for" in msg and all(s["name"] in msg for s in manifest["shapes"]),
          "%s C ABI, wrong sizes: %d %s" % (problem, rc, msg))
    rc, msg = call(pointers=[0] + [0x100000 * (k + 2) for k in range(n - 1)])
    check(rc == 1 and "null data pointer" in msg, "%s C ABI, null pointer: %d %s" % (problem, rc, msg))
    rc, msg = call(codes=[7] * n)
    check(rc == 1 and "dtype code 7" in msg, "%s C ABI, dtype code: %d %s" % (problem, rc, msg))
    rc, msg = call(sizes=bad, error_len=12)
    check(rc == 1 and len(msg) == 11, "%s C ABI, a short error buffer: %d %r" % (problem, rc, msg))
    if shape["workspace_bytes"] > 0:
        rc, msg = call()
        check(rc == 1 and "needs a workspace" in msg, "%s C ABI, no workspace: %d %s" % (problem, rc, msg))


def standalone(cli, work, exports):
    nvcc = find_nvcc()
    env = dict(os.environ, CUDA_HOME=str(Path(nvcc).resolve().parent.parent))
    for name, out, manifest in exports:
        cuda = out / "cuda"
        problem = manifest["problem"]
        header = (cuda / (problem + ".h")).read_text()
        listed = re.findall(r'^\s+\{"([^"]+)", [0-9.e+-]+\},$', header, re.M)
        check(listed == [s["name"] for s in manifest["shapes"]], "%s: the header's tuned_shapes %s" % (name, listed))
        readme = (out / "README.md").read_text()
        flags = "-gencode arch=compute_%s,code=%s" % (manifest["arch"][3:], manifest["arch"])
        check(("nvcc -O3 -std=c++17 %s -c %s.cu" % (flags, problem)) in readme, "%s: README's nvcc command" % name)
        check(all(s["name"] in readme for s in manifest["shapes"]), "%s: README lists the shapes" % name)
        # The .cu holds the tuned sources (entry points renamed) and includes nothing but the header and std/CUDA.
        cu = (cuda / (problem + ".cu")).read_text()
        includes = re.findall(r'^#include\s*[<"]([^>"]+)[>"]', cu, re.M)
        check(includes[:2] == [problem + ".h", "cuda_runtime.h"] and all("." not in i for i in includes[2:]),
              "%s: the .cu includes %s (the header, cuda_runtime.h and std headers only)" % (name, includes))
        rc, so, se = run(["make", "-C", cuda, "NVCC=" + nvcc], env=env, timeout=900)
        check(rc == 0, "%s: make failed (%d)\n%s%s" % (name, rc, so[-3000:], se[-6000:]))
        check("warning" not in (so + se).lower(), "%s: nvcc warned:\n%s%s" % (name, so[-3000:], se[-3000:]))
        if rc != 0:
            continue
        rc, so, se = run([cuda / "example"], timeout=300)
        check(rc == 0 and "is_tuned(%s): yes" % manifest["shapes"][0]["name"] in so and "one size off: is_tuned no"
              in so, "%s: ./example (%d)\n%s%s" % (name, rc, so, se))
        program = cuda / "check_api.cpp"
        program.write_text(cpp_check_program(manifest))
        rc, so, se = run([nvcc, "-std=c++17", "-O1", "-gencode", "arch=compute_%s,code=%s" % (manifest["arch"][3:],
                          manifest["arch"]), program, cuda / (problem + ".o"), "-o", cuda / "check_api"],
                         cwd=cuda, timeout=600)
        if check(rc == 0, "%s: the API check program does not build\n%s%s" % (name, so, se[-4000:])):
            rc, so, se = run([cuda / "check_api"], timeout=120)
            check(rc == 0 and so.strip().endswith("ok"), "%s: the API check program\n%s%s" % (name, so, se))
    # The PyTorch package's library, by its own build path (no torch needed), and its C ABI.
    for name, out, manifest in exports:
        if not (name.startswith("journal-") or name == "reference-group_conv"):
            continue
        package = out / "torch" / manifest["api"]
        rc, so, se = run([sys.executable, package / "_build.py"], env=env, timeout=900)
        if check(rc == 0, "%s: _build.py (%d)\n%s%s" % (name, rc, so, se[-6000:])):
            built = Path(so.strip().splitlines()[-1])
            check(built.parent == package and built.name == "libkb_%s-%s.so" % (manifest["problem"],
                                                                                manifest["build_id"]),
                  "%s: built %s" % (name, built))
            check("nvcc" in se and "kernels.cu" in se and "capi.cu" in se, "%s: _build.py's command: %s" % (name, se))
            capi_checks(package, manifest)


# ---- torch: the package on CPU -------------------------------------------------------------------------

PACKAGE_CHECK = r'''
import json, os, sys, warnings
manifest = json.load(open(sys.argv[1]))
package_dir = sys.argv[2]
views = json.loads(sys.argv[3])  # tensor -> sizes at the smoke shape
smoke_attributes = json.loads(sys.argv[4])
failures = []
def check(ok, what):
    if not ok:
        failures.append(what)
        print("FAIL:", what)
sys.path.insert(0, os.path.dirname(package_dir))
import torch
api = manifest["api"]
m = __import__(api)
def libraries():
    found = [f for f in os.listdir(package_dir) if f.endswith(".so")]
    cache = os.path.join(os.environ["XDG_CACHE_HOME"], "kernelbrain")
    if os.path.isdir(cache):
        found += [f for f in os.listdir(cache) if f.endswith(".so")]
    return found
check(libraries() == [], "importing built a library: %s" % libraries())
check(not os.path.exists(m.library_path()), "library_path() exists after import: %s" % m.library_path())
check(m.library_path().endswith("libkb_%s-%s.so" % (manifest["problem"], manifest["build_id"])), "library_path() " + m.library_path())
names = [s["name"] for s in manifest["shapes"]]
check(list(m.TUNED) == names, "TUNED %s, manifest %s" % (list(m.TUNED), names))
for s in manifest["shapes"]:
    t = m.TUNED.get(s["name"], {})
    check({k: list(v) for k, v in t.get("sizes", {}).items()} == s["sizes"], "TUNED sizes at " + s["name"])
    check(t.get("workspace_bytes") == s["workspace_bytes"], "TUNED workspace at " + s["name"])
    check(t.get("attributes") == s["attributes"], "TUNED attributes at " + s["name"])
check(getattr(m, manifest["function"]) is m.forward, "the alias " + manifest["function"])
check(m.REQUIRED_ARCH == manifest["arch"], "REQUIRED_ARCH")
inputs = [t for t in manifest["tensors"] if not t["output"]]
DT = {"f32": torch.float32, "f16": torch.float16}
def make(sizes_of, device="cpu", dtype=None, requires_grad=False, gen=None):
    out = []
    for t in inputs:
        d = dtype or DT[t["dtype"]]
        if device == "meta":
            out.append(torch.empty(sizes_of[t["name"]], dtype=d, device="meta"))
        else:
            x = torch.randn(sizes_of[t["name"]], generator=gen, dtype=torch.float32).to(d)
            out.append(x.requires_grad_(requires_grad))
    return out
def same(f, g):
    try:
        a = f()
    except Exception as e:
        a = e
    try:
        b = g()
    except Exception as e:
        b = e
    if isinstance(a, Exception) or isinstance(b, Exception):
        return type(a) is type(b) and str(a) == str(b), "%r / %r" % (a, b)
    return torch.equal(a, b), "values differ"
# every tuned shape, on meta tensors: sizes and dtypes matched, the device did not
for s in manifest["shapes"]:
    xs = make(s["sizes"], device="meta")
    why = m.dispatch(*xs, **s["attributes"])
    check(why.startswith("fallback:") and "meta" in why, "meta at %s: %s" % (s["name"], why))
    for a in s["attributes"]:
        bad = dict(s["attributes"]); bad[a] += 1
        why = m.dispatch(*xs, **bad)
        check(why.startswith("fallback: untuned sizes") and ("%s=%d" % (a, bad[a])) in why, "attribute off: " + why)
        bad = dict(s["attributes"]); bad[a] = (s["attributes"][a], s["attributes"][a])
        why = m.dispatch(*xs, **bad)
        check(why.startswith("fallback:") and "is not one integer" in why, "attribute tuple: " + why)
# the smallest tuned shape as CPU tensors, where its f32 tensors fit in 600 MB
def nbytes(s):
    total = 0
    for t in manifest["tensors"]:
        n = 1
        for v in s["sizes"][t["name"]]:
            n *= v
        total += n * (2 if t["dtype"] == "f16" else 4)
    return total
smallest = min(manifest["shapes"], key=nbytes)
materialised = all(t["dtype"] == "f32" for t in inputs) and nbytes(smallest) <= 600 * 2**20
if materialised:
    gen = torch.Generator().manual_seed(7)
    xs = make(smallest["sizes"], gen=gen)
    why = m.dispatch(*xs, **smallest["attributes"])
    check(why.startswith("fallback:") and "CPU" in why, "CPU at %s: %s" % (smallest["name"], why))
    with torch.no_grad():
        ok, detail = same(lambda: m.forward(*xs, **smallest["attributes"]), lambda: m.reference(*xs, **smallest["attributes"]))
    check(ok, "forward != reference at %s: %s" % (smallest["name"], detail))
    del xs
print("materialised %s: %s" % (smallest["name"], materialised))
# the smoke sizes: never tuned
gen = torch.Generator().manual_seed(8)
xs = make(views, gen=gen)
why = m.dispatch(*xs, **smoke_attributes)
check(why.startswith("fallback: untuned sizes"), "smoke sizes: " + why)
ok, detail = same(lambda: m.forward(*xs, **smoke_attributes), lambda: m.reference(*xs, **smoke_attributes))
check(ok, "forward != reference at the smoke sizes: " + detail)
why = m.dispatch(*make(views, dtype=torch.float64), **smoke_attributes)
check(why.startswith("fallback:") and "torch.float64" in why, "float64: " + why)
why = m.dispatch(*make(smallest["sizes"], device="meta", dtype=torch.float64), **smallest["attributes"])
check(why.startswith("fallback:") and "torch.float64" in why, "float64 at a tuned shape: " + why)
xs = make(views, dtype=torch.float32, requires_grad=True)
if all(t["dtype"] == "f32" for t in inputs):
    why = m.dispatch(*xs, **smoke_attributes)
    check(why.startswith("fallback:") and "requires grad" in why, "requires_grad: " + why)
    with torch.no_grad():
        why = m.dispatch(*xs, **smoke_attributes)
    check(why.startswith("fallback: untuned"), "requires_grad under no_grad: " + why)
    y = m.forward(*xs, **smoke_attributes)
    check(y.requires_grad, "the fallback keeps autograd")
# the library: a missing prebuilt one fails once, with one warning, and is not retried
os.environ["KB_%s_LIBRARY" % manifest["problem"].upper()] = os.path.join(package_dir, "missing.so")
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    check(m._library() is None and m._library() is None, "a missing library loaded")
check(len(caught) == 1 and "falls back to PyTorch" in str(caught[0].message), "warnings: %s" % [str(w.message) for w in caught])
check("missing.so" in (m._LIBRARY_ERROR or ""), "the load error: %s" % m._LIBRARY_ERROR)
check(libraries() == [], "something built a library: %s" % libraries())
print("ok" if not failures else "failed")
sys.exit(1 if failures else 0)
'''


def torch_python(preferred):
    seen = []
    for c in [preferred, os.environ.get("KB_TORCH_PYTHON"), sys.executable, shutil.which("python3"), "/usr/bin/python3"]:
        if not c or c in seen or not os.path.exists(c):
            continue
        seen.append(c)
        rc, so, _ = run([c, "-c", "import torch; print(torch.__version__)"], timeout=300)
        if rc == 0:
            return c, so.strip()
    return None, None


def torch_checks(work, exports, python):
    home = work / "home"
    home.mkdir(exist_ok=True)
    env = dict(os.environ, HOME=str(home), XDG_CACHE_HOME=str(home / ".cache"), PYTHONDONTWRITEBYTECODE="1")
    for name, out, manifest in exports:
        prob = problem_json(manifest["problem"])
        smoke = next(s for s in prob["shapes"] if s.get("tier") == "smoke")
        views = {t["name"]: [evaluate(str(e), smoke["dims"]) for e in t["view"]] for t in manifest["tensors"]}
        attrs = {a["name"]: smoke["dims"][a["dim"]] for a in manifest["attributes"]}
        package = out / "torch" / manifest["api"]
        rc, so, se = run([python, "-c", PACKAGE_CHECK, out / "manifest.json", package, json.dumps(views),
                          json.dumps(attrs)], env=env, timeout=600)
        check(rc == 0 and so.strip().endswith("ok"), "%s: the package on CPU (%d)\n%s%s" % (name, rc, so, se[-4000:]))
        print("%s: %s" % (name, so.strip().splitlines()[0] if so.strip() else "-"), flush=True)
        rc, so, se = run([python, "-m", manifest["api"], "info"], cwd=package.parent, env=env, timeout=300)
        check(rc == 0 and all(s["name"] in so for s in manifest["shapes"]) and "library:" in so,
              "%s: python3 -m %s info (%d)\n%s%s" % (name, manifest["api"], rc, so, se))
        check(not list(package.glob("*.so")), "%s: info built a library" % name)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("mode", choices=["standalone", "torch"])
    ap.add_argument("--cli", required=True, help="the kernelbrain binary")
    ap.add_argument("--work", required=True, help="a scratch directory (emptied first)")
    ap.add_argument("--python", help="a python3 with torch (torch mode; default: the first that imports it)")
    args = ap.parse_args()
    cli = Path(args.cli).resolve()
    work = Path(args.work).resolve()

    python, version = None, None
    if args.mode == "standalone":
        if not find_nvcc():
            skip("nvcc not found ($CUDA_HOME/bin, /usr/local/cuda/bin, PATH)", "the CUDA toolkit, nvidia-cuda-toolkit")
    else:
        python, version = torch_python(args.python)
        if not python:
            skip("no python3 here imports torch", "python3-torch")
        print("torch %s with %s" % (version, python))

    if work.exists():
        shutil.rmtree(work)
    work.mkdir(parents=True)
    ex = Exporter(cli, work)
    exports = all_exports(ex, work)
    cli_checks(cli, work, exports)
    if args.mode == "standalone":
        standalone(cli, work, exports)
    else:
        torch_checks(work, exports, python)
    if failures:
        print("%d failure(s)" % len(failures))
        return 1
    print("all export checks passed (%s)" % args.mode)
    return 0


if __name__ == "__main__":
    sys.exit(main())
