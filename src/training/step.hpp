#pragma once
// One training step: micro-batches through the pipeline schedule, data-parallel reduction,
// optimizer, and the memory each GPU holds.
#include <string>
#include <vector>

#include "model/model_spec.hpp"
#include "parallel/parallel_config.hpp"
#include "training/block_cost.hpp"
#include "training/training_spec.hpp"

namespace sm {

struct TrainMemory {
    double weights_bytes = 0;
    double gradients_bytes = 0;
    double optimizer_bytes = 0;
    double activations_bytes = 0;
    double overhead_bytes = 0;   // communication buffers + framework allowance
    double peak_bytes_per_gpu = 0;
};

struct TrainBreakdown {
    double compute_s = 0;
    double recompute_s = 0;
    double bubble_s = 0;
    double optimizer_s = 0;
    double tp_comm_exposed_s = 0;
    double pp_comm_exposed_s = 0;
    double dp_comm_exposed_s = 0;
    double cp_comm_exposed_s = 0;
    double ep_comm_exposed_s = 0;
    [[nodiscard]] double sum() const {
        return compute_s + recompute_s + bubble_s + optimizer_s + tp_comm_exposed_s + pp_comm_exposed_s +
               dp_comm_exposed_s + cp_comm_exposed_s + ep_comm_exposed_s;
    }
};

// Time on the wire per step, before overlap.
struct TrainLinkTimes {
    double tp_s = 0, pp_s = 0, dp_s = 0, cp_s = 0, ep_s = 0;
};

struct TrainResult {
    double step_time_s = 0;
    double tokens_per_s = 0;
    double tokens_per_s_per_gpu = 0;
    double mfu = 0;
    double hfu = 0;
    int64_t gpus = 0;
    int64_t microbatches = 0;
    bool fits_in_memory = false;
    double model_flop_per_step = 0;
    double params_total = 0;
    TrainMemory memory;
    TrainBreakdown breakdown;
    TrainLinkTimes link;
};

// Everything that depends only on how one layer is cut: (tp, cp, ep, sp, micro-batch,
// recompute, precision). Search computes it once and reuses it across pp, dp, vp and zero.
struct LayerCosts {
    BlockCost layer, embedding, head;
};

struct TrainContext {
    const ModelSpec& model;
    const SystemSpec& system;
    const TrainingSpec& training;
};

LayerCosts cost_layers(const TrainContext& c, const ParallelConfig& p);
TrainResult assemble_step(const TrainContext& c, const ParallelConfig& p, const LayerCosts& costs);
TrainResult evaluate_training(const TrainContext& c, const ParallelConfig& p);
// A floor under assemble_step's step time for layout p whatever its vp and ZeRO stage: the
// micro-batches' compute and exposed layer traffic on the slowest stage (the bubble, pipeline,
// data-parallel and optimizer terms only add). The search skips layouts above its K-th best.
double step_time_floor_s(const TrainContext& c, const ParallelConfig& p, const LayerCosts& lc);

// The layer shape of a training micro-batch under layout p.
LayerShape training_shape(const ModelSpec& m, const ParallelConfig& p, const TrainingSpec& t);
// Number formats of training in precision t.precision (fp8 GEMMs on bf16 activations).
CostContext training_cost_context(const TrainingSpec& t);

}  // namespace sm
