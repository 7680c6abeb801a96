// The layout search on spaces small enough to enumerate by hand: the counts it reports, memory
// pruning at the capacity (a layout that fits by a hair is costed, one a byte over is not), and
// each objective's order.
#include <gtest/gtest.h>

#include <algorithm>

#include "search/search.hpp"
#include "test_helpers.hpp"

namespace sm {
namespace {

using testing::round_inference_system;
using testing::tiny_llama;

TrainingSpec training(int64_t global_batch) {
    TrainingSpec t;
    t.global_batch = global_batch;
    t.precision = Precision::bf16;
    t.framework_overhead_bytes = 1e6;
    t.comm_buffer_bytes = 0;
    return t;
}

// No context parallelism, one sequence per micro-batch, the given recompute; the rest searched.
LayoutConstraints key_held(Recompute rc) {
    LayoutConstraints f;
    f.cp = 1;
    f.tp_rows = 1;  // 1D tensor parallelism (SUMMA grids: CountsOfAHandEnumeratedSpace)
    f.microbatch = 1;
    f.recompute = rc;
    return f;
}

SearchOptions options(int64_t gpus, size_t top_k) {
    SearchOptions o;
    o.gpus = gpus;
    o.top_k = top_k;
    return o;
}

// Stage parameters of the toy model in training (every weight, norms included, split by tp):
// per layer 36,992; embedding 6,400; head 6,400 + final norm 64.
//   tp 1 pp 1: 2 x 36,992 + 12,864 = 86,848     tp 1 pp 2: 36,992 + 6,464 = 43,456 (last stage)
//   tp 2 pp 1: 86,848 / 2 = 43,424 + 32 = 43,456  tp 2 pp 2: 18,496 + 3,264 = 21,760
// Without ZeRO each parameter holds bf16 weight 2 + fp32 gradient 4 + Adam 12 = 18 bytes.
TEST(SearchSpace, CountsOfAHandEnumeratedSpace) {
    const ModelSpec m = [] {
        ModelSpec x = tiny_llama(2);
        x.seq_len = 16;
        return x;
    }();
    SystemSpec sys = round_inference_system();
    sys.scale_up_domain = 2;
    sys.accel.memory_bytes = 2e6;  // the 1 MB allowance + 1 MB: only tp 1 pp 1 (1.56 MB of state) overflows
    const TrainingSpec t = training(4);
    LayoutConstraints f = key_held(Recompute::none);
    f.zero = 0;
    f.sequence_parallel = false;
    f.order = RankOrder::tp_cp_dp;  // Megatron's; the other orders at the end
    const SearchOptions o = options(4, 100);
    const SearchResult r = search_layouts({m, sys, t}, f, o);
    // (tp, pp, dp): (1,1,4) (1,2,2) (2,1,2) (2,2,1) (4,1,1); pp 2 at tp 4 leaves half a GPU. Two
    // layers also cut Megatron's way, embedding and loss as one slot each (4 slots): pp 2 x vp 2
    // (chunks: embedding | layer 0 | layer 1 | loss) at tp 1 and 2, and pp 4 at tp 1 (GPU 0 the
    // embedding alone, GPUs 1 and 2 a layer each, GPU 3 the head): 8 layouts.
    EXPECT_EQ(r.stats.candidates, 8);
    EXPECT_EQ(r.stats.pruned_domain, 1);     // tp 4 spans two 2-GPU domains
    EXPECT_EQ(r.stats.pruned_memory, 1);     // tp 1 pp 1: 18 x 86,848 + 1e6 = 2,563,264 B > 2e6
    // 18 x 43,456 + 1e6 = 1,782,208 B (pp 2, either vp: the last GPU holds a layer and the head),
    // 18 x 36,992 + 1e6 (pp 4: a layer) and 1,391,680 B (tp 2) fit.
    EXPECT_EQ(r.stats.evaluated, 6);
    EXPECT_EQ(r.stats.layer_costings, 2);    // one per tensor-parallel degree
    EXPECT_EQ(r.stats.feasible, 6);
    ASSERT_EQ(r.best.size(), 6u);
    for (const SearchHit& h : r.best) {
        EXPECT_FALSE(h.layout.tp == 1 && h.layout.pp == 1);
        EXPECT_EQ(h.layout.tp * h.layout.pp * h.layout.dp, 4);
        EXPECT_EQ(h.layout.split, h.layout.pp * h.layout.vp == 4 ? PipelineSplit::embedding_loss : PipelineSplit::even);
    }
    // At a memory of exactly tp 1 pp 1's fixed 2,563,264 B the bound does not prune it: it is
    // costed, and its activations leave it short (6 + 1 costed, still 6 fit).
    SystemSpec edge_sys = sys;
    edge_sys.accel.memory_bytes = 2563264;
    const SearchResult edge = search_layouts({m, edge_sys, t}, f, o);
    EXPECT_EQ(edge.stats.pruned_memory, 0);
    EXPECT_EQ(edge.stats.evaluated, 7);
    EXPECT_EQ(edge.stats.feasible, 6);
    // Sequence parallelism free: a second copy of each tp > 1 layout (at tp 1 it is the same
    // layout and is not counted twice): 8 + 4 = 12 layouts, 2 of them at tp 4.
    f.sequence_parallel.reset();
    const SearchResult sp = search_layouts({m, sys, t}, f, o);
    EXPECT_EQ(sp.stats.candidates, 12);
    EXPECT_EQ(sp.stats.pruned_domain, 2);
    EXPECT_EQ(sp.stats.pruned_memory, 1);
    EXPECT_EQ(sp.stats.evaluated, 9);
    EXPECT_EQ(sp.stats.layer_costings, 3);  // tp 1; tp 2 without and with SP
    // SUMMA grids free too (they imply SP): tp 2 as 2 x 1 (the three tp 2 layouts again), tp 4 as
    // 2 x 2 and as 4 x 1 (pp 1, beyond the 2-GPU domain): 12 + 5 layouts; the 2 x 1 grid is its
    // own layer costing; 4 heads, 2 K/V heads, FFN 128 and seq 16 admit every grid.
    f.tp_rows.reset();
    const SearchResult grids = search_layouts({m, sys, t}, f, o);
    EXPECT_EQ(grids.stats.candidates, 17);
    EXPECT_EQ(grids.stats.pruned_domain, 4);
    EXPECT_EQ(grids.stats.evaluated, 12);
    EXPECT_EQ(grids.stats.layer_costings, 4);
    f.tp_rows = 1;
    // Micro-batches of 2: dp 4 leaves one sequence per replica, so tp 1 pp 1 drops out.
    f.sequence_parallel = false;
    f.microbatch = 2;
    const SearchResult mb2 = search_layouts({m, sys, t}, f, o);
    EXPECT_EQ(mb2.stats.candidates, 7);
    EXPECT_EQ(mb2.stats.pruned_memory, 0);
    // Every rank order: only tp 2 x dp 2 (pp 1) is placed differently by some of them. On domains
    // of 2, dp-first orders put the dp pair in a domain and the tp pair across two; tp 1 or dp 1
    // leaves one order. 8 + 1 = 9 layouts, the new one costed with its own layer costs (tp across).
    f.microbatch = 1;
    f.order.reset();
    const SearchResult orders = search_layouts({m, sys, t}, f, o);
    EXPECT_EQ(orders.stats.candidates, 9);
    EXPECT_EQ(orders.stats.pruned_domain, 1);
    EXPECT_EQ(orders.stats.pruned_memory, 1);
    EXPECT_EQ(orders.stats.evaluated, 7);
    EXPECT_EQ(orders.stats.layer_costings, 3);
    EXPECT_EQ(std::count_if(orders.best.begin(), orders.best.end(),
                            [](const SearchHit& h) { return h.layout.order != RankOrder::tp_cp_dp; }),
              1);
}

// Holding vp 2 on the hand-enumerated space: an interleaving needs a pipeline, so only pp 2 x vp 2
// (the embedding | layer 0 | layer 1 | loss chunks) at tp 1 and tp 2 remain; pp 1 is not costed as
// "vp 2" (it would be the pp 1 layouts again under another name), and pp 4 x vp 2 has 8 chunks for
// 4 slots.
TEST(SearchSpace, AHeldInterleavingNeedsAPipeline) {
    ModelSpec m = tiny_llama(2);
    m.seq_len = 16;
    SystemSpec sys = round_inference_system();
    sys.scale_up_domain = 2;
    LayoutConstraints f = key_held(Recompute::none);
    f.zero = 0;
    f.sequence_parallel = false;
    f.order = RankOrder::tp_cp_dp;
    f.vp = 2;
    const SearchResult r = search_layouts({m, sys, training(4)}, f, options(4, 100));
    EXPECT_EQ(r.stats.candidates, 2);
    ASSERT_EQ(r.best.size(), 2u);
    for (const SearchHit& h : r.best) {
        EXPECT_EQ(h.layout.pp, 2);
        EXPECT_EQ(h.layout.vp, 2);
        EXPECT_EQ(h.layout.split, PipelineSplit::embedding_loss);
    }
}

// Nothing fits: the last progress report says there is no best (and a score of 0, not infinity).
TEST(SearchSpace, ProgressWithoutAFeasibleLayout) {
    ModelSpec m = tiny_llama(2);
    m.seq_len = 16;
    SystemSpec sys = round_inference_system();
    sys.accel.memory_bytes = 1e6 + 1000;  // the allowance alone is 1e6 B
    const TrainingSpec t = training(4);
    SearchOptions o;
    o.gpus = 4;
    SearchProgress last;
    last.have_best = true;
    last.best_score = -1;
    const SearchResult r = search_layouts({m, sys, t}, {}, o, [&](const SearchProgress& p) { last = p; });
    EXPECT_TRUE(r.best.empty());
    EXPECT_EQ(r.stats.feasible, 0);
    EXPECT_FALSE(last.have_best);
    EXPECT_EQ(last.best_score, 0.0);
    EXPECT_EQ(last.done, last.total);
    EXPECT_GT(last.total, 0);
}

// Equal scores are ordered by the layout tuple: on one GPU the ZeRO stages are the same layout
// in all but name (nothing to shard over), so they tie and come out ZeRO 0, 1, 2, 3.
TEST(SearchSpace, TiesComeOutInLayoutOrder) {
    ModelSpec m = tiny_llama(2);
    m.seq_len = 16;
    const SystemSpec sys = round_inference_system();
    const TrainingSpec t = training(1);
    LayoutConstraints f = key_held(Recompute::none);
    f.tp = 1;
    f.pp = 1;
    const SearchResult r = search_layouts({m, sys, t}, f, options(1, 10));
    ASSERT_EQ(r.best.size(), 4u);
    for (size_t i = 0; i < 4; ++i) {
        EXPECT_EQ(r.best[i].layout.zero, static_cast<int64_t>(i));
        EXPECT_EQ(r.best[i].score, r.best[0].score);
    }
    EXPECT_TRUE(layout_before(r.best[0].layout, r.best[1].layout));
    EXPECT_FALSE(layout_before(r.best[1].layout, r.best[0].layout));
    EXPECT_FALSE(layout_before(r.best[1].layout, r.best[1].layout));
}

// One tp 1 pp 1 dp 2 layout per ZeRO stage of a 64-layer toy: P = 64 x 36,992 + 12,864 =
// 2,380,352 parameters. Bytes per parameter over dp 2: ZeRO 0: 2 + 4 + 12 = 18; ZeRO 1: 2 + 4 +
// 6 = 12; ZeRO 2: 2 + 2 + 6 = 10; ZeRO 3: 1 + 2 + 6 = 9. Activations under full recompute
// (16 tokens) are a few hundred kB.
struct HairSpace {
    ModelSpec model = [] {
        ModelSpec x = tiny_llama(64);
        x.seq_len = 16;
        return x;
    }();
    SystemSpec system = round_inference_system();
    TrainingSpec train = training(2);
    static constexpr double kParams = 64 * 36992.0 + 12864;
    static constexpr double kZero1Static = 12 * kParams + 1e6;

    SearchResult run() const {
        LayoutConstraints f = key_held(Recompute::full);
        f.tp = 1;
        f.pp = 1;
        f.sequence_parallel = false;
        return search_layouts({model, system, train}, f, options(2, 10));
    }
};

bool has_zero(const SearchResult& r, int64_t z) {
    return std::any_of(r.best.begin(), r.best.end(), [z](const SearchHit& h) { return h.layout.zero == z; });
}

TEST(SearchSpace, LayoutThatFitsByAHairIsCosted) {
    HairSpace s;
    // 2 MiB above ZeRO 1's weights, gradients, optimizer state and allowance (29.56 MB).
    s.system.accel.memory_bytes = HairSpace::kZero1Static + 2 * 1048576.0;
    const SearchResult r = s.run();
    EXPECT_EQ(r.stats.candidates, 4);
    EXPECT_EQ(r.stats.pruned_memory, 1);  // ZeRO 0: 6 x P = 14.3 MB more
    EXPECT_EQ(r.stats.evaluated, 3);
    EXPECT_EQ(r.stats.feasible, 3);
    EXPECT_TRUE(has_zero(r, 1));
    EXPECT_FALSE(has_zero(r, 0));
    for (const SearchHit& h : r.best) EXPECT_LE(h.result.memory.peak_bytes_per_gpu, s.system.accel.memory_bytes);
}

TEST(SearchSpace, LayoutOneByteOverIsPruned) {
    HairSpace s;
    s.system.accel.memory_bytes = HairSpace::kZero1Static - 1;
    const SearchResult r = s.run();
    EXPECT_EQ(r.stats.pruned_memory, 2);  // ZeRO 0 and 1
    EXPECT_EQ(r.stats.evaluated, 2);
    EXPECT_FALSE(has_zero(r, 1));
    EXPECT_TRUE(has_zero(r, 2));  // 2 x P = 4.8 MB less
}

TEST(SearchSpace, ObjectiveScores) {
    TrainResult r;
    r.step_time_s = 2.5;
    r.tokens_per_s_per_gpu = 300;
    r.mfu = 0.4;
    // Lower is better: time as is, throughput and MFU negated.
    EXPECT_EQ(objective_score(Objective::step_time, r), 2.5);
    EXPECT_EQ(objective_score(Objective::tokens_per_s_per_gpu, r), -300.0);
    EXPECT_EQ(objective_score(Objective::mfu, r), -0.4);
    for (Objective o : {Objective::step_time, Objective::tokens_per_s_per_gpu, Objective::mfu})
        EXPECT_EQ(parse_objective(to_string(o)), o);
    EXPECT_EQ(to_string(Objective::mfu), "mfu");
    EXPECT_EQ(to_string(Objective::tokens_per_s_per_gpu), "tokens_per_s_per_gpu");
    EXPECT_EQ(to_string(Objective::step_time), "step_time");
    EXPECT_FALSE(parse_objective("latency").has_value());
}

// Every feasible layout of a small space under each objective: the search's list is the
// whole set, best first, and its winner is the argmin / argmax taken here.
TEST(SearchSpace, EachObjectiveRanksTheWholeSpace) {
    ModelSpec m = tiny_llama(4);
    m.seq_len = 64;
    const SystemSpec sys = round_inference_system();
    const TrainingSpec t = training(8);
    LayoutConstraints f;
    f.cp = 1;
    f.zero = 1;
    f.sequence_parallel = false;
    SearchOptions o;
    o.gpus = 4;
    o.top_k = 1000;
    const double tokens = 8.0 * 64;
    for (Objective obj : {Objective::step_time, Objective::tokens_per_s_per_gpu, Objective::mfu}) {
        SCOPED_TRACE(std::string(to_string(obj)));
        o.objective = obj;
        const SearchResult r = search_layouts({m, sys, t}, f, o);
        ASSERT_GT(r.best.size(), 10u);
        ASSERT_EQ(static_cast<int64_t>(r.best.size()), r.stats.feasible);
        double lo = 1e300, hi = -1e300;
        for (const SearchHit& h : r.best) {
            const double v = obj == Objective::step_time             ? h.result.step_time_s
                             : obj == Objective::tokens_per_s_per_gpu ? tokens / h.result.step_time_s / 4
                                                                      : h.result.mfu;
            lo = std::min(lo, v);
            hi = std::max(hi, v);
        }
        ASSERT_LT(lo, hi);  // a sign flip would crown a different layout
        const TrainResult& w = r.best.front().result;
        if (obj == Objective::step_time) {
            EXPECT_EQ(w.step_time_s, lo);
        } else if (obj == Objective::tokens_per_s_per_gpu) {
            EXPECT_DOUBLE_EQ(w.tokens_per_s_per_gpu, hi);
        } else {
            EXPECT_EQ(w.mfu, hi);
        }
        for (size_t i = 1; i < r.best.size(); ++i) EXPECT_LE(r.best[i - 1].score, r.best[i].score);
    }
}

}  // namespace
}  // namespace sm
