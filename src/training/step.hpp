#pragma once
// One training step: micro-batches through the pipeline schedule, data-parallel reduction,
// optimizer, and the memory each GPU holds.
#include <string>
#include <vector>

#include "model/model_spec.hpp"
#include "parallel/parallel_config.hpp"
#include "parallel/pipeline_split.hpp"
#include "training/block_cost.hpp"
#include "training/training_spec.hpp"

namespace sm {

struct TrainMemory {
    double weights_bytes = 0;
    double gradients_bytes = 0;
    double optimizer_bytes = 0;
    double activations_bytes = 0;
    double overhead_bytes = 0;   // communication buffers + framework allowance
    double host_bytes = 0;       // offloaded to host memory (parallel.offload); not in the peak
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
    double offload_exposed_s = 0;  // host link transfers not hidden + a host-side optimizer step
    [[nodiscard]] double sum() const {
        return compute_s + recompute_s + bubble_s + optimizer_s + tp_comm_exposed_s + pp_comm_exposed_s +
               dp_comm_exposed_s + cp_comm_exposed_s + ep_comm_exposed_s + offload_exposed_s;
    }
};

// Time on the wire per step, before overlap.
struct TrainLinkTimes {
    double tp_s = 0, pp_s = 0, dp_s = 0, cp_s = 0, ep_s = 0;
    double tp_rows_s = 0;  // SUMMA: the part of tp_s over the grid's columns (tp_rows groups)
    double offload_s = 0;  // host link, both directions
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
    TrainMemory memory;          // of the pipeline GPU with the largest peak
    TrainBreakdown breakdown;
    TrainLinkTimes link;
    int64_t slowest_stage = 0;   // the pipeline GPU whose micro-batch time sets the pace
    int64_t peak_stage = 0;      // the pipeline GPU whose memory is `memory`
    Work work;                   // the step's over all GPUs (data-parallel traffic and the
                                 // optimizer: the fullest pipeline GPU's, on every GPU)
    Energy energy;               // of the step, all GPUs (zero when the system has no energy figures)
    double cost_usd = 0;         // of the step, all GPUs (zero when the system has no price)
};

// Everything that depends only on how one layer is cut: (tp, cp, ep, sp, micro-batch,
// recompute, precision). Search computes it once and reuses it across pp, dp, vp and zero.
struct LayerCosts {
    std::array<BlockCost, kLayerKinds> layer{};  // one block of each kind the model holds
    BlockCost embedding, head;
};

// Per block kind, and for the embedding and the head, what a stage's time and memory are linear
// in, and one micro-batch's FLOP and work over all blocks. It does not depend on vp or the
// pipeline split, so the search derives it once for all of them; a stage then costs a few
// multiply-adds.
struct StageRates {
    // The kinds the model holds; slot i of the arrays below is kinds[i]'s (kept small: the
    // search reads them per GPU and layout).
    LayerKindSet kinds;
    std::array<double, kMaxKindsHeld> time_s{}, params{}, experts{}, act_bytes{}, working_bytes{};
    // What training updates (LoRA: the adapters only; else equal to params/experts).
    std::array<double, kMaxKindsHeld> trained{}, trained_experts{};
    std::array<double, kMaxKindsHeld> fwd_window_s{}, bwd_window_s{};  // wall times of the passes
    double embed_time_s = 0, head_time_s = 0;
    double embed_params = 0, head_params = 0;
    double embed_trained = 0, head_trained = 0;
    double head_experts = 0, head_trained_experts = 0;  // of the head's: the MTP blocks' experts
    double embed_act = 0, head_act = 0;
    double embed_fwd_window_s = 0, embed_bwd_window_s = 0, head_fwd_window_s = 0, head_bwd_window_s = 0;
    // Bytes a GPU keeps per dense and per expert parameter of its stage, ZeRO partitioning
    // included: weights, gradients, optimizer state.
    std::array<double, 2> weight_bytes{}, grad_bytes{}, optimizer_bytes{};
    std::array<double, 2> optimizer_share{};  // of a parameter's optimizer state a GPU updates
    // One micro-batch through every stage, per GPU of a stage: model and recompute FLOP, and work.
    double model_flop_mb = 0, recompute_flop_mb = 0;
    Work work_mb;
    // One micro-batch's activation across a pipeline boundary (pp > 1): the same for every
    // ZeRO stage, vp and split of a placement.
    CollectiveCost pp_hop;
    // The data-parallel gradient reduction and parameter gather of the GPU with the most
    // parameters, kept for the last such GPU (`of`: its trained, trained expert, held and expert
    // parameter counts): a placement's interleavings mostly share it, and assemble_step costs
    // each layout's. Written by assemble_step; a StageRates is one caller's.
    struct DataParallelCosts {
        std::array<double, 4> of{-1.0, -1.0, -1.0, -1.0};
        CollectiveCost grad, gather;
    };
    mutable DataParallelCosts dp_memo;
};


struct TrainContext {
    const ModelSpec& model;
    const SystemSpec& system;
    const TrainingSpec& training;
};

// One pipeline GPU (stage position) of a layout: its chunks' layers, one micro-batch's time on it,
// and its memory.
struct StageReport {
    int64_t gpu = 0;
    struct Chunk {
        int64_t first_layer = 0, layers = 0;
    };
    std::vector<Chunk> chunks;  // vp of them, in the order the GPU holds them
    StageLoad load;
    BlockCost micro_batch;      // its blocks summed: fwd, bwd, recompute, exposed communication
    double micro_batch_s = 0;   // micro_batch.total_s()
    double in_flight = 0;       // micro-batches whose activations it keeps (chunk-weighted)
    TrainMemory memory;
};

// A layer key's op lists and every op's cost: what cost_layers computes that depends neither on
// where the tp, cp and ep groups sit nor on the recompute mode (p.recompute is not read).
struct LayerOpSet {
    std::array<LayerOps, kLayerKinds> layer;
    LayerOps embedding, head;
    std::array<std::vector<OpCost>, kLayerKinds> layer_costs;
    std::vector<OpCost> embedding_costs, head_costs;
};
LayerOpSet layer_op_set(const TrainContext& c, const ParallelConfig& p);
// The same into `out`, whose storage is kept (the search refills one per worker).
void layer_op_set(const TrainContext& c, const ParallelConfig& p, LayerOpSet& out);

// The layer key's compute under one recompute mode, before any collective is costed. The
// search builds the op set once per layer key and recompute-free task, this once per recompute
// mode, and costs only the collectives per placement; `costs` alone (no communication) is a
// floor under every placement's.
struct LayerCompute {
    const LayerOpSet* ops = nullptr;  // what it was built from; outlives it
    std::array<BlockCompute, kLayerKinds> layer;
    BlockCompute embedding, head;
    LayerCosts costs;  // the compute alone, block by block
};
LayerCompute compute_layers(const TrainContext& c, const LayerOpSet& ops, RecomputePlan recompute);
// The same into `out`: the kinds the model holds and the ends are written, the rest left as they
// are (the search refills one per worker, never zeroing the kinds it lacks again).
void compute_layers(const TrainContext& c, const LayerOpSet& ops, RecomputePlan recompute, LayerCompute& out);
// A layer key's collectives on one placement of its groups, each costed once: the same under
// every recompute mode, so the search costs them once per placement for all modes.
struct LayerComms {
    std::array<std::vector<CollectiveCost>, kLayerKinds> layer;
    std::vector<CollectiveCost> embedding, head;
};
LayerComms layer_comms(const TrainContext& c, const LayerOpSet& ops, const LayerSpans& spans);
// The same into `out`, whose vectors keep their storage.
void layer_comms(const TrainContext& c, const LayerOpSet& ops, const LayerSpans& spans, LayerComms& out);
StageRates stage_rates(const TrainContext& c, const ParamCount& params, const ParallelConfig& p, const LayerCosts& costs,
                       const CommSpans& spans);

LayerCosts cost_layers(const TrainContext& c, const ParallelConfig& p);
// The same from its parts, each of which the search derives once for many layouts: the layer
// key's compute under p.recompute (compute_layers) and its collectives on the placement `spans`
// (layer_comms).
LayerCosts cost_layers(const TrainContext& c, const ParallelConfig& p, const LayerSpans& spans, const LayerCompute& compute,
                       const LayerComms& comms);
// The same into `out` (as compute_layers: the kinds the model holds and the ends).
void cost_layers(const TrainContext& c, const ParallelConfig& p, const LayerSpans& spans, const LayerCompute& compute,
                 const LayerComms& comms, LayerCosts& out);
TrainResult assemble_step(const TrainContext& c, const ParallelConfig& p, const LayerCosts& costs);
// The same with the model's parameter count given (count_params(c.model, c.training.lora)): the
// search counts it once, not per layout.
TrainResult assemble_step(const TrainContext& c, const ParallelConfig& p, const LayerCosts& costs, const ParamCount& params);
// And with the layout's groups placed (place_groups(p, c.system)): the search places each
// layout once when it plans.
TrainResult assemble_step(const TrainContext& c, const ParallelConfig& p, const LayerCosts& costs, const ParamCount& params,
                          const CommSpans& spans);
// And with the rates given (stage_rates(c, params, p, costs, spans)): the search derives them once per
// placement and ZeRO stage, for every vp and split.
TrainResult assemble_step(const TrainContext& c, const ParallelConfig& p, const LayerCosts& costs, const ParamCount& params,
                          const CommSpans& spans, const StageRates& rates);
TrainResult evaluate_training(const TrainContext& c, const ParallelConfig& p);
// Every pipeline GPU of layout p, first to last (p's split must be valid: check_layout, layout/rules.hpp).
std::vector<StageReport> training_stages(const TrainContext& c, const ParallelConfig& p);
// Micro-batches whose activations pipeline GPU `gpu` keeps under the schedule: 1F1B keeps
// min(pp - gpu, m) (Narayanan et al. 2021, sec. 2.2: pp - gpu - 1 warm-up forwards, then one
// more); the interleaved schedule keeps min(2 (pp - gpu - 1) + (vp - 1) pp + 1, m vp) chunk
// micro-batches (Megatron-LM pipeline_parallel/schedules.py, get_pp_rank_microbatches: the warm-up
// count plus one), here divided by vp: at gpu 0 that is pp (1 + (pp - 1)/(pp vp)), Korthikanti et
// al. 2022 sec. 4.2.3's factor.
double micro_batches_in_flight(int64_t pp, int64_t vp, int64_t gpu, double microbatches);
// A floor under assemble_step's step time for layout p whatever its ZeRO stage, and for every
// interleaving up to p.vp: the micro-batches' compute and exposed layer traffic on the slowest
// stage, plus the schedule's fill and drain of (pp - 1)/vp micro-batches (the pipeline,
// data-parallel and optimizer terms only add). The search skips layouts above its K-th best.
double step_time_floor_s(const TrainContext& c, const ParallelConfig& p, const LayerCosts& lc);
// The same from micro_batch_total_s(c.model, lc), which the search sums once for all its shapes.
double step_time_floor_s(const TrainContext& c, const ParallelConfig& p, double micro_batch_total_s);
// One micro-batch through every pipeline GPU: all blocks, the embedding and the head.
double micro_batch_total_s(const ModelSpec& m, const LayerCosts& lc);
// The same with the model's blocks by kind given (ParamCount::layers): the search counts them once.
double micro_batch_total_s(const std::array<int64_t, kLayerKinds>& blocks, const LayerCosts& lc);
// Of which the tensor array is engaged (each matrix kernel's FLOP at the rate it reaches: never
// more than the kernel's time). Per sample it never grows with the micro-batch, every GEMM's
// efficiency rising with its token dimension: the search bounds smaller micro-batches by it.
double micro_batch_tensor_s(const ModelSpec& m, const LayerCosts& lc);
double micro_batch_tensor_s(const std::array<int64_t, kLayerKinds>& blocks, const LayerCosts& lc);

// The layer shape of a training micro-batch under layout p.
LayerShape training_shape(const ModelSpec& m, const ParallelConfig& p, const TrainingSpec& t);
// Number formats of training in precision t.precision (fp8 GEMMs on bf16 activations).
CostContext training_cost_context(const TrainingSpec& t);

}  // namespace sm
