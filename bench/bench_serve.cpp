// serve-search end to end: Llama 3 70B on 8 H100s (fp8, 2,048 in / 512 out, TTFT 2 s, TPOT
// 50 ms), every layout and the concurrencies worth trying, aggregated alone and with every
// prefill/decode split (--disaggregated); DeepSeek-R1 (the deepseek-v3 preset's architecture) in
// fp4 on 8 B200 and on a 72-GPU GB200 NVL72 (1,024 in / 1,024 out, TTFT 1 s, TPOT 30 ms), its
// layouts including experts spread over attention's tensor-parallel GPUs; and the closed-loop
// benchmark of `infer --concurrency 64` on the 8 H100s; the disaggregated benchmark of an AIC
// row's deployment (DeepSeek-R1 fp4 on 12 B200: one prefill worker of 4 attention-DP ranks, one
// decode worker of 8, 512 clients); the figures docs/PERFORMANCE.md quotes.
#include <benchmark/benchmark.h>

#include "io/scenario.hpp"
#include "inference/serving_benchmark.hpp"
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

sm::Scenario deepseek_r1_on(const char* system) {
    auto doc = sm::parse_scenario_text(std::string(R"({"model": {"preset": "deepseek-v3"}, "system": {"preset": ")") + system +
                                           R"("}, "inference": {"input_len": 1024, "output_len": 1024, "precision": "fp4"}})",
                                       "bench");
    return sm::build_scenario(doc.value(), sm::Purpose::infer).value();
}

// Aggregated (range 0) or with the disaggregated pairings too (range 1), on `gpus` of `system`.
void deepseek_r1(benchmark::State& state, const char* system, int64_t gpus) {
    const sm::Scenario s = deepseek_r1_on(system);
    const sm::InferContext c{s.model, s.system, s.inference};
    for (auto _ : state) {
        const sm::ServeSearchResult r = sm::serve_search(c, gpus, {1.0, 0.03}, 10);
        benchmark::DoNotOptimize(r.best.data());
        if (state.range(0) == 1) {
            const sm::DisaggResult d = sm::disaggregated_search(c, gpus, {1.0, 0.03}, 10);
            benchmark::DoNotOptimize(d.best.data());
        }
    }
}
void BM_ServeSearchDeepSeekR1_8xB200(benchmark::State& state) { deepseek_r1(state, "dgx-b200", 8); }
BENCHMARK(BM_ServeSearchDeepSeekR1_8xB200)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond)->UseRealTime();
void BM_ServeSearchDeepSeekR1_72xGB200(benchmark::State& state) { deepseek_r1(state, "gb200-nvl72", 72); }
BENCHMARK(BM_ServeSearchDeepSeekR1_72xGB200)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond)->UseRealTime();

// `infer --concurrency 64`: 640 requests through the engine, the step grid costed on demand.
void BM_ClosedLoopBenchmarkLlama3_70b_8xH100(benchmark::State& state) {
    const sm::Scenario s = llama3_70b_on_h100();
    const sm::InferContext c{s.model, s.system, s.inference};
    for (auto _ : state) {
        const sm::BenchmarkResult b = sm::run_benchmark(c, s.parallel, 512, sm::PrefillSchedule::mixed, 64, 0, 640, 1);
        benchmark::DoNotOptimize(b.ttft_s.mean);
    }
}
BENCHMARK(BM_ClosedLoopBenchmarkLlama3_70b_8xH100)->Unit(benchmark::kMillisecond)->UseRealTime();

// `infer --concurrency 512` on a disaggregated deployment: 5,120 requests through 4 prefill and
// 8 decode engines stepped in time order.
void BM_DisaggregatedBenchmarkDeepSeekR1_12xB200(benchmark::State& state) {
    auto doc = sm::parse_scenario_text(R"({"model": {"preset": "deepseek-v3"}, "system": {"preset": "dgx-b200"},
        "inference": {"input_len": 1024, "output_len": 1024, "precision": "fp4"},
        "disaggregated": {"prefill": {"workers": 1, "dp": 4, "ep": 4}, "decode": {"workers": 1, "dp": 8, "ep": 8}}})", "bench");
    const sm::Scenario s = sm::build_scenario(doc.value(), sm::Purpose::infer).value();
    const sm::InferContext c{s.model, s.system, s.inference};
    for (auto _ : state) {
        const sm::DisaggBenchmark b = sm::run_disaggregated_benchmark(c, *s.disaggregated, 512, 0, 5120, 1);
        benchmark::DoNotOptimize(b.result.ttft_s.mean);
    }
}
BENCHMARK(BM_DisaggregatedBenchmarkDeepSeekR1_12xB200)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace
