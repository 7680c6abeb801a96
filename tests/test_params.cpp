// Parameter counts against hand-computed closed forms and published sizes.
#include <gtest/gtest.h>

#include "io/scenario.hpp"
#include "model/model_spec.hpp"
#include "test_helpers.hpp"

namespace sm {
namespace {

ModelSpec preset(const std::string& name) {
    auto j = model_preset_json(name);
    EXPECT_TRUE(j.ok()) << name;
    auto m = parse_model(j.value(), name);
    EXPECT_TRUE(m.ok()) << (m.ok() ? "" : m.error().message());
    return m.value();
}

TEST(Params, Gpt3ClosedForm) {
    // GPT-style block: 12h^2 + 13h; embeddings Vh + sh; final layernorm 2h; tied head.
    const ModelSpec m = preset("gpt3-175b");
    const double h = 12288, l = 96, v = 51200, s = 2048;
    const ParamCount p = count_params(m);
    EXPECT_DOUBLE_EQ(p.layer[idx(LayerKind::dense)].total, 12 * h * h + 13 * h);
    EXPECT_DOUBLE_EQ(p.total(), l * (12 * h * h + 13 * h) + v * h + s * h + 2 * h);
    EXPECT_NEAR(p.total() / 1e9, 174.6, 0.1);
}

TEST(Params, Llama2_7bMatchesPublished) {
    // Llama 2 7B: 6,738,415,616 parameters (Hugging Face model card).
    const ModelSpec m = preset("llama2-7b");
    EXPECT_DOUBLE_EQ(count_params(m).total(), 6738415616.0);
}

TEST(Params, Llama2_70bGqa) {
    // 70B with 8 KV heads: 68,976,648,192 parameters.
    const ModelSpec m = preset("llama2-70b");
    EXPECT_DOUBLE_EQ(count_params(m).total(), 68976648192.0);
}

TEST(Params, MixtralTotalAndActive) {
    // Mixtral 8x7B: 46.7B total, 12.9B active per token.
    const ModelSpec m = preset("mixtral-8x7b");
    const ParamCount p = count_params(m);
    EXPECT_NEAR(p.total() / 1e9, 46.7, 0.1);
    EXPECT_NEAR(p.active() / 1e9, 12.9, 0.1);
}

TEST(Params, Qwen3HeadsWiderThanHiddenOverHeads) {
    // Qwen3-30B-A3B: 32 heads of 128 on a 2,048-wide model. Per layer: Q 2,048 x 4,096, K and V
    // 2 x 2,048 x 512, O 4,096 x 2,048 (18,874,368); 128 experts of 3 x 2,048 x 768
    // (603,979,776); router 2,048 x 128; two RMSNorms. Untied embedding and head 2 x 151,936 x
    // 2,048, final norm 2,048: 30,532,110,336, the model card's 30.5B (29.9B without embeddings).
    // Heads of hidden / heads = 64 would leave Q and O half as wide (30.03B).
    const ModelSpec m = preset("qwen3-30b-a3b");
    const double layer = 18874368.0 + 603979776.0 + 262144.0 + 2.0 * 2048.0;
    EXPECT_DOUBLE_EQ(count_params(m).total(), 48.0 * layer + 2.0 * 151936.0 * 2048.0 + 2048.0);
    // Active: 8 of the 128 experts, 3.3B on the model card.
    EXPECT_NEAR(count_params(m).active() / 1e9, 3.35, 0.01);
    // Qwen3-235B-A22B: 235B total, 22B activated.
    const ParamCount big = count_params(preset("qwen3-235b-a22b"));
    EXPECT_NEAR(big.total() / 1e9, 235.1, 0.1);
    EXPECT_NEAR(big.active() / 1e9, 22.2, 0.1);
    // Qwen3.5-397B-A17B (model card: 397B total, 17B activated), by hand: 60 MoE FFNs of 512
    // experts 3 x 4,096 x 1,024 (6.442B), a router (2.1M) and a shared expert (12.6M); 15 attention
    // layers of q 4,096 x 8,192, k and v 4,096 x 512 each, o 8,192 x 4,096 (71.3M); 45 Gated
    // DeltaNet mixers of in_proj 4,096 x 20,608, conv taps 12,288 x 4, 256 gate/decay values,
    // out_proj 8,192 x 4,096 (118.0M); two 248,320 x 4,096 vocabulary matrices (2.034B); norms.
    // 395,842,780,416 total, 16,845,470,976 active with 10 experts a token; the full-attention layers' output gate
    // (0.5B) and the vision encoder are not modelled.
    const ParamCount q35 = count_params(preset("qwen3.5-397b-a17b"));
    EXPECT_DOUBLE_EQ(q35.total(), 395842780416.0);
    EXPECT_DOUBLE_EQ(q35.active(), 16845470976.0);
}

TEST(Params, GatedFfnWithBiasesAndExpertsByHand) {
    // h = 64, MHA, ffn 256, LayerNorm, biases. Attention: QKV 64 x 192 + 192, output 64 x 64 + 64
    // = 16,640; two norms of 2h = 256; SwiGLU: three 64 x 256 matrices + gate and up biases
    // (2 x 256) + down bias (64) = 49,728. Total 66,624.
    ModelSpec m;
    m.layers = 2;
    m.hidden = 64;
    m.heads = 4;
    m.kv_heads = 4;
    m.ffn_hidden = 256;
    m.ffn_act = FfnAct::swiglu;
    m.vocab = 10;
    m.seq_len = 8;
    const LayerParams dense = count_params(m).layer[idx(LayerKind::dense)];
    EXPECT_DOUBLE_EQ(dense.total, 66624);
    EXPECT_DOUBLE_EQ(dense.active, 66624);
    EXPECT_DOUBLE_EQ(dense.experts, 0);
    // 8 experts of FFN 128, top-2, no biases, RMSNorm: attention 4h^2 = 16,384, norms 2h = 128,
    // router 8h = 512, each expert 3 x 64 x 128 = 24,576.
    m.bias = false;
    m.norm = NormKind::rmsnorm;
    m.moe = {8, 2, 128};
    const ParamCount p = count_params(m);
    const LayerParams moe = p.layer[idx(LayerKind::moe)];
    EXPECT_DOUBLE_EQ(moe.total, 16384 + 128 + 512 + 8 * 24576);
    EXPECT_DOUBLE_EQ(moe.active, 16384 + 128 + 512 + 2 * 24576);
    EXPECT_DOUBLE_EQ(moe.experts, 8 * 24576);
    EXPECT_EQ(p.layers[idx(LayerKind::moe)], 2);
    EXPECT_EQ(p.layers[idx(LayerKind::dense)], 0);
    EXPECT_DOUBLE_EQ(p.final_norm, 64);
    EXPECT_DOUBLE_EQ(p.embedding, (10 + 8) * 64);  // learned positions
    m.tied_embeddings = true;
    EXPECT_DOUBLE_EQ(count_params(m).lm_head, 0);
    // The same two layers with the first dense: a dense block has attention 16,384, norms 128
    // and a SwiGLU FFN of 3 x 64 x 256 = 49,152; the second block keeps its experts.
    m.moe.first_dense_layers = 1;
    const ParamCount mixed = count_params(m);
    EXPECT_DOUBLE_EQ(mixed.total(), (16384 + 128 + 49152) + (16384 + 128 + 512 + 8 * 24576) + 18 * 64 + 64);
    EXPECT_DOUBLE_EQ(mixed.active(), (16384 + 128 + 49152) + (16384 + 128 + 512 + 2 * 24576) + 18 * 64 + 64);
}

// DeepSeek-V3: 61 layers, the first 3 dense. Llama 4 Maverick: 48 layers, every second one MoE
// (layers 1, 3, ..., 47). Counted by hand over ranges that cut through the pattern.
TEST(Params, LayerKindsOfMixedModels) {
    ModelSpec ds;
    ds.layers = 61;
    ds.moe = {256, 8, 2048, 3, 1};
    EXPECT_EQ(layer_kind(ds, 2), LayerKind::dense);
    EXPECT_EQ(layer_kind(ds, 3), LayerKind::moe);
    EXPECT_EQ(count_layers(ds, LayerKind::dense, 0, 61), 3);
    EXPECT_EQ(count_layers(ds, LayerKind::moe, 0, 61), 58);
    EXPECT_EQ(count_layers(ds, LayerKind::dense, 0, 8), 3);   // a first stage of 8 layers
    EXPECT_EQ(count_layers(ds, LayerKind::moe, 8, 16), 8);
    EXPECT_EQ(count_layers(ds, LayerKind::moe, 2, 5), 2);     // layers 3 and 4
    ModelSpec mav;
    mav.layers = 48;
    mav.moe = {128, 1, 8192, 0, 2};
    EXPECT_EQ(layer_kind(mav, 0), LayerKind::dense);
    EXPECT_EQ(layer_kind(mav, 1), LayerKind::moe);
    EXPECT_EQ(count_layers(mav, LayerKind::moe, 0, 48), 24);
    EXPECT_EQ(count_layers(mav, LayerKind::moe, 1, 4), 2);    // layers 1 and 3
    EXPECT_EQ(count_layers(mav, LayerKind::dense, 1, 4), 1);  // layer 2
    EXPECT_EQ(count_layers(mav, LayerKind::moe, 5, 5), 0);
    ModelSpec dense;
    dense.layers = 10;
    EXPECT_EQ(count_layers(dense, LayerKind::dense, 3, 10), 7);
    EXPECT_EQ(count_layers(dense, LayerKind::moe, 0, 10), 0);
}

TEST(Params, EveryPresetParses) {
    for (const auto& name : model_preset_names()) {
        auto j = model_preset_json(name);
        ASSERT_TRUE(j.ok()) << name;
        auto m = parse_model(j.value(), name);
        EXPECT_TRUE(m.ok()) << name << ": " << (m.ok() ? "" : m.error().message());
    }
    for (const auto& name : system_preset_names()) {
        auto j = system_preset_json(name);
        ASSERT_TRUE(j.ok()) << name;
        auto s = parse_system(j.value(), name);
        EXPECT_TRUE(s.ok()) << name << ": " << (s.ok() ? "" : s.error().message());
    }
    EXPECT_EQ(model_preset_names().size(), 36u);   // 15 required by SPEC + 7 model families of issue 8 + 2 Qwen3 MoE + Nemotron-H
    // + the served models of issue 33: Llama 3.1 8B/70B, gpt-oss 20b/120b, Qwen3 8B/32B, DeepSeek-R1
    // + Qwen3.5-397B-A17B (Gated DeltaNet, issue 30) + Nemotron 3 Nano and Super, Nemotron 3.5 Lightning (issue 31)
    EXPECT_EQ(system_preset_names().size(), 10u);  // SPEC's 8, dgx-b300, gb300-nvl72
}

}  // namespace
}  // namespace sm

namespace sm {
namespace {

// Shared experts are a tensor-parallel FFN of their summed width: 1 x 2,048 cuts at tp 2 and 4;
// 1 x 2,050 cuts at tp 2 but not at tp 4 (2,050 = 4 x 512 + 2), and the field is named.
TEST(TensorParallelMisfit, SharedExpertWidth) {
    ModelSpec m = testing::tiny_moe();
    m.heads = 4;
    m.kv_heads = 4;
    m.ffn_hidden = 128;
    m.moe.expert_ffn_hidden = 128;
    m.moe.shared_experts = 1;
    m.moe.shared_expert_ffn_hidden = 2048;
    EXPECT_FALSE(tensor_parallel_misfit(m, 2).has_value());
    EXPECT_FALSE(tensor_parallel_misfit(m, 4).has_value());
    m.moe.shared_expert_ffn_hidden = 2050;
    EXPECT_FALSE(tensor_parallel_misfit(m, 2).has_value());
    const auto bad = tensor_parallel_misfit(m, 4);
    ASSERT_TRUE(bad.has_value());
    EXPECT_EQ(bad->width, 2050);
    EXPECT_FALSE(bad->multiple_ok);  // tp 8 does not cut 2,050 either: only a divisor works
    EXPECT_NE(std::string(bad->field).find("shared_expert_ffn_hidden"), std::string::npos);
}

}  // namespace
}  // namespace sm
