#!/usr/bin/env python3
"""Reads 'label value_ms' lines on stdin; prints median, p10, p90 and n per label."""
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
