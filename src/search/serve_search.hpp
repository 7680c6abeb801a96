#pragma once
// Serving-configuration search: every inference layout of a GPU count (tp x pp x dp, ep for
// MoE) at every concurrency worth trying, under time-to-first-token and time-per-token
// targets, ranked by output tokens/s per GPU; and the Pareto front of tokens/s/GPU against
// tokens/s/user over all of them.
#include <array>
#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

#include "inference/serving.hpp"

namespace sm {

// What "best" maximises: output tokens/s per GPU (the same order as tokens per dollar at one price
// per GPU-hour), or output tokens per joule (needs the system's energy figures).
enum class ServeObjective { tokens_per_gpu, tokens_per_joule };

struct ServeTargets {
    double ttft_s = 0;  // 0: no target
    double tpot_s = 0;
    ServeObjective objective = ServeObjective::tokens_per_gpu;
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

// Every inference layout of `gpus` GPUs that the layout rules accept (layout/rules.hpp), tp
// within a scale-up domain.
std::vector<ParallelConfig> serving_layouts(const InferContext& c, int64_t gpus);
bool meets(const ServingPoint& pt, const ServeTargets& t);
// Total order of hits: more tokens/s/GPU first (under tokens_per_joule: less energy per request
// first, then more tokens/s/GPU), then lower TTFT, then fewer GPUs per replica.
bool better(const ServeHit& a, const ServeHit& b, ServeObjective objective = ServeObjective::tokens_per_gpu);

// `progress(done, total)` after each layout.
ServeSearchResult serve_search(const InferContext& c, int64_t gpus, const ServeTargets& targets, size_t top_k,
                               const std::function<void(int64_t, int64_t)>& progress = {});

// Disaggregated serving (xPyD): x prefill instances and y decode instances, each instance a layout
// of its own (tp x pp x dp GPUs) at its own concurrency. A prompt's KV cache moves from the
// prefill to the decode GPUs after its first token: every GPU sends (receives) its own shard at
// once, over the scale-up fabric when the whole budget fits in one domain, else the scale-out
// network, and the transfer adds to TTFT (not overlapped with the prompt's layers: an upper bound).
struct DisaggHit {
    ServeHit prefill;  // one instance; its point's requests_per_s is the instance's rate
    ServeHit decode;
    int64_t prefill_instances = 0;
    int64_t decode_instances = 0;
    int64_t gpus = 0;              // used: x prefill + y decode instances' GPUs (at most the budget)
    double kv_transfer_s = 0;
    double requests_per_s = 0;     // the slower pool's rate: min(x prefill, y decode)
    double ttft_s = 0;             // prefill TTFT + transfer
    double tpot_s = 0;             // the decode pool's
    double output_tokens_per_s_per_gpu = 0;
    double output_tokens_per_s_per_user = 0;
    // Per request: both pools' energy at their steady states, the idle power of the pool that
    // waits on the other, and the KV cache's move (zero: the system has no energy figures).
    Energy energy;
};

struct DisaggResult {
    std::vector<DisaggHit> best;  // meeting the targets, most tokens/s/GPU first
    int64_t prefill_points = 0;    // prefill (layout, concurrency) points meeting TTFT alone
    int64_t decode_points = 0;     // decode layouts with a point meeting TPOT
};

// Instance sizes up to gpus - 1 (the other pool needs one): powers of two and divisors of gpus.
std::vector<int64_t> instance_sizes(int64_t gpus);
// The decode instance counts worth trying (1..most, most >= 1) beside prefill instances of
// `prefill_rate` requests/s: per GPU, min(x P, y D) / (x gp + y gd) rises with y while the
// decode pool is the slower and falls after, so the best y is either side of x P / D.
std::array<int64_t, 2> decode_instance_candidates(double prefill_rate, double decode_rate, int64_t most);
DisaggResult disaggregated_search(const InferContext& c, int64_t gpus, const ServeTargets& targets, size_t top_k);

}  // namespace sm
