// Kernel and collective costs against hand-computed values.
#include <gtest/gtest.h>

#include <cmath>

#include "comm/collectives.hpp"
#include "hardware/cost.hpp"
#include "parallel/placement.hpp"
#include "test_helpers.hpp"

namespace sm {
namespace {

SystemSpec toy_system() {
    SystemSpec s;
    s.accel.matrix_flop_per_s[static_cast<size_t>(Precision::bf16)] = 100e12;
    s.accel.memory_bw_bytes_per_s = 1e12;
    s.scale_up_domain = 8;
    s.scale_up = {100e9, 2e-6, 0.5};
    s.scale_out = {10e9, 5e-6, 1.0};
    s.eff = Efficiency{};
    s.eff.gemm_max = 0.5;
    s.eff.gemm_half_dim = 0;
    s.eff.gemm_half_tokens = 0;
    s.eff.memory_max = 0.5;
    s.eff.memory_half_bytes = 0;
    s.eff.kernel_latency_s = 1e-6;
    return s;
}

TEST(Cost, GemmComputeBound) {
    const SystemSpec s = toy_system();
    // 2*4096^3 FLOP at 50 TFLOP/s, plus 1 us launch.
    const GemmShape g{4096, 4096, 4096, 1};
    EXPECT_NEAR(gemm_time_s(g, 2, 2, 2, 100e12, s), 2.0 * 4096 * 4096 * 4096 / 50e12 + 1e-6, 1e-12);
}

TEST(Cost, GemmMemoryBoundAtBatchOne) {
    const SystemSpec s = toy_system();
    // A decode GEMV: the 8192 x 8192 fp16 weight (134 MB) streams at 0.5 TB/s.
    const GemmShape g{1, 8192, 8192, 1};
    const double bytes = 8192.0 * 2 + 8192.0 * 8192 * 2 + 8192.0 * 2;
    EXPECT_NEAR(gemm_time_s(g, 2, 2, 2, 100e12, s), bytes / 0.5e12 + 1e-6, 1e-12);
}

TEST(Cost, GemmEfficiencyCurve) {
    Efficiency e;
    e.gemm_max = 0.9;
    e.gemm_half_dim = 1024;
    e.gemm_half_tokens = 64;
    e.gemm_max_8bit = 0.6;
    const GemmShape g{2048, 4096, 1024, 1};
    EXPECT_NEAR(gemm_efficiency(g, e), 0.9 * (2048.0 / 2112) * (4096.0 / 5120) * 0.5, 1e-12);
    EXPECT_NEAR(gemm_efficiency(g, e, 1.0), 0.6 * (2048.0 / 2112) * (4096.0 / 5120) * 0.5, 1e-12);
}

TEST(Cost, BackwardIsTwoGemmsOfTheSameWork) {
    const SystemSpec s = toy_system();
    Op op;
    op.kind = OpKind::gemm;
    op.weight = true;
    op.gemm = {4096, 4096, 4096, 1};
    const OpCost c = cost_op(op, s, CostContext{});
    EXPECT_DOUBLE_EQ(c.bwd_flop, 2 * c.fwd_flop);
    EXPECT_NEAR(c.bwd_s, 2 * (c.fwd_s - 1e-6) + 2e-6, 1e-9);
}

TEST(Cost, Fp8GemmAddsCastTraffic) {
    const SystemSpec s = toy_system();
    CostContext fp8;
    fp8.operand_bytes = 1;
    fp8.weight_bytes = 1;
    const GemmShape g{2048, 4096, 1024, 1};
    EXPECT_DOUBLE_EQ(cast_bytes_fwd(g, fp8), 2048.0 * 1024 * 3);
    EXPECT_DOUBLE_EQ(cast_bytes_bwd(g, fp8), 2048.0 * 4096 * 4 + 2048.0 * 1024);
    EXPECT_DOUBLE_EQ(cast_bytes_fwd(g, CostContext{}), 0.0);
}

TEST(Cost, MemoryBoundKernel) {
    const SystemSpec s = toy_system();
    EXPECT_NEAR(memory_time_s(1e9, s), 1e9 / 0.5e12, 1e-15);
    EXPECT_EQ(memory_time_s(0, s), 0.0);
}

TEST(Cost, ElementwiseIsVectorComputeOrMemoryBound) {
    SystemSpec s = toy_system();
    s.accel.vector_flop_per_s = 10e12;
    Op op;
    op.kind = OpKind::elementwise;
    op.bytes = 1e9;        // 2 ms at 0.5 TB/s
    op.vector_flop = 1e9;  // 0.1 ms at 10 TFLOP/s
    EXPECT_NEAR(cost_op(op, s, CostContext{}).fwd_s, 1e9 / 0.5e12 + 1e-6, 1e-12);
    s.accel.vector_flop_per_s = 0.1e12;  // now 10 ms of math
    const OpCost c = cost_op(op, s, CostContext{});
    EXPECT_NEAR(c.fwd_s, 1e9 / 0.1e12 + 1e-6, 1e-12);
    EXPECT_NEAR(c.bwd_s, 2e9 / 0.1e12 + 1e-6, 1e-12);  // backward: twice the math
    EXPECT_EQ(c.fwd_flop, 0.0);                           // not matrix FLOP: MFU ignores it
}

TEST(Collectives, PlaceGroups) {
    auto eq = [](GroupSpan g, int64_t l, int64_t r) { return g.local == l && g.remote == r; };
    EXPECT_TRUE(eq(place_group(1, 8, 64, 8), 8, 1));     // TP in one node
    EXPECT_TRUE(eq(place_group(8, 16, 128, 8), 1, 16));  // DP across nodes
    EXPECT_TRUE(eq(place_group(2, 8, 16, 8), 4, 2));     // stride 2: four per node
    EXPECT_TRUE(eq(place_group(1, 16, 16, 8), 8, 2));    // TP 16 spills over two nodes
    EXPECT_TRUE(eq(place_group(4, 8, 64, 72), 8, 1));    // NVL72 holds it all
    EXPECT_TRUE(eq(place_group(1, 1, 8, 8), 1, 1));
}

TEST(Collectives, RingAllReduce) {
    const LinkLevel l{100e9, 2e-6, 0.5};
    const double S = 1e9;
    // 2 (n-1)/n S / (B eff) + min(2(n-1), 2 log2 n) alpha: n = 8 -> 14 vs 6 hops.
    EXPECT_NEAR(ring_time_s(Collective::all_reduce, S, 8, l), 2.0 * 7 / 8 * S / 50e9 + 6 * 2e-6, 1e-12);
    EXPECT_NEAR(ring_time_s(Collective::all_gather, S, 4, l), 3.0 / 4 * S / 50e9 + 3 * 2e-6, 1e-12);
    EXPECT_NEAR(ring_time_s(Collective::p2p, S, 2, l), S / 50e9 + 2e-6, 1e-12);
    EXPECT_EQ(ring_time_s(Collective::all_reduce, S, 1, l), 0.0);
}

TEST(Collectives, HierarchicalAllReduce) {
    SystemSpec s;
    s.scale_up = {100e9, 2e-6, 0.5};
    s.scale_out = {10e9, 5e-6, 1.0};
    const double S = 8e9;
    const GroupSpan g{64, 8, 8};
    const double expected = ring_time_s(Collective::reduce_scatter, S, 8, s.scale_up) +
                            ring_time_s(Collective::all_reduce, S / 8, 8, s.scale_out) +
                            ring_time_s(Collective::all_gather, S, 8, s.scale_up);
    EXPECT_DOUBLE_EQ(collective_time_s(Collective::all_reduce, S, g, s), expected);
    // Each GPU's NIC carries 1/8 of the data: far faster than a flat ring over the NICs.
    EXPECT_LT(expected, ring_time_s(Collective::all_reduce, S, 64, s.scale_out));
}

TEST(Collectives, MoreBandwidthIsNeverSlower) {
    SystemSpec s;
    s.scale_up = {100e9, 2e-6, 0.8};
    s.scale_out = {10e9, 5e-6, 0.8};
    for (Collective c : {Collective::all_reduce, Collective::all_gather, Collective::reduce_scatter,
                         Collective::all_to_all, Collective::p2p}) {
        const GroupSpan g{32, 8, 4};
        const double before = collective_time_s(c, 1e8, g, s);
        SystemSpec faster = s;
        faster.scale_out.bw_bytes_per_s *= 2;
        faster.scale_up.bw_bytes_per_s *= 2;
        EXPECT_LT(collective_time_s(c, 1e8, g, faster), before);
    }
}

}  // namespace
}  // namespace sm
