#include "model/model_spec.hpp"

namespace sm {

ParamCount count_params(const ModelSpec& m) {
    const double h = static_cast<double>(m.hidden);
    const double kv = static_cast<double>(m.kv_dim());
    const double b = m.bias ? 1.0 : 0.0;
    const double norm = m.norm == NormKind::layernorm ? 2.0 * h : h;

    // Attention: Q and output projections are h x h, K and V are h x kv_dim.
    const double attn = h * (h + 2.0 * kv) + b * (h + 2.0 * kv) + h * h + b * h;

    auto ffn_params = [&](double f) {
        const double mats = m.ffn_act == FfnAct::swiglu ? 3.0 : 2.0;
        const double up_bias = m.ffn_act == FfnAct::swiglu ? 2.0 * f : f;
        return mats * h * f + b * (up_bias + h);
    };

    ParamCount p;
    if (m.moe.enabled()) {
        const double f = static_cast<double>(m.moe.expert_ffn_hidden);
        const double router = h * static_cast<double>(m.moe.experts);
        p.per_layer = attn + 2.0 * norm + router + static_cast<double>(m.moe.experts) * ffn_params(f);
        p.per_layer_active = attn + 2.0 * norm + router + static_cast<double>(m.moe.top_k) * ffn_params(f);
        p.per_layer_experts = static_cast<double>(m.moe.experts) * ffn_params(f);
    } else {
        const double f = static_cast<double>(m.ffn_hidden);
        p.per_layer = attn + 2.0 * norm + ffn_params(f);
        p.per_layer_active = p.per_layer;
    }
    p.embedding = static_cast<double>(m.vocab) * h;
    if (m.position == PositionKind::learned) p.embedding += static_cast<double>(m.seq_len) * h;
    p.lm_head = m.tied_embeddings ? 0.0 : static_cast<double>(m.vocab) * h;
    p.final_norm = norm;
    return p;
}

}  // namespace sm
