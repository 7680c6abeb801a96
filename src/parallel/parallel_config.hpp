#pragma once
#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

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

// Megatron-Core's selective-recompute boundaries (TransformerConfig.recompute_modules), in its
// spelling: the parts of a layer whose forward runs again in backward instead of keeping what
// they saved (Megatron-Bridge docs/training/activation-recomputation.md: core_attn the attention
// core; layernorm the input and pre-MLP norms' outputs; mla_up_proj MLA's Q/KV up-projections
// and RoPE; mlp a dense MLP, whole; moe_act the routed experts' activation; moe the MoE layer,
// whole, its dispatch included; shared_experts the shared-expert MLP). model/ops.cpp tags each op.
enum class RecomputeModule : uint8_t { core_attn, layernorm, mla_up_proj, mlp, moe_act, moe, shared_experts };
inline constexpr std::array<std::string_view, 7> kRecomputeModuleNames = {"core_attn", "layernorm", "mla_up_proj", "mlp",
                                                                          "moe_act",   "moe",       "shared_experts"};
// A set of modules: bit i is RecomputeModule i.
using ModuleSet = uint8_t;
constexpr ModuleSet module_bit(RecomputeModule m) { return static_cast<ModuleSet>(1u << static_cast<unsigned>(m)); }
inline constexpr ModuleSet kDefaultRecomputeModules = module_bit(RecomputeModule::core_attn);  // Megatron's default
// The set's names in Megatron's order.
inline std::vector<std::string_view> module_list(ModuleSet set) {
    std::vector<std::string_view> out;
    for (size_t i = 0; i < kRecomputeModuleNames.size(); ++i)
        if ((set >> i) & 1u) out.push_back(kRecomputeModuleNames[i]);
    return out;
}
// The same as one text, `sep` between the names.
inline std::string module_names(ModuleSet set, std::string_view sep) {
    std::string out;
    for (const std::string_view name : module_list(set)) out.append(out.empty() ? "" : sep).append(name);
    return out;
}

// What one layer runs again in backward: every op under full recompute (of `full_share` of the
// layers: Megatron's block method re-runs the first few of each chunk and keeps the others'
// activations); under selective the ops inside `modules`, whose saved activations (but the
// modules' inputs) are dropped.
struct RecomputePlan {
    Recompute mode = Recompute::none;
    ModuleSet modules = kDefaultRecomputeModules;
    double full_share = 1;
    // A mode alone takes the default modules (selective: the attention core) and every layer.
    constexpr RecomputePlan(Recompute m) : mode(m) {}  // NOLINT(google-explicit-constructor)
    constexpr RecomputePlan(Recompute m, ModuleSet s, double share = 1) : mode(m), modules(s), full_share(share) {}
    // How often, per layer, an op inside `in` (its modules) runs again: a layer's share under full.
    [[nodiscard]] constexpr double rerun_share(ModuleSet in) const {
        return mode == Recompute::full ? full_share : (mode == Recompute::selective && (in & modules) != 0) ? 1.0 : 0.0;
    }
};

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
// first_last is implied by parallel.first_stage_layers / last_stage_layers and layout by
// parallel.pipeline_layout (or `auto` on an interleaving nothing else cuts); never spelled.
enum class PipelineSplit { even, embedding_loss, embedding, loss, uniform, fill, first_last, layout };

constexpr std::string_view to_string(PipelineSplit s) {
    switch (s) {
        case PipelineSplit::even: return "even";
        case PipelineSplit::embedding_loss: return "embedding_loss";
        case PipelineSplit::embedding: return "embedding";
        case PipelineSplit::loss: return "loss";
        case PipelineSplit::uniform: return "uniform";
        case PipelineSplit::fill: return "fill";
        case PipelineSplit::first_last: return "first_last";
        case PipelineSplit::layout: return "layout";
    }
    return "even";
}

// Which groups fill a scale-up domain first (parallel.order): the rank layout's digits from the
// fastest, tp/cp/dp in any order, pp always outermost (Megatron-Core keeps pp last in its default
// order, and a stage of contiguous ranks is what the expert layers re-cut: placement.hpp).
enum class RankOrder : uint8_t { tp_cp_dp, tp_dp_cp, cp_tp_dp, cp_dp_tp, dp_tp_cp, dp_cp_tp };
inline constexpr RankOrder kRankOrders[] = {RankOrder::tp_cp_dp, RankOrder::tp_dp_cp, RankOrder::cp_tp_dp,
                                            RankOrder::cp_dp_tp, RankOrder::dp_tp_cp, RankOrder::dp_cp_tp};

constexpr std::string_view to_string(RankOrder o) {
    switch (o) {
        case RankOrder::tp_cp_dp: return "tp-cp-dp-pp";
        case RankOrder::tp_dp_cp: return "tp-dp-cp-pp";
        case RankOrder::cp_tp_dp: return "cp-tp-dp-pp";
        case RankOrder::cp_dp_tp: return "cp-dp-tp-pp";
        case RankOrder::dp_tp_cp: return "dp-tp-cp-pp";
        case RankOrder::dp_cp_tp: return "dp-cp-tp-pp";
    }
    return "tp-cp-dp-pp";
}

// How context parallelism exchanges K/V (parallel.cp_kind; ops.cpp costs each):
// ring: K/V chunks passed cp-1 hops, each hidden behind a chunk's attention (ring attention);
// all_gather: K/V gathered over the cp group before attention, dK/dV reduce-scattered after
// (Megatron-Core / Transformer Engine cp_comm_type "all_gather", Llama 3 sec. 3.3.2; exposed);
// ulysses: all-to-all from sequence to head sharding before attention and back after
// (DeepSpeed-Ulysses, Jacobs et al. 2023; TE's "a2a"; exposed).
enum class CpKind : uint8_t { ring, all_gather, ulysses };
inline constexpr CpKind kCpKinds[] = {CpKind::ring, CpKind::all_gather, CpKind::ulysses};

constexpr std::string_view to_string(CpKind k) {
    switch (k) {
        case CpKind::ring: return "ring";
        case CpKind::all_gather: return "all_gather";
        case CpKind::ulysses: return "ulysses";
    }
    return "ring";
}

struct ParallelConfig {
    int64_t tp = 1;
    // SUMMA 2D tensor parallelism (van de Geijn & Watts 1997; Subramanian et al. 2024): the tp
    // ranks form a tp_rows x (tp / tp_rows) grid, tokens split over the rows, weight rows over the
    // rows and weight columns (heads, FFN width) over the columns. 1 = Megatron's 1D tensor
    // parallelism. ops.cpp says what each GEMM moves. A SUMMA layout always has
    // sequence_parallel set: its activations are sharded over the whole grid between GEMMs.
    int64_t tp_rows = 1;
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
    ModuleSet recompute_modules = kDefaultRecomputeModules;  // what selective recompute re-runs; held by the search
    // Full recompute of the first this many layers of each pipeline chunk, the others kept whole
    // (Megatron's recompute_method block, recompute_num_layers); 0: every layer. Not searched.
    int64_t recompute_layers = 0;
    Offload offload = Offload::none;  // held fixed by the search
    PipelineSplit split = PipelineSplit::even;
    RankOrder order = RankOrder::tp_cp_dp;
    CpKind cp_kind = CpKind::ring;
    int64_t first_stage_layers = 0;  // first_last split: 0 = the first GPU is a middle one
    int64_t last_stage_layers = 0;   // first_last split: 0 = the last GPU is a middle one
    // layout split: the transformer layers of each of the pp*vp chunks, in chunk order
    // (Megatron-Core's pipeline_model_parallel_layout, unrolled: pipeline_split.hpp).
    std::vector<int32_t> layout;
    int32_t layout_mtp = 0;  // MTP modules the layout places ('m', last stage): model.mtp_layers

    [[nodiscard]] int64_t gpus() const { return tp * pp * dp * cp; }
    [[nodiscard]] bool summa() const { return tp_rows > 1; }
    [[nodiscard]] int64_t tp_cols() const { return tp / tp_rows; }
    [[nodiscard]] int64_t expert_tp() const { return etp > 0 ? etp : tp; }
    // GPUs of a stage holding the same experts: tp x dp x cp / (ep x etp).
    [[nodiscard]] int64_t expert_replicas() const { return tp * dp * cp / (ep * expert_tp()); }
    // Whether the expert parameters' replicas differ from the dense ones' (the dp x cp ranks),
    // so their gradients reduce over a group of their own.
    [[nodiscard]] bool experts_have_own_replicas() const { return ep > 1 || expert_tp() != tp; }
    bool operator==(const ParallelConfig&) const = default;
};

}  // namespace sm
