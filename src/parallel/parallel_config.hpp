#pragma once
#include <cstdint>
#include <string_view>

namespace sm {

enum class Recompute { none, selective, full };

// The scenario's spelling of a recompute mode.
constexpr std::string_view to_string(Recompute r) {
    switch (r) {
        case Recompute::none: return "none";
        case Recompute::selective: return "selective";
        case Recompute::full: return "full";
    }
    return "none";
}

// What `parallel.offload` keeps in host memory instead of HBM (src/training/offload.hpp).
enum class Offload : uint8_t { none, optimizer, activations, optimizer_and_activations };

constexpr bool offloads_optimizer(Offload o) { return o == Offload::optimizer || o == Offload::optimizer_and_activations; }
constexpr bool offloads_activations(Offload o) {
    return o == Offload::activations || o == Offload::optimizer_and_activations;
}

// The scenario's spelling of an offload choice.
constexpr std::string_view to_string(Offload o) {
    switch (o) {
        case Offload::none: return "none";
        case Offload::optimizer: return "optimizer";
        case Offload::activations: return "activations";
        case Offload::optimizer_and_activations: return "optimizer+activations";
    }
    return "none";
}

// How layers are cut into pipeline stages (parallel/pipeline_split.hpp says what each does).
// first_last is implied by parallel.first_stage_layers / last_stage_layers, never spelled.
enum class PipelineSplit { even, embedding_loss, embedding, loss, uniform, first_last };

constexpr std::string_view to_string(PipelineSplit s) {
    switch (s) {
        case PipelineSplit::even: return "even";
        case PipelineSplit::embedding_loss: return "embedding_loss";
        case PipelineSplit::embedding: return "embedding";
        case PipelineSplit::loss: return "loss";
        case PipelineSplit::uniform: return "uniform";
        case PipelineSplit::first_last: return "first_last";
    }
    return "even";
}

struct ParallelConfig {
    int64_t tp = 1;
    int64_t pp = 1;
    int64_t dp = 1;
    int64_t cp = 1;
    int64_t ep = 1;   // expert parallelism, carved out of dp*cp (of tp*dp*cp when etp = 1)
    // Expert tensor parallelism: 0 = tp (each expert split like the dense FFN: Megatron-Core's
    // default); 1 = every expert whole on its GPU, the expert-parallel group carved out of
    // tp x dp x cp (Megatron-Core's MoE parallel folding, expert_tensor_parallel_size 1).
    int64_t etp = 0;
    int64_t vp = 1;   // interleaved virtual stages per GPU
    bool sequence_parallel = false;
    int64_t microbatch = 1;
    int64_t zero = 0;
    Recompute recompute = Recompute::none;
    Offload offload = Offload::none;  // held fixed by the search
    PipelineSplit split = PipelineSplit::even;
    int64_t first_stage_layers = 0;  // first_last split: 0 = the first GPU is a middle one
    int64_t last_stage_layers = 0;   // first_last split: 0 = the last GPU is a middle one

    [[nodiscard]] int64_t gpus() const { return tp * pp * dp * cp; }
    [[nodiscard]] int64_t expert_tp() const { return etp > 0 ? etp : tp; }
    // GPUs of a stage holding the same experts: tp x dp x cp / (ep x etp).
    [[nodiscard]] int64_t expert_replicas() const { return tp * dp * cp / (ep * expert_tp()); }
    // Whether the expert parameters' replicas differ from the dense ones' (the dp x cp ranks),
    // so their gradients reduce over a group of their own.
    [[nodiscard]] bool experts_have_own_replicas() const { return ep > 1 || expert_tp() != tp; }
};

}  // namespace sm
