// serve-search end to end: Llama 3 70B on 8 H100s (fp8, 2,048 in / 512 out, TTFT 2 s, TPOT
// 50 ms), every layout and the concurrencies worth trying; the figure docs/PERFORMANCE.md quotes.
#include <benchmark/benchmark.h>

#include "io/scenario.hpp"
#include "search/serve_search.hpp"

namespace {

void BM_ServeSearchLlama3_70b_8xH100(benchmark::State& state) {
    auto doc = sm::parse_scenario_text(R"({"model": {"preset": "llama3-70b"}, "system": {"preset": "dgx-h100"},
        "parallel": {"tp": 8}, "inference": {"input_len": 2048, "output_len": 512, "precision": "fp8"}})", "bench");
    const sm::Scenario s = sm::build_scenario(doc.value(), sm::Purpose::infer).value();
    int64_t points = 0;
    for (auto _ : state) {
        const sm::ServeSearchResult r = sm::serve_search({s.model, s.system, s.inference}, 8, {2.0, 0.05}, 10);
        points += r.points;
        benchmark::DoNotOptimize(r.best.data());
    }
    state.SetItemsProcessed(points);
}
BENCHMARK(BM_ServeSearchLlama3_70b_8xH100)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace
