// Decoding a mixture of experts reads the weights of the experts its few tokens are routed to,
// not of every local expert: hand-computed expectations under uniform, independent routing.
#include <gtest/gtest.h>

#include "model/ops.hpp"
#include "test_helpers.hpp"

namespace sm {
namespace {

using testing::op_named;

LayerShape decode(double batch, int64_t ep) {
    LayerShape s;
    s.batch = batch;
    s.q_len = 1;
    s.kv_len = 256;
    s.ep = ep;
    s.decode = true;
    return s;
}

// tiny_moe: 8 experts, top-2, expert FFN 128 (SwiGLU: up is [.., 2 x 128], h = 64).
TEST(MoeDecode, ReadsTheExpertsItsTokensTouch) {
    const ModelSpec m = testing::tiny_moe();
    // One token picks 2 of 8: 2 experts' weights, one row each.
    const LayerOps one = layer_ops(m, decode(1, 1), LayerKind::moe);
    const Op& up1 = op_named(one, "expert_up");
    EXPECT_DOUBLE_EQ(up1.gemm.batch, 2.0);
    EXPECT_DOUBLE_EQ(up1.gemm.m, 1.0);
    EXPECT_DOUBLE_EQ(up1.gemm.n, 256.0);
    EXPECT_DOUBLE_EQ(up1.gemm.k, 64.0);
    // Four tokens: 8 (1 - (3/4)^4) = 5.46875 experts expected, 8 routed rows over them.
    const LayerOps four = layer_ops(m, decode(4, 1), LayerKind::moe);  // held: op_named returns a reference into it
    const Op& up4 = op_named(four, "expert_up");
    EXPECT_DOUBLE_EQ(up4.gemm.batch, 5.46875);
    EXPECT_DOUBLE_EQ(up4.gemm.m * up4.gemm.batch, 8.0);  // FLOP follow the routed rows, not the experts
    // Expert parallelism 2 (4 local experts), 3 tokens per rank: the group's 6 tokens leave a
    // local expert idle with probability (3/4)^6; 4 (1 - 0.177978515625) = 3.2880859375.
    const LayerOps grouped = layer_ops(m, decode(3, 2), LayerKind::moe);
    const Op& down = op_named(grouped, "expert_down");
    EXPECT_DOUBLE_EQ(down.gemm.batch, 3.2880859375);
    EXPECT_DOUBLE_EQ(down.gemm.m * down.gemm.batch, 6.0);
}

// Prefill and training batches touch every expert: all 8 are read.
TEST(MoeDecode, PrefillReadsEveryExpert) {
    const ModelSpec m = testing::tiny_moe();
    LayerShape s = decode(1, 1);
    s.decode = false;
    const LayerOps ops = layer_ops(m, s, LayerKind::moe);
    EXPECT_DOUBLE_EQ(op_named(ops, "expert_up").gemm.batch, 8.0);
}

}  // namespace
}  // namespace sm
