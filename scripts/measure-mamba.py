#!/usr/bin/env python3
"""Time the Mamba-2 kernels that Megatron-Core's MambaMixer runs, on the GPU at hand.

Run on a machine with an NVIDIA GPU, PyTorch, Triton and the Python sources of mamba_ssm (its
Triton kernels only; no compiled extension is needed) on PYTHONPATH; never in tests or CI:

    python3 scripts/measure-mamba.py OUT.csv [KERNELS.csv]

What is timed, per GPU, for the mixer shapes of docs/CALIBRATION.md ("Mamba-2 mixers"):
`mamba_chunk_scan_combined` (the SSD scan: chunk cumsum, C B^T per chunk, chunk states, state
passing, chunk scan; dt softplus with bias, D skip, no z) forward, and forward plus backward, and
the gated RMSNorm (`rmsnorm_fn` with z, groups of the inner width over the B/C groups) after it.
One CSV row per measurement: kind, heads, groups, head_dim, state_dim, chunk, seq, the median
time of one call (`time_s`, back to back), the sum of its kernels' durations (`gpu_s`) and the
host's time to issue it (`host_s`); KERNELS.csv gets each kernel's time per call.
"""
import csv
import importlib.util
import pathlib
import subprocess
import sys
import types

import torch

_spec = importlib.util.spec_from_file_location("measure_kernels", pathlib.Path(__file__).with_name("measure-kernels.py"))
KERNELS_SCRIPT = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(KERNELS_SCRIPT)


def stub_packages():
    """Load mamba_ssm's Triton modules without running its package __init__ files, which import
    its compiled CUDA extensions: each package is an empty module whose path is its folder."""
    root = pathlib.Path(importlib.util.find_spec("mamba_ssm").submodule_search_locations[0])
    for name, folder in (("mamba_ssm", root), ("mamba_ssm.ops", root / "ops"),
                         ("mamba_ssm.ops.triton", root / "ops" / "triton"), ("mamba_ssm.utils", root / "utils")):
        mod = types.ModuleType(name)
        mod.__path__ = [str(folder)]
        sys.modules[name] = mod


KERNELS = {}  # (measurement, kernel name) -> seconds per call, written to the optional second CSV


def gpu_s(fn, calls=5, label=None):
    """GPU time of one call: the sum of its kernels' durations (torch.profiler), host gaps excluded."""
    from torch.profiler import ProfilerActivity, profile
    fn()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(calls):
            fn()
        torch.cuda.synchronize()
    kernels = [e for e in prof.key_averages() if e.device_type == torch.autograd.DeviceType.CUDA]
    if label is not None:
        for e in kernels:
            KERNELS[(label, e.key)] = e.self_device_time_total / 1e6 / calls
    return sum(e.self_device_time_total for e in kernels) / 1e6 / calls


def host_s(fn, calls=5):
    """Host time of one call, the queue not full: what the CPU spends launching its kernels."""
    import time
    fn()
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(calls):
        fn()
    t1 = time.perf_counter()
    torch.cuda.synchronize()
    return (t1 - t0) / calls


def time_s(fn, reps=20):
    """Median back-to-back time per call: measure-kernels.py's timer (its 3 warm-up calls autotune)."""
    return KERNELS_SCRIPT.time_s(fn, reps)


# (heads, groups) per GPU: Nemotron-H 56B's mixer (inner width 16,384 = 256 heads of 64, 8 groups)
# at tp 8, 4 and 2; state 256, chunk 128 (NemotronHConfigBase, MambaMixer defaults); 8,192 tokens.
SHAPES = [
    (32, 1, 64, 256, 128, 8192),
    (64, 2, 64, 256, 128, 8192),
    (128, 4, 64, 256, 128, 8192),
    (32, 1, 64, 256, 128, 4096),
    (32, 1, 64, 128, 128, 8192),
    (32, 1, 64, 256, 256, 8192),
]
if len(sys.argv) > 3:  # a subset, by index: "0,1,2"
    SHAPES = [SHAPES[int(i)] for i in sys.argv[3].split(",")]


def main():
    out_path = sys.argv[1]
    stub_packages()
    from mamba_ssm.ops.triton.ssd_combined import mamba_chunk_scan_combined
    from mamba_ssm.ops.triton.layernorm_gated import rmsnorm_fn

    dev = "cuda"
    torch.manual_seed(0)
    info = subprocess.run(["nvidia-smi", "--query-gpu=name,power.limit", "--format=csv,noheader"],
                          capture_output=True, text=True).stdout.strip()
    with open(out_path, "w", newline="") as f:
        f.write(f"# torch={torch.__version__} gpu={info}\n")
        w = csv.writer(f)
        w.writerow(["kind", "heads", "groups", "head_dim", "state_dim", "chunk", "seq", "time_s",
                    "gpu_s", "host_s"])
        for (h, g, p, n, chunk, seq) in SHAPES:
            bf = dict(device=dev, dtype=torch.bfloat16)
            x = torch.randn(1, seq, h, p, **bf).requires_grad_()
            dt = torch.randn(1, seq, h, **bf).requires_grad_()
            a = (-torch.rand(h, device=dev, dtype=torch.float32) * 4 - 1).requires_grad_()
            b = torch.randn(1, seq, g, n, **bf).requires_grad_()
            c = torch.randn(1, seq, g, n, **bf).requires_grad_()
            d = torch.ones(h, device=dev, dtype=torch.float32).requires_grad_()
            dt_bias = torch.rand(h, device=dev, dtype=torch.float32).requires_grad_()

            def fwd():
                return mamba_chunk_scan_combined(x, dt, a, b, c, chunk, D=d, dt_bias=dt_bias,
                                                 dt_softplus=True)

            y = fwd()
            dy = torch.randn_like(y)

            def fwd_bwd():  # gradients returned, not accumulated into .grad (no extra additions)
                torch.autograd.grad(fwd(), [x, dt, a, b, c, d, dt_bias], dy)

            key = [h, g, p, n, chunk, seq]
            label = "-".join(map(str, key))
            t_fwd, g_fwd = time_s(fwd), gpu_s(fwd, label=f"ssd_scan_fwd:{label}")
            t_all, g_all = time_s(fwd_bwd), gpu_s(fwd_bwd, label=f"ssd_scan_fwd_bwd:{label}")
            w.writerow(["ssd_scan_fwd"] + key + [t_fwd, g_fwd, host_s(fwd)])
            w.writerow(["ssd_scan_fwd_bwd"] + key + [t_all, g_all, host_s(fwd_bwd)])

            width = h * p
            y2 = torch.randn(seq, width, **bf).requires_grad_()
            z = torch.randn(seq, width, **bf).requires_grad_()
            weight = torch.ones(width, **bf).requires_grad_()

            def norm():
                return rmsnorm_fn(y2, weight, None, z=z, eps=1e-5, group_size=width // g,
                                  norm_before_gate=False)

            dn = torch.randn(seq, width, **bf)

            def norm_bwd():
                torch.autograd.grad(norm(), [y2, z, weight], dn)

            w.writerow(["gated_norm_fwd"] + key + [time_s(norm), gpu_s(norm, label=f"gated_norm_fwd:{label}"),
                                                   host_s(norm)])
            w.writerow(["gated_norm_fwd_bwd"] + key + [time_s(norm_bwd),
                                                       gpu_s(norm_bwd, label=f"gated_norm_fwd_bwd:{label}"),
                                                       host_s(norm_bwd)])
            f.flush()
            print(key, f"scan fwd {t_fwd*1e6:.0f} us (kernels {g_fwd*1e6:.0f}), fwd+bwd "
                  f"{t_all*1e6:.0f} us (kernels {g_all*1e6:.0f})", flush=True)
    if len(sys.argv) > 2:
        with open(sys.argv[2], "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(["measurement", "shape", "kernel", "gpu_s"])
            for (label, name), t in sorted(KERNELS.items()):
                what, shape = label.split(":")
                w.writerow([what, shape, name, t])


if __name__ == "__main__":
    main()
