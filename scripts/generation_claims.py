#!/usr/bin/env python3
"""GPU generations side by side with the vendor's and Kundu et al.'s training claims.

Usage: generation_claims.py SCALEMODEL [GPUS]. Each row is `scalemodel search` of one example
scenario (examples/studies/) at GPUS GPUs (default 4,096), best layout re-searched per system;
speedups are ratios of step time. Claims are quoted, not reproduced: see docs/studies/.
"""
import json
import subprocess
import sys

BIN = sys.argv[1]
GPUS = sys.argv[2] if len(sys.argv) > 2 else "4096"
E = "examples/studies"
ROWS = [  # (label, scenario stem, extra --set)
    ("DGX A100 80GB, bf16", "a100-bf16", []),
    ("DGX H100, fp8", "h100-fp8", []),
    ("DGX B200, fp8", "b200-fp8", []),
    ("GB200 NVL72, fp8", "gb200-fp8", []),
    ("DGX B200, fp4 (upper bound)", "b200-fp8", ["--set", "training.precision=fp4"]),
    ("GB200 NVL72, fp4 (upper bound)", "gb200-fp8", ["--set", "training.precision=fp4"]),
]
MODELS = [("GPT-3 175B", "gpt3-175b"), ("GPT-MoE-1.8T", "gpt-moe-1.8t")]


def best(model, stem, extra):
    cmd = [BIN, "search", f"{E}/{model}-{stem}.json", "--gpus", GPUS, "--top", "1", "--format", "json", *extra]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    r = json.loads(out)["results"][0]
    p = r["parallel"]
    rows = p.get('tp_rows', 1)  # SUMMA grids show as tp8=2x4 (rows x columns)
    grid = f"={rows}x{p['tp'] // rows}" if rows > 1 else ""
    layout = f"tp{p['tp']}{grid} pp{p['pp']} dp{p['dp']} cp{p['cp']} ep{p['ep']} vp{p['vp']} mb{p['microbatch']} z{p['zero']} {p['recompute']}"
    return r["step_time_s"], r["mfu"], layout


for title, model in MODELS:
    print(f"### {title}, {int(GPUS):,} GPUs\n")
    print("| system, precision | step time | MFU | vs A100 bf16 | vs row above | best layout |")
    print("|---|---:|---:|---:|---:|---|")
    base = prev = None
    for label, stem, extra in ROWS:
        t, mfu, layout = best(model, stem, extra)
        base = base or t
        above = f"{prev / t:.2f}x" if prev else "-"
        print(f"| {label} | {t:.3f} s | {100 * mfu:.1f}% | {base / t:.2f}x | {above} | {layout} |")
        prev = t
    print()
