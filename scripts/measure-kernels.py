#!/usr/bin/env python3
"""Measure the kernel efficiencies the cost model's constants stand for, on the GPU at hand.

Run on a machine with an NVIDIA GPU and PyTorch (never in tests or CI):

    python3 scripts/measure-kernels.py OUT.csv

One CSV row per measurement: kind (gemm_bf16, gemm_fp8, attention_fwd, attention_bwd,
memory_copy, memory_add, decode_attention), the shape, the median time of one kernel, and the
achieved rate (FLOP/s for math, bytes/s for memory). FLOP are counted as the model counts them
(src/model/ops.cpp): 2mnk per GEMM; attention 4 b h s^2 d, halved when causal; its backward
2.5x the forward. docs/CALIBRATION.md compares the figures with the presets' curves
(scripts/compare-kernels.py).
"""
import csv
import subprocess
import sys

import torch
import torch.nn.functional as F

DEV = "cuda"


def time_s(fn, reps):
    """Median over 5 batches of `reps` back-to-back launches, per launch (launch gaps hidden)."""
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    samples = []
    for _ in range(5):
        start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(reps):
            fn()
        stop.record()
        torch.cuda.synchronize()
        samples.append(start.elapsed_time(stop) / 1e3 / reps)
    samples.sort()
    return samples[len(samples) // 2]


def reps_for(flop, rate=5e14):
    """About 20 ms of work per batch, at least 3 and at most 2000 launches."""
    return int(min(2000, max(3, 0.02 / max(flop / rate, 1e-7))))


def gemm_shapes():
    shapes = set()
    for s in (512, 1024, 2048, 4096, 8192, 16384):
        shapes.add((s, s, s, "square"))
    for k in (128, 256, 512, 1024, 1536, 2048, 3072, 4096, 8192, 16384):
        shapes.add((8192, 8192, k, "k_sweep"))
    for n in (128, 256, 512, 1024, 1536, 2048, 3072, 4096, 16384):
        shapes.add((8192, n, 8192, "n_sweep"))
    for m in (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096):
        shapes.add((m, 8192, 8192, "m_sweep"))
    # GPT-3 175B per GPU at tp 8, one 2048-token micro-batch: forward (QKV, proj, fc1, fc2),
    # then each one's data- and weight-gradient GEMM.
    for (n, k) in ((4608, 12288), (12288, 1536), (6144, 12288), (12288, 6144)):
        shapes.add((2048, n, k, "gpt3_tp8_fwd"))
        shapes.add((2048, k, n, "gpt3_tp8_dgrad"))
        shapes.add((n, k, 2048, "gpt3_tp8_wgrad"))
    # Llama 3 70B per GPU at tp 8 (QKV 1280, o 8192x1024, gate+up 7168, down 8192x3584), and
    # Llama 3 8B at tp 1, 8192 tokens.
    for (n, k) in ((1280, 8192), (8192, 1024), (7168, 8192), (8192, 3584)):
        shapes.add((8192, n, k, "llama70b_tp8"))
    for (n, k) in ((6144, 4096), (4096, 4096), (28672, 4096), (4096, 14336)):
        shapes.add((8192, n, k, "llama8b_tp1"))
    return sorted(shapes, key=lambda s: (s[3], s[0], s[1], s[2]))


def measure_gemms(rows):
    fp8 = getattr(torch, "float8_e4m3fn", None)
    for (m, n, k, group) in gemm_shapes():
        flop = 2.0 * m * n * k
        a = torch.randn(m, k, device=DEV, dtype=torch.bfloat16)
        b = torch.randn(n, k, device=DEV, dtype=torch.bfloat16)
        t = time_s(lambda: torch.mm(a, b.t()), reps_for(flop))
        rows.append(dict(kind="gemm_bf16", group=group, m=m, n=n, k=k, time_s=t, rate=flop / t))
        if fp8 is not None and m % 16 == 0 and n % 16 == 0 and k % 16 == 0:
            a8, b8 = a.to(fp8), b.to(fp8)
            one = torch.ones((), device=DEV, dtype=torch.float32)
            try:
                t = time_s(lambda: torch._scaled_mm(a8, b8.t(), scale_a=one, scale_b=one,
                                                    out_dtype=torch.bfloat16), reps_for(flop, 1e15))
                rows.append(dict(kind="gemm_fp8", group=group, m=m, n=n, k=k, time_s=t, rate=flop / t))
            except RuntimeError as e:  # shape or build without fp8 GEMMs
                print("fp8", m, n, k, e, file=sys.stderr)
        del a, b
    torch.cuda.empty_cache()


def measure_attention(rows):
    from torch.nn.attention import SDPBackend, sdpa_kernel
    backends = [("flash", SDPBackend.FLASH_ATTENTION)]
    if hasattr(SDPBackend, "CUDNN_ATTENTION"):
        backends.append(("cudnn", SDPBackend.CUDNN_ATTENTION))
    for d in (64, 128):
        heads = 4096 // d
        for s in (1024, 2048, 4096, 8192, 16384):
            b = max(1, 16384 // s)
            for causal in (True, False):
                flop = 4.0 * b * heads * s * s * d * (0.5 if causal else 1.0)
                q, k, v = (torch.randn(b, heads, s, d, device=DEV, dtype=torch.bfloat16, requires_grad=True)
                           for _ in range(3))
                for name, backend in backends:
                    try:
                        with sdpa_kernel(backend):
                            fwd = lambda: F.scaled_dot_product_attention(q, k, v, is_causal=causal)
                            t_f = time_s(fwd, reps_for(flop, 3e14))
                            out = fwd()
                            g = torch.randn_like(out)

                            def both():
                                o = F.scaled_dot_product_attention(q, k, v, is_causal=causal)
                                o.backward(g)
                            t_fb = time_s(both, reps_for(3.5 * flop, 3e14))
                    except RuntimeError as e:
                        print("attention", name, d, s, e, file=sys.stderr)
                        continue
                    shape = dict(group=name, m=b * s, n=heads, k=d, seq=s, causal=int(causal))
                    rows.append(dict(kind="attention_fwd", time_s=t_f, rate=flop / t_f, **shape))
                    t_b = t_fb - t_f
                    rows.append(dict(kind="attention_bwd", time_s=t_b, rate=2.5 * flop / t_b, **shape))
                del q, k, v
    torch.cuda.empty_cache()


def measure_memory(rows):
    for p in range(14, 32, 1):
        nbytes = 2 ** p
        a = torch.empty(nbytes // 2, device=DEV, dtype=torch.bfloat16).normal_()
        b = torch.empty_like(a)
        c = torch.empty_like(a)
        t = time_s(lambda: b.copy_(a), reps_for(2 * nbytes, 2.5e12))
        rows.append(dict(kind="memory_copy", group="copy", m=nbytes, time_s=t, rate=2 * nbytes / t))
        t = time_s(lambda: torch.add(a, b, out=c), reps_for(3 * nbytes, 2.5e12))
        rows.append(dict(kind="memory_add", group="add", m=nbytes, time_s=t, rate=3 * nbytes / t))
        del a, b, c
    torch.cuda.empty_cache()


def measure_decode_attention(rows):
    """One query token per sequence against its K/V cache, grouped-query (8 query heads per K/V
    head, head dim 128): Llama 3 70B's per-GPU heads at tp 8. Rate = K/V bytes read per second."""
    for batch in (8, 64):
        for kv_len in (1024, 4096, 16384):
            q = torch.randn(batch, 8, 1, 128, device=DEV, dtype=torch.bfloat16)
            k = torch.randn(batch, 1, kv_len, 128, device=DEV, dtype=torch.bfloat16)
            v = torch.randn_like(k)
            kv_bytes = 2.0 * k.numel() * 2
            try:
                t = time_s(lambda: F.scaled_dot_product_attention(q, k, v, enable_gqa=True),
                           reps_for(kv_bytes, 2e12))
            except (RuntimeError, TypeError) as e:
                print("decode", batch, kv_len, e, file=sys.stderr)
                continue
            rows.append(dict(kind="decode_attention", group="sdpa_gqa8", m=batch, n=8, k=128,
                             seq=kv_len, time_s=t, rate=kv_bytes / t))


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else "kernels.csv"
    torch.backends.cuda.matmul.allow_tf32 = False
    rows = []
    smi = ["nvidia-smi", "--query-gpu=name,clocks.sm,clocks.max.sm,clocks.mem,power.draw,power.limit",
           "--format=csv,noheader"]
    env = dict(torch=torch.__version__, cuda=torch.version.cuda, gpu=torch.cuda.get_device_name(),
               cudnn=str(torch.backends.cudnn.version()))
    print(env, flush=True)
    for step in (measure_memory, measure_gemms, measure_attention, measure_decode_attention):
        step(rows)
        clocks = subprocess.run(smi, capture_output=True, text=True).stdout.strip()
        print(step.__name__, "done;", clocks, flush=True)
    keys = ["kind", "group", "m", "n", "k", "seq", "causal", "time_s", "rate"]
    with open(out, "w", newline="") as f:
        f.write("# " + " ".join(f"{k}={v}" for k, v in env.items()) + "\n")
        w = csv.DictWriter(f, fieldnames=keys, extrasaction="ignore")
        w.writeheader()
        for r in rows:
            w.writerow({k: r.get(k, "") for k in keys})


if __name__ == "__main__":
    main()
