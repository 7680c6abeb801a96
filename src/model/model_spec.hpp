#pragma once
#include <cstdint>
#include <string>

namespace sm {

enum class FfnAct { gelu, swiglu };
enum class NormKind { layernorm, rmsnorm };
enum class PositionKind { learned, rope, alibi };
enum class AttentionImpl { fused, unfused };

struct MoeSpec {
    int64_t experts = 0;  // 0: dense
    int64_t top_k = 0;
    int64_t expert_ffn_hidden = 0;
    [[nodiscard]] bool enabled() const { return experts > 0; }
};

// A transformer as its authors describe it; nothing here depends on the parallel layout.
struct ModelSpec {
    std::string name;
    int64_t layers = 0;
    int64_t hidden = 0;
    int64_t heads = 0;
    int64_t kv_heads = 0;
    int64_t ffn_hidden = 0;
    FfnAct ffn_act = FfnAct::gelu;
    int64_t vocab = 0;
    int64_t seq_len = 0;
    MoeSpec moe;
    NormKind norm = NormKind::layernorm;
    bool bias = true;
    PositionKind position = PositionKind::learned;
    bool tied_embeddings = false;
    bool dropout = false;
    bool causal = true;
    AttentionImpl attention = AttentionImpl::fused;

    [[nodiscard]] int64_t head_dim() const { return hidden / heads; }
    [[nodiscard]] int64_t kv_dim() const { return kv_heads * head_dim(); }
};

// Exact parameter counts (no padding beyond what the spec gives).
struct ParamCount {
    double per_layer = 0;          // one transformer block (all experts for MoE)
    double per_layer_active = 0;   // what one token touches (top_k experts for MoE)
    double per_layer_experts = 0;  // the expert FFNs (sharded over ep as well as tp)
    double embedding = 0;          // token (+ learned position) embedding
    double lm_head = 0;            // output projection (0 when tied)
    double final_norm = 0;
    [[nodiscard]] double total(int64_t layers) const {
        return per_layer * static_cast<double>(layers) + embedding + lm_head + final_norm;
    }
};

ParamCount count_params(const ModelSpec& m);

}  // namespace sm
