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

TEST(Cost, AGemmOnDataEngagesTheTensorArrayForItsWeightGradientOnly) {
    // A ViT's patch embedding: A is pixels, so backward is the weight gradient alone. 2 x 4096^3
    // FLOP at 50 TFLOP/s (gemm_max 0.5 of 100) is 2.749 ms in each pass that runs.
    const SystemSpec s = toy_system();
    Op op;
    op.kind = OpKind::gemm;
    op.weight = true;
    op.input_grad = false;
    op.gemm = {4096, 4096, 4096, 1};
    const OpCost c = cost_op(op, s, CostContext{});
    const double engaged = 2.0 * 4096.0 * 4096.0 * 4096.0 / 50e12;
    EXPECT_NEAR(c.fwd_tensor_s, engaged, 1e-15);
    EXPECT_NEAR(c.bwd_tensor_s, engaged, 1e-15);
    EXPECT_LE(c.bwd_tensor_s, c.bwd_s);
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

// An SSD scan product: 2 x 64 x 128 x 256 x 1000 = 4.194 GFLOP at scan_max 0.1 of 100 TFLOP/s
// (0.4194 ms) against its stated 100 MB at 0.5 TB/s (0.2 ms): compute-bound, whatever the GEMM
// curve or the attention efficiency says; backward is both operands' gradients, each the
// forward's work. At 400 MB it is memory-bound (0.8 ms).
TEST(Cost, ScanProductRunsAtScanMaxAgainstItsStatedBytes) {
    SystemSpec s = toy_system();
    s.eff.scan_max = 0.1;
    s.eff.attention_max = 0.9;
    Op op;
    op.kind = OpKind::batched_gemm;
    op.scan = true;
    op.gemm = {64, 128, 256, 1000};
    op.bytes = 100e6;
    const OpCost c = cost_op(op, s, CostContext{});
    const double flop = 2.0 * 64 * 128 * 256 * 1000;
    EXPECT_DOUBLE_EQ(c.fwd_flop, flop);
    EXPECT_NEAR(c.fwd_s, flop / 10e12 + 1e-6, 1e-12);
    EXPECT_NEAR(c.dgrad_s, c.fwd_s, 1e-15);
    EXPECT_NEAR(c.wgrad_s, c.fwd_s, 1e-15);
    EXPECT_NEAR(c.bwd_s, 2.0 * (flop / 10e12 + 1e-6), 1e-12);
    EXPECT_DOUBLE_EQ(c.bwd_flop, 2.0 * flop);
    EXPECT_DOUBLE_EQ(c.fwd_bytes, 100e6);
    EXPECT_NEAR(c.fwd_tensor_s, flop / 10e12, 1e-15);
    op.bytes = 400e6;
    EXPECT_NEAR(cost_op(op, s, CostContext{}).fwd_s, 400e6 / 0.5e12 + 1e-6, 1e-12);
    EXPECT_NEAR(cost_op(op, s, CostContext{}).bwd_s, 2.0 * (400e6 / 0.5e12 + 1e-6), 1e-12);
}

// An op whose backward recomputes its forward pays the forward once more in its backward pass
// (time, FLOP, bytes); the forward itself is unchanged.
TEST(Cost, BackwardThatRerunsTheForwardPaysItAgain) {
    SystemSpec s = toy_system();
    s.accel.vector_flop_per_s = 10e12;
    Op op;
    op.kind = OpKind::elementwise;
    op.bytes = 1e9;  // forward 2 ms + 1 us, backward 4 ms + 1 us
    op.bwd_reruns_fwd = true;
    OpCost c = cost_op(op, s, CostContext{});
    EXPECT_NEAR(c.fwd_s, 2e-3 + 1e-6, 1e-12);
    EXPECT_NEAR(c.bwd_s, 4e-3 + 1e-6 + 2e-3 + 1e-6, 1e-12);
    EXPECT_NEAR(c.dgrad_s, c.bwd_s, 1e-15);
    EXPECT_DOUBLE_EQ(c.dgrad_bytes, 3e9);
    op.kind = OpKind::batched_gemm;
    op.scan = true;
    s.eff.scan_max = 0.1;
    op.gemm = {64, 128, 256, 1000};
    op.bytes = 0;
    c = cost_op(op, s, CostContext{});
    const double flop = 2.0 * 64 * 128 * 256 * 1000, one = flop / 10e12 + 1e-6;
    EXPECT_NEAR(c.fwd_s, one, 1e-12);
    EXPECT_NEAR(c.bwd_s, 3.0 * one, 1e-12);
    EXPECT_DOUBLE_EQ(c.bwd_flop, 3.0 * flop);
    EXPECT_NEAR(c.bwd_tensor_s, 3.0 * flop / 10e12, 1e-15);
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

// The on-chip memory level: a GEMM blocked in the SRAM (three blocks: A slab, B slab and the fp32
// accumulators of the output tile; docs/CALIBRATION.md, "On-chip memory").
TEST(Sram, SmallSramRereadsBothOperands) {
    // bf16 A and B: a square tile of side T fills S = T^2 (2 + 2 + 4) bytes. 8 MiB = 8 x 1024^2,
    // so T = 1024 and a 4096 x 4096 output is 4 x 4 tiles: A is read 4 times, B 4 times.
    const GemmShape g{4096, 4096, 1024, 1};
    const GemmTile t = sram_tile(g, 2, 2, 8.0 * 1024 * 1024);
    EXPECT_NEAR(t.m, 1024, 1e-9);
    EXPECT_NEAR(t.n, 1024, 1e-9);
    // A and B: 4096 x 1024 x 2 B = 8,388,608 B each, read 4 times; C: 4096^2 x 2 B = 33,554,432 B.
    SystemSpec s = toy_system();
    s.accel.sram_bytes = 8.0 * 1024 * 1024;
    EXPECT_DOUBLE_EQ(gemm_hbm_bytes(g, 2, 2, 2, s.accel), 8388608.0 * 4 * 2 + 33554432.0);
}

TEST(Sram, LargeSramReadsEachOperandOnce) {
    // 128 MiB = 8 x 4096^2 bytes: T = 4096 covers the whole output, so A and B are read once:
    // 8,388,608 x 2 + 33,554,432 = 50,331,648 B, today's gemm_bytes.
    const GemmShape g{4096, 4096, 1024, 1};
    Accelerator acc;
    acc.sram_bytes = 8.0 * 4096 * 4096;
    EXPECT_DOUBLE_EQ(gemm_hbm_bytes(g, 2, 2, 2, acc), 50331648.0);
    acc.sram_bytes = 0;  // not described: each operand once as well
    EXPECT_DOUBLE_EQ(gemm_hbm_bytes(g, 2, 2, 2, acc), 50331648.0);
}

TEST(Sram, ShortDimensionTakenWholeAndTheRestWidensTheTile) {
    // 64 tokens (a decode GEMM) in 1 MiB: the square side sqrt(2^20 / 8) = 362 exceeds m, so the
    // tile keeps all 64 rows; the A slab takes 2 x 64 x 64 = 8,192 B and each of the tile's
    // columns costs (2 + 4) x 64 = 384 B of B slab and accumulators: (1,048,576 - 8,192) / 384 =
    // 2,709.33 columns. A (64 x 4096 x 2 = 524,288 B) is read 8192 / 2709.33 times, the weight
    // (4096 x 8192 x 2 = 67,108,864 B) once, C (64 x 8192 x 2 = 1,048,576 B) written once.
    const GemmShape g{64, 8192, 4096, 1};
    const GemmTile t = sram_tile(g, 2, 2, 1048576.0);
    EXPECT_DOUBLE_EQ(t.m, 64);
    EXPECT_NEAR(t.n, 1040384.0 / 384, 1e-9);
    Accelerator acc;
    acc.sram_bytes = 1048576.0;
    EXPECT_NEAR(gemm_hbm_bytes(g, 2, 2, 2, acc), 524288.0 * 8192 / (1040384.0 / 384) + 67108864.0 + 1048576.0, 1e-3);
    // The transposed case (n short) is symmetric: the B slab is n x n.
    const GemmTile u = sram_tile(GemmShape{8192, 64, 4096, 1}, 2, 2, 1048576.0);
    EXPECT_NEAR(u.m, 1040384.0 / 384, 1e-9);
    EXPECT_DOUBLE_EQ(u.n, 64);
}

TEST(Sram, SramTermBoundsTheGemm) {
    // The core tile is 256 x 256: A (8,388,608 B) and B are read 4096 / 256 = 16 times each from
    // SRAM, C written once: 8,388,608 x 16 x 2 + 33,554,432 = 301,989,888 B. At 0.2 TB/s of SRAM
    // bandwidth that is 1.51 ms, more than the 687 us of compute (2 x 4096^2 x 1024 at 50 TFLOP/s)
    // and the 201 us of HBM (100,663,296 B tiled in 8 MiB at 0.5 TB/s).
    const GemmShape g{4096, 4096, 1024, 1};
    SystemSpec s = toy_system();
    s.accel.sram_bytes = 8.0 * 1024 * 1024;
    s.accel.sram_bw_bytes_per_s = 0.2e12;
    EXPECT_DOUBLE_EQ(gemm_sram_bytes(g, 2, 2, 2, 100663296.0), 301989888.0);
    EXPECT_NEAR(gemm_time_s(g, 2, 2, 2, 100e12, s), 301989888.0 / 0.2e12 + 1e-6, 1e-12);
    // With 1 TB/s of SRAM bandwidth compute binds again (302 us < 687 us).
    s.accel.sram_bw_bytes_per_s = 1e12;
    EXPECT_NEAR(gemm_time_s(g, 2, 2, 2, 100e12, s), 2.0 * 4096 * 4096 * 1024 / 50e12 + 1e-6, 1e-12);
    // An SRAM smaller than the core tile's blocks: what HBM delivers passes through SRAM too.
    EXPECT_DOUBLE_EQ(gemm_sram_bytes(g, 2, 2, 2, 1e9), 1e9);
}

// More SRAM never adds HBM bytes or time; more SRAM bandwidth is never slower (random GEMMs,
// every operand format, forward and backward through cost_op).
TEST(Sram, MoreSramIsNeverWorse) {
    uint64_t x = 12345;
    auto next = [&](double lo, double hi) {  // log-uniform in [lo, hi]
        x = x * 6364136223846793005ULL + 1442695040888963407ULL;
        const double u = static_cast<double>(x >> 11) / 9007199254740992.0;
        return std::round(lo * std::pow(hi / lo, u));
    };
    SystemSpec s = toy_system();
    s.eff.gemm_half_dim = 96;
    s.eff.gemm_half_tokens = 8;
    for (int i = 0; i < 2000; ++i) {
        Op op;
        op.kind = OpKind::gemm;
        op.weight = i % 3 != 0;
        op.gemm = {next(1, 65536), next(1, 65536), next(1, 65536), 1};
        CostContext ctx;
        ctx.operand_bytes = ctx.weight_bytes = i % 4 == 0 ? 0.5 : i % 4 == 1 ? 1 : 2;
        double prev_bytes = INFINITY, prev_fwd = INFINITY, prev_bwd = INFINITY;
        for (double sram : {1e4, 1e5, 1e6, 1e7, 5e7, 1e8, 4e8, 1e9, 1e11}) {
            s.accel.sram_bytes = sram;
            s.accel.sram_bw_bytes_per_s = 5e12;
            const OpCost c = cost_op(op, s, ctx);
            const double bytes = c.fwd_bytes + c.dgrad_bytes + c.wgrad_bytes;
            EXPECT_LE(bytes, prev_bytes * (1 + 1e-12)) << i << " sram " << sram;
            EXPECT_LE(c.fwd_s, prev_fwd * (1 + 1e-12)) << i << " sram " << sram;
            EXPECT_LE(c.bwd_s, prev_bwd * (1 + 1e-12)) << i << " sram " << sram;
            prev_bytes = bytes, prev_fwd = c.fwd_s, prev_bwd = c.bwd_s;
            // Never below reading each operand once.
            EXPECT_GE(c.fwd_bytes, gemm_bytes(op.gemm, ctx.operand_bytes, ctx.weight_bytes, 2) * (1 - 1e-12)) << i;
            double prev_t = INFINITY;
            for (double bw : {1e11, 1e12, 1e13, 1e14}) {
                s.accel.sram_bw_bytes_per_s = bw;
                const OpCost d = cost_op(op, s, ctx);
                EXPECT_LE(d.fwd_s + d.bwd_s, prev_t * (1 + 1e-12)) << i << " bw " << bw;
                prev_t = d.fwd_s + d.bwd_s;
            }
        }
    }
}

}  // namespace
}  // namespace sm
