// serve-search against brute force: every layout of a small GPU count at every concurrency that
// fits, under latency targets; and the Pareto front's defining property.
#include <gtest/gtest.h>

#include <tuple>

#include "search/serve_search.hpp"
#include "test_helpers.hpp"

namespace sm {
namespace {

struct Space {
    const char* name;
    int64_t gpus;
    double ttft_s, tpot_s;
    double memory_bytes;
    ServeObjective objective = ServeObjective::tokens_per_gpu;
};

class ServeSearchVsBruteForce : public ::testing::TestWithParam<Space> {};

TEST_P(ServeSearchVsBruteForce, SameBest) {
    const Space sp = GetParam();
    const ModelSpec m = testing::tiny_llama(4);  // 4 heads, 2 KV heads, ffn 128, 4 layers
    SystemSpec sys = testing::round_inference_system();
    sys.accel.memory_bytes = sp.memory_bytes;
    sys.energy = testing::round_energy();
    const InferenceSpec s = testing::search_serving_workload();
    const InferContext c{m, sys, s};
    const ServeTargets t{sp.ttft_s, sp.tpot_s, sp.objective};
    const ServeSearchResult r = serve_search(c, sp.gpus, t, 5);

    // Brute force: tp | 4 heads (and then divides or is a multiple of the 2 KV heads, and
    // divides ffn 128), pp | 4 layers, dp the rest; every concurrency 1..4096.
    std::optional<ServeHit> best;
    int64_t layouts = 0;
    for (int64_t tp : {1, 2, 4})
        for (int64_t pp : {1, 2, 4}) {
            if (sp.gpus % (tp * pp) != 0) continue;
            ParallelConfig p;
            p.tp = tp;
            p.pp = pp;
            p.dp = sp.gpus / (tp * pp);
            ++layouts;
            for (int64_t n = 1; n <= 4096; ++n) {
                ServeHit h{p, with_energy(c.system, p, serve_at(c, p, n))};
                if (!meets(h.point, t)) continue;
                if (!best || better(h, *best, sp.objective)) best = h;
            }
        }
    EXPECT_EQ(r.layouts, layouts);
    ASSERT_EQ(best.has_value(), !r.best.empty());
    if (!best) return;
    const ServeHit& got = r.best.front();
    EXPECT_EQ(got.layout.tp, best->layout.tp);
    EXPECT_EQ(got.layout.pp, best->layout.pp);
    EXPECT_EQ(got.point.concurrency, best->point.concurrency);
    EXPECT_DOUBLE_EQ(got.point.output_tokens_per_s_per_gpu, best->point.output_tokens_per_s_per_gpu);
    EXPECT_DOUBLE_EQ(got.point.energy_per_request_j, best->point.energy_per_request_j);
    // The list is in the objective's order (under joules, at 2 MB, the third by joules is not the
    // third by rate: tp1 pp2 at 5.51 mJ/request against tp1 pp1 at C 4, 5.88 mJ).
    for (size_t i = 1; i < r.best.size(); ++i) {
        const ServingPoint& prev = r.best[i - 1].point;
        const ServingPoint& next = r.best[i].point;
        if (sp.objective == ServeObjective::tokens_per_joule) {
            EXPECT_LE(prev.energy_per_request_j, next.energy_per_request_j) << i;
        } else {
            EXPECT_GE(prev.output_tokens_per_s_per_gpu, next.output_tokens_per_s_per_gpu) << i;
        }
    }
}

// Memory 2 MB: a few dozen requests fit (each holds 352 tokens x 4 layers x 2 x 2 KV heads x
// 16 x 2 B = 90 kB of cache at pp 1). Targets from none to tight.
INSTANTIATE_TEST_SUITE_P(SmallSpaces, ServeSearchVsBruteForce,
                         ::testing::Values(Space{"NoTargets", 4, 0, 0, 2e6}, Space{"TpotOnly", 4, 0, 2e-6, 2e6},
                                           Space{"TtftOnly", 2, 3e-6, 0, 2e6}, Space{"Both", 4, 4e-6, 1.5e-6, 2e6},
                                           Space{"Impossible", 2, 1e-12, 1e-12, 2e6}, Space{"Roomy", 4, 0, 0, 8e6},
                                           Space{"JoulesNoTargets", 4, 0, 0, 2e6, ServeObjective::tokens_per_joule},
                                           Space{"JoulesBoth", 4, 4e-6, 1.5e-6, 2e6, ServeObjective::tokens_per_joule},
                                           Space{"JoulesRoomy", 4, 0, 2e-6, 8e6, ServeObjective::tokens_per_joule}),
                         [](const auto& param_info) { return std::string(param_info.param.name); });

// Energy per request with only idle power (100 W): a replica's tp x pp GPUs draw it for the
// request's whole life shared by the C requests in flight, 100 W x tp x pp x e2e / C (Little's
// law), whatever the micro-batching.
TEST(ServeEnergy, IdlePowerOverTheRequestsInFlight) {
    const ModelSpec m = testing::tiny_llama(4);
    SystemSpec sys = testing::round_inference_system();
    sys.energy.tdp_w = 1000;
    sys.energy.idle_w = 100;
    const InferenceSpec s = testing::fp16_workload(1, 300, 40);
    for (const auto& [tp, pp, dp] : {std::tuple{2, 1, 2}, std::tuple{1, 2, 1}, std::tuple{2, 2, 1}}) {
        ParallelConfig p;
        p.tp = tp;
        p.pp = pp;
        p.dp = dp;
        const ServingPoint pt = with_energy(sys, p, serve_at({m, sys, s}, p, 8));
        EXPECT_NEAR(pt.energy_per_request_j, 100.0 * tp * pp * pt.e2e_latency_s / 8.0, 1e-12 * pt.energy_per_request_j)
            << tp << " " << pp << " " << dp;
    }
    sys.energy = {};  // no figures: no energy
    EXPECT_EQ(with_energy(sys, ParallelConfig{}, serve_at({m, sys, s}, ParallelConfig{}, 8)).energy_per_request_j, 0.0);
}

TEST(ServeEnergy, ObjectiveOrdersByJoules) {
    ServeHit frugal, fast;
    frugal.point.output_tokens_per_s_per_gpu = 100;
    frugal.point.energy_per_request_j = 2;
    fast.point.output_tokens_per_s_per_gpu = 200;
    fast.point.energy_per_request_j = 3;
    EXPECT_TRUE(better(fast, frugal));
    EXPECT_FALSE(better(frugal, fast));
    EXPECT_TRUE(better(frugal, fast, ServeObjective::tokens_per_joule));
    EXPECT_FALSE(better(fast, frugal, ServeObjective::tokens_per_joule));
    // Equal energy: the faster first.
    fast.point.energy_per_request_j = 2;
    EXPECT_TRUE(better(fast, frugal, ServeObjective::tokens_per_joule));
}

TEST(ServeSearch, TargetsAreInclusive) {
    // A point exactly at a target meets it; a hair below does not; 0 means no target.
    const ModelSpec m = testing::tiny_llama(4);
    const SystemSpec sys = testing::round_inference_system();
    const InferenceSpec s = testing::fp16_workload(1, 300, 40);
    const ServingPoint pt = serve_at({m, sys, s}, ParallelConfig{}, 8);
    ASSERT_TRUE(pt.fits_in_memory);
    EXPECT_TRUE(meets(pt, {pt.ttft_s, pt.tpot_s}));
    EXPECT_TRUE(meets(pt, {pt.ttft_s, 0}));
    EXPECT_TRUE(meets(pt, {0, pt.tpot_s}));
    EXPECT_TRUE(meets(pt, {0, 0}));
    EXPECT_FALSE(meets(pt, {pt.ttft_s * (1 - 1e-9), 0}));
    EXPECT_FALSE(meets(pt, {0, pt.tpot_s * (1 - 1e-9)}));
}

// The 4-layer toy on the round machine with 4 MB of memory (a few dozen requests at pp 1), 300
// tokens in / 40 out, default prompt chunks, no framework memory.
struct FourMegabytes {
    ModelSpec m = testing::tiny_llama(4);
    SystemSpec sys = [] {
        SystemSpec r = testing::round_inference_system();
        r.accel.memory_bytes = 4e6;
        return r;
    }();
    InferenceSpec s = [] {
        InferenceSpec r = testing::fp16_workload(1, 300, 40);
        r.framework_overhead_bytes = 0;
        return r;
    }();
};

TEST(ServeSearch, DenseModelsRunOneExpertGroup) {
    // A dense model has no experts to spread: every layout the search returns has ep 1.
    const FourMegabytes t;
    const ServeSearchResult r = serve_search({t.m, t.sys, t.s}, 4, {0, 0}, 5);
    ASSERT_FALSE(r.best.empty());
    ASSERT_FALSE(r.pareto.empty());
    for (const ServeHit& h : r.best) EXPECT_EQ(h.layout.ep, 1);
    for (const ServeHit& h : r.pareto) EXPECT_EQ(h.layout.ep, 1);
}

TEST(ServeSearch, ProgressCountsEveryLayoutOnce) {
    const FourMegabytes t;
    std::vector<std::pair<int64_t, int64_t>> calls;
    const ServeSearchResult r = serve_search({t.m, t.sys, t.s}, 4, {0, 0}, 5, [&](int64_t done, int64_t total) { calls.emplace_back(done, total); });
    ASSERT_GT(r.layouts, 1);
    ASSERT_EQ(calls.size(), static_cast<size_t>(r.layouts));
    for (size_t i = 0; i < calls.size(); ++i) EXPECT_EQ(calls[i], std::make_pair(static_cast<int64_t>(i) + 1, r.layouts));
}

// Targets nothing meets: no best, and the front holds only real steady states (no concurrency 0
// slipped in for the target that no concurrency meets).
TEST(ServeSearch, ImpossibleTargetsLeaveOnlyRealPoints) {
    const FourMegabytes t;
    const ServeSearchResult r = serve_search({t.m, t.sys, t.s}, 4, {1e-12, 1e-12}, 5);
    EXPECT_TRUE(r.best.empty());
    ASSERT_FALSE(r.pareto.empty());
    for (const ServeHit& h : r.pareto) {
        EXPECT_GE(h.point.concurrency, 1);
        EXPECT_GT(h.point.output_tokens_per_s_per_gpu, 0);
    }
    // No more steady states than without targets (where the largest meeting them is the limit,
    // already tried): a target no concurrency meets adds none.
    const ServeSearchResult free = serve_search({t.m, t.sys, t.s}, 4, {}, 5);
    EXPECT_LE(r.points, free.points);
}

TEST(ServeSearch, ParetoFrontIsNotDominated) {
    const FourMegabytes t;
    const ServeSearchResult r = serve_search({t.m, t.sys, t.s}, 4, {}, 5);
    ASSERT_GE(r.pareto.size(), 2u);
    for (size_t i = 0; i < r.pareto.size(); ++i)
        for (size_t j = 0; j < r.pareto.size(); ++j) {
            if (i == j) continue;
            const ServingPoint& a = r.pareto[i].point;
            const ServingPoint& b = r.pareto[j].point;
            // b dominates a: at least as good on both, better on one.
            const bool at_least = b.output_tokens_per_s_per_gpu >= a.output_tokens_per_s_per_gpu &&
                                  b.output_tokens_per_s_per_user >= a.output_tokens_per_s_per_user;
            const bool better_on_one = b.output_tokens_per_s_per_gpu > a.output_tokens_per_s_per_gpu ||
                                       b.output_tokens_per_s_per_user > a.output_tokens_per_s_per_user;
            EXPECT_FALSE(at_least && better_on_one) << i << " dominated by " << j;
        }
}

// The order of hits, key by key: more tokens/s/GPU, then lower TTFT, then fewer GPUs per
// replica (tp x pp), then lower tp, lower ep, and last the lower concurrency.
TEST(ServeSearch, BetterOrdersEveryTieBreak) {
    ServeHit a;
    a.layout.tp = 2;
    a.layout.pp = 2;
    a.layout.ep = 2;
    a.point.output_tokens_per_s_per_gpu = 100;
    a.point.ttft_s = 0.5;
    a.point.concurrency = 8;
    auto check = [&](const ServeHit& worse, const char* what) {
        EXPECT_TRUE(better(a, worse)) << what;
        EXPECT_FALSE(better(worse, a)) << what;
    };
    ServeHit b = a;
    b.point.output_tokens_per_s_per_gpu = 99;
    check(b, "tokens/s/GPU");
    b = a;
    b.point.ttft_s = 0.6;
    check(b, "TTFT");
    b = a;
    b.layout.pp = 4;
    check(b, "GPUs per replica");
    b = a;
    b.layout.tp = 4;
    b.layout.pp = 1;
    check(b, "tp");
    b = a;
    b.layout.ep = 4;
    check(b, "ep");
    b = a;
    b.point.concurrency = 9;
    check(b, "concurrency");
    EXPECT_FALSE(better(a, a));
}

TEST(ServeSearch, LayoutsOfLlama70bOnEightGpus) {
    // tp in {1, 2, 4, 8} (64 heads, 8 KV heads, ffn 28,672), pp | 80 layers and | 8 / tp:
    // tp 1: pp 1, 2, 4, 8; tp 2: 1, 2, 4; tp 4: 1, 2; tp 8: 1 -> 10 layouts.
    EXPECT_EQ(serving_layouts({testing::model_preset("llama3-70b"), testing::system_preset("dgx-h100"), {}}, 8).size(), 10u);
}

TEST(ServeSearch, ExpertParallelismDividesTheExperts) {
    // Mixtral's layout with 6 experts on 4 GPUs: ep must divide dp and the 6 experts.
    // tp 1: pp 1 (dp 4: ep 1, 2; not 4), pp 2 (dp 2: ep 1, 2), pp 4 (ep 1); tp 2: pp 1 (dp 2:
    // ep 1, 2), pp 2 (ep 1); tp 4: ep 1 -> 9 layouts split like the dense FFN. Spread over the
    // tensor-parallel GPUs (etp x ep = tp): tp 2 pp 1 and tp 2 pp 2 with etp 1 ep 2, tp 4 with
    // etp 2 ep 2 (etp 1 would need ep 4) -> 12. Split wider than attention over r replicas
    // (etp = tp x r, ep = dp / r): tp 1 pp 1 (r 2: etp 2 ep 2; r 4: etp 4 ep 1), tp 1 pp 2
    // (etp 2 ep 1), tp 2 pp 1 (etp 4 ep 1) -> 16, none with ep 4.
    ModelSpec m = testing::model_preset("mixtral-8x7b");
    m.moe.experts = 6;
    const std::vector<ParallelConfig> ls = serving_layouts({m, testing::system_preset("dgx-h100"), {}}, 4);
    EXPECT_EQ(ls.size(), 16u);
    int folded = 0, widened = 0;
    for (const ParallelConfig& p : ls) {
        EXPECT_NE(p.ep, 4);
        if (p.expert_tp() < p.tp) {
            ++folded;
            EXPECT_EQ(p.expert_tp() * p.ep, p.tp);
        }
        if (p.expert_tp() > p.tp) {
            ++widened;
            EXPECT_EQ(p.expert_tp() * p.ep, p.tp * p.dp);
        }
    }
    EXPECT_EQ(folded, 3);
    EXPECT_EQ(widened, 4);
}

}  // namespace
}  // namespace sm
