// search --framework and the folding of twins: the layouts a framework cannot launch never come
// back, and the top K lists distinct layouts. (--memory-headroom: python/tests/test_api.py, at the
// command line that applies it.)
#include <gtest/gtest.h>

#include "io/scenario.hpp"
#include "search/frameworks.hpp"
#include "search/search.hpp"
#include "test_helpers.hpp"

namespace sm {
namespace {
using namespace testing;

// Llama 2 13B cut to 8 layers at 8K tokens on 16 A100s: every axis (SUMMA, cp kinds, ZeRO,
// interleaving, orders across 4-GPU domains) has room.
Scenario small_space() {
    return scenario(R"({"model": {"preset": "llama2-13b", "layers": 8, "seq_len": 8192},
                        "system": {"preset": "dgx-a100-40gb", "scale_up": {"domain_gpus": 4}},
                        "training": {"global_batch": 16, "precision": "bf16"}})",
                    Purpose::search);
}
SearchOptions every_layout() {
    SearchOptions o;
    o.gpus = 16;
    o.top_k = 100000;
    o.threads = 2;
    return o;
}
SearchResult searched(const LayoutConstraints& f) {
    const Scenario s = small_space();
    return search_layouts({s.model, s.system, s.training}, f, every_layout());
}

LayoutConstraints under(const char* name) {
    Expected<LayoutConstraints> f = restrict_to(LayoutConstraints{}, *framework_named(name));
    EXPECT_TRUE(f.ok());
    return f.value();
}

TEST(Frameworks, NoLayoutOutsideWhatTheFrameworkShips) {
    const SearchResult all = searched({});
    // The unrestricted space has what the frameworks lack: SUMMA, other orders, Ulysses, ZeRO-1, vp > 1.
    const auto some = [&](const SearchResult& r, auto pred) { return std::any_of(r.best.begin(), r.best.end(), [&](const SearchHit& h) { return pred(h.layout); }); };
    ASSERT_TRUE(some(all, [](const ParallelConfig& p) { return p.tp_rows > 1; }));
    ASSERT_TRUE(some(all, [](const ParallelConfig& p) { return p.order != RankOrder::tp_cp_dp; }));
    ASSERT_TRUE(some(all, [](const ParallelConfig& p) { return p.cp > 1 && p.cp_kind == CpKind::ring; }));
    ASSERT_TRUE(some(all, [](const ParallelConfig& p) { return p.zero == 1; }));
    ASSERT_TRUE(some(all, [](const ParallelConfig& p) { return p.vp > 1; }));
    for (const char* name : {"megatron", "nemo", "torchtitan", "deepspeed"}) {
        SCOPED_TRACE(name);
        const SearchResult r = searched(under(name));
        ASSERT_FALSE(r.best.empty());
        EXPECT_LT(r.stats.candidates, all.stats.candidates);
        for (const SearchHit& h : r.best) {
            EXPECT_EQ(h.layout.tp_rows, 1);
            EXPECT_EQ(h.layout.order, RankOrder::tp_cp_dp);
        }
    }
    // TorchTitan: DDP or FSDP2 (ZeRO 0, 2, 3), never ZeRO-1; no Ulysses.
    for (const SearchHit& h : searched(under("torchtitan")).best) {
        EXPECT_NE(h.layout.zero, 1);
        EXPECT_TRUE(h.layout.cp == 1 || h.layout.cp_kind != CpKind::ulysses);
    }
    // DeepSpeed: plain 1F1B (vp 1) and Ulysses as its only context parallelism.
    const SearchResult ds = searched(under("deepspeed"));
    EXPECT_TRUE(some(ds, [](const ParallelConfig& p) { return p.cp > 1; }));
    for (const SearchHit& h : ds.best) {
        EXPECT_EQ(h.layout.vp, 1);
        EXPECT_TRUE(h.layout.cp == 1 || h.layout.cp_kind == CpKind::ulysses);
    }
}

// DeepSpeed's space is its stages at pp 1 and ZeRO 0 or 1 under its pipeline engine: exactly the
// layouts of the space without that rule less those with pp > 1 and ZeRO 2 or 3, counts included.
TEST(Frameworks, DeepSpeedPipelinesRunZeroZeroOrOne) {
    const LayoutConstraints ds = under("deepspeed");
    LayoutConstraints loose = ds;
    loose.zero_stages_pipelined = 0xF;
    const SearchResult r = searched(ds), all = searched(loose);
    const auto runs = [](const ParallelConfig& p) { return p.pp == 1 || p.zero <= 1; };
    std::vector<SearchHit> kept;
    std::copy_if(all.best.begin(), all.best.end(), std::back_inserter(kept), [&](const SearchHit& h) { return runs(h.layout); });
    ASSERT_LT(kept.size(), all.best.size());  // the space without the rule holds some it cannot run
    ASSERT_EQ(r.best.size(), kept.size());
    for (size_t i = 0; i < kept.size(); ++i) {
        EXPECT_TRUE(r.best[i].layout == kept[i].layout) << i;
        EXPECT_EQ(r.best[i].score, kept[i].score) << i;
    }
    EXPECT_TRUE(std::any_of(r.best.begin(), r.best.end(), [](const SearchHit& h) { return h.layout.pp > 1; }));
    EXPECT_TRUE(std::any_of(r.best.begin(), r.best.end(), [](const SearchHit& h) { return h.layout.zero >= 2; }));
    // Every layout is costed (top K holds them all) or pruned on memory, in both spaces.
    EXPECT_EQ(r.stats.evaluated + r.stats.pruned_memory, r.stats.candidates - r.stats.pruned_domain);
    EXPECT_LT(r.stats.candidates, all.stats.candidates);
    EXPECT_EQ(r.stats.feasible, static_cast<int64_t>(r.best.size()));
    // A layout costed alone is in DeepSpeed's space only with a stage its pipeline engine runs.
    const Scenario s = small_space();
    const TrainContext c{s.model, s.system, s.training};
    const auto piped = std::find_if(r.best.begin(), r.best.end(), [](const SearchHit& h) { return h.layout.pp > 1; });
    ASSERT_NE(piped, r.best.end());
    EXPECT_TRUE(cost_in_space(c, ds, every_layout(), piped->layout).has_value());
    ParallelConfig sharded = piped->layout;
    sharded.zero = 2;
    EXPECT_FALSE(cost_in_space(c, ds, every_layout(), sharded).has_value());
    EXPECT_TRUE(cost_in_space(c, loose, every_layout(), sharded).has_value());
}

TEST(Frameworks, AHeldFieldTheFrameworkLacksIsNamed) {
    LayoutConstraints f;
    f.tp_rows = 2;
    EXPECT_EQ(restrict_to(f, *framework_named("megatron")).error().path, "parallel.tp_rows");
    f = {};
    f.vp = 4;
    EXPECT_EQ(restrict_to(f, *framework_named("deepspeed")).error().path, "parallel.vp");
    EXPECT_TRUE(restrict_to(f, *framework_named("megatron")).ok());
    f = {};
    f.zero = 1;
    EXPECT_EQ(restrict_to(f, *framework_named("torchtitan")).error().path, "parallel.zero");
    f.zero = 2;  // a held stage it ships is kept
    EXPECT_EQ(restrict_to(f, *framework_named("torchtitan")).value().zero, 2);
    f = {};
    f.cp_kind = CpKind::ring;
    f.cp = 4;
    EXPECT_EQ(restrict_to(f, *framework_named("deepspeed")).error().path, "parallel.cp_kind");
    f.cp = 1;  // at cp 1 the kind is no kind
    EXPECT_TRUE(restrict_to(f, *framework_named("deepspeed")).ok());
    f = {};
    f.zero = 2;  // DeepSpeed's pipeline engine runs ZeRO 0 or 1 only
    f.pp = 4;
    EXPECT_EQ(restrict_to(f, *framework_named("deepspeed")).error().path, "parallel.zero");
    EXPECT_TRUE(restrict_to(f, *framework_named("megatron")).ok());
    f.pp = 1;
    EXPECT_TRUE(restrict_to(f, *framework_named("deepspeed")).ok());
    f = {};
    f.order = RankOrder::dp_tp_cp;
    EXPECT_EQ(restrict_to(f, *framework_named("nemo")).error().path, "parallel.order");
    EXPECT_EQ(framework_named("jax"), nullptr);
}

SearchHit hit(double score, int64_t zero, int64_t microbatch = 1, RankOrder order = RankOrder::tp_cp_dp, CpKind kind = CpKind::ring) {
    SearchHit h;
    h.score = score;
    h.layout.tp = 8;
    h.layout.dp = 4;
    h.layout.zero = zero;
    h.layout.microbatch = microbatch;
    h.layout.order = order;
    h.layout.cp = 2;
    h.layout.cp_kind = kind;
    return h;
}

TEST(Frameworks, TwinsFoldIntoTheBetterLayout) {
    // 1.000 and its ZeRO-2 twin at 1.004 (0.4%): one row; the twin at 1.006 (0.6%) is its own row;
    // a micro-batch of 2 at 1.001 is another layout; the order twin at 1.002 and the CP-kind twin
    // at 1.003 fold too.
    const std::vector<SearchHit> hits = {hit(1.000, 1), hit(1.001, 1, 2), hit(1.002, 1, 1, RankOrder::dp_tp_cp),
                                         hit(1.003, 1, 1, RankOrder::tp_cp_dp, CpKind::all_gather), hit(1.004, 2), hit(1.006, 3),
                                         hit(1.5, 0, 4)};
    const std::vector<FoldedHit> f = fold_twins(hits, 10, 0.005);
    ASSERT_EQ(f.size(), 4u);
    EXPECT_EQ(f[0].hit.score, 1.000);
    EXPECT_EQ(f[0].twins, 3);
    EXPECT_EQ(f[1].hit.layout.microbatch, 2);
    EXPECT_EQ(f[1].twins, 0);
    EXPECT_EQ(f[2].hit.score, 1.006);
    EXPECT_EQ(f[3].hit.score, 1.5);
    // k rows at most; twins of a kept row still fold after the list is full.
    const std::vector<FoldedHit> two = fold_twins(hits, 2, 0.005);
    ASSERT_EQ(two.size(), 2u);
    EXPECT_EQ(two[0].twins, 3);
    // Without tolerance nothing folds.
    EXPECT_EQ(fold_twins(hits, 10, 0.0).size(), hits.size());
}

}  // namespace
}  // namespace sm
