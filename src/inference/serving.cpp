#include "inference/serving.hpp"

#include <algorithm>
#include <array>
#include <cmath>

#include "inference/serving_benchmark.hpp"

namespace sm {

namespace {

double as_d(int64_t x) { return static_cast<double>(x); }

// Where requests are in their lives, averaged over the steady state. A request spends
// ceil(I / chunk) steps on its prompt and O - 1 steps decoding (the prompt's last chunk yields
// token 1). When the prompts of C requests need more than the chunk budget per step, they
// queue and a lifetime stretches to C I / chunk steps (the prefill-bound regime).
// The prompt tokens are not spread evenly over the steps: a prompt runs in ceil(I / chunk)
// steps of I / ceil(I / chunk) tokens each (more when prompts queue), so K = C I / q of the N
// steps carry a chunk of q tokens and the rest decode alone. A step's time is not linear in its
// tokens (a decode step is bound by reading the weights, a chunk by its FLOP), so the two kinds
// are costed apart; the TTFT is the request's own chunk steps, not average ones.
struct Flow {
    double steps;            // N, steps per request lifetime
    double decode;           // decoding requests per step: C (O - 1) / (E N), E tokens per decode step
    double prefill;          // prompt tokens per step, on average: C I / N
    double started;          // prompts completed (first tokens sampled) per step: C / N
    double chunk = 0;        // q, prompt tokens of a step that carries any: max(I / ceil(I / chunk), C I / N)
    double chunk_steps = 0;  // K = C I / q, the steps of a lifetime that carry prompt tokens (<= N)
    // Decoding requests in a chunk step. Outside the prefill-bound regime nothing queues, so a
    // step without prompt tokens decodes all C; the rest of the C (O - 1) / E request-steps of
    // decode fall on the K chunk steps: C (ds - N + K) / K (a lone request's chunk decodes none).
    double chunk_decode = 0;
    double to_first;         // steps from admission to the first token: N - (O - 1) / E
    bool prefill_bound;
};

}  // namespace

double tokens_per_decode_step(const InferenceSpec& s) {
    // Draft i (1..k) survives with probability a^i; the verify pass adds one token of its own:
    // E = 1 + a + ... + a^k = (1 - a^(k+1)) / (1 - a) (Leviathan et al., ICML 2023).
    double e = 0, p = 1;
    for (int64_t i = 0; i <= s.speculative_tokens; ++i, p *= s.acceptance_rate) e += p;
    return e;
}

namespace {

Flow flow(const InferenceSpec& s, int64_t concurrency, ServeRole role) {
    // A prefill engine's requests leave with their first token; a decode engine's arrive with
    // their prompt already cached.
    const double in = role == ServeRole::decode ? 0.0 : as_d(s.input_len);
    const double decode_steps = role == ServeRole::prefill ? 0.0 : as_d(s.output_len - 1) / tokens_per_decode_step(s);
    const double chunk = as_d(s.prefill_chunk_tokens);
    const double own = decode_steps + std::ceil(in / chunk);
    const double queued = as_d(concurrency) * in / chunk;
    Flow f;
    f.prefill_bound = queued > own;
    f.steps = std::max(own, queued);
    f.started = as_d(concurrency) / f.steps;
    f.decode = f.started * decode_steps;
    f.prefill = f.started * in;
    f.to_first = f.steps - decode_steps;
    if (in > 0) {
        f.chunk = std::max(in / std::ceil(in / chunk), f.prefill);
        f.chunk_steps = as_d(concurrency) * in / f.chunk;
        f.chunk_decode = as_d(concurrency) * (decode_steps - f.steps + f.chunk_steps) / f.chunk_steps;
    }
    return f;
}

int64_t micro_batches(const ParallelConfig& p, int64_t concurrency) { return std::min(p.pp, concurrency); }

// The step's token-linear shape for `tokens` tokens side by side (one micro-batch).
LayerShape tokens_shape(const ParallelConfig& p, const InferenceSpec& s, double tokens) {
    LayerShape t = decode_shape(p, s, as_d(s.input_len));
    t.batch = 1;
    t.q_len = tokens;
    return t;
}

double kv_tokens_per_request(const InferenceSpec& s, ServeRole role) {
    // A request's context grows from I to I + O over its life: reserved whole from admission, or
    // held as it grows (I + O/2 on average), in whole blocks; a prefill engine holds the prompt's
    // I until the cache leaves.
    const double block = as_d(s.kv_block_tokens);
    const double output = s.kv_reservation == KvReservation::full ? as_d(s.output_len) : as_d(s.output_len) / 2.0;
    const double tokens = role == ServeRole::prefill ? as_d(s.input_len) : as_d(s.input_len) + output;
    return std::ceil(tokens / block) * block;
}

// Whether the caches fit in the engine's pool: kv_cache_memory_fraction of what the rest leaves
// (at 1, the whole of it: the peak within HBM).
bool cache_fits(const InferContext& c, const InferMemory& m) {
    const double rest = m.peak_bytes_per_gpu - m.kv_cache_bytes;
    return m.kv_cache_bytes <= c.inference.kv_cache_memory_fraction * (c.system.accel.memory_bytes - rest);
}

}  // namespace

namespace {

// serving_memory with the layout's weights (weights_bytes(c, p)) given: a search asks it per
// concurrency, and the weights are the same at every one.
InferMemory serving_memory(const InferContext& c, const ParallelConfig& p, int64_t concurrency, ServeRole role, double weights) {
    const InferenceSpec& s = c.inference;
    const Flow f = flow(s, concurrency, role);
    const double mb = as_d(micro_batches(p, concurrency));
    InferMemory mem;
    mem.weights_bytes = weights;
    mem.overhead_bytes = s.framework_overhead_bytes;
    InferenceSpec all = s;
    all.batch = concurrency;  // every request in flight keeps its cache on every stage
    mem.kv_cache_bytes = kv_cache_bytes_per_gpu(c.model, p, all, kv_tokens_per_request(s, role));
    // The largest step: a micro-batch's decode tokens beside a whole chunk of prompt.
    const double chunk = role == ServeRole::decode ? 0.0 : std::max(f.prefill, as_d(std::min(s.input_len, s.prefill_chunk_tokens)));
    mem.activations_bytes = activation_bytes(c, p, tokens_shape(p, s, (f.decode + chunk) / mb));
    mem.peak_bytes_per_gpu = mem.weights_bytes + mem.overhead_bytes + mem.kv_cache_bytes + mem.activations_bytes;
    return mem;
}

double weights_bytes(const InferContext& c, const ParallelConfig& p) {
    return weight_params_per_gpu(c.model, p) * bytes_per_element(c.inference.weight_precision);
}

ServingPoint serve_at(const InferContext& c, const ParallelConfig& p, int64_t concurrency, ServeRole role, double weights);

int64_t max_concurrency_that_fits(const InferContext& c, const ParallelConfig& p, ServeRole role, double weights) {
    // Memory grows with C (more caches, never fewer tokens per step): bisect.
    auto fits = [&](int64_t n) { return cache_fits(c, serving_memory(c, p, n, role, weights)); };
    return largest_on_prefix(fits, int64_t{1} << 24);
}

}  // namespace

InferMemory serving_memory(const InferContext& c, const ParallelConfig& p, int64_t concurrency, ServeRole role) {
    return serving_memory(c, p, concurrency, role, weights_bytes(c, p));
}

PassCost engine_step_cost(const InferContext& c, const ParallelConfig& p, double decode_requests, double prefill, double started, double mb) {
    const InferenceSpec& s = c.inference;
    // A decode-only step within the captured batch sizes replays a CUDA graph: nothing is
    // dispatched from the host.
    const bool graphed = prefill == 0 && decode_requests / mb <= as_d(s.cuda_graph_max_batch);
    const double verify = as_d(s.speculative_tokens + 1);  // tokens each decoding request runs per step
    const LayerShape tokens = tokens_shape(p, s, (decode_requests * verify + prefill) / mb);
    LayerShape decode = decode_shape(p, s, as_d(s.input_len) + as_d(s.output_len) / 2.0);  // mean decode context
    decode.batch = decode_requests / mb;
    decode.q_len = verify;
    LayerShape prompt = tokens_shape(p, s, prefill / mb);
    prompt.decode = false;  // prompt chunks run the context-phase kernels (FlashAttention; MLA expanded)
    prompt.kv_len = as_d(s.input_len);  // over a whole prompt, its chunks see I/2 keys each on average
    prompt.causal_fraction = c.model.causal ? 0.5 : 1.0;
    const std::array<LayerShape, 2> cores{decode, prompt};
    // The head samples each decoding request's tokens and each finished prompt's first token.
    PassCost step = mixed_pass_cost(c, p, tokens, cores, (decode_requests * verify + started) / mb, graphed);
    if (s.speculative_tokens > 0 && decode_requests > 0) {
        // Drafting: k MTP passes one after another, each one block and the head over the
        // decoding requests.
        const ModelSpec mtp = mtp_module_model(c.model);
        ParallelConfig one = p;
        one.pp = 1;
        LayerShape draft = decode;
        draft.q_len = 1;
        const std::array<LayerShape, 1> draft_core{draft};
        step += mixed_pass_cost({mtp, c.system, s}, one, tokens_shape(one, s, decode_requests / mb), draft_core, decode_requests / mb,
                                graphed)
                    .scaled(as_d(s.speculative_tokens));
    }
    return step;
}

ServingPoint serve_at(const InferContext& c, const ParallelConfig& p, int64_t concurrency, ServeRole role) {
    return serve_at(c, p, concurrency, role, weights_bytes(c, p));
}

namespace {

ServingPoint serve_at(const InferContext& c, const ParallelConfig& p, int64_t concurrency, ServeRole role, double weights) {
    const InferenceSpec& s = c.inference;
    const Flow f = flow(s, concurrency, role);
    ServingPoint r;
    r.concurrency = concurrency;
    r.micro_batches = micro_batches(p, concurrency);
    r.steps_per_request = f.steps;
    r.decode_tokens = f.decode;
    r.prefill_tokens = f.prefill;
    r.prefill_bound = f.prefill_bound;
    r.kv_tokens_per_request = kv_tokens_per_request(s, role);
    r.gpus = p.tp * p.pp * p.dp;
    const double mb = as_d(r.micro_batches);
    // A chunk step finishes C / K prompts (their first tokens sampled); a decode engine gets the
    // first token with the cache and samples no prompt's.
    const PassCost chunk_step =
        f.chunk_steps > 0 ? engine_step_cost(c, p, f.chunk_decode, f.chunk, as_d(concurrency) / f.chunk_steps, mb) : PassCost{};
    const double share = f.chunk_steps / f.steps;  // of the steps, those that carry a chunk
    r.step = chunk_step.scaled(share);
    if (share < 1) r.step += engine_step_cost(c, p, as_d(concurrency), 0, 0, mb).scaled(1 - share);
    r.step_s = r.step.total_s();
    const double lifetime_s = f.steps * r.step_s;

    // The fixed per-request host cost is paid once, where the request enters (not by a decode pool).
    const double host = role == ServeRole::decode ? 0.0 : c.system.eff.host_request_overhead_s;
    const double e = tokens_per_decode_step(s);
    // A request's own steps to its first token carry a chunk each (queued ones too: a queue of
    // prompts is a full chunk every step); its decode steps see the rest.
    // A request's chunk is one micro-batch's (with pp stages, not spread over the mb in flight).
    const double own_chunk_s =
        mb > 1 && f.chunk_steps > 0
            ? engine_step_cost(c, p, f.chunk_decode, f.chunk * mb, as_d(concurrency) / f.chunk_steps * mb, mb).total_s()
            : chunk_step.total_s();
    const double first_s = f.to_first * own_chunk_s;
    // (One output token: no decode phase; a decode step's time stands in.)
    r.tpot_s = role == ServeRole::prefill ? 0.0
               : s.output_len > 1         ? (lifetime_s - f.to_first * chunk_step.total_s()) / as_d(s.output_len - 1)
                                          : r.step_s / e;
    r.ttft_s = role == ServeRole::decode ? 0.0 : first_s + host;
    r.e2e_latency_s = lifetime_s + host;
    // Little's law: C requests in flight, each living e2e seconds; each yields O tokens (a prefill
    // engine's the first, a decode engine's the other O - 1).
    r.requests_per_s = as_d(p.dp) * as_d(concurrency) / r.e2e_latency_s;
    r.output_tokens_per_s = r.requests_per_s * as_d(tokens_yielded(s, role));
    r.output_tokens_per_s_per_gpu = r.output_tokens_per_s / as_d(r.gpus);
    r.output_tokens_per_s_per_user = role == ServeRole::prefill ? 0.0 : 1.0 / r.tpot_s;
    r.memory = serving_memory(c, p, concurrency, role, weights);
    r.fits_in_memory = cache_fits(c, r.memory);
    return r;
}

}  // namespace

LayoutPoints::LayoutPoints(const InferContext& c, const ParallelConfig& p, ServeRole role)
    : c_(c), p_(p), role_(role), weights_(weights_bytes(c, p)), limit_(max_concurrency_that_fits(c, p, role, weights_)) {}

const ServingPoint& LayoutPoints::at(int64_t concurrency) {
    const auto it = seen_.find(concurrency);
    if (it != seen_.end()) return it->second;
    return seen_.emplace(concurrency, serve_at(c_, p_, concurrency, role_, weights_)).first->second;
}

ServingPoint with_energy(const SystemSpec& sys, const ParallelConfig& p, ServingPoint r) {
    if (!sys.energy.known()) return r;
    // In a step each stage runs each micro-batch once; the tp GPUs of a stage do alike.
    r.energy = energy_of(sys, Work{}.add(r.step.work(), as_d(p.tp) * as_d(r.micro_batches)), r.step_s, as_d(p.tp * p.pp));
    r.energy_per_request_j = r.energy.total_j() / replica_requests_per_step(r, p.dp);
    return r;
}

double replica_requests_per_step(const ServingPoint& r, int64_t dp) { return r.requests_per_s / as_d(dp) * r.step_s; }

int64_t tokens_yielded(const InferenceSpec& s, ServeRole role) {
    return role == ServeRole::both ? s.output_len : role == ServeRole::prefill ? 1 : s.output_len - 1;
}

int64_t largest_on_prefix(const std::function<bool(int64_t)>& ok, int64_t limit) {
    if (limit < 1 || !ok(1)) return 0;
    if (ok(limit)) return limit;
    int64_t lo = 1, hi = limit;  // ok(lo), !ok(hi)
    while (hi - lo > 1) {
        const int64_t mid = lo + (hi - lo) / 2;
        (ok(mid) ? lo : hi) = mid;
    }
    return lo;
}

int64_t max_concurrency_that_fits(const InferContext& c, const ParallelConfig& p, ServeRole role) {
    return max_concurrency_that_fits(c, p, role, weights_bytes(c, p));
}

std::vector<int64_t> concurrency_candidates(const InferContext& c, int64_t limit, ServeRole role) {
    const InferenceSpec& s = c.inference;
    std::vector<int64_t> out;
    for (int64_t n = 1; n < limit; n *= 2) out.push_back(n);
    out.push_back(limit);
    std::sort(out.begin(), out.end());
    if (role == ServeRole::decode) return out;  // no prompts: nothing queues
    // flow(): prompts start to queue where C I / chunk exceeds (O - 1) + ceil(I / chunk).
    const double chunk = as_d(s.prefill_chunk_tokens);
    const double decode_steps = role == ServeRole::prefill ? 0.0 : as_d(s.output_len - 1) / tokens_per_decode_step(s);
    const double own = decode_steps + std::ceil(as_d(s.input_len) / chunk);
    const double knee = own * chunk / as_d(s.input_len);
    for (const double k : {std::floor(knee), std::ceil(knee)})
        if (k >= 1 && k < as_d(limit)) out.push_back(static_cast<int64_t>(k));
    std::sort(out.begin(), out.end());
    out.erase(std::unique(out.begin(), out.end()), out.end());
    return out;
}

double finite_run_s(const InferContext& c, const ParallelConfig& p, int64_t concurrency, int64_t requests) {
    const InferenceSpec& s = c.inference;
    // Step seconds at d decoding requests and q prompt tokens: costed at d = 1, 2, 4, ...,
    // concurrency with no prompt and with a full chunk (finishing q / I prompts), linear between
    // (a step of prompts alone, at the run's start, is costed as one with a decoding request).
    std::vector<double> counts;
    for (int64_t d = 1; d < concurrency; d *= 2) counts.push_back(as_d(d));
    counts.push_back(as_d(concurrency));
    // The requests queued at once, run through the benchmark's engine (mixed chunked prefill,
    // the host's time added apart below).
    const EngineModel e = engine_model(c, p, concurrency, std::move(counts), {0.0, as_d(s.prefill_chunk_tokens)});
    double t = 0;
    for (const RequestTimes& r : simulate_engine(e, {0, requests, std::vector<double>(static_cast<size_t>(requests), 0.0)}))
        t = std::max(t, r.done_s);
    // The host's fixed cost keeps a slot busy besides the steps (as in the steady state's lifetime).
    return t + c.system.eff.host_request_overhead_s * as_d(requests) / as_d(concurrency);
}

std::optional<ServingPoint> max_throughput(const InferContext& c, const ParallelConfig& p) {
    LayoutPoints at(c, p);
    const int64_t limit = at.limit();
    if (limit == 0) return std::nullopt;
    const InferenceSpec& s = c.inference;
    // A finite run's requests are dealt to the dp replicas alike.
    const int64_t per_replica = (s.num_requests + p.dp - 1) / p.dp;
    std::optional<ServingPoint> best;
    for (const int64_t n : concurrency_candidates(c, limit)) {
        ServingPoint pt = with_energy(c.system, p, at.at(n));  // per request of the steady state
        if (per_replica > 0) {
            pt.run_s = finite_run_s(c, p, n, per_replica);
            pt.requests_per_s = as_d(s.num_requests) / pt.run_s;  // the run ends with its fullest replica
            pt.output_tokens_per_s = pt.requests_per_s * as_d(s.output_len);
            pt.output_tokens_per_s_per_gpu = pt.output_tokens_per_s / as_d(pt.gpus);
        }
        if (!best || pt.output_tokens_per_s_per_gpu > best->output_tokens_per_s_per_gpu * (1.0 + 1e-9)) best = pt;
    }
    return best;
}

namespace {

// One prompt's KV cache on each GPU of layout `p`.
double prompt_kv_bytes_per_gpu(const InferContext& c, const ParallelConfig& p) {
    InferenceSpec one = c.inference;
    one.batch = 1;
    return kv_cache_bytes_per_gpu(c.model, p, one, static_cast<double>(c.inference.input_len));
}

}  // namespace

double kv_transfer_s(const InferContext& c, const ParallelConfig& prefill, const ParallelConfig& decode, bool within_domain) {
    const double shard = std::max(prompt_kv_bytes_per_gpu(c, prefill), prompt_kv_bytes_per_gpu(c, decode));
    const LinkLevel& link = within_domain ? c.system.scale_up : c.system.scale_out;
    return link.latency_s + shard / link.effective_bw();
}

Energy kv_transfer_energy(const InferContext& c, const ParallelConfig& decode, bool within_domain) {
    if (!c.system.energy.known()) return {};
    const double bytes = prompt_kv_bytes_per_gpu(c, decode) * static_cast<double>(decode.tp * decode.pp);
    Work w;
    w.hbm_bytes = 2.0 * bytes;
    (within_domain ? w.scale_up_bytes : w.scale_out_bytes) = bytes;
    return energy_of(c.system, w, 0.0, 0.0);
}

}  // namespace sm
