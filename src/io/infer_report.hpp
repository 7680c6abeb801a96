#pragma once
// Writers for `scalemodel infer` (one result or a batch sweep) and `scalemodel roofline`.
#include <string>
#include <vector>

#include "inference/inference.hpp"
#include "inference/roofline.hpp"
#include "io/report.hpp"
#include "io/scenario.hpp"

namespace sm {

Json infer_json(const Scenario& s, const InferResult& r);
// The "precision" and "memory" objects of infer_json (shared by the serving writers).
Json precision_json(const InferenceSpec& i);
Json memory_json(const Scenario& s, const InferMemory& m);
std::string infer_text(const Scenario& s, const InferResult& r);

// One row of the latency-throughput curve.
struct SweepPoint {
    int64_t batch = 0;
    InferResult result;
    BoundSplit decode;  // one decode step at the mid context, by what bounds each op
};
Json sweep_json(const Scenario& s, const std::vector<SweepPoint>& pts);
std::string sweep_text(const Scenario& s, const std::vector<SweepPoint>& pts);
std::string sweep_csv(const std::vector<SweepPoint>& pts);

// Roofline tables of the same scenario on one or more systems.
struct SystemRoofline {
    Scenario scenario;
    Roofline roofline;
};
Json roofline_json(const std::vector<SystemRoofline>& rs);
std::string roofline_text(const std::vector<SystemRoofline>& rs);
std::string roofline_csv(const std::vector<SystemRoofline>& rs);

}  // namespace sm
