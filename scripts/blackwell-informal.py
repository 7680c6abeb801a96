#!/usr/bin/env python3
"""Calibration aid, not validation: run the B200/GB200 rows of training_nvidia_2025.csv whose
recompute setting was not published as if it had been RECOMPUTE (none|selective|full), and
print each row's error. `scalemodel validate` skips these rows; their errors here only
sanity-check the Blackwell constants (docs/CALIBRATION.md) and must never be fitted row by row.
usage: blackwell-informal.py SCALEMODEL [RECOMPUTE] [--set PATH=VALUE ...]"""
import csv, io, json, subprocess, sys

exe = sys.argv[1]
recompute = sys.argv[2] if len(sys.argv) > 2 and not sys.argv[2].startswith("--") else "none"
extra = [a for a in sys.argv[2:] if a != recompute]
src = "data/validation/training_nvidia_2025.csv"
rows = [r for r in csv.DictReader(open(src)) if r["system"] in ("dgx-b200", "gb200-nvl72")
        and r["measured_step_time_s"] and r["unpublished_fields"].split(";")[0] == "recompute"]
for r in rows:
    r["recompute"] = recompute
    r["unpublished_fields"] = "measured_peak_mem_gib"
    # The NeMo performance pages state FP8 per-tensor current scaling in their text.
    r["notes"] = ""
out = io.StringIO()
w = csv.DictWriter(out, fieldnames=list(rows[0].keys()))
w.writeheader()
w.writerows(rows)
open("/tmp/blackwell-informal.csv", "w").write(out.getvalue())
ctx = json.load(open("data/validation/training_nvidia_2025.context.json"))
json.dump(ctx, open("/tmp/blackwell-informal.context.json", "w"))
res = subprocess.run([exe, "validate", "--dataset", "/tmp/blackwell-informal.csv", "--format", "json", *extra],
                     capture_output=True, text=True)
if res.returncode:
    sys.exit(res.stderr)
rep = json.loads(res.stdout)
for c in rep["cases"]:
    print(f'{c["id"]:48} {c["measured"]:8.3f} {c["predicted"]:8.3f} {100 * c["error"]:+6.1f}%')
n = len(rep["cases"])
print(f"{n} rows, mean |error| {100 * sum(abs(c['error']) for c in rep['cases']) / max(n, 1):.1f}%")
for s in rep["skipped"]:
    print("skipped:", s[:140])
