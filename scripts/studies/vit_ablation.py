#!/usr/bin/env python3
"""The ERA5 ViT's disagreements with Subramanian et al. (PMBS'24), by ablation: the paper's
assumptions applied one at a time, each a `--set` on the same searches, and what each does to the
NVLink-domain gain (domain 4 -> 64 at 4,096 GPUs), to SUMMA's gain alone and to HBM capacity.
Prints markdown: each table's commands, then the table; every number is this run's.

    vit_ablation.py BIN   (run from the repository root; scripts/studies.sh calls it)
"""
import json
import subprocess
import sys

BIN = sys.argv[1]
VIT = "examples/search-vit-era5.json"

# Cumulative: each step keeps the ones above it. What the paper's code assumes
# (ShashankSubramanian/transformer-perf-estimates): its three strategies with fused attention and
# the K/V of context parallelism all-gathered before attention and exposed, the default rank order
# (no Ulysses, no orders); optimizer state sharded over dp x cp and nothing else (ZeRO-1), no
# recompute (execution.py); every op at a flat 0.8 of peak.
STEPS = [
    ("this project: every layout searched", []),
    ("+ the paper's search space: no Ulysses, one rank order, context parallelism as exposed K/V all-gathers",
     ["parallel.order=tp-cp-dp-pp", "parallel.cp_kind=all_gather"]),
    ("+ its memory choices: ZeRO-1, no recompute", ["parallel.zero=1", "parallel.recompute=none"]),
    ("+ its compute: every GEMM and attention at a flat 0.8 of peak, no kernel latency",
     ["system.efficiency.gemm_max=0.8", "system.efficiency.gemm_half_dim=0", "system.efficiency.gemm_half_tokens=0",
      "system.efficiency.attention_max=0.8", "system.efficiency.attention_half_tokens=0", "system.efficiency.kernel_latency_s=0"]),
]


def sweep(sets, varies):
    args = [BIN, "sweep", VIT, "--mode", "search", "--gpus", "4096", "--format", "json", "--no-progress"]
    if sets:
        args += ["--set", *sets]
    for v in varies:
        args += ["--vary", v]
    out = subprocess.run(args, capture_output=True, text=True, check=True).stdout
    return json.loads(out)["points"], "scalemodel " + " ".join(args[1:]).replace(" --format json --no-progress", "")


def times(points, key):
    """step_time_s by the value of the varied field `key` (the best over other varied fields)."""
    best = {}
    for p in points:
        if p.get("status") != "ok":
            continue
        k = p["inputs"][key]
        best[k] = min(best.get(k, float("inf")), p["step_time_s"])
    return best


def cumulative(i):
    return [s for _, sets in STEPS[: i + 1] for s in sets]


def step_name(i):
    """The first step by its name; the last, which holds every assumption, as all of them."""
    return STEPS[0][0] if i == 0 else "all of the paper's assumptions"


def domain_table():
    print("| step | A100: domain 4 | domain 64 | gain | H200: domain 4 | domain 64 | gain |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    commands = []
    for i, (what, _) in enumerate(STEPS):
        row = [what]
        for system in ("dgx-a100-80gb", "dgx-h200"):
            pts, cmd = sweep(cumulative(i) + [f"system.preset={system}"], ["system.scale_up.domain_gpus=4,64"])
            commands.append(cmd)
            t = times(pts, "system.scale_up.domain_gpus")
            row += [f"{t[4]:.1f} s", f"{t[64]:.1f} s", f"{t[4] / t[64]:.2f}x"]
        print("| " + " | ".join(row) + " |")
    print("| the paper (4,096 GPUs, domain 4 -> 64) | | | 1.45x | | | 1.34x |")
    return commands


def summa_table():
    print("| step | A100, SUMMA only (tp_rows 2, 4 or 8): domain 4 | domain 64 | gain |")
    print("|---|---:|---:|---:|")
    commands = []
    for i in (0, len(STEPS) - 1):
        pts, cmd = sweep(cumulative(i), ["system.scale_up.domain_gpus=4,64", "parallel.tp_rows=2,4,8"])
        commands.append(cmd)
        t = times(pts, "system.scale_up.domain_gpus")
        print(f"| {step_name(i)} | {t[4]:.1f} s | {t[64]:.1f} s | {t[4] / t[64]:.2f}x |")
    print("| the paper | | | 1.89x |")
    return commands


def capacity_table():
    print("| step | domain | GPT-3 175B: 40 GB | 192 GB | gain | ViT: 40 GB | 192 GB | gain |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    commands = []
    for i in (0, len(STEPS) - 1):
        pts, cmd = sweep(cumulative(i) + ["system.preset=dgx-h100"],
                         ["model.preset=gpt3-175b,vit-era5", "system.scale_up.domain_gpus=8,64",
                          "system.accelerator.memory_bytes=40e9,192e9"])
        commands.append(cmd)
        for domain in (8, 64):
            t = {(p["inputs"]["model.preset"], p["inputs"]["system.accelerator.memory_bytes"]): p["step_time_s"]
                 for p in pts if p.get("status") == "ok" and p["inputs"]["system.scale_up.domain_gpus"] == domain}
            row = [step_name(i), str(domain)]
            for model in ("gpt3-175b", "vit-era5"):
                a, b = t[(model, 40e9)], t[(model, 192e9)]
                row += [f"{a:.2f} s", f"{b:.2f} s", f"{a / b:.2f}x"]
            print("| " + " | ".join(row) + " |")
    return commands


def main():
    for title, table in (("The NVLink-domain gain of the ViT at 4,096 GPUs, the paper's assumptions added one at a time", domain_table),
                         ("SUMMA alone, domain 4 -> 64 (A100, 4,096 GPUs)", summa_table),
                         ("HBM capacity 40 -> 192 GB (DGX H100 otherwise, 4,096 GPUs)", capacity_table)):
        print(f"\n### {title}\n")
        commands = table()
        print("\nCommands (each row one sweep; `--set` lists the step's assumptions and those above it):\n")
        print("```")
        for c in commands:
            print(c)
        print("```")


if __name__ == "__main__":
    main()
