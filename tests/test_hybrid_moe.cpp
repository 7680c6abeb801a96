// Hybrid models with mixture-of-experts blocks ("E" in model.hybrid_pattern; Nemotron 3), latent
// MoE (model.moe.latent_size; Nemotron 3 Super) and multi-token prediction in a hybrid model.
// Parameters, op shapes and bytes are computed by hand on a toy; the Nemotron 3 Nano preset
// against its published configuration.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "model/ops.hpp"
#include "training/step.hpp"
#include "test_helpers.hpp"

namespace sm {
namespace {

using testing::gemm_dims;
using testing::op_named;
using testing::refusal;

// testing::tiny_hybrid (h 64, 4 heads of 16, 2 K/V heads, squared ReLU, vocabulary 100, RMSNorm,
// no biases; a Mamba-2 mixer of d_inner 128, 8 heads of 16, 2 groups, state 16) with the layers
// "ME*": the mixer, a mixture of 8 experts of width 32 (top 2) with one shared expert of width
// 64, attention.
ModelSpec tiny_hybrid_moe() {
    ModelSpec m = testing::tiny_hybrid();
    m.hybrid_pattern = "ME*";
    m.moe.experts = 8;
    m.moe.top_k = 2;
    m.moe.expert_ffn_hidden = 32;
    m.moe.shared_experts = 1;
    m.moe.shared_expert_ffn_hidden = 64;
    return m;
}

std::vector<std::string> op_names(const LayerOps& l) {
    std::vector<std::string> out;
    for (const Op& o : l.ops) out.emplace_back(o.name);
    return out;
}

// The experts block: router 64 x 8 = 512; 8 experts of 64 x 32 + 32 x 64 = 4,096 each (32,768);
// the shared expert 64 x 64 + 64 x 64 = 8,192; its norm 64: 41,536, of which top 2 experts
// active: 512 + 8,192 + 8,192 + 64 = 16,960. The Mamba block is 30,360 and attention 12,352
// (test_hybrid.cpp's hand count, the same mixer and attention).
TEST(HybridMoe, ExpertsBlockParametersByHand) {
    const ParamCount p = count_params(tiny_hybrid_moe());
    for (const LayerKind k : {LayerKind::mamba, LayerKind::experts, LayerKind::attention}) EXPECT_EQ(p.layers[idx(k)], 1) << to_string(k);
    EXPECT_EQ(p.layers[idx(LayerKind::moe)], 0);
    EXPECT_EQ(p.layers[idx(LayerKind::mlp)], 0);
    const LayerParams& e = p.layer[idx(LayerKind::experts)];
    EXPECT_DOUBLE_EQ(e.total, 41536);
    EXPECT_DOUBLE_EQ(e.active, 16960);
    EXPECT_DOUBLE_EQ(e.experts, 32768);
    EXPECT_DOUBLE_EQ(e.trainable, 41536);
    EXPECT_DOUBLE_EQ(e.trainable_experts, 32768);
    EXPECT_DOUBLE_EQ(p.total(), 30360 + 41536 + 12352 + 2 * 6400 + 64);
}

// Latent 16: each expert 16 x 32 + 32 x 16 = 1,024 (8,192 for 8), the projections in and out of
// the latent 2 x 64 x 16 = 2,048: 512 + 8,192 + 8,192 + 2,048 + 64 = 19,008; active 512 + 2,048
// + 8,192 + 2,048 + 64 = 12,864.
TEST(HybridMoe, LatentExpertsParametersByHand) {
    ModelSpec m = tiny_hybrid_moe();
    m.moe.latent_size = 16;
    const ParamCount p = count_params(m);
    const LayerParams& e = p.layer[idx(LayerKind::experts)];
    EXPECT_DOUBLE_EQ(e.total, 19008);
    EXPECT_DOUBLE_EQ(e.active, 12864);
    EXPECT_DOUBLE_EQ(e.experts, 8192);
}

// One sequence of 256 tokens at tp 1, ep 2: 512 token copies (top 2) sent to the busiest rank,
// its 4 experts 128 rows each; the all-to-alls move 512 x 64 x 2 = 65,536 bytes.
TEST(HybridMoe, ExpertsBlockIsTheMixtureAloneBehindItsNorm) {
    LayerShape s;
    s.q_len = 256;
    s.kv_len = 256;
    s.ep = 2;
    const LayerOps l = layer_ops(tiny_hybrid_moe(), s, LayerKind::experts);
    EXPECT_EQ(op_names(l), (std::vector<std::string>{"pre_norm", "moe_router", "moe_permute", "moe_sort_chunks", "expert_up",
                                                     "expert_act", "expert_down", "moe_unsort_chunks", "moe_unpermute",
                                                     "shared_up", "shared_act", "shared_down", "residual"}));
    EXPECT_EQ(gemm_dims(l, "moe_router"), (std::vector<double>{256, 8, 64, 1}));
    EXPECT_EQ(gemm_dims(l, "expert_up"), (std::vector<double>{128, 32, 64, 4}));
    EXPECT_EQ(gemm_dims(l, "expert_down"), (std::vector<double>{128, 64, 32, 4}));
    EXPECT_EQ(gemm_dims(l, "shared_up"), (std::vector<double>{256, 64, 64, 1}));
    EXPECT_DOUBLE_EQ(testing::comm_named(l, "moe_dispatch").bytes, 65536);
    EXPECT_DOUBLE_EQ(testing::comm_named(l, "moe_combine_grad").bytes, 65536);
    EXPECT_EQ(testing::count_named(l, "sp_all_gather"), 0);
    // Nothing of it attends: a step's attention core (attention_ops) is empty for it.
    EXPECT_TRUE(attention_ops(tiny_hybrid_moe(), s, LayerKind::experts).ops.empty());
}

// Through a deduplicating dispatcher (training.moe_dispatcher "flex") the dispatch and combine
// carry each of the 256 token rows once (256 x 64 x 2 = 32,768 bytes) with its 2 copies to route.
TEST(HybridMoe, AFlexDispatcherSendsTheRowsWithTheirFanout) {
    LayerShape s;
    s.q_len = 256;
    s.kv_len = 256;
    s.ep = 2;
    s.dedup_dispatch = true;
    const LayerOps l = layer_ops(tiny_hybrid_moe(), s, LayerKind::experts);
    for (const char* name : {"moe_dispatch", "moe_dispatch_grad", "moe_combine", "moe_combine_grad"}) {
        const CommOp& c = testing::comm_named(l, name);
        EXPECT_EQ(c.kind, Collective::dispatch) << name;
        EXPECT_DOUBLE_EQ(c.bytes, 32768) << name;
        EXPECT_DOUBLE_EQ(c.fanout, 2) << name;
    }
    EXPECT_EQ(testing::comm_named(l, "moe_combine").pass, Pass::fwd);
    EXPECT_EQ(testing::comm_named(l, "moe_dispatch_grad").pass, Pass::bwd);
    // The default dispatcher sends every copy.
    s.dedup_dispatch = false;
    const LayerOps flat = layer_ops(tiny_hybrid_moe(), s, LayerKind::experts);
    EXPECT_EQ(testing::comm_named(flat, "moe_dispatch").kind, Collective::all_to_all);
}

// Latent 16: the tokens projected [256, 64] -> [256, 16] before the permutation and back after
// the combine (backward keeps the 256 x 16 latent rows: 8,192 bytes); experts [128, 32, 16] and
// [128, 16, 32]; the all-to-alls 512 x 16 x 2 = 16,384 bytes and the permutation 2 x 512 x 16 x 2
// = 32,768; the router and the shared expert read the full width.
TEST(HybridMoe, LatentExpertsRunInTheLatentWidth) {
    ModelSpec m = tiny_hybrid_moe();
    m.moe.latent_size = 16;
    LayerShape s;
    s.q_len = 256;
    s.kv_len = 256;
    s.ep = 2;
    const LayerOps l = layer_ops(m, s, LayerKind::experts);
    EXPECT_EQ(op_names(l), (std::vector<std::string>{"pre_norm", "moe_router", "moe_latent_down", "moe_permute", "moe_sort_chunks",
                                                     "expert_up", "expert_act", "expert_down", "moe_unsort_chunks", "moe_unpermute",
                                                     "moe_latent_up", "shared_up", "shared_act", "shared_down", "residual"}));
    EXPECT_EQ(gemm_dims(l, "moe_latent_down"), (std::vector<double>{256, 16, 64, 1}));
    EXPECT_EQ(gemm_dims(l, "moe_latent_up"), (std::vector<double>{256, 64, 16, 1}));
    EXPECT_DOUBLE_EQ(op_named(l, "moe_latent_up").saved_bytes, 8192);
    EXPECT_EQ(gemm_dims(l, "expert_up"), (std::vector<double>{128, 32, 16, 4}));
    EXPECT_EQ(gemm_dims(l, "expert_down"), (std::vector<double>{128, 16, 32, 4}));
    EXPECT_EQ(gemm_dims(l, "moe_router"), (std::vector<double>{256, 8, 64, 1}));
    EXPECT_EQ(gemm_dims(l, "shared_down"), (std::vector<double>{256, 64, 64, 1}));
    EXPECT_DOUBLE_EQ(testing::comm_named(l, "moe_dispatch").bytes, 16384);
    EXPECT_DOUBLE_EQ(op_named(l, "moe_permute").bytes, 32768);
}

// A hybrid model's multi-token prediction module is attention then the model's FFN (Nemotron 3's
// "*E"): the moe transformer block. Its parameters: attention 12,288 and two norms 128, router
// 512, experts 32,768, shared 8,192 (53,888), plus the module's own [128 -> 64] projection 8,192
// and three norms 192: 62,272 a module. Repeated, two depths hold one module's weights and run
// both.
TEST(HybridMoe, MultiTokenPredictionIsAnAttentionAndExpertsBlock) {
    ModelSpec m = tiny_hybrid_moe();
    m.mtp_layers = 2;
    EXPECT_EQ(mtp_block_kind(m), LayerKind::moe);
    EXPECT_DOUBLE_EQ(count_params(m).mtp.total, 2 * 62272.0);
    m.mtp_repeated = true;
    EXPECT_DOUBLE_EQ(count_params(m).mtp.total, 62272);
    EXPECT_DOUBLE_EQ(count_params(m).mtp.experts, 32768);
    LayerShape s;
    s.q_len = 256;
    s.kv_len = 256;
    const LayerOps head = head_ops(m, s, true);
    EXPECT_EQ(testing::count_ops_named(head, "mtp_eh_proj"), 2);
    EXPECT_EQ(testing::count_ops_named(head, "attention"), 2);
    EXPECT_EQ(testing::count_ops_named(head, "expert_up"), 2);
    EXPECT_EQ(testing::count_ops_named(head, "mamba_in_proj"), 0);
    // A speculative decoder's draft runs that block alone, in every kind of stack.
    EXPECT_EQ(layer_kinds(mtp_module_model(m)).back(), LayerKind::moe);
    EXPECT_EQ(layer_kinds(mtp_module_model(m)).size(), 1u);
    EXPECT_EQ(layer_kinds(mtp_module_model(testing::tiny_hybrid())).back(), LayerKind::dense);
    ModelSpec gdn = testing::tiny_moe();  // Gated DeltaNet on 3 of every 4 layers, the 4th full
    gdn.linear_attention = {.full_attention_interval = 4, .key_heads = 2, .value_heads = 4, .key_head_dim = 8, .value_head_dim = 8};
    ASSERT_EQ(mtp_block_kind(gdn), LayerKind::moe);
    EXPECT_EQ(layer_kind(mtp_module_model(gdn), 0), LayerKind::moe);
    ModelSpec alternating = testing::tiny_moe();  // MoE on odd layers: the last (3) is MoE, a
    alternating.moe.interval = 2;                 // dense last layer when there are 3
    alternating.layers = 3;
    ASSERT_EQ(mtp_block_kind(alternating), LayerKind::dense);
    EXPECT_EQ(layer_kind(mtp_module_model(alternating), 0), LayerKind::dense);
    // Without a pattern the module stays the last layer's kind.
    ModelSpec dense = testing::tiny_llama(3);
    dense.mtp_layers = 1;
    EXPECT_EQ(mtp_block_kind(dense), LayerKind::dense);
    EXPECT_EQ(mtp_block_kind(testing::tiny_moe()), LayerKind::moe);
}

// Each pipeline GPU counts its layers of each kind: "ME*ME*" over 2 stages is one of each on
// each.
TEST(HybridMoe, StagesCountTheirExpertsBlocks) {
    ModelSpec m = tiny_hybrid_moe();
    m.layers = 6;
    m.hybrid_pattern = "ME*ME*";
    const std::vector<StageLoad> loads = testing::stage_loads(m, 2);
    ASSERT_EQ(loads.size(), 2u);
    for (const StageLoad& l : loads) {
        EXPECT_EQ(l.blocks[idx(LayerKind::experts)], 1);
        EXPECT_EQ(l.blocks[idx(LayerKind::mamba)], 1);
        EXPECT_EQ(l.blocks[idx(LayerKind::attention)], 1);
        EXPECT_EQ(l.layers, 3);
    }
}

// Nemotron 3 Nano from its configuration (nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16): 23 Mamba-2
// blocks (in_proj 2,688 x (2 x 4,096 + 2 x 8 x 128 + 64), the convolution over 4,096 + 2,048
// channels of 4 taps and a bias, 3 x 64 per head, the gated norm's 4,096, out_proj 4,096 x 2,688,
// the norm 2,688), 6 attention blocks (QKV 2,688 x (4,096 + 2 x 2 x 128), output 4,096 x 2,688,
// norm), 23 expert blocks (router 2,688 x 128, 128 experts of 2 x 2,688 x 1,856, the shared expert
// 2 x 2,688 x 3,712, norm), the untied embedding and output layer 131,072 x 2,688 each and the
// final norm: 31.58 B, the model's "31.6B total".
TEST(HybridMoe, NemotronThreeNanoHasItsParameters) {
    const ModelSpec m = testing::model_preset("nemotron-3-nano-30b-a3b");
    EXPECT_EQ(m.mamba.d_inner(m.hidden), 4096);  // mamba.num_heads 64 x head_dim 64, not 2 x 2,688
    const ParamCount p = count_params(m);
    EXPECT_EQ(p.layers[idx(LayerKind::mamba)], 23);
    EXPECT_EQ(p.layers[idx(LayerKind::experts)], 23);
    EXPECT_EQ(p.layers[idx(LayerKind::attention)], 6);
    const double h = 2688;
    const double mamba = h * (2 * 4096 + 2 * 8 * 128 + 64) + (4096 + 2048) * 5.0 + 192 + 4096 + 4096 * h + h;
    const double attention = h * 4608 + 4096 * h + h;
    const double experts = h * 128 + 128 * (2 * h * 1856) + 2 * h * 3712 + h;
    EXPECT_DOUBLE_EQ(p.total(), 23 * mamba + 6 * attention + 23 * experts + 2 * 131072 * h + h);
    EXPECT_NEAR(p.total() / 1e9, 31.6, 0.05);
}

TEST(HybridMoe, ThePatternAndTheExpertsGoTogether) {
    const std::string base = R"({"system": {"preset": "dgx-h100"}, "parallel": {"tp": 1, "dp": 8, "ep": 8},
                                 "training": {"global_batch": 64}, "model": {"preset": "nemotron-3-nano-30b-a3b")";
    EXPECT_EQ(refusal(base + "}}"), "");
    // A latent wider than nothing is any positive width; zero is out of range.
    EXPECT_NE(refusal(base + R"(, "moe": {"experts": 128, "top_k": 6, "latent_size": 0}}})").find("model.moe.latent_size"), std::string::npos);
    EXPECT_NE(refusal(base + R"(, "mamba": {"num_heads": 0}}})").find("model.mamba.num_heads"), std::string::npos);
    // Multi-token prediction trains in a hybrid model.
    EXPECT_EQ(refusal(base + R"(, "mtp_layers": 2, "mtp_repeated": true}})"), "");
    // The dispatcher is Megatron-Core's alltoall or flex.
    const std::string flex = R"({"system": {"preset": "dgx-h100"}, "parallel": {"tp": 1, "dp": 8, "ep": 8},
        "model": {"preset": "nemotron-3-nano-30b-a3b"}, "training": {"global_batch": 64, "moe_dispatcher": )";
    EXPECT_EQ(refusal(flex + R"("flex"}})"), "");
    EXPECT_NE(refusal(flex + R"("deepep"}})").find("training.moe_dispatcher"), std::string::npos);
    const auto s = testing::load(flex + R"("flex"}})");
    ASSERT_TRUE(s.ok());
    EXPECT_EQ(s.value().training.moe_dispatcher, MoeDispatcher::flex);
    EXPECT_TRUE(training_shape(s.value().model, s.value().parallel, s.value().training).dedup_dispatch);
}

}  // namespace
}  // namespace sm
