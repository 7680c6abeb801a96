// The layout search end to end: GPT-3 175B on dgx-a100-80gb, global batch 4,096, bf16.
// items_per_second is layouts costed (assemble_step calls) per second of wall time, the
// figure docs/PERFORMANCE.md quotes; the argument is the thread count.
#include <benchmark/benchmark.h>

#include <string>

#include "io/scenario.hpp"
#include "search/search.hpp"

namespace {

sm::Scenario gpt3_search_scenario(const std::string& system = "dgx-a100-80gb") {
    auto doc = sm::parse_scenario_text(R"({"model": {"preset": "gpt3-175b"}, "system": {"preset": ")" + system + R"("},
        "training": {"global_batch": 4096, "precision": "bf16"}})", "bench");
    return sm::build_scenario(doc.value(), sm::Purpose::search).value();
}

void run(benchmark::State& state, int64_t gpus, bool tp_within_domain, bool prune_by_floor = false,
         const std::string& system = "dgx-a100-80gb") {
    const sm::Scenario s = gpt3_search_scenario(system);
    const sm::TrainContext ctx{s.model, s.system, s.training};
    sm::SearchOptions o;
    o.gpus = gpus;
    o.threads = static_cast<unsigned>(state.range(0));
    o.tp_within_domain = tp_within_domain;
    o.prune_by_floor = prune_by_floor;
    o.top_k = prune_by_floor ? 1 : o.top_k;
    int64_t evaluated = 0, pruned = 0, costings = 0;
    for (auto _ : state) {
        const sm::SearchResult r = sm::search_layouts(ctx, {}, o);
        evaluated += r.stats.evaluated;
        pruned += r.stats.pruned_bound;
        costings += r.stats.layer_costings;
        benchmark::DoNotOptimize(r.best.data());
    }
    state.SetItemsProcessed(evaluated);
    state.counters["pruned_by_floor"] = static_cast<double>(pruned) / static_cast<double>(state.iterations());
    state.counters["layer_costings"] = static_cast<double>(costings) / static_cast<double>(state.iterations());
}

// The default search (tensor parallelism inside one 8-GPU NVLink domain).
void BM_SearchGpt3_4096(benchmark::State& state) { run(state, 4096, true); }
BENCHMARK(BM_SearchGpt3_4096)->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond)->UseRealTime();

// The best layout only, skipping layout keys whose step-time floor is above it (as the studies run it).
void BM_SearchGpt3_4096_Best(benchmark::State& state) { run(state, 4096, true, true); }
BENCHMARK(BM_SearchGpt3_4096_Best)->Arg(1)->Unit(benchmark::kMillisecond)->UseRealTime();

// The same on GB200 NVL72 (tensor parallelism up to the 64 GPUs a rack uses): the far end
// of the A100 -> GB200 attribution, whose space is three times the A100 one.
void BM_SearchGpt3_4096_Best_Nvl72(benchmark::State& state) { run(state, 4096, true, true, "gb200-nvl72"); }
BENCHMARK(BM_SearchGpt3_4096_Best_Nvl72)->Arg(1)->Unit(benchmark::kMillisecond)->UseRealTime();

// Every tensor-parallel degree the model admits: a larger space, same per-layout cost.
void BM_SearchGpt3_4096_AnyTp(benchmark::State& state) { run(state, 4096, false); }
BENCHMARK(BM_SearchGpt3_4096_AnyTp)->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond)->UseRealTime();

// A larger machine: more dp/pp/cp splits per layer key.
void BM_SearchGpt3_16384(benchmark::State& state) { run(state, 16384, false); }
BENCHMARK(BM_SearchGpt3_16384)->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond)->UseRealTime();

// A 72-GPU NVLink domain: group placement's non-dividing cases (domains of 64 used, or 72).
void BM_SearchGpt3_4096_Nvl72(benchmark::State& state) { run(state, 4096, true, false, "gb200-nvl72"); }
BENCHMARK(BM_SearchGpt3_4096_Nvl72)->Arg(1)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace
