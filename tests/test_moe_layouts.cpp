// MoE layers laid out apart from attention in inference: attention tensor-parallel over 4 GPUs
// with the 8 experts whole and spread over the same 4 (etp 1, ep = tp; TensorRT-LLM's and
// SGLang's moe_tp 1 x moe_ep 4), against experts split like the dense FFN and against experts
// spread over data-parallel replicas (DEP). Hand sums on tiny_moe (h 64, 8 SwiGLU experts of
// 128, top-2), 12 tokens in fp16 (2 bytes).
#include <gtest/gtest.h>

#include <algorithm>

#include "inference/inference.hpp"
#include "layout/rules.hpp"
#include "model/ops.hpp"
#include "parallel/placement.hpp"
#include "test_helpers.hpp"

namespace sm {
namespace {

using testing::comm_named;
using testing::op_named;

LayerShape tokens(int64_t tp, int64_t ep, int64_t etp) {
    LayerShape s;
    s.batch = 12;
    s.q_len = 1;
    s.kv_len = 64;
    s.tp = tp;
    s.ep = ep;
    s.etp = etp;
    return s;
}

bool has_comm(const LayerOps& ops, const std::string& name) {
    return std::any_of(ops.comms.begin(), ops.comms.end(), [&](const CommOp& c) { return c.name == name; });
}

TEST(MoeLayouts, TpAttentionWithExpertParallelExpertsDispatchesNothing) {
    const ModelSpec m = testing::tiny_moe();
    const LayerOps ops = layer_ops(m, tokens(4, 4, 1), LayerKind::moe);
    // Every rank holds the 12 tokens: it routes all 12 and runs the copies routed to its 2 local
    // experts, 12 x 2 / 4 = 6 rows, each expert whole (up [64 -> 2 x 128]).
    EXPECT_DOUBLE_EQ(op_named(ops, "moe_router").gemm.m, 12.0);
    const Op& up = op_named(ops, "expert_up");
    EXPECT_DOUBLE_EQ(up.gemm.m * up.gemm.batch, 6.0);
    EXPECT_DOUBLE_EQ(up.gemm.batch, 2.0);
    EXPECT_DOUBLE_EQ(up.gemm.n, 256.0);
    // No all-to-all and no expert gather: the partial outputs join the block's all-reduce,
    // 12 x 64 x 2 = 1,536 bytes, the one after attention and the one after the experts.
    EXPECT_FALSE(has_comm(ops, "moe_dispatch"));
    EXPECT_FALSE(has_comm(ops, "moe_combine"));
    EXPECT_FALSE(has_comm(ops, "moe_tp_all_gather"));
    EXPECT_DOUBLE_EQ(comm_named(ops, "tp_all_reduce", 0).bytes, 1536.0);
    EXPECT_DOUBLE_EQ(comm_named(ops, "tp_all_reduce", 1).bytes, 1536.0);
    // Split like the dense FFN instead: every rank runs all 24 copies on a quarter of each
    // expert's width (up n = 256 / 4).
    const LayerOps split = layer_ops(m, tokens(4, 1, 0), LayerKind::moe);
    const Op& up_split = op_named(split, "expert_up");
    EXPECT_DOUBLE_EQ(up_split.gemm.m * up_split.gemm.batch, 24.0);
    EXPECT_DOUBLE_EQ(up_split.gemm.n, 64.0);
}

TEST(MoeLayouts, ExpertsHalfSplitInTwoGroups) {
    // moe_tp 2 x moe_ep 2 on tp 4: each rank runs the copies routed to its group's 4 experts,
    // 12 x 2 / 2 = 12 rows, on half of each expert's width (up n = 256 / 2).
    const ModelSpec m = testing::tiny_moe();
    const LayerOps ops = layer_ops(m, tokens(4, 2, 2), LayerKind::moe);
    const Op& up = op_named(ops, "expert_up");
    EXPECT_DOUBLE_EQ(up.gemm.m * up.gemm.batch, 12.0);
    EXPECT_DOUBLE_EQ(up.gemm.batch, 4.0);
    EXPECT_DOUBLE_EQ(up.gemm.n, 128.0);
    EXPECT_FALSE(has_comm(ops, "moe_dispatch"));
}

TEST(MoeLayouts, DataParallelAttentionDispatchesByAllToAll) {
    // DEP: tp 1, the experts over 4 replicas: each rank's 12 tokens send 12 x 2 copies of
    // 64 x 2 bytes = 3,072 bytes out and back.
    const ModelSpec m = testing::tiny_moe();
    const LayerOps ops = layer_ops(m, tokens(1, 4, 0), LayerKind::moe);
    EXPECT_DOUBLE_EQ(comm_named(ops, "moe_dispatch").bytes, 3072.0);
    EXPECT_DOUBLE_EQ(comm_named(ops, "moe_combine").bytes, 3072.0);
}

TEST(MoeLayouts, WeightsPerGpuAreTheSameShareEitherWay) {
    // 8 experts x 3 x 64 x 128 = 196,608 expert parameters per layer: a quarter per GPU whether
    // each expert is split four ways or two whole experts sit on each GPU.
    const ModelSpec m = testing::tiny_moe();
    ParallelConfig split, whole;
    split.tp = whole.tp = 4;
    whole.ep = 4;
    whole.etp = 1;
    EXPECT_DOUBLE_EQ(weight_params_per_gpu(m, split), weight_params_per_gpu(m, whole));
    ParallelConfig one;
    EXPECT_NEAR(weight_params_per_gpu(m, one) - weight_params_per_gpu(m, whole), 4 * 196608.0 * 3 / 4 + 4 * 16384.0 * 3 / 4 +
                                                                                       64000.0 * 3 / 4 + 64000.0 * 3 / 4,
                1e-6);
}

TEST(MoeLayouts, InferenceRulesForWholeExperts) {
    const ModelSpec m = testing::tiny_moe();
    const SystemSpec sys = testing::system_preset("dgx-h100");
    InferenceSpec s;
    ParallelConfig p;
    p.tp = 4;
    p.ep = 4;
    p.etp = 1;
    EXPECT_TRUE(check_layout(m, sys, s, p).empty());
    p.ep = 2;  // whole experts over half the tensor-parallel group: the other half would idle
    const std::vector<InputError> v = check_layout(m, sys, s, p);
    ASSERT_EQ(v.size(), 1U);
    EXPECT_EQ(v[0].path, "parallel.ep");
    p.etp = 2;  // experts split 2 ways in 2 groups: etp x ep = tp
    EXPECT_TRUE(check_layout(m, sys, s, p).empty());
    p.etp = 3;
    EXPECT_EQ(check_layout(m, sys, s, p).at(0).path, "parallel.etp");
}

// Experts wider than attention (SGLang's DP attention with TP experts): tp 1 over 4 replicas,
// each expert split 4 ways over the 4 GPUs (etp 4, ep 1). Each GPU gathers the 4 replicas'
// 12 tokens (48 x 64 x 2 = 6,144 bytes over the etp group), routes all 48, runs the 96 copies
// on a quarter of each of the 8 experts' width (up n = 2 x 128 / 4), and reduce-scatters the
// 48 token rows back; nothing is dispatched.
TEST(MoeLayouts, ExpertsWiderThanAttentionGatherTheReplicasTokens) {
    const ModelSpec m = testing::tiny_moe();
    const LayerOps ops = layer_ops(m, tokens(1, 1, 4), LayerKind::moe);
    EXPECT_DOUBLE_EQ(comm_named(ops, "moe_dp_all_gather").bytes, 6144.0);
    EXPECT_EQ(comm_named(ops, "moe_dp_all_gather").group, CommGroup::etp);
    EXPECT_DOUBLE_EQ(comm_named(ops, "moe_dp_reduce_scatter").bytes, 6144.0);
    EXPECT_DOUBLE_EQ(op_named(ops, "moe_router").gemm.m, 48.0);
    const Op& up = op_named(ops, "expert_up");
    EXPECT_DOUBLE_EQ(up.gemm.m * up.gemm.batch, 96.0);
    EXPECT_DOUBLE_EQ(up.gemm.batch, 8.0);
    EXPECT_DOUBLE_EQ(up.gemm.n, 64.0);
    EXPECT_FALSE(has_comm(ops, "moe_dispatch"));
    EXPECT_FALSE(has_comm(ops, "moe_tp_all_gather"));
    // etp 2 x ep 2 over the 4 replicas: gather 2 replicas' tokens (24 x 64 x 2 = 3,072 bytes),
    // then dispatch their 48 copies by all-to-all over the 2 expert groups (48 x 64 x 2 = 6,144
    // bytes each way); each GPU runs 48 copies on its 4 experts at half their width.
    const LayerOps both = layer_ops(m, tokens(1, 2, 2), LayerKind::moe);
    EXPECT_DOUBLE_EQ(comm_named(both, "moe_dp_all_gather").bytes, 3072.0);
    EXPECT_DOUBLE_EQ(comm_named(both, "moe_dispatch").bytes, 6144.0);
    EXPECT_DOUBLE_EQ(comm_named(both, "moe_combine").bytes, 6144.0);
    const Op& up2 = op_named(both, "expert_up");
    EXPECT_DOUBLE_EQ(up2.gemm.m * up2.gemm.batch, 48.0);
    EXPECT_DOUBLE_EQ(up2.gemm.batch, 4.0);
    EXPECT_DOUBLE_EQ(up2.gemm.n, 128.0);
}

TEST(MoeLayouts, InferenceRulesForExpertsWiderThanAttention) {
    const ModelSpec m = testing::tiny_moe();
    const SystemSpec sys = testing::system_preset("dgx-h100");
    InferenceSpec s;
    ParallelConfig p;
    p.dp = 4;
    p.etp = 4;  // etp x ep = tp x dp
    EXPECT_TRUE(check_layout(m, sys, s, p).empty());
    p.ep = 2;   // 8 expert slots on 4 GPUs
    EXPECT_EQ(check_layout(m, sys, s, p).at(0).path, "parallel.etp");
    p.tp = 2;
    p.dp = 2;
    p.ep = 1;
    p.etp = 3;  // not a multiple of tp
    EXPECT_EQ(check_layout(m, sys, s, p).at(0).path, "parallel.etp");
    p.etp = 4;
    EXPECT_TRUE(check_layout(m, sys, s, p).empty());
    // Training keeps experts at most as wide as attention.
    EXPECT_EQ(check_layout(m, sys, testing::batch_of(8), p).at(0).path, "parallel.etp");
    // The expert weights per GPU: a quarter either way, split 4 ways or two whole on each GPU.
    ParallelConfig wide, dep;
    wide.dp = dep.dp = 4;
    wide.etp = 4;
    dep.ep = 4;
    EXPECT_DOUBLE_EQ(weight_params_per_gpu(m, wide), weight_params_per_gpu(m, dep));
    // The gather group: 16 replicas of tp 1 sharing each expert's slices span both 8-GPU
    // domains of 16 H100s; experts as wide as attention gather over nobody.
    wide.dp = 16;
    wide.etp = 16;
    const GroupSpan g = place_groups(wide, sys).span[idx(CommGroup::etp)];
    EXPECT_EQ(g.size, 16);
    EXPECT_EQ(g.local, 8);
    EXPECT_EQ(g.remote, 2);
    EXPECT_EQ(place_groups(dep, sys).span[idx(CommGroup::etp)].size, 1);
}

}  // namespace
}  // namespace sm
