// Generating an accelerator from its technology (system.technology): must cost well under 1 us so
// that technology sweeps run at search speed (issue: technology scaling).
#include <benchmark/benchmark.h>

#include "hardware/technology.hpp"

namespace {

sm::TechnologySpec h100_like() {
    sm::TechnologySpec t;
    t.node = {98.3e12, 3.98e12, 1.83e9, 0.27e-12, 6e4};  // presets/technology/nodes.json: 4nm
    t.die_area_m2 = 814e-6;
    t.tdp_w = 700;
    t.tensor_share = 0.24;
    t.vector_share = 0.09;
    t.sram_share = 0.036;
    for (int i = 0; i < 8; ++i) t.precisions[static_cast<size_t>(i)] = true;
    t.hbm = {5, 670e9, 17179869184.0, 3.4e-12, 12e-6, 11e-3};
    t.scale_up_serdes = t.scale_out_serdes = {100e9, 5e-12, 0.3e-6};
    t.scale_up_lanes = 36;
    t.scale_out_lanes = 4;
    return t;
}

void BM_GenerateChip(benchmark::State& state) {
    sm::TechnologySpec t = h100_like();
    for (auto _ : state) {
        benchmark::DoNotOptimize(t);
        benchmark::DoNotOptimize(sm::generate_chip(t));
    }
}
BENCHMARK(BM_GenerateChip);

}  // namespace
