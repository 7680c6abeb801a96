#pragma once
// Serving-configuration search: every inference layout of a GPU count (tp x pp x dp, ep for
// MoE) at every concurrency worth trying, under time-to-first-token and time-per-token
// targets, ranked by output tokens/s per GPU; and the Pareto front of tokens/s/GPU against
// tokens/s/user over all of them.
#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

#include "inference/serving.hpp"

namespace sm {

struct ServeTargets {
    double ttft_s = 0;  // 0: no target
    double tpot_s = 0;
};

struct ServeHit {
    ParallelConfig layout;
    ServingPoint point;
};

struct ServeSearchResult {
    std::vector<ServeHit> best;    // meeting the targets, best first (tokens/s/GPU, then lower TTFT)
    std::vector<ServeHit> pareto;  // non-dominated in (tokens/s/GPU, tokens/s/user), by tokens/s/user
    int64_t layouts = 0;           // layouts tried (valid cuts of the model)
    int64_t points = 0;            // steady states evaluated
};

// Every valid inference layout of `gpus` GPUs for the model (tp within a scale-up domain).
std::vector<ParallelConfig> serving_layouts(const ModelSpec& m, const SystemSpec& sys, int64_t gpus);
bool meets(const ServingPoint& pt, const ServeTargets& t);
// Total order of hits: more tokens/s/GPU first, then lower TTFT, then fewer GPUs per replica.
bool better(const ServeHit& a, const ServeHit& b);

// `progress(done, total)` after each layout.
ServeSearchResult serve_search(const InferContext& c, int64_t gpus, const ServeTargets& targets, size_t top_k,
                               const std::function<void(int64_t, int64_t)>& progress = {});

}  // namespace sm
