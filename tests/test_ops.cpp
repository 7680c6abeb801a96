// The op list: FLOP and activation memory against the closed forms of the literature.
#include <gtest/gtest.h>

#include <algorithm>

#include "model/ops.hpp"
#include "test_helpers.hpp"

namespace sm {
namespace {

using testing::model_preset;

double forward_flop(const LayerOps& ops) {
    double f = 0;
    for (const Op& op : ops.ops) {
        if (op.kind == OpKind::gemm || op.kind == OpKind::batched_gemm)
            f += 2.0 * op.gemm.m * op.gemm.n * op.gemm.k * op.gemm.batch;
        if (op.kind == OpKind::attention) f += op.attn_model_flop;
    }
    return f;
}

double saved(const LayerOps& ops, Recompute r) {
    double b = 0;
    for (const Op& op : ops.ops) b += op.saved_bytes + (r == Recompute::none ? op.core_saved_bytes : 0.0);
    return b;
}

const auto shape = testing::layer_shape;

// Refilling a block (the search reuses one per worker) leaves nothing of what it held before: a
// context-parallel all-gather block holds its gathered K/V (transient bytes, three more
// collectives); refilled as a plain tp-8 block it has the plain block's ops, collectives and no
// transient bytes.
TEST(Ops, RefillingABlockKeepsNothingOfTheOldOne) {
    const ModelSpec m = model_preset("gpt3-175b");
    LayerShape gathered = shape(1, 2048, 8, true);
    gathered.cp = 4;
    gathered.q_len = 512;
    gathered.cp_kind = CpKind::all_gather;
    LayerOps out;
    layer_ops(out, m, gathered, LayerKind::dense);
    ASSERT_GT(out.transient_bytes, 0);
    const LayerOps plain = layer_ops(m, shape(1, 2048, 8, true), LayerKind::dense);
    layer_ops(out, m, shape(1, 2048, 8, true), LayerKind::dense);
    EXPECT_EQ(out.transient_bytes, 0);
    EXPECT_EQ(out.input_bytes, plain.input_bytes);
    EXPECT_EQ(out.ops.size(), plain.ops.size());
    EXPECT_EQ(out.comms.size(), plain.comms.size());
    EXPECT_DOUBLE_EQ(forward_flop(out), (24.0 * 2048 * 12288 * 12288 + 4.0 * 2048 * 2048 * 12288) / 8);
    head_ops(out, m, shape(1, 2048, 8, true), true);
    EXPECT_EQ(out.ops.size(), head_ops(m, shape(1, 2048, 8, true), true).ops.size());
    embedding_ops(out, m, shape(1, 2048, 8, true));
    EXPECT_EQ(out.comms.size(), embedding_ops(m, shape(1, 2048, 8, true)).comms.size());
}

// The attention sub-layer alone: GPT-3's QKV and output projections (8 s h^2) and its
// attention core (4 s^2 h) of the block's 24 s h^2 + 4 s^2 h, over tp 8; nothing for a block
// without attention; MLA's projections that follow the core's form among a DeepSeek block's.
TEST(Ops, AttentionSubLayerAlone) {
    const ModelSpec m = model_preset("gpt3-175b");
    const LayerOps a = attention_ops(m, shape(1, 2048, 8, true), LayerKind::dense);
    EXPECT_DOUBLE_EQ(forward_flop(a), (8.0 * 2048 * 12288 * 12288 + 4.0 * 2048 * 2048 * 12288) / 8);
    EXPECT_TRUE(attention_ops(m, shape(1, 2048, 8, true), LayerKind::mlp).ops.empty());
    const LayerOps mla = attention_ops(model_preset("deepseek-v3"), shape(1, 512, 1, false), LayerKind::moe);
    EXPECT_TRUE(std::any_of(mla.ops.begin(), mla.ops.end(), [](const Op& o) { return o.core_projection; }));
    EXPECT_TRUE(std::none_of(mla.ops.begin(), mla.ops.end(), [](const Op& o) { return o.name == "moe_router"; }));
}

TEST(Ops, Gpt3LayerForwardFlopIs24bsh2Plus4bs2h) {
    const ModelSpec m = model_preset("gpt3-175b");
    const double b = 1, s = 2048, h = 12288;
    EXPECT_DOUBLE_EQ(forward_flop(layer_ops(m, shape(b, s, 1, false), LayerKind::dense)), 24 * b * s * h * h + 4 * b * s * s * h);
    // Tensor parallelism divides every GEMM and the attention exactly.
    EXPECT_DOUBLE_EQ(forward_flop(layer_ops(m, shape(b, s, 8, true), LayerKind::dense)), (24 * b * s * h * h + 4 * b * s * s * h) / 8);
}

TEST(Ops, SwigluAndGqaFlop) {
    // Llama-2 70B layer: Q and O are h x h, K and V are h x (8 * 128), three FFN matrices.
    const ModelSpec m = model_preset("llama2-70b");
    const double T = 4096, h = 8192, kv = 1024, f = 28672, s = 4096;
    const double expected = 2 * T * h * (h + 2 * kv) + 2 * T * h * h + 3 * 2 * T * h * f + 4 * s * s * h;
    EXPECT_DOUBLE_EQ(forward_flop(layer_ops(m, shape(1, s, 1, false), LayerKind::dense)), expected);
}

TEST(Ops, HeadFlopIs2bshV) {
    const ModelSpec m = model_preset("gpt3-175b");
    const LayerOps head = head_ops(m, shape(2, 2048, 4, false), true);
    EXPECT_DOUBLE_EQ(forward_flop(head), 2.0 * 2 * 2048 * 12288 * 51200 / 4);
}

// Korthikanti et al. 2022, eq. 1-4: activation bytes per layer with fp16, dropout and
// materialised (unfused) attention.
class Korthikanti : public ::testing::Test {
protected:
    ModelSpec m = model_preset("gpt3-175b");
    double s = 2048, b = 1, h = 12288, a = 96, t = 8;
    void SetUp() override { m.attention = AttentionImpl::unfused; }
};

TEST_F(Korthikanti, NoParallelism) {
    EXPECT_DOUBLE_EQ(saved(layer_ops(m, shape(b, s, 1, false), LayerKind::dense), Recompute::none), s * b * h * (34 + 5 * a * s / h));
}

TEST_F(Korthikanti, TensorParallel) {
    EXPECT_DOUBLE_EQ(saved(layer_ops(m, shape(b, s, 8, false), LayerKind::dense), Recompute::none),
                     s * b * h * (10 + 24 / t + 5 * a * s / (h * t)));
}

TEST_F(Korthikanti, TensorAndSequenceParallel) {
    EXPECT_DOUBLE_EQ(saved(layer_ops(m, shape(b, s, 8, true), LayerKind::dense), Recompute::none), s * b * h / t * (34 + 5 * a * s / h));
}

TEST_F(Korthikanti, SelectiveRecompute) {
    EXPECT_DOUBLE_EQ(saved(layer_ops(m, shape(b, s, 8, true), LayerKind::dense), Recompute::selective), 34 * s * b * h / t);
}

TEST_F(Korthikanti, FullRecomputeKeepsTheLayerInput) {
    EXPECT_DOUBLE_EQ(layer_ops(m, shape(b, s, 8, false), LayerKind::dense).input_bytes, 2 * s * b * h);
    EXPECT_DOUBLE_EQ(layer_ops(m, shape(b, s, 8, true), LayerKind::dense).input_bytes, 2 * s * b * h / t);
}

TEST(Ops, FusedAttentionKeepsNoScores) {
    // FlashAttention saves Q, K, V and an fp32 log-sum-exp per query and head: no s^2 term.
    ModelSpec m = model_preset("gpt3-175b");
    const double s = 2048, a = 96;
    const LayerOps ops = layer_ops(m, shape(1, s, 1, false), LayerKind::dense);
    const double unfused_core = 5 * a * s * s;
    m.attention = AttentionImpl::unfused;
    const double gap = saved(layer_ops(m, shape(1, s, 1, false), LayerKind::dense), Recompute::none) - saved(ops, Recompute::none);
    EXPECT_DOUBLE_EQ(gap, unfused_core - 4 * s * a);  // s^2 terms out, the log-sum-exp in
    EXPECT_DOUBLE_EQ(saved(ops, Recompute::none) - saved(ops, Recompute::selective), 4 * s * a);
}

TEST(Ops, GqaShrinksSavedKeysAndValues) {
    const ModelSpec mha = model_preset("llama2-13b");
    ModelSpec gqa = mha;
    gqa.kv_heads = 8;
    const double s = 4096, d = 128;
    const double gap = saved(layer_ops(mha, shape(1, s, 1, false), LayerKind::dense), Recompute::none) -
                       saved(layer_ops(gqa, shape(1, s, 1, false), LayerKind::dense), Recompute::none);
    // K and V lose (40 - 8) heads of 128 each, at 2 bytes.
    EXPECT_DOUBLE_EQ(gap, 2.0 * s * (40 - 8) * d * 2);
}

TEST(Ops, KvHeadsReplicatedBeyondTheirCount) {
    const ModelSpec m = model_preset("llama2-70b");  // 8 KV heads
    EXPECT_DOUBLE_EQ(kv_heads_per_rank(m, 4), 2.0);
    EXPECT_DOUBLE_EQ(kv_heads_per_rank(m, 16), 1.0);
}

TEST(Ops, TensorParallelCommunicationPerLayer) {
    const ModelSpec m = model_preset("gpt3-175b");
    const double bytes = 2048.0 * 12288 * 2;
    auto count = [](const LayerOps& ops, Collective c, Pass p) {
        int n = 0;
        for (const CommOp& x : ops.comms) n += (x.kind == c && x.pass == p) ? 1 : 0;
        return n;
    };
    const LayerOps plain = layer_ops(m, shape(1, 2048, 8, false), LayerKind::dense);
    EXPECT_EQ(count(plain, Collective::all_reduce, Pass::fwd), 2);  // after attention and MLP
    EXPECT_EQ(count(plain, Collective::all_reduce, Pass::bwd), 2);
    const LayerOps sp = layer_ops(m, shape(1, 2048, 8, true), LayerKind::dense);
    EXPECT_EQ(count(sp, Collective::all_gather, Pass::fwd), 2);
    EXPECT_EQ(count(sp, Collective::reduce_scatter, Pass::fwd), 2);
    for (const CommOp& c : sp.comms) EXPECT_DOUBLE_EQ(c.bytes, bytes);
    EXPECT_TRUE(layer_ops(m, shape(1, 2048, 1, false), LayerKind::dense).comms.empty());
}

}  // namespace
}  // namespace sm
