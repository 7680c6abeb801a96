#pragma once
// Writers for serving results: `infer --concurrency` / `--max-throughput` (one steady state).
#include <string>

#include "inference/serving.hpp"
#include "io/energy_report.hpp"
#include "io/report.hpp"
#include "io/scenario.hpp"

namespace sm {

// One request's share of a replica's steady state on layout `p`: a step's energy and time over
// the requests the replica finishes per step, and the tokens each yields.
EnergyScope serve_energy_scope(const ParallelConfig& p, const ServingPoint& r);

// `mode`: "concurrency" (the user's C) or "max_throughput" (the best C that fits).
Json serve_json(const Scenario& s, const ServingPoint& r, const std::string& mode, int64_t max_concurrency_fits);
std::string serve_text(const Scenario& s, const ServingPoint& r, const std::string& mode, int64_t max_concurrency_fits);

}  // namespace sm
