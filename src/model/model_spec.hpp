#pragma once
#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace sm {

enum class FfnAct { gelu, swiglu };
enum class NormKind { layernorm, rmsnorm };
enum class PositionKind { learned, rope, alibi };
enum class AttentionImpl { fused, unfused };

struct MoeSpec {
    int64_t experts = 0;  // 0: dense
    int64_t top_k = 0;
    int64_t expert_ffn_hidden = 0;
    // Models of 2025 mix dense and MoE blocks: DeepSeek-V3's first 3 layers are dense, Llama 4
    // Maverick's MoE layers alternate with dense ones. Layer i (0-based) is MoE when
    // i >= first_dense_layers and (i + 1) is a multiple of `interval` (Hugging Face's
    // `interleave_moe_layer_step` rule). Dense blocks of an MoE model use model.ffn_hidden.
    int64_t first_dense_layers = 0;
    int64_t interval = 1;
    [[nodiscard]] bool enabled() const { return experts > 0; }
};

// The kinds of transformer block a model can hold; block costs and parameters are per kind.
enum class LayerKind { dense, moe };
inline constexpr size_t kLayerKinds = 2;
inline size_t idx(LayerKind k) { return static_cast<size_t>(k); }

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

// The kind of block at layer `layer` (0-based).
LayerKind layer_kind(const ModelSpec& m, int64_t layer);
// How many blocks of kind k lie in layers [begin, end).
int64_t count_layers(const ModelSpec& m, LayerKind k, int64_t begin, int64_t end);
// The kinds the model holds, dense first.
std::vector<LayerKind> layer_kinds(const ModelSpec& m);

// Parameters of one block of a kind.
struct LayerParams {
    double total = 0;    // all experts for MoE
    double active = 0;   // what one token touches (top_k experts for MoE)
    double experts = 0;  // the expert FFNs (sharded over ep as well as tp)
};

// Exact parameter counts (no padding beyond what the spec gives).
struct ParamCount {
    std::array<LayerParams, kLayerKinds> layer{};  // one block of each kind
    std::array<int64_t, kLayerKinds> layers{};     // how many blocks of each kind the model has
    double embedding = 0;                          // token (+ learned position) embedding
    double lm_head = 0;                            // output projection (0 when tied)
    double final_norm = 0;
    [[nodiscard]] double blocks(double LayerParams::*field) const {
        double n = 0;
        for (size_t k = 0; k < kLayerKinds; ++k) n += layer[k].*field * static_cast<double>(layers[k]);
        return n;
    }
    [[nodiscard]] double total() const { return blocks(&LayerParams::total) + embedding + lm_head + final_norm; }
    [[nodiscard]] double active() const { return blocks(&LayerParams::active) + embedding + lm_head + final_norm; }
};

ParamCount count_params(const ModelSpec& m);

}  // namespace sm
