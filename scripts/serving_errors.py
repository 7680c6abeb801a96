#!/usr/bin/env python3
"""Error of the fixed-concurrency serving rows, broken down the way docs/CALIBRATION.md reports it.

    build/scalemodel validate --dataset ../shared/validation/serving_aic_public.csv --format json \
        | python3 scripts/serving_errors.py ../shared/validation/serving_aic_public.csv

Reads `validate`'s JSON on stdin and the data set (for each row's backend and concurrency); prints,
per metric (TTFT, TPOT): the count, mean and median |error|, the median signed error and the share
within 25%, overall, per backend and per concurrency bucket. Standard library only.
"""
import csv
import json
import statistics
import sys
from collections import defaultdict

BUCKETS = (4, 16, 64, 256)  # concurrency up to each, then the rest


def bucket(concurrency):
    for b in BUCKETS:
        if concurrency <= b:
            return f"C <= {b}"
    return f"C > {BUCKETS[-1]}"


def line(name, errors):
    a = [abs(e) for e in errors]
    return (f"  {name:<14} {len(errors):>5}  mean |e| {100 * statistics.mean(a):6.1f}%  median |e| "
            f"{100 * statistics.median(a):6.1f}%  median {100 * statistics.median(errors):+6.1f}%  "
            f"within 25% {100 * sum(x < 0.25 for x in a) / len(a):3.0f}%")


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: validate --format json | serving_errors.py DATASET.csv")
    with open(sys.argv[1], newline="") as f:
        rows = {r["id"]: r for r in csv.DictReader(f)}
    cases = json.load(sys.stdin)["cases"]
    for metric in ("tpot_s", "ttft_s"):
        groups = defaultdict(list)
        for c in cases:
            row = rows.get(c["id"])
            if c["metric"] != metric or row is None or not row.get("concurrency"):
                continue
            groups["all"].append(c["error"])
            groups[row["backend"]].append(c["error"])
            groups[bucket(int(row["concurrency"]))].append(c["error"])
        if not groups:
            continue
        print(metric)
        order = ["all", *sorted(k for k in groups if k != "all" and not k.startswith("C ")),
                 *[k for k in [f"C <= {b}" for b in BUCKETS] + [f"C > {BUCKETS[-1]}"] if k in groups]]
        for k in order:
            print(line(k, groups[k]))


if __name__ == "__main__":
    main()
