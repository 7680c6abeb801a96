// The serving benchmark's engine stepped by hand: a closed loop's first wave and its refill, a
// slot wait, prefill as a step of its own, host time; percentiles by hand; Poisson arrivals
// against a hand simulation of the same queue; and the model's engine against the static prefill.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "inference/serving_benchmark.hpp"
#include "test_helpers.hpp"

namespace sm {
namespace {

// Prompts of 100 tokens in a budget of 100, 3 output tokens (2 decode steps); a step costs
// 1 s + 0.01 s per prompt token + 0.1 s per decoding request.
EngineModel toy_engine(int64_t slots) {
    EngineModel e;
    e.slots = slots;
    e.chunk_tokens = 100;
    e.input_len = 100;
    e.output_len = 3;
    e.step_s = [](double d, double q) { return 1.0 + 0.01 * q + 0.1 * d; };
    return e;
}

// Each request's first-token and last-token times, in the order sent.
void expect_times(const std::vector<RequestTimes>& r, const std::vector<std::pair<double, double>>& first_done) {
    ASSERT_EQ(r.size(), first_done.size());
    for (size_t i = 0; i < r.size(); ++i) {
        EXPECT_DOUBLE_EQ(r[i].first_token_s, first_done[i].first) << "request " << i;
        EXPECT_DOUBLE_EQ(r[i].done_s, first_done[i].second) << "request " << i;
    }
}

// The model's cases: Llama 3 8B on one H100 in bf16, `in` prompt and `out` output tokens.
const ModelSpec& llama8b() {
    static const ModelSpec m = testing::model_preset("llama3-8b");
    return m;
}
const SystemSpec& h100() {
    static const SystemSpec s = testing::system_preset("dgx-h100");
    return s;
}
InferenceSpec bf16_workload(int64_t in, int64_t out) {
    InferenceSpec s;
    s.input_len = in;
    s.output_len = out;
    s.precision = s.weight_precision = s.kv_precision = Precision::bf16;
    return s;
}

TEST(ServingBenchmark, ClosedLoopFirstWaveAndRefillByHand) {
    // Two clients, three requests. t = 0: both prompts arrive; the budget takes one a step.
    //   step 1: req 0's prompt (q 100, d 0): 2 s -> t 2, its first token.
    //   step 2: req 1's prompt beside req 0 decoding: 2.1 s -> t 4.1.
    //   step 3: both decode: 1.2 s -> t 5.3, req 0's second decode step: done; its client sends req 2.
    //   step 4: req 2's prompt beside req 1 decoding: 2.1 s -> t 7.4; req 1 done (its 2nd decode).
    //   steps 5-6: req 2 decodes alone: 2 x 1.1 s -> t 9.6.
    const std::vector<RequestTimes> r = simulate_engine(toy_engine(4), {2, 3, {}});
    expect_times(r, {{2.0, 5.3}, {4.1, 7.4}, {7.4, 9.6}});
    EXPECT_DOUBLE_EQ(r[2].sent_s, 5.3);
}

TEST(ServingBenchmark, SeparatePrefillStepsHoldTheDecodesBack) {
    // Both prompts run first, each a step of its own (2 s), then both decode together: 2 x 1.2 s.
    EngineModel e = toy_engine(4);
    e.schedule = PrefillSchedule::separate;
    expect_times(simulate_engine(e, {2, 2, {}}), {{2.0, 6.4}, {4.0, 6.4}});
}

TEST(ServingBenchmark, ARequestWaitsForASlotAndTheHost) {
    // One slot: req 1 waits for req 0 (2 s prompt + 2 x 1.1 s decode = 4.2 s), then runs alike.
    // The host's 0.5 s per request comes before the engine sees it, on the client's clock.
    EngineModel e = toy_engine(1);
    e.host_s = 0.5;
    expect_times(simulate_engine(e, {2, 2, {}}), {{2.5, 4.7}, {6.7, 8.9}});
}

TEST(ServingBenchmark, LongPromptsRunInChunksAndIdleGapsAreSkipped) {
    // Open loop: 250-token prompts (chunks 100, 100, 50) arriving at 0 and 100 s, 1 output token.
    EngineModel e = toy_engine(4);
    e.input_len = 250;
    e.output_len = 1;
    // 2 + 2 + 1.5 s; nothing decodes (one output token: done at the first).
    expect_times(simulate_engine(e, {0, 2, {0.0, 100.0}}), {{5.5, 5.5}, {105.5, 105.5}});
}

// An arrival a hair after a step's end (within 1e-9 of the time) counts as there at its end: a
// run of n steps ends at t + n dt and a step at a time at a sum of n steps, which round apart.
// Req 0 arrives at 96: prompt 96 -> 98, its first decode step -> 99.1. Req 1 arrives 5e-8 after
// 99.1 (within 1e-9 x 99.1): it joins at 99.1, its prompt beside req 0's last decode (2.1 s) ->
// 101.2, then decodes alone (1.1 s each) -> 103.4. Arriving 1e-6 after, it waits for the step
// that ends at 100.2 (req 0's last decode, alone) and its prompt runs alone, 2 s.
TEST(ServingBenchmark, AnArrivalAtAStepsEndWithinRoundingJoinsIt) {
    const EngineModel e = toy_engine(4);
    expect_times(simulate_engine(e, {0, 2, {96.0, 99.1 + 5e-8}}), {{98.0, 101.2}, {101.2, 103.4}});
    const std::vector<RequestTimes> later = simulate_engine(e, {0, 2, {96.0, 99.1 + 1e-6}});
    EXPECT_DOUBLE_EQ(later[1].first_token_s, 100.2 + 2.0);
}

TEST(ServingBenchmark, PercentilesByHand) {
    // 1, 2, 3, 4: numpy's linear percentiles at ranks 1.5, 2.7, 2.97.
    const Summary s = summarise({{4, 1}, {2, 1}, {1, 1}, {3, 1}});
    EXPECT_DOUBLE_EQ(s.mean, 2.5);
    EXPECT_DOUBLE_EQ(s.p50, 2.5);
    EXPECT_DOUBLE_EQ(s.p90, 3.7);
    EXPECT_DOUBLE_EQ(s.p99, 3.97);
    // A weight counts a value that many times: {1, 1, 1, 5}.
    const Summary w = summarise({{5, 1}, {1, 3}});
    EXPECT_DOUBLE_EQ(w.mean, 2.0);
    EXPECT_DOUBLE_EQ(w.p50, 1.0);
    EXPECT_DOUBLE_EQ(w.p90, 1.0 + 0.7 * 4.0);
    EXPECT_DOUBLE_EQ(summarise({}).p99, 0.0);
}

TEST(ServingBenchmark, PoissonArrivalsAreSeededExponentialGaps) {
    const std::vector<double> a = poisson_arrivals(4.0, 200000, 7);
    ASSERT_EQ(a.size(), 200000U);
    EXPECT_TRUE(std::is_sorted(a.begin(), a.end()));
    EXPECT_NEAR(a.back() / 200000.0, 0.25, 0.0025);  // mean gap 1 / rate, within 1%
    // Exponential: the share of gaps above the mean is e^-1.
    int64_t above = 0;
    for (size_t i = 1; i < a.size(); ++i) above += a[i] - a[i - 1] > 0.25;
    EXPECT_NEAR(static_cast<double>(above) / 199999.0, std::exp(-1.0), 0.005);
    EXPECT_EQ(poisson_arrivals(4.0, 10, 7), poisson_arrivals(4.0, 10, 7));
    EXPECT_NE(poisson_arrivals(4.0, 10, 7), poisson_arrivals(4.0, 10, 8));
}

TEST(ServingBenchmark, PoissonQueueAgainstAHandSimulation) {
    // One slot, one output token, a prompt a step of 2 s: a single-server queue with a fixed
    // service time. Lindley's recursion gives each request's wait; its TTFT is wait + 2 s.
    EngineModel e = toy_engine(1);
    e.output_len = 1;
    const std::vector<double> arrivals = poisson_arrivals(0.4, 2000, 11);
    const std::vector<RequestTimes> r = simulate_engine(e, {0, 2000, arrivals});
    std::vector<std::pair<double, double>> hand;
    double free_at = 0;
    for (const double a : arrivals) {
        const double start = std::max(a, free_at);
        free_at = start + 2.0;
        hand.emplace_back(free_at - a, 1.0);
    }
    std::vector<std::pair<double, double>> sim;
    for (const RequestTimes& q : r) sim.emplace_back(q.first_token_s - q.sent_s, 1.0);
    const Summary h = summarise(hand), s = summarise(sim);
    EXPECT_NEAR(s.mean, h.mean, 1e-9);
    EXPECT_NEAR(s.p50, h.p50, 1e-9);
    EXPECT_NEAR(s.p99, h.p99, 1e-9);
    // At 80% load the queue adds to the 2 s service: Pollaczek-Khinchine's mean wait for fixed
    // service, rho s / (2 (1 - rho)) = 0.8 x 2 / 0.4 = 4 s, within the sample's spread.
    EXPECT_NEAR(h.mean, 6.0, 1.0);
}

TEST(ServingBenchmark, LoneClientSeesTheStaticPrefillAndDecode) {
    // One client on the model: TTFT is the static prefill of one request, and each request's
    // decode steps are single-request steps (tested against the static path, costed apart).
    InferenceSpec s = bf16_workload(1024, 64);
    s.cuda_graph_max_batch = 0;  // decode steps dispatched by the host, as the static path's
    const InferContext c{llama8b(), h100(), s};
    const BenchmarkResult r = run_benchmark(c, ParallelConfig{}, 8, PrefillSchedule::mixed, 1, 0, 3, 1);
    const double prefill = prefill_cost(c, ParallelConfig{}).total_s();
    EXPECT_EQ(r.requests, 3);
    EXPECT_NEAR(r.ttft_s.mean, prefill, 1e-9 * prefill);
    EXPECT_NEAR(r.ttft_s.p99, prefill, 1e-9 * prefill);
    const double tpot = decode_step_cost(c, ParallelConfig{}, 1024 + 32).total_s();
    EXPECT_NEAR(r.tpot_s.mean, tpot, 0.02 * tpot);
    EXPECT_NEAR(r.duration_s, 3 * (prefill + 63 * r.tpot_s.mean), 1e-6 * r.duration_s);
}

// A decode step replayed from a CUDA graph pays no host dispatch: per step, the 32 layers'
// 50 us each (tp 1: no collectives); a step with a prompt chunk (the TTFT) runs eagerly.
TEST(ServingBenchmark, CudaGraphsTakeTheHostOffDecodeSteps) {
    const ModelSpec& m = llama8b();
    SystemSpec sys = h100();
    sys.eff.host_layer_overhead_s = 50e-6;
    InferenceSpec s = bf16_workload(1024, 64);
    auto run = [&](int64_t graphs) {
        s.cuda_graph_max_batch = graphs;
        return run_benchmark({m, sys, s}, ParallelConfig{}, 8, PrefillSchedule::mixed, 1, 0, 2, 1);
    };
    const BenchmarkResult eager = run(0), graphed = run(1);
    EXPECT_NEAR(eager.tpot_s.mean - graphed.tpot_s.mean, 32 * 50e-6, 1e-9);
    EXPECT_NEAR(eager.ttft_s.mean, graphed.ttft_s.mean, 1e-12);
    // Two decoding requests exceed a graph of one: eager again.
    const BenchmarkResult two = run_benchmark({m, sys, s}, ParallelConfig{}, 8, PrefillSchedule::mixed, 2, 0, 2, 1);
    s.cuda_graph_max_batch = 0;
    const BenchmarkResult two_eager = run_benchmark({m, sys, s}, ParallelConfig{}, 8, PrefillSchedule::mixed, 2, 0, 2, 1);
    EXPECT_NEAR(two.tpot_s.mean, two_eager.tpot_s.mean, 1e-12);
}

TEST(ServingBenchmark, TtftGrowsWithClients) {
    const InferenceSpec s = bf16_workload(2048, 128);
    double last = 0;
    for (const int64_t n : {1, 4, 16, 64, 256}) {
        const BenchmarkResult r = run_benchmark({llama8b(), h100(), s}, ParallelConfig{}, 512, PrefillSchedule::mixed, n, 0, 10 * n, 1);
        EXPECT_GT(r.ttft_s.mean, last) << n << " clients";
        EXPECT_GE(r.ttft_s.p99, r.ttft_s.p50);
        last = r.ttft_s.mean;
    }
}


// Disaggregated: the toy engine's prompts on a prefill engine (one output token: done at its
// first), the decodes on a decode engine (input_len 0: a request arrives with its cache), the
// cache 0.5 s on the way. Two clients, three requests:
//   prefill: req 0's prompt 0 -> 2 s, req 1's 2 -> 4 s; caches at the decode engine at 2.5 and 4.5.
//   decode: req 0 admitted at 2.5 (its first token), two 1.1 s steps -> done 4.7; its client
//     sends req 2. Req 1, at the engine since 4.5, joins at the step boundary 4.7 (first token),
//     done 6.9. Req 2's prompt 4.7 -> 6.7, its cache at 7.2: first token 7.2, done 9.4.
TEST(ServingBenchmark, DisaggregatedFlowByHand) {
    EngineModel prefill = toy_engine(4);
    prefill.output_len = 1;
    EngineModel decode = toy_engine(4);
    decode.input_len = 0;
    const std::vector<RequestTimes> r = simulate_disaggregated(prefill, 1, decode, 1, 0.5, {2, 3, {}});
    expect_times(r, {{2.5, 4.7}, {4.7, 6.9}, {7.2, 9.4}});
    EXPECT_DOUBLE_EQ(r[2].sent_s, 4.7);
    // Two prefill engines take the first two prompts at once (0 -> 2 s each); both caches reach
    // the decode engine at 2.5 and decode together: 2 x 1.2 s -> 4.9; req 2 sent at 4.9 runs
    // alone: prompt 4.9 -> 6.9, cache 7.4, done 7.4 + 2.2 = 9.6.
    expect_times(simulate_disaggregated(prefill, 2, decode, 1, 0.5, {2, 3, {}}), {{2.5, 4.9}, {2.5, 4.9}, {7.4, 9.6}});
    // One decode slot: req 1's cache, there at 2.5, waits until req 0 is done at 4.7.
    decode.slots = 1;
    expect_times(simulate_disaggregated(prefill, 2, decode, 1, 0.5, {2, 2, {}}), {{2.5, 4.7}, {4.7, 6.9}});
}

// Runs of steps alike are a shortcut, not a change: several prefill and decode engines, closed
// and open loops, slots free and full, several prompts a prefill step, give every request the
// same times as stepping every engine one step at a time. A decode engine with a free slot must
// stop its run where a request may reach it, including one its neighbour's finished request
// sends on through the prefill pool; requests done at one time on two engines reach the prefill
// engine before its next step.
TEST(ServingBenchmark, DisaggregatedRunsEqualSingleSteps) {
    struct Case {
        int64_t prefill_engines, decode_engines, decode_slots, output_len, clients, requests;
        double transfer_s;
        int64_t prefill_budget = 100;  // 800: eight prompts a prefill step
        double host_s = 0;             // before a prompt reaches its prefill engine
    };
    // Step costs with no common period, so no arrival falls on a step's end (where the rounding
    // of a sum of steps against a multiple of one decides which step admits it).
    for (const Case& k : {Case{1, 2, 4, 11, 3, 12, 0.513}, Case{2, 3, 2, 8, 5, 20, 0.291}, Case{1, 3, 8, 20, 4, 16, 0.0517},
                          Case{3, 2, 3, 6, 0, 30, 0.2071}, Case{1, 2, 40, 30, 4, 12, 5.6e-5, 800},
                          Case{1, 2, 40, 30, 8, 80, 5.6e-5, 800}, Case{2, 4, 5, 12, 16, 64, 0.01, 800},
                          Case{1, 2, 40, 30, 6, 60, 0.0123, 100, 0.377}, Case{2, 3, 40, 9, 9, 90, 0.0419, 800, 1.73},
                          Case{1, 3, 40, 25, 0, 60, 0.0071, 100, 0.911}, Case{1, 1, 40, 5, 2, 20, 0.0123, 100, 0.377},
                          Case{1, 3, 40, 12, 5, 50, 0.0123, 100, 1.73}}) {
        EngineModel prefill = toy_engine(40);
        prefill.output_len = 1;
        prefill.chunk_tokens = k.prefill_budget;
        prefill.host_s = k.host_s;
        prefill.step_s = [](double, double q) { return 1.0 + 0.00537 * q; };
        EngineModel decode = toy_engine(k.decode_slots);
        decode.input_len = 0;
        decode.output_len = k.output_len;
        decode.step_s = [](double d, double) { return 1.0313 + 0.1171 * d; };
        Load load{k.clients, k.requests, {}};
        if (k.clients == 0) load.arrivals_s = poisson_arrivals(0.8, k.requests, 3);
        const std::vector<RequestTimes> runs =
            simulate_disaggregated(prefill, k.prefill_engines, decode, k.decode_engines, k.transfer_s, load);
        const std::vector<RequestTimes> steps =
            simulate_disaggregated(prefill, k.prefill_engines, decode, k.decode_engines, k.transfer_s, load, false);
        ASSERT_EQ(runs.size(), steps.size());
        for (size_t i = 0; i < runs.size(); ++i) {
            EXPECT_NEAR(runs[i].sent_s, steps[i].sent_s, 1e-9) << "request " << i;
            EXPECT_NEAR(runs[i].first_token_s, steps[i].first_token_s, 1e-9) << "request " << i;
            EXPECT_NEAR(runs[i].done_s, steps[i].done_s, 1e-9) << "request " << i;
        }
    }
}

// A lone client on a disaggregated deployment of Llama 3 8B (one H100 each role): its TTFT is
// the static prefill, the host's time and the cache's move over NVLink (2 x 32 layers x 8 KV
// heads x 128 x 2 bytes x 1,024 tokens = 128 MiB at the fabric's effective bandwidth, plus its
// latency); its decode steps are single-request steps.
TEST(ServingBenchmark, DisaggregatedLoneRequestByHand) {
    InferenceSpec s = bf16_workload(1024, 64);
    s.cuda_graph_max_batch = 0;
    SystemSpec sys = h100();
    sys.eff.host_request_overhead_s = 0.01;
    const InferContext c{llama8b(), sys, s};
    const DisaggBenchmark b = run_disaggregated_benchmark(c, {{ParallelConfig{}, 1}, {ParallelConfig{}, 1}}, 1, 0, 2, 1);
    const double kv_bytes = 2.0 * 32 * 8 * 128 * 2 * 1024;
    const double transfer = sys.scale_up.latency_s + kv_bytes / (sys.scale_up.bw_bytes_per_s * sys.scale_up.efficiency);
    EXPECT_TRUE(b.within_domain);
    EXPECT_NEAR(b.kv_transfer_s, transfer, 1e-12);
    const double prefill = prefill_cost(c, ParallelConfig{}).total_s();
    EXPECT_EQ(b.result.requests, 2);
    EXPECT_NEAR(b.result.ttft_s.mean, prefill + 0.01 + transfer, 1e-9);
    EXPECT_NEAR(b.result.ttft_s.p99, prefill + 0.01 + transfer, 1e-9);
    const double tpot = decode_step_cost(c, ParallelConfig{}, 1024 + 32).total_s();
    EXPECT_NEAR(b.result.tpot_s.mean, tpot, 0.02 * tpot);
}

// The cache moves over the link the roles share: a deployment no bigger than one scale-up domain
// sits in it (72 one-GPU engines in a rack of 72, even where jobs spanning racks use 64 of each:
// system.scale_up.gpus_used_per_domain), a larger one crosses the scale-out network.
TEST(ServingBenchmark, DisaggregatedCacheMovesWithinTheRackItFits) {
    SystemSpec sys = h100();
    sys.scale_up_domain = 72;
    sys.gpus_used_per_domain = 64;
    const InferContext c{llama8b(), sys, bf16_workload(1024, 8)};
    for (const auto& [prefill_workers, within] : {std::pair{36, true}, std::pair{37, false}}) {
        const DisaggDeployment d{{ParallelConfig{}, prefill_workers}, {ParallelConfig{}, 36}};
        const DisaggBenchmark b = run_disaggregated_benchmark(c, d, 1, 0, 1, 1);
        EXPECT_EQ(b.within_domain, within) << prefill_workers;
        const LinkLevel& link = within ? sys.scale_up : sys.scale_out;
        EXPECT_NEAR(b.kv_transfer_s, link.latency_s + 2.0 * 32 * 8 * 128 * 2 * 1024 / (link.bw_bytes_per_s * link.efficiency), 1e-12)
            << prefill_workers;
    }
}

// A decode GPU that cannot hold even one request's cache still runs one at a time: the second
// of two clients' requests waits for the first's whole decode (63 steps) for its first token.
TEST(ServingBenchmark, DisaggregatedDecodeWithoutRoomRunsOneAtATime) {
    SystemSpec sys = h100();
    sys.accel.memory_bytes = 17e9;  // Llama 3 8B's 16 GB of bf16 weights, and not one request's cache
    const InferContext c{llama8b(), sys, bf16_workload(1024, 64)};
    ASSERT_EQ(max_concurrency_that_fits(c, ParallelConfig{}, ServeRole::decode), 0);
    const DisaggBenchmark b = run_disaggregated_benchmark(c, {{ParallelConfig{}, 1}, {ParallelConfig{}, 1}}, 2, 0, 2, 1);
    EXPECT_EQ(b.result.slots, 1);
    // The waiting request's first token comes after the other's last: TTFT beyond 63 decode steps.
    EXPECT_GT(b.result.ttft_s.p99, 63 * b.result.tpot_s.p50);
}

TEST(ServingBenchmark, DisaggregatedTtftGrowsWithClientsAndPrompts) {
    const DisaggDeployment d{{ParallelConfig{}, 1}, {ParallelConfig{}, 1}};
    double last = 0;
    for (const int64_t n : {1, 8, 64}) {
        const InferContext c{llama8b(), h100(), bf16_workload(2048, 128)};
        const double ttft = run_disaggregated_benchmark(c, d, n, 0, 4 * n, 1).result.ttft_s.mean;
        EXPECT_GT(ttft, last) << n << " clients";
        last = ttft;
    }
    const InferContext shorter{llama8b(), h100(), bf16_workload(512, 128)};
    EXPECT_LT(run_disaggregated_benchmark(shorter, d, 64, 0, 256, 1).result.ttft_s.mean, last);
}

TEST(ServingBenchmark, LadderAndGridByHand) {
    // 0, 1, 2, 4 below 8, then 8; 5 and 3 added, 12 clamped to 8 and 0 kept once.
    EXPECT_EQ(step_ladder(8, {5, 3, 0, 12}), (std::vector<double>{0, 1, 2, 3, 4, 5, 8}));
    // f = d^2 + 10 q^2 on d, q in {0, 1, 2, 4}: exact at grid points, bilinear between.
    int calls = 0;
    StepGrid g(
        [&calls](double d, double q) {
            ++calls;
            return d * d + 10 * q * q;
        },
        {0, 1, 2, 4}, {0, 1, 2, 4});
    EXPECT_DOUBLE_EQ(g(2, 4), 164.0);
    EXPECT_DOUBLE_EQ(g(3, 2), (44.0 + 56.0) / 2);                    // f(2,2), f(4,2)
    EXPECT_DOUBLE_EQ(g(3, 3), (44.0 + 164.0 + 56.0 + 176.0) / 4);    // the four corners
    EXPECT_DOUBLE_EQ(g(1.5, 0.5), 0.25 * (1 + 11 + 4 + 14));         // f(1,0) 1, f(1,1) 11, f(2,0) 4, f(2,1) 14
    EXPECT_DOUBLE_EQ(g(9, 9), 176.0);                                 // clamped to the last point
    EXPECT_DOUBLE_EQ(g(0, 0), 0.0);                                   // an empty step costs nothing, uncosted
    EXPECT_EQ(calls, 8);  // (2,4) (2,2) (4,2) (4,4) (1,0) (1,1) (2,0) (2,1); the rest cached or empty
}

InferenceSpec small_serving() { return bf16_workload(512, 32); }

TEST(ServingBenchmark, ClientsDealtToReplicasAsEvenlyAsTheyGo) {
    // 3 clients on 2 replicas: one replica serves 2 clients (4 of the 6 requests), the other 1
    // (2): 6 requests in all, each counted once.
    ParallelConfig two;
    two.dp = 2;
    const BenchmarkResult r = run_benchmark({llama8b(), h100(), small_serving()}, two, 8, PrefillSchedule::mixed, 3, 0, 6, 1);
    EXPECT_EQ(r.requests, 6);
    EXPECT_NEAR(r.output_tokens_per_s * r.duration_s, 6.0 * 32, 1e-6);
}

TEST(ServingBenchmark, ARateIsSplitOverTheReplicas) {
    // 2 requests/s over 2 replicas, each lightly loaded: 2,000 requests arrive over about
    // 1,000 s (each replica's 1,000 at 1/s), so the deployment finishes about 2 a second.
    ParallelConfig two;
    two.dp = 2;
    const BenchmarkResult r = run_benchmark({llama8b(), h100(), small_serving()}, two, 8, PrefillSchedule::mixed, 0, 2.0, 2000, 3);
    EXPECT_EQ(r.requests, 2000);
    EXPECT_NEAR(r.requests_per_s, 2.0, 0.15);
}

TEST(ServingBenchmark, OneOutputTokenAndOneRequest) {
    const ModelSpec& m = llama8b();
    const SystemSpec& sys = h100();
    InferenceSpec s = small_serving();
    s.output_len = 1;
    // No token after the first: TPOT is no sample at all (0), never 0 / 0.
    const BenchmarkResult one = run_benchmark({m, sys, s}, ParallelConfig{}, 8, PrefillSchedule::mixed, 2, 0, 4, 1);
    EXPECT_EQ(one.tpot_s.mean, 0.0);
    EXPECT_EQ(one.tpot_s.p99, 0.0);
    EXPECT_GT(one.ttft_s.mean, 0.0);
    // A lone request of an open loop arrives after 0: the run lasts from its send to its last
    // token, its own end-to-end latency.
    const BenchmarkResult lone = run_benchmark({m, sys, small_serving()}, ParallelConfig{}, 8, PrefillSchedule::mixed, 0, 0.5, 1, 2);
    EXPECT_EQ(lone.requests, 1);
    EXPECT_NEAR(lone.duration_s, lone.e2e_s.mean, 1e-12);
}


TEST(ServingBenchmark, RequestsSentUnlessGiven) {
    InferenceSpec s;
    EXPECT_EQ(benchmark_requests(s, 3), 30);             // 10 per client
    EXPECT_EQ(benchmark_requests(s, 1), 10);
    EXPECT_EQ(benchmark_requests(s, 1 << 20), 1 << 20);  // capped at num_requests' own bound
    EXPECT_EQ(benchmark_requests(s, 0), 1000);           // at a rate
    s.num_requests = 7;
    EXPECT_EQ(benchmark_requests(s, 3), 7);
    EXPECT_EQ(benchmark_requests(s, 0), 7);
}

}  // namespace
}  // namespace sm
