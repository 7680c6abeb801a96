// The study layer: grids of `--vary` specs, Shapley attribution, elasticities, and the provenance
// the results carry (resolved scenarios, modified presets). Expectations are worked by hand.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include <fmt/format.h>

#include "io/provenance.hpp"
#include "io/scenario.hpp"
#include "study/attribute.hpp"
#include "study/evaluate.hpp"
#include "study/grid.hpp"
#include "study/sensitivity.hpp"
#include "search/search.hpp"
#include "test_helpers.hpp"
#include "training/step.hpp"

namespace sm {
namespace {

std::vector<Json> values_of(const std::string& spec) {
    auto v = parse_vary(spec);
    EXPECT_TRUE(v.ok()) << (v.ok() ? "" : v.error().message());
    return v.ok() ? v->values : std::vector<Json>{};
}

InputError vary_error(const std::string& spec) {
    auto v = parse_vary(spec);
    EXPECT_FALSE(v.ok()) << "accepted: " << spec;
    return v.ok() ? InputError{} : v.error();
}

TEST(Grid, GeometricRangeOfIntegersIncludesStop) {
    const auto v = values_of("parallel.tp=1:16:x2");
    ASSERT_EQ(v.size(), 5u);
    const int64_t want[] = {1, 2, 4, 8, 16};
    for (size_t i = 0; i < 5; ++i) {
        EXPECT_TRUE(v[i].is_number_integer());
        EXPECT_EQ(v[i].get<int64_t>(), want[i]);
    }
    // 1, 3, 9, 27: 81 is past 50.
    EXPECT_EQ(values_of("a=1:50:x3").back().get<int64_t>(), 27);
}

// A STOP reached up to rounding is included (log(1000) / log(10) is 2.9999999999999996 in
// doubles: 1e-3 x 10^3 is the fourth value); one a relative 1.5e-9 short of the next power is not
// (log2 of 1023.99999893 is 10 - 1.5e-9: ten values, 1 to 512), so the slack is the rounding's,
// not a part-step's.
TEST(Grid, GeometricRangeStopsAtStopUpToRounding) {
    EXPECT_EQ(values_of("a=0.001:1:x10").size(), 4u);
    EXPECT_EQ(values_of("a=1:1000:x10").size(), 4u);
    const auto v = values_of("a=1:1023.99999893:x2");
    ASSERT_EQ(v.size(), 10u);
    EXPECT_DOUBLE_EQ(v.back().get<double>(), 512);
    EXPECT_EQ(values_of("a=1:1024:x2").size(), 11u);
}

TEST(Grid, GeometricRangeNeedsAPositiveStartAndAFactorAboveOne) {
    // Either failing is enough: a start of 0 never grows, a factor of 1 never moves.
    for (const char* spec : {"a=0:16:x2", "a=1:16:x1", "a=-2:16:x2", "a=1:16:x0.5"}) {
        const InputError e = vary_error(spec);
        EXPECT_EQ(e.path, "--vary") << spec;
        EXPECT_NE(e.message().find("START > 0 and a factor F > 1"), std::string::npos) << spec << ": " << e.message();
    }
}

TEST(Grid, RangeBoundsAndStepMustEachBeNumbers) {
    for (const char* spec : {"a=q:16:x2", "a=1:zz:x2", "a=1:16:xq", "a=1:16:2"}) {
        const InputError e = vary_error(spec);
        EXPECT_EQ(e.path, "--vary") << spec;
        EXPECT_NE(e.message().find("START:STOP:xF or START:STOP:+S"), std::string::npos) << spec << ": " << e.message();
    }
}

// Whole numbers only when START, STOP and the step all are: 1:2.5:+1 gives 1.0 and 2.0.
TEST(Grid, ARangeWithOneFractionalBoundIsReal) {
    for (const auto& [spec, count] : std::vector<std::pair<const char*, size_t>>{{"a=1:2.5:+1", 2}, {"a=1.5:3:+1", 2}, {"a=1:3:+1.0", 3}}) {
        const auto v = values_of(spec);
        ASSERT_EQ(v.size(), count) << spec;
        EXPECT_TRUE(v[0].is_number_float()) << spec;
    }
    EXPECT_TRUE(values_of("a=1:3:+1")[0].is_number_integer());
}

TEST(Grid, ArithmeticRangeWithAFractionalStep) {
    const auto v = values_of("x=0:1:+0.25");
    ASSERT_EQ(v.size(), 5u);
    for (size_t i = 0; i < 5; ++i) {
        EXPECT_TRUE(v[i].is_number_float());
        EXPECT_DOUBLE_EQ(v[i].get<double>(), 0.25 * static_cast<double>(i));
    }
    // 0.1 steps accumulate rounding error; STOP is still included: 11 values.
    EXPECT_EQ(values_of("x=0:1:+0.1").size(), 11u);
    // A range that does not start at 0 counts (STOP - START) / S + 1 values.
    const auto w = values_of("x=2:3:+0.5");
    ASSERT_EQ(w.size(), 3u);
    EXPECT_DOUBLE_EQ(w.back().get<double>(), 3.0);
}

TEST(Grid, ScientificBoundsGiveDoubles) {
    const auto v = values_of("system.accelerator.memory_bw_bytes_per_s=1e12:4e12:x2");
    ASSERT_EQ(v.size(), 3u);
    EXPECT_DOUBLE_EQ(v[2].get<double>(), 4e12);
}

TEST(Grid, ListItemsAreJsonScalarsOrWords) {
    const auto v = values_of("parallel.recompute=none,selective,full");
    ASSERT_EQ(v.size(), 3u);
    EXPECT_EQ(v[1], "selective");
    const auto n = values_of("parallel.sequence_parallel=true,false");
    EXPECT_TRUE(n[0].is_boolean());
    const auto m = values_of("parallel.tp=2,8");
    EXPECT_EQ(m[1].get<int64_t>(), 8);
}

TEST(Grid, PresetNamesAreChecked) {
    EXPECT_EQ(values_of("system.preset=dgx-h100,dgx-b200").size(), 2u);
    EXPECT_EQ(values_of("system.preset=all").size(), system_preset_names().size());
    const InputError e = vary_error("system.preset=dgx-h10");
    EXPECT_EQ(e.path, "--vary");
    EXPECT_NE(e.message().find("did you mean \"dgx-h100\""), std::string::npos) << e.message();
}

TEST(Grid, BadSpecsNameTheFlag) {
    for (const char* bad : {"parallel.tp", "=1,2", "parallel.tp=", "x=1:16:x1", "x=16:1:x2", "x=0:8:x2", "x=1:2", "x=1:2:3:4",
                            "x=1:4:+0", "x=1:4:y2", "x=a:4:x2", "x=1,,2", "a..b=1"}) {
        const InputError e = vary_error(bad);
        EXPECT_EQ(e.path, "--vary") << bad << ": " << e.message();
        EXPECT_EQ(e.message().find('\n'), std::string::npos);
    }
    // A billion values is refused before anything is built.
    EXPECT_EQ(vary_error("x=1:1000000000:+1").path, "--vary");
    // A spec without a path, or without a list, is told the forms a spec takes.
    for (const char* shape : {"parallel.tp", "=1,2", "parallel.tp="})
        EXPECT_NE(vary_error(shape).allowed.find("PATH=a,b,c"), std::string::npos) << shape;
}

TEST(Grid, CartesianProductFirstVaryOutermost) {
    const std::vector<Vary> vs = {{"a", {1, 2}}, {"b", {"x", "y", "z"}}};
    auto pts = grid_points(vs);
    ASSERT_TRUE(pts.ok());
    ASSERT_EQ(pts->size(), 6u);
    // Row-major: (1,x) (1,y) (1,z) (2,x) (2,y) (2,z).
    EXPECT_EQ(pts.value()[2][0].second, 1);
    EXPECT_EQ(pts.value()[2][1].second, "z");
    EXPECT_EQ(pts.value()[3][0].second, 2);
    EXPECT_EQ(pts.value()[3][1].second, "x");
    EXPECT_EQ(pts.value()[3][1].first, "b");
}

TEST(Grid, OversizedGridIsRefused) {
    std::vector<Json> thousand(1000, Json(1));
    const std::vector<Vary> vs = {{"a", thousand}, {"b", thousand}, {"c", {1, 2}}};
    auto pts = grid_points(vs);
    ASSERT_FALSE(pts.ok());
    EXPECT_EQ(pts.error().path, "--vary");
    EXPECT_NE(pts.error().message().find("2000000"), std::string::npos) << pts.error().message();
}

TEST(Shapley, NoChangeHasNoShares) {
    // Every subset equal: the total is 1x, each factor 1x, and no factor holds a share of nothing.
    const std::vector<FactorGroup> groups = {{"a", {"system.x"}}, {"b", {"system.y"}}};
    const std::vector<double> t = {3, 3, 3, 3};
    const Attribution at = attribution_from(groups, t, {"step_time_s", true});
    EXPECT_EQ(at.ratio, 1.0);
    for (const Factor& f : at.factors) {
        EXPECT_EQ(f.speedup, 1.0);
        EXPECT_EQ(f.share, 0.0);
    }
}

TEST(Shapley, TwoFactorsByHand) {
    // Step times: base 10 s; factor a alone 5 s; b alone 8 s; both 2 s.
    // phi_a = 1/2 [ln(10/5) + ln(8/2)] = ln(sqrt 8); phi_b = 1/2 [ln(10/8) + ln(5/2)] = ln(sqrt 3.125).
    const std::vector<FactorGroup> groups = {{"a", {"system.x"}}, {"b", {"system.y"}}};
    const std::vector<double> t = {10, 5, 8, 2};  // index: bit 0 = a, bit 1 = b
    const Attribution at = attribution_from(groups, t, {"step_time_s", true});
    EXPECT_NEAR(at.factors[0].speedup, std::sqrt(8.0), 1e-12);
    EXPECT_NEAR(at.factors[1].speedup, std::sqrt(3.125), 1e-12);
    EXPECT_NEAR(at.ratio, 5.0, 1e-12);
    EXPECT_NEAR(at.factors[0].speedup * at.factors[1].speedup, at.ratio, 1e-9);
    EXPECT_NEAR(at.factors[0].alone, 2.0, 1e-12);
    EXPECT_NEAR(at.factors[1].alone, 1.25, 1e-12);
    // Shares of the log speedup: ln(sqrt 8) / ln 5.
    EXPECT_NEAR(at.factors[0].share, 0.5 * std::log(8.0) / std::log(5.0), 1e-12);
}

TEST(StudyObjective, TimesAreBetterLowerRatesHigher) {
    for (const char* key : {"step_time_s"}) EXPECT_TRUE(parse_study_objective(key, StudyMode::train)->lower_is_better) << key;
    for (const char* key : {"tokens_per_s", "tokens_per_s_per_gpu", "mfu"})
        EXPECT_FALSE(parse_study_objective(key, StudyMode::search)->lower_is_better) << key;
    for (const char* key : {"e2e_latency_s", "ttft_s", "tpot_s"}) EXPECT_TRUE(parse_study_objective(key, StudyMode::infer)->lower_is_better) << key;
    // output_tokens_per_s ends in "_s" but is a rate.
    EXPECT_FALSE(parse_study_objective("output_tokens_per_s", StudyMode::infer)->lower_is_better);
}

// A misspelt objective names the flag, what was given and every objective the mode allows.
TEST(StudyObjective, UnknownNameListsEveryAllowedName) {
    const auto bad = parse_study_objective("tokens", StudyMode::search, "--objective");
    ASSERT_FALSE(bad.ok());
    const std::string msg = bad.error().message();
    for (const char* key : {"step_time_s", "tokens_per_s", "tokens_per_s_per_gpu", "mfu", "energy_per_step_j", "energy_per_token_j",
                            "tokens_per_j", "cost_per_step_usd", "cost_per_million_tokens_usd"})
        EXPECT_NE(msg.find(key), std::string::npos) << key << " missing from: " << msg;
    EXPECT_NE(msg.find("--objective"), std::string::npos) << msg;
    EXPECT_NE(msg.find("step_time_s, tokens_per_s,"), std::string::npos) << msg;  // comma-separated
}

TEST(Shapley, RateObjectiveGivesTheSameSpeedups) {
    // Throughput is the inverse of time: the same speedups and ratio.
    const std::vector<FactorGroup> groups = {{"a", {}}, {"b", {}}};
    const std::vector<double> r = {0.1, 0.2, 0.125, 0.5};
    const Attribution at = attribution_from(groups, r, {"tokens_per_s", false});
    EXPECT_NEAR(at.factors[0].speedup, std::sqrt(8.0), 1e-12);
    EXPECT_NEAR(at.ratio, 5.0, 1e-12);
}

// v(S) = sum of w_i over S, plus c when both players 0 and 1 are in S: phi_0 = w_0 + c/2,
// phi_1 = w_1 + c/2, phi_2 = w_2 (the interaction split evenly between the two who make it).
double game(uint64_t s, const double w[3], double c) {
    double v = 0;
    for (int i = 0; i < 3; ++i)
        if (s & (uint64_t{1} << i)) v += w[i];
    return v + ((s & 3u) == 3u ? c : 0.0);
}

TEST(Shapley, ThreePlayersWithAnInteraction) {
    const double w[3] = {0.7, -0.2, 1.3}, c = 0.4;
    std::vector<double> v(8);
    for (uint64_t s = 0; s < 8; ++s) v[s] = game(s, w, c);
    const std::vector<double> phi = shapley_values(3, v);
    EXPECT_NEAR(phi[0], 0.9, 1e-12);
    EXPECT_NEAR(phi[1], 0.0, 1e-12);
    EXPECT_NEAR(phi[2], 1.3, 1e-12);
}

// Orders are permutations, fixed by the seed; the masks are every prefix of every order, the
// empty and full coalitions and every player alone, ascending and once each.
TEST(SampledShapley, OrdersAndTheirCoalitions) {
    const auto orders = shapley_orders(6, 50, 1);
    ASSERT_EQ(orders.size(), 50u);
    std::set<std::vector<size_t>> distinct;
    for (const auto& order : orders) {
        std::vector<size_t> sorted = order;
        std::sort(sorted.begin(), sorted.end());
        EXPECT_EQ(sorted, (std::vector<size_t>{0, 1, 2, 3, 4, 5}));
        distinct.insert(order);
    }
    EXPECT_GT(distinct.size(), 40u);  // 50 draws from 720 orders: few repeats
    // Uniform over the orders: 6,000 orders of three players hold each of the six about 1,000
    // times (binomial deviation 29; 150 is five of them).
    std::map<std::vector<size_t>, int> seen;
    for (const auto& order : shapley_orders(3, 6000, 7)) ++seen[order];
    EXPECT_EQ(seen.size(), 6u);
    for (const auto& [order, count] : seen) EXPECT_NEAR(count, 1000, 150);
    EXPECT_EQ(shapley_orders(6, 50, 1), orders);
    EXPECT_NE(shapley_orders(6, 50, 2), orders);
    // Players {0, 1, 2}, the order (2, 0, 1): {}, {2}, {0, 2}, {0, 1, 2}, and {0}, {1} alone.
    EXPECT_EQ(sampled_masks(3, {{2, 0, 1}}), (std::vector<uint64_t>{0, 1, 2, 4, 5, 7}));
}

// Two players, v({}) 0, v({0}) 1, v({1}) 2, v({0, 1}) 5. Order (0, 1): 0 adds 1, 1 adds 4; order
// (1, 0): 1 adds 2, 0 adds 3. Both orders: phi = (2, 3), the exact Shapley values; each player's
// two contributions differ by 2, so its deviation is sqrt(2) and the standard error 1.
TEST(SampledShapley, TwoPlayersByHand) {
    const double v[] = {0, 1, 2, 5};
    const auto game = [&](uint64_t m) { return v[m]; };
    const ShapleyEstimate both = sampled_shapley(2, {{0, 1}, {1, 0}}, game);
    EXPECT_DOUBLE_EQ(both.value[0], 2);
    EXPECT_DOUBLE_EQ(both.value[1], 3);
    EXPECT_DOUBLE_EQ(both.standard_error[0], 1);
    EXPECT_DOUBLE_EQ(both.standard_error[1], 1);
    const ShapleyEstimate one = sampled_shapley(2, {{1, 0}}, game);  // one order: no spread to estimate
    EXPECT_DOUBLE_EQ(one.value[0], 3);
    EXPECT_DOUBLE_EQ(one.value[1], 2);
    EXPECT_EQ(one.standard_error[0], 0);
    // An additive game: every order gives each player its own weight, with no error.
    const ShapleyEstimate add = sampled_shapley(3, shapley_orders(3, 7, 3), [](uint64_t m) { return 1.0 * (m & 1) + 2.0 * (m >> 1 & 1) + 4.0 * (m >> 2 & 1); });
    for (size_t i = 0; i < 3; ++i) {
        EXPECT_DOUBLE_EQ(add.value[i], static_cast<double>(1u << i));
        EXPECT_NEAR(add.standard_error[i], 0, 1e-12);
    }
}

// A random game of 8 players: the estimates sum to v(all) - v(none) exactly, and over 4,000
// orders each lies within four standard errors of the exact value (the errors themselves small).
TEST(SampledShapley, EfficientAndNearTheExactValues) {
    const size_t n = 8;
    std::vector<double> v(size_t{1} << n);
    uint64_t x = 12345;
    for (double& value : v) {
        x = x * 6364136223846793005ULL + 1442695040888963407ULL;
        value = static_cast<double>(x >> 11) / 9007199254740992.0 * 10.0;
    }
    const auto exact = shapley_values(n, v);
    const ShapleyEstimate e = sampled_shapley(n, shapley_orders(n, 4000, 1), [&](uint64_t m) { return v[m]; });
    double sum = 0;
    for (size_t i = 0; i < n; ++i) {
        sum += e.value[i];
        EXPECT_GT(e.standard_error[i], 0);
        EXPECT_LT(e.standard_error[i], 0.2);
        EXPECT_LE(std::abs(e.value[i] - exact[i]), 4 * e.standard_error[i]) << i;
    }
    EXPECT_NEAR(sum, v.back() - v.front(), 1e-9);
}

// Every order of three groups once: the estimate is the exact attribution, its intervals around it.
TEST(SampledShapley, EveryOrderOnceIsTheExactAttribution) {
    const std::vector<FactorGroup> groups{{"a", {"x"}}, {"b", {"y"}}, {"c", {"z"}}};
    const std::vector<double> times{8, 4, 5, 2, 6, 3, 3.5, 1};  // step times by mask: lower is better
    const StudyObjective o{"step_time_s", true};
    const std::vector<std::vector<size_t>> all{{0, 1, 2}, {0, 2, 1}, {1, 0, 2}, {1, 2, 0}, {2, 0, 1}, {2, 1, 0}};
    const Attribution exact = attribution_from(groups, times, o);
    const Attribution sampled = attribution_sampled(groups, all, [&](uint64_t m) { return times[m]; }, o);
    EXPECT_EQ(sampled.orders, 6u);
    EXPECT_EQ(sampled.subsets, 8u);
    EXPECT_EQ(exact.orders, 0u);
    EXPECT_DOUBLE_EQ(sampled.ratio, 8.0);
    for (size_t g = 0; g < 3; ++g) {
        EXPECT_NEAR(sampled.factors[g].speedup, exact.factors[g].speedup, 1e-12) << g;
        EXPECT_DOUBLE_EQ(sampled.factors[g].alone, exact.factors[g].alone);
        EXPECT_LT(sampled.factors[g].speedup_low, sampled.factors[g].speedup);
        EXPECT_GT(sampled.factors[g].speedup_high, sampled.factors[g].speedup);
        // The interval is exp(phi -+ 1.96 SE): symmetric in log space.
        EXPECT_NEAR(std::log(sampled.factors[g].speedup_high) + std::log(sampled.factors[g].speedup_low),
                    2 * std::log(sampled.factors[g].speedup), 1e-12);
    }
}

TEST(Shapley, ProductIsTheRatioAndOrderDoesNotMatter) {
    // An arbitrary table of 5 groups (no structure), listed in two orders.
    const size_t n = 5;
    std::vector<double> t(32);
    for (uint64_t s = 0; s < 32; ++s) t[s] = 100.0 / (1.0 + static_cast<double>(s * s % 37) + static_cast<double>(s));
    std::vector<FactorGroup> groups;
    for (size_t g = 0; g < n; ++g) groups.push_back({std::string(1, static_cast<char>('a' + g)), {}});
    const Attribution a = attribution_from(groups, t, {"step_time_s", true});
    double product = 1;
    for (const Factor& f : a.factors) product *= f.speedup;
    EXPECT_NEAR(product / a.ratio, 1.0, 1e-9);
    EXPECT_NEAR(a.ratio, t[0] / t[31], 1e-9 * a.ratio);

    // Reversed order: group g becomes n-1-g, so subset s maps to its bit-reversed mask.
    const auto reverse = [&](uint64_t s) {
        uint64_t r = 0;
        for (size_t g = 0; g < n; ++g)
            if (s & (uint64_t{1} << g)) r |= uint64_t{1} << (n - 1 - g);
        return r;
    };
    std::vector<double> t2(32);
    for (uint64_t s = 0; s < 32; ++s) t2[reverse(s)] = t[s];
    std::vector<FactorGroup> g2(groups.rbegin(), groups.rend());
    const Attribution b = attribution_from(g2, t2, {"step_time_s", true});
    for (size_t g = 0; g < n; ++g) {
        EXPECT_EQ(b.factors[n - 1 - g].name, a.factors[g].name);
        EXPECT_NEAR(b.factors[n - 1 - g].speedup, a.factors[g].speedup, 1e-12);
    }
}

Json system_doc(double peak_bf16, double bw, double mem) {
    return Json{{"model", {{"layers", 2}}},
                {"system",
                 {{"name", "x"},
                  {"accelerator", {{"matrix_flop_per_s", {{"bf16", peak_bf16}}}, {"memory_bw_bytes_per_s", bw}, {"memory_bytes", mem}}},
                  {"efficiency", {{"gemm_max", 0.8}}}}},
                {"training", {{"precision", "bf16"}}}};
}

TEST(FactorGroups, DifferingFieldsByNamedGroupAndOther) {
    Json from = system_doc(300e12, 2e12, 80e9), to = system_doc(1000e12, 3e12, 80e9);
    to["system"]["name"] = "y";                         // a label: never a factor
    to["system"]["efficiency"]["gemm_max"] = 0.9;       // calibration
    to["model"]["layers"] = 4;                          // nothing claims it
    to["system"]["accelerator"]["matrix_flop_per_s"]["fp8"] = 2000e12;
    to["training"]["precision"] = "fp8";
    const auto g = factor_groups(from, to);
    ASSERT_EQ(g.size(), 5u);
    EXPECT_EQ(g[0].name, "matrix peak");
    EXPECT_EQ(g[0].fields, (std::vector<std::string>{"system.accelerator.matrix_flop_per_s.bf16", "system.accelerator.matrix_flop_per_s.fp8"}));
    EXPECT_EQ(g[1].name, "math precision");
    EXPECT_EQ(g[2].name, "HBM bandwidth");
    EXPECT_EQ(g[3].name, "calibration efficiencies");
    EXPECT_EQ(g[4].name, "other: model.layers");

    // "math precision" alone on the old hardware: fp8 at the old bf16 peak times the 2x that the
    // new one gets from fp8 (300e12 x 2000/1000).
    const Json p = subset_doc(from, to, g, 0b00010);
    EXPECT_EQ(p["training"]["precision"], "fp8");
    EXPECT_DOUBLE_EQ(p["system"]["accelerator"]["matrix_flop_per_s"]["fp8"].get<double>(), 600e12);
    EXPECT_DOUBLE_EQ(p["system"]["accelerator"]["memory_bw_bytes_per_s"].get<double>(), 2e12);
    // Both peak and precision: the new hardware's own fp8 peak.
    const Json q = subset_doc(from, to, g, 0b00011);
    EXPECT_DOUBLE_EQ(q["system"]["accelerator"]["matrix_flop_per_s"]["fp8"].get<double>(), 2000e12);
    // A field the other side lacks is removed.
    const Json back = subset_doc(to, from, factor_groups(to, from), 1);
    EXPECT_FALSE(back["system"]["accelerator"]["matrix_flop_per_s"].contains("fp8"));
}

TEST(Attribute, TrainModeEndToEndMatchesDirectEvaluation) {
    // A100 -> H100 for one layout: the ratio is the ratio of the two step times computed
    // directly, and the factors multiply to it.
    const char* a100 = R"({"model": {"preset": "gpt3-175b"}, "system": {"preset": "dgx-a100-80gb"},
        "parallel": {"tp": 8, "pp": 8, "dp": 1, "vp": 3, "sequence_parallel": true, "recompute": "selective"},
        "training": {"global_batch": 64, "precision": "bf16"}})";
    const std::string h100 = std::string(a100).replace(std::string(a100).find("dgx-a100-80gb"), 13, "dgx-h100");
    const Scenario from = testing::scenario(a100), to = testing::scenario(h100);
    const Json f = study_base_doc(from), t = study_base_doc(to);
    const auto groups = factor_groups(f, t);
    ASSERT_GE(groups.size(), 4u);
    StudyOptions o;
    o.threads = 2;
    const auto out = evaluate_points(size_t{1} << groups.size(), [&](size_t m) -> Expected<Json> { return subset_doc(f, t, groups, m); }, o);
    std::vector<double> v;
    for (const auto& p : out) {
        ASSERT_EQ(p.status, PointStatus::ok) << p.message;
        v.push_back(p.value);
    }
    const Attribution a = attribution_from(groups, v, o.objective);
    const double t_a100 = evaluate_training({from.model, from.system, from.training}, from.parallel).step_time_s;
    const double t_h100 = evaluate_training({to.model, to.system, to.training}, to.parallel).step_time_s;
    EXPECT_NEAR(a.ratio, t_a100 / t_h100, 1e-12 * a.ratio);
    double product = 1;
    for (const Factor& x : a.factors) product *= x.speedup;
    EXPECT_NEAR(product / a.ratio, 1.0, 1e-9);
}

TEST(Sensitivity, PowerLawElasticityIsExact) {
    // T = x^-0.5: ln(T+/T-) / ln(1.05/0.95) = -0.5 exactly; an integer field 8 -> 4 and 16.
    const Json base = {{"system", {{"accelerator", {{"memory_bw_bytes_per_s", 2e12}}}, {"node_gpus", 8}, {"scale_up", {{"latency_s", 0.0}}}}}};
    const auto probes = sensitivity_probes(base);
    ASSERT_EQ(probes.size(), 3u);
    std::vector<PointOutcome> lo, hi;
    for (const Probe& p : probes) {
        const auto t = [&](const Json& x) { return PointOutcome{PointStatus::ok, {}, "", std::pow(x.get<double>(), -0.5)}; };
        lo.push_back(t(p.low));
        hi.push_back(t(p.high));
    }
    const auto probe = [&](const std::string& path) {
        for (const Probe& p : probes)
            if (p.path == path) return p;
        ADD_FAILURE() << path;
        return Probe{};
    };
    EXPECT_EQ(probe("system.node_gpus").low, 4);
    EXPECT_EQ(probe("system.node_gpus").high, 16);
    EXPECT_DOUBLE_EQ(probe("system.accelerator.memory_bw_bytes_per_s").high.get<double>(), 2.1e12);
    const auto ranked = rank_elasticities(probes, lo, hi, 1.0 / std::sqrt(2e12));
    ASSERT_EQ(ranked.size(), 3u);
    EXPECT_NEAR(ranked[0].elasticity, -0.5, 1e-12);
    EXPECT_NEAR(ranked[1].elasticity, -0.5, 1e-12);
    EXPECT_EQ(ranked[2].method, "zero");
}

TEST(Sensitivity, ProbesStayInsideTheFieldTable) {
    // scale_up 0.98 (range up to 1) steps to 0.931 and 1.0, not 1.029; gemm_max at 1.0 only down;
    // a latency's lower end 0 is not reached by -5%; a peak of any precision reads its one entry
    // (at most 1e20); a field the table does not hold (here a made-up one) is not probed.
    const Json base = {{"system",
                        {{"efficiency", {{"scale_up", 0.98}, {"gemm_max", 1.0}}},
                         {"accelerator", {{"matrix_flop_per_s", {{"fp8", 0.99e20}}}}},
                         {"scale_up", {{"latency_s", 1e-6}}},
                         {"made_up", 2.0}}}};
    const auto probes = sensitivity_probes(base);
    const auto probe = [&](const std::string& path) {
        for (const Probe& p : probes)
            if (p.path == path) return p;
        ADD_FAILURE() << path;
        return Probe{};
    };
    EXPECT_DOUBLE_EQ(probe("system.efficiency.scale_up").low.get<double>(), 0.98 * 0.95);
    EXPECT_EQ(probe("system.efficiency.scale_up").high.get<double>(), 1.0);
    EXPECT_DOUBLE_EQ(probe("system.efficiency.gemm_max").low.get<double>(), 0.95);
    EXPECT_EQ(probe("system.efficiency.gemm_max").high.get<double>(), 1.0);
    EXPECT_EQ(probe("system.accelerator.matrix_flop_per_s.fp8").high.get<double>(), 1e20);
    EXPECT_DOUBLE_EQ(probe("system.scale_up.latency_s").low.get<double>(), 0.95e-6);
    EXPECT_EQ(probes.size(), 4u);
    for (const Probe& p : probes) EXPECT_NE(p.path, "system.made_up");
    // T = x^2 over the clamped secant 0.931 .. 1.0 is exactly 2; gemm_max's high side equals the
    // base, so only the backward difference counts even though that point "succeeded".
    std::vector<PointOutcome> lo, hi;
    for (const Probe& p : probes) {
        lo.push_back({PointStatus::ok, {}, "", std::pow(p.low.get<double>(), 2.0)});
        hi.push_back({PointStatus::ok, {}, "", std::pow(p.high.get<double>(), 2.0)});
    }
    int checked = 0;
    for (const Elasticity& e : rank_elasticities(probes, lo, hi, 1.0)) {
        if (e.path == "system.efficiency.scale_up") {
            EXPECT_NEAR(e.elasticity, 2.0, 1e-12);
            EXPECT_EQ(e.method, "central");
            ++checked;
        }
        if (e.path == "system.efficiency.gemm_max") {
            EXPECT_NEAR(e.elasticity, 2.0, 1e-12);
            EXPECT_EQ(e.method, "backward");
            ++checked;
        }
    }
    EXPECT_EQ(checked, 2);  // both fields were ranked
}

// The table-driven probe list misses nothing: every numeric field of every system preset as
// resolved (and of a system generated from its technology) has a row, so it is probed, and the
// probes are exactly those fields.
TEST(Sensitivity, ProbesEveryNumericFieldOfEveryResolvedSystem) {
    std::vector<std::string> systems;
    for (const std::string& name : system_preset_names()) systems.push_back(fmt::format(R"({{"preset": "{}"}})", name));
    systems.push_back(R"({"preset": "dgx-h100", "technology": {"node": "4nm", "die_area_mm2": 814, "tdp_w": 700}})");
    for (const std::string& sys : systems) {
        const Json doc = Json::parse(fmt::format(R"({{"model": {{"preset": "llama3-8b"}}, "system": {}}})", sys));
        const Scenario s = build_scenario(doc, Purpose::train).value();
        std::set<std::string> numeric;
        for_each_leaf(s.full["system"], "system", [&](const std::string& path, const Json& v) {
            if (v.is_number() && !path.starts_with("system.sources")) numeric.insert(path);
        });
        std::set<std::string> probed;
        for (const Probe& p : sensitivity_probes(s.full)) probed.insert(p.path);
        EXPECT_EQ(probed, numeric) << sys;
        EXPECT_GT(numeric.size(), 20u) << sys;
    }
}

TEST(Sensitivity, AFailedSideFallsBackToOneSided) {
    // T = x at x = 1 (an efficiency that cannot grow): backward difference from 0.95 to 1 -> 1.
    const Json base = {{"system", {{"efficiency", {{"scale_up", 1.0}}}}}};
    const auto probes = sensitivity_probes(base);
    ASSERT_EQ(probes.size(), 1u);
    const std::vector<PointOutcome> lo = {{PointStatus::ok, {}, "", 0.95}};
    const std::vector<PointOutcome> hi = {{PointStatus::error, {}, "out of range", 0}};
    const auto r = rank_elasticities(probes, lo, hi, 1.0);
    EXPECT_NEAR(r[0].elasticity, 1.0, 1e-12);
    EXPECT_EQ(r[0].method, "backward");
}

TEST(Provenance, ResolvedScenarioFillsDefaultsAndReadsBack) {
    // A system without an efficiency section runs on the defaults; `resolve` must show them.
    Json doc = Json::parse(R"({"model": {"preset": "llama2-7b"}, "system": {"preset": "dgx-h100"}})");
    Json sys = system_preset_json("dgx-h100").value();
    sys.erase("efficiency");
    doc["system"] = sys;
    const Scenario s = build_scenario(doc, Purpose::infer).value();
    const Efficiency defaults{};
    EXPECT_DOUBLE_EQ(s.full["system"]["efficiency"]["gemm_max"].get<double>(), defaults.gemm_max);
    EXPECT_DOUBLE_EQ(s.full["system"]["efficiency"]["memory_half_bytes"].get<double>(), defaults.memory_half_bytes);
    EXPECT_EQ(s.full["parallel"]["recompute"], "none");
    EXPECT_EQ(s.full["inference"]["batch"], s.inference.batch);
    EXPECT_EQ(s.full["model"]["kv_heads"], s.model.kv_heads);
    // Read back, it is the same scenario: the same step time to the last bit.
    const Scenario again = build_scenario(s.full, Purpose::train).value();
    const Scenario first = build_scenario(doc, Purpose::train).value();
    EXPECT_EQ(evaluate_training({again.model, again.system, again.training}, again.parallel).step_time_s,
              evaluate_training({first.model, first.system, first.training}, first.parallel).step_time_s);
    EXPECT_EQ(again.full, s.full);
}

TEST(Provenance, ModifiedPresetFieldsAreNamed) {
    const Json same = Json::parse(R"({"model": {"preset": "llama2-7b"},
        "system": {"preset": "dgx-h100", "accelerator": {"memory_bw_bytes_per_s": 3.35e12}, "node_gpus": 8}})");
    EXPECT_TRUE(preset_changes(same).empty());
    const Json changed = apply_overrides(same, {"system.accelerator.memory_bw_bytes_per_s=13e12", "model.layers=2"}).value();
    EXPECT_EQ(preset_changes(changed), (std::vector<std::string>{"model.layers", "system.accelerator.memory_bw_bytes_per_s"}));
    const Scenario s = build_scenario(changed, Purpose::infer).value();
    EXPECT_EQ(provenance_text(s), "model: " + s.model.name + " (modified: model.layers)\nsystem: dgx-h100 (modified: system.accelerator.memory_bw_bytes_per_s)\n");
    EXPECT_EQ(overrides_json({"system.accelerator.memory_bw_bytes_per_s=13e12", "parallel.recompute=full"}),
              Json::parse(R"({"system.accelerator.memory_bw_bytes_per_s": 13e12, "parallel.recompute": "full"})"));
}

TEST(SearchFloor, NeverAboveTheStepAndPruningKeepsTheBest) {
    const Scenario s = testing::scenario(R"({"model": {"preset": "gpt3-175b"}, "system": {"preset": "dgx-h100"},
        "training": {"global_batch": 1536, "precision": "bf16"}})", Purpose::search);
    const TrainContext c{s.model, s.system, s.training};
    // The floor is below the step of every vp and ZeRO stage of a few layouts.
    for (const auto& [tp, pp, dp, vp] : {std::tuple{8, 8, 8, 3}, std::tuple{4, 16, 8, 1}, std::tuple{8, 1, 64, 1}, std::tuple{2, 32, 8, 3}}) {
        ParallelConfig p;
        p.tp = tp;
        p.pp = pp;
        p.dp = dp;
        p.vp = vp;
        p.sequence_parallel = true;
        p.recompute = Recompute::selective;
        const LayerCosts lc = cost_layers(c, p);
        for (int64_t z = 0; z <= 3; ++z) {
            p.zero = z;
            EXPECT_LE(step_time_floor_s(c, p, lc), assemble_step(c, p, lc).step_time_s) << tp << " " << pp << " " << dp << " z" << z;
        }
    }
    SearchOptions o;
    o.gpus = 512;
    o.top_k = 1;
    const SearchResult all = search_layouts(c, {}, o);
    o.prune_by_floor = true;
    const SearchResult pruned = search_layouts(c, {}, o);
    ASSERT_EQ(all.best.size(), 1u);
    ASSERT_EQ(pruned.best.size(), 1u);
    EXPECT_FALSE(layout_before(all.best[0].layout, pruned.best[0].layout) || layout_before(pruned.best[0].layout, all.best[0].layout));
    EXPECT_EQ(all.best[0].score, pruned.best[0].score);
    EXPECT_GT(pruned.stats.pruned_bound, 0);
    EXPECT_EQ(pruned.stats.evaluated + pruned.stats.pruned_bound, all.stats.evaluated);
}

TEST(SearchFloor, TensorTimePerSampleNeverGrowsWithTheMicroBatch) {
    // What lets the search bound a smaller micro-batch by a larger one's ops: every GEMM's
    // efficiency rises with its token dimension. Checked over models with MoE, MLA, SUMMA-free
    // 1D tensor parallelism, context parallelism and fp8, and the tensor time never above the time.
    for (const char* model : {"gpt3-175b", "mixtral-8x7b", "deepseek-v3", "vit-era5"}) {
        const Scenario s = testing::scenario(std::string(R"({"model": {"preset": ")") + model +
                                                 R"("}, "system": {"preset": "dgx-h100"}, "training": {"global_batch": 512, "precision": "fp8"}})",
                                             Purpose::search);
        const TrainContext c{s.model, s.system, s.training};
        for (const auto& [tp, cp] : {std::pair{1, 1}, std::pair{8, 1}, std::pair{4, 2}}) {
            ParallelConfig p;
            p.tp = tp;
            p.cp = cp;
            p.sequence_parallel = tp > 1;
            for (Recompute rc : {Recompute::none, Recompute::selective, Recompute::full}) {
                p.recompute = rc;
                double previous = std::numeric_limits<double>::infinity();
                for (int64_t mb : {1, 2, 3, 4, 8, 16}) {
                    p.microbatch = mb;
                    const LayerCosts lc = cost_layers(c, p);
                    const double per_sample = micro_batch_tensor_s(s.model, lc) / static_cast<double>(mb);
                    EXPECT_GT(per_sample, 0) << model;
                    EXPECT_LE(per_sample, previous * (1 + 1e-12)) << model << " tp " << tp << " cp " << cp << " mb " << mb;
                    EXPECT_LE(micro_batch_tensor_s(s.model, lc), micro_batch_total_s(s.model, lc)) << model << " mb " << mb;
                    previous = per_sample;
                }
            }
        }
    }
}

TEST(SearchFloor, FloorNeverFallsFromNoneToSelectiveToFull) {
    // What lets the search skip, under a dearer recompute mode, a layout the floor beat under a
    // cheaper one: the same layout's micro-batch (compute and exposed layer traffic) only grows
    // from none to selective (the attention core again) to full (every forward, its collectives
    // twice). MoE with shared-expert overlap, ring and Ulysses CP, SUMMA, no SP, fp8.
    struct Case {
        const char* model;
        int64_t tp, tp_rows, cp, ep;
        bool sp;
        CpKind kind;
    };
    for (const Case& k : {Case{"gpt3-175b", 8, 1, 1, 1, true, CpKind::ring}, Case{"gpt3-175b", 4, 1, 1, 1, false, CpKind::ring},
                          Case{"gpt3-175b", 4, 2, 2, 1, true, CpKind::ring}, Case{"llama2-70b", 2, 1, 4, 1, true, CpKind::ulysses},
                          Case{"mixtral-8x7b", 2, 1, 1, 8, true, CpKind::ring}, Case{"deepseek-v3", 4, 1, 2, 8, true, CpKind::all_gather}}) {
        const Scenario s = testing::scenario(std::string(R"({"model": {"preset": ")") + k.model +
                                                 R"("}, "system": {"preset": "gb200-nvl72"}, "training": {"global_batch": 512, "precision": "fp8",
                                                 "moe_shared_expert_overlap": true}})",
                                             Purpose::search);
        const TrainContext c{s.model, s.system, s.training};
        ParallelConfig p;
        p.tp = k.tp;
        p.tp_rows = k.tp_rows;
        p.cp = k.cp;
        p.ep = k.ep;
        p.dp = 8;
        p.microbatch = 2;
        p.sequence_parallel = k.sp;
        p.cp_kind = k.kind;
        double previous_total = 0, previous_compute = 0;
        for (Recompute rc : {Recompute::none, Recompute::selective, Recompute::full}) {
            p.recompute = rc;
            const LayerCosts lc = cost_layers(c, p);
            const LayerOpSet ops = layer_op_set(c, p);
            const double total = micro_batch_total_s(s.model, lc);
            const double compute = micro_batch_total_s(s.model, compute_layers(c, ops, rc).costs);
            EXPECT_GE(total, previous_total) << k.model << " tp " << k.tp << " mode " << static_cast<int>(rc);
            EXPECT_GE(compute, previous_compute) << k.model << " tp " << k.tp << " mode " << static_cast<int>(rc);
            EXPECT_GE(total, compute) << k.model;
            if (rc != Recompute::none) EXPECT_GT(total, previous_total) << k.model << " (recompute costs something)";
            previous_total = total;
            previous_compute = compute;
        }
    }
}

TEST(StageRates, ReusedAcrossSplitsCostsEachLayoutsOwnReductions) {
    // The search derives a placement's rates once for every split and vp; the data-parallel
    // collectives they keep for the last fullest GPU must follow the split: GPT-3's 96 layers on
    // pp 4 as 24 each, then with 30 on the first GPU (more parameters to reduce), then back.
    const Scenario s = testing::scenario(R"({"model": {"preset": "gpt3-175b"}, "system": {"preset": "dgx-h100"},
        "training": {"global_batch": 512, "precision": "bf16"}})", Purpose::search);
    const TrainContext c{s.model, s.system, s.training};
    const ParamCount pc = count_params(s.model, s.training.lora);
    ParallelConfig p;
    p.tp = 8;
    p.pp = 4;
    p.dp = 8;
    p.zero = 1;
    p.microbatch = 1;
    p.sequence_parallel = true;
    const LayerCosts lc = cost_layers(c, p);
    const CommSpans spans = place_groups(p, c.system);
    const StageRates shared = stage_rates(c, pc, p, lc, spans);
    ParallelConfig uneven = p;
    uneven.split = PipelineSplit::first_last;
    uneven.first_stage_layers = 30;
    uneven.last_stage_layers = 22;
    double link_even = 0;
    for (const ParallelConfig& q : {p, uneven, p}) {
        const TrainResult reused = assemble_step(c, q, lc, pc, spans, shared);
        const TrainResult fresh = assemble_step(c, q, lc, pc, spans, stage_rates(c, pc, q, lc, spans));
        EXPECT_EQ(reused.link.dp_s, fresh.link.dp_s);
        EXPECT_EQ(reused.breakdown.dp_comm_exposed_s, fresh.breakdown.dp_comm_exposed_s);
        EXPECT_EQ(reused.step_time_s, fresh.step_time_s);
        EXPECT_GT(fresh.link.dp_s, 0);
        if (q.split == PipelineSplit::even) {
            if (link_even > 0) EXPECT_EQ(fresh.link.dp_s, link_even);
            link_even = fresh.link.dp_s;
        } else {
            EXPECT_GT(fresh.link.dp_s, link_even);  // 30 layers' gradients against 24
        }
        // The pipeline hop: one activation (micro-batch x sequence x hidden, bf16) sent in 1/tp slices.
        EXPECT_GT(reused.link.pp_s, 0);
        EXPECT_EQ(reused.link.pp_s, fresh.link.pp_s);
    }
}

TEST(SearchFloor, PruningKeepsTheBestOfEveryFamily) {
    // The floors (a larger micro-batch's tensor time, the key's compute, its collectives) never
    // lose the best layout: an MoE model in fp8, a ViT on a 72-GPU domain, a GQA model.
    for (const auto& [model, system, precision] : {std::tuple{"mixtral-8x7b", "dgx-b200", "fp8"},
                                                   std::tuple{"vit-era5", "gb200-nvl72", "bf16"},
                                                   std::tuple{"llama2-70b", "dgx-h100", "fp8"}}) {
        const Scenario s = testing::scenario(std::string(R"({"model": {"preset": ")") + model + R"("}, "system": {"preset": ")" +
                                                 system + R"("}, "training": {"global_batch": 512, "precision": ")" + precision + R"("}})",
                                             Purpose::search);
        const TrainContext c{s.model, s.system, s.training};
        SearchOptions o;
        o.gpus = 64;
        o.top_k = 1;
        o.threads = 2;
        const SearchResult all = search_layouts(c, {}, o);
        o.prune_by_floor = true;
        const SearchResult pruned = search_layouts(c, {}, o);
        ASSERT_EQ(all.best.size(), 1u) << model;
        ASSERT_EQ(pruned.best.size(), 1u) << model;
        EXPECT_EQ(all.best[0].score, pruned.best[0].score) << model;
        EXPECT_LT(pruned.stats.evaluated * 5, all.stats.evaluated) << model;  // the floors do prune
        EXPECT_EQ(pruned.stats.evaluated + pruned.stats.pruned_bound, all.stats.evaluated) << model;
    }
}

TEST(SearchFloor, TheAverageStageTimesMicroBatchesAndBubble) {
    // GPT-3 175B (96 layers), global batch 1,536 on dp 8 with micro-batch 1: 192 micro-batches.
    // Blocks of 1 ms forward and 2 ms backward, an embedding of 4 ms and a head of 8 ms: 300 ms
    // per micro-batch over all stages, 37.5 ms per stage on pp 8. The bubble adds (8 - 1)/vp.
    const Scenario s = testing::scenario(R"({"model": {"preset": "gpt3-175b"}, "system": {"preset": "dgx-h100"},
        "training": {"global_batch": 1536, "precision": "bf16"}})", Purpose::search);
    const TrainContext c{s.model, s.system, s.training};
    LayerCosts lc;
    lc.layer[idx(LayerKind::dense)].fwd_s = 1e-3;
    lc.layer[idx(LayerKind::dense)].bwd_s = 2e-3;
    lc.embedding.fwd_s = 4e-3;
    lc.head.bwd_s = 8e-3;
    ParallelConfig p;
    p.tp = 8;
    p.pp = 8;
    p.dp = 8;
    p.vp = 1;
    EXPECT_NEAR(step_time_floor_s(c, p, lc), (192.0 + 7.0) * 0.0375, 1e-12);
    p.vp = 3;
    EXPECT_NEAR(step_time_floor_s(c, p, lc), (192.0 + 7.0 / 3.0) * 0.0375, 1e-12);
    // Exposed layer traffic counts; at pp 1 there is no bubble whatever vp says.
    lc.layer[idx(LayerKind::dense)].comm_exposed_s[idx(CommGroup::tp)] = 1e-3;
    p.pp = 1;
    p.dp = 64;  // 24 micro-batches
    EXPECT_NEAR(step_time_floor_s(c, p, lc), 24.0 * (96.0 * 4e-3 + 12e-3), 1e-12);
    // The tensor-engaged part of a micro-batch sums the same blocks: 96 x 0.5 ms + 1 ms + 3 ms.
    lc.layer[idx(LayerKind::dense)].work.tensor_s = 0.5e-3;
    lc.embedding.work.tensor_s = 1e-3;
    lc.head.work.tensor_s = 3e-3;
    EXPECT_NEAR(micro_batch_tensor_s(s.model, lc), 96 * 0.5e-3 + 4e-3, 1e-15);
}

TEST(SearchFloor, PruningKeepsTheCheapestLayout) {
    // The cost objective's floor is in dollars: on 8 GPUs at $2/GPU-hour a step of seconds costs
    // under a cent, so a floor compared in seconds would skip every layout after the first.
    const Scenario s = testing::scenario(R"({"model": {"preset": "llama2-7b"},
        "system": {"preset": "dgx-h100", "price_per_gpu_hour": 2},
        "training": {"global_batch": 64, "precision": "bf16"}})", Purpose::search);
    const TrainContext c{s.model, s.system, s.training};
    SearchOptions o;
    o.gpus = 8;
    o.top_k = 1;
    o.objective = Objective::cost;
    const SearchResult all = search_layouts(c, {}, o);
    o.prune_by_floor = true;
    const SearchResult pruned = search_layouts(c, {}, o);
    ASSERT_EQ(all.best.size(), 1u);
    ASSERT_EQ(pruned.best.size(), 1u);
    EXPECT_EQ(all.best[0].score, pruned.best[0].score);
    EXPECT_NEAR(pruned.best[0].score, 2.0 * 8.0 * pruned.best[0].result.step_time_s / 3600.0, 1e-15);
    EXPECT_GT(pruned.stats.pruned_bound, 0);
    EXPECT_EQ(pruned.stats.evaluated + pruned.stats.pruned_bound, all.stats.evaluated);
}

TEST(Sensitivity, IntegerProbesHalveAndDouble) {
    // Integer fields step to half and double; an odd one (or 0) is probed upward only.
    const Json base = Json::parse(R"({"system": {"node_gpus": 2, "scale_up": {"domain_gpus": 8, "gpus_used_per_domain": 3},
        "accelerator": {"hbm": {"stacks": 0}}}})");
    const auto probes = sensitivity_probes(base);
    auto probe = [&](const std::string& path) {
        for (const Probe& p : probes)
            if (p.path == path) return p;
        ADD_FAILURE() << path;
        return Probe{};
    };
    EXPECT_EQ(probe("system.node_gpus").low, Json(1));
    EXPECT_EQ(probe("system.node_gpus").high, Json(4));
    EXPECT_EQ(probe("system.scale_up.domain_gpus").low, Json(4));
    EXPECT_EQ(probe("system.scale_up.gpus_used_per_domain").low, Json(3));
    EXPECT_EQ(probe("system.scale_up.gpus_used_per_domain").high, Json(6));
    EXPECT_EQ(probe("system.accelerator.hbm.stacks").low, Json(0));
}

TEST(Study, LowerIsBetterKeys) {
    for (const char* k : {"step_time_s", "ttft_s", "energy_per_step_j", "energy_per_token_j", "cost_per_step_usd",
                          "cost_per_million_tokens_usd"})
        EXPECT_TRUE(is_lower_better_key(k)) << k;
    for (const char* k : {"tokens_per_s", "tokens_per_j", "mfu", "output_tokens_per_s_per_gpu"})
        EXPECT_FALSE(is_lower_better_key(k)) << k;
}

TEST(Study, SearchPointWithoutAGpuCountIsAnError) {
    // A search point needs --gpus unless the layout gives tp, pp, dp and cp: with neither, the
    // point is an input error naming --gpus, not a search over zero GPUs.
    // Any of the four left out is the same error (cp alone, or tp, pp and dp without cp).
    StudyOptions o;
    o.mode = StudyMode::search;
    for (const char* parallel : {R"({"tp": 2})", R"({"cp": 2})", R"({"tp": 2, "pp": 1, "dp": 2})"}) {
        const Json doc = Json::parse(std::string(R"({"model": {"preset": "llama2-7b", "layers": 4}, "system": {"preset": "dgx-a100-80gb"},
                                     "training": {"global_batch": 8}, "parallel": )") + parallel + "}");
        const PointOutcome p = evaluate_point(doc, o, 1);
        EXPECT_EQ(p.status, PointStatus::error) << parallel;
        EXPECT_NE(p.message.find("--gpus"), std::string::npos) << parallel << ": " << p.message;
        EXPECT_EQ(p.value, 0) << parallel;
        // Such points run no search, so none is another's twin.
        EXPECT_EQ(twin_groups(2, [&](size_t) -> Expected<Json> { return doc; }, o), (std::vector<size_t>{0, 1})) << parallel;
    }
    // One GPU is a GPU count: the point searches (a 4-layer 7B model fits on one A100).
    o.gpus = 1;
    const Json one = Json::parse(R"({"model": {"preset": "llama2-7b", "layers": 4}, "system": {"preset": "dgx-a100-80gb"},
                                     "training": {"global_batch": 8}})");
    const PointOutcome p = evaluate_point(one, o, 1);
    EXPECT_EQ(p.status, PointStatus::ok) << p.message;
}

// Points that differ only in what cannot change the winner (energy figures, the host tier without
// offload) search once, each still reporting under its own figures; any other difference, the
// host tier with offload, or energy figures when energy is the objective, searches anew. Every
// outcome is what the point's own search gives.
TEST(Study, TwinPointsSearchOnce) {
    const std::string base = R"({"model": {"preset": "llama2-7b"}, "training": {"global_batch": 256}, "system": {"preset": "dgx-h100")";
    const std::vector<std::string> systems{
        "",                                                   // 0
        R"(, "energy": {"tdp_w": 500})",                      // 1: twin of 0
        R"(, "host_memory": {"capacity_bytes": 1e11})",       // 2: twin of 0
        R"(, "accelerator": {"memory_bytes": 30e9})",         // 3: a search of its own
        R"(, "accelerator": {"memory_bytes": 1e9})",          // 4: nothing fits
        R"(, "accelerator": {"memory_bytes": 1e9}, "energy": {"tdp_w": 500})",  // 5: twin of 4
        R"(, "price_per_gpu_hour": 5)",                       // 6: twin of 0
    };
    std::vector<Json> docs;
    for (const auto& sys : systems) docs.push_back(Json::parse(base + sys + "}}"));
    for (const char* host : {"2.5e11", "5e11"})  // 7, 8: offload reads the host tier
        docs.push_back(Json::parse(base + R"(, "host_memory": {"capacity_bytes": )" + host + R"(}}, "parallel": {"offload": "optimizer"}})"));
    StudyOptions o;
    o.mode = StudyMode::search;
    o.gpus = 32;
    SearchMemo memo;
    o.searched = &memo;
    const auto out = evaluate_points(docs.size(), [&](size_t i) -> Expected<Json> { return docs[i]; }, o);
    EXPECT_EQ(memo.searches(), 5u);  // 0, 3, 4, 7, 8
    StudyOptions alone = o;
    alone.searched = nullptr;
    for (size_t i = 0; i < docs.size(); ++i) {
        const PointOutcome own = evaluate_point(docs[i], alone, 1);
        EXPECT_EQ(out[i].status, own.status) << i;
        EXPECT_EQ(out[i].message, own.message) << i;
        EXPECT_EQ(out[i].result, own.result) << i;
    }
    for (const size_t i : {0, 1, 2, 3, 6, 7, 8}) EXPECT_EQ(out[i].status, PointStatus::ok) << i << ": " << out[i].message;
    EXPECT_EQ(out[4].status, PointStatus::no_fit);
    EXPECT_EQ(out[5].status, PointStatus::no_fit);
    EXPECT_NE(out[1].result.at("energy_per_step_j"), out[0].result.at("energy_per_step_j"));  // its own TDP
    EXPECT_EQ(out[1].result.at("parallel"), out[0].result.at("parallel"));

    // The same twins, found before anything runs (what several ranks deal together).
    const auto doc_at = [&](size_t i) -> Expected<Json> { return docs[i]; };
    EXPECT_EQ(twin_groups(docs.size(), doc_at, o), (std::vector<size_t>{0, 0, 0, 3, 4, 4, 0, 7, 8}));
    StudyOptions trains = o;
    trains.mode = StudyMode::train;  // no search: no twins
    EXPECT_EQ(twin_groups(3, doc_at, trains), (std::vector<size_t>{0, 1, 2}));

    o.objective = StudyObjective{"energy_per_step_j", true};
    EXPECT_EQ(twin_groups(docs.size(), doc_at, o), (std::vector<size_t>{0, 1, 0, 3, 4, 5, 0, 7, 8}));  // TDPs now count
    SearchMemo by_energy;
    o.searched = &by_energy;
    evaluate_points(2, [&](size_t i) -> Expected<Json> { return docs[i]; }, o);
    EXPECT_EQ(by_energy.searches(), 2u);
}

// Whole groups dealt: every point on exactly one rank, each with its group's first point, and
// the groups split as points_of_rank splits points (ranks' group counts within one).
TEST(Study, TwinsAreDealtToOneRank) {
    const std::vector<size_t> group{0, 0, 2, 3, 2, 0, 6, 7, 3, 9};  // groups {0,1,5} {2,4} {3,8} {6} {7} {9}
    std::vector<int> rank_of(group.size(), -1);
    std::vector<size_t> groups_per_rank;
    for (size_t r = 0; r < 3; ++r) {
        const std::vector<size_t> mine = points_of_rank(group, r, 3);
        EXPECT_TRUE(std::is_sorted(mine.begin(), mine.end()));
        size_t leaders = 0;
        for (const size_t i : mine) {
            EXPECT_EQ(rank_of[i], -1) << i;
            rank_of[i] = static_cast<int>(r);
            leaders += group[i] == i;
        }
        groups_per_rank.push_back(leaders);
    }
    for (size_t i = 0; i < group.size(); ++i) {
        EXPECT_NE(rank_of[i], -1) << i;
        EXPECT_EQ(rank_of[i], rank_of[group[i]]) << i;
    }
    EXPECT_EQ(groups_per_rank, (std::vector<size_t>{2, 2, 2}));
}

// Every point on exactly one rank, counts within one; and balanced across a grid's structure:
// round robin on 2 ranks gave rank 0 all 500 even points of 1,000 (a fastest dimension of even
// length: all the small values to one rank), the deal gives each rank 200-300 of them.
TEST(Study, PointsAreDealtToRanksEvenly) {
    for (size_t ranks : {size_t{1}, size_t{2}, size_t{3}, size_t{7}}) {
        std::vector<int> seen(1000, 0);
        size_t fewest = 1000, most = 0;
        for (size_t r = 0; r < ranks; ++r) {
            const auto mine = points_of_rank(1000, r, ranks);
            EXPECT_TRUE(std::is_sorted(mine.begin(), mine.end()));
            for (size_t i : mine) ++seen.at(i);
            fewest = std::min(fewest, mine.size());
            most = std::max(most, mine.size());
        }
        EXPECT_EQ(std::count(seen.begin(), seen.end(), 1), 1000) << ranks;
        EXPECT_LE(most - fewest, 1u) << ranks;
    }
    for (size_t r = 0; r < 2; ++r) {
        const auto mine = points_of_rank(1000, r, 2);
        const auto even = std::count_if(mine.begin(), mine.end(), [](size_t i) { return i % 2 == 0; });
        EXPECT_GE(even, 200) << r;
        EXPECT_LE(even, 300) << r;
    }
    EXPECT_TRUE(points_of_rank(0, 0, 2).empty());
    // No ranks reported (a zero from a broken launcher) counts as one: every point, in order.
    EXPECT_EQ(points_of_rank(5, 0, 0), (std::vector<size_t>{0, 1, 2, 3, 4}));
}

TEST(Study, PointsSplitOverRanksComeBackInOrder) {
    // Two ranks simulated in turn: rank 1 hands its share to a fake gather, rank 0 merges both.
    const Json base = Json::parse(R"({"model": {"preset": "gpt3-175b"}, "system": {"preset": "dgx-a100-80gb"},
        "parallel": {"tp": 8, "pp": 8, "vp": 3, "sequence_parallel": true, "recompute": "selective"},
        "training": {"global_batch": 64}})");
    const std::vector<Json> mbs = {1, 2, 4, 8, 3};  // 3 does not divide 64: an error point
    const PointDoc doc = [&](size_t i) { return apply_edits(base, {{"parallel.microbatch", mbs[i]}}); };
    StudyOptions one;
    const auto alone = evaluate_points(mbs.size(), doc, one);
    std::string from_rank1;
    StudyOptions r1;
    r1.cluster.rank = 1;
    r1.cluster.size = 2;
    r1.cluster.gather = [&](const std::string& mine) {
        from_rank1 = mine;
        return std::vector<std::string>{};
    };
    EXPECT_TRUE(evaluate_points(mbs.size(), doc, r1).empty());
    // A rank whose answer does not match its share is an error, not a silent partial merge.
    StudyOptions short_answer = r1;
    short_answer.cluster.rank = 0;
    short_answer.cluster.gather = [&](const std::string& mine) { return std::vector<std::string>{mine, "[]"}; };
    EXPECT_THROW(evaluate_points(mbs.size(), doc, short_answer), std::runtime_error);
    StudyOptions r0 = r1;
    r0.cluster.rank = 0;
    r0.cluster.gather = [&](const std::string& mine) { return std::vector<std::string>{mine, from_rank1}; };
    const auto merged = evaluate_points(mbs.size(), doc, r0);
    ASSERT_EQ(merged.size(), alone.size());
    EXPECT_EQ(alone[4].status, PointStatus::error);
    for (size_t i = 0; i < alone.size(); ++i) {
        EXPECT_EQ(merged[i].status, alone[i].status) << i;
        EXPECT_EQ(merged[i].value, alone[i].value) << i;
        EXPECT_EQ(merged[i].result.dump(), alone[i].result.dump()) << i;
        EXPECT_EQ(merged[i].message, alone[i].message) << i;
    }
}

}  // namespace
}  // namespace sm
