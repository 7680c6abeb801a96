// cost_op pass by pass on shapes where every dimension differs, so a swapped dimension in the
// forward, data-gradient or weight-gradient GEMM shows; and the fused attention and element-wise
// kernels' backward passes. All figures by hand in the comments.
//
// A weight GEMM C[m,n] = A[m,k] W[k,n]: forward reads A (m x k) and W (k x n), writes C (m x n);
// dgrad dA[m,k] = dC[m,n] W^T reads dC (m x n) and W, writes dA (m x k); wgrad dW[k,n] = A^T dC
// reads A and dC, writes dW (k x n) in fp32. Each does 2mnk FLOP.
#include <gtest/gtest.h>

#include "test_helpers.hpp"

namespace sm {
namespace {

constexpr double kM = 2000, kN = 300, kK = 50;
constexpr double kFlop = 2 * kM * kN * kK;  // 6e7 per pass
constexpr double kLat = 1e-6;

Op weight_gemm() {
    Op op;
    op.kind = OpKind::gemm;
    op.weight = true;
    op.gemm = {kM, kN, kK, 1};
    return op;
}

// fp8 GEMMs on bf16 activations: A and W read at 1 byte, C written at 2.
CostContext fp8() {
    CostContext c;
    c.math = Precision::fp8;
    c.act_bytes = 2;
    c.operand_bytes = 1;
    c.weight_bytes = 1;
    return c;
}

SystemSpec machine() {
    SystemSpec s = testing::round_system();
    s.eff.kernel_latency_s = kLat;
    return s;
}

// Bytes per pass, fp8:
//   forward  m k x1 + k n x1 + m n x2 = 100,000 + 15,000 + 1,200,000 = 1,315,000, plus the cast of
//            A from bf16 (read 2, write 1 per element of m x k) = 300,000;
//   dgrad    m n x1 + n k x1 + m k x2 = 600,000 + 15,000 + 200,000 = 815,000, plus the casts of dC
//            (read 2, write 1 and a transposed 1 per element of m x n) and of A's transpose
//            (1 per element of m x k) = 2,400,000 + 100,000;
//   wgrad    k m x1 + m n x1 + k n x4 = 100,000 + 600,000 + 60,000 = 760,000.
// Memory-bound (matrix math made free): each kernel takes its bytes at 1 TB/s plus 1 us; the casts
// are kernels of their own.
TEST(GemmPasses, RectangularFp8BytesPerPass) {
    SystemSpec s = machine();
    s.accel.matrix_flop_per_s[static_cast<size_t>(Precision::fp8)] = 1e30;
    const OpCost c = cost_op(weight_gemm(), s, fp8());
    EXPECT_DOUBLE_EQ(c.fwd_flop, kFlop);
    EXPECT_DOUBLE_EQ(c.fwd_model_flop, kFlop);
    EXPECT_DOUBLE_EQ(c.dgrad_flop, kFlop);
    EXPECT_DOUBLE_EQ(c.wgrad_flop, kFlop);
    EXPECT_DOUBLE_EQ(c.bwd_flop, 2 * kFlop);
    EXPECT_DOUBLE_EQ(c.fwd_bytes, 1315000 + 300000);
    EXPECT_DOUBLE_EQ(c.dgrad_bytes, 815000 + 2500000);
    EXPECT_DOUBLE_EQ(c.wgrad_bytes, 760000);
    EXPECT_NEAR(c.fwd_memory_s, 1315000 / 1e12, 1e-18);  // the GEMM's own roofline term
    EXPECT_NEAR(c.fwd_s, 1315000 / 1e12 + kLat + 300000 / 1e12 + kLat, 1e-18);
    EXPECT_NEAR(c.dgrad_s, 815000 / 1e12 + kLat + 2500000 / 1e12 + kLat, 1e-18);
    EXPECT_NEAR(c.wgrad_s, 760000 / 1e12 + kLat, 1e-18);
    EXPECT_NEAR(c.bwd_s, c.dgrad_s + c.wgrad_s, 1e-18);
    EXPECT_DOUBLE_EQ(c.peak_flop_per_s, 1e30);
}

// bf16: every operand 2 bytes, the weight gradient still fp32. Forward and dgrad move
// 2 (mk + kn + mn) = 1,430,000; wgrad 2 km + 2 mn + 4 kn = 200,000 + 1,200,000 + 60,000.
TEST(GemmPasses, RectangularBf16Bytes) {
    const OpCost c = cost_op(weight_gemm(), machine(), CostContext{});
    EXPECT_DOUBLE_EQ(c.fwd_bytes, 1430000);
    EXPECT_DOUBLE_EQ(c.dgrad_bytes, 1430000);
    EXPECT_DOUBLE_EQ(c.wgrad_bytes, 1460000);
    // Nothing to cast when the operands are stored as the tensor cores read them.
    EXPECT_EQ(cast_bytes_fwd(weight_gemm().gemm, CostContext{}), 0.0);
    EXPECT_EQ(cast_bytes_bwd(weight_gemm().gemm, CostContext{}), 0.0);
    // An empty GEMM costs nothing, not even a launch.
    for (const GemmShape g : {GemmShape{0, kN, kK, 1}, GemmShape{kM, 0, kK, 1}, GemmShape{kM, kN, 0, 1}, GemmShape{kM, kN, kK, 0}})
        EXPECT_EQ(gemm_time_s(g, 2, 2, 2, 1e15, machine()), 0.0);
}

// Compute-bound (HBM made free), fp8 path at 50% of 1 PFLOP/s, utilisation x/(x + 8) for the
// token dimension m and x/(x + 96) for n and k (Efficiency::gemm_half_*):
//   forward  [m, n, k] = [2000, 300, 50]:  0.5 x 2000/2008 x 300/396 x 50/146
//   dgrad    [m, k, n] = [2000, 50, 300]:  the same product
//   wgrad    [k, n, m] = [50, 300, 2000]:  0.5 x 50/58 x 300/396 x 2000/2096
// The forward and dgrad each add their cast kernel's latency.
TEST(GemmPasses, RectangularShapesSetEachPassEfficiency) {
    SystemSpec s = machine();
    s.accel.memory_bw_bytes_per_s = 1e30;
    s.eff.gemm_max = 0.9;  // the 16-bit path: not this one
    s.eff.gemm_max_8bit = 0.5;
    s.eff.gemm_half_tokens = 8;
    s.eff.gemm_half_dim = 96;
    const double eff_f = 0.5 * (2000.0 / 2008) * (300.0 / 396) * (50.0 / 146);
    const double eff_w = 0.5 * (50.0 / 58) * (300.0 / 396) * (2000.0 / 2096);
    const OpCost c = cost_op(weight_gemm(), s, fp8());
    EXPECT_NEAR(c.fwd_compute_s, kFlop / (1e15 * eff_f), 1e-18);
    EXPECT_NEAR(c.fwd_s, kFlop / (1e15 * eff_f) + 2 * kLat, 1e-17);
    EXPECT_NEAR(c.dgrad_s, kFlop / (1e15 * eff_f) + 2 * kLat, 1e-17);
    EXPECT_NEAR(c.wgrad_s, kFlop / (1e15 * eff_w) + kLat, 1e-17);
    // bf16 takes the 16-bit path's 0.9 and no casts.
    const double eff16 = 0.9 * (2000.0 / 2008) * (300.0 / 396) * (50.0 / 146);
    EXPECT_NEAR(cost_op(weight_gemm(), s, CostContext{}).fwd_s, kFlop / (1e15 * eff16) + kLat, 1e-17);
}

// The unfused attention's score product: activation x activation, batched over 4 heads, at the
// attention efficiency (0.5) of the bf16 peak even under fp8 math, 2-byte operands and a 2-byte
// gradient (no fp32 weight gradient, no casts). Shape [128, 256, 32] x 4: 8,388,608 FLOP;
// every pass moves 4 x 2 x (128 x 32 + 32 x 256 + 128 x 256) = 360,448 bytes.
TEST(GemmPasses, AttentionCoreBatchedGemm) {
    SystemSpec s = machine();
    s.accel.memory_bw_bytes_per_s = 1e30;
    s.eff.attention_max = 0.5;
    s.accel.matrix_flop_per_s[static_cast<size_t>(Precision::fp8)] = 4e15;
    Op op;
    op.kind = OpKind::batched_gemm;
    op.gemm = {128, 256, 32, 4};
    const OpCost c = cost_op(op, s, fp8());
    EXPECT_DOUBLE_EQ(c.fwd_flop, 8388608);
    EXPECT_DOUBLE_EQ(c.peak_flop_per_s, 1e15);
    EXPECT_NEAR(c.fwd_s, 8388608 / 0.5e15 + kLat, 1e-18);
    EXPECT_NEAR(c.bwd_s, 2 * (8388608 / 0.5e15 + kLat), 1e-18);
    EXPECT_DOUBLE_EQ(c.fwd_bytes, 360448);
    EXPECT_DOUBLE_EQ(c.dgrad_bytes, 360448);
    EXPECT_DOUBLE_EQ(c.wgrad_bytes, 360448);
}

// Fused attention: 1e12 executed FLOP at 50% of 1 PFLOP/s = 2 ms; backward 2.5x the FLOP
// (FlashAttention recomputes the scores) and twice the bytes. Bytes: 1e6 Q/O elements at 2 bytes
// and 2e6 K/V elements at the KV format's 1 byte = 4e6.
TEST(GemmPasses, FusedAttentionPasses) {
    SystemSpec s = machine();
    s.eff.attention_max = 0.5;
    Op op;
    op.kind = OpKind::attention;
    op.attn_flop = 1e12;
    op.attn_model_flop = 2e12;
    op.attn_io_elems = 1e6;
    op.attn_kv_elems = 2e6;
    CostContext ctx;
    ctx.kv_bytes = 1;
    OpCost c = cost_op(op, s, ctx);
    EXPECT_DOUBLE_EQ(c.fwd_flop, 1e12);
    EXPECT_DOUBLE_EQ(c.fwd_model_flop, 2e12);
    EXPECT_DOUBLE_EQ(c.bwd_flop, 2.5e12);
    EXPECT_DOUBLE_EQ(c.dgrad_flop, 2.5e12);
    EXPECT_DOUBLE_EQ(c.fwd_bytes, 4e6);
    EXPECT_DOUBLE_EQ(c.dgrad_bytes, 8e6);
    EXPECT_DOUBLE_EQ(c.peak_flop_per_s, 1e15);
    EXPECT_NEAR(c.fwd_compute_s, 2e-3, 1e-18);
    EXPECT_NEAR(c.fwd_memory_s, 4e-6, 1e-18);
    EXPECT_NEAR(c.fwd_s, 2e-3 + kLat, 1e-18);
    EXPECT_NEAR(c.bwd_s, 5e-3 + kLat, 1e-18);
    EXPECT_NEAR(c.dgrad_s, 5e-3 + kLat, 1e-18);
    // Memory-bound (math made free): 4e6 and 8e6 bytes at 1 TB/s.
    s.accel.matrix_flop_per_s[static_cast<size_t>(Precision::bf16)] = 1e30;
    c = cost_op(op, s, ctx);
    EXPECT_NEAR(c.fwd_s, 4e-6 + kLat, 1e-18);
    EXPECT_NEAR(c.bwd_s, 8e-6 + kLat, 1e-18);
    // fp32 activations run attention on the tf32 peak (here 0.25 PFLOP/s): 8 ms; bytes at 4 per Q/O.
    s = machine();
    s.eff.attention_max = 0.5;
    s.accel.matrix_flop_per_s[static_cast<size_t>(Precision::tf32)] = 0.25e15;
    ctx.act_bytes = 4;
    c = cost_op(op, s, ctx);
    EXPECT_NEAR(c.fwd_s, 1e12 / 0.125e15 + kLat, 1e-18);
    EXPECT_DOUBLE_EQ(c.fwd_bytes, 1e6 * 4 + 2e6 * 1);
}

// Fused attention's efficiency rises with the keys each query row spans: attention_max x
// kv / (kv + half). 1e12 FLOP at 0.5 x 1 PFLOP/s = 2 ms flat; with the half point at the op's own
// length (4096 keys) the efficiency is 0.25: 4 ms forward, 10 ms backward; at 3 x the half point
// 0.375 (2.667 ms). The peak reported stays the matrix peak.
TEST(GemmPasses, FusedAttentionEfficiencyRisesWithKeys) {
    SystemSpec s = machine();
    s.eff.attention_max = 0.5;
    Op op;
    op.kind = OpKind::attention;
    op.attn_flop = 1e12;
    op.attn_kv_len = 4096;
    CostContext ctx;
    EXPECT_NEAR(cost_op(op, s, ctx).fwd_s, 2e-3 + kLat, 1e-15);  // half point 0: flat
    s.eff.attention_half_tokens = 4096;
    OpCost c = cost_op(op, s, ctx);
    EXPECT_NEAR(c.fwd_compute_s, 4e-3, 1e-15);
    EXPECT_NEAR(c.fwd_s, 4e-3 + kLat, 1e-15);
    EXPECT_NEAR(c.bwd_s, 10e-3 + kLat, 1e-15);
    EXPECT_NEAR(c.fwd_tensor_s, 4e-3, 1e-15);
    EXPECT_DOUBLE_EQ(c.peak_flop_per_s, 1e15);
    s.eff.attention_half_tokens = 4096.0 / 3.0;
    EXPECT_NEAR(cost_op(op, s, ctx).fwd_compute_s, 1e12 / 0.375e15, 1e-15);
    // An op that says no key length (built by hand) keeps the flat efficiency, finite.
    Op unsized = op;
    unsized.attn_kv_len = 0;
    EXPECT_NEAR(cost_op(unsized, s, ctx).fwd_compute_s, 2e-3, 1e-15);
    // One key per query row is the curve's low end: 1 / (1 + 4096 / 3) of attention_max.
    Op one_key = op;
    one_key.attn_kv_len = 1;
    EXPECT_NEAR(cost_op(one_key, s, ctx).fwd_compute_s, 1e12 / (0.5e15 / (1.0 + 4096.0 / 3.0)), 1e-12);
    // A CUDA-core decode kernel takes the same factor on the vector rate (1e15 x 0.5 x 0.75).
    s.eff.decode_attention = DecodeAttentionUnits::cuda_core;
    s.accel.vector_flop_per_s = 1e15;
    op.decode_core = true;
    EXPECT_NEAR(cost_op(op, s, ctx).fwd_compute_s, 1e12 / 0.375e15, 1e-15);
}

// Element-wise backward: twice the vector FLOP, the op's bytes times its backward factor.
TEST(GemmPasses, ElementwiseBackwardBytesFactor) {
    const SystemSpec s = machine();
    Op op;
    op.kind = OpKind::elementwise;
    op.bytes = 1e6;
    op.bwd_bytes_factor = 1.5;
    const OpCost c = cost_op(op, s, CostContext{});
    EXPECT_DOUBLE_EQ(c.fwd_bytes, 1e6);
    EXPECT_DOUBLE_EQ(c.dgrad_bytes, 1.5e6);
    EXPECT_NEAR(c.fwd_s, 1e6 / 1e12 + kLat, 1e-18);
    EXPECT_NEAR(c.bwd_s, 1.5e6 / 1e12 + kLat, 1e-18);
    EXPECT_NEAR(c.fwd_memory_s, 1e-6, 1e-18);
    // Memory efficiency rises with size: 0.5 x S/(S + 1 MB) of peak for S = 1 MB is a quarter.
    SystemSpec curve = s;
    curve.eff.memory_max = 0.5;
    curve.eff.memory_half_bytes = 1e6;
    EXPECT_NEAR(memory_time_s(1e6, curve), 1e6 / 0.25e12, 1e-18);
}

// An outer product (k = 1) is a real GEMM, not an empty one: C[1000,1000] = a[1000,1] b[1,1000]
// in bf16 does 2 x 1000 x 1000 x 1 = 2e6 FLOP (2 ns at 1 PFLOP/s) and moves
// (1000 + 1000) x 2 + 1e6 x 2 = 2,004,000 bytes (2.004 us at 1 TB/s): memory-bound, 2.004 us.
TEST(GemmPasses, OuterProductIsNotEmpty) {
    const SystemSpec sys = testing::round_system();
    EXPECT_NEAR(gemm_time_s({1000, 1000, 1, 1}, 2, 2, 2, 1e15, sys), 2.004e-6, 1e-15);
    EXPECT_EQ(gemm_time_s({1000, 1000, 0, 1}, 2, 2, 2, 1e15, sys), 0.0);  // k = 0: nothing to do
}

}  // namespace
}  // namespace sm
