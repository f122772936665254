#!/usr/bin/env python3
"""Lists Swift functions (func, init, computed bodies of closures excluded)
longer than a limit, counted from the line of `func`/`init` to the line of
its closing brace, string literals and comments skipped.

Usage: Tools/function-lengths.py [--limit N] [DIR...]   (default 80, Sources)
Prints one line per long function (lines, file:line, name) and a total.
"""
import os, re, sys

limit, dirs = 80, []
args = sys.argv[1:]
while args:
    a = args.pop(0)
    if a == "--limit": limit = int(args.pop(0))
    else: dirs.append(a)
dirs = dirs or ["Sources"]
start = re.compile(r'^\s*(?:@\w+(?:\([^)]*\))?\s+)*(?:(?:public|private|fileprivate|internal|static|class|final|override|mutating|nonmutating|@discardableResult|convenience|required)\s+)*(func\s+[^\s(<]+|init[?!]?)\s*[(<]')

def strip(line, state):
    """The line without string literals and comments; state carries block comments and multi-line strings."""
    out, i = [], 0
    while i < len(line):
        if state["block"]:
            j = line.find("*/", i)
            if j < 0: return "".join(out)
            state["block"], i = False, j + 2; continue
        if state["multi"]:
            j = line.find('"""', i)
            if j < 0: return "".join(out)
            state["multi"], i = False, j + 3; continue
        if line.startswith("//", i): break
        if line.startswith("/*", i): state["block"], i = True, i + 2; continue
        if line.startswith('"""', i): state["multi"], i = True, i + 3; continue
        if line[i] == '"':
            j = i + 1
            while j < len(line) and line[j] != '"':
                j += 2 if line[j] == "\\" else 1
            i = j + 1; continue
        out.append(line[i]); i += 1
    return "".join(out)

long = []
for d in dirs:
    for root, _, files in os.walk(d):
        for f in sorted(files):
            if not f.endswith(".swift"): continue
            path = os.path.join(root, f)
            lines = open(path, encoding="utf-8").read().split("\n")
            state = {"block": False, "multi": False}
            code = [strip(l, state) for l in lines]
            for n, l in enumerate(code):
                m = start.match(l)
                if not m: continue
                depth, opened = 0, False
                for k in range(n, len(code)):
                    for ch in code[k]:
                        if ch == "{": depth += 1; opened = True
                        elif ch == "}": depth -= 1
                    if opened and depth <= 0:
                        length = k - n + 1
                        if length > limit: long.append((length, f"{path}:{n + 1}", m.group(1)))
                        break
                    if not opened and k > n + 5: break
for length, where, name in sorted(long, reverse=True):
    print(f"{length:4d}  {where}  {name}")
print(f"{len(long)} functions over {limit} lines")
