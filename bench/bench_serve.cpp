// serve-search end to end: Llama 3 70B on 8 H100s (fp8, 2,048 in / 512 out, TTFT 2 s, TPOT
// 50 ms), every layout and the concurrencies worth trying, aggregated alone and with every
// prefill/decode split (--disaggregated); the figures docs/PERFORMANCE.md quotes.
#include <benchmark/benchmark.h>

#include "io/scenario.hpp"
#include "search/serve_search.hpp"

namespace {

sm::Scenario llama3_70b_on_h100() {
    auto doc = sm::parse_scenario_text(R"({"model": {"preset": "llama3-70b"}, "system": {"preset": "dgx-h100"},
        "parallel": {"tp": 8}, "inference": {"input_len": 2048, "output_len": 512, "precision": "fp8"}})", "bench");
    return sm::build_scenario(doc.value(), sm::Purpose::infer).value();
}

void BM_ServeSearchLlama3_70b_8xH100(benchmark::State& state) {
    const sm::Scenario s = llama3_70b_on_h100();
    int64_t points = 0;
    for (auto _ : state) {
        const sm::ServeSearchResult r = sm::serve_search({s.model, s.system, s.inference}, 8, {2.0, 0.05}, 10);
        points += r.points;
        benchmark::DoNotOptimize(r.best.data());
    }
    state.SetItemsProcessed(points);
}
BENCHMARK(BM_ServeSearchLlama3_70b_8xH100)->Unit(benchmark::kMillisecond)->UseRealTime();

// What `serve-search --disaggregated` runs: the aggregated search, then every xPyD pairing.
void BM_ServeSearchDisaggregatedLlama3_70b_8xH100(benchmark::State& state) {
    const sm::Scenario s = llama3_70b_on_h100();
    const sm::InferContext c{s.model, s.system, s.inference};
    for (auto _ : state) {
        const sm::ServeSearchResult r = sm::serve_search(c, 8, {2.0, 0.05}, 10);
        const sm::DisaggResult d = sm::disaggregated_search(c, 8, {2.0, 0.05}, 10);
        benchmark::DoNotOptimize(r.best.data());
        benchmark::DoNotOptimize(d.best.data());
    }
}
BENCHMARK(BM_ServeSearchDisaggregatedLlama3_70b_8xH100)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace
