// Decode attention under grouped-query attention, costed by the units its kernel runs on
// (system.efficiency.decode_attention): hand-computed times on a round machine.
#include <gtest/gtest.h>

#include <algorithm>

#include "hardware/cost.hpp"
#include "inference/inference.hpp"
#include "model/ops.hpp"
#include "test_helpers.hpp"

namespace sm {
namespace {

using testing::round_inference_system;

const Op& attention_op(const LayerOps& ops) {
    for (const Op& op : ops.ops)
        if (op.kind == OpKind::attention) return op;
    ADD_FAILURE() << "no attention op";
    static const Op none;
    return none;
}

// 32 query heads of 128 over 4 K/V heads (8 per K/V head), one token of each of 64 sequences
// against 4,096 cached positions, fp16 throughout, tp 1.
LayerShape decode_step() {
    LayerShape s;
    s.batch = 64;
    s.q_len = 1;
    s.kv_len = 4096;
    s.decode = true;
    return s;
}

ModelSpec gqa_model() {
    ModelSpec m = testing::tiny_llama();
    m.hidden = 4096;
    m.heads = 32;
    m.kv_heads = 4;
    m.ffn_hidden = 8192;
    return m;
}

// FLOP: 2 x 64 x 32 x 4,096 x (128 + 128) = 4,294,967,296 (QK^T and PV over the whole cache).
// Bytes: K and V of 4 heads, 64 x 4,096 x 4 x 256 x 2 = 536,870,912, plus Q and O of 32 heads,
// 64 x 32 x 256 x 2 = 1,048,576. On the tensor cores (100 TFLOP/s fp16) the math takes 42.9 us
// and the 537.9 MB at 1 TB/s 537.9 us: memory-bound. The CUDA-core kernel (one thread block per
// sequence and query head) reads each K/V head once per query head sharing it, 8 times:
// 4,294,967,296 + 1,048,576 bytes, 4.296 ms, over its 429.5 us of math at 10 TFLOP/s.
TEST(DecodeAttention, UnitsOfTheKernel) {
    const ModelSpec m = gqa_model();
    const LayerOps ops = layer_ops(m, decode_step(), LayerKind::dense);
    const Op& attn = attention_op(ops);
    EXPECT_TRUE(attn.decode_core);
    EXPECT_DOUBLE_EQ(attn.decode_group, 8.0);
    EXPECT_DOUBLE_EQ(attn.attn_flop, 2.0 * 64 * 32 * 4096 * 256);
    EXPECT_DOUBLE_EQ(attn.attn_kv_len, 4096);  // the cache each query spans
    SystemSpec sys = round_inference_system();
    CostContext ctx;
    const double kv = 64.0 * 4096 * 4 * 256 * 2;
    const double qo = 64.0 * 32 * 256 * 2;
    const OpCost tc = cost_op(attn, sys, ctx);
    EXPECT_NEAR(tc.fwd_s, (kv + qo) / 1e12, 1e-12);
    EXPECT_NEAR(tc.fwd_compute_s, attn.attn_flop / 100e12, 1e-15);
    sys.eff.decode_attention = DecodeAttentionUnits::cuda_core;
    const OpCost cc = cost_op(attn, sys, ctx);
    EXPECT_NEAR(cc.fwd_compute_s, attn.attn_flop / 10e12, 1e-15);
    EXPECT_NEAR(cc.fwd_bytes, 8.0 * kv + qo, 1.0);
    EXPECT_NEAR(cc.fwd_s, (8.0 * kv + qo) / 1e12, 1e-12);
    // 40 times slower CUDA cores (0.25 TFLOP/s): 17.18 ms of math outlasts the memory.
    sys.accel.vector_flop_per_s = 0.25e12;
    EXPECT_NEAR(cost_op(attn, sys, ctx).fwd_s, attn.attn_flop / 0.25e12, 1e-12);
    // attention_max scales the vector rate as it scales the tensor-core rate.
    sys.eff.attention_max = 0.5;
    EXPECT_NEAR(cost_op(attn, sys, ctx).fwd_s, attn.attn_flop / 0.125e12, 1e-12);
}

// Multi-head attention (a K/V head per query head) reads its cache once on either kernel.
TEST(DecodeAttention, MultiHeadReadsOnce) {
    ModelSpec m = gqa_model();
    m.kv_heads = 32;
    LayerShape s = decode_step();
    s.tp = 4;  // 8 query heads and their 8 K/V heads per GPU
    const LayerOps ops = layer_ops(m, s, LayerKind::dense);
    const Op& attn = attention_op(ops);
    EXPECT_DOUBLE_EQ(attn.decode_group, 1.0);
    SystemSpec sys = round_inference_system();
    sys.eff.decode_attention = DecodeAttentionUnits::cuda_core;
    CostContext ctx;
    EXPECT_NEAR(cost_op(attn, sys, ctx).fwd_bytes, 64.0 * 4096 * 8 * 256 * 2 + 64.0 * 8 * 256 * 2, 1.0);
}

// Prefill (many query tokens) runs FlashAttention on the tensor cores whatever the decode kernel.
TEST(DecodeAttention, PrefillIsNotDecode) {
    const ModelSpec m = gqa_model();
    LayerShape s = decode_step();
    s.q_len = 4096;
    s.decode = false;
    const LayerOps ops = layer_ops(m, s, LayerKind::dense);  // held: attention_op returns a reference into it
    const Op& attn = attention_op(ops);
    EXPECT_FALSE(attn.decode_core);
    SystemSpec sys = round_inference_system();
    sys.eff.decode_attention = DecodeAttentionUnits::cuda_core;
    CostContext ctx;
    EXPECT_NEAR(cost_op(attn, sys, ctx).fwd_compute_s, attn.attn_flop / 100e12, 1e-12);
}

// MLA's absorbed decode attends one shared latent head: its own kernels, not a K/V-head kernel.
TEST(DecodeAttention, MlaDecodeIsNotAKvHeadKernel) {
    const ModelSpec m = testing::model_preset("deepseek-v3");
    LayerShape s = decode_step();
    s.tp = 8;
    const LayerOps ops = layer_ops(m, s, LayerKind::dense);  // held: attention_op returns a reference into it
    const Op& attn = attention_op(ops);
    EXPECT_FALSE(attn.decode_core);
}

// DeepSeek-V3 decoding on 8 GPUs: RoPE on the query's 64-wide rotary part of each of the 16
// local heads and on the one shared rotary key, 64 tokens: 64 x (16 + 1) x 64 elements, read and
// written in bf16.
TEST(DecodeAttention, MlaDecodeRope) {
    const ModelSpec m = testing::model_preset("deepseek-v3");
    LayerShape s = decode_step();
    s.tp = 8;
    const LayerOps ops = layer_ops(m, s, LayerKind::dense);
    EXPECT_DOUBLE_EQ(testing::op_named(ops, "rope").bytes, 2.0 * 64 * 17 * 64 * 2);
}

// The same 64 tokens in a prompt (not absorbed): the same rotary parts, 64 x (16 + 1) x 64.
TEST(DecodeAttention, MlaPromptRope) {
    const ModelSpec m = testing::model_preset("deepseek-v3");
    LayerShape s = decode_step();
    s.tp = 8;
    s.decode = false;
    const LayerOps ops = layer_ops(m, s, LayerKind::dense);
    EXPECT_DOUBLE_EQ(testing::op_named(ops, "rope").bytes, 2.0 * 64 * 17 * 64 * 2);
}

// MLA without a query latent (DeepSeek-V2-Lite's q_lora_rank 0): the query projection runs on
// the hidden state, whose copy the KV down projection already keeps: it keeps nothing more.
TEST(DecodeAttention, MlaWithoutQueryLatentKeepsNoSecondInput) {
    ModelSpec m = testing::model_preset("deepseek-v3");
    m.mla.q_lora_rank = 0;
    LayerShape s = decode_step();
    s.decode = false;
    s.q_len = 16;
    s.kv_len = 16;
    const LayerOps ops = layer_ops(m, s, LayerKind::dense);
    EXPECT_EQ(testing::op_named(ops, "q_proj").saved_bytes, 0.0);
}

TEST(DecodeAttention, ScenarioField) {
    const std::string doc = R"({"model": {"preset": "llama2-70b"}, "system": {"preset": "dgx-h100"},
        "parallel": {"tp": 8}, "inference": {"batch": 64, "input_len": 2048, "output_len": 128}})";
    auto def = testing::load(doc, {}, Purpose::infer);
    ASSERT_TRUE(def.ok());
    EXPECT_EQ(def->system.eff.decode_attention, DecodeAttentionUnits::tensor_core);
    auto cc = testing::load(doc, {"system.efficiency.decode_attention=cuda_core"}, Purpose::infer);
    ASSERT_TRUE(cc.ok());
    EXPECT_EQ(cc->system.eff.decode_attention, DecodeAttentionUnits::cuda_core);
    auto bad = testing::load(doc, {"system.efficiency.decode_attention=mmha"}, Purpose::infer);
    ASSERT_FALSE(bad.ok());
    EXPECT_NE(bad.error().message().find("system.efficiency.decode_attention"), std::string::npos) << bad.error().message();
    // Llama-2 70B at tp 8 (one K/V head of 8 query heads per GPU): CUDA cores are never faster.
    const InferResult a = evaluate_inference({def->model, def->system, def->inference}, def->parallel);
    const InferResult b = evaluate_inference({cc->model, cc->system, cc->inference}, cc->parallel);
    EXPECT_GE(b.tpot_s, a.tpot_s);
    EXPECT_DOUBLE_EQ(b.ttft_s, a.ttft_s);  // prefill untouched
}

}  // namespace
}  // namespace sm
