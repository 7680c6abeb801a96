// Cost of one training-step evaluation: the unit of work of every sweep.
#include <benchmark/benchmark.h>

#include "io/scenario.hpp"
#include "training/step.hpp"

namespace {

sm::Scenario gpt3_scenario() {
    auto doc = sm::parse_scenario_text(R"({"model": {"preset": "gpt3-175b"}, "system": {"preset": "dgx-a100-80gb"},
        "parallel": {"tp": 8, "pp": 8, "dp": 64, "vp": 3, "sequence_parallel": true, "recompute": "selective"},
        "training": {"global_batch": 4096}})", "bench");
    return sm::build_scenario(doc.value(), sm::Purpose::train).value();
}

// Full evaluation: build the op list, cost every op and collective, assemble the step.
void BM_EvaluateTraining(benchmark::State& state) {
    const sm::Scenario s = gpt3_scenario();
    const sm::TrainContext ctx{s.model, s.system, s.training};
    for (auto _ : state) benchmark::DoNotOptimize(sm::evaluate_training(ctx, s.parallel));
}
BENCHMARK(BM_EvaluateTraining);

// Assembly only, with per-layer costs reused: the search's inner loop.
void BM_AssembleStep(benchmark::State& state) {
    const sm::Scenario s = gpt3_scenario();
    const sm::TrainContext ctx{s.model, s.system, s.training};
    const sm::LayerCosts lc = sm::cost_layers(ctx, s.parallel);
    for (auto _ : state) benchmark::DoNotOptimize(sm::assemble_step(ctx, s.parallel, lc));
}
BENCHMARK(BM_AssembleStep);

}  // namespace
