#pragma once
#include <array>
#include <cstdint>
#include <optional>
#include <string>

#include "core/precision.hpp"

namespace sm {

// Which units run decode attention (one query token per sequence against its K/V cache):
// tensor_core, a kernel that stacks the query heads sharing a K/V head into one matrix product
// (TensorRT-LLM's XQA, FlashInfer's and FlashAttention's decode kernels); cuda_core, one that
// computes each query head's dot products on the vector units (TensorRT-LLM's masked MHA), so
// grouped-query attention's group-size-fold reuse of each K/V byte is paid at the vector rate.
enum class DecodeAttentionUnits : uint8_t { tensor_core, cuda_core };

// Achievable fractions of peak and fixed overheads: the calibration of the cost model.
// Shared by every scenario on a system; values and their sources in docs/CALIBRATION.md.
struct Efficiency {
    double gemm_max = 0.8;             // large-GEMM fraction of matrix peak
    double gemm_half_dim = 96;         // an n or k (weight) dimension this size halves its utilisation
    double gemm_half_tokens = 8;       // the same for m (tokens): the kernel's M-tile granularity
    double gemm_max_8bit = 0.8;        // large-GEMM fraction of the fp8/int8 peak
    double gemm_max_4bit = 0.8;        // large-GEMM fraction of the fp4/int4 peak
    double attention_max = 0.6;        // fused-attention fraction of the 16-bit matrix peak
    // Keys per query row at which fused attention reaches half of attention_max: a kernel's
    // inner loop over key blocks amortises its prologue, epilogue and causal diagonal over the
    // sequence. 0: the same efficiency at every length.
    double attention_half_tokens = 0;
    // The Mamba-2 SSD scan's products (mamba_ssm's chunked-scan Triton kernels: tiles of the
    // chunk, state and head dimensions, 64-256 wide) as a fraction of the 16-bit matrix peak.
    double scan_max = 0.10;
    // Sustained clock under a training load over the clock the datasheet peaks are quoted at:
    // scales every matrix and vector peak (power- and thermally-limited parts run below boost).
    double clock_fraction = 1.0;
    double memory_max = 0.85;          // streaming fraction of HBM bandwidth
    double memory_half_bytes = 262144; // transfer size at which memory efficiency is half its max
    double kernel_latency_s = 4e-6;    // launch + tail per kernel
    double scale_up = 0.8;             // achieved fraction of scale-up link bandwidth (NCCL bus bw)
    double scale_out = 0.85;           // achieved fraction of scale-out NIC bandwidth
    double overlap_interference = 0.0; // compute slowdown per second of communication hidden behind it
    // Inference serving software on the host. An eager-mode framework dispatches each layer's
    // kernels and each collective from Python/C++ on the CPU; at small batch the GPU waits for
    // it. 0: a CUDA-graph-captured engine that hides all of it.
    double host_layer_overhead_s = 0;      // per transformer layer per forward pass
    double host_collective_overhead_s = 0; // per collective call (enqueue + stream sync)
    // Per request, in its time to first token: tokenisation, scheduling, the first step's setup
    // and returning the token, on the host (serving only; `infer --concurrency`, serve-search).
    double host_request_overhead_s = 0;
    DecodeAttentionUnits decode_attention = DecodeAttentionUnits::tensor_core;
};

struct Accelerator {
    std::string name;
    // Dense matrix peak per precision; nullopt: not supported.
    std::array<std::optional<double>, 8> matrix_flop_per_s{};
    double vector_flop_per_s = 0;
    double memory_bytes = 0;
    double memory_bw_bytes_per_s = 0;
    // On-chip SRAM (L2, shared memory/L1, register and tensor memory) and the rate at which it
    // feeds the compute units. A GEMM is tiled in it (cost.hpp). 0: not described, so each
    // operand is read from HBM once and the SRAM term is left out.
    double sram_bytes = 0;
    double sram_bw_bytes_per_s = 0;

    [[nodiscard]] std::optional<double> matrix_peak(Precision p) const {
        return matrix_flop_per_s[static_cast<size_t>(p)];
    }
};

struct LinkLevel {
    double bw_bytes_per_s = 0;  // per GPU, per direction
    double latency_s = 0;
    double efficiency = 1.0;
    [[nodiscard]] double effective_bw() const { return bw_bytes_per_s * efficiency; }
};

// The second memory tier, per GPU: its share of the host's memory, of the host-GPU link (per
// direction) and of the host memory's bandwidth (what a host-side optimizer step streams through).
// capacity 0: the system has no host tier described.
struct HostMemory {
    double capacity_bytes = 0;
    double bw_bytes_per_s = 0;
    double memory_bw_bytes_per_s = 0;
};

// Energy figures of one GPU (system.energy; the model and sources in docs/CALIBRATION.md,
// "Energy and cost"). tdp_w 0: the system has none and results carry no energy keys.
struct EnergySpec {
    double tdp_w = 0;               // the GPU's board power limit
    double idle_w = 0;              // drawn whenever powered, busy or not (leakage, clocks, fans of the board)
    double tensor_j_per_flop = 0;   // tensor power over the sustained bf16 peak, drawn while engaged
    double hbm_j_per_bit = 0;       // per bit read or written
    double scale_up_j_per_bit = 0;  // per bit, at each end of a scale-up link (inside the TDP)
    double scale_out_j_per_bit = 0; // per bit, at each end of a NIC link (the NIC is outside the TDP)
    double active_w = 0;            // above idle while any kernel runs, the tensor array aside
    // Per bit between the on-chip SRAM level (L2, shared memory) and the compute units; 0: that
    // traffic's energy is inside active_w.
    double sram_j_per_bit = 0;
    [[nodiscard]] bool known() const { return tdp_w > 0; }
};

struct SystemSpec {
    std::string name;
    Accelerator accel;
    int64_t node_gpus = 8;
    int64_t scale_up_domain = 8;  // GPUs reachable over the scale-up fabric
    // Ranks a job places in each domain (the rest stay idle, e.g. spare trays); 0: all of them.
    int64_t gpus_used_per_domain = 0;
    LinkLevel scale_up;
    LinkLevel scale_out;
    HostMemory host_memory;
    Efficiency eff;
    EnergySpec energy;
    double price_per_gpu_hour = 0;  // USD; 0: unknown, results carry no cost keys

    // Whether a job (a serving deployment: both roles) of `gpus` GPUs sits in one scale-up domain.
    [[nodiscard]] bool fits_one_domain(int64_t gpus) const { return gpus <= scale_up_domain; }
    // Ranks per domain of a job of `job_gpus` GPUs (0: any size). A job that fits in one domain is
    // placed in one: leaving trays idle is how a job spanning domains divides evenly among them
    // (dgxc's Slurm segments are the largest divisor of the node count up to a rack's 18 nodes,
    // so a job of 18 nodes or fewer takes one segment).
    [[nodiscard]] int64_t used_per_domain(int64_t job_gpus = 0) const {
        if (job_gpus > 0 && fits_one_domain(job_gpus)) return scale_up_domain;
        return gpus_used_per_domain > 0 && gpus_used_per_domain < scale_up_domain ? gpus_used_per_domain : scale_up_domain;
    }
};

}  // namespace sm
