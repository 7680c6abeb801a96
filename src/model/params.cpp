#include "model/model_spec.hpp"

#include <algorithm>
#include <array>
#include <utility>

namespace sm {

namespace {
constexpr std::pair<FfnAct, std::string_view> kFfnActNames[] = {
    {FfnAct::gelu, "gelu"}, {FfnAct::swiglu, "swiglu"}, {FfnAct::squared_relu, "squared-relu"}, {FfnAct::geglu, "geglu"}};
}  // namespace

std::string_view to_string(ModelKind k) {
    switch (k) {
        case ModelKind::decoder: return "decoder";
        case ModelKind::encoder: return "encoder";
        case ModelKind::vit: return "vit";
    }
    return "decoder";
}

std::string_view to_string(LayerKind k) {
    constexpr std::array<std::string_view, kLayerKinds> names = {"dense", "moe", "mamba", "mlp", "attention", "linear", "experts"};
    return names[idx(k)];
}

std::string_view to_string(FfnAct a) {
    for (const auto& [act, name] : kFfnActNames)
        if (act == a) return name;
    return "gelu";
}

std::optional<FfnAct> parse_ffn_act(std::string_view s) {
    for (const auto& [act, name] : kFfnActNames)
        if (name == s) return act;
    return std::nullopt;
}

std::vector<std::string> ffn_act_names() {
    std::vector<std::string> v;
    for (const auto& [act, name] : kFfnActNames) v.emplace_back(name);
    return v;
}

// A hybrid pattern's character for each single-purpose block.
LayerKind hybrid_kind(char c) {
    return c == 'M' ? LayerKind::mamba : c == '*' ? LayerKind::attention : c == 'E' ? LayerKind::experts : LayerKind::mlp;
}

LayerKind layer_kind(const ModelSpec& m, int64_t layer) {
    if (m.hybrid()) return hybrid_kind(m.hybrid_pattern[static_cast<size_t>(layer)]);
    // Linear attention: every layer's FFN is of one kind (scenario rules), full attention on every
    // interval-th.
    if (m.linear_attention.enabled() && (layer + 1) % m.linear_attention.full_attention_interval != 0) return LayerKind::linear;
    const bool moe = m.moe.enabled() && layer >= m.moe.first_dense_layers && (layer + 1) % m.moe.interval == 0;
    return moe ? LayerKind::moe : LayerKind::dense;
}

LayerKind mtp_block_kind(const ModelSpec& m) {
    if (m.hybrid()) return m.moe.enabled() ? LayerKind::moe : LayerKind::dense;
    return layer_kind(m, m.layers - 1);
}

ModelSpec mtp_module_model(const ModelSpec& m) {
    const LayerKind kind = mtp_block_kind(m);
    ModelSpec one = m;
    one.layers = 1;
    one.hybrid_pattern.clear();  // a transformer block, whatever stack it sits beside
    one.linear_attention = {};   // that attends in full
    one.moe.first_dense_layers = 0;
    one.moe.interval = 1;
    if (kind == LayerKind::dense) one.moe = {};
    return one;
}

double windowed_layer_share(const ModelSpec& m) {
    if (m.sliding_window <= 0 || m.layers <= 0) return 0.0;
    // Layer i keeps full attention when i + 1 is a multiple of the pattern: layers / pattern of them.
    const int64_t full = m.sliding_window_pattern == 0 ? 0 : m.layers / m.sliding_window_pattern;
    return static_cast<double>(m.layers - full) / static_cast<double>(m.layers);
}

double windowed_keys_per_row(double kv_len, double causal_fraction, double window) {
    if (kv_len <= window) return causal_fraction * kv_len;
    if (causal_fraction >= 1.0) return window;
    return window - window * window / (2.0 * kv_len);
}

int64_t count_layers(const ModelSpec& m, LayerKind k, int64_t begin, int64_t end) {
    if (end <= begin) return 0;
    if (m.hybrid()) {
        const auto first = m.hybrid_pattern.begin();
        return std::count_if(first + begin, first + end, [k](char c) { return hybrid_kind(c) == k; });
    }
    if (m.linear_attention.enabled()) {
        // Layers i in [begin, end) with (i + 1) a multiple of the interval attend in full.
        const int64_t p = m.linear_attention.full_attention_interval, full = end / p - begin / p;
        if (k == LayerKind::linear) return (end - begin) - full;
        return k == m.ffn_kind(LayerKind::linear) ? full : 0;
    }
    if (k != LayerKind::dense && k != LayerKind::moe) return 0;
    int64_t moe = 0;
    if (m.moe.enabled()) {
        // Layers i in [from, end) with (i + 1) % interval == 0: multiples of interval in [from + 1, end].
        const int64_t from = std::max(begin, m.moe.first_dense_layers);
        if (end > from) moe = end / m.moe.interval - from / m.moe.interval;
    }
    return k == LayerKind::moe ? moe : (end - begin) - moe;
}

std::optional<TpMisfit> tensor_parallel_misfit(const ModelSpec& m, int64_t tp) {
    if (m.heads % tp != 0) return TpMisfit{"model.heads", m.heads, false};
    if (m.kv_heads % tp != 0 && tp % m.kv_heads != 0) return TpMisfit{"model.kv_heads", m.kv_heads, true};
    if (m.hybrid() && count_layers(m, LayerKind::mamba, 0, m.layers) > 0) {
        // Megatron-Core's MambaMixer splits heads and groups over tp (every rank a whole group).
        const int64_t heads = m.mamba.heads(m.hidden);
        if (heads % tp != 0) return TpMisfit{"model.mamba heads (expand x hidden / head_dim)", heads, false};
        if (m.mamba.groups % tp != 0) return TpMisfit{"model.mamba.groups", m.mamba.groups, false};
    }
    if (m.linear_attention.enabled()) {
        // Each rank runs whole key heads and the value heads that share them.
        if (m.linear_attention.key_heads % tp != 0) return TpMisfit{"model.linear_attention.key_heads", m.linear_attention.key_heads, false};
        if (m.linear_attention.value_heads % tp != 0)
            return TpMisfit{"model.linear_attention.value_heads", m.linear_attention.value_heads, false};
    }
    for (const LayerKind k : {LayerKind::dense, LayerKind::moe, LayerKind::mlp, LayerKind::experts}) {
        if (count_layers(m, k, 0, m.layers) == 0) continue;
        const bool moe = k == LayerKind::moe || k == LayerKind::experts;
        const int64_t f = moe ? m.moe.expert_ffn_hidden : m.ffn_hidden;
        if (f % tp != 0) return TpMisfit{moe ? "model.moe.expert_ffn_hidden" : "model.ffn_hidden", f, false};
    }
    if (m.moe.enabled()) {  // no shared experts: width 0, which every tp divides
        const int64_t f = m.moe.shared_experts * m.moe.shared_expert_ffn_hidden;
        if (f % tp != 0) return TpMisfit{"model.moe.shared_experts * shared_expert_ffn_hidden", f, false};
    }
    return std::nullopt;
}

LayerKindSet layer_kinds(const ModelSpec& m) {
    LayerKindSet out;
    for (const LayerKind k : kAllLayerKinds)
        if (count_layers(m, k, 0, m.layers) > 0) out.kinds[out.count++] = k;
    return out;
}

namespace {

// One weight matrix of a block as its authors describe it (unsharded), and the LoRA target it
// belongs to.
struct Matrix {
    double in = 0, out = 0;
    LoraTarget target = LoraTarget::linear_qkv;
};

// Up to five matrices, held inline: count_params runs in the search's hot path, which allocates
// nothing.
struct Matrices {
    std::array<Matrix, 5> m{};
    size_t n = 0;
    void add(Matrix x) { m[n++] = x; }
    [[nodiscard]] const Matrix* begin() const { return m.data(); }
    [[nodiscard]] const Matrix* end() const { return m.data() + n; }
};

// The attention's matrices: Q/K/V (fused as Megatron's linear_qkv) and the output projection, or
// MLA's down and up projections (all of them Megatron's linear_q*/linear_kv* modules, adapted
// under the linear_qkv target) and its output projection.
Matrices attention_matrices(const ModelSpec& m) {
    const double h = static_cast<double>(m.hidden);
    const double heads = static_cast<double>(m.heads);
    Matrices v;
    if (m.attention_kind == AttentionKind::mha) {
        const double q_out = static_cast<double>(m.q_dim());
        v.add({h, q_out + 2.0 * static_cast<double>(m.kv_dim()), LoraTarget::linear_qkv});
        v.add({q_out, h, LoraTarget::linear_proj});
        return v;
    }
    const MlaSpec& a = m.mla;
    const double q_out = heads * static_cast<double>(a.qk_head_dim());
    if (a.q_lora_rank > 0) {
        v.add({h, static_cast<double>(a.q_lora_rank), LoraTarget::linear_qkv});
        v.add({static_cast<double>(a.q_lora_rank), q_out, LoraTarget::linear_qkv});
    } else {
        v.add({h, q_out, LoraTarget::linear_qkv});
    }
    v.add({h, static_cast<double>(a.cache_dim()), LoraTarget::linear_qkv});
    v.add({static_cast<double>(a.kv_lora_rank), heads * static_cast<double>(a.qk_nope_head_dim + a.v_head_dim),
           LoraTarget::linear_qkv});
    v.add({heads * static_cast<double>(a.v_head_dim), h, LoraTarget::linear_proj});
    return v;
}

// An FFN of width f between `h`-wide rows (the model's hidden width, or a latent MoE's latent).
Matrices ffn_matrices(const ModelSpec& m, double f, double h) {
    Matrices v;
    v.add({h, (gated(m.ffn_act) ? 2.0 : 1.0) * f, LoraTarget::linear_fc1});
    v.add({f, h, LoraTarget::linear_fc2});
    return v;
}

// Parameters of a set of matrices (with biases when the model has them) and of their adapters.
struct Sum {
    double params = 0, adapters = 0;
};

Sum sum(const Matrices& mats, double bias, const LoraSpec& lora) {
    Sum s;
    const double r = static_cast<double>(lora.rank);
    for (const Matrix& x : mats) {
        s.params += x.in * x.out + bias * x.out;
        if (lora.adapts(x.target)) s.adapters += r * (x.in + x.out);  // A: in x r, B: r x out
    }
    return s;
}

}  // namespace

ParamCount count_params(const ModelSpec& m, const LoraSpec& lora) {
    const double h = static_cast<double>(m.hidden);
    const double b = m.bias ? 1.0 : 0.0;
    const double norm_per_width = m.norm == NormKind::layernorm ? 2.0 : 1.0;
    const double norm = norm_per_width * h;

    // MLA normalises its latents (q_lora_rank and kv_lora_rank wide) before the up projections.
    const double latent_norms = m.attention_kind == AttentionKind::mla
                                    ? norm_per_width * static_cast<double>(m.mla.q_lora_rank + m.mla.kv_lora_rank)
                                    : 0.0;
    const Sum attn = sum(attention_matrices(m), b, lora);
    auto ffn = [&](int64_t f, double width) { return sum(ffn_matrices(m, static_cast<double>(f), width), b, lora); };
    auto full_or = [&](double adapters, double total) { return lora.enabled() ? adapters : total; };

    ParamCount p;
    p.frozen_base = lora.enabled();
    for (const LayerKind k : kAllLayerKinds) p.layers[idx(k)] = count_layers(m, k, 0, m.layers);
    const double common = attn.params + 2.0 * norm + latent_norms;
    LayerParams& dense = p.layer[idx(LayerKind::dense)];
    const Sum dense_ffn = ffn(m.ffn_hidden, h);
    dense.total = common + dense_ffn.params;
    dense.active = dense.total;
    dense.trainable = full_or(attn.adapters + dense_ffn.adapters, dense.total);
    if (m.moe.enabled()) {
        const double experts = static_cast<double>(m.moe.experts);
        const double router = h * experts;
        // Latent MoE: the experts between latent-wide rows, and the projections into and out of
        // the latent width (no LoRA target: Megatron's fc1/fc2_latent_proj are not adapted).
        const double latent = static_cast<double>(m.moe.latent_size);
        const Sum expert = ffn(m.moe.expert_ffn_hidden, latent > 0 ? latent : h);
        const Sum shared = ffn(m.moe.shared_expert_ffn_hidden, h);
        const double shared_n = static_cast<double>(m.moe.shared_experts);
        const double projections = latent > 0 ? 2.0 * h * latent + b * (latent + h) : 0.0;
        const double always = common + router + shared_n * shared.params + projections;  // every token's
        LayerParams& moe = p.layer[idx(LayerKind::moe)];
        moe.experts = experts * expert.params;
        moe.total = always + moe.experts;
        moe.active = always + static_cast<double>(m.moe.top_k) * expert.params;
        moe.trainable_experts = full_or(experts * expert.adapters, moe.experts);
        moe.trainable = full_or(attn.adapters + shared_n * shared.adapters + moe.trainable_experts, moe.total);
    }
    if (m.linear_attention.enabled()) {
        // A Gated DeltaNet block: its FFN block's parameters with the attention's replaced by the
        // mixer's (Qwen3NextGatedDeltaNet, no biases): in_proj_qkvz [h -> 2 key dim + 2 value dim],
        // in_proj_ba [h -> 2 value heads], the depthwise convolution's taps over q, k and v, per
        // value head dt_bias and A_log, the gated RMSNorm's value_head_dim weights, out_proj
        // [value dim -> h]. No LoRA (refused).
        const LinearAttentionSpec& a = m.linear_attention;
        const double kd = static_cast<double>(a.key_dim()), vd = static_cast<double>(a.value_dim());
        const double vh = static_cast<double>(a.value_heads);
        const double mixer = h * (2.0 * kd + 2.0 * vd + 2.0 * vh) + (2.0 * kd + vd) * static_cast<double>(a.conv_kernel) +
                             2.0 * vh + static_cast<double>(a.value_head_dim) + vd * h;
        const LayerParams& full = p.layer[idx(m.ffn_kind(LayerKind::linear))];
        LayerParams& lin = p.layer[idx(LayerKind::linear)];
        lin.experts = full.experts;
        lin.total = full.total - attn.params - latent_norms + mixer;
        lin.active = full.active - attn.params - latent_norms + mixer;
        lin.trainable = lin.total;
        lin.trainable_experts = lin.experts;
    }
    if (m.hybrid()) {
        // Single-purpose blocks, each behind its own pre-norm (Megatron-Core's hybrid stack). The
        // Mamba-2 mixer: in_proj [h -> 2 d_inner + 2 groups state + heads] (z, x, B, C, dt), the
        // depthwise convolution's taps and bias over x, B and C, per-head dt bias, A and D, the
        // gated RMSNorm's d_inner weights and out_proj [d_inner -> h] (projection biases when the
        // model has them); no LoRA (refused).
        const MambaSpec& a = m.mamba;
        const double inner = static_cast<double>(a.d_inner(m.hidden)), heads = static_cast<double>(a.heads(m.hidden));
        const double bc = 2.0 * static_cast<double>(a.groups * a.state_dim), conv = inner + bc;
        LayerParams& mamba = p.layer[idx(LayerKind::mamba)];
        const double in_proj = 2.0 * inner + bc + heads;
        mamba.total = (h + b) * in_proj + conv * static_cast<double>(a.conv_kernel + 1) + 3.0 * heads + inner +
                      (inner + b) * h + norm;
        LayerParams& mlp = p.layer[idx(LayerKind::mlp)];
        mlp.total = dense_ffn.params + norm;
        LayerParams& attention = p.layer[idx(LayerKind::attention)];
        attention.total = attn.params + norm;
        for (LayerParams* l : {&mamba, &mlp, &attention}) l->active = l->trainable = l->total;
        // A mixture of experts alone: the MoE block's FFN half (router, experts, shared experts,
        // latent projections) behind one norm.
        const LayerParams& moe = p.layer[idx(LayerKind::moe)];
        LayerParams& experts = p.layer[idx(LayerKind::experts)];
        experts = moe;
        experts.total = moe.total - common + norm;
        experts.active = moe.active - common + norm;
        experts.trainable = experts.total;
        experts.trainable_experts = experts.experts;
    }
    if (m.kind == ModelKind::vit) {
        // Patch embedding (a patch x patch convolution of stride patch: one [patch_in, h] matrix
        // and its bias) and the regression head [h, patch_out] (FourCastNet's PatchEmbed and head).
        const double in = static_cast<double>(m.image.patch_in()), out = static_cast<double>(m.image.patch_out());
        p.embedding = in * h + b * h;
        p.lm_head = h * out + b * out;
    } else {
        p.embedding = static_cast<double>(m.vocab) * h;
        p.lm_head = m.tied_embeddings ? 0.0 : static_cast<double>(m.vocab) * h;
    }
    if (m.position == PositionKind::learned) p.embedding += static_cast<double>(m.seq_len) * h;
    p.final_norm = norm;
    if (m.mtp_layers > 0) {
        // Each module (DeepSeek-V3 section 2.2; Megatron-Core's MultiTokenPredictionLayer): norms of
        // the next token's embedding and of the hidden state, their concatenation projected
        // [2h -> h], a block (mtp_block_kind) and its own final norm; the embedding and the output
        // layer are the model's. Repeated: one module's weights at every depth.
        const double n = m.mtp_repeated ? 1.0 : static_cast<double>(m.mtp_layers);
        const LayerParams& block = p.layer[idx(mtp_block_kind(m))];
        Matrices proj;
        proj.add({2.0 * h, h, LoraTarget::none});
        const double own = sum(proj, b, lora).params + 3.0 * norm;
        p.mtp.total = n * (block.total + own);
        p.mtp.active = n * (block.active + own);
        p.mtp.experts = n * block.experts;
        p.mtp.trainable = n * (block.trainable + full_or(0.0, own));
        p.mtp.trainable_experts = n * block.trainable_experts;
    }
    return p;
}

}  // namespace sm
