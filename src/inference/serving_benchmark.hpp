#pragma once
// A serving benchmark as the clients see it: requests arrive (a closed loop of C clients, or
// Poisson arrivals at a rate), wait for a slot, have their prompt prefilled in chunks of the
// engine's per-step token budget, then decode; each request's TTFT, TPOT and end-to-end latency
// are recorded and summarised as mean and percentiles. The engine is stepped deterministically;
// a run of steps in which nothing changes (no prompt finishes, no request ends, nobody arrives)
// is costed at once, so the time taken grows with the number of requests, not of steps.
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <vector>

#include "inference/deployment.hpp"
#include "inference/serving.hpp"

namespace sm {

// What one replica's engine does with a request (the model enters only through the step cost).
struct EngineModel {
    int64_t slots = 1;             // requests in flight at most (KV-cache capacity)
    int64_t chunk_tokens = 8192;   // prompt tokens per step at most
    int64_t input_len = 1;
    int64_t output_len = 1;
    double tokens_per_decode_step = 1;  // 1 + accepted draft tokens (speculative decoding)
    double host_s = 0;             // per request, before it reaches the engine (tokenise, schedule)
    PrefillSchedule schedule = PrefillSchedule::mixed;
    // Seconds of one step with `decoding` requests decoding and `prompt` prompt tokens.
    std::function<double(double decoding, double prompt)> step_s;
};

// The clients. Closed loop (clients > 0): each of `clients` sends a request at time 0 and its
// next one the moment the last one's final token arrives, until `requests` have been sent in
// all. Open loop (clients == 0): `requests` arrive at the times given, ascending.
struct Load {
    int64_t clients = 0;
    int64_t requests = 0;
    std::vector<double> arrivals_s;
};

struct RequestTimes {
    double sent_s = 0, first_token_s = 0, done_s = 0;
};

// Every request's times on one engine, in the order they were sent.
std::vector<RequestTimes> simulate_engine(const EngineModel& e, const Load& load);

// Poisson arrivals: `n` times at `rate_per_s`, from a seeded generator whose sequence is fixed by
// the C++ standard (std::mt19937_64 and the inverse of the exponential distribution by hand), so
// every platform draws the same times.
std::vector<double> poisson_arrivals(double rate_per_s, int64_t n, uint64_t seed);

// A disaggregated deployment's request flow: prompts dealt in turn over `prefill_engines`
// engines of `prefill` (each request's prompt only: output_len 1), each prompt's KV cache then
// `transfer_s` on the way to one of `decode_engines` engines of `decode` (dealt in turn; its
// input_len 0: a request arrives with its cache and decodes the O - 1 tokens after the first).
// A request's first token reaches its client when its decode engine admits it (the cache has
// arrived and a slot holds it), its last when that engine is done with it. Closed loop: a
// client sends its next request then. Every engine is stepped in time order, each a run of
// steps alike at most up to the earliest time a request may reach it; `coalesce` false steps
// every engine one step at a time (the reference the runs must equal).
std::vector<RequestTimes> simulate_disaggregated(const EngineModel& prefill, int64_t prefill_engines, const EngineModel& decode,
                                                 int64_t decode_engines, double transfer_s, const Load& load, bool coalesce = true);

struct Summary {
    double mean = 0, p50 = 0, p90 = 0, p99 = 0;
};
// Mean and percentiles of weighted samples; a percentile interpolates linearly between order
// statistics (numpy's default), each sample counted `weight` times.
Summary summarise(std::vector<std::pair<double, double>> value_weight);

// Ascending 0, 1, 2, 4, ... below `top`, then `top`, with `extra` values (clamped to [0, top])
// added once each.
std::vector<double> step_ladder(int64_t top, std::initializer_list<int64_t> extra);

// Step seconds at (decoding requests, prompt tokens): `exact` at the grid's points, each costed
// when first needed, bilinear between them (clamped to the grid's ends).
class StepGrid {
public:
    StepGrid(std::function<double(double, double)> exact, std::vector<double> decoding, std::vector<double> prompt);
    double operator()(double decoding, double prompt);

private:
    struct Bracket {
        size_t lo, hi;
        double u;  // weight of hi
    };
    static Bracket bracket(const std::vector<double>& g, double x);
    double at(size_t i, size_t j);
    std::function<double(double, double)> exact_;
    std::vector<double> d_, q_, s_;
};

// The engine of layout `p` holding at most `slots` requests: its steps costed by
// engine_step_cost at the `decoding` counts and `prompt` token counts given and bilinear between
// (StepGrid); mixed chunked prefill and no host time unless the caller sets them.
EngineModel engine_model(const InferContext& c, const ParallelConfig& p, int64_t slots, std::vector<double> decoding,
                         std::vector<double> prompt);

struct BenchmarkResult {
    Summary ttft_s, tpot_s, e2e_s;  // TPOT of a request: (e2e - TTFT) / (O - 1)
    int64_t requests = 0;           // all replicas
    double duration_s = 0;          // the first send to the last token
    double output_tokens_per_s = 0; // all replicas, over the duration
    double requests_per_s = 0;
    int64_t slots = 0;              // per replica
};

// Requests a benchmark sends: inference.num_requests when set, else 10 per client (the request
// count of aiperf / genai-perf concurrency sweeps; at most 2^20, num_requests' own bound), or
// 1,000 at a rate (clients 0).
int64_t benchmark_requests(const InferenceSpec& s, int64_t clients);

// The benchmark on a deployment of `p.dp` replicas of the engine model of `c` (step costs from
// engine_step_cost, interpolated between costed mixes). Closed loop: `clients` in all, dealt to
// the replicas as evenly as they go, `requests` in all (each client's share in turn). Open loop
// (clients == 0): `requests` Poisson arrivals at `rate_per_s` for the deployment, dealt to the
// replicas at random (each a Poisson stream of rate / dp). `slots`: requests a replica holds.
BenchmarkResult run_benchmark(const InferContext& c, const ParallelConfig& p, int64_t slots, PrefillSchedule schedule,
                              int64_t clients, double rate_per_s, int64_t requests, uint64_t seed);

// The benchmark of run_benchmark on a disaggregated deployment (simulate_disaggregated): each
// role's engine as engine_model builds it, its slots the requests whose memory fits a GPU of its
// layout in its role (at least one), the host time before the prefill pool, the KV transfer over
// the scale-up fabric when the whole deployment fits in one domain, else the scale-out network.
// Closed loop: `clients` in all. Open loop (clients == 0): `requests` Poisson arrivals at
// `rate_per_s` for the deployment, dealt to the prefill engines in turn.
// The roles ("prefill", "decode") whose GPUs hold not even one request (their engines then run
// one at a time).
std::vector<const char*> roles_without_room(const InferContext& c, const DisaggDeployment& d);

struct DisaggBenchmark {
    BenchmarkResult result;       // its slots: per decode engine
    int64_t prefill_slots = 0;    // per prefill engine
    double kv_transfer_s = 0;     // one prompt's cache, prefill to decode
    bool within_domain = false;   // over the scale-up fabric
};
DisaggBenchmark run_disaggregated_benchmark(const InferContext& c, const DisaggDeployment& d, int64_t clients, double rate_per_s,
                                            int64_t requests, uint64_t seed);

}  // namespace sm
