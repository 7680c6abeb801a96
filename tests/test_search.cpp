// Layout search against brute force: every layout `scalemodel train` accepts, evaluated one
// by one with evaluate_training, must give the same best layouts and the same counts.
#include <gtest/gtest.h>

#include <set>

#include <optional>
#include <random>

#include "io/report.hpp"
#include "io/scenario.hpp"
#include "search/search.hpp"
#include "test_helpers.hpp"

namespace sm {
namespace {

Json doc_of(const std::string& text) {
    auto d = parse_scenario_text(text, "test");
    EXPECT_TRUE(d.ok()) << (d.ok() ? "" : d.error().message());
    return d.value();
}

Scenario scenario_of(const Json& doc, Purpose purpose) {
    auto s = build_scenario(doc, purpose);
    EXPECT_TRUE(s.ok()) << (s.ok() ? "" : s.error().message());
    return s.value();
}

std::vector<int64_t> divisors_of(int64_t n) {
    std::vector<int64_t> d;
    for (int64_t i = 1; i <= n; ++i)
        if (n % i == 0) d.push_back(i);
    return d;
}

struct Brute {
    std::vector<SearchHit> hits;  // every feasible layout, best first
    int64_t valid = 0;            // layouts `train` accepts
    int64_t feasible = 0;
};

// One layout `train` accepts: its tensor degree decides whether the domain-bound search keeps it.
struct BruteLayout {
    int64_t tp = 1;
    std::optional<SearchHit> hit;  // set when it fits in memory
};

// Every layout of `gpus` GPUs that build_scenario(Purpose::train) accepts, evaluated alone
// (SUMMA grids of every tp included: build_scenario decides which it takes).
// Sequence parallelism at tp 1 is the same layout as without it and is counted once; so are the
// context-parallel kinds at cp 1 (ring), and rank orders that place every group as an earlier
// order of kRankOrders does (the default, tp-cp-dp-pp, first).
std::vector<BruteLayout> brute_force_layouts(const Json& doc, int64_t gpus, Objective obj) {
    const Scenario base = scenario_of(doc, Purpose::search);
    const ModelSpec& m = base.model;
    const std::vector<int64_t> eps = m.moe.enabled() ? divisors_of(m.moe.experts) : std::vector<int64_t>{1};
    auto fixed = [&](const char* k) { return doc.contains("parallel") && doc.at("parallel").contains(k); };
    // The presets resolved once: parsing them again for every layout cost most of the test's time.
    Json resolved = doc;
    resolved["model"] = base.resolved["model"];
    resolved["system"] = base.resolved["system"];
    std::vector<BruteLayout> out;
    for (int64_t tp : divisors_of(gpus))
      for (int64_t rows : divisors_of(tp))  // 1: Megatron's 1D tensor parallelism; > 1: SUMMA grids
        for (int64_t pp : divisors_of(gpus / tp))
            for (int64_t cp : divisors_of(gpus / tp / pp))
                for (int64_t ep : eps)
                    for (RankOrder order : kRankOrders)
                        for (CpKind cp_kind : kCpKinds) {
                            if (cp == 1 && cp_kind != CpKind::ring && !fixed("cp_kind")) continue;
                            ParallelConfig p;
                            p.tp = tp;
                            p.tp_rows = rows;
                            p.pp = pp;
                            p.cp = cp;
                            p.dp = gpus / (tp * pp * cp);
                            p.ep = ep;
                            p.order = order;
                            p.cp_kind = cp_kind;
                            bool repeated = false;
                            for (RankOrder earlier : kRankOrders) {
                                if (earlier == order) break;
                                ParallelConfig q = p;
                                q.order = earlier;
                                repeated = repeated || same_spans(place_groups(q, base.system), place_groups(p, base.system));
                            }
                            if (repeated && !fixed("order")) continue;
                            for (int64_t vp = 1; vp <= m.layers + 2; ++vp)  // splits may count 2 slots more
                                for (int64_t mb : divisors_of(base.training.global_batch))
                                    for (int64_t zero = 0; zero <= 3; ++zero)
                                        for (Recompute rc : {Recompute::none, Recompute::selective, Recompute::full})
                                            for (bool sp : {false, true}) {
                                                if (sp && tp == 1) continue;
                                                p.vp = vp;
                                                p.microbatch = mb;
                                                p.zero = zero;
                                                p.recompute = rc;
                                                p.sequence_parallel = sp;
                                                // Fields the scenario fixes are held, as search holds them.
                                                Json par = parallel_json(p);
                                                par.erase("pipeline_split");  // `auto`: train's default split
                                                bool held = true;
                                                if (doc.contains("parallel"))
                                                    for (const auto& [k, v] : doc["parallel"].items()) held = held && par[k] == v;
                                                if (!held) continue;
                                                Json d = resolved;
                                                d["parallel"] = par;
                                                auto s = build_scenario(d, Purpose::train);
                                                if (!s.ok()) continue;
                                                BruteLayout l{tp, std::nullopt};
                                                const TrainResult r =
                                                    evaluate_training({s->model, s->system, s->training}, s->parallel);
                                                if (r.fits_in_memory) l.hit = SearchHit{s->parallel, r, objective_score(obj, r)};
                                                out.push_back(std::move(l));
                                            }
                        }
    return out;
}

// The brute-force answer of a search of `gpus` GPUs with or without tp held within the scale-up domain.
Brute brute_force(const std::vector<BruteLayout>& all, const SystemSpec& sys, int64_t gpus, bool tp_within_domain) {
    Brute b;
    for (const BruteLayout& l : all) {
        if (tp_within_domain && l.tp > sys.used_per_domain(gpus)) continue;
        ++b.valid;
        if (!l.hit) continue;
        ++b.feasible;
        b.hits.push_back(*l.hit);
    }
    std::sort(b.hits.begin(), b.hits.end(), hit_before);
    return b;
}

SearchResult run_search(const Json& doc, int64_t gpus, Objective obj, bool tp_within_domain, unsigned threads,
                        size_t k) {
    const Scenario s = scenario_of(doc, Purpose::search);
    SearchOptions o;
    o.gpus = gpus;
    o.top_k = k;
    o.threads = threads;
    o.objective = obj;
    o.tp_within_domain = tp_within_domain;
    return search_layouts({s.model, s.system, s.training}, constraints_from(s.parallel, s.parallel_given), o);
}

void expect_same_best(const Brute& b, const SearchResult& r, size_t k) {
    ASSERT_EQ(r.best.size(), std::min(k, b.hits.size()));
    for (size_t i = 0; i < r.best.size(); ++i) {
        EXPECT_FALSE(layout_before(r.best[i].layout, b.hits[i].layout) || layout_before(b.hits[i].layout, r.best[i].layout))
            << "rank " << i << ": search " << parallel_json(r.best[i].layout).dump() << " brute force "
            << parallel_json(b.hits[i].layout).dump();
        EXPECT_EQ(r.best[i].score, b.hits[i].score) << "rank " << i;
        EXPECT_EQ(r.best[i].result.memory.peak_bytes_per_gpu, b.hits[i].result.memory.peak_bytes_per_gpu) << "rank " << i;
    }
}

struct SmallSpace {
    const char* name;  // the CTest name: stable across runs (the default printer shows raw bytes)
    const char* doc;
    int64_t gpus;
    bool costed_misfits;  // some layouts pass the memory bound yet overflow once activations count
};
void PrintTo(const SmallSpace& s, std::ostream* os) { *os << s.name; }

class SearchVsBruteForce : public ::testing::TestWithParam<SmallSpace> {};

TEST_P(SearchVsBruteForce, IdenticalBestAndCounts) {
    const Json doc = doc_of(GetParam().doc);
    const int64_t n = GetParam().gpus;
    const std::vector<BruteLayout> all = brute_force_layouts(doc, n, Objective::step_time);
    for (bool domain : {false, true}) {
        SCOPED_TRACE(domain ? "tp within the scale-up domain" : "tp anywhere");
        const Brute b = brute_force(all, scenario_of(doc, Purpose::search).system, n, domain);
        const SearchResult r = run_search(doc, n, Objective::step_time, domain, 2, 8);
        ASSERT_GT(b.feasible, 0);
        expect_same_best(b, r, 8);
        EXPECT_EQ(r.stats.feasible, b.feasible);
        // Every layout train accepts is either costed or pruned by the memory bound.
        EXPECT_EQ(r.stats.candidates - r.stats.pruned_domain, b.valid);
        EXPECT_EQ(r.stats.evaluated + r.stats.pruned_memory, b.valid);
        EXPECT_FALSE(r.stats.interrupted);
        EXPECT_GT(r.stats.pruned_memory, 0);  // the bound is exercised in every space below
        EXPECT_EQ(r.stats.evaluated > r.stats.feasible, GetParam().costed_misfits);
    }
}

INSTANTIATE_TEST_SUITE_P(
    SmallSpaces, SearchVsBruteForce,
    ::testing::Values(
        // A 13B model on 40 GB GPUs with long sequences: some layouts overflow on weights alone
        // (pruned before costing), some only once activations count.
        SmallSpace{"Llama13bLongSequence", R"({"model": {"preset": "llama2-13b", "layers": 8, "seq_len": 8192}, "system": {"preset": "dgx-a100-40gb"},
                       "training": {"global_batch": 16, "precision": "bf16"}})",
                   8, true},
        SmallSpace{"Gpt3Slice", R"({"model": {"preset": "gpt3-175b", "layers": 12, "seq_len": 1024}, "system": {"preset": "dgx-a100-80gb"},
                       "training": {"global_batch": 8, "precision": "fp16"}})",
                   8, true},  // the bound is the least of a shape's splits: an uneven one may overflow
        // MoE: expert parallelism inside dp x cp.
        SmallSpace{"MixtralExperts", R"({"model": {"preset": "mixtral-8x7b", "layers": 4, "seq_len": 8192}, "system": {"preset": "dgx-h100"},
                       "training": {"global_batch": 4, "precision": "bf16"}})",
                   8, false},
        // Scale-up domains of 2: rank orders and context-parallel kinds change spans and costs
        // (40 heads, 40 K/V heads: Ulysses fits every tp x cp of 8 GPUs).
        SmallSpace{"OrdersAndCpKinds", R"({"model": {"preset": "llama2-13b", "layers": 8, "seq_len": 8192}, "system": {"preset": "dgx-a100-40gb", "scale_up": {"domain_gpus": 2}},
                       "training": {"global_batch": 4, "precision": "bf16"}})",
                   8, false},
        // Fields given in the scenario are held fixed.
        SmallSpace{"FieldsHeldFixed", R"({"model": {"preset": "llama2-13b", "layers": 8, "seq_len": 8192}, "system": {"preset": "dgx-a100-40gb"},
                       "parallel": {"pp": 1, "recompute": "selective", "microbatch": 2, "order": "cp-tp-dp-pp", "cp_kind": "ulysses"},
                       "training": {"global_batch": 16, "precision": "bf16"}})",
                   8, true}),
    [](const ::testing::TestParamInfo<SmallSpace>& p) { return std::string(p.param.name); });

constexpr const char* kGpt3 = R"({"model": {"preset": "gpt3-175b"}, "system": {"preset": "dgx-a100-80gb"},
                                  "training": {"global_batch": 4096, "precision": "bf16"}})";

// Rank orders are kept only where they place some group differently. 8 GPUs on one 8-GPU node:
// every group of every order sits in the one domain, so the space is Megatron's order alone; on
// nodes of 2 the other orders add layouts (cp-tp-dp-pp with tp 2, cp 2 splits tp across nodes).
TEST(Search, OrdersOnlyWhereTheyMoveAGroup) {
    const char* one = R"({"model": {"preset": "llama2-13b", "layers": 4, "seq_len": 8192}, "system": {"preset": "dgx-a100-40gb"},
                          "training": {"global_batch": 4, "precision": "bf16"}})";
    Json held = doc_of(one);
    held["parallel"] = Json{{"order", "tp-cp-dp-pp"}};
    const SearchResult all = run_search(doc_of(one), 8, Objective::step_time, false, 2, 4);
    const SearchResult megatron = run_search(held, 8, Objective::step_time, false, 2, 4);
    EXPECT_EQ(all.stats.candidates, megatron.stats.candidates);
    Json two = doc_of(one);
    two["system"]["scale_up"] = Json{{"domain_gpus", 2}};
    Json two_held = two;
    two_held["parallel"] = Json{{"order", "tp-cp-dp-pp"}};
    EXPECT_GT(run_search(two, 8, Objective::step_time, false, 2, 4).stats.candidates,
              run_search(two_held, 8, Objective::step_time, false, 2, 4).stats.candidates);
}

TEST(Search, ThreadCountDoesNotChangeTheAnswer) {
    const Json doc = doc_of(kGpt3);
    const SearchResult one = run_search(doc, 4096, Objective::step_time, true, 1, 20);
    EXPECT_EQ(one.stats.threads, 1u);  // one thread asked, one used (and reported)
    for (unsigned t : {2u, 3u, 7u}) {
        const SearchResult r = run_search(doc, 4096, Objective::step_time, true, t, 20);
        EXPECT_EQ(r.stats.threads, t);
        EXPECT_EQ(r.stats.evaluated, one.stats.evaluated);
        EXPECT_EQ(r.stats.feasible, one.stats.feasible);
        EXPECT_EQ(r.stats.pruned_memory, one.stats.pruned_memory);
        EXPECT_EQ(r.stats.layer_costings, one.stats.layer_costings);
        ASSERT_EQ(r.best.size(), one.best.size());
        for (size_t i = 0; i < r.best.size(); ++i) {
            EXPECT_EQ(parallel_json(r.best[i].layout), parallel_json(one.best[i].layout)) << "threads " << t << " rank " << i;
            EXPECT_EQ(r.best[i].score, one.best[i].score);
        }
    }
}

// A study's searches share a plan when only system figures planning never reads differ (a faster
// network), and plan afresh when the GPUs used per scale-up domain differ: either way each search
// finds what it finds alone (the same best layouts, scores and counts).
TEST(Search, SharedPlansGiveEverySearchItsOwnAnswer) {
    Json fast = doc_of(kGpt3), partial = doc_of(kGpt3);
    fast["system"]["scale_out"] = Json{{"bw_bytes_per_s", 400e9}};
    partial["system"]["scale_up"] = Json{{"gpus_used_per_domain", 4}};
    PlanCache cache;
    const std::vector<std::pair<Json, size_t>> runs{{doc_of(kGpt3), 1}, {fast, 1}, {partial, 2}, {doc_of(kGpt3), 2}};
    for (const auto& [doc, plans] : runs) {
        const Scenario s = scenario_of(doc, Purpose::search);
        SearchOptions o;
        o.gpus = 512;
        o.top_k = 5;
        const LayoutConstraints f = constraints_from(s.parallel, s.parallel_given);
        const SearchResult alone = search_layouts({s.model, s.system, s.training}, f, o);
        o.plans = &cache;
        const SearchResult shared = search_layouts({s.model, s.system, s.training}, f, o);
        EXPECT_EQ(cache.size(), plans);
        EXPECT_EQ(shared.stats.candidates, alone.stats.candidates);
        EXPECT_EQ(shared.stats.evaluated, alone.stats.evaluated);
        EXPECT_EQ(shared.stats.feasible, alone.stats.feasible);
        ASSERT_EQ(shared.best.size(), alone.best.size());
        for (size_t i = 0; i < alone.best.size(); ++i) {
            EXPECT_EQ(parallel_json(shared.best[i].layout), parallel_json(alone.best[i].layout)) << doc.dump();
            EXPECT_EQ(shared.best[i].score, alone.best[i].score);
        }
    }
}

// A layout of the space costed alone (a study re-costs a twin point's winner so) gives, bit for
// bit, the hit the search reports; a layout outside the space (the domain rule, another GPU
// count, a micro-batch the batch does not split into, a held field) or one that does not fit in
// memory gives nothing.
TEST(Search, CostInSpaceIsWhatTheSearchReports) {
    const Scenario s = scenario_of(doc_of(kGpt3), Purpose::search);
    const TrainContext c{s.model, s.system, s.training};
    SearchOptions o;
    o.gpus = 512;
    o.top_k = 20;
    const SearchResult r = search_layouts(c, {}, o);
    ASSERT_EQ(r.best.size(), 20u);
    for (const SearchHit& h : r.best) {
        const auto again = cost_in_space(c, {}, o, h.layout);
        ASSERT_TRUE(again.has_value()) << parallel_json(h.layout).dump();
        EXPECT_EQ(parallel_json(again->layout), parallel_json(h.layout));
        EXPECT_EQ(again->score, h.score);
        EXPECT_EQ(again->result.step_time_s, h.result.step_time_s);
        EXPECT_EQ(again->result.memory.peak_bytes_per_gpu, h.result.memory.peak_bytes_per_gpu);
    }
    const ParallelConfig best = r.best.front().layout;
    ParallelConfig wide = best;  // tp 16 over two 8-GPU nodes
    wide.tp = 16;
    wide.dp = best.dp * best.tp / 16;
    ASSERT_EQ(wide.gpus(), 512);
    EXPECT_FALSE(cost_in_space(c, {}, o, wide).has_value());
    SearchOptions across = o;
    across.tp_within_domain = false;
    EXPECT_TRUE(cost_in_space(c, {}, across, wide).has_value());
    SearchOptions more = o;
    more.gpus = 1024;
    EXPECT_FALSE(cost_in_space(c, {}, more, best).has_value());
    ParallelConfig odd = best;
    odd.microbatch = 7;  // 4,096 / dp is a power of two
    EXPECT_FALSE(cost_in_space(c, {}, o, odd).has_value());
    LayoutConstraints held;
    held.zero = best.zero == 0 ? 1 : 0;
    EXPECT_FALSE(cost_in_space(c, held, o, best).has_value());
    held.zero = best.zero;
    EXPECT_TRUE(cost_in_space(c, held, o, best).has_value());
    ParallelConfig whole;  // 175 B parameters on every GPU: no room
    whole.dp = 512;
    EXPECT_FALSE(cost_in_space(c, {}, o, whole).has_value());
}

// Every layout of a small space (8 layers of Llama 2 7B at 4,096 tokens on 16 H100s: ZeRO
// stages, micro-batches, rank orders, recompute modes, CP kinds, interleavings all vary) costed
// alone is the search's own hit; one field moved outside the space (experts whole, offload, a
// held first stage or micro-batch) is not in it.
TEST(Search, CostInSpaceAgreesOnEveryLayoutOfASmallSpace) {
    Json doc = doc_of(R"({"model": {"preset": "llama2-7b", "layers": 8, "seq_len": 4096}, "system": {"preset": "dgx-h100"},
                          "training": {"global_batch": 16, "precision": "bf16"}})");
    const Scenario s = scenario_of(doc, Purpose::search);
    const TrainContext c{s.model, s.system, s.training};
    SearchOptions o;
    o.gpus = 16;
    o.top_k = 30000;
    const SearchResult r = search_layouts(c, {}, o);
    ASSERT_EQ(static_cast<int64_t>(r.best.size()), r.stats.feasible);  // every feasible layout kept
    // A plan too large to keep its placements places them per task: the same hits, in order.
    SearchOptions placed_per_task = o;
    placed_per_task.placements_kept = 0;
    const SearchResult again_per_task = search_layouts(c, {}, placed_per_task);
    ASSERT_EQ(again_per_task.best.size(), r.best.size());
    for (size_t i = 0; i < r.best.size(); ++i) {
        EXPECT_EQ(parallel_json(again_per_task.best[i].layout), parallel_json(r.best[i].layout));
        EXPECT_EQ(again_per_task.best[i].score, r.best[i].score);
    }
    PlanCache plans;  // one plan for the layouts costed alone
    o.plans = &plans;
    std::set<std::string> varied;
    for (const SearchHit& h : r.best) {
        const ParallelConfig& p = h.layout;
        if (p.zero != 0) varied.insert("zero");
        if (p.microbatch != 1) varied.insert("microbatch");
        if (p.order != RankOrder::tp_cp_dp) varied.insert("order");
        if (p.recompute != Recompute::none) varied.insert("recompute");
        if (p.cp_kind != CpKind::ring) varied.insert("cp_kind");
        if (p.sequence_parallel) varied.insert("sp");
        if (p.vp != 1) varied.insert("vp");
        if (p.split != PipelineSplit::even) varied.insert("split");
        const auto again = cost_in_space(c, {}, o, p);
        ASSERT_TRUE(again.has_value()) << parallel_json(p).dump();
        EXPECT_EQ(parallel_json(again->layout), parallel_json(p));
        EXPECT_EQ(again->score, h.score);
        EXPECT_EQ(again->result.memory.peak_bytes_per_gpu, h.result.memory.peak_bytes_per_gpu);
    }
    EXPECT_EQ(varied.size(), 8u);
    const ParallelConfig best = r.best.front().layout;
    ParallelConfig whole = best, offload = best, first = best;
    whole.etp = 1;
    offload.offload = Offload::optimizer;
    first.first_stage_layers = 1;
    for (const ParallelConfig& p : {whole, offload, first}) EXPECT_FALSE(cost_in_space(c, {}, o, p).has_value()) << parallel_json(p).dump();
    const auto other_mb = std::find_if(r.best.begin(), r.best.end(), [&](const SearchHit& h) { return h.layout.microbatch != best.microbatch; });
    ASSERT_NE(other_mb, r.best.end());
    LayoutConstraints held;
    held.microbatch = best.microbatch;
    EXPECT_TRUE(cost_in_space(c, held, o, best).has_value());
    EXPECT_FALSE(cost_in_space(c, held, o, other_mb->layout).has_value());
}

// GPT-3 175B on 4,096 A100s: the best layouts re-evaluated one by one give the same numbers,
// and no layout `train` accepts (tp beyond the NVLink domain included) beats the best.
TEST(Search, Gpt3On4096BestIsReproducibleAndUnbeaten) {
    const Json doc = doc_of(kGpt3);
    const SearchResult r = run_search(doc, 4096, Objective::step_time, true, 2, 5);
    ASSERT_EQ(r.best.size(), 5u);
    EXPECT_GT(r.stats.evaluated, 100000);
    EXPECT_TRUE(r.best.front().result.fits_in_memory);
    for (const SearchHit& h : r.best) {
        Json d = doc;
        d["parallel"] = parallel_json(h.layout);
        const Scenario s = scenario_of(d, Purpose::train);  // a layout train accepts
        const TrainResult again = evaluate_training({s.model, s.system, s.training}, h.layout);
        EXPECT_EQ(again.step_time_s, h.result.step_time_s);
        EXPECT_EQ(again.memory.peak_bytes_per_gpu, h.result.memory.peak_bytes_per_gpu);
        EXPECT_TRUE(again.fits_in_memory);
        EXPECT_EQ(h.result.gpus, 4096);
    }

    std::mt19937_64 rng(20240917);
    auto pick = [&rng](std::initializer_list<int64_t> v) { return *(v.begin() + std::uniform_int_distribution<size_t>(0, v.size() - 1)(rng)); };
    int valid = 0;
    for (int i = 0; i < 4000; ++i) {
        ParallelConfig p;
        p.tp = pick({1, 2, 4, 8, 16, 32});
        p.pp = pick({1, 2, 4, 8, 16, 32});
        p.cp = pick({1, 1, 1, 2, 4});
        if (4096 % (p.tp * p.pp * p.cp) != 0) continue;
        p.dp = 4096 / (p.tp * p.pp * p.cp);
        p.vp = pick({1, 1, 2, 3, 4, 6, 12});
        p.microbatch = pick({1, 2, 4, 8, 16});
        p.zero = pick({0, 1, 2, 3});
        p.recompute = static_cast<Recompute>(pick({0, 1, 2}));
        p.sequence_parallel = pick({0, 1}) == 1;
        Json d = doc;
        d["parallel"] = parallel_json(p);
        auto s = build_scenario(d, Purpose::train);
        if (!s.ok()) continue;
        ++valid;
        const TrainResult t = evaluate_training({s->model, s->system, s->training}, p);
        if (t.fits_in_memory) {
            EXPECT_GE(t.step_time_s, r.best.front().result.step_time_s) << parallel_json(p).dump();
        }
    }
    EXPECT_GT(valid, 500);
}

TEST(Search, ObjectivesAgreeAtFixedGpuCountAndBatch) {
    // Same GPUs and tokens per step: the fastest step is the highest throughput per GPU.
    const Json doc = doc_of(kGpt3);
    const SearchResult a = run_search(doc, 1024, Objective::step_time, true, 2, 1);
    const SearchResult b = run_search(doc, 1024, Objective::tokens_per_s_per_gpu, true, 2, 1);
    ASSERT_EQ(a.best.size(), 1u);
    ASSERT_EQ(b.best.size(), 1u);
    EXPECT_EQ(a.best[0].result.step_time_s, b.best[0].result.step_time_s);
    EXPECT_LT(b.best[0].score, 0);
}

TEST(Search, StopFlagEndsEarlyWithoutCrashing) {
    const Scenario s = scenario_of(doc_of(kGpt3), Purpose::search);
    std::atomic<bool> stop{true};
    SearchOptions o;
    o.gpus = 4096;
    o.threads = 2;
    o.stop = &stop;
    const SearchResult r = search_layouts({s.model, s.system, s.training}, {}, o);
    EXPECT_TRUE(r.stats.interrupted);
    EXPECT_EQ(r.stats.evaluated, 0);
    EXPECT_GT(r.stats.candidates, 0);
}

TEST(Search, ProgressEndsWithTheFinalCounts) {
    // The last report comes after the workers finish, however short the search: it holds the
    // final counts and the best score, independent of the clock.
    const Scenario s = scenario_of(doc_of(kGpt3), Purpose::search);
    SearchOptions o;
    o.gpus = 4096;
    o.threads = 2;
    int calls = 0;
    SearchProgress last;
    const SearchResult r = search_layouts({s.model, s.system, s.training}, {}, o, [&](const SearchProgress& p) {
        EXPECT_LE(p.done, p.total);
        EXPECT_GE(p.done, last.done);  // monotonic
        ++calls;
        last = p;
    });
    ASSERT_GE(calls, 1);
    ASSERT_FALSE(r.best.empty());
    EXPECT_EQ(last.total, r.stats.candidates - r.stats.pruned_domain);
    EXPECT_EQ(last.done, r.stats.evaluated + r.stats.pruned_memory);
    EXPECT_EQ(last.done, last.total);
    EXPECT_TRUE(last.have_best);
    EXPECT_EQ(last.best_score, r.best[0].score);
    EXPECT_GE(last.elapsed_s, 0.0);
}

// A held pipeline layout holds pp x vp to its stage count: Llama 2 7B as "Et*24|t*8L" (two stages)
// on 8 GPUs searches pp 2, vp 1 only, and every answer keeps the listed cut.
TEST(Search, HeldPipelineLayoutKeepsItsStages) {
    const Json doc = doc_of(R"({"model": {"preset": "llama2-7b"}, "system": {"preset": "dgx-a100-80gb"},
        "parallel": {"pipeline_layout": "Et*24|t*8L"}, "training": {"global_batch": 64}})");
    const SearchResult r = run_search(doc, 8, Objective::step_time, false, 2, 50);
    ASSERT_FALSE(r.best.empty());
    for (const SearchHit& h : r.best) {
        EXPECT_EQ(h.layout.pp, 2);
        EXPECT_EQ(h.layout.vp, 1);
        EXPECT_EQ(h.layout.split, PipelineSplit::layout);
        EXPECT_EQ(h.layout.layout, (std::vector<int32_t>{24, 8}));
    }
}

// With multi-token prediction held in a layout ("Et*16|t*15mL" on Mixtral's 32 layers: the last
// stage one layer lighter for its MTP block), every answer keeps the 'm' and costs exactly what
// `train` costs for that layout (the search's per-stage rates carry the module: its block, output
// layer, embedding copy and expert shards).
TEST(Search, MtpLayoutAnswersCostWhatTrainCosts) {
    const Json doc = doc_of(R"({"model": {"preset": "mixtral-8x7b", "mtp_layers": 1}, "system": {"preset": "dgx-h100"},
        "parallel": {"pipeline_layout": "Et*16|t*16mL", "recompute": "full", "microbatch": 1}, "training": {"global_batch": 64}})");
    const Scenario s = scenario_of(doc, Purpose::search);
    const SearchResult r = run_search(doc, 16, Objective::step_time, false, 2, 20);
    ASSERT_FALSE(r.best.empty());
    for (const SearchHit& h : r.best) {
        EXPECT_EQ(h.layout.layout_mtp, 1);
        const TrainResult t = evaluate_training({s.model, s.system, s.training}, h.layout);
        EXPECT_DOUBLE_EQ(h.result.step_time_s, t.step_time_s);
        EXPECT_DOUBLE_EQ(h.result.memory.peak_bytes_per_gpu, t.memory.peak_bytes_per_gpu);
    }
    EXPECT_EQ(parallel_json(r.best.front().layout)["pipeline_layout"], "Et*16|t*16mL");
}

TEST(Search, NoValidLayoutGivesNoCandidates) {
    const Scenario s = scenario_of(doc_of(kGpt3), Purpose::search);
    SearchOptions o;
    o.gpus = 7 * 11 * 13;  // no tensor or pipeline split of GPT-3 uses these factors, and dp must divide 4096
    const SearchResult r = search_layouts({s.model, s.system, s.training}, {}, o);
    EXPECT_EQ(r.stats.candidates, 0);
    EXPECT_TRUE(r.best.empty());
}

// A library caller asking for no results still gets the best layout (the CLI rejects --top 0).
TEST(Search, TopZeroKeepsTheBest) {
    const Json doc = doc_of(R"({"model": {"preset": "gpt3-175b", "layers": 12, "seq_len": 1024}, "system": {"preset": "dgx-a100-80gb"},
                               "training": {"global_batch": 8, "precision": "fp16"}})");
    // The best of a top-1 search is checked against brute force in SmallSpaces/Gpt3Slice.
    const SearchResult one = run_search(doc, 8, Objective::step_time, false, 1, 1);
    const SearchResult none = run_search(doc, 8, Objective::step_time, false, 1, 0);
    ASSERT_EQ(one.best.size(), 1U);
    ASSERT_EQ(none.best.size(), 1U);
    EXPECT_EQ(parallel_json(none.best[0].layout), parallel_json(one.best[0].layout));
    EXPECT_EQ(none.best[0].score, one.best[0].score);
    EXPECT_EQ(none.stats.feasible, one.stats.feasible);
}

TEST(GpuCounts, ParsesCountsListsAndRanges) {
    EXPECT_EQ(parse_gpu_counts("4096").value(), (std::vector<int64_t>{4096}));
    EXPECT_EQ(parse_gpu_counts("1024,2048,4096").value(), (std::vector<int64_t>{1024, 2048, 4096}));
    EXPECT_EQ(parse_gpu_counts("256:16384:x2").value(), (std::vector<int64_t>{256, 512, 1024, 2048, 4096, 8192, 16384}));
    EXPECT_EQ(parse_gpu_counts("256:1000").value(), (std::vector<int64_t>{256, 512}));
    EXPECT_EQ(parse_gpu_counts("8:32:+8").value(), (std::vector<int64_t>{8, 16, 24, 32}));
    for (const char* bad : {"", "0", "-8", "abc", "8,", ",8", "8:4", "8:64:x1", "8:64:y2", "8:64:x", "1:2:3:4", "99999999999",
                            "1:100000:+1", "4096.0", "16777217"}) {
        auto r = parse_gpu_counts(bad);
        EXPECT_FALSE(r.ok()) << bad;
        if (!r.ok()) {
            EXPECT_EQ(r.error().path, "--gpus");
        }
    }
}

// Ulysses shards the heads over tp x cp: in the space only where they divide (16 heads: tp 2 x cp
// 4 = 8 fits, tp 4 x cp 8 = 32 does not), a kind the user fixed is the only one, and at cp 1
// the kinds do not differ (ring stands for them) unless one is fixed.
TEST(SearchSpace, ContextParallelKindsAllowed) {
    ModelSpec m = sm::testing::tiny_llama(2);
    m.heads = 16;
    m.kv_heads = 16;
    m.hidden = 1024;
    ModelSpec gqa = m;  // 2 K/V heads: Ulysses cannot shard them over tp 4
    gqa.kv_heads = 2;
    const LayoutConstraints free;
    LayoutConstraints ulysses, ring;
    ulysses.cp_kind = CpKind::ulysses;
    ring.cp_kind = CpKind::ring;
    struct Case {
        const ModelSpec* model;
        const LayoutConstraints* fixed;
        int64_t tp, cp;
        CpKind kind;
        bool allowed;
    };
    const Case cases[] = {
        {&m, &free, 2, 4, CpKind::ulysses, true},      {&m, &free, 4, 8, CpKind::ulysses, false},
        {&m, &free, 4, 8, CpKind::ring, true},         {&m, &free, 4, 8, CpKind::all_gather, true},
        {&m, &free, 4, 1, CpKind::ring, true},         {&m, &free, 4, 1, CpKind::all_gather, false},
        {&m, &ulysses, 2, 4, CpKind::ulysses, true},   {&m, &ulysses, 4, 8, CpKind::ulysses, false},
        {&m, &ulysses, 4, 1, CpKind::ulysses, true},   {&m, &ulysses, 2, 4, CpKind::ring, false},
        {&gqa, &ulysses, 4, 1, CpKind::ulysses, true},  // at cp 1 a fixed Ulysses stands even where it could not shard
        {&gqa, &ulysses, 4, 2, CpKind::ulysses, false}, {&m, &ring, 4, 8, CpKind::ring, true},
        {&m, &ring, 2, 4, CpKind::ulysses, false}};
    for (const Case& k : cases)
        EXPECT_EQ(cp_kind_allowed(*k.model, *k.fixed, k.tp, k.cp, k.kind), k.allowed)
            << "tp " << k.tp << " cp " << k.cp << " kind " << to_string(k.kind) << (k.fixed->cp_kind ? " (fixed)" : "");
}

}  // namespace
}  // namespace sm
