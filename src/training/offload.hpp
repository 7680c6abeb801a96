#pragma once
// The second memory tier: optimizer state and/or saved activations kept in host memory
// (Grace LPDDR5X over NVLink-C2C, or host DDR over PCIe) instead of HBM, and what moving them
// costs. Pure functions of the step's memory and timing; the step model applies the result.
#include "hardware/system_spec.hpp"
#include "parallel/parallel_config.hpp"

namespace sm {

// One GPU's view of a step, as the step model computed it without offload.
struct OffloadInput {
    // Optimizer: the parameters whose optimizer state this GPU updates (its ZeRO shard), and the
    // bytes per parameter of the state, the gradient and the stored weight.
    double optimizer_params = 0;
    double state_bytes_per_param = 0;
    double grad_bytes_per_param = 0;
    double weight_bytes_per_param = 0;
    // Activations: what one transformer layer saves for backward per micro-batch, how many such
    // layer-activations are held at the memory peak, the layers one micro-batch crosses on this
    // GPU, the micro-batches per step, and one layer's forward and backward wall time (the
    // windows a layer's transfer hides behind).
    double layer_activation_bytes = 0;
    double layer_activations_held = 0;
    double layers = 0;
    double microbatches = 0;
    double layer_fwd_s = 0;
    double layer_bwd_s = 0;
};

struct OffloadResult {
    double optimizer_hbm_bytes = 0;     // moved off HBM: optimizer state
    double activation_hbm_bytes = 0;    // moved off HBM: saved activations (at the peak)
    double host_bytes = 0;              // host memory used per GPU
    double link_s = 0;                  // host link busy time per step, both directions
    double exposed_s = 0;               // step time added: transfers not hidden + the host update
    double gpu_optimizer_s_saved = 0;   // the GPU optimizer pass no longer run
    bool fits_host = true;
};

// Optimizer offload follows Megatron-Core's CPU optimizer (--optimizer-cpu-offload with
// --overlap-cpu-optimizer-d2h-h2d, megatron/core/optimizer/cpu_offloading): gradients go down,
// the host runs Adam over its memory, updated weights come back; the three stream concurrently
// bucket by bucket, so the slowest of them is the step's cost. Activation offload follows
// Transformer Engine's CPU offload (Megatron --cpu-offloading): each layer's saved activations
// go down while the next layer runs forward and come back while the previous one runs backward;
// the last layer and the one in transit stay in HBM.
OffloadResult offload_cost(Offload what, const OffloadInput& in, const HostMemory& host, double gpu_optimizer_s);

}  // namespace sm
