// The pipeline as a list of stages: how each framework's split cuts the layers (by hand, from
// Megatron-LM's get_num_layers_to_build / get_transformer_layer_offset and DeepSpeed's
// partition_uniform), which GPU holds which kinds of block, and each stage's time and memory.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "io/report.hpp"
#include "test_helpers.hpp"

namespace sm {
namespace {

using testing::batch_of;
using testing::round_system;
using testing::step_over;
using testing::tiny_gpt;

constexpr double ms = 1e-3;

ParallelConfig cut(int64_t pp, int64_t vp, PipelineSplit split, int64_t first = 0, int64_t last = 0) {
    ParallelConfig p;
    p.pp = pp;
    p.vp = vp;
    p.split = split;
    p.first_stage_layers = first;
    p.last_stage_layers = last;
    return p;
}

StageSplit split_of(int64_t layers, const ParallelConfig& p) {
    const SplitOutcome o = split_layers(layers, p);
    EXPECT_TRUE(o.ok()) << (o.problem ? o.problem : "");
    return o.split;
}

// Llama 3.1 405B: 126 layers + the embedding and the loss slots = 128 slots over pp 8 x vp 8 = 64
// chunks of 2. Chunk 0 (GPU 0) gives a slot to the embedding and builds layer 0 only; chunk 63
// (GPU 7's last) gives one to the loss and builds layer 125 only. GPU 0 holds chunks 0, 8, ..., 56:
// 1 + 7 x 2 = 15 layers; GPU 7 likewise 15; the others 16. Chunk 8 starts at 8 x 2 - 1 = 15.
TEST(Stages, Llama405bEmbeddingAndLossSlotsOnPp8Vp8) {
    const StageSplit s = split_of(126, cut(8, 8, PipelineSplit::embedding_loss));
    EXPECT_EQ(s.chunk_layers(0), 1);
    EXPECT_EQ(s.chunk_begin(0), 0);
    EXPECT_EQ(s.chunk_layers(1), 2);
    EXPECT_EQ(s.chunk_begin(1), 1);
    EXPECT_EQ(s.chunk_begin(8), 15);
    EXPECT_EQ(s.chunk_layers(63), 1);
    EXPECT_EQ(s.chunk_begin(63), 125);
    EXPECT_EQ(s.gpu_layers(0), 15);
    EXPECT_EQ(s.gpu_layers(3), 16);
    EXPECT_EQ(s.gpu_layers(7), 15);
    int64_t total = 0;
    for (int64_t j = 0; j < 64; ++j) {
        if (j > 0) {
            EXPECT_EQ(s.chunk_begin(j), s.chunk_begin(j - 1) + s.chunk_layers(j - 1)) << j;  // contiguous
        }
        total += s.chunk_layers(j);
    }
    EXPECT_EQ(total, 126);
    // pp 16 x vp 4: again 64 chunks of 2; GPU 0 holds 1 + 3 x 2 = 7 layers, GPU 15 7, the others 8.
    const StageSplit t = split_of(126, cut(16, 4, PipelineSplit::embedding_loss));
    EXPECT_EQ(t.gpu_layers(0), 7);
    EXPECT_EQ(t.gpu_layers(1), 8);
    EXPECT_EQ(t.gpu_layers(15), 7);
    // `auto` picks the accounting for both, and the even split where pp x vp divides the layers.
    EXPECT_EQ(default_split(126, cut(8, 8, PipelineSplit::even)), PipelineSplit::embedding_loss);
    EXPECT_EQ(default_split(126, cut(16, 4, PipelineSplit::even)), PipelineSplit::embedding_loss);
    EXPECT_EQ(default_split(96, cut(8, 2, PipelineSplit::even)), PipelineSplit::even);
    // Neither fits (9 layers on pp 2 x vp 2: 9 and 11 are not multiples of 4): interleaved, the
    // even split is kept so that its error names the rule; without interleaving, uniform.
    EXPECT_EQ(default_split(9, cut(2, 2, PipelineSplit::even)), PipelineSplit::even);
    EXPECT_EQ(default_split(9, cut(2, 1, PipelineSplit::even)), PipelineSplit::uniform);
}

// BLOOM 176B: 70 layers + 2 = 72 slots on pp 12: 6 per stage; GPU 0 holds layers 0-4 and the
// embedding, GPU 1 layers 5-10, GPU 11 layers 65-69 and the head.
TEST(Stages, BloomOnPp12) {
    ParallelConfig p = cut(12, 1, PipelineSplit::even);
    p.split = default_split(70, p);
    EXPECT_EQ(p.split, PipelineSplit::embedding_loss);
    const StageSplit s = split_of(70, p);
    EXPECT_EQ(s.chunk_begin(0), 0);
    EXPECT_EQ(s.chunk_layers(0), 5);
    EXPECT_EQ(s.chunk_begin(1), 5);
    EXPECT_EQ(s.chunk_layers(1), 6);
    EXPECT_EQ(s.chunk_begin(11), 65);
    EXPECT_EQ(s.chunk_layers(11), 5);
    // The embedding alone: 71 slots do not split over 12; the loss alone neither. Embedding only
    // on 70 layers pp 71 would, but that is beside the point: 69 + 1 = 70 over pp 10 gives 7 each.
    EXPECT_FALSE(split_layers(70, cut(12, 1, PipelineSplit::embedding)).ok());
    const StageSplit e = split_of(69, cut(10, 1, PipelineSplit::embedding));
    EXPECT_EQ(e.gpu_layers(0), 6);
    EXPECT_EQ(e.gpu_layers(9), 7);
    EXPECT_EQ(e.chunk_begin(9), 62);
}

// DeepSpeed's partition_uniform: 10 layers on pp 4 -> 3, 3, 2, 2 (the first 10 mod 4 = 2 stages
// take one more): layers 0-2, 3-5, 6-7, 8-9. `auto` takes it where Megatron's rules do not apply
// (80 layers on pp 3: neither 80 nor 82 divides by 3). No interleaving, no empty stage.
TEST(Stages, DeepSpeedUniformSplit) {
    const StageSplit s = split_of(10, cut(4, 1, PipelineSplit::uniform));
    const int64_t begin[] = {0, 3, 6, 8}, count[] = {3, 3, 2, 2};
    for (int64_t g = 0; g < 4; ++g) {
        EXPECT_EQ(s.chunk_begin(g), begin[g]) << g;
        EXPECT_EQ(s.chunk_layers(g), count[g]) << g;
        EXPECT_EQ(s.gpu_layers(g), count[g]) << g;
    }
    EXPECT_EQ(default_split(80, cut(3, 1, PipelineSplit::even)), PipelineSplit::uniform);
    EXPECT_FALSE(split_layers(10, cut(4, 2, PipelineSplit::uniform)).ok());
    EXPECT_FALSE(split_layers(3, cut(4, 1, PipelineSplit::uniform)).ok());
    // As many layers as stages: one each, none empty.
    const SplitOutcome one_each = split_layers(4, cut(4, 1, PipelineSplit::uniform));
    ASSERT_TRUE(one_each.ok()) << one_each.problem;
    for (int64_t g = 0; g < 4; ++g) EXPECT_EQ(one_each.split.gpu_layers(g), 1) << g;
    // An even split needs pp x vp | layers.
    EXPECT_FALSE(split_layers(126, cut(8, 8, PipelineSplit::even)).ok());
}

// Megatron's num_layers_in_first/last_pipeline_stage: 96 layers on pp 8, first 10, last 2: the
// middle 6 GPUs take (96 - 12)/6 = 14. With vp 2 each GPU's count halves per chunk: first 5,
// middle 7, last 1; the second round starts at 5 + 6 x 7 + 1 = 48 (Megatron's offset
// vp_stage x (5 + 42 + 1)), so chunk 9 (GPU 1's second) starts at 48 + 5 = 53.
TEST(Stages, ExplicitFirstAndLastStageLayers) {
    const StageSplit s = split_of(96, cut(8, 2, PipelineSplit::first_last, 10, 2));
    EXPECT_EQ(s.gpu_layers(0), 10);
    EXPECT_EQ(s.gpu_layers(1), 14);
    EXPECT_EQ(s.gpu_layers(7), 2);
    EXPECT_EQ(s.chunk_begin(8), 48);
    EXPECT_EQ(s.chunk_begin(9), 53);
    EXPECT_EQ(s.chunk_layers(15), 1);
    EXPECT_EQ(s.chunk_begin(15), 95);
    // Only the first given: the last GPU is a middle one: (96 - 12)/7 = 12.
    const StageSplit f = split_of(96, cut(8, 1, PipelineSplit::first_last, 12, 0));
    EXPECT_EQ(f.gpu_layers(7), 12);
    // Refused as Megatron refuses: the middle does not divide (83 over 6), a count not a multiple
    // of vp, leftover layers with no middle stage.
    EXPECT_FALSE(split_layers(96, cut(8, 1, PipelineSplit::first_last, 10, 3)).ok());
    EXPECT_FALSE(split_layers(96, cut(8, 2, PipelineSplit::first_last, 9, 3)).ok());
    EXPECT_FALSE(split_layers(96, cut(2, 1, PipelineSplit::first_last, 40, 40)).ok());
    EXPECT_FALSE(split_layers(96, cut(1, 1, PipelineSplit::first_last, 96, 0)).ok());
    // 10 layers on pp 4 x vp 2, first and last 2: the two middle GPUs take 3 each, which their two
    // chunks cannot share.
    EXPECT_FALSE(split_layers(10, cut(4, 2, PipelineSplit::first_last, 2, 2)).ok());
    // The same with one middle GPU: 7 layers on pp 3 x vp 2, first and last 2, leave it 3, which its
    // two chunks cannot share either; 8 layers leave it 4, 2 per chunk.
    EXPECT_FALSE(split_layers(7, cut(3, 2, PipelineSplit::first_last, 2, 2)).ok());
    EXPECT_EQ(split_of(8, cut(3, 2, PipelineSplit::first_last, 2, 2)).gpu_layers(1), 4);
    // Two stages, both given: no middle stage, and none needed (40 + 56 = 96).
    const StageSplit two = split_of(96, cut(2, 2, PipelineSplit::first_last, 40, 56));
    EXPECT_EQ(two.gpu_layers(0), 40);
    EXPECT_EQ(two.gpu_layers(1), 56);
    EXPECT_EQ(two.chunk_begin(1), 20);
    // A last stage of a single layer: 7 layers on pp 4, the other 6 two per GPU.
    const StageSplit one = split_of(7, cut(4, 1, PipelineSplit::first_last, 0, 1));
    EXPECT_EQ(one.gpu_layers(0), 2);
    EXPECT_EQ(one.gpu_layers(3), 1);
}

// Blocks of two kinds land where their layers are. DeepSeek-V3-like: 8 layers, the first 3 dense,
// on pp 2: GPU 0 holds layers 0-3 (3 dense, 1 MoE), GPU 1 layers 4-7 (4 MoE). Llama-4-like: MoE
// every second layer (1, 3, 5, 7) on pp 4 x vp 2, one layer per chunk: GPU 0 holds layers 0 and 4
// (both dense), GPU 1 layers 1 and 5 (both MoE).
TEST(Stages, BlockKindsFollowTheLayerRanges) {
    ModelSpec m = tiny_gpt();
    m.moe = {8, 2, 128};
    m.moe.first_dense_layers = 3;
    const StageSplit two = split_of(8, cut(2, 1, PipelineSplit::even));
    const StageLoad g0 = stage_load(m, two, 0), g1 = stage_load(m, two, 1);
    EXPECT_EQ(g0.blocks[idx(LayerKind::dense)], 3);
    EXPECT_EQ(g0.blocks[idx(LayerKind::moe)], 1);
    EXPECT_EQ(g0.layers, 4);
    EXPECT_EQ(g1.layers, 4);
    EXPECT_TRUE(g0.embedding);
    EXPECT_FALSE(g0.head);
    EXPECT_EQ(g1.blocks[idx(LayerKind::moe)], 4);
    EXPECT_TRUE(g1.head);
    m.moe.first_dense_layers = 0;
    m.moe.interval = 2;
    const StageSplit inter = split_of(8, cut(4, 2, PipelineSplit::even));
    EXPECT_EQ(stage_load(m, inter, 0).blocks[idx(LayerKind::dense)], 2);
    EXPECT_EQ(stage_load(m, inter, 0).blocks[idx(LayerKind::moe)], 0);
    EXPECT_EQ(stage_load(m, inter, 0).layers, 2);
    EXPECT_EQ(stage_load(m, inter, 1).blocks[idx(LayerKind::moe)], 2);
    EXPECT_EQ(stage_load(m, inter, 1).layers, 2);
}

// Micro-batches in flight. 1F1B: min(pp - g, m). Interleaved (Megatron's warm-up
// 2 (pp - g - 1) + (vp - 1) pp, plus one), over vp: pp 4, vp 2, GPU 0: (6 + 4 + 1)/2 = 5.5 =
// 4 x (1 + 3/8); GPU 3: (0 + 4 + 1)/2 = 2.5; capped by the m x vp chunk micro-batches there are.
TEST(Stages, MicroBatchesInFlight) {
    EXPECT_DOUBLE_EQ(micro_batches_in_flight(4, 1, 0, 8), 4);
    EXPECT_DOUBLE_EQ(micro_batches_in_flight(4, 1, 3, 8), 1);
    EXPECT_DOUBLE_EQ(micro_batches_in_flight(4, 1, 1, 2), 2);
    EXPECT_DOUBLE_EQ(micro_batches_in_flight(4, 2, 0, 8), 5.5);
    EXPECT_DOUBLE_EQ(micro_batches_in_flight(4, 2, 3, 8), 2.5);
    EXPECT_DOUBLE_EQ(micro_batches_in_flight(4, 2, 0, 2), 2);
    EXPECT_DOUBLE_EQ(micro_batches_in_flight(1, 1, 0, 8), 1);
}

// Per layer and micro-batch 3.75 ms (1 + 2 + 0.5 recompute + 0.25 exposed TP), the embedding
// 0.2 ms, the head 1.2 ms. 8 layers on pp 3 (uniform: 3, 3, 2): GPU 0 = 3 x 3.75 + 0.2 = 11.45 ms,
// GPU 1 = 11.25, GPU 2 = 2 x 3.75 + 1.2 = 8.7: GPU 0 sets the pace; bubble 2 x 11.45 ms.
TEST(Stages, SlowestStageSetsThePace) {
    LayerCosts c;
    c.layer[0].fwd_s = 1 * ms;
    c.layer[0].bwd_s = 2 * ms;
    c.layer[0].recompute_s = 0.5 * ms;
    c.layer[0].comm_exposed_s[idx(CommGroup::tp)] = 0.25 * ms;
    c.embedding.fwd_s = c.embedding.bwd_s = 0.1 * ms;
    c.head.fwd_s = 0.4 * ms;
    c.head.bwd_s = 0.8 * ms;
    const TrainResult r = step_over(tiny_gpt(), round_system(), batch_of(8), cut(3, 1, PipelineSplit::uniform), c);
    EXPECT_EQ(r.slowest_stage, 0);
    EXPECT_NEAR(r.breakdown.bubble_s, 2 * 11.45 * ms, 1e-15);
    EXPECT_NEAR(r.breakdown.compute_s, 8 * (3 * 3 + 0.2) * ms, 1e-15);
    EXPECT_NEAR(r.breakdown.recompute_s, 8 * 3 * 0.5 * ms, 1e-15);
}

// Memory per stage. tiny_gpt with 6 layers on pp 4, embedding + loss slots (8 over 4 = 2 each):
// GPU 0 holds layer 0 and the embedding (49,984 + 72,192 = 122,176 parameters), GPUs 1 and 2 two
// layers (99,968), GPU 3 layer 5, the head and the final norm (49,984 + 64,000 + 128 = 114,112).
// Without activations GPU 0 is the peak (bf16: 2 bytes a parameter). With 1 GB of activations a
// layer, 0.05 GB for the embedding and 0.3 GB for the head, 8 micro-batches under 1F1B: GPU 0
// keeps 4 x 1.05 GB, GPU 1 3 x 2 GB = 6 GB, GPU 2 2 x 2 GB, GPU 3 1 x 1.3 GB: GPU 1 is the peak.
TEST(Stages, PeakMemoryIsTheLargestStage) {
    ModelSpec m = tiny_gpt();
    m.layers = 6;
    const SystemSpec s = round_system();
    const ParallelConfig p = cut(4, 1, PipelineSplit::embedding_loss);
    const TrainResult bare = step_over(m, s, batch_of(8), p);
    EXPECT_EQ(bare.peak_stage, 0);
    EXPECT_DOUBLE_EQ(bare.memory.weights_bytes, 2 * 122176.0);
    LayerCosts c;
    c.layer[0].saved_bytes = 1e9;
    c.embedding.saved_bytes = 0.05e9;
    c.head.saved_bytes = 0.3e9;
    const TrainResult r = step_over(m, s, batch_of(8), p, c);
    EXPECT_EQ(r.peak_stage, 1);
    EXPECT_DOUBLE_EQ(r.memory.activations_bytes, 6e9);
    EXPECT_DOUBLE_EQ(r.memory.weights_bytes, 2 * 99968.0);
    // training_stages reports each: GPU 3 keeps one micro-batch of layer 5 and the head.
    TrainingSpec t = batch_of(8);
    const std::vector<StageReport> st = training_stages({m, s, t}, p);
    ASSERT_EQ(st.size(), 4u);
    EXPECT_EQ(st[0].load.layers, 1);
    EXPECT_TRUE(st[0].load.embedding);
    EXPECT_EQ(st[3].chunks.at(0).first_layer, 5);
    EXPECT_TRUE(st[3].load.head);
    EXPECT_DOUBLE_EQ(st[3].in_flight, 1);
    EXPECT_DOUBLE_EQ(st[2].memory.weights_bytes, 2 * 99968.0);
    EXPECT_DOUBLE_EQ(st[3].memory.weights_bytes, 2 * 114112.0);
}

// Data-parallel gradients of expert weights reduce over their dp x cp / ep replicas, not over
// all dp x cp ranks. tiny_moe (tests/test_helpers.hpp: per GPU 196,160 dense parameters and
// 786,432 / ep expert ones), dp 4, ep 2, ZeRO 0, in one 8-GPU domain at 100 GB/s: fp32 gradients,
// the dense all-reduce over 4 ranks moves 2 x 3/4 x 4 x 196,160 bytes; the expert one over 2 ranks
// 2 x 1/2 x 4 x 393,216 bytes.
TEST(Stages, ExpertGradientsReduceOverTheirReplicas) {
    const ModelSpec m = testing::tiny_moe();
    ParallelConfig p;
    p.dp = 4;
    p.ep = 2;
    const TrainResult r = step_over(m, round_system(), batch_of(4, false), p);
    const double dense = 2 * 0.75 * 4 * 196160 / 100e9, experts = 2 * 0.5 * 4 * 393216 / 100e9;
    EXPECT_NEAR(r.link.dp_s, dense + experts, 1e-15);
    // ep = dp: every GPU holds its own experts, nothing to reduce for them.
    p.ep = 4;
    EXPECT_NEAR(step_over(m, round_system(), batch_of(4, false), p).link.dp_s, dense, 1e-15);
}

// ZeRO-2 with pipeline parallelism: Megatron and Llama 3 accumulate fp32 gradients and
// reduce-scatter once per step (the full buffer is held); DeepSpeed's ZeRO-2 reduce-scatters every
// micro-batch and keeps its shard. tiny_gpt on pp 2, dp 2: the fuller GPU holds 272,128
// parameters; 4 micro-batches; a ring of 2 moves 1/2 S per reduce-scatter or all-gather.
TEST(Stages, Zero2GradientReductionPerStepOrPerMicroBatch) {
    const ModelSpec m = tiny_gpt();
    const SystemSpec s = round_system();
    ParallelConfig p;
    p.pp = 2;
    p.dp = 2;
    p.zero = 2;
    const double P = 272128, rs = 0.5 * 4 * P / 100e9, ag = 0.5 * 2 * P / 100e9;
    TrainingSpec t = batch_of(8, false);
    const TrainResult step = step_over(m, s, t, p);  // auto: per step with pp > 1
    EXPECT_NEAR(step.link.dp_s, rs + ag, 1e-15);
    EXPECT_DOUBLE_EQ(step.memory.gradients_bytes, 4 * P);
    t.grad_reduce = GradReduce::per_microbatch;
    const TrainResult each = step_over(m, s, t, p);
    EXPECT_NEAR(each.link.dp_s, 4 * rs + ag, 1e-15);
    EXPECT_DOUBLE_EQ(each.memory.gradients_bytes, 4 * P / 2);
}

// With vp chunks, a chunk's gradient reduction starts when its last backward ends. tiny_gpt on
// pp 2 x vp 2, dp 2, ZeRO 0, backward 1 us a layer: GPU 0 holds 4 layers and the embedding
// (272,128 parameters); the all-reduce over a ring of 2 moves 4P bytes: L = 4P/1e11 = 10.885 us.
// Window 4 us (2 us per chunk); chunks' last backwards are min(pp, m) = 2 chunk-backwards = 4 us
// apart. Chunk 1 (share L/2) may start at -4 - 2 = -6 us and ends at -0.557 us; chunk 0 starts at
// max(-0.557, -2) and ends at 4.885 us after the backward: exposed. One reduction after the
// last backward: L - 4 us = 6.885 us. (Neither is below the last bucket, L/4.)
TEST(Stages, ChunkGradientReductionsStartAsChunksFinish) {
    const ModelSpec m = tiny_gpt();
    const SystemSpec s = round_system();
    ParallelConfig p = cut(2, 2, PipelineSplit::even);
    p.dp = 2;
    LayerCosts c;
    c.layer[0].bwd_wall_s = 1e-6;
    TrainingSpec t = batch_of(8, true);
    const double L = 4 * 272128 / 100e9;
    const double chunk1_end = -6e-6 + L / 2;
    const double per_chunk = std::max(chunk1_end, -2e-6) + L / 2;
    EXPECT_NEAR(step_over(m, s, t, p, c).breakdown.dp_comm_exposed_s, per_chunk, 1e-15);
    t.grad_sync_per_chunk = false;
    EXPECT_NEAR(step_over(m, s, t, p, c).breakdown.dp_comm_exposed_s, L - 4e-6, 1e-15);
}

// overlap_p2p_comm (interleaved): a steady-state transfer hides behind the chunk computed
// meanwhile. pp 2 x vp 2 in one domain: a hop is the 16,384-byte activation at 100 GB/s =
// 0.16384 us. GPU 0 (the first of equals) holds 4 layers: forward 0.05 us a layer -> 0.1 us per
// chunk, shorter than a hop; backward 1 us a layer -> 2 us per chunk, longer. 4 micro-batches x 2
// chunks: exposed 8 x (0.16384 - 0.1) us in steady state, plus the 2 x (pp - 1) hops of fill and
// drain. Off: 2 x (4 x 2 + 1) hops.
TEST(Stages, InterleavedSendReceiveOverlapsCompute) {
    const ModelSpec m = tiny_gpt();
    const SystemSpec s = round_system();
    ParallelConfig p = cut(2, 2, PipelineSplit::even);
    p.sequence_parallel = true;
    LayerCosts c;
    c.layer[0].fwd_wall_s = 0.05e-6;
    c.layer[0].bwd_wall_s = 1e-6;
    TrainingSpec t = batch_of(4);
    const double hop = 16384 / 100e9;
    EXPECT_NEAR(step_over(m, s, t, p, c).breakdown.pp_comm_exposed_s, 8 * (hop - 0.1e-6) + 2 * hop, 1e-18);
    t.overlap_p2p_comm = false;
    EXPECT_NEAR(step_over(m, s, t, p, c).breakdown.pp_comm_exposed_s, 2 * 9 * hop, 1e-18);
    // What hides still slows the compute it hides behind: with overlap_interference 0.5 the
    // steady state adds half of the hidden part, 0.5 x (16 hops on the wire - the exposed part).
    t.overlap_p2p_comm = true;
    SystemSpec slowed = s;
    slowed.eff.overlap_interference = 0.5;
    const double exposed = 8 * (hop - 0.1e-6);
    EXPECT_NEAR(step_over(m, slowed, t, p, c).breakdown.pp_comm_exposed_s, exposed + 0.5 * (16 * hop - exposed) + 2 * hop, 1e-18);
}

// Scenarios: the published uneven layouts run; what no framework runs is refused, naming the field.
using testing::refusal;

TEST(Stages, PublishedUnevenLayoutsRunAndImpossibleOnesAreRefused) {
    const std::string llama = R"({"model": {"preset": "llama3.1-405b"}, "system": {"preset": "dgx-h100"},
        "parallel": {"tp": 8, "pp": PP, "vp": VP, "dp": 2, "sequence_parallel": true, "recompute": "none"},
        "training": {"global_batch": 64, "precision": "bf16"}})";
    auto with = [&](int pp, int vp) {
        std::string j = llama;
        j.replace(j.find("PP"), 2, std::to_string(pp));
        j.replace(j.find("VP"), 2, std::to_string(vp));
        return j;
    };
    for (auto [pp, vp] : {std::pair{8, 8}, std::pair{16, 4}}) {
        const Scenario s = testing::scenario(with(pp, vp));
        EXPECT_EQ(s.parallel.split, PipelineSplit::embedding_loss);
        const TrainResult r = evaluate_training({s.model, s.system, s.training}, s.parallel);
        EXPECT_GT(r.step_time_s, 0);
        EXPECT_EQ(r.slowest_stage, 1);  // a full middle GPU: 16 (8) layers against 15 (7) + an end
    }
    const Scenario bloom = testing::scenario(R"({"model": {"preset": "bloom-176b"}, "system": {"preset": "dgx-a100-80gb"},
        "parallel": {"tp": 4, "pp": 12, "dp": 8}, "training": {"global_batch": 2048}})");
    EXPECT_EQ(bloom.parallel.split, PipelineSplit::embedding_loss);
    // pp 8 x vp 3 = 24 divides neither 126 nor 128.
    EXPECT_NE(refusal(with(8, 3)).find("parallel.pp"), std::string::npos);
    // An explicit even split of 126 layers on 64 chunks.
    std::string even = with(8, 8);
    even.replace(even.find("\"recompute\""), 0, "\"pipeline_split\": \"even\", ");
    EXPECT_NE(refusal(even).find("parallel.pp"), std::string::npos);
    std::string uni = with(8, 2);
    uni.replace(uni.find("\"recompute\""), 0, "\"pipeline_split\": \"uniform\", ");
    EXPECT_NE(refusal(uni).find("parallel.vp"), std::string::npos);
    std::string fl = with(8, 1);
    fl.replace(fl.find("\"recompute\""), 0, "\"first_stage_layers\": 14, \"last_stage_layers\": 14, ");
    EXPECT_NE(refusal(fl).find("parallel.first_stage_layers"), std::string::npos);  // 98 over 6 middle GPUs
    // 14 + 16: the middle 6 GPUs take 96 / 6 = 16 each.
    std::string ok = with(8, 1);
    ok.replace(ok.find("\"recompute\""), 0, "\"first_stage_layers\": 14, \"last_stage_layers\": 16, ");
    EXPECT_EQ(refusal(ok), "");
    std::string both = ok;
    both.replace(both.find("\"recompute\""), 0, "\"pipeline_split\": \"embedding_loss\", ");
    EXPECT_NE(refusal(both).find("parallel.pipeline_split"), std::string::npos);
}

// Megatron-Bridge's DeepSeek-V3 layouts (recipes/deepseek/deepseek_v3.py): 61 layers on pp 4 x vp 4
// are "E t*4 | (t*4|)*14 | t m L": 15 chunks of 4 and a last chunk of 1, so GPU 3 (chunks 3, 7, 11,
// 15) holds 4 + 4 + 4 + 1 = 13 and the last chunk starts at 15 x 4 = 60. pp 4 x vp 2 is
// "E t*8 | (t*8|)*6 | t*5 m L" (last chunk 61 - 56 = 5); pp 8 x vp 1 the same 8 x 7 + 5. `auto`
// takes fill where nothing else cuts an interleaving; 10 layers on 8 chunks (ceil 2, 7 x 2 = 14)
// leave nothing for the last chunk and stay refused.
TEST(Stages, FillSplitIsBridgesDeepSeekLayout) {
    const StageSplit s = split_of(61, cut(4, 4, PipelineSplit::fill));
    for (int64_t j = 0; j < 15; ++j) EXPECT_EQ(s.chunk_layers(j), 4) << j;
    EXPECT_EQ(s.chunk_layers(15), 1);
    EXPECT_EQ(s.chunk_begin(15), 60);
    EXPECT_EQ(s.chunk_begin(7), 28);
    EXPECT_EQ(s.gpu_layers(0), 16);
    EXPECT_EQ(s.gpu_layers(3), 13);
    const StageSplit two = split_of(61, cut(4, 2, PipelineSplit::fill));
    EXPECT_EQ(two.chunk_layers(7), 5);
    EXPECT_EQ(two.gpu_layers(3), 13);
    EXPECT_EQ(two.gpu_layers(2), 16);
    EXPECT_EQ(default_split(61, cut(4, 4, PipelineSplit::even)), PipelineSplit::fill);
    EXPECT_EQ(default_split(61, cut(8, 2, PipelineSplit::even)), PipelineSplit::fill);
    EXPECT_EQ(default_split(61, cut(8, 1, PipelineSplit::even)), PipelineSplit::uniform);  // vp 1 keeps DeepSpeed's
    EXPECT_EQ(default_split(10, cut(4, 2, PipelineSplit::even)), PipelineSplit::even);     // the refusal
    EXPECT_FALSE(split_layers(10, cut(4, 2, PipelineSplit::fill)).ok());
    EXPECT_FALSE(split_layers(5, cut(4, 2, PipelineSplit::fill)).ok());  // fewer layers than chunks
}

// Megatron-Core's layout strings, unrolled as parse_str_to_list does: "(group)*n" first, then
// "x*n", commas dropped. The Megatron docs' DeepSeek-V3 example without its MTP layer,
// "Et*3|(tt|)*29,|L", is 3 + 29 x 2 = 61 layers on 32 stages, the last two empty (the loss alone).
TEST(Stages, PipelineLayoutStringsParseAsMegatronReadsThem) {
    const ParsedLayout bridge = parse_pipeline_layout("Et*4|(t*4|)*14tL");
    ASSERT_EQ(bridge.problem, "");
    ASSERT_EQ(bridge.chunks.size(), 16u);
    EXPECT_EQ(bridge.chunks[0], 4);
    EXPECT_EQ(bridge.chunks[14], 4);
    EXPECT_EQ(bridge.chunks[15], 1);
    const ParsedLayout docs = parse_pipeline_layout("Et*3|(tt|)*29,|L");
    ASSERT_EQ(docs.problem, "");
    ASSERT_EQ(docs.chunks.size(), 32u);
    EXPECT_EQ(docs.chunks[0], 3);
    EXPECT_EQ(docs.chunks[29], 2);
    EXPECT_EQ(docs.chunks[30], 0);
    EXPECT_EQ(docs.chunks[31], 0);
    EXPECT_EQ(parse_pipeline_layout("E tt | t, tL").chunks, (std::vector<int32_t>{2, 2}));
    // Unrolled text is bounded at 10^6 characters: 2 x 500,001 is past it, 2 x 500,000 is not
    // (that one is refused for its missing loss, after unrolling).
    EXPECT_EQ(parse_pipeline_layout("E(tt)*500001L").problem, "unrolls to more than 1000000 characters");
    EXPECT_NE(parse_pipeline_layout("E(tt)*499999").problem, "unrolls to more than 1000000 characters");
    // The canonical spelling reads back to the same chunks.
    EXPECT_EQ(layout_text({4, 0, 1}), "Et*4||tL");
    EXPECT_EQ(parse_pipeline_layout(layout_text(bridge.chunks)).chunks, bridge.chunks);
    // Refused: no loss, a second embedding, the embedding or loss off its end, MTP off the last
    // stage, a stray character, a repetition past a million characters.
    for (const char* bad : {"Et*4|t*4", "Et|EtL", "t|EtL", "EtL|t", "Etm*4|t*4L", "Et*4|t*4xL", "E(t|)*2000000L",
                            "Et*99999999L", "((t|)*2)*2EL"})
        EXPECT_NE(parse_pipeline_layout(bad).problem, "") << bad;
    // As a split: the listed chunks, checked against pp x vp and the model's layers.
    ParallelConfig p = cut(4, 4, PipelineSplit::layout);
    p.layout = bridge.chunks;
    const StageSplit s = split_of(61, p);
    EXPECT_EQ(s.gpu_layers(3), 13);
    EXPECT_EQ(s.gpu_layers(1), 16);
    EXPECT_EQ(s.chunk_begin(15), 60);
    EXPECT_EQ(s.chunk_begin(5), 20);
    EXPECT_FALSE(split_layers(62, p).ok());               // 61 t's for 62 layers
    EXPECT_FALSE(split_layers(61, cut(4, 2, PipelineSplit::layout)).ok());  // no chunks listed for 8
    p.vp = 2;
    EXPECT_FALSE(split_layers(61, p).ok());  // 16 stages on 8 chunks
}

// A listed layout sets each GPU's load: Llama 2 7B's 32 layers on pp 2 as 24 + 8 make GPU 0 the
// slowest, as 8 + 24 GPU 1, and either is slower than the even 16 + 16 (the schedule runs at the
// slowest GPU). GPU 0's weights: 24 layers of 202 M parameters and the 131 M embedding against 16
// layers and the embedding, 1.48x.
TEST(Stages, PipelineLayoutSetsEachGpusLoad) {
    const std::string base = R"({"model": {"preset": "llama2-7b"}, "system": {"preset": "dgx-a100-80gb"},
        "parallel": {"tp": 1, "pp": 2, "dp": 4, LAYOUT}, "training": {"global_batch": 64}})";
    auto with = [&](const std::string& layout) {
        std::string j = base;
        j.replace(j.find("LAYOUT"), 6, layout);
        return j;
    };
    const Scenario front = testing::scenario(with(R"("pipeline_layout": "Et*24|t*8L")"));
    const Scenario back = testing::scenario(with(R"("pipeline_layout": "Et*8|t*24L")"));
    const Scenario even = testing::scenario(with(R"("pipeline_split": "even")"));
    EXPECT_EQ(front.parallel.split, PipelineSplit::layout);
    const TrainResult f = evaluate_training({front.model, front.system, front.training}, front.parallel);
    const TrainResult b = evaluate_training({back.model, back.system, back.training}, back.parallel);
    const TrainResult e = evaluate_training({even.model, even.system, even.training}, even.parallel);
    EXPECT_EQ(f.slowest_stage, 0);
    EXPECT_EQ(b.slowest_stage, 1);
    EXPECT_GT(f.step_time_s, e.step_time_s);
    EXPECT_GT(b.step_time_s, e.step_time_s);
    EXPECT_GT(f.memory.weights_bytes, 1.4 * e.memory.weights_bytes);
    // Every GPU is looked at, not only the ends and the first middle one: on pp 4 the third holds most.
    std::string four = with(R"("pipeline_layout": "Et*6|t*6|t*14|t*6L")");
    four.replace(four.find("\"pp\": 2, \"dp\": 4"), 16, "\"pp\": 4, \"dp\": 2");
    const Scenario third = testing::scenario(four);
    EXPECT_EQ(evaluate_training({third.model, third.system, third.training}, third.parallel).slowest_stage, 2);
    // The report spells the layout back; what no framework runs is refused, naming the field.
    EXPECT_EQ(parallel_json(front.parallel)["pipeline_layout"], "Et*24|t*8L");
    for (const char* bad : {R"("pipeline_layout": "Et*24|t*7L")", R"("pipeline_layout": "Et*16|t*8|t*8L")",
                            R"("pipeline_layout": "Et*16|t*16mL")", R"("pipeline_layout": "Et*16|t*16L", "pipeline_split": "even")",
                            R"("pipeline_layout": "Et*16|t*16L", "first_stage_layers": 16)"})
        EXPECT_NE(refusal(with(bad)).find("parallel.pipeline_layout"), std::string::npos) << bad;
}

// A layout that slips past the scenario's checks (here 32 layers on pp 2 x vp 3, which no split
// of the 6 chunks carries, handed straight to the model) is costed as the even split without
// interleaving, 16 layers per GPU: finite, never a crash, the even split's weights.
TEST(Stages, AnUncheckedLayoutFallsBackToTheEvenSplit) {
    const Scenario even = testing::scenario(R"({"model": {"preset": "llama2-7b"}, "system": {"preset": "dgx-a100-80gb"},
        "parallel": {"tp": 1, "pp": 2, "dp": 4}, "training": {"global_batch": 64}})");
    ParallelConfig p = even.parallel;
    p.vp = 3;
    ASSERT_FALSE(split_layers(32, p).ok());
    const TrainResult r = evaluate_training({even.model, even.system, even.training}, p);
    const TrainResult e = evaluate_training({even.model, even.system, even.training}, even.parallel);
    EXPECT_TRUE(std::isfinite(r.step_time_s));
    EXPECT_GT(r.step_time_s, 0.0);
    EXPECT_DOUBLE_EQ(r.memory.weights_bytes, e.memory.weights_bytes);
}

// Properties on published models. More pipeline stages never raise the peak: a stage's weights
// shrink with 1/pp while 1F1B keeps about the same activations (pp micro-batches of L/pp layers).
TEST(StageProperties, PeakMemoryNeverGrowsWithMorePipelineStages) {
    for (const std::string preset : {"gpt3-175b", "llama2-70b"}) {
        const Scenario base = testing::scenario(R"({"model": {"preset": ")" + preset + R"("}, "system": {"preset": "dgx-a100-80gb"},
            "parallel": {"tp": 8, "sequence_parallel": true, "recompute": "selective"}, "training": {"global_batch": 128}})");
        for (int64_t zero : {0, 1, 3}) {
            double previous = std::numeric_limits<double>::infinity();
            for (int64_t pp = 1; pp <= base.model.layers; ++pp) {
                if (base.model.layers % pp != 0) continue;
                ParallelConfig p = base.parallel;
                p.pp = pp;
                p.dp = 2;
                p.zero = zero;
                const double peak = evaluate_training({base.model, base.system, base.training}, p).memory.peak_bytes_per_gpu;
                EXPECT_LE(peak, previous * (1 + 1e-12)) << preset << " zero " << zero << " pp " << pp;
                previous = peak;
            }
        }
    }
}

// On a model whose layers divide evenly, no uneven split is faster: some GPU then holds more than
// L/pp layers (or as many plus an end of the model). GPT-3 175B on pp 8: every explicit first/last
// pair Megatron accepts; on pp 2 the embedding/loss accounting (98 slots: 48 layers and an end on
// each GPU, the same stages).
TEST(StageProperties, UnevenSplitNeverFasterThanEven) {
    const Scenario s = testing::scenario(R"({"model": {"preset": "gpt3-175b"}, "system": {"preset": "dgx-a100-80gb"},
        "parallel": {"tp": 8, "pp": 8, "dp": 4, "sequence_parallel": true, "recompute": "selective", "zero": 1},
        "training": {"global_batch": 256}})");
    const TrainContext c{s.model, s.system, s.training};
    ParallelConfig even = s.parallel;
    even.split = PipelineSplit::even;
    const double t_even = evaluate_training(c, even).step_time_s;
    int tried = 0;
    for (int64_t f = 0; f <= 24; ++f)
        for (int64_t l = 0; l <= 24; ++l) {
            if (f == 0 && l == 0) continue;
            ParallelConfig p = even;
            p.split = PipelineSplit::first_last;
            p.first_stage_layers = f;
            p.last_stage_layers = l;
            if (!split_layers(96, p).ok()) continue;
            ++tried;
            EXPECT_GE(evaluate_training(c, p).step_time_s, t_even * (1 - 1e-12)) << "first " << f << " last " << l;
        }
    EXPECT_GT(tried, 10);
    ParallelConfig two = even;
    two.pp = 2;
    two.dp = 16;
    const double t_two = evaluate_training(c, two).step_time_s;
    two.split = PipelineSplit::embedding_loss;
    EXPECT_GE(evaluate_training(c, two).step_time_s, t_two * (1 - 1e-12));
}

}  // namespace
}  // namespace sm
