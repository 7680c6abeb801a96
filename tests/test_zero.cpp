// Data parallelism and ZeRO 0-3: gradient and weight traffic per step, what each GPU keeps, and
// the optimizer step, against hand arithmetic on a small GPT (tests/test_helpers.hpp).
//
// Conventions under test (Rajbhandari et al. 2020, ZeRO; Megatron-LM's distributed optimizer):
// - the data-parallel group spans dp x cp ranks: context-parallel ranks hold the same weights, so
//   Megatron reduces their gradients together;
// - ZeRO 0: one all-reduce of the fp32 gradients after the last micro-batch;
// - ZeRO 1: one reduce-scatter of the gradients, one all-gather of the updated bf16 weights;
// - ZeRO 2: the gradients are partitioned, so they are reduce-scattered every micro-batch;
// - ZeRO 3: the weights are partitioned too: gathered for forward and again for backward, every
//   micro-batch, and the gradients reduce-scattered every micro-batch.
#include <gtest/gtest.h>

#include "test_helpers.hpp"

namespace sm {
namespace {

using testing::batch_of;
using testing::round_system;
using testing::step_over;
using testing::tiny_gpt;

// One GPU of the single stage (pp = 1, tp = 1) holds all of the tiny GPT:
// 8 x 49,984 + 72,192 + 64,000 + 128 = 536,192 parameters.
constexpr double kP = 536192;
constexpr double kScaleUp = 100e9;  // B/s, round_system()
constexpr double kOverheadBytes = 2.5 * 1073741824.0;  // TrainingSpec's framework + buffer defaults

ParallelConfig layout(int64_t dp, int64_t cp, int64_t zero) {
    ParallelConfig p;
    p.dp = dp;
    p.cp = cp;
    p.zero = zero;
    return p;
}

// dp 2 x cp 2: a ring of n = 4 in one scale-up domain; global batch 8 over dp 2 = 4 micro-batches.
// A ring all-reduce moves 2 (n-1)/n S, a reduce-scatter or all-gather (n-1)/n S = 3/4 S.
// Gradients are fp32 (S = 4P), weights bf16 (S = 2P).
TEST(Zero, DataParallelTrafficPerStepOverDpTimesCp) {
    const ModelSpec m = tiny_gpt();
    const SystemSpec s = round_system();
    const TrainingSpec t = batch_of(8, false);
    const double grad_rs = 0.75 * 4 * kP / kScaleUp;    // 3P/B
    const double weight_ag = 0.75 * 2 * kP / kScaleUp;  // 1.5P/B
    const double expected[4] = {
        2 * 0.75 * 4 * kP / kScaleUp,       // ZeRO 0: one all-reduce per step, 6P/B
        grad_rs + weight_ag,                // ZeRO 1: once per step, 4.5P/B
        4 * grad_rs + weight_ag,            // ZeRO 2: reduce-scatter per micro-batch, 13.5P/B
        4 * (2 * weight_ag + grad_rs),      // ZeRO 3: two gathers + reduce-scatter per micro-batch, 24P/B
    };
    for (int z = 0; z < 4; ++z) {
        const TrainResult r = step_over(m, s, t, layout(2, 2, z));
        EXPECT_EQ(r.microbatches, 4);
        EXPECT_NEAR(r.link.dp_s, expected[z], 1e-12 * expected[z]) << "zero " << z;
        // Without overlap every second of it is exposed; nothing crosses a NIC, so no floor.
        EXPECT_NEAR(r.breakdown.dp_comm_exposed_s, expected[z], 1e-12 * expected[z]) << "zero " << z;
    }
    // dp 2 alone is a ring of 2: an all-reduce moves 2 x 1/2 x 4P = 4P, not 6P.
    const TrainResult dp_only = step_over(m, s, batch_of(8, false), layout(2, 1, 0));
    EXPECT_NEAR(dp_only.link.dp_s, 4 * kP / kScaleUp, 1e-12);
    // On two stages the fuller one (the first: 4 layers and the embedding, 272,128 parameters)
    // sets the traffic.
    ParallelConfig two = layout(2, 1, 0);
    two.pp = 2;
    EXPECT_NEAR(step_over(m, s, batch_of(8, false), two).link.dp_s, 4 * 272128 / kScaleUp, 1e-12);
    // No data parallelism, no traffic.
    EXPECT_EQ(step_over(m, s, t, layout(1, 1, 3)).link.dp_s, 0.0);
}

// Bucketed overlap (ZeRO 0, link L = 6P/B over a backward window of 8 layers x w): the last
// layer's bucket (L/8) or what the window cannot hold (L - 8w) stays exposed, whichever is larger;
// what hides slows the compute by overlap_interference (here 1/2) of itself.
TEST(Zero, OverlapHidesAllButTheLastBucket) {
    const ModelSpec m = tiny_gpt();
    SystemSpec s = round_system();
    s.eff.overlap_interference = 0.5;
    const double L = 6 * kP / kScaleUp;
    LayerCosts c;
    c.layer[0].bwd_wall_s = 1e-3;  // a window of 8 ms: everything but the last bucket hides
    EXPECT_NEAR(step_over(m, s, batch_of(8, true), layout(2, 2, 0), c).breakdown.dp_comm_exposed_s,
                L / 8 + 0.5 * (7 * L / 8), 1e-15);
    c.layer[0].bwd_wall_s = 1e-6;  // 8 us: L - 8 us stays exposed, 8 us hides
    EXPECT_NEAR(step_over(m, s, batch_of(8, true), layout(2, 2, 0), c).breakdown.dp_comm_exposed_s,
                (L - 8e-6) + 0.5 * 8e-6, 1e-15);
    // Recomputation lengthens the backward window: 0.5 us + 0.5 us per layer is the same 8 us.
    c.layer[0].bwd_wall_s = 0.5e-6;
    c.layer[0].recompute_s = 0.5e-6;
    const TrainResult r = step_over(m, s, batch_of(8, true), layout(2, 2, 0), c);
    EXPECT_NEAR(r.breakdown.dp_comm_exposed_s, (L - 8e-6) + 0.5 * 8e-6, 1e-15);

    // ZeRO 1: the reduce-scatter (3P/B) hides in backward, the gather (1.5P/B) in forward; with a
    // 1 ms forward per layer both keep only their last bucket.
    c = {};
    c.layer[0].bwd_wall_s = 1e-3;
    const double rs = 3 * kP / kScaleUp, ag = 1.5 * kP / kScaleUp;
    const TrainResult z1_nofwd = step_over(m, s, batch_of(8, true), layout(2, 2, 1), c);
    EXPECT_NEAR(z1_nofwd.breakdown.dp_comm_exposed_s, (rs / 8 + 0.5 * 7 * rs / 8) + ag, 1e-15);
    c.layer[0].fwd_wall_s = 1e-3;
    const TrainResult z1 = step_over(m, s, batch_of(8, true), layout(2, 2, 1), c);
    EXPECT_NEAR(z1.breakdown.dp_comm_exposed_s, (rs + ag) * (1.0 / 8 + 0.5 * 7 / 8), 1e-15);

    // ZeRO 3, per micro-batch: 2 gathers + reduce-scatter = 6P/B against forward + backward.
    c.layer[0].fwd_wall_s = 0.5e-6;
    c.layer[0].bwd_wall_s = 0.5e-6;  // together 8 us
    const double z3 = 6 * kP / kScaleUp;
    EXPECT_NEAR(step_over(m, s, batch_of(8, true), layout(2, 2, 3), c).breakdown.dp_comm_exposed_s,
                4 * ((z3 - 8e-6) + 0.5 * 8e-6), 1e-15);
    // ZeRO 2: 4 reduce-scatters, each against its backward (4 us: 3P/B - 4 us exposed), and one
    // gather against the forward.
    EXPECT_NEAR(step_over(m, s, batch_of(8, true), layout(2, 2, 2), c).breakdown.dp_comm_exposed_s,
                4 * ((rs - 4e-6) + 0.5 * 4e-6) + ((ag - 4e-6) + 0.5 * 4e-6), 1e-15);
}

// What one GPU keeps (dp x cp = 4 replicas): bf16 weights 2P, fp32 gradients 4P, Adam 12P,
// each divided by 4 from the ZeRO stage that partitions it; plus the fixed 2.5 GiB allowance.
TEST(Zero, StatesPerGpuDividedByDpTimesCp) {
    const ModelSpec m = tiny_gpt();
    const SystemSpec s = round_system();
    struct Want {
        double w, g, o;
    };
    const Want want[4] = {{2 * kP, 4 * kP, 12 * kP}, {2 * kP, 4 * kP, 3 * kP}, {2 * kP, kP, 3 * kP}, {0.5 * kP, kP, 3 * kP}};
    for (int z = 0; z < 4; ++z) {
        const TrainMemory mem = step_over(m, s, batch_of(8, true), layout(2, 2, z)).memory;
        EXPECT_DOUBLE_EQ(mem.weights_bytes, want[z].w) << z;
        EXPECT_DOUBLE_EQ(mem.gradients_bytes, want[z].g) << z;
        EXPECT_DOUBLE_EQ(mem.optimizer_bytes, want[z].o) << z;
        EXPECT_DOUBLE_EQ(mem.activations_bytes, 0.0);  // no layer costs were given
        EXPECT_DOUBLE_EQ(mem.overhead_bytes, kOverheadBytes);
        EXPECT_DOUBLE_EQ(mem.peak_bytes_per_gpu, want[z].w + want[z].g + want[z].o + kOverheadBytes) << z;
    }
}

// fp8 training keeps bf16 weights (Transformer Engine casts at each GEMM); fp32 training keeps
// fp32 weights; bf16 gradients halve the gradient buffer.
TEST(Zero, StoredWeightAndGradientFormats) {
    const ModelSpec m = tiny_gpt();
    const SystemSpec s = round_system();
    TrainingSpec t = batch_of(1, true);
    t.precision = Precision::fp8;
    t.grad_precision = Precision::bf16;
    const TrainMemory fp8 = step_over(m, s, t, layout(1, 1, 0)).memory;
    EXPECT_DOUBLE_EQ(fp8.weights_bytes, 2 * kP);
    EXPECT_DOUBLE_EQ(fp8.gradients_bytes, 2 * kP);
    t.precision = Precision::fp32;
    EXPECT_DOUBLE_EQ(step_over(m, s, t, layout(1, 1, 0)).memory.weights_bytes, 4 * kP);
}

// Adam streams its shard once: read fp32 gradients (4), read and write master weights and both
// moments (2 x 12), write the bf16 working copy (2): 30 bytes per local parameter at 1 TB/s.
TEST(Zero, OptimizerStepStreamsItsShard) {
    const ModelSpec m = tiny_gpt();
    const SystemSpec s = round_system();
    EXPECT_NEAR(step_over(m, s, batch_of(8, true), layout(2, 2, 0)).breakdown.optimizer_s, 30 * kP / 1e12, 1e-18);
    for (int z = 1; z < 4; ++z)
        EXPECT_NEAR(step_over(m, s, batch_of(8, true), layout(2, 2, z)).breakdown.optimizer_s, 30 * kP / 4 / 1e12, 1e-18) << z;
    // Bytes per state change it: 8-byte Adam states make 4 + 16 + 2 = 22 bytes per parameter.
    TrainingSpec t = batch_of(8, true);
    t.optimizer_state_bytes_per_param = 8;
    EXPECT_NEAR(step_over(m, s, t, layout(1, 1, 0)).breakdown.optimizer_s, 22 * kP / 1e12, 1e-18);
    EXPECT_DOUBLE_EQ(step_over(m, s, t, layout(1, 1, 0)).memory.optimizer_bytes, 8 * kP);
}

// Pipeline stages split the states: with pp = 2 the first stage holds 4 layers and the embedding
// (4 x 49,984 + 72,192 = 272,128), the last 4 layers, the head and the final norm (264,064); the
// first is the peak. Tensor parallelism divides all but the final norm: tp 2 on one stage holds
// (399,872 + 72,192 + 64,000) / 2 + 128 = 268,160.
TEST(Zero, StagesAndTensorParallelismSplitTheWeights) {
    const ModelSpec m = tiny_gpt();
    const SystemSpec s = round_system();
    ParallelConfig p = layout(1, 1, 0);
    p.pp = 2;
    EXPECT_DOUBLE_EQ(step_over(m, s, batch_of(1, true), p).memory.weights_bytes, 2 * 272128.0);
    p.pp = 1;
    p.tp = 2;
    EXPECT_DOUBLE_EQ(step_over(m, s, batch_of(1, true), p).memory.weights_bytes, 2 * 268160.0);
    // A tied head on a single stage is the embedding itself: 536,192 - 64,000.
    ModelSpec tied = m;
    tied.tied_embeddings = true;
    EXPECT_DOUBLE_EQ(step_over(tied, s, batch_of(1, true), layout(1, 1, 0)).memory.weights_bytes, 2 * 472192.0);
    // Across stages it keeps its own copy: with rotary positions the embedding is 64,000, so the
    // first stage holds 4 x 49,984 + 64,000 = 263,936 and the last 263,936 + 128 (the final norm):
    // the last is the peak, copy included.
    tied.position = PositionKind::rope;
    p = layout(1, 1, 0);
    p.pp = 2;
    EXPECT_DOUBLE_EQ(step_over(tied, s, batch_of(1, true), p).memory.weights_bytes, 2 * 264064.0);
}

}  // namespace
}  // namespace sm
