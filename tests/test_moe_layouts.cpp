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

}  // namespace
}  // namespace sm
