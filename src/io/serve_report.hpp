#pragma once
// Writers for serving results: `infer --concurrency` / `--max-throughput` (one steady state).
#include <string>

#include "inference/serving.hpp"
#include "inference/serving_benchmark.hpp"
#include "io/energy_report.hpp"
#include "io/report.hpp"
#include "io/scenario.hpp"

namespace sm {

// One request's share of a replica's steady state on layout `p`: a step's energy and time over
// the requests the replica finishes per step, and the tokens each yields.
EnergyScope serve_energy_scope(const ParallelConfig& p, const ServingPoint& r);

// A benchmark run beside the steady state (`infer --concurrency` / `--request-rate`): its clients
// (0: open loop) or arrival rate, and what the clients measured.
struct BenchmarkReport {
    int64_t clients = 0;
    double request_rate_per_s = 0;
    uint64_t seed = 0;
    BenchmarkResult result;
};

// `mode`: "concurrency" (the user's C), "request_rate" or "max_throughput" (the best C that fits).
// With a benchmark, the latency and throughput keys are its (means, with percentiles) and the
// steady state at `r`'s concurrency is reported beside them.
Json serve_json(const Scenario& s, const ServingPoint& r, const std::string& mode, int64_t max_concurrency_fits,
                const BenchmarkReport* bench = nullptr);
std::string serve_text(const Scenario& s, const ServingPoint& r, const std::string& mode, int64_t max_concurrency_fits,
                       const BenchmarkReport* bench = nullptr);

// A disaggregated deployment's benchmark (`infer --concurrency` / `--request-rate` with a
// `disaggregated` section): each role's workers, layout and slots, the cache's move, and what
// the clients measured.
Json disagg_json(const Scenario& s, const DisaggBenchmark& b, int64_t clients, double request_rate_per_s, uint64_t seed);
std::string disagg_text(const Scenario& s, const DisaggBenchmark& b, int64_t clients, double request_rate_per_s, uint64_t seed);

}  // namespace sm
