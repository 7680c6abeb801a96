#pragma once
#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace sm {

// Feed-forward activations. Gated ones (SwiGLU, GeGLU) have a third matrix: the up projection
// yields a value and a gate half.
enum class FfnAct { gelu, swiglu, squared_relu, geglu };
inline bool gated(FfnAct a) { return a == FfnAct::swiglu || a == FfnAct::geglu; }
std::string_view to_string(FfnAct a);
std::optional<FfnAct> parse_ffn_act(std::string_view s);
std::vector<std::string> ffn_act_names();
enum class NormKind { layernorm, rmsnorm };
// learned: a trained table, one row per position; sincos: fixed sinusoids (Vaswani et al. 2017;
// 2D for a ViT, MAE's get_2d_sincos_pos_embed), added like a table but with no parameters;
// none: no position signal at all (a hybrid Mamba model's state carries order: Nemotron-H).
enum class PositionKind { learned, rope, alibi, sincos, none };
enum class AttentionImpl { fused, unfused };
// Multi-head attention (GQA/MQA through kv_heads) or DeepSeek's multi-head latent attention.
enum class AttentionKind { mha, mla };

// Multi-head latent attention (DeepSeek-V2 sec. 2.1, DeepSeek-V3 sec. 2.1.1): queries and keys/
// values pass through low-rank latents; a decoupled RoPE key of qk_rope_head_dim is shared by
// all heads. q_lora_rank 0: queries are projected directly (DeepSeek-V2-Lite).
struct MlaSpec {
    int64_t q_lora_rank = 0;
    int64_t kv_lora_rank = 0;
    int64_t qk_nope_head_dim = 0;
    int64_t qk_rope_head_dim = 0;
    int64_t v_head_dim = 0;
    [[nodiscard]] int64_t qk_head_dim() const { return qk_nope_head_dim + qk_rope_head_dim; }
    // What the inference cache keeps per token and layer: the KV latent and the RoPE key.
    [[nodiscard]] int64_t cache_dim() const { return kv_lora_rank + qk_rope_head_dim; }
    bool operator==(const MlaSpec&) const = default;
};

// LoRA fine-tuning (Hu et al. 2021): base weights frozen, a rank-r adapter B·A beside each
// targeted matrix. Targets are Megatron's module names, the unit NeMo adapts; the default is
// NeMo 2.0's (nemo/collections/llm/peft/lora.py, class LoRA: all four linear layers, experts too).
enum class LoraTarget : uint8_t { none = 0, linear_qkv = 1, linear_proj = 2, linear_fc1 = 4, linear_fc2 = 8 };
struct LoraSpec {
    int64_t rank = 0;  // 0: full training (nothing frozen)
    uint8_t targets = 15;  // linear_qkv | linear_proj | linear_fc1 | linear_fc2
    [[nodiscard]] bool enabled() const { return rank > 0; }
    [[nodiscard]] bool adapts(LoraTarget t) const { return enabled() && (targets & static_cast<uint8_t>(t)) != 0; }
    bool operator==(const LoraSpec&) const = default;
};

// A Mamba-2 mixer (Dao & Gu 2024, "Transformers are SSMs", sec. 7; Megatron-Core's MambaMixer):
// an input projection to [z, x, B, C, dt] ([d_inner, d_inner, groups x state_dim twice, heads]),
// a causal depthwise convolution of conv_kernel taps over x, B and C, the state-space duality
// (SSD) scan in chunks of `chunk` tokens, a gated RMSNorm by z and an output projection from
// d_inner = expand x hidden. Heads of head_dim share B and C within each of `groups`.
struct MambaSpec {
    int64_t state_dim = 128;
    int64_t groups = 8;
    int64_t head_dim = 64;
    int64_t expand = 2;
    int64_t conv_kernel = 4;
    int64_t chunk = 128;
    // Heads given outright (Megatron's --mamba-num-heads; Nemotron 3 Nano: 64 of 64 on a 2,688
    // hidden, no whole expand): d_inner = num_heads x head_dim. 0: expand x hidden.
    int64_t num_heads = 0;
    [[nodiscard]] int64_t d_inner(int64_t hidden) const { return num_heads > 0 ? num_heads * head_dim : expand * hidden; }
    [[nodiscard]] int64_t heads(int64_t hidden) const { return d_inner(hidden) / head_dim; }
    bool operator==(const MambaSpec&) const = default;
};

// Gated DeltaNet linear attention (Yang, Kautz & Hatamizadeh, ICLR 2025, "Gated Delta Networks:
// Improving Mamba2 with Delta Rule"; Qwen3-Next's and Qwen3.5's Qwen3NextGatedDeltaNet) in place
// of full attention on most layers: layer i keeps full attention when i + 1 is a multiple of
// `full_attention_interval` (Qwen3.5: 4), the others mix tokens through in_proj_qkvz [h -> 2 key
// dim + 2 value dim] and in_proj_ba [h -> 2 value heads] (the decay and the write strength per
// value head), a causal depthwise convolution of conv_kernel taps over q, k and v, the gated delta
// rule over a [key_head_dim, value_head_dim] state per value head (chunks of `chunk` tokens in a
// prompt, one recurrent update per decoded token), a gated RMSNorm by z and out_proj [value dim ->
// h]. Value heads share the key heads in groups (value_heads / key_heads of them).
struct LinearAttentionSpec {
    int64_t full_attention_interval = 0;  // 0: every layer attends in full
    int64_t key_heads = 16;
    int64_t value_heads = 32;
    int64_t key_head_dim = 128;
    int64_t value_head_dim = 128;
    int64_t conv_kernel = 4;
    int64_t chunk = 64;
    [[nodiscard]] bool enabled() const { return full_attention_interval > 0; }
    [[nodiscard]] int64_t key_dim() const { return key_heads * key_head_dim; }
    [[nodiscard]] int64_t value_dim() const { return value_heads * value_head_dim; }
    bool operator==(const LinearAttentionSpec&) const = default;
};

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
    // Shared experts (DeepSeek-V3: 1, Llama 4: 1) run on every token beside the routed ones:
    // an ordinary FFN, sharded by tp like a dense one, never dispatched.
    int64_t shared_experts = 0;
    int64_t shared_expert_ffn_hidden = 0;
    // Routing is never perfectly even: the token copies the busiest expert-parallel rank receives
    // over the mean (1: balanced). Every rank waits for it, so its expert GEMMs and all-to-all set
    // the pace. At ep 1 every GPU holds every expert and the imbalance has no effect.
    double load_imbalance = 1.0;
    // Latent MoE (Megatron-Core's moe_latent_size; Nemotron 3 Super and Ultra): the routed experts
    // run in a narrower width. Each token is projected [h -> latent] before dispatch and back
    // [latent -> h] after the combine (fc1/fc2_latent_proj, replicated over tensor-parallel
    // ranks), so the all-to-alls carry latent-wide rows and every expert is [latent -> f -> latent].
    // The router and the shared experts read the full hidden state. 0: none.
    int64_t latent_size = 0;
    [[nodiscard]] bool enabled() const { return experts > 0; }
    bool operator==(const MoeSpec&) const = default;
};

// The kinds of block a model can hold; block costs and parameters are per kind. dense and moe
// are transformer blocks (attention then FFN); a hybrid model (model.hybrid_pattern) stacks
// single-purpose blocks instead: a Mamba-2 mixer, an FFN alone, attention alone, a mixture of
// experts alone (Megatron-Core's hybrid stack: "M", "-", "*", "E"), each with its own norm and
// residual. linear is a transformer block whose attention is Gated DeltaNet
// (model.linear_attention), its FFN the model's (MoE when the model has experts).
enum class LayerKind { dense, moe, mamba, mlp, attention, linear, experts };
inline constexpr size_t kLayerKinds = 7;
inline constexpr std::array<LayerKind, kLayerKinds> kAllLayerKinds = {
    LayerKind::dense, LayerKind::moe, LayerKind::mamba, LayerKind::mlp, LayerKind::attention, LayerKind::linear, LayerKind::experts};
// A model holds at most three of them: dense and MoE, or a hybrid's three.
inline constexpr size_t kMaxKindsHeld = 3;
inline size_t idx(LayerKind k) { return static_cast<size_t>(k); }
std::string_view to_string(LayerKind k);  // dense, moe, mamba, mlp, attention, linear, experts

// The model family: what surrounds the blocks and how attention masks.
// decoder: token lookup, causal attention, LM head and softmax cross-entropy (GPT, Llama).
// encoder: the same ends with bidirectional attention (BERT-style masked LM over every token).
// vit: a patch-embedding GEMM in, bidirectional attention, a head regressing each patch's
// output channels with an L2 loss: no vocabulary (Dosovitskiy et al. 2021; FourCastNet).
enum class ModelKind { decoder, encoder, vit };
std::string_view to_string(ModelKind k);

// A ViT's input: an image (or a lat-lon grid) of height x width pixels cut into patch x patch
// tiles, each a token; in_channels per pixel in, out_channels regressed per pixel out.
struct ImageSpec {
    int64_t height = 0, width = 0, patch = 0, in_channels = 0, out_channels = 0;
    [[nodiscard]] int64_t tokens() const { return (height / patch) * (width / patch); }
    [[nodiscard]] int64_t patch_in() const { return patch * patch * in_channels; }    // patch-embedding GEMM's k
    [[nodiscard]] int64_t patch_out() const { return patch * patch * out_channels; }  // head GEMM's n
    bool operator==(const ImageSpec&) const = default;
};

// A transformer as its authors describe it; nothing here depends on the parallel layout.
struct ModelSpec {
    std::string name;
    ModelKind kind = ModelKind::decoder;
    ImageSpec image;  // vit only
    int64_t layers = 0;
    int64_t hidden = 0;
    int64_t heads = 0;
    int64_t kv_heads = 0;
    int64_t ffn_hidden = 0;
    FfnAct ffn_act = FfnAct::gelu;
    int64_t vocab = 0;  // 0 for a vit
    int64_t seq_len = 0;  // a vit's: image.tokens()
    MoeSpec moe;
    NormKind norm = NormKind::layernorm;
    bool bias = true;
    PositionKind position = PositionKind::learned;
    bool tied_embeddings = false;
    // Multi-token prediction modules trained beside the model (DeepSeek-V3: 1), each a block
    // (mtp_block_kind) with its own projection, norms and loss, on the last pipeline stage.
    int64_t mtp_layers = 0;
    // One module's weights run at every depth (Megatron-Core's mtp_use_repeated_layer; Nemotron 3
    // Super trains 2 depths of its one module): the compute of mtp_layers, the parameters of one.
    bool mtp_repeated = false;
    bool dropout = false;
    bool causal = true;
    AttentionImpl attention = AttentionImpl::fused;
    AttentionKind attention_kind = AttentionKind::mha;
    MlaSpec mla;  // used when attention_kind is mla (kv_heads then equals heads)
    // model.head_dim, where a model decouples it from hidden / heads (Qwen3: 2,048 wide, 32 heads
    // of 128; Gemma); 0: hidden / heads.
    int64_t attention_head_dim = 0;
    // Sliding-window (local) attention: a windowed layer's query sees only the `sliding_window`
    // most recent positions, itself included (Mistral 7B v0.1: 4,096 on every layer; gpt-oss: 128
    // on alternate layers; Gemma 3: 1,024 on five of six). 0: every layer attends in full.
    // `sliding_window_pattern` P: every P-th layer (i + 1 a multiple of P) keeps full attention,
    // the others are windowed (Hugging Face's Gemma convention); 0: every layer is windowed.
    int64_t sliding_window = 0;
    int64_t sliding_window_pattern = 0;
    // A hybrid Mamba-Transformer (Nemotron-H, Nemotron 3): one character per layer, "M" a Mamba-2
    // mixer, "-" an FFN, "*" attention, "E" a mixture of experts (model.moe; Megatron-Core's
    // hybrid_override_pattern). Empty: transformer blocks.
    std::string hybrid_pattern;
    MambaSpec mamba;  // the "M" layers'
    LinearAttentionSpec linear_attention;  // Gated DeltaNet layers (LayerKind::linear)

    [[nodiscard]] int64_t head_dim() const { return attention_head_dim > 0 ? attention_head_dim : hidden / heads; }
    [[nodiscard]] int64_t q_dim() const { return heads * head_dim(); }  // hidden unless model.head_dim differs
    [[nodiscard]] int64_t kv_dim() const { return kv_heads * head_dim(); }
    [[nodiscard]] bool hybrid() const { return !hybrid_pattern.empty(); }
    // Layers that carry a recurrent state along the sequence (Mamba-2 mixers, Gated DeltaNet).
    [[nodiscard]] bool recurrent() const { return hybrid() || linear_attention.enabled(); }
    // The FFN of a transformer block of kind k: a linear-attention block's is the model's own.
    [[nodiscard]] LayerKind ffn_kind(LayerKind k) const {
        return k == LayerKind::linear ? (moe.enabled() ? LayerKind::moe : LayerKind::dense) : k;
    }
    bool operator==(const ModelSpec&) const = default;
};

// The kind of block at layer `layer` (0-based).
LayerKind layer_kind(const ModelSpec& m, int64_t layer);
// A multi-token prediction module's block: the last layer's kind; in a hybrid model a transformer
// block of attention and the model's FFN (Nemotron 3's mtp_hybrid_override_pattern "*E").
LayerKind mtp_block_kind(const ModelSpec& m);
// A one-layer model whose layer is that block: what a speculative decoder's draft runs per token.
ModelSpec mtp_module_model(const ModelSpec& m);
// How many blocks of kind k lie in layers [begin, end).
int64_t count_layers(const ModelSpec& m, LayerKind k, int64_t begin, int64_t end);
// The kinds the model holds, dense first: a value, iterated like a container (the search asks
// per layer key, so it allocates nothing).
struct LayerKindSet {
    std::array<LayerKind, kLayerKinds> kinds{};
    size_t count = 0;
    [[nodiscard]] const LayerKind* begin() const { return kinds.data(); }
    [[nodiscard]] const LayerKind* end() const { return kinds.data() + count; }
    [[nodiscard]] size_t size() const { return count; }
    [[nodiscard]] LayerKind back() const { return kinds[count - 1]; }
};
LayerKindSet layer_kinds(const ModelSpec& m);
// The share of the model's layers that attend over a sliding window. Block costs are per kind, not per layer, so a block's attention is the
// layer-weighted mix of the two forms (exact over the whole model; a pipeline stage whose windowed
// share differs from the model's is off by at most one layer's difference).
double windowed_layer_share(const ModelSpec& m);
// Keys one query row of a windowed layer attends to on average: `kv_len` keys visible, of which
// the share `causal_fraction` is computed in full attention (0.5: a causal square over a whole
// sequence, 1: every key, as a decode step's or a bidirectional row's). Within the window nothing
// changes; beyond it a row sees `window` keys, and causal rows of a sequence longer than the window
// see min(i, window) at position i: window - window^2 / (2 kv_len) on average.
double windowed_keys_per_row(double kv_len, double causal_fraction, double window);

// Why tensor parallelism of degree tp cannot cut model m: the field whose width tp must divide,
// that width, and whether a multiple of it also works (K/V heads replicate when fewer than the
// ranks). nullopt: tp cuts every head and FFN evenly. train, search and serve-search all use it.
struct TpMisfit {
    std::string_view field;
    int64_t width = 0;
    bool multiple_ok = false;
};
std::optional<TpMisfit> tensor_parallel_misfit(const ModelSpec& m, int64_t tp);

// Parameters of one block of a kind.
struct LayerParams {
    double total = 0;    // all experts for MoE
    double active = 0;   // what one token touches (top_k experts for MoE)
    double experts = 0;  // the expert FFNs (sharded over ep as well as tp)
    // What training updates: `total` in full training, the LoRA adapters only under LoRA.
    double trainable = 0;
    double trainable_experts = 0;  // of which in the expert FFNs
};

// Exact parameter counts (no padding beyond what the spec gives).
struct ParamCount {
    std::array<LayerParams, kLayerKinds> layer{};  // one block of each kind
    std::array<int64_t, kLayerKinds> layers{};     // how many blocks of each kind the model has
    double embedding = 0;                          // token or patch (+ learned position) embedding
    double lm_head = 0;                            // output projection (0 when tied; a vit's regression head)
    double final_norm = 0;
    // The multi-token prediction modules together (model.mtp_layers): trained with the model on
    // the last stage but not part of it (total() and the rest leave them out; serving never loads them).
    LayerParams mtp{};
    bool frozen_base = false;                      // LoRA: embedding, head and norms not trained
    [[nodiscard]] double blocks(double LayerParams::*field) const {
        double n = 0;
        for (size_t k = 0; k < kLayerKinds; ++k) n += layer[k].*field * static_cast<double>(layers[k]);
        return n;
    }
    [[nodiscard]] double total() const { return blocks(&LayerParams::total) + embedding + lm_head + final_norm; }
    [[nodiscard]] double active() const { return blocks(&LayerParams::active) + embedding + lm_head + final_norm; }
    [[nodiscard]] double trainable() const {
        return blocks(&LayerParams::trainable) + (frozen_base ? 0.0 : embedding + lm_head + final_norm);
    }
};

// `lora`: the adapters whose parameters are the trainable ones (default: full training).
ParamCount count_params(const ModelSpec& m, const LoraSpec& lora = {});

}  // namespace sm
