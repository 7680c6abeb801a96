#include "model/model_spec.hpp"

#include <algorithm>

namespace sm {

LayerKind layer_kind(const ModelSpec& m, int64_t layer) {
    const bool moe = m.moe.enabled() && layer >= m.moe.first_dense_layers && (layer + 1) % m.moe.interval == 0;
    return moe ? LayerKind::moe : LayerKind::dense;
}

int64_t count_layers(const ModelSpec& m, LayerKind k, int64_t begin, int64_t end) {
    if (end <= begin) return 0;
    int64_t moe = 0;
    if (m.moe.enabled()) {
        // Layers i in [from, end) with (i + 1) % interval == 0: multiples of interval in [from + 1, end].
        const int64_t from = std::max(begin, m.moe.first_dense_layers);
        if (end > from) moe = end / m.moe.interval - from / m.moe.interval;
    }
    return k == LayerKind::moe ? moe : (end - begin) - moe;
}

std::vector<LayerKind> layer_kinds(const ModelSpec& m) {
    std::vector<LayerKind> out;
    for (const LayerKind k : {LayerKind::dense, LayerKind::moe})
        if (count_layers(m, k, 0, m.layers) > 0) out.push_back(k);
    return out;
}

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
    for (const LayerKind k : {LayerKind::dense, LayerKind::moe})
        p.layers[idx(k)] = count_layers(m, k, 0, m.layers);
    LayerParams& dense = p.layer[idx(LayerKind::dense)];
    dense.total = attn + 2.0 * norm + ffn_params(static_cast<double>(m.ffn_hidden));
    dense.active = dense.total;
    if (m.moe.enabled()) {
        const double f = static_cast<double>(m.moe.expert_ffn_hidden);
        const double router = h * static_cast<double>(m.moe.experts);
        LayerParams& moe = p.layer[idx(LayerKind::moe)];
        moe.total = attn + 2.0 * norm + router + static_cast<double>(m.moe.experts) * ffn_params(f);
        moe.active = attn + 2.0 * norm + router + static_cast<double>(m.moe.top_k) * ffn_params(f);
        moe.experts = static_cast<double>(m.moe.experts) * ffn_params(f);
    }
    p.embedding = static_cast<double>(m.vocab) * h;
    if (m.position == PositionKind::learned) p.embedding += static_cast<double>(m.seq_len) * h;
    p.lm_head = m.tied_embeddings ? 0.0 : static_cast<double>(m.vocab) * h;
    p.final_norm = norm;
    return p;
}

}  // namespace sm
