// The studies end to end (docs/PERFORMANCE.md): `--mode search` attributions of GPT-3 175B on
// 4,096 GPUs from DGX A100 (bf16) to DGX H100 (fp8), 8 factor groups and 256 full searches (issue
// 9's target), and to GB200 NVL72 (fp8), 10 groups and 1,024 searches; and a 1,000-point
// `--mode search` sweep. The argument is the thread count.
#include <benchmark/benchmark.h>

#include "io/scenario.hpp"
#include "study/attribute.hpp"
#include "study/evaluate.hpp"
#include "study/grid.hpp"

namespace {

sm::Scenario scenario(const char* system, const char* precision) {
    const std::string text = std::string(R"({"model": {"preset": "gpt3-175b"}, "system": {"preset": ")") + system +
                             R"("}, "training": {"global_batch": 1536, "precision": ")" + precision + R"("}})";
    return sm::build_scenario(sm::parse_scenario_text(text, "bench").value(), sm::Purpose::search).value();
}

sm::StudyOptions search_options(benchmark::State& state) {
    sm::StudyOptions o;
    o.mode = sm::StudyMode::search;
    o.gpus = 4096;
    o.threads = static_cast<unsigned>(state.range(0));
    return o;
}

void attribute_search(benchmark::State& state, const char* to_system) {
    const sm::Json from = sm::study_base_doc(scenario("dgx-a100-80gb", "bf16"));
    const sm::Json to = sm::study_base_doc(scenario(to_system, "fp8"));
    const auto groups = sm::factor_groups(from, to);
    const sm::StudyOptions o = search_options(state);
    const size_t n = size_t{1} << groups.size();
    for (auto _ : state) {
        const auto out = sm::evaluate_points(n, [&](size_t m) -> sm::Expected<sm::Json> { return sm::subset_doc(from, to, groups, m); }, o);
        benchmark::DoNotOptimize(out.data());
    }
    state.counters["groups"] = static_cast<double>(groups.size());
    state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * n));
}

void BM_AttributeSearchGpt3_A100_to_H100(benchmark::State& state) { attribute_search(state, "dgx-h100"); }
BENCHMARK(BM_AttributeSearchGpt3_A100_to_H100)->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_AttributeSearchGpt3_A100_to_GB200(benchmark::State& state) { attribute_search(state, "gb200-nvl72"); }
BENCHMARK(BM_AttributeSearchGpt3_A100_to_GB200)->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond)->UseRealTime();

// 10 HBM bandwidths x 10 scale-out bandwidths x 10 HBM capacities on DGX H100, each searched.
void BM_SweepSearch1000(benchmark::State& state) {
    const sm::Json base = sm::study_base_doc(scenario("dgx-h100", "bf16"));
    std::vector<sm::Vary> vs;
    for (const char* spec : {"system.accelerator.memory_bw_bytes_per_s=1e12:10e12:+1e12",
                             "system.scale_out.bw_bytes_per_s=12.5e9:125e9:+12.5e9",
                             "system.accelerator.memory_bytes=40e9:400e9:+40e9"})
        vs.push_back(sm::parse_vary(spec).value());
    const auto points = sm::grid_points(vs).value();
    const sm::StudyOptions o = search_options(state);
    for (auto _ : state) {
        const auto out = sm::evaluate_points(points.size(), [&](size_t i) { return sm::apply_edits(base, points[i]); }, o);
        benchmark::DoNotOptimize(out.data());
    }
    state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * points.size()));
}
BENCHMARK(BM_SweepSearch1000)->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(1);

}  // namespace
