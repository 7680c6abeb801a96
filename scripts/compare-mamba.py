#!/usr/bin/env python3
"""Set the Mamba-2 kernels measured on one GPU beside the model's costs of the same ops.

    python3 scripts/compare-mamba.py SCALEMODEL [--set PATH=VALUE ...] SYSTEM MEASURED.csv KERNELS.csv [SYSTEM ...]

MEASURED.csv and KERNELS.csv come from scripts/measure-mamba.py run on SYSTEM's GPU (a system
preset's name). Each measured shape is one
Nemotron-H 56B mixer on one GPU (256 heads of 64 and 8 groups over tp ranks), so the model is asked
for that mixer at tp = 256 / heads with the shape's sequence, state and chunk, and its per-op
costs (`train --ops --format json`) are summed: the ssd_* ops against mamba_chunk_scan_combined,
mamba_gated_norm against rmsnorm_fn. Measured kernel time excludes the bf16 additions that
accumulate the benchmark's leaf gradients (x.grad, z.grad) where a run did so, which a training
step does not do. `--set` passes overrides to the model (`--set system.efficiency.scan_max=0.09`
scores another constant). Prints markdown: a table per run, the scan's mean |log(model /
measured)| over every shape of every run, and each scan kernel's time in each run for the
narrowest shape the runs share.
"""
import argparse
import csv
import json
import math
import subprocess

ARTIFACT = "CUDAFunctor_add<c10::BFloat16>"  # leaf-gradient accumulation of the benchmark itself


def read_csv(path):
    with open(path) as f:
        return list(csv.DictReader(line for line in f if not line.startswith("#")))


def model_costs(binary, overrides, system, heads, state, chunk, seq):
    tp = 256 // heads
    scenario = {
        "model": {"preset": "nemotron-h-56b", "seq_len": seq, "mamba": {"state_dim": state, "chunk": chunk}},
        "system": {"preset": system},
        "parallel": {"tp": tp, "pp": 1, "dp": 1, "microbatch": 1, "recompute": "none", "sequence_parallel": True},
        "training": {"global_batch": 1, "precision": "bf16"},
    }
    sets = [a for o in overrides for a in ("--set", o)]
    out = subprocess.run([binary, "train", "-", "--ops", "--format", "json", *sets], input=json.dumps(scenario),
                         capture_output=True, text=True, check=True).stdout
    ops = json.loads(out)["ops"]["mamba_layer"]["ops"]
    sums = {}
    for op in ops:
        what = "scan" if op["name"].startswith("ssd_") else "norm" if op["name"] == "mamba_gated_norm" else None
        if what:
            fwd, all_ = sums.get(what, (0.0, 0.0))
            sums[what] = (fwd + op["fwd_s"], all_ + op["fwd_s"] + op["dgrad_s"] + op["wgrad_s"])
    return tp, sums


def compare(binary, overrides, system, measured_path, kernels_path):
    """One run's table; returns the scan's model / measured ratios (forward and backward)."""
    measured = read_csv(measured_path)
    artifacts = {}
    for k in read_csv(kernels_path):
        if ARTIFACT in k["kernel"]:
            where = (k["measurement"], k["shape"])
            artifacts[where] = artifacts.get(where, 0.0) + float(k["gpu_s"])
    shapes = {}
    for r in measured:
        key = tuple(int(r[c]) for c in ("heads", "groups", "head_dim", "state_dim", "chunk", "seq"))
        label = "-".join(map(str, key))
        shapes.setdefault(key, {})[r["kind"]] = float(r["gpu_s"]) - artifacts.get((r["kind"], label), 0.0)
    print(f"### {system}: `{measured_path}`\n")
    print("| op | heads x head dim (tp) | groups | state | chunk | tokens | measured fwd | model fwd | "
          "measured fwd+bwd | model fwd+bwd | model / measured (fwd+bwd) |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    ratios = {"scan": [], "norm": []}
    for key in sorted(shapes):
        heads, groups, head_dim, state, chunk, seq = key
        tp, model = model_costs(binary, overrides, system, heads, state, chunk, seq)
        for what, kind in (("scan", "ssd_scan"), ("norm", "gated_norm")):
            m_fwd, m_all = shapes[key][f"{kind}_fwd"], shapes[key][f"{kind}_fwd_bwd"]
            p_fwd, p_all = model[what]
            ratios[what].append(p_all / m_all)
            name = "SSD scan (ssd_* ops)" if what == "scan" else "gated RMSNorm"
            print(f"| {name} | {heads} x {head_dim} ({tp}) | {groups} | {state} | {chunk} | {seq} | "
                  f"{m_fwd * 1e6:.0f} us | {p_fwd * 1e6:.0f} us | {m_all * 1e6:.0f} us | {p_all * 1e6:.0f} us | "
                  f"{p_all / m_all:.2f} |")
    print(f"\nForward and backward, model / measured: SSD scan {min(ratios['scan']):.2f} to "
          f"{max(ratios['scan']):.2f}, gated RMSNorm {min(ratios['norm']):.2f} to {max(ratios['norm']):.2f} "
          f"({len(ratios['scan'])} shapes).\n")
    return ratios["scan"]


def kernel_times(kernels_path, shape):
    """Each scan kernel's time per forward and backward call of `shape` (mamba_ssm's Triton kernels by
    name, PyTorch's own together), leaf-gradient additions left out."""
    times = {}
    for k in read_csv(kernels_path):
        if k["measurement"] == "ssd_scan_fwd_bwd" and k["shape"] == shape and ARTIFACT not in k["kernel"]:
            name = k["kernel"] if k["kernel"].startswith("_") else "PyTorch kernels (reductions, fills, copies)"
            times[name] = times.get(name, 0.0) + float(k["gpu_s"])
    return times


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("binary")
    parser.add_argument("--set", action="append", default=[], dest="overrides")
    parser.add_argument("runs", nargs="+", help="SYSTEM MEASURED.csv KERNELS.csv, repeated")
    a = parser.parse_args()
    runs = [a.runs[i:i + 3] for i in range(0, len(a.runs), 3)]
    command = " ".join(["build/scalemodel"] + [f"--set {o}" for o in a.overrides] + a.runs)
    print("## Mamba-2 mixer kernels (mamba_ssm's Triton kernels)\n")
    print(f"Generated by `make docs`: `python3 scripts/compare-mamba.py {command}`; measured with "
          "`scripts/measure-mamba.py` (the sum of one call's kernel times, torch.profiler), "
          "each against the model's costs of the same ops on that GPU's preset. docs/CALIBRATION.md, "
          "\"Mamba-2 mixers\", says what they mean.\n")
    ratios = [r for run in runs for r in compare(a.binary, a.overrides, *run)]
    print(f"SSD scan over all {len(ratios)} shapes: mean |log(model / measured)| "
          f"{sum(abs(math.log(r)) for r in ratios) / len(ratios):.3f}.\n")
    # The narrowest shape the runs share (tp 8's): where the kernels are furthest from the GEMM curve.
    shared = set.intersection(*({k["shape"] for k in read_csv(run[2])} for run in runs))
    for shape in sorted(shared, key=lambda x: (int(x.split("-")[0]), -int(x.split("-")[-1])))[:1]:
        times = [kernel_times(run[2], shape) for run in runs]
        names = sorted(set().union(*times), key=lambda n: -max(t.get(n, 0.0) for t in times))
        print(f"### Scan kernels per forward and backward call, shape {shape} (heads-groups-head dim-state-chunk-tokens)\n")
        print("| kernel | " + " | ".join(run[0] for run in runs) + " |")
        print("|---|" + "---|" * len(runs))
        for n in names:
            print(f"| `{n}` | " + " | ".join(f"{t.get(n, 0.0) * 1e6:.1f} us" for t in times) + " |")
        print()


if __name__ == "__main__":
    main()
