#pragma once
#include <cstdint>

#include "core/precision.hpp"
#include "model/model_spec.hpp"

namespace sm {

// The training workload and the software assumptions that move results by more than a few
// percent: each is a named scenario field (`training.*`) with the default documented here.
struct TrainingSpec {
    int64_t global_batch = 1;                 // sequences per optimizer step
    Precision precision = Precision::bf16;    // matrix math
    Precision grad_precision = Precision::fp32;  // Megatron accumulates main grads in fp32
    Fp8Recipe fp8_recipe = Fp8Recipe::delayed;   // Transformer Engine's default DelayedScaling
    bool dp_overlap = true;         // gradient reduction overlaps the last micro-batch's backward
    double tp_overlap = 0.0;        // fraction of blocking TP communication hidden (TE userbuffers)
    double pp_overlap = 0.0;        // fraction of pipeline p2p hidden behind compute
    double optimizer_state_bytes_per_param = 12;  // Adam: fp32 master weights + two moments
    LoraSpec lora;                  // training.method lora: base frozen, rank-r adapters trained
    double framework_overhead_bytes = 2.0 * 1073741824.0;  // CUDA context, allocator slack
    double comm_buffer_bytes = 0.5 * 1073741824.0;         // NCCL and bucket buffers
};

}  // namespace sm
