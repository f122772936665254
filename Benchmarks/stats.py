#!/usr/bin/env python3
"""Reads 'label value' lines on stdin.

  stats.py                      median, p10, p90 and n per label
  stats.py --ratio A B TEXT     also: median(A) / median(B), followed by TEXT (the target)
"""
import statistics, sys

data = {}
for line in sys.stdin:
    parts = line.split()
    if len(parts) == 2:
        data.setdefault(parts[0], []).append(float(parts[1]))
for label, values in data.items():
    values.sort()
    q = lambda p: values[min(len(values) - 1, int(p * len(values)))]
    print(f"{label} median={statistics.median(values):.2f} p10={q(0.1):.2f} p90={q(0.9):.2f} n={len(values)}")
if len(sys.argv) >= 4 and sys.argv[1] == "--ratio":
    a, b = statistics.median(data[sys.argv[2]]), statistics.median(data[sys.argv[3]])
    print(f"ratio {sys.argv[2]}/{sys.argv[3]} {a / b:.2f}, difference {a - b:+.1f} ({' '.join(sys.argv[4:])})")
