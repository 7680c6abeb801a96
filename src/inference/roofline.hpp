#pragma once
// The per-op roofline of inference: every op of the prefill pass and of one decode step, with its
// FLOP, HBM bytes, arithmetic intensity, the accelerator's balance point and what bounds it.
#include <string>
#include <vector>

#include "inference/inference.hpp"

namespace sm {

enum class Bound { compute, memory, sram, network };
std::string_view to_string(Bound b);

struct RooflineRow {
    std::string phase;     // "prefill" or "decode"
    std::string name;      // op or collective name
    std::string block;     // "layer", "embedding", "head", "pipeline"
    double count = 1;      // times it runs per pass (layers for a layer op)
    double flop = 0;       // one instance, one GPU
    double bytes = 0;      // HBM bytes (ops) or bytes on the wire (collectives)
    double intensity = 0;  // FLOP per HBM byte
    double balance = 0;    // the accelerator's ridge point for this op's math: peak FLOP/s / HBM B/s
    double compute_s = 0;  // FLOP at the op's achievable rate (size-dependent efficiency)
    double memory_s = 0;   // bytes at the achievable HBM rate
    double sram_bytes = 0; // GEMMs: bytes between on-chip SRAM and the compute units
    double sram_s = 0;     // those at the SRAM bandwidth (0: no SRAM level described, or not a GEMM)
    double time_s = 0;     // one instance as the model times it (cost_op / collective_time_s)
    Bound bound = Bound::memory;
};

struct Roofline {
    int64_t context = 0;          // the decode step's context length
    double balance = 0;           // matrix peak of the inference precision / HBM bandwidth
    std::vector<RooflineRow> rows;
};

// `context`: tokens the decode step attends to (0: input_len + output_len / 2).
Roofline inference_roofline(const InferContext& c, const ParallelConfig& p, int64_t context);

// Decode time per step split by what bounds it, for the latency-throughput sweep.
struct BoundSplit {
    double compute_s = 0, memory_s = 0, network_s = 0;
    double sram_s = 0;  // SRAM-bound ops (accelerators with an SRAM level)
    [[nodiscard]] Bound dominant() const;
};
BoundSplit phase_split(const Roofline& r, std::string_view phase);

}  // namespace sm
