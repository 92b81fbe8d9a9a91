#!/usr/bin/env python3
"""No include cycles between the library's modules.

A module is a folder of include/kernelbrain/ (core, defaults, io, isolation, detail, distribute,
testing, generate/llm, ...); each backend folder (backends/host, backends/cuda, ...) and each file
directly in backends/ (the registry's headers, builtin.hpp) is a module of its own. The umbrella
headers (search.hpp, src.hpp) include everything and are left out. Prints the module graph and
exits 1 on a cycle, naming the includes that make it.
Usage: tools/check-include-cycles.py [include-dir]   (default: the include/ beside tools/)
"""
import os
import re
import sys
from collections import defaultdict

root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "include")
umbrellas = {"search.hpp", "src.hpp"}


def module(path):
    parts = path.split("/")[1:]  # drop "kernelbrain"
    if len(parts) == 1:
        return parts[0]
    if parts[0] == "backends":
        return "backends/" + (parts[1].removesuffix(".hpp") if len(parts) == 2 else parts[1])
    if parts[0] == "generate" and len(parts) > 2:
        return "generate/" + parts[1]
    return parts[0]


edges = defaultdict(dict)  # module -> {module: "file includes header"}
for folder, _, files in os.walk(os.path.join(root, "kernelbrain")):
    for name in files:
        path = os.path.join(folder, name)
        rel = os.path.relpath(path, root)
        here = module(rel)
        if here in umbrellas:
            continue
        with open(path, encoding="utf-8") as f:
            for inc in re.findall(r'#\s*include\s+[<"](kernelbrain/[^">]+)[">]', f.read()):
                there = module(inc)
                if there != here:
                    edges[here].setdefault(there, f"{rel} includes {inc}")

for m in sorted(edges):
    print(f"{m} -> {', '.join(sorted(edges[m]))}")

cycles = set()


def visit(node, stack):
    for nxt in edges.get(node, {}):
        if nxt in stack:
            cycle = stack[stack.index(nxt):]
            i = cycle.index(min(cycle))
            cycles.add(tuple(cycle[i:] + cycle[:i]))
        else:
            visit(nxt, stack + [nxt])


for m in list(edges):
    visit(m, [m])
for cycle in sorted(cycles):
    print("include cycle: " + " -> ".join(cycle + (cycle[0],)))
    for a, b in zip(cycle, cycle[1:] + (cycle[0],)):
        print(f"  {edges[a][b]}")
sys.exit(1 if cycles else 0)
