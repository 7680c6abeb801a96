// Gated DeltaNet layers (model.linear_attention; Qwen3-Next, Qwen3.5): which layers they are,
// their parameters, their ops in a prompt and in a decode step, the recurrent state they keep
// instead of a KV cache, and the scenario rules. Expectations are computed by hand.
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "inference/inference.hpp"
#include "inference/roofline.hpp"
#include "model/ops.hpp"
#include "test_helpers.hpp"

namespace sm {
namespace {

// tiny_llama (hidden 64, 4 heads of 16, 2 KV heads, SwiGLU FFN 128) with 8 layers, every 4th
// attending in full; Gated DeltaNet of 2 key heads and 4 value heads, each 8 wide, 4 taps,
// chunks of 64.
ModelSpec tiny_gdn() {
    ModelSpec m = testing::tiny_llama(8);
    m.linear_attention.full_attention_interval = 4;
    m.linear_attention.key_heads = 2;
    m.linear_attention.value_heads = 4;
    m.linear_attention.key_head_dim = 8;
    m.linear_attention.value_head_dim = 8;
    m.linear_attention.conv_kernel = 4;
    m.linear_attention.chunk = 64;
    return m;
}

const Op* find(const LayerOps& l, std::string_view name) {
    for (const Op& op : l.ops)
        if (op.name == name) return &op;
    return nullptr;
}

TEST(LinearAttention, EveryIntervalthLayerAttendsInFull) {
    const ModelSpec m = tiny_gdn();
    // 0-based layers 3 and 7 are full attention (i + 1 = 4, 8); the other six Gated DeltaNet.
    for (int64_t i = 0; i < 8; ++i) EXPECT_EQ(layer_kind(m, i), i == 3 || i == 7 ? LayerKind::dense : LayerKind::linear) << i;
    EXPECT_EQ(count_layers(m, LayerKind::linear, 0, 8), 6);
    EXPECT_EQ(count_layers(m, LayerKind::dense, 0, 8), 2);
    EXPECT_EQ(count_layers(m, LayerKind::linear, 2, 6), 3);  // layers 2, 4, 5
    EXPECT_EQ(count_layers(m, LayerKind::dense, 2, 6), 1);   // layer 3
    EXPECT_EQ(count_layers(m, LayerKind::moe, 0, 8), 0);
    // With experts every layer's FFN is MoE: the full-attention layers are moe blocks.
    ModelSpec moe = m;
    moe.moe.experts = 8;
    moe.moe.top_k = 2;
    moe.moe.expert_ffn_hidden = 32;
    EXPECT_EQ(count_layers(moe, LayerKind::moe, 0, 8), 2);
    EXPECT_EQ(count_layers(moe, LayerKind::dense, 0, 8), 0);
    EXPECT_EQ(moe.ffn_kind(LayerKind::linear), LayerKind::moe);
    EXPECT_EQ(m.ffn_kind(LayerKind::linear), LayerKind::dense);
}

// A dense model's stages count their Gated DeltaNet layers too (not all of them as dense
// blocks): 8 layers over 2 stages, each 3 linear and 1 full.
TEST(LinearAttention, DenseStagesCountTheirLinearLayers) {
    const ModelSpec m = tiny_gdn();
    ASSERT_FALSE(m.moe.enabled());
    const std::vector<StageLoad> loads = testing::stage_loads(m, 2);
    ASSERT_EQ(loads.size(), 2u);
    for (const StageLoad& l : loads) {
        EXPECT_EQ(l.blocks[idx(LayerKind::linear)], 3);
        EXPECT_EQ(l.blocks[idx(LayerKind::dense)], 1);
    }
}

TEST(LinearAttention, ParametersAreTheMixersInPlaceOfAttention) {
    const ModelSpec m = tiny_gdn();
    const ParamCount p = count_params(m);
    // Mixer: in_proj 64 x (2 x 16 + 2 x 32 + 2 x 4) = 6,656; conv taps (2 x 16 + 32) x 4 = 256;
    // dt_bias and A_log 2 x 4 = 8; the gated norm's 8; out_proj 32 x 64 = 2,048: 8,976.
    // Attention it replaces: QKV 64 x (64 + 2 x 32) = 8,192 and out 64 x 64 = 4,096: 12,288.
    const double dense = p.layer[idx(LayerKind::dense)].total;
    EXPECT_DOUBLE_EQ(p.layer[idx(LayerKind::linear)].total, dense - 12288.0 + 8976.0);
    EXPECT_EQ(p.layers[idx(LayerKind::linear)], 6);
    // The ops carry the same matrices (weight_params_per_gpu reads them): in_proj and out_proj.
    LayerShape s;
    s.q_len = s.kv_len = 1;
    const LayerOps ops = layer_ops(m, s, LayerKind::linear);
    ASSERT_NE(find(ops, "gdn_in_proj"), nullptr);
    EXPECT_DOUBLE_EQ(find(ops, "gdn_in_proj")->gemm.n * find(ops, "gdn_in_proj")->gemm.k, 6656.0);
    EXPECT_DOUBLE_EQ(find(ops, "gdn_out_proj")->gemm.n * find(ops, "gdn_out_proj")->gemm.k, 2048.0);
    EXPECT_EQ(find(ops, "qkv_proj"), nullptr);
}

// A prompt of 128 tokens (2 chunks of 64) at tp 2: 1 key head and 2 value heads a rank, n = 2
// chunks x 2 value heads = 4 products of each kind.
TEST(LinearAttention, APromptRunsTheChunkedDeltaRule) {
    const ModelSpec m = tiny_gdn();
    LayerShape s;
    s.q_len = s.kv_len = 128;
    s.tp = 2;
    const LayerOps ops = layer_ops(m, s, LayerKind::linear);
    auto shape = [&](std::string_view name) { return find(ops, name)->gemm; };
    // K K^T and Q K^T: [64, 64] over the key dim 8, 2n of them.
    EXPECT_EQ(shape("gdn_chunk_kkt").m, 64);
    EXPECT_EQ(shape("gdn_chunk_kkt").n, 64);
    EXPECT_EQ(shape("gdn_chunk_kkt").k, 8);
    EXPECT_EQ(shape("gdn_chunk_kkt").batch, 8);
    // The state update K^T U: [8, 8] over the chunk's 64 tokens.
    EXPECT_EQ(shape("gdn_chunk_state").m, 8);
    EXPECT_EQ(shape("gdn_chunk_state").k, 64);
    EXPECT_EQ(shape("gdn_chunk_state").batch, 4);
    // Traffic, with q or k 128 x 8 x 2 B = 2,048 B, v or the output 128 x 16 x 2 B = 4,096 B, the
    // four fp32 states [8, 8] 1,024 B and the four fp32 [64, 64] chunk matrices 65,536 B:
    // K K^T and Q K^T read q and k and write the matrices, keeping q, k and v for backward;
    EXPECT_DOUBLE_EQ(find(ops, "gdn_chunk_kkt")->bytes, 2.0 * 2048.0 + 65536.0);
    EXPECT_DOUBLE_EQ(find(ops, "gdn_chunk_kkt")->saved_bytes, 2.0 * 2048.0 + 4096.0);
    // W and U read the matrices, k and v and write both;
    EXPECT_DOUBLE_EQ(find(ops, "gdn_chunk_wy")->bytes, 65536.0 + 2048.0 + 2.0 * 4096.0);
    // the state update reads k and U once and writes and reads the states;
    EXPECT_DOUBLE_EQ(find(ops, "gdn_chunk_state")->bytes, 2048.0 + 4096.0 + 2.0 * 1024.0);
    // W S and Q S read W and q and the states; the intra-chunk output reads the matrices and U
    // and writes the output. Only the first keeps anything.
    EXPECT_DOUBLE_EQ(find(ops, "gdn_chunk_inter")->bytes, 2.0 * 2048.0 + 1024.0);
    EXPECT_DOUBLE_EQ(find(ops, "gdn_chunk_intra")->bytes, 65536.0 + 2.0 * 4096.0);
    for (const char* name : {"gdn_chunk_wy", "gdn_chunk_state", "gdn_chunk_inter", "gdn_chunk_intra"})
        EXPECT_DOUBLE_EQ(find(ops, name)->saved_bytes, 0.0) << name;
    EXPECT_EQ(shape("gdn_chunk_inter").batch, 8);  // W S and Q S
    EXPECT_EQ(shape("gdn_chunk_wy").n, 16);        // [C, dk + dv]
    // Around the rule: in_proj [128 tokens, 2 x 8 + 2 x 16 + 2 x 2 = 52] over the hidden 64; the
    // convolution over 128 x 32 channels (read and written in 2 B, its input kept, 2 x 4 taps +
    // SiLU's 6 FLOP each); the gated norm reads the output and z and writes the output (3 x
    // 4,096 B), keeps two (RMSNorm's 4 and SiLU's 6 FLOP an element of 128 x 16).
    EXPECT_EQ(shape("gdn_in_proj").n, 52);
    EXPECT_EQ(shape("gdn_in_proj").m, 128);
    EXPECT_EQ(shape("gdn_in_proj").k, 64);
    EXPECT_EQ(shape("gdn_in_proj").batch, 1);
    // It keeps the input norm's output it reads (128 x 64 x 2 B), which layernorm recompute drops.
    EXPECT_DOUBLE_EQ(find(ops, "gdn_in_proj")->saved_bytes, 16384.0);
    EXPECT_EQ(find(ops, "gdn_in_proj")->frees, module_bit(RecomputeModule::layernorm));
    EXPECT_EQ(shape("gdn_out_proj").k, 16);
    const Op* conv = find(ops, "gdn_conv1d");
    EXPECT_DOUBLE_EQ(conv->bytes, 2.0 * 4096.0 * 2.0);
    EXPECT_DOUBLE_EQ(conv->saved_bytes, 4096.0 * 2.0);
    EXPECT_DOUBLE_EQ(conv->vector_flop, 14.0 * 4096.0);
    const Op* gated = find(ops, "gdn_gated_norm");
    EXPECT_DOUBLE_EQ(gated->bytes, 3.0 * 4096.0);
    EXPECT_DOUBLE_EQ(gated->saved_bytes, 2.0 * 4096.0);
    EXPECT_DOUBLE_EQ(gated->vector_flop, 10.0 * 128.0 * 16.0);
    for (const Op& op : ops.ops)
        if (op.name.substr(0, 9) == "gdn_chunk") {
            EXPECT_TRUE(op.scan) << op.name;
            EXPECT_TRUE(op.core_projection) << op.name;
        }
    EXPECT_EQ(find(ops, "gdn_recurrent"), nullptr);
    // One all-reduce leaving the block's mixer and one leaving its FFN.
    int reduces = 0;
    for (const CommOp& c : ops.comms) reduces += c.name == "tp_all_reduce" ? 1 : 0;
    EXPECT_EQ(reduces, 2);
}

// A decode step of 3 requests at tp 1: each request's 4 states [8, 8] in fp32 read and written
// (2 x 3 x 4 x 64 x 4 B = 6,144 B), q and k (3 x 16 x 2 B each) and v and the output (3 x 32 x 2 B
// each) moved once: 192 + 384 = 576 B; 7 dk dv FLOP per value head and token: 7 x 64 x 12.
// The convolution reads and writes its 3 cached inputs of 64 channels per request (2 x 3 x 3 x
// 64 x 2 B = 2,304 B) beside the new token's 3 x 64 channels in and out (768 B).
TEST(LinearAttention, ADecodeStepUpdatesEachRequestsState) {
    const ModelSpec m = tiny_gdn();
    LayerShape s;
    s.batch = 3;
    s.q_len = 1;
    s.kv_len = 500;
    s.decode = true;
    const LayerOps ops = layer_ops(m, s, LayerKind::linear);
    const Op* r = find(ops, "gdn_recurrent");
    ASSERT_NE(r, nullptr);
    EXPECT_DOUBLE_EQ(r->bytes, 6144.0 + 576.0);
    EXPECT_DOUBLE_EQ(r->vector_flop, 7.0 * 64.0 * 12.0);
    EXPECT_TRUE(r->core_projection);
    EXPECT_DOUBLE_EQ(r->saved_bytes, 0.0);  // inference keeps nothing for a backward pass
    EXPECT_DOUBLE_EQ(find(ops, "gdn_conv1d")->bytes, 768.0 + 2304.0);
    EXPECT_EQ(find(ops, "gdn_chunk_kkt"), nullptr);
    // The step's cost does not grow with the context (no K/V to read).
    LayerShape longer = s;
    longer.kv_len = 50000;
    EXPECT_DOUBLE_EQ(find(layer_ops(m, longer, LayerKind::linear), "gdn_recurrent")->bytes, r->bytes);
}

// Only the 2 full-attention layers cache K/V per token (2 KV heads x 16 x K and V x 2 B = 128 B
// a token); the 6 Gated DeltaNet layers keep, per request, 4 value heads' [8, 8] fp32 states
// (1,024 B) and 3 conv inputs of 64 channels in fp16 (384 B). Batch 2, 100 tokens, tp 1:
// 2 x 2 x 100 x 128 + 6 x 2 x 1,408 = 51,200 + 16,896 B. At tp 2 both halve.
TEST(LinearAttention, StateIsFixedPerRequestAndKvOnlyOnFullLayers) {
    const ModelSpec m = tiny_gdn();
    ParallelConfig p;
    InferenceSpec s = testing::fp16_workload(2, 100, 10);
    EXPECT_DOUBLE_EQ(recurrent_state_bytes_per_gpu(m, p, s), 16896.0);
    EXPECT_DOUBLE_EQ(kv_cache_bytes_per_gpu(m, p, s, 100), 51200.0 + 16896.0);
    // More tokens grow the K/V alone.
    EXPECT_DOUBLE_EQ(kv_cache_bytes_per_gpu(m, p, s, 200) - kv_cache_bytes_per_gpu(m, p, s, 100), 51200.0);
    p.tp = 2;
    EXPECT_DOUBLE_EQ(recurrent_state_bytes_per_gpu(m, p, s), 16896.0 / 2.0);
    // Over 2 pipeline stages each holds half the layers' states (3 of the 6).
    p.tp = 1;
    p.pp = 2;
    EXPECT_DOUBLE_EQ(recurrent_state_bytes_per_gpu(m, p, s), 16896.0 / 2.0);
    // One Gated DeltaNet layer of two (every 2nd attends in full): one layer's states.
    ModelSpec two = tiny_gdn();
    two.layers = 2;
    two.linear_attention.full_attention_interval = 2;
    EXPECT_DOUBLE_EQ(recurrent_state_bytes_per_gpu(two, ParallelConfig{}, s), 16896.0 / 6.0);
    // A model without Gated DeltaNet keeps no state.
    EXPECT_DOUBLE_EQ(recurrent_state_bytes_per_gpu(testing::tiny_llama(8), ParallelConfig{}, s), 0.0);
}

const char* const kQwen35 = R"({"model": {"preset": "qwen3.5-397b-a17b"}, "system": {"preset": "dgx-b200"},
    "parallel": {"tp": 8}, "inference": {"precision": "bf16", "batch": 4, "input_len": 1024, "output_len": 64}})";

TEST(LinearAttention, Qwen35PresetInfersAndItsRulesNameTheirFields) {
    const auto s = testing::load(kQwen35, {}, Purpose::infer);
    ASSERT_TRUE(s.ok()) << s.error().message();
    EXPECT_EQ(count_layers(s->model, LayerKind::linear, 0, 60), 45);
    EXPECT_EQ(count_layers(s->model, LayerKind::moe, 0, 60), 15);
    const InferResult r = evaluate_inference({s->model, s->system, s->inference}, s->parallel);
    EXPECT_GT(r.ttft_s, 0);
    EXPECT_GT(r.tpot_s, 0);
    auto refused = [](const std::vector<std::string>& sets, Purpose purpose = Purpose::infer) {
        const auto x = testing::load(kQwen35, sets, purpose);
        return x.ok() ? std::string() : x.error().message();
    };
    // 16 key heads cannot split 32 ways.
    EXPECT_NE(refused({"parallel.tp=32"}).find("model.linear_attention.key_heads"), std::string::npos) << refused({"parallel.tp=32"});
    EXPECT_NE(refused({"model.linear_attention.value_heads=24"}).find("a multiple of linear_attention.key_heads"), std::string::npos);
    EXPECT_NE(refused({"model.moe.first_dense_layers=1"}).find("every layer's FFN of one kind"), std::string::npos);
    const std::string cp = refused({"parallel.cp=2", "parallel.tp=1"}, Purpose::train);
    EXPECT_NE(cp.find("context parallelism of Gated DeltaNet layers"), std::string::npos) << cp;
    const std::string lora = refused({"training.method=lora", "training.lora_rank=8"}, Purpose::train);
    EXPECT_NE(lora.find("LoRA of Gated DeltaNet layers"), std::string::npos) << lora;
}

// The roofline table names each block by its kind: a model of Gated DeltaNet and MoE layers
// lists "linear layer" and "moe layer" rows, one of dense and MoE layers "dense layer" and "moe
// layer", one kind alone "layer".
TEST(LinearAttention, RooflineRowsNameTheirBlocks) {
    auto blocks = [](const std::string& preset, const std::vector<std::string>& sets) {
        const std::string text = R"({"model": {"preset": ")" + preset + R"("}, "system": {"preset": "dgx-b200"},
            "parallel": {"tp": 8}, "inference": {"precision": "bf16", "batch": 2, "input_len": 128, "output_len": 8}})";
        const auto s = testing::load(text, sets, Purpose::infer);
        EXPECT_TRUE(s.ok()) << (s.ok() ? "" : s.error().message());
        std::map<std::string, double> layers;  // block -> how many layers its ops run in
        for (const RooflineRow& r : inference_roofline({s->model, s->system, s->inference}, s->parallel, 0).rows)
            if (r.block.ends_with("layer")) layers[r.block] = r.count;
        return layers;
    };
    using Blocks = std::map<std::string, double>;
    EXPECT_EQ(blocks("qwen3.5-397b-a17b", {}), (Blocks{{"linear layer", 45}, {"moe layer", 15}}));
    EXPECT_EQ(blocks("deepseek-v3", {}), (Blocks{{"dense layer", 3}, {"moe layer", 58}}));
    EXPECT_EQ(blocks("llama3-70b", {}), (Blocks{{"layer", 80}}));
}

// SUMMA's grid is refused by name for a dense model with Gated DeltaNet layers (an MoE one is
// refused for its experts first).
TEST(LinearAttention, SummaIsRefusedByName) {
    const std::string dense = R"({"model": {"preset": "llama3-8b", "linear_attention": {"full_attention_interval": 4,
        "key_heads": 8, "value_heads": 16}}, "system": {"preset": "dgx-h100"},
        "parallel": {"tp": 4, "tp_rows": 2, "dp": 2}, "training": {"global_batch": 8}})";
    const auto s = testing::load(dense);
    ASSERT_FALSE(s.ok());
    EXPECT_NE(s.error().message().find("not modelled for Gated DeltaNet layers (model.linear_attention)"), std::string::npos)
        << s.error().message();
}

}  // namespace
}  // namespace sm
