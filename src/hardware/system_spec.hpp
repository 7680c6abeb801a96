#pragma once
#include <array>
#include <cstdint>
#include <optional>
#include <string>

#include "core/precision.hpp"

namespace sm {

// Achievable fractions of peak and fixed overheads: the calibration of the cost model.
// Shared by every scenario on a system; values and their sources in docs/CALIBRATION.md.
struct Efficiency {
    double gemm_max = 0.8;             // large-GEMM fraction of matrix peak
    double gemm_half_dim = 96;         // an n or k (weight) dimension this size halves its utilisation
    double gemm_half_tokens = 8;       // the same for m (tokens): the kernel's M-tile granularity
    double gemm_max_8bit = 0.8;        // large-GEMM fraction of the fp8/int8 (and 4-bit) peak
    double attention_max = 0.6;        // fused-attention fraction of matrix peak
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
};

struct Accelerator {
    std::string name;
    // Dense matrix peak per precision; nullopt: not supported.
    std::array<std::optional<double>, 8> matrix_flop_per_s{};
    double vector_flop_per_s = 0;
    double memory_bytes = 0;
    double memory_bw_bytes_per_s = 0;

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

struct SystemSpec {
    std::string name;
    Accelerator accel;
    int64_t node_gpus = 8;
    int64_t scale_up_domain = 8;  // GPUs reachable over the scale-up fabric
    LinkLevel scale_up;
    LinkLevel scale_out;
    Efficiency eff;
};

}  // namespace sm
