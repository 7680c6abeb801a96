// Serving under continuous batching: the steady state's flow of tokens by hand, a mixed step's
// FLOP by hand, the paged KV cache, pipeline micro-batches, and the memory property.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <map>
#include <string>

#include "inference/serving.hpp"
#include "inference/serving_benchmark.hpp"
#include "test_helpers.hpp"

namespace sm {
namespace {

using testing::model_preset;
using testing::system_preset;

// The toy Llama (2 layers, h 64, 4 heads of 16, 2 KV heads, swiglu ffn 128, vocab 100) in fp16
// on the round machine, with the serving tests' workload (test_helpers.hpp).
using testing::toy_serving_workload;

// The round machine with `bytes` of HBM: the memory tests' limit.
SystemSpec round_system_with(double bytes) {
    SystemSpec sys = testing::round_inference_system();
    sys.accel.memory_bytes = bytes;
    return sys;
}

// FLOP of one engine step of the toy model carrying `decode` requests at mean context `ctx`,
// `prefill` prompt tokens over prompts of `in` tokens, and `sampled` logits:
//   2 x weights per token, attention 4 x heads x d x (keys seen), the head 2 h V per sample.
// `seen`: the share of its prompt a prompt token attends to (half on average when causal).
double toy_step_flop(double decode, double ctx, double prefill, double in, double sampled, double seen = 0.5) {
    const double h = 64, d = 16, heads = 4, kv = 2, f = 128, V = 100, L = 2;
    const double weights = h * (heads + 2 * kv) * d + heads * d * h + h * 2 * f + f * h;
    const double keys = decode * ctx + prefill * in * seen;
    return L * (2 * weights * (decode + prefill) + 4 * heads * d * keys) + 2 * h * V * sampled;
}

TEST(Serving, DecodeBoundSteadyStateByHand) {
    // C = 3, I = 100, O = 11, chunk 64: a request spends ceil(100/64) = 2 steps on its prompt and
    // 10 decoding, N = 12 steps; prompts need 3 x 100 / 64 = 4.69 steps' budget per lifetime, less
    // than 12, so nothing queues. Per step: 3 x 10 / 12 = 2.5 decode tokens, 3 x 100 / 12 = 25
    // prompt tokens, 3 / 12 = 0.25 first tokens sampled.
    const ModelSpec m = testing::tiny_llama(2);
    const SystemSpec sys = testing::round_inference_system();
    const InferenceSpec s = toy_serving_workload();
    const ServingPoint r = serve_at({m, sys, s}, ParallelConfig{}, 3);
    EXPECT_DOUBLE_EQ(r.steps_per_request, 12.0);
    EXPECT_DOUBLE_EQ(r.decode_tokens, 2.5);
    EXPECT_DOUBLE_EQ(r.prefill_tokens, 25.0);
    EXPECT_FALSE(r.prefill_bound);
    // Decode contexts 101..110 average 105.5 = I + O/2.
    EXPECT_NEAR(r.step.flop, toy_step_flop(2.5, 105.5, 25.0, 100.0, 2.75), 1e-6 * r.step.flop);
    // The prompt runs in 2 steps of 50 tokens, so K = 300 / 50 = 6 of the 12 steps carry a
    // 50-token chunk (finishing 3 / 6 prompts each) beside the other 2 requests decoding, and 6
    // decode all 3 alone (6 x 2 + 6 x 3 = 30 = 3 x 10 request-steps of decode). A request's first
    // token waits for its own two chunk steps; its 10 decode steps see the other 4 chunk steps.
    const ParallelConfig p;
    const double tc = engine_step_cost({m, sys, s}, p, 2, 50, 0.5, 1).total_s();
    const double td = engine_step_cost({m, sys, s}, p, 3, 0, 0, 1).total_s();
    ASSERT_GT(tc, td);
    ASSERT_GT(td, 0);
    EXPECT_DOUBLE_EQ(r.step_s, (6 * tc + 6 * td) / 12);
    EXPECT_DOUBLE_EQ(r.ttft_s, 2 * tc);
    EXPECT_DOUBLE_EQ(r.tpot_s, (4 * tc + 6 * td) / 10);
    EXPECT_DOUBLE_EQ(r.e2e_latency_s, 6 * tc + 6 * td);
    EXPECT_DOUBLE_EQ(r.output_tokens_per_s, 3.0 * 11.0 / (6 * tc + 6 * td));  // Little's law
    EXPECT_DOUBLE_EQ(r.output_tokens_per_s_per_user, 10 / (4 * tc + 6 * td));
}

// MLA in a continuous batch: decoding requests attend over the cached latent with W_UK and W_UV
// absorbed (DeepSeek-V2 sec. 2.1.3), prompt chunks in the expanded form (the K/V up-projection,
// then per-head attention of width qk + v), as vLLM, SGLang and TensorRT-LLM run a context phase.
// The toy Llama with MLA (q_lora 32, kv_lora 24, nope 16, rope 8, v 16; cache 24 + 8 = 32) and
// the workload above: 2.5 decode tokens at mean context 105.5, 25 prompt tokens over prompts of
// 100 (half seen on average), 2.75 samples.
TEST(Serving, MlaDecodesAbsorbedAndPromptsExpandedByHand) {
    ModelSpec m = testing::tiny_llama(2);
    m.attention_kind = AttentionKind::mla;
    m.kv_heads = m.heads;
    m.mla = {32, 24, 16, 8, 16};
    const double h = 64, heads = 4, q_lat = 32, kv_lat = 24, nope = 16, rope = 8, v = 16, cache = 32, f = 128, V = 100, L = 2;
    const double common = h * cache + h * q_lat + q_lat * heads * (nope + rope) + heads * v * h + 3 * h * f;
    const double absorbed = heads * nope * kv_lat + heads * kv_lat * v;  // W_UK into q, W_UV onto o
    const double expanded = kv_lat * heads * (nope + v);                  // the K/V up-projection
    const double decode = 2.5, ctx = 105.5, prefill = 25, in = 100, sampled = 2.75;
    const double flop = L * (2 * common * (decode + prefill) + 2 * absorbed * decode + 2 * expanded * prefill +
                             2 * heads * (cache + kv_lat) * decode * ctx + 2 * heads * (nope + rope + v) * prefill * in * 0.5) +
                        2 * h * V * sampled;
    const ServingPoint r = serve_at({m, testing::round_inference_system(), toy_serving_workload()}, ParallelConfig{}, 3);
    ASSERT_DOUBLE_EQ(r.decode_tokens, decode);
    EXPECT_NEAR(r.step.flop, flop, 1e-9 * flop);
}

// The absorbed and expanded projections have the same FLOP (heads x kv_lora x (nope + v)) but
// not the same GEMMs: on a calibrated machine (shape-dependent efficiency) a prompt-only step of
// a prefill engine (one request, its whole prompt in one chunk) costs exactly the static
// prefill of that prompt, whose ops are the expanded form's.
TEST(Serving, MlaPromptStepIsTheStaticPrefill) {
    ModelSpec m = testing::tiny_llama(2);
    m.attention_kind = AttentionKind::mla;
    m.kv_heads = m.heads;
    m.mla = {32, 24, 16, 8, 16};
    InferenceSpec s = toy_serving_workload();
    s.input_len = 512;
    s.prefill_chunk_tokens = 512;
    const InferContext c{m, system_preset("dgx-h100"), s};
    const ServingPoint r = serve_at(c, ParallelConfig{}, 1, ServeRole::prefill);
    ASSERT_DOUBLE_EQ(r.prefill_tokens, 512.0);
    const PassCost prefill = prefill_cost(c, ParallelConfig{});
    EXPECT_NEAR(r.step.compute_s, prefill.compute_s, 1e-12 * prefill.compute_s);
    EXPECT_NEAR(r.step.flop, prefill.flop, 1e-9 * prefill.flop);
}

// A finite run by hand. C = 2, prompts of 32 in a chunk budget of 64: both prompts of a wave
// finish in one step (a step of prompts alone is costed as one beside a decoding request), then
// 10 decode steps at 2 requests. 2 requests are one wave, 4 are two; the host's 0.5 ms per
// request keeps a slot busy: 4 requests over 2 slots add 2 x 0.5 ms.
TEST(FiniteRun, WavesByHand) {
    const ModelSpec m = testing::tiny_llama(2);
    SystemSpec sys = testing::round_inference_system();
    sys.eff.host_request_overhead_s = 5e-4;
    InferenceSpec s = toy_serving_workload();
    s.input_len = 32;
    s.output_len = 11;
    s.prefill_chunk_tokens = 64;
    const InferContext c{m, sys, s};
    const ParallelConfig p;
    const double prompts = engine_step_cost(c, p, 1, 64, 2, 1).total_s();
    const double decode = engine_step_cost(c, p, 2, 0, 0, 1).total_s();
    ASSERT_GT(decode, 0);
    EXPECT_NEAR(finite_run_s(c, p, 2, 2), prompts + 10 * decode + 5e-4, 1e-12);
    EXPECT_NEAR(finite_run_s(c, p, 2, 4), 2 * (prompts + 10 * decode) + 2 * 5e-4, 1e-12);
    // Three requests: the third starts alone once both slots free, its prompt half a chunk
    // (costed between no prompt and a full one), then 10 steps at one request.
    const double half = 0.5 * engine_step_cost(c, p, 1, 0, 0, 1).total_s() + 0.5 * prompts;
    const double alone = engine_step_cost(c, p, 1, 0, 0, 1).total_s();
    EXPECT_NEAR(finite_run_s(c, p, 2, 3), prompts + 10 * decode + half + 10 * alone + 1.5 * 5e-4, 1e-12);
}

// Prompts share a step's budget first come first served: 3 prompts of 32 in a budget of 65 take
// 32 + 32 + 1 in the first step (two finish) and the last 31 in the second; then 9 steps at 3
// decoding requests, and the last request's 10th token alone.
TEST(FiniteRun, PromptsShareTheBudgetInOrderByHand) {
    const ModelSpec m = testing::tiny_llama(2);
    InferenceSpec s = toy_serving_workload();
    s.input_len = 32;
    s.output_len = 11;
    s.prefill_chunk_tokens = 65;
    const InferContext c{m, testing::round_inference_system(), s};
    const ParallelConfig p;
    auto cost = [&](double d, double q) { return engine_step_cost(c, p, d, q, q / 32.0, 1).total_s(); };
    const double second = (1 - 31.0 / 65) * cost(2, 0) + 31.0 / 65 * cost(2, 65);
    EXPECT_NEAR(finite_run_s(c, p, 3, 3), cost(1, 65) + second + 9 * cost(3, 0) + cost(1, 0), 1e-12);
}

// A finite run's step grid by hand: costed at 1, 2 and 4 requests (no prompt: 10, 20, 60 s; a
// full chunk of 8 tokens: 30, 40, 100 s), linear between the counts and in the chunk's share,
// clamped at the ends (no decoding request is costed as one).
TEST(FiniteRun, StepGridInterpolatesBetweenItsCounts) {
    const std::map<std::pair<double, double>, double> at{{{1, 0}, 10}, {{2, 0}, 20}, {{4, 0}, 60},
                                                         {{1, 8}, 30}, {{2, 8}, 40}, {{4, 8}, 100}};
    StepGrid l([&](double d, double q) { return at.at({d, q}); }, {1, 2, 4}, {0, 8});
    EXPECT_DOUBLE_EQ(l(1, 0), 10);
    EXPECT_DOUBLE_EQ(l(4, 0), 60);
    EXPECT_DOUBLE_EQ(l(1.5, 0), 15);
    EXPECT_DOUBLE_EQ(l(3, 0), 40);
    EXPECT_DOUBLE_EQ(l(3, 8), 70);
    EXPECT_DOUBLE_EQ(l(3, 2), 47.5);
    EXPECT_DOUBLE_EQ(l(0, 4), 20);  // no decoding request: costed as one
    EXPECT_DOUBLE_EQ(l(9, 0), 60);  // past the last count: the last
    StepGrid one([](double, double q) { return q > 0 ? 7.0 : 5.0; }, {3}, {0, 8});
    EXPECT_DOUBLE_EQ(one(1, 0), 5);
    EXPECT_DOUBLE_EQ(one(3, 4), 6);
    EXPECT_DOUBLE_EQ(one(8, 8), 7);
}

// Many requests: the ramp-up and the tail fade and a finite run's rate nears the steady state's.
// max_throughput over a finite run reports that run's rate and time.
TEST(FiniteRun, ApproachesTheSteadyStateAndFeedsMaxThroughput) {
    const ModelSpec m = testing::tiny_llama(2);
    InferenceSpec s = toy_serving_workload();
    const InferContext c{m, testing::round_inference_system(), s};
    const ParallelConfig p;
    const ServingPoint steady = serve_at(c, p, 8);
    const double rate = [&](int64_t n) { return static_cast<double>(n) * 11.0 / finite_run_s(c, p, 8, n); }(4000);
    EXPECT_NEAR(rate, steady.output_tokens_per_s, 0.02 * steady.output_tokens_per_s);
    EXPECT_LT(16.0 * 11.0 / finite_run_s(c, p, 8, 16), rate);  // two waves: slower than many
    InferenceSpec finite = s;
    finite.num_requests = 64;
    ParallelConfig two = p;
    two.dp = 2;  // 32 requests per replica
    const InferContext fc{m, testing::round_inference_system(), finite};
    const std::optional<ServingPoint> best = max_throughput(fc, two);
    ASSERT_TRUE(best.has_value());
    EXPECT_NEAR(best->run_s, finite_run_s(fc, two, best->concurrency, 32), 1e-15);
    EXPECT_NEAR(best->output_tokens_per_s_per_gpu, 64.0 * 11.0 / best->run_s / 2.0, 1e-9 * best->output_tokens_per_s_per_gpu);
    EXPECT_EQ(max_throughput(c, p)->run_s, 0.0);  // no request count: the steady state
}

TEST(Serving, BidirectionalPromptsAttendToTheWholePromptByHand) {
    // The steady state above with a decoder that does not mask the future (model.causal false):
    // every prompt token attends to all 100 prompt keys; decoding still reads the whole cache.
    ModelSpec m = testing::tiny_llama(2);
    m.causal = false;
    const ServingPoint r = serve_at({m, testing::round_inference_system(), toy_serving_workload()}, ParallelConfig{}, 3);
    EXPECT_NEAR(r.step.flop, toy_step_flop(2.5, 105.5, 25.0, 100.0, 2.75, 1.0), 1e-6 * r.step.flop);
}

TEST(Serving, LargestOnPrefixByHand) {
    const auto upto = [](int64_t last) { return [last](int64_t n) { return n <= last; }; };
    EXPECT_EQ(largest_on_prefix(upto(37), 100), 37);
    EXPECT_EQ(largest_on_prefix(upto(100), 100), 100);
    EXPECT_EQ(largest_on_prefix(upto(1000), 1), 1);  // a limit of one that holds is returned
    EXPECT_EQ(largest_on_prefix(upto(1), 1), 1);
    EXPECT_EQ(largest_on_prefix(upto(0), 100), 0);   // nothing holds
    EXPECT_EQ(largest_on_prefix(upto(1000), 0), 0);  // nothing to try
    EXPECT_EQ(largest_on_prefix(upto(99), 100), 99);
}

TEST(Serving, DecodeConcurrenciesArePowersOfTwoAndTheLimit) {
    const InferContext c{testing::tiny_llama(2), testing::round_inference_system(), toy_serving_workload()};
    EXPECT_EQ(concurrency_candidates(c, 100, ServeRole::decode), (std::vector<int64_t>{1, 2, 4, 8, 16, 32, 64, 100}));
    EXPECT_EQ(concurrency_candidates(c, 1, ServeRole::decode), (std::vector<int64_t>{1}));
    // Aggregated: also either side of where prompts start to queue, C I / chunk = (O - 1) / E +
    // ceil(I / chunk): 10 + 2 = 12 steps -> C = 7.68 (7, 8); with one draft always accepted
    // (E = 2) 5 + 2 = 7 steps -> C = 4.48 (4, 5).
    EXPECT_EQ(concurrency_candidates(c, 100), (std::vector<int64_t>{1, 2, 4, 7, 8, 16, 32, 64, 100}));
    InferenceSpec spec = toy_serving_workload();
    spec.speculative_tokens = 1;
    spec.acceptance_rate = 1.0;
    const InferContext drafted{testing::tiny_llama(2), testing::round_inference_system(), spec};
    EXPECT_EQ(concurrency_candidates(drafted, 100), (std::vector<int64_t>{1, 2, 4, 5, 8, 16, 32, 64, 100}));
}

TEST(Serving, PrefillBoundPromptsQueueByHand) {
    // C = 16: prompts need 16 x 100 / 64 = 25 steps of chunk budget per lifetime, more than the
    // 12 steps a lone request takes: lifetimes stretch to 25 steps, every step carries a full
    // 64-token chunk and 16 x 10 / 25 = 6.4 decode tokens; a request waits 25 - 10 = 15 steps
    // for its first token.
    const ModelSpec m = testing::tiny_llama(2);
    const SystemSpec sys = testing::round_inference_system();
    const ServingPoint r = serve_at({m, sys, toy_serving_workload()}, ParallelConfig{}, 16);
    EXPECT_TRUE(r.prefill_bound);
    EXPECT_DOUBLE_EQ(r.steps_per_request, 25.0);
    EXPECT_DOUBLE_EQ(r.prefill_tokens, 64.0);
    EXPECT_DOUBLE_EQ(r.decode_tokens, 6.4);
    EXPECT_DOUBLE_EQ(r.ttft_s, 15.0 * r.step_s);
}

TEST(Serving, HostCostPerRequestIsInTtftAndLifetime) {
    const ModelSpec m = testing::tiny_llama(2);
    SystemSpec sys = testing::round_inference_system();
    sys.eff.host_request_overhead_s = 0.01;
    const InferContext c{m, sys, toy_serving_workload()};
    const ServingPoint r = serve_at(c, ParallelConfig{}, 3);
    // The workload above: two 50-token chunk steps to the first token, 12 steps in a lifetime.
    const double tc = engine_step_cost(c, ParallelConfig{}, 2, 50, 0.5, 1).total_s();
    EXPECT_DOUBLE_EQ(r.ttft_s, 2.0 * tc + 0.01);
    EXPECT_DOUBLE_EQ(r.e2e_latency_s, 12.0 * r.step_s + 0.01);
    EXPECT_DOUBLE_EQ(r.output_tokens_per_s, 33.0 / (12.0 * r.step_s + 0.01));
}

TEST(Serving, KvCacheInWholeBlocksByHand) {
    // Reserved whole (the default): a request holds I + O = 111 tokens: 2 blocks of 64 = 128
    // tokens. Per GPU: layers 2 x (K, V) 2 x C 5 x 128 tokens x 2 KV heads x 16 x 2 bytes =
    // 163,840 bytes.
    const ModelSpec m = testing::tiny_llama(2);
    const SystemSpec sys = testing::round_inference_system();
    const InferMemory mem = serving_memory({m, sys, toy_serving_workload()}, ParallelConfig{}, 5);
    EXPECT_DOUBLE_EQ(mem.kv_cache_bytes, 2.0 * 2.0 * 5.0 * 128.0 * 2.0 * 16.0 * 2.0);
    InferenceSpec fine = toy_serving_workload();
    fine.kv_block_tokens = 1;  // 111 tokens
    EXPECT_DOUBLE_EQ(serving_memory({m, sys, fine}, ParallelConfig{}, 5).kv_cache_bytes, 2.0 * 2.0 * 5.0 * 111.0 * 2.0 * 16.0 * 2.0);
    // Held as it grows: I + O/2 = 105.5 on average, 106 tokens in blocks of 1.
    fine.kv_reservation = KvReservation::average;
    EXPECT_DOUBLE_EQ(serving_memory({m, sys, fine}, ParallelConfig{}, 5).kv_cache_bytes, 2.0 * 2.0 * 5.0 * 106.0 * 2.0 * 16.0 * 2.0);
    EXPECT_DOUBLE_EQ(serve_at({m, sys, fine}, ParallelConfig{}, 5).kv_tokens_per_request, 106.0);
}

TEST(Serving, WholeReservationLetsFewerRequestsFit) {
    // O = 1,000 beside I = 100 (blocks of 1): 1,100 tokens reserved against 600 held on average,
    // so at most 600 / 1,100 of the requests fit in the same cache (the weights and the
    // activations take the rest, the same either way).
    const ModelSpec m = testing::tiny_llama(2);
    const SystemSpec sys = round_system_with(4e7);
    InferenceSpec w = toy_serving_workload();
    w.output_len = 1000;
    w.kv_block_tokens = 1;
    const int64_t whole = max_concurrency_that_fits({m, sys, w}, ParallelConfig{});
    w.kv_reservation = KvReservation::average;
    const int64_t grown = max_concurrency_that_fits({m, sys, w}, ParallelConfig{});
    // Per request: 2 layers x 2 x tokens x 2 KV heads x 16 x 2 bytes = 256 B per token.
    EXPECT_LE(whole, static_cast<int64_t>(4e7 / (1100.0 * 256.0)));
    EXPECT_GT(grown, whole * 17 / 10);  // 1,100 / 600 = 1.83, less what the activations take
}

TEST(Serving, CachePoolIsAShareOfTheFreeMemory) {
    // Pool share 0.5 on 4 MB with no framework allowance (blocks of 64: 128 tokens per request,
    // 32,768 B each, as KvCacheInWholeBlocksByHand): C requests fit while 32,768 C <= 0.5 x
    // (4e6 - weights - activations). The toy's weights: 2 layers x (64 x 128 + 64 x 64 + 64 x 256
    // + 128 x 64 + 2 x 64) + 100 x 64 + 64 + 100 x 64 (untied head), 16-bit.
    const ModelSpec m = testing::tiny_llama(2);
    const SystemSpec sys = round_system_with(4e6);
    InferenceSpec w = toy_serving_workload();
    w.kv_cache_memory_fraction = 0.5;
    const InferContext c{m, sys, w};
    const int64_t n = max_concurrency_that_fits(c, ParallelConfig{});
    const double weights = 2.0 * (2.0 * (64 * 128 + 64 * 64 + 64 * 256 + 128 * 64 + 2 * 64) + 100 * 64 + 64 + 100 * 64);
    EXPECT_DOUBLE_EQ(serving_memory(c, ParallelConfig{}, n).weights_bytes, weights);
    // The activations of a step are a few hundred kB at most here: n lies between the pool
    // without them and the pool less 400 kB.
    EXPECT_LE(n, static_cast<int64_t>(0.5 * (4e6 - weights) / 32768.0));
    EXPECT_GE(n, static_cast<int64_t>(0.5 * (4e6 - weights - 4e5) / 32768.0));
    const InferMemory at = serving_memory(c, ParallelConfig{}, n), over = serving_memory(c, ParallelConfig{}, n + 1);
    EXPECT_LE(at.kv_cache_bytes, 0.5 * (4e6 - (at.peak_bytes_per_gpu - at.kv_cache_bytes)));
    EXPECT_GT(over.kv_cache_bytes, 0.5 * (4e6 - (over.peak_bytes_per_gpu - over.kv_cache_bytes)));
    // Half the pool's share holds about half the requests the whole share does (the share of 1
    // is the peak within HBM: MaxConcurrencyIsTheLastThatFits).
    w.kv_cache_memory_fraction = 1.0;
    EXPECT_GE(max_concurrency_that_fits({m, sys, w}, ParallelConfig{}), 2 * n - 1);
}

TEST(Serving, PipelineStagesSplitTheRequestsIntoMicroBatches) {
    // pp 2: the 4 requests move as 2 micro-batches of 2; one micro-batch's step does half the
    // FLOP of the whole set's step at pp 1 (every term is linear in the tokens), and a user's
    // token waits one pass of its micro-batch through both stages.
    const ModelSpec m = testing::tiny_llama(2);
    const SystemSpec sys = testing::round_inference_system();
    ParallelConfig pp2;
    pp2.pp = 2;
    const ServingPoint r = serve_at({m, sys, toy_serving_workload()}, pp2, 4);
    EXPECT_EQ(r.micro_batches, 2);
    // N = 12 (4 x 100 / 64 = 6.25 < 12): per micro-batch 4 x 10 / 12 / 2 decode, 4 x 100 / 12 / 2 prompt tokens.
    EXPECT_NEAR(r.step.flop, toy_step_flop(40.0 / 24.0, 105.5, 400.0 / 24.0, 100.0, 44.0 / 24.0), 1e-6 * r.step.flop);
    EXPECT_DOUBLE_EQ(r.output_tokens_per_s, 4.0 * 11.0 / (12.0 * r.step_s));
    EXPECT_EQ(r.gpus, 2);
}

// Whether n requests' memory fits the pool, as serving_memory states it (1 layout: tp = pp = 1).
bool cache_fits_at(const InferContext& c, int64_t n, ServeRole role) {
    const InferMemory mem = serving_memory(c, ParallelConfig{}, n, role);
    return mem.kv_cache_bytes <= c.inference.kv_cache_memory_fraction * (c.system.accel.memory_bytes - (mem.peak_bytes_per_gpu - mem.kv_cache_bytes));
}

TEST(Serving, MaxConcurrencyIsTheLastThatFits) {
    // 4 MB of HBM, no framework allowance: the toy model's weights take a few hundred kB, and
    // each request's cache adds 32 kB, so the limit is set by the cache.
    const ModelSpec m = testing::tiny_llama(2);
    const SystemSpec sys = round_system_with(4e6);
    const InferContext c{m, sys, toy_serving_workload()};
    const int64_t n = max_concurrency_that_fits(c, ParallelConfig{});
    ASSERT_GT(n, 0);
    EXPECT_LE(serving_memory(c, ParallelConfig{}, n).peak_bytes_per_gpu, sys.accel.memory_bytes);
    EXPECT_GT(serving_memory(c, ParallelConfig{}, n + 1).peak_bytes_per_gpu, sys.accel.memory_bytes);
    // Each request adds 2 x 2 x 128 x 2 x 16 x 2 = 32,768 B of cache: at most 4e6 / 32,768 = 122.
    EXPECT_LE(n, 122);
}

// A layout's points costed once each are the points costed alone, in every role and at every
// concurrency asked (again, out of order), and its limit the largest concurrency that fits.
TEST(Serving, LayoutPointsAreServeAtOnceEach) {
    const ModelSpec m = testing::tiny_llama(2);
    const SystemSpec sys = round_system_with(4e6);
    const InferContext c{m, sys, toy_serving_workload()};
    ParallelConfig two;
    two.pp = 2;
    for (const ParallelConfig& p : {ParallelConfig{}, two})
        for (const ServeRole role : {ServeRole::both, ServeRole::prefill, ServeRole::decode}) {
            LayoutPoints at(c, p, role);
            EXPECT_EQ(at.limit(), max_concurrency_that_fits(c, p, role));
            for (const int64_t n : {1, 7, 3, 7, 64, 1}) {
                const ServingPoint alone = serve_at(c, p, n, role);
                const ServingPoint& kept = at.at(n);
                EXPECT_EQ(kept.concurrency, n);
                EXPECT_EQ(kept.ttft_s, alone.ttft_s);
                EXPECT_EQ(kept.tpot_s, alone.tpot_s);
                EXPECT_EQ(kept.requests_per_s, alone.requests_per_s);
                EXPECT_EQ(kept.memory.peak_bytes_per_gpu, alone.memory.peak_bytes_per_gpu);
                EXPECT_EQ(kept.memory.weights_bytes, alone.memory.weights_bytes);
                EXPECT_EQ(kept.fits_in_memory, alone.fits_in_memory);
            }
        }
}

// Long prompts, short chunks: each request's cache (4,096 + 64 tokens, 266 kB) dwarfs a step's
// activations, so the limit sits at or next to what the cache alone allows. Whatever the
// capacity around it, the limit is the last concurrency a scan from 1 finds fitting.
TEST(Serving, MaxConcurrencyIsTheLastThatFitsWhereTheCacheBinds) {
    const ModelSpec m = testing::tiny_llama(2);
    InferenceSpec w = toy_serving_workload();
    w.input_len = 4096;
    w.output_len = 64;
    const InferContext probe{m, round_system_with(1e12), w};
    for (const ServeRole role : {ServeRole::both, ServeRole::prefill, ServeRole::decode}) {
        const InferMemory one = serving_memory(probe, ParallelConfig{}, 1, role);
        const double fixed = one.weights_bytes + one.overhead_bytes, cache = one.kv_cache_bytes;
        for (const double requests : {1.0, 2.0, 5.0, 5.5, 6.0 - 1e-9, 17.0, 17.999})
            for (const double fraction : {1.0, 0.5}) {
                w.kv_cache_memory_fraction = fraction;
                const double hbm = fixed + requests * cache / fraction;
                const InferContext c{m, round_system_with(hbm), w};
                int64_t scan = 0;
                while (cache_fits_at(c, scan + 1, role)) ++scan;
                EXPECT_EQ(max_concurrency_that_fits(c, ParallelConfig{}, role), scan) << requests << " " << fraction;
                EXPECT_LE(scan, static_cast<int64_t>(requests));
            }
    }
}

TEST(Serving, HbmFilledExactlyStillFits) {
    // Capacity equal to the memory of 50 requests: 50 fit (a full HBM is not an overflow).
    const ModelSpec m = testing::tiny_llama(2);
    const InferenceSpec w = toy_serving_workload();
    SystemSpec sys = testing::round_inference_system();
    const InferContext c{m, sys, w};  // sees the capacity set below
    sys.accel.memory_bytes = serving_memory(c, ParallelConfig{}, 50).peak_bytes_per_gpu;
    EXPECT_EQ(max_concurrency_that_fits(c, ParallelConfig{}), 50);
    EXPECT_EQ(max_concurrency_that_fits(c, ParallelConfig{}, ServeRole::both), 50);
}

TEST(Serving, DecodeEnginesHoldNoPromptChunk) {
    // A decode engine's largest step is its requests' decode tokens: the prompt chunk size, which
    // sizes a mixed engine's step, does not change its activations; a mixed engine's does.
    const ModelSpec m = testing::tiny_llama(2);
    InferenceSpec small = toy_serving_workload(), large = small;
    small.prefill_chunk_tokens = 16;
    large.prefill_chunk_tokens = 64;
    const SystemSpec sys = testing::round_inference_system();
    const InferContext a{m, sys, small}, b{m, sys, large};
    EXPECT_EQ(serving_memory(a, ParallelConfig{}, 8, ServeRole::decode).activations_bytes,
              serving_memory(b, ParallelConfig{}, 8, ServeRole::decode).activations_bytes);
    EXPECT_LT(serving_memory(a, ParallelConfig{}, 8, ServeRole::both).activations_bytes,
              serving_memory(b, ParallelConfig{}, 8, ServeRole::both).activations_bytes);
    EXPECT_LT(serving_memory(a, ParallelConfig{}, 8, ServeRole::prefill).activations_bytes,
              serving_memory(b, ParallelConfig{}, 8, ServeRole::prefill).activations_bytes);
}

TEST(Serving, MaxThroughputMatchesEveryConcurrencyTried) {
    // The candidates (powers of two, the limit, the knee) find the best of all concurrencies up
    // to the limit, within 1%: throughput grows with C until prompts queue, then stays flat.
    // Short prompts (1024 in, 256 out) never queue below the memory limit; long ones (8192 in,
    // 16 out) queue from a knee far below it.
    const ModelSpec m = model_preset("llama3-8b");
    const SystemSpec sys = system_preset("dgx-h100");
    for (const bool queued : {false, true}) {
        SCOPED_TRACE(queued ? "long prompts" : "short prompts");
        InferenceSpec s;
        s.input_len = queued ? 8192 : 1024;
        s.output_len = queued ? 16 : 256;
        s.precision = s.weight_precision = s.kv_precision = Precision::fp8;
        const InferContext c{m, sys, s};
        const auto best = max_throughput(c, ParallelConfig{});
        ASSERT_TRUE(best.has_value());
        const int64_t limit = max_concurrency_that_fits(c, ParallelConfig{});
        double brute = 0;
        for (int64_t n = 1; n <= limit; ++n) brute = std::max(brute, serve_at(c, ParallelConfig{}, n).output_tokens_per_s_per_gpu);
        EXPECT_GE(best->output_tokens_per_s_per_gpu, 0.99 * brute);
        EXPECT_LE(best->output_tokens_per_s_per_gpu, brute * (1 + 1e-12));
        // Of the candidates it tries, none is better, and the first to reach the best is kept:
        // once prompts queue, more requests in flight buy nothing but latency.
        int64_t first_best = 0;
        double top = 0;
        for (const int64_t n : concurrency_candidates(c, limit)) {
            const double x = serve_at(c, ParallelConfig{}, n).output_tokens_per_s_per_gpu;
            EXPECT_LE(x, best->output_tokens_per_s_per_gpu * (1 + 1e-9)) << "C=" << n;
            if (x > top * (1 + 1e-9)) top = x, first_best = n;
        }
        EXPECT_EQ(best->concurrency, first_best);
        if (queued) {
            EXPECT_LT(best->concurrency, limit);  // the knee, not the largest C that fits
        }
    }
}

TEST(ServingProperty, NeverAdmitsMoreThanHbm) {
    // Over models, systems, layouts and workloads: at the largest concurrency admitted, the
    // cache of at least I + O tokens per request (reserved whole, the default; K and V, every
    // layer of the stage, KV heads per rank x head_dim x bytes) lies within 90% (the pool's
    // default share) of what the weights (sharded parameter count x bytes) and the framework
    // allowance leave of HBM; one request more does not fit.
    struct Case {
        const char* model;
        const char* system;
        int64_t tp, pp, in, out;
    };
    const Case cases[] = {{"llama3-8b", "dgx-h100", 1, 1, 128, 128},      {"llama3-70b", "dgx-h100", 4, 1, 2048, 512},
                          {"llama3-70b", "dgx-h200", 2, 2, 128, 2048},    {"llama2-70b", "dgx-a100-80gb", 8, 1, 4096, 256},
                          {"mixtral-8x7b", "dgx-h100", 2, 1, 1000, 1000}, {"gptj-6b", "dgx-a100-40gb", 1, 1, 2048, 64},
                          {"llama3.1-405b", "dgx-h200", 8, 1, 1024, 1024}};
    for (const Case& k : cases) {
        const ModelSpec m = model_preset(k.model);
        const SystemSpec sys = system_preset(k.system);
        for (Precision prec : {Precision::fp16, Precision::fp8}) {
            InferenceSpec s;
            s.input_len = k.in;
            s.output_len = k.out;
            s.precision = s.weight_precision = s.kv_precision = prec;
            ParallelConfig p;
            p.tp = k.tp;
            p.pp = k.pp;
            const InferContext c{m, sys, s};
            const int64_t n = max_concurrency_that_fits(c, p);
            SCOPED_TRACE(std::string(k.model) + " on " + k.system + " C=" + std::to_string(n));
            if (n == 0) continue;
            const double layers = static_cast<double>(m.layers) / static_cast<double>(k.pp);
            const double kv_heads = std::max(1.0, static_cast<double>(m.kv_heads) / static_cast<double>(k.tp));
            const double per_token = layers * 2.0 * kv_heads * static_cast<double>(m.head_dim()) * bytes_per_element(prec);
            const double cache = static_cast<double>(n) * static_cast<double>(k.in + k.out) * per_token;
            const double rest = weight_params_per_gpu(m, p) * bytes_per_element(prec) + s.framework_overhead_bytes;
            EXPECT_LE(cache, 0.9 * (sys.accel.memory_bytes - rest));  // so rest + cache fits in HBM too
            EXPECT_FALSE(serve_at(c, p, n + 1).fits_in_memory);
            const auto best = max_throughput(c, p);
            ASSERT_TRUE(best.has_value());
            EXPECT_TRUE(best->fits_in_memory);
            EXPECT_LE(best->concurrency, n);
        }
    }
}

}  // namespace
}  // namespace sm

namespace sm {
namespace {

TEST(Serving, Fp8MathKeepsAnFp8CacheUnlessTold) {
    const char* base = R"({"model": {"preset": "llama3-8b"}, "system": {"preset": "dgx-h100"}, "inference": {%s}})";
    auto with = [&](const std::string& inf) {
        char buf[512];
        std::snprintf(buf, sizeof buf, base, inf.c_str());
        return testing::scenario(buf, Purpose::infer).inference.kv_precision;
    };
    EXPECT_EQ(with(R"("precision": "fp8")"), Precision::fp8);
    EXPECT_EQ(with(R"("precision": "fp8", "kv_precision": "bf16")"), Precision::bf16);
    EXPECT_EQ(with(R"("precision": "bf16")"), Precision::bf16);
    EXPECT_EQ(with(R"("precision": "fp16")"), Precision::fp16);
}

}  // namespace
}  // namespace sm

#include "io/validation.hpp"

namespace sm {
namespace {

// How the TensorRT-LLM rows become scenarios: experts from the notes, NVFP4 as fp4, the
// context window the row's own tokens; rows whose notes name what is not modelled are skipped.
TEST(ServingValidationRows, NotesAndPrecisionReadAsStated) {
    CsvRow row{{"id", "x"},          {"model", "Toy-MoE"}, {"layers", "4"},       {"hidden", "64"},
               {"heads", "4"},       {"kv_heads", "2"},    {"ffn_hidden", "128"}, {"ffn_act", "swiglu"},
               {"vocab", "100"},     {"system", "dgx-b200"}, {"tp", "1"},         {"pp", "1"},
               {"input_len", "300"}, {"output_len", "50"}, {"precision", "nvfp4"},
               {"notes", "offline; MoE 12 experts top-3; ffn_hidden is per-expert"}};
    const Json doc = row_scenario(row).value();
    EXPECT_EQ(doc["model"]["moe"]["experts"], 12);
    EXPECT_EQ(doc["model"]["moe"]["top_k"], 3);
    EXPECT_EQ(doc["model"]["moe"]["expert_ffn_hidden"], 128);
    EXPECT_EQ(doc["model"]["seq_len"], 350);
    EXPECT_EQ(doc["inference"]["precision"], "fp4");
    row["notes"] = "MoE 99999999999999999999 experts top-2";  // digits past any count: not read
    EXPECT_FALSE(row_scenario(row).value()["model"].contains("moe"));
}

TEST(ServingValidationRows, UnmodelledRowsSkippedWithTheReason) {
    const std::string csv =
        "id,model,layers,hidden,heads,kv_heads,ffn_hidden,ffn_act,vocab,system,tp,pp,batch,input_len,output_len,precision,"
        "measured_output_tokens_per_s,throughput_scope,unpublished_fields,notes\n"
        "dep,Toy,4,64,4,2,128,swiglu,100,dgx-h100,2,1,,100,50,fp8,1000,per_gpu,batch,\"DEP2 = 2 GPUs with attention data-parallel\"\n"
        "swa,Toy,4,64,4,2,128,swiglu,100,dgx-h100,1,1,,100,50,fp8,1000,per_gpu,batch,\"alternating sliding-window(128)/full\"\n"
        "ok,Toy,4,64,4,2,128,swiglu,100,dgx-h100,1,1,,100,50,fp8,1000,per_gpu,batch,\n";
    const ValidationReport r = run_validation("t", csv, std::nullopt).value();
    ASSERT_EQ(r.skipped.size(), 1u);
    EXPECT_NE(r.skipped[0].find("sliding-window"), std::string::npos);
    ASSERT_EQ(r.cases.size(), 2u);  // DEP runs as attention replicas (dp 2 of tp 1)
    EXPECT_EQ(r.cases[0].id, "dep");
    EXPECT_EQ(r.cases[0].layout.rfind("tp1 pp1", 0), 0u) << r.cases[0].layout;
    EXPECT_EQ(r.cases[1].metric, "output_tokens_per_s_per_gpu_max");  // batch unpublished: --max-throughput
}

// DEP-4 of an MoE model: the tp column holds the 4 GPUs; they become 4 attention replicas of
// tp 1 with the experts split 4 ways.
TEST(ServingValidationRows, AttentionDataParallelRows) {
    CsvRow row{{"id", "x"},          {"model", "Toy-MoE"}, {"layers", "4"},       {"hidden", "64"},
               {"heads", "4"},       {"kv_heads", "2"},    {"ffn_hidden", "128"}, {"ffn_act", "swiglu"},
               {"vocab", "100"},     {"system", "dgx-b200"}, {"tp", "4"},         {"pp", "1"},
               {"input_len", "300"}, {"output_len", "50"}, {"precision", "fp8"},
               {"notes", "DEP4 = 4 GPUs with attention data-parallel + expert parallel 4; MoE 8 experts top-2"}};
    const Json doc = row_scenario(row).value();
    EXPECT_EQ(doc["parallel"]["tp"], 1);
    EXPECT_EQ(doc["parallel"]["dp"], 4);
    EXPECT_EQ(doc["parallel"]["ep"], 4);
    row["notes"] = "tp 4";
    EXPECT_EQ(row_scenario(row).value()["parallel"]["tp"], 4);
    EXPECT_FALSE(row_scenario(row).value()["parallel"].contains("dp"));
}

// MLA rows run only when the data-set context gives the model's attention.
TEST(ServingValidationRows, MlaNeedsItsDimensionsFromTheContext) {
    const std::string csv =
        "id,model,layers,hidden,heads,kv_heads,ffn_hidden,ffn_act,vocab,system,tp,pp,batch,input_len,output_len,precision,"
        "measured_output_tokens_per_s,throughput_scope,unpublished_fields,notes\n"
        "mla,Toy-MLA,4,256,4,4,512,swiglu,100,dgx-h100,1,1,8,100,50,fp8,1000,per_gpu,,\"MLA attention (kv_lora_rank 64)\"\n";
    const ValidationReport bare = run_validation("t", csv, std::nullopt).value();
    ASSERT_EQ(bare.skipped.size(), 1u);
    EXPECT_NE(bare.skipped[0].find("multi-head latent attention"), std::string::npos);
    const std::string ctx = R"({"reason": "r", "models": {"Toy-MLA": {"reason": "dims", "overrides": [
        "model.attention_kind=mla", "model.mla.q_lora_rank=128", "model.mla.kv_lora_rank=64",
        "model.mla.qk_nope_head_dim=64", "model.mla.qk_rope_head_dim=32", "model.mla.v_head_dim=64"]}}})";
    const ValidationReport given = run_validation("t", csv, ctx).value();
    EXPECT_TRUE(given.skipped.empty()) << (given.skipped.empty() ? "" : given.skipped[0]);
    ASSERT_EQ(given.cases.size(), 1u);
    EXPECT_GT(given.cases[0].predicted, 0);
}

// Row rules of a data-set context apply to the rows whose cells match all of `where` (an absent
// column reads as empty), after the model's; malformed rules name their field.
TEST(ServingValidationRows, ContextRowRulesApplyWhereTheCellsMatch) {
    const std::string csv =
        "id,model,layers,hidden,heads,kv_heads,ffn_hidden,ffn_act,vocab,system,tp,pp,batch,input_len,output_len,precision,"
        "measured_output_tokens_per_s,throughput_scope,unpublished_fields,notes\n"
        "a,Toy,4,64,4,2,128,swiglu,100,dgx-h100,1,1,,100,50,fp8,1000,per_gpu,batch,\n"
        "b,Toy,4,64,4,2,128,swiglu,100,dgx-h100,1,1,,200,50,fp8,1000,per_gpu,batch,\n";
    const ValidationReport bare = run_validation("t", csv, std::nullopt).value();
    const std::string ctx = R"({"reason": "r", "rows": [{"where": {"batch": "", "input_len": "100"},
        "overrides": ["inference.num_requests=16"], "reason": "a finite run"}]})";
    const ValidationReport given = run_validation("t", csv, ctx).value();
    ASSERT_EQ(given.cases.size(), 2u);
    ASSERT_EQ(given.contexts.at(0).rows.size(), 1u);
    EXPECT_EQ(given.contexts[0].rows[0].reason, "a finite run");
    EXPECT_LT(given.cases[0].predicted, bare.cases[0].predicted);  // 16 requests: ramp-up and tail count
    EXPECT_EQ(given.cases[1].predicted, bare.cases[1].predicted);  // input_len 200: not matched
    for (const auto& [text, path] : std::vector<std::pair<std::string, std::string>>{
             {R"({"reason": "r", "rows": {}})", "rows"},
             {R"({"reason": "r", "rows": [{"overrides": [], "reason": "x"}]})", "rows[0].where"},
             {R"({"reason": "r", "rows": [{"where": {}, "reason": "x"}]})", "rows[0].where"},
             {R"({"reason": "r", "rows": [{"where": {"batch": 1}, "reason": "x"}]})", "rows[0].where.batch"},
             {R"({"reason": "r", "rows": [{"where": {"batch": ""}}]})", "rows[0].reason"},
             {R"({"reason": "r", "rows": [{"where": {"batch": ""}, "reason": "x", "extra": 1}]})", "rows[0].extra"}}) {
        const auto bad = parse_context("t", text);
        ASSERT_FALSE(bad.ok()) << text;
        EXPECT_NE(bad.error().path.find(path), std::string::npos) << bad.error().path << " for " << text;
    }
}

}  // namespace
}  // namespace sm

namespace sm {
namespace {

TEST(ServingSpeculative, ExpectedTokensPerStepByHand) {
    InferenceSpec s;
    EXPECT_DOUBLE_EQ(tokens_per_decode_step(s), 1.0);  // off
    s.speculative_tokens = 3;
    s.acceptance_rate = 0.5;
    EXPECT_DOUBLE_EQ(tokens_per_decode_step(s), 1.875);  // (1 - 0.5^4) / (1 - 0.5)
    s.acceptance_rate = 1.0;
    EXPECT_DOUBLE_EQ(tokens_per_decode_step(s), 4.0);  // every draft accepted: k + 1
    s.acceptance_rate = 0.0;
    EXPECT_DOUBLE_EQ(tokens_per_decode_step(s), 1.0);  // only the verify pass's own token
}

TEST(ServingSpeculative, VerifyAndDraftCostByHand) {
    // The toy model, C = 3, I = 100, O = 11, chunk 64, 1 draft token accepted with p = 1:
    // E = 2 tokens per decode step, so a request decodes in 10 / 2 = 5 steps, N = 5 + 2 = 7.
    // Per step 3 x 5 / 7 decoding requests each verify 2 tokens (q = 2 against the cache),
    // 3 x 100 / 7 prompt tokens; the draft is one MTP block + head over the decoding requests.
    const ModelSpec m = testing::tiny_llama(2);
    const SystemSpec sys = testing::round_inference_system();
    InferenceSpec s = toy_serving_workload();
    s.speculative_tokens = 1;
    s.acceptance_rate = 1.0;
    const ServingPoint r = serve_at({m, sys, s}, ParallelConfig{}, 3);
    EXPECT_DOUBLE_EQ(r.steps_per_request, 7.0);
    const double d = 15.0 / 7.0, pf = 300.0 / 7.0, started = 3.0 / 7.0;
    // Verify: toy_step_flop with 2 d tokens at the decode context, the prompt tokens, and 2 d + started samples.
    const double verify = toy_step_flop(2 * d, 105.5, pf, 100.0, 2 * d + started);
    // Draft: one layer (half the 2-layer model's layer FLOP) for d tokens + the head for d samples.
    const double h = 64, dd = 16, heads = 4, kv = 2, f = 128, V = 100;
    const double weights = h * (heads + 2 * kv) * dd + heads * dd * h + h * 2 * f + f * h;
    const double draft = 2 * weights * d + 4 * heads * dd * d * 105.5 + 2 * h * V * d;
    EXPECT_NEAR(r.step.flop, verify + draft, 1e-6 * (verify + draft));
    // On 2 pipeline stages the 3 requests move as 2 micro-batches: a step is one micro-batch's
    // pass, verify and draft (its MTP block and head too) over half the tokens.
    ParallelConfig two;
    two.pp = 2;
    const ServingPoint piped = serve_at({m, sys, s}, two, 3);
    ASSERT_EQ(piped.micro_batches, 2);
    EXPECT_NEAR(piped.step.flop, (verify + draft) / 2, 1e-6 * (verify + draft));
    // The prompt's 2 chunk steps of 50 tokens: K = 300 / 50 = 6 of the 7 steps carry one (each
    // finishing half a prompt, beside 2 decoding requests); the request's 5 decode steps see 4 of
    // them and the decode-only one (3 decoding).
    const double tc = engine_step_cost({m, sys, s}, ParallelConfig{}, 2, 50, 0.5, 1).total_s();
    const double td = engine_step_cost({m, sys, s}, ParallelConfig{}, 3, 0, 0, 1).total_s();
    ASSERT_GT(tc, td);
    EXPECT_DOUBLE_EQ(r.ttft_s, 2.0 * tc);
    EXPECT_DOUBLE_EQ(r.tpot_s, (4 * tc + td) / 10);
    EXPECT_DOUBLE_EQ(r.output_tokens_per_s, 33.0 / (6 * tc + td));
}


// A lone request (C = 1) never shares its prompt's step: its first token comes after its whole
// prompt's forward pass, the static prefill of a batch of one, plus the host's per-request time.
TEST(Serving, LoneRequestTtftIsTheStaticPrefillPlusHost) {
    const ModelSpec m = testing::tiny_llama(2);
    SystemSpec sys = system_preset("dgx-h100");
    sys.eff.host_request_overhead_s = 0.003;
    InferenceSpec s = toy_serving_workload();
    s.prefill_chunk_tokens = 128;  // the 100-token prompt in one step
    s.batch = 1;
    const InferContext c{m, sys, s};
    const double prefill = prefill_cost(c, ParallelConfig{}).total_s();
    ASSERT_GT(prefill, 0);
    EXPECT_NEAR(serve_at(c, ParallelConfig{}, 1).ttft_s, prefill + 0.003, 1e-9 * prefill);
}

// More requests in flight or a longer prompt never bring the first token sooner.
TEST(Serving, TtftGrowsWithConcurrencyAndPromptLength) {
    const ModelSpec m = model_preset("llama3-8b");
    const SystemSpec sys = system_preset("dgx-h100");
    InferenceSpec s;
    s.input_len = 2048;
    s.output_len = 256;
    s.precision = s.weight_precision = s.kv_precision = Precision::bf16;
    double last = 0;
    for (const int64_t n : {1, 2, 4, 8, 16, 32, 64, 128, 256}) {
        const double t = serve_at({m, sys, s}, ParallelConfig{}, n).ttft_s;
        EXPECT_GE(t, last) << "concurrency " << n;
        last = t;
    }
    // On 2 pipeline stages a request's chunk is one micro-batch's: its first token is never
    // sooner than its prompt alone through both stages (the static prefill of one request).
    ParallelConfig two;
    two.pp = 2;
    s.batch = 1;
    const double alone = prefill_cost({m, sys, s}, two).total_s();
    for (const int64_t n : {2, 4, 8}) EXPECT_GE(serve_at({m, sys, s}, two, n).ttft_s, alone) << "pp 2, concurrency " << n;
    last = 0;
    for (const int64_t in : {128, 512, 2048, 8192, 32768}) {
        s.input_len = in;
        const double t = serve_at({m, sys, s}, ParallelConfig{}, 16).ttft_s;
        EXPECT_GT(t, last) << "input_len " << in;
        last = t;
    }
}


// On 2 pipeline stages with 2 requests (the toy workload: a lifetime of 12 steps, K = 4 chunk
// steps of 50 prompt tokens, 1 request decoding beside each): a request's first token waits for
// its 2 chunk steps, each a micro-batch carrying its whole 50-token chunk (100 spread over the
// 2 micro-batches) and finishing half its prompt (C / K x mb = 1 sample over the two).
TEST(Serving, PipelinedChunkIsOneMicroBatchsByHand) {
    const ModelSpec m = testing::tiny_llama(2);
    const SystemSpec sys = system_preset("dgx-h100");
    const InferenceSpec s = toy_serving_workload();
    ParallelConfig two;
    two.pp = 2;
    const ServingPoint r = serve_at({m, sys, s}, two, 2);
    ASSERT_EQ(r.micro_batches, 2);
    EXPECT_DOUBLE_EQ(r.ttft_s, 2 * engine_step_cost({m, sys, s}, two, 1, 100, 1, 2).total_s());
}

}  // namespace
}  // namespace sm
