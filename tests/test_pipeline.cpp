// The pipeline schedule over hand-set layer costs: the bubble with and without interleaving,
// point-to-point hops and bytes, activations in flight, and the NIC floor on the step.
#include <gtest/gtest.h>

#include "parallel/pipeline_split.hpp"
#include "test_helpers.hpp"

namespace sm {
namespace {

using testing::batch_of;
using testing::round_system;
using testing::step_over;
using testing::tiny_gpt;

constexpr double ms = 1e-3;

// Per layer and micro-batch: forward 1 ms, backward 2 ms, recompute 0.5 ms, exposed TP 0.25 ms;
// the embedding 0.1 + 0.1 ms, the head 0.4 + 0.8 ms (the last stage is the slower end).
LayerCosts hand_costs() {
    LayerCosts c;
    c.layer[0].fwd_s = 1 * ms;
    c.layer[0].bwd_s = 2 * ms;
    c.layer[0].recompute_s = 0.5 * ms;
    c.layer[0].comm_exposed_s[idx(CommGroup::tp)] = 0.25 * ms;
    c.embedding.fwd_s = 0.1 * ms;
    c.embedding.bwd_s = 0.1 * ms;
    c.head.fwd_s = 0.4 * ms;
    c.head.bwd_s = 0.8 * ms;
    return c;
}

ParallelConfig pipeline(int64_t pp, int64_t vp) {
    ParallelConfig p;
    p.pp = pp;
    p.vp = vp;
    return p;
}

// 8 layers on pp = 4: 2 per stage. One micro-batch on the slowest stage (the last) lasts
// 2 x (1 + 2 + 0.5 + 0.25) + (0.4 + 0.8) = 8.7 ms. Narayanan et al. 2021 (sec. 2.2): the bubble is
// (p - 1) micro-batch times, and (p - 1)/v with v interleaved chunks per GPU; so the bubble over the
// ideal time m x t_mb is (p - 1)/(v m): with m = 8 micro-batches, 3/8 and 3/16.
TEST(Pipeline, BubbleIsPipelineDepthOverInterleaving) {
    const ModelSpec m = tiny_gpt();
    const SystemSpec s = round_system();
    const TrainResult flat = step_over(m, s, batch_of(8), pipeline(4, 1), hand_costs());
    EXPECT_EQ(flat.microbatches, 8);
    EXPECT_NEAR(flat.breakdown.bubble_s, 3 * 8.7 * ms, 1e-15);
    EXPECT_NEAR(flat.breakdown.compute_s, 8 * (2 * 3 + 1.2) * ms, 1e-15);
    EXPECT_NEAR(flat.breakdown.recompute_s, 8 * 2 * 0.5 * ms, 1e-15);
    EXPECT_NEAR(flat.breakdown.tp_comm_exposed_s, 8 * 2 * 0.25 * ms, 1e-15);
    const TrainResult inter = step_over(m, s, batch_of(8), pipeline(4, 2), hand_costs());
    EXPECT_NEAR(inter.breakdown.bubble_s, 3 * 8.7 * ms / 2, 1e-15);
    EXPECT_NEAR(inter.breakdown.bubble_s / (8 * 8.7 * ms), 3.0 / 16, 1e-12);
    // With the embedding the slower end (1 + 1 ms), the first stage sets the pace: 2 x 3.75 + 2.
    LayerCosts c = hand_costs();
    c.embedding.fwd_s = c.embedding.bwd_s = 1 * ms;
    EXPECT_NEAR(step_over(m, s, batch_of(8), pipeline(4, 1), c).breakdown.bubble_s, 3 * 9.5 * ms, 1e-15);
    // One stage: no bubble, and it carries the embedding and the head: 8 x 3 + 0.2 + 1.2 ms.
    const TrainResult single = step_over(m, s, batch_of(8), pipeline(1, 1), hand_costs());
    EXPECT_EQ(single.breakdown.bubble_s, 0.0);
    EXPECT_NEAR(single.breakdown.compute_s, 8 * (8 * 3 + 0.2 + 1.2) * ms, 1e-14);
}

// Hops between stages (Narayanan et al. 2021, sec. 4.1, scatter/gather): each of the tp ranks
// sends 1/tp of the [b, s/cp, h] activation over its own link and, without sequence parallelism,
// the receiver all-gathers it over the scale-up fabric. One activation forward and one gradient
// backward per micro-batch and virtual stage; the critical path adds the pp - 1 of fill and drain.
TEST(Pipeline, PointToPointHopsAndBytes) {
    const ModelSpec m = tiny_gpt();
    const SystemSpec s = round_system();
    ParallelConfig p = pipeline(2, 2);
    p.tp = 2;
    p.dp = 4;  // stages are tp x dp = 8 ranks apart: each hop leaves the domain of 8
    const TrainingSpec t = batch_of(16);  // 4 micro-batches
    const double full = 1 * 128 * 64 * 2.0;  // b x s x h x 2 bytes = 16,384
    const double p2p = (full / 2) / 10e9;      // the 8,192-byte shard over the 10 GB/s NIC
    const double gather = 0.5 * full / 100e9;  // ring all-gather of 2: (n-1)/n S over 100 GB/s
    const double hop = p2p + gather;
    const TrainResult r = step_over(m, s, t, p);
    EXPECT_NEAR(r.link.pp_s, 2 * 4 * 2 * hop, 1e-18);                      // 2 x m x v hops
    EXPECT_NEAR(r.breakdown.pp_comm_exposed_s, 2 * (4 * 2 + 1) * hop, 1e-18);  // 2 x (m v + p - 1)
    // Sequence parallelism: the activation is already sharded, nothing to gather.
    p.sequence_parallel = true;
    EXPECT_NEAR(step_over(m, s, t, p).link.pp_s, 2 * 4 * 2 * p2p, 1e-18);
    // Context parallelism halves the tokens per rank; pp_overlap hides its share of the exposed part.
    p.cp = 2;
    TrainingSpec half = t;
    half.pp_overlap = 0.25;
    const TrainResult cp = step_over(m, s, half, p);
    EXPECT_NEAR(cp.link.pp_s, 2 * 4 * 2 * p2p / 2, 1e-18);
    EXPECT_NEAR(cp.breakdown.pp_comm_exposed_s, 0.75 * 2 * 9 * p2p / 2, 1e-18);
    // Within one domain a hop uses the scale-up link: pp 2 x tp 2 all inside 8 GPUs.
    ParallelConfig near = pipeline(2, 1);
    near.tp = 2;
    near.sequence_parallel = true;
    EXPECT_NEAR(step_over(m, s, batch_of(4), near).link.pp_s, 2 * 4 * (full / 2) / 100e9, 1e-18);
    // One stage: no hops, even where a gather would cost something (tp 2 without SP).
    ParallelConfig one;
    one.tp = 2;
    const TrainResult r1 = step_over(m, s, batch_of(4), one);
    EXPECT_EQ(r1.link.pp_s, 0.0);
    EXPECT_EQ(r1.breakdown.pp_comm_exposed_s, 0.0);
}

// Time on the wire per step: per micro-batch, every layer of the fullest stage (4 of 8 on pp 2)
// and, for TP, the slower end's block (here the head, 1 ms of forward): TP 1 ms per layer and
// 0.25 ms in the head, CP 2 ms, EP 3 ms per layer; 2 micro-batches.
TEST(Pipeline, LinkTimesPerStep) {
    const ModelSpec m = tiny_gpt();
    const SystemSpec s = round_system();
    LayerCosts c;
    c.layer[0].comm_link_s[idx(CommGroup::tp)] = 1 * ms;
    c.layer[0].comm_link_s[idx(CommGroup::cp)] = 2 * ms;
    c.layer[0].comm_link_s[idx(CommGroup::ep)] = 3 * ms;
    c.embedding.comm_link_s[idx(CommGroup::tp)] = 0.5 * ms;
    c.head.comm_link_s[idx(CommGroup::tp)] = 0.25 * ms;
    c.head.fwd_s = 1 * ms;
    const TrainResult r = step_over(m, s, batch_of(2), pipeline(2, 1), c);
    EXPECT_NEAR(r.link.tp_s, 2 * (4 * 1 + 0.25) * ms, 1e-15);
    EXPECT_NEAR(r.link.cp_s, 2 * 4 * 2 * ms, 1e-15);
    EXPECT_NEAR(r.link.ep_s, 2 * 4 * 3 * ms, 1e-15);
}

// Activations held by the first stage under 1F1B: min(pp, m) micro-batches of its layers and the
// embedding; interleaved, Megatron's 2 (p - 1) + (v - 1) p + 1 chunk micro-batches over v, which is
// p times Korthikanti et al. 2022 (sec. 4.2.3)'s factor 1 + (p - 1)/(p v), for the embedding too
// (it rides on chunk 0); plus, for the layer in backward, what recompute rebuilt. Per layer: 1 GB saved, of which 0.2 GB attention
// core, 0.1 GB input; the embedding keeps 0.05 GB per micro-batch, the head 0.3 GB.
TEST(Pipeline, ActivationsInFlightAndInterleavingFactor) {
    const ModelSpec m = tiny_gpt();
    const SystemSpec s = round_system();
    LayerCosts c;
    c.layer[0].saved_bytes = 1e9;
    c.layer[0].selective_freed_bytes = 0.2e9;
    c.layer[0].input_bytes = 0.1e9;
    c.embedding.saved_bytes = 0.05e9;
    c.head.saved_bytes = 0.3e9;
    auto act = [&](int64_t pp, int64_t vp, int64_t gb, Recompute rc) {
        ParallelConfig p = pipeline(pp, vp);
        p.recompute = rc;
        return step_over(m, s, batch_of(gb), p, c).memory.activations_bytes;
    };
    // pp 4, v 2, 8 micro-batches: 4 x 1.375 = 5.5 in flight of 2 layers and the embedding.
    EXPECT_DOUBLE_EQ(act(4, 2, 8, Recompute::none), 2 * 1e9 * 4 * 1.375 + 4 * 1.375 * 0.05e9);
    EXPECT_DOUBLE_EQ(act(4, 1, 8, Recompute::none), 2 * 1e9 * 4 + 4 * 0.05e9);
    // Selective keeps 0.8 GB per layer and rebuilds the 0.2 GB core of the layer in backward.
    EXPECT_DOUBLE_EQ(act(4, 2, 8, Recompute::selective), 2 * 0.8e9 * 4 * 1.375 + 4 * 1.375 * 0.05e9 + 0.2e9);
    // Full keeps the 0.1 GB input and rebuilds the other 0.9 GB of one layer.
    EXPECT_DOUBLE_EQ(act(4, 2, 8, Recompute::full), 2 * 0.1e9 * 4 * 1.375 + 4 * 1.375 * 0.05e9 + 0.9e9);
    // Two micro-batches: only two in flight.
    EXPECT_DOUBLE_EQ(act(4, 1, 2, Recompute::none), 2 * 1e9 * 2 + 2 * 0.05e9);
    // One micro-batch: the last stage (2 layers and the head, 2.3 GB) outgrows the first (2.05 GB).
    EXPECT_DOUBLE_EQ(act(4, 1, 1, Recompute::none), 2 * 1e9 + 0.3e9);
    // One stage keeps all 8 layers, the embedding and the head for its one micro-batch in flight.
    EXPECT_DOUBLE_EQ(act(1, 1, 8, Recompute::none), 8 * 1e9 + 0.05e9 + 0.3e9);
    // ... and all 536,192 parameters, embedding and head included.
    EXPECT_DOUBLE_EQ(step_over(m, s, batch_of(8), pipeline(1, 1), c).memory.weights_bytes, 2 * 536192.0);
}

// A training micro-batch as the layer sees it: 3 sequences, the 128 tokens split over cp 2 (each
// query attends to all 128 keys, half of them under the causal mask), fp8 GEMMs on bf16 activations.
TEST(Pipeline, MicroBatchShapeAndNumberFormats) {
    ModelSpec m = tiny_gpt();
    ParallelConfig p;
    p.tp = 2;
    p.cp = 2;
    p.microbatch = 3;
    p.sequence_parallel = true;
    TrainingSpec t;
    t.precision = Precision::fp8;
    const LayerShape sh = training_shape(m, p, t);
    EXPECT_DOUBLE_EQ(sh.batch, 3);
    EXPECT_DOUBLE_EQ(sh.q_len, 64);
    EXPECT_DOUBLE_EQ(sh.kv_len, 128);
    EXPECT_DOUBLE_EQ(sh.causal_fraction, 0.5);
    EXPECT_EQ(sh.tp, 2);
    EXPECT_EQ(sh.cp, 2);
    EXPECT_TRUE(sh.sequence_parallel);
    EXPECT_DOUBLE_EQ(sh.act_bytes, 2);
    EXPECT_DOUBLE_EQ(sh.kv_bytes, 2);
    const CostContext ctx = training_cost_context(t);
    EXPECT_EQ(ctx.math, Precision::fp8);
    EXPECT_DOUBLE_EQ(ctx.act_bytes, 2);
    EXPECT_DOUBLE_EQ(ctx.operand_bytes, 1);
    EXPECT_DOUBLE_EQ(ctx.weight_bytes, 1);
    EXPECT_DOUBLE_EQ(ctx.kv_bytes, 2);
    m.causal = false;
    p.tp = 1;  // sequence parallelism needs tensor parallelism
    EXPECT_DOUBLE_EQ(training_shape(m, p, t).causal_fraction, 1.0);
    EXPECT_FALSE(training_shape(m, p, t).sequence_parallel);
    p.ep = 2;
    EXPECT_EQ(training_shape(m, p, t).ep, 2);
}

// Every collective that crosses the scale-out network shares the GPU's NIC, so the step lasts at
// least the sum of their link times, whatever overlap claims. dp 4 on domains of 2: the ZeRO-0
// all-reduce of 4P bytes (P = 536,192) is reduce-scatter in the domain (1/2 x 4P at 100 GB/s),
// all-reduce of 2P across two domains (2 x 1/2 x 2P at 10 GB/s), all-gather back: link
// L = 4P/100e9 + 2P/10e9 = 2.4e-10 P s = 128.68608 us.
TEST(Pipeline, NicSharingFloorsTheStep) {
    const ModelSpec m = tiny_gpt();
    SystemSpec s = round_system();
    s.scale_up_domain = 2;
    ParallelConfig p;
    p.dp = 4;
    const double P = 536192, L = 2.4e-10 * P;
    const double opt = 30 * P / 1e12;  // Adam over the unsharded states (ZeRO 0)
    LayerCosts c;
    c.layer[0].bwd_wall_s = 1;  // a long backward window: overlap would hide all but L/8
    // TP traffic (here a 1 s claim on a 1-GPU group) never leaves the domain: not on the NIC.
    c.layer[0].comm_link_s[idx(CommGroup::tp)] = 1;
    const TrainResult bound = step_over(m, s, batch_of(4), p, c);
    EXPECT_NEAR(bound.link.dp_s, L, 1e-15);
    EXPECT_NEAR(bound.step_time_s, L, 1e-15);  // binds: 4 us of optimizer + L/8 exposed < L
    EXPECT_NEAR(bound.breakdown.dp_comm_exposed_s, L - opt, 1e-15);
    // With 1 ms of forward per layer the compute (8 ms) covers it: the floor does not bind.
    c.layer[0].fwd_s = 1 * ms;
    const TrainResult free = step_over(m, s, batch_of(4), p, c);
    EXPECT_NEAR(free.breakdown.dp_comm_exposed_s, L / 8, 1e-15);
    EXPECT_NEAR(free.step_time_s, 8 * ms + opt + L / 8, 1e-15);
}

// With a domain of one GPU every group crosses the NIC: cp 2 and ep 2 rings (1 ms per layer each,
// 8 layers, one micro-batch) and the dp x cp = 2 gradient all-reduce (2 x 1/2 x 4P at 10 GB/s)
// share it, so the step lasts at least 8 + 8 ms + 4P/1e10. TP (a group of one) is not on it.
TEST(Pipeline, NicFloorCountsEveryGroupThatLeavesTheDomain) {
    const ModelSpec m = tiny_gpt();
    SystemSpec s = round_system();
    s.scale_up_domain = 1;
    ParallelConfig p;
    p.cp = 2;
    p.ep = 2;
    LayerCosts c;
    c.layer[0].comm_link_s[idx(CommGroup::tp)] = 1 * ms;
    c.layer[0].comm_link_s[idx(CommGroup::cp)] = 1 * ms;
    c.layer[0].comm_link_s[idx(CommGroup::ep)] = 1 * ms;
    const double dp_link = 4 * 536192 / 10e9;
    const TrainResult r = step_over(m, s, batch_of(1), p, c);
    EXPECT_NEAR(r.link.dp_s, dp_link, 1e-15);
    EXPECT_NEAR(r.step_time_s, 16 * ms + dp_link, 1e-15);
}

// Megatron's decoder_first_pipeline_num_layers = 1: 9 layers on pp 3, the first GPU one layer,
// the other two (the last one a middle GPU: no last count given) 4 each.
TEST(Pipeline, OneLayerFirstStage) {
    ParallelConfig p;
    p.pp = 3;
    p.split = PipelineSplit::first_last;
    p.first_stage_layers = 1;
    const SplitOutcome cut = split_layers(9, p);
    ASSERT_TRUE(cut.ok()) << cut.problem;
    EXPECT_EQ(cut.split.first, 1);
    EXPECT_EQ(cut.split.middle, 4);
    EXPECT_EQ(cut.split.last, 4);
    EXPECT_EQ(cut.split.gpu_layers(0), 1);
    EXPECT_EQ(cut.split.gpu_layers(2), 4);
}

}  // namespace
}  // namespace sm
