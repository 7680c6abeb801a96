#pragma once
// Serving under continuous (in-flight) batching: the steady state of `concurrency` requests in
// flight per replica, each engine step carrying one decode token of every request past its
// prompt and a chunk of prompt tokens. Every step is one forward pass costed by
// mixed_pass_cost (the same op catalogue and GEMM timing as `infer`).
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <vector>

#include "inference/inference.hpp"

namespace sm {

// What part of a request an engine runs: all of it (aggregated serving), only the prompt (a
// disaggregated prefill pool: a request leaves with its first token and its KV cache), or only
// the decode (the cache arrives from a prefill pool, with the first token).
enum class ServeRole { both, prefill, decode };

struct ServingPoint {
    int64_t concurrency = 0;        // requests in flight per replica (closed loop: a finished one is replaced)
    int64_t micro_batches = 1;      // min(pp, concurrency): the in-flight set split over the stages
    double steps_per_request = 0;   // engine steps from arrival to the last token
    double decode_tokens = 0;       // per step, whole replica: requests past their prompt
    double prefill_tokens = 0;      // per step, whole replica: prompt tokens (chunks)
    bool prefill_bound = false;     // prompts arrive faster than the chunk budget: they queue
    double kv_tokens_per_request = 0;  // the cache a request holds on average, in whole blocks
    double step_s = 0;              // the mean step through every stage (chunk steps and decode-only steps)
    double ttft_s = 0;              // queueing + the request's own prefill chunk steps + the fixed per-request host cost
    double tpot_s = 0;
    double e2e_latency_s = 0;
    double output_tokens_per_s = 0;          // all dp replicas
    double output_tokens_per_s_per_gpu = 0;
    double output_tokens_per_s_per_user = 0; // 1 / tpot
    double requests_per_s = 0;      // requests finished per second, all dp replicas (prefill: prompts)
    int64_t gpus = 0;
    PassCost step;                  // one micro-batch's mean step through the whole model (a chunk step's
                                    // share of the steps, the rest decode-only)
    Energy energy;                  // one step of one replica: every micro-batch through every stage
    double energy_per_request_j = 0;// that step's energy over the requests it finishes (0: no energy figures)
    InferMemory memory;             // KV cache: every request at its average footprint
    bool fits_in_memory = false;
    // A finite run (inference.num_requests > 0, `--max-throughput` only): the time until its last
    // request finishes on each replica; the throughput and request rate above are then the run's
    // (output over this time), the latencies still the steady state's. 0: the steady state.
    double run_s = 0;
};

// Requests one of `dp` replicas finishes per step of its steady state (a prefill engine's: prompts).
double replica_requests_per_step(const ServingPoint& r, int64_t dp);
// Output tokens a request yields on an engine of this role (a prefill engine's: the first).
int64_t tokens_yielded(const InferenceSpec& s, ServeRole role);

// Tokens a decoding request gains per step: 1 without speculation, 1 + a + ... + a^k with k
// drafted tokens each accepted with probability a.
double tokens_per_decode_step(const InferenceSpec& s);
// The largest n in [1, limit] with ok(n), for ok true on a prefix (0: not even ok(1)).
int64_t largest_on_prefix(const std::function<bool(int64_t)>& ok, int64_t limit);

// One engine step of a replica carrying `decode_requests` decoding requests and `prefill` prompt
// tokens, `started` prompts finishing in it (their first token sampled), split into `mb`
// micro-batches: one micro-batch's pass through the whole model (with pp stages, pp micro-batches
// move through the pipeline at once, so a user's next token waits one pass of its own
// micro-batch through every stage). Prompt chunks run the context-phase kernels.
PassCost engine_step_cost(const InferContext& c, const ParallelConfig& p, double decode_requests, double prefill, double started,
                          double mb);
// The steady state at `concurrency` (>= 1) requests in flight per replica.
// A prefill engine's TTFT is its own (queue + chunks + host); a decode engine's is 0 and its
// output counts the O - 1 tokens after the first.
ServingPoint serve_at(const InferContext& c, const ParallelConfig& p, int64_t concurrency, ServeRole role = ServeRole::both);
// Point r of layout p with its energy filled in (unchanged when the system has no energy
// figures): costed where a point is kept or reported, not for every concurrency a search tries.
ServingPoint with_energy(const SystemSpec& sys, const ParallelConfig& p, ServingPoint r);
// Memory of that steady state on one GPU (weights, KV blocks, the largest step's activations).
InferMemory serving_memory(const InferContext& c, const ParallelConfig& p, int64_t concurrency, ServeRole role = ServeRole::both);
// The largest concurrency whose memory fits (0: not even one request).
int64_t max_concurrency_that_fits(const InferContext& c, const ParallelConfig& p, ServeRole role = ServeRole::both);
// The concurrencies worth evaluating up to `limit`: powers of two, the limit, and the two either
// side of where prompts start to queue (beyond it throughput stops growing).
std::vector<int64_t> concurrency_candidates(const InferContext& c, int64_t limit, ServeRole role = ServeRole::both);
// Seconds a replica holding at most `concurrency` requests takes to serve `requests` queued at
// once: prompts admitted as slots free, chunked at prefill_chunk_tokens per step first come
// first served, decode steps of every request past its prompt (simulate_engine); each step costed
// as serve_at's (interpolated between costed mixes), plus the host's per-request cost on each slot.
double finite_run_s(const InferContext& c, const ParallelConfig& p, int64_t concurrency, int64_t requests);
// The highest output tokens/s/GPU over the concurrencies that fit (the smallest such C on ties);
// over a finite run of inference.num_requests when set (run_s); nullopt when not even one
// request fits.
std::optional<ServingPoint> max_throughput(const InferContext& c, const ParallelConfig& p);

// One layout's steady states in one role, each concurrency costed once (serve_at), and the
// largest concurrency that fits: a search tries, bisects and re-tries concurrencies of a layout,
// and its weights are the same at every one. The context must outlive it.
class LayoutPoints {
public:
    LayoutPoints(const InferContext& c, const ParallelConfig& p, ServeRole role = ServeRole::both);
    [[nodiscard]] int64_t limit() const { return limit_; }  // max_concurrency_that_fits
    const ServingPoint& at(int64_t concurrency);           // serve_at; valid while this lives

private:
    const InferContext& c_;
    ParallelConfig p_;
    ServeRole role_;
    double weights_;
    int64_t limit_;
    std::map<int64_t, ServingPoint> seen_;
};

// Disaggregated serving: one prompt's KV cache moved from a `prefill` to a `decode` instance,
// every GPU sending (receiving) its own shard at once (the slower side's shard), over the
// scale-up fabric (`within_domain`) or the scale-out network.
double kv_transfer_s(const InferContext& c, const ParallelConfig& prefill, const ParallelConfig& decode, bool within_domain);
// Energy of one prompt's KV cache moved to a `decode` replica: read from HBM at the sender,
// written at the receiver, over that link.
Energy kv_transfer_energy(const InferContext& c, const ParallelConfig& decode, bool within_domain);

}  // namespace sm
