#include "io/serve_report.hpp"

#include <fmt/format.h>

#include <tuple>

#include "io/energy_report.hpp"
#include "io/infer_report.hpp"

namespace sm {

EnergyScope serve_energy_scope(const ParallelConfig& p, const ServingPoint& r) {
    const double requests_per_step = replica_requests_per_step(r, p.dp);
    const double k = requests_per_step > 0 ? 1.0 / requests_per_step : 0.0;
    return {r.energy.scaled(k), r.step_s * k, static_cast<double>(p.tp * p.pp), r.output_tokens_per_s / r.requests_per_s, 1.0};
}

namespace {

// Mean and percentiles of each latency, as `key`, `key_p50`, ...
void add_latency_keys(Json& j, const BenchmarkResult& b) {
    for (const auto& [key, x] : {std::pair{"ttft_s", b.ttft_s}, std::pair{"tpot_s", b.tpot_s}, std::pair{"e2e_latency_s", b.e2e_s}}) {
        j[key] = x.mean;
        j[std::string(key) + "_p50"] = x.p50;
        j[std::string(key) + "_p90"] = x.p90;
        j[std::string(key) + "_p99"] = x.p99;
    }
}

// A benchmark's figures: its latencies, its throughput over the run on `gpus`, and what ran.
void add_benchmark_keys(Json& j, const BenchmarkResult& b, double gpus, int64_t clients, double request_rate_per_s, uint64_t seed) {
    add_latency_keys(j, b);
    j["output_tokens_per_s"] = b.output_tokens_per_s;
    j["output_tokens_per_s_per_gpu"] = b.output_tokens_per_s / gpus;
    j["output_tokens_per_s_per_user"] = b.tpot_s.mean > 0 ? 1.0 / b.tpot_s.mean : 0.0;
    j["benchmark"] = {{"loop", clients > 0 ? "closed" : "open"},
                      {"clients", clients},
                      {"request_rate_per_s", request_rate_per_s},
                      {"seed", seed},
                      {"requests", b.requests},
                      {"duration_s", b.duration_s},
                      {"requests_per_s", b.requests_per_s}};
}

// The run's output rate, in all and per GPU.
std::string throughput_line(const BenchmarkResult& b, double gpus) {
    return fmt::format("  output tokens/s      {:>12.1f}   ({:.1f} per GPU) over {} from the first request to the last token\n",
                       b.output_tokens_per_s, b.output_tokens_per_s / gpus, seconds(b.duration_s));
}

// The latency table of a benchmark.
std::string latency_table(const BenchmarkResult& b) {
    std::string o = fmt::format("\n  {:<21}{:>12}{:>12}{:>12}{:>12}\n", "", "mean", "p50", "p90", "p99");
    for (const auto& [name, x] : {std::pair{"time to first token", b.ttft_s}, std::pair{"time per out token", b.tpot_s},
                                  std::pair{"end-to-end latency", b.e2e_s}})
        o += fmt::format("  {:<21}{:>12}{:>12}{:>12}{:>12}\n", name, seconds(x.mean), seconds(x.p50), seconds(x.p90), seconds(x.p99));
    return o;
}

}  // namespace

Json serve_json(const Scenario& s, const ServingPoint& r, const std::string& mode, int64_t max_concurrency_fits,
                const BenchmarkReport* bench) {
    const InferenceSpec& i = s.inference;
    const InferMemory& m = r.memory;
    Json j{
        {"model", s.model.name},
        {"system", s.system.name},
        {"parallel", parallel_json(s.parallel)},
        {"mode", mode},
        {"concurrency", r.concurrency},
        {"max_concurrency_fits", max_concurrency_fits},
        {"input_len", i.input_len},
        {"output_len", i.output_len},
        {"prefill_chunk_tokens", i.prefill_chunk_tokens},
        {"kv_block_tokens", i.kv_block_tokens},
        {"kv_reservation", to_string(i.kv_reservation)},
        {"kv_cache_memory_fraction", i.kv_cache_memory_fraction},
        {"precision", precision_json(i)},
        {"gpus", r.gpus},
        {"ttft_s", r.ttft_s},
        {"tpot_s", r.tpot_s},
        {"e2e_latency_s", r.e2e_latency_s},
        {"output_tokens_per_s", r.output_tokens_per_s},
        {"output_tokens_per_s_per_gpu", r.output_tokens_per_s_per_gpu},
        {"output_tokens_per_s_per_user", r.output_tokens_per_s_per_user},
        {"steady_state",
         {{"steps_per_request", r.steps_per_request},
          {"decode_tokens_per_step", r.decode_tokens},
          {"prefill_tokens_per_step", r.prefill_tokens},
          {"prefill_bound", r.prefill_bound},
          {"micro_batches", r.micro_batches},
          {"kv_tokens_per_request", r.kv_tokens_per_request}}},
        {"fits_in_memory", r.fits_in_memory},
        {"memory", memory_json(s, m)},
    };
    if (bench) {
        const BenchmarkResult& b = bench->result;
        j["steady_state"]["ttft_s"] = r.ttft_s;
        j["steady_state"]["tpot_s"] = r.tpot_s;
        j["steady_state"]["e2e_latency_s"] = r.e2e_latency_s;
        j["steady_state"]["output_tokens_per_s"] = r.output_tokens_per_s;
        add_benchmark_keys(j, b, static_cast<double>(r.gpus), bench->clients, bench->request_rate_per_s, bench->seed);
        j["benchmark"]["slots_per_replica"] = b.slots;
        j["benchmark"]["prefill_schedule"] = to_string(i.prefill_schedule);
    }
    // A finite run (inference.num_requests): the throughput keys above are the run's.
    if (r.run_s > 0) j["finite_run"] = {{"num_requests", i.num_requests}, {"run_s", r.run_s}};
    // A windowed model: its window and what its windowed layers cache.
    if (s.model.sliding_window > 0)
        j["sliding_window"] = {{"tokens", s.model.sliding_window},
                               {"windowed_layer_share", windowed_layer_share(s.model)},
                               {"window_cache", to_string(i.window_cache)}};
    add_energy_keys(j, s.system, serve_energy_scope(s.parallel, r), true);
    return j;
}

namespace {

// What the benchmark's clients measured (`infer --concurrency` / `--request-rate`), the steady
// state at the same concurrency beside it.
std::string benchmark_text(const Scenario& s, const ServingPoint& r, const BenchmarkReport& bench) {
    const InferenceSpec& i = s.inference;
    const BenchmarkResult& b = bench.result;
    std::string o;
    if (bench.clients > 0)
        o += fmt::format("Benchmark: closed loop of {} clients ({} per replica), {} requests; {} slots per replica (largest "
                         "concurrency that fits)\n",
                         bench.clients, r.concurrency, b.requests, b.slots);
    else
        o += fmt::format("Benchmark: Poisson arrivals at {:g} requests/s (seed {}), {} requests; {} slots per replica\n",
                         bench.request_rate_per_s, bench.seed, b.requests, b.slots);
    o += fmt::format("Prompts: prefilled {}, at most {} tokens a step (inference.prefill_schedule {})\n",
                     i.prefill_schedule == PrefillSchedule::mixed ? "in chunks beside the decodes" : "in steps of their own",
                     i.prefill_chunk_tokens, to_string(i.prefill_schedule));
    o += latency_table(b);
    o += throughput_line(b, static_cast<double>(r.gpus));
    o += fmt::format("\n  steady state at {} in flight per replica: TTFT {}, TPOT {}, {:.1f} output tokens/s{}\n", r.concurrency,
                     seconds(r.ttft_s), seconds(r.tpot_s), r.output_tokens_per_s, r.prefill_bound ? " (prompts queue: prefill-bound)" : "");
    return o;
}

// The steady state alone (`--max-throughput`).
std::string steady_text(const Scenario& s, const ServingPoint& r, const std::string& mode, int64_t max_concurrency_fits) {
    std::string o;
    o += fmt::format("Concurrency {} per replica{}   (largest that fits: {})\n", r.concurrency,
                     mode == "max_throughput" ? ", the best for throughput" : "", max_concurrency_fits);
    o += fmt::format("\n  time to first token  {:>12}{}\n", seconds(r.ttft_s), r.prefill_bound ? "   (prompts queue: prefill-bound)" : "");
    o += fmt::format("  time per out token   {:>12}\n", seconds(r.tpot_s));
    o += fmt::format("  end-to-end latency   {:>12}\n", seconds(r.e2e_latency_s));
    o += fmt::format("  output tokens/s      {:>12.1f}   ({:.1f} per GPU, {:.1f} per user)\n", r.output_tokens_per_s,
                     r.output_tokens_per_s_per_gpu, r.output_tokens_per_s_per_user);
    if (r.run_s > 0)
        o += fmt::format("    over a finite run of {} requests queued at once: {} until the last finishes (ramp-up and tail "
                         "included; the latencies are the steady state's)\n",
                         s.inference.num_requests, seconds(r.run_s));
    return o;
}

}  // namespace

std::string serve_text(const Scenario& s, const ServingPoint& r, const std::string& mode, int64_t max_concurrency_fits,
                       const BenchmarkReport* bench) {
    const InferenceSpec& i = s.inference;
    const ParallelConfig& p = s.parallel;
    std::string o;
    o += fmt::format("Serving (continuous batching): {} on {} x {} ({})\n", s.model.name, r.gpus, s.system.accel.name,
                     s.system.name);
    o += fmt::format("Layout: tp {} . pp {} . dp {} (replicas)   {} in / {} out   math {} . weights {} . KV {}\n", p.tp, p.pp,
                     p.dp, i.input_len, i.output_len, to_string(i.precision), to_string(i.weight_precision),
                     to_string(i.kv_precision));
    if (s.model.sliding_window > 0)
        o += fmt::format("Sliding window {} tokens on {:.0f}% of the layers; their cache holds {}\n", s.model.sliding_window,
                         100.0 * windowed_layer_share(s.model),
                         i.window_cache == WindowCache::window ? "the window" : "the whole sequence (inference.window_cache)");
    o += bench ? benchmark_text(s, r, *bench) : steady_text(s, r, mode, max_concurrency_fits);
    o += fmt::format("\n  each engine step: {:.1f} decode + {:.1f} prompt tokens over {} micro-batch(es); {:.1f} steps per request\n",
                     r.decode_tokens, r.prefill_tokens, r.micro_batches, r.steps_per_request);
    const InferMemory& m = r.memory;
    o += fmt::format("\n  memory per GPU       {:>12} of {}{}\n", gib(m.peak_bytes_per_gpu), gib(s.system.accel.memory_bytes),
                     r.fits_in_memory ? "" : "   DOES NOT FIT");
    o += fmt::format("    weights {} . KV cache {} ({:.0f} tokens per request) . activations {} . framework {}\n",
                     gib(m.weights_bytes), gib(m.kv_cache_bytes), r.kv_tokens_per_request, gib(m.activations_bytes),
                     gib(m.overhead_bytes));
    o += energy_text(s.system, serve_energy_scope(s.parallel, r), true);
    return o;
}

Json disagg_json(const Scenario& s, const DisaggBenchmark& d, int64_t clients, double request_rate_per_s, uint64_t seed) {
    const InferenceSpec& i = s.inference;
    const BenchmarkResult& b = d.result;
    auto role = [](const RolePool& r, int64_t slots) {
        return Json{{"workers", r.workers}, {"parallel", parallel_json(r.layout)}, {"gpus", r.gpus()}, {"slots_per_engine", slots}};
    };
    Json j{
        {"model", s.model.name},
        {"system", s.system.name},
        {"mode", "disaggregated"},
        {"prefill", role(s.disaggregated->prefill, d.prefill_slots)},
        {"decode", role(s.disaggregated->decode, b.slots)},
        {"gpus", s.disaggregated->gpus()},
        {"input_len", i.input_len},
        {"output_len", i.output_len},
        {"prefill_chunk_tokens", i.prefill_chunk_tokens},
        {"precision", precision_json(i)},
        {"kv_transfer_s", d.kv_transfer_s},
        {"kv_transfer_link", d.within_domain ? "scale_up" : "scale_out"},
    };
    add_benchmark_keys(j, b, static_cast<double>(s.disaggregated->gpus()), clients, request_rate_per_s, seed);
    return j;
}

std::string disagg_text(const Scenario& s, const DisaggBenchmark& d, int64_t clients, double request_rate_per_s, uint64_t seed) {
    const InferenceSpec& i = s.inference;
    const BenchmarkResult& b = d.result;
    const DisaggDeployment& dep = *s.disaggregated;
    std::string o = fmt::format("Serving (disaggregated): {} on {} x {} ({})   {} in / {} out   math {} . weights {} . KV {}\n",
                                s.model.name, dep.gpus(), s.system.accel.name, s.system.name, i.input_len, i.output_len,
                                to_string(i.precision), to_string(i.weight_precision), to_string(i.kv_precision));
    for (const auto& [name, pool, slots] : {std::tuple{"prefill", &dep.prefill, d.prefill_slots}, std::tuple{"decode", &dep.decode, b.slots}})
        o += fmt::format("  {:<8}{} worker(s) of tp {} . pp {} . dp {} . ep {}: {} GPUs, {} slots per engine (a worker runs dp engines)\n",
                         name, pool->workers, pool->layout.tp, pool->layout.pp, pool->layout.dp, pool->layout.ep, pool->gpus(), slots);
    o += fmt::format("  KV cache of a prompt moves in {} over the {}\n", seconds(d.kv_transfer_s),
                     d.within_domain ? "scale-up fabric" : "scale-out network");
    if (clients > 0)
        o += fmt::format("Benchmark: closed loop of {} clients, {} requests\n", clients, b.requests);
    else
        o += fmt::format("Benchmark: Poisson arrivals at {:g} requests/s (seed {}), {} requests\n", request_rate_per_s, seed, b.requests);
    o += latency_table(b);
    o += throughput_line(b, static_cast<double>(dep.gpus()));
    return o;
}

}  // namespace sm
