// Inference against hand computation on the toy model and the round machine (test_helpers.hpp):
// pipeline hops, per-stage weights, TP collectives, KV-cache bytes per format, the memory peak
// and the largest batch, prefill FLOP. Every expected number is written out with its arithmetic.
#include <gtest/gtest.h>

#include "comm/collectives.hpp"
#include "inference/inference.hpp"
#include "inference/roofline.hpp"
#include "test_helpers.hpp"

namespace sm {
namespace {

using testing::round_inference_system;
using testing::tiny_llama;

// fp16 (the cache in `kv`) with a 1,000-byte framework allowance, so memory sums stay readable.
InferenceSpec workload(int64_t batch, int64_t in, int64_t out, Precision kv = Precision::fp16) {
    InferenceSpec s = testing::fp16_workload(batch, in, out);
    s.kv_precision = kv;
    s.framework_overhead_bytes = 1000;
    return s;
}

ParallelConfig layout(int64_t tp, int64_t pp, int64_t dp = 1) {
    ParallelConfig p;
    p.tp = tp;
    p.pp = pp;
    p.dp = dp;
    return p;
}

TEST(InferenceByHand, PipelineHopsArePpMinusOne) {
    const ModelSpec m = tiny_llama(4);
    SystemSpec sys = round_inference_system();
    sys.eff.host_collective_overhead_s = 2e-6;
    const InferenceSpec s = workload(3, 10, 5);
    // One hop: batch x q x hidden x 2 B over scale-up (4 pipeline ranks, 1 apart, share the
    // 8-GPU domain): bytes / 100 GB/s + 1 us latency + 2 us host overhead.
    const double decode_hop = 3.0 * 1 * 64 * 2 / 100e9 + 1e-6 + 2e-6;
    const double prefill_hop = 3.0 * 10 * 64 * 2 / 100e9 + 1e-6 + 2e-6;
    EXPECT_EQ(decode_step_cost({m, sys, s}, layout(1, 1), 20).pp_comm_s, 0.0);
    EXPECT_NEAR(decode_step_cost({m, sys, s}, layout(1, 2), 20).pp_comm_s, 1 * decode_hop, 1e-18);
    EXPECT_NEAR(decode_step_cost({m, sys, s}, layout(1, 4), 20).pp_comm_s, 3 * decode_hop, 1e-18);
    EXPECT_NEAR(prefill_cost({m, sys, s}, layout(1, 4)).pp_comm_s, 3 * prefill_hop, 1e-18);
    // Domains of 2: pipeline neighbours 0-1 share one, 1-2 do not; every hop is costed on the
    // scale-out network (10 GB/s, 5 us).
    sys.scale_up_domain = 2;
    EXPECT_NEAR(decode_step_cost({m, sys, s}, layout(1, 4), 20).pp_comm_s, 3 * (384 / 10e9 + 5e-6 + 2e-6), 1e-18);
    // The roofline lists the same hop pp - 1 times.
    const Roofline r = inference_roofline({m, sys, s}, layout(1, 4), 20);
    int rows = 0;
    for (const RooflineRow& row : r.rows)
        if (row.name == "pp_send") {
            ++rows;
            EXPECT_EQ(row.count, 3.0);
            EXPECT_DOUBLE_EQ(row.bytes, row.phase == "decode" ? 384.0 : 3840.0);
        }
    EXPECT_EQ(rows, 2);
}

TEST(InferenceByHand, WeightsPerStage) {
    ModelSpec m = tiny_llama(2);
    // Per layer 36,864 matrix weights + 128 RMSNorm weights = 36,992; embedding 100 x 64 = 6,400;
    // head 6,400 + final norm 64.
    EXPECT_DOUBLE_EQ(weight_params_per_gpu(m, layout(1, 1)), 2 * 36992.0 + 6400 + 6400 + 64);  // 86,848
    // pp 2: one layer per stage; the embedding on the first, the head on the last.
    EXPECT_DOUBLE_EQ(weight_params_per_gpu(m, layout(1, 2)), 36992.0 + 6464);  // 43,456
    // tp 2: qkv 64 x (2 + 2 x 1) x 16 = 4,096, out 32 x 64 = 2,048, up 64 x 128 = 8,192,
    // down 64 x 64 = 4,096: 18,432 + 128 replicated norm weights; embedding and head / 2.
    EXPECT_DOUBLE_EQ(weight_params_per_gpu(m, layout(2, 1)), 2 * 18560.0 + 3200 + 3200 + 64);  // 43,584
    EXPECT_DOUBLE_EQ(weight_params_per_gpu(m, layout(2, 2)), 18560.0 + 3264);  // 21,824
    // tp 4 exceeds the 2 KV heads: each rank keeps one whole KV head (qkv 64 x 3 x 16 = 3,072),
    // out 1,024, up 4,096, down 2,048.
    EXPECT_DOUBLE_EQ(weight_params_per_gpu(m, layout(4, 1)), 2 * 10368.0 + 1600 + 1600 + 64);  // 24,000
    // Tied embeddings: one matrix on a single stage; the last stage keeps its own copy at pp 2.
    m.tied_embeddings = true;
    EXPECT_DOUBLE_EQ(weight_params_per_gpu(m, layout(1, 1)), 2 * 36992.0 + 6400 + 64);
    EXPECT_DOUBLE_EQ(weight_params_per_gpu(m, layout(1, 2)), 36992.0 + 6464);
    // A learned position table makes the embedding end the bigger one: the first stage is the
    // fullest.
    m.tied_embeddings = false;
    m.position = PositionKind::learned;  // adds seq_len x h = 65,536 position weights
    EXPECT_DOUBLE_EQ(weight_params_per_gpu(m, layout(1, 2)), 36992.0 + 6400 + 65536);
}

TEST(InferenceByHand, ExpertWeightsSplitByExpertParallelism) {
    // Four experts of SwiGLU width 128 (top 2): per layer qkv 8,192 + out 4,096 + router 64 x 4
    // = 256, each expert up 64 x 256 + down 128 x 64 = 24,576; norms 128.
    ModelSpec m = tiny_llama(2);
    m.moe.experts = 4;
    m.moe.top_k = 2;
    m.moe.expert_ffn_hidden = 128;
    auto expected = [](double experts_per_gpu) {
        const double layer = 8192 + 4096 + 256 + experts_per_gpu * 24576 + 128;
        return 2 * layer + 6400 + 6400 + 64;
    };
    for (int64_t ep : {1, 2, 4}) {
        ParallelConfig p = layout(1, 1, 4);
        p.ep = ep;
        EXPECT_DOUBLE_EQ(weight_params_per_gpu(m, p), expected(4.0 / static_cast<double>(ep))) << ep;
    }
}

TEST(InferenceByHand, WeightBytesFollowTheStoragePrecision) {
    const ModelSpec m = tiny_llama(2);
    const SystemSpec sys = round_inference_system();
    InferenceSpec s = workload(1, 10, 5);
    const std::pair<Precision, double> formats[] = {
        {Precision::fp16, 2}, {Precision::bf16, 2}, {Precision::fp8, 1}, {Precision::int8, 1}, {Precision::int4, 0.5}};
    for (const auto& [p, bytes] : formats) {
        s.weight_precision = p;
        EXPECT_DOUBLE_EQ(inference_memory({m, sys, s}, layout(1, 1), 1).weights_bytes, 86848.0 * bytes) << to_string(p);
    }
}

TEST(InferenceByHand, TensorParallelCollectivesPerLayer) {
    const ModelSpec m = tiny_llama(2);
    SystemSpec sys = round_inference_system();
    sys.eff.host_collective_overhead_s = 3e-7;
    sys.eff.host_layer_overhead_s = 1e-5;
    const InferenceSpec s = workload(3, 10, 5);
    // Two ranks over scale-up: an all-reduce is 2 (n-1)/n = 1 x bytes / 100 GB/s + 2 latency
    // steps; an all-gather (n-1)/n = 1/2 x bytes / 100 GB/s + 1 step; + 0.3 us per call.
    auto all_reduce = [](double bytes) { return bytes / 100e9 + 2e-6 + 3e-7; };
    auto all_gather = [](double bytes) { return 0.5 * bytes / 100e9 + 1e-6 + 3e-7; };
    // Two all-reduces per layer (attention and MLP outputs) + the embedding's, of batch x q x h
    // x 2 B; the logits of the sampled position (batch x V x 2 B) gathered once.
    const double logits = all_gather(3.0 * 100 * 2);
    const PassCost dec = decode_step_cost({m, sys, s}, layout(2, 1), 20);
    EXPECT_NEAR(dec.tp_comm_s, 5 * all_reduce(3.0 * 1 * 64 * 2) + logits, 1e-18);
    const PassCost pre = prefill_cost({m, sys, s}, layout(2, 1));
    EXPECT_NEAR(pre.tp_comm_s, 5 * all_reduce(3.0 * 10 * 64 * 2) + logits, 1e-18);
    // Host dispatch: per layer, per pass.
    EXPECT_DOUBLE_EQ(dec.host_s, 2 * 1e-5);
    EXPECT_DOUBLE_EQ(pre.host_s, 2 * 1e-5);
    EXPECT_EQ(dec.ep_comm_s, 0.0);
}

TEST(InferenceByHand, KvCacheBytesPerFormat) {
    const ModelSpec m = tiny_llama(2);
    // layers 2 x (K and V) 2 x batch 3 x 15 tokens x 2 KV heads x 16 = 5,760 elements.
    const std::pair<Precision, double> formats[] = {
        {Precision::fp16, 2}, {Precision::bf16, 2}, {Precision::fp8, 1}, {Precision::int8, 1}, {Precision::int4, 0.5}};
    for (const auto& [p, bytes] : formats) {
        const InferenceSpec s = workload(3, 10, 5, p);
        EXPECT_DOUBLE_EQ(kv_cache_bytes_per_gpu(m, layout(1, 1), s, 15), 5760 * bytes) << to_string(p);
        // tp 2: one KV head per rank; tp 4: still one (replicated); pp 2: one layer per stage.
        EXPECT_DOUBLE_EQ(kv_cache_bytes_per_gpu(m, layout(2, 1), s, 15), 2880 * bytes) << to_string(p);
        EXPECT_DOUBLE_EQ(kv_cache_bytes_per_gpu(m, layout(4, 1), s, 15), 2880 * bytes) << to_string(p);
        EXPECT_DOUBLE_EQ(kv_cache_bytes_per_gpu(m, layout(1, 2), s, 15), 2880 * bytes) << to_string(p);
    }
}

TEST(InferenceByHand, KvCacheIsReadInItsFormat) {
    const ModelSpec m = tiny_llama(2);
    const SystemSpec sys = round_inference_system();
    // One decode step at context 20, batch 3: attention reads Q and writes O in fp16 (2 x 3 x
    // 4 heads x 16 x 2 B = 768 B) and reads K and V of the context in the cache's format
    // (2 x 3 x 20 x 2 KV heads x 16 = 3,840 elements).
    auto attention_bytes = [&](Precision kv) {
        const Roofline r = inference_roofline({m, sys, workload(3, 10, 20, kv)}, layout(1, 1), 20);
        for (const RooflineRow& row : r.rows)
            if (row.phase == "decode" && row.name == "attention") return row.bytes;
        ADD_FAILURE() << "no decode attention row";
        return 0.0;
    };
    EXPECT_DOUBLE_EQ(attention_bytes(Precision::fp16), 768 + 3840 * 2.0);
    EXPECT_DOUBLE_EQ(attention_bytes(Precision::fp8), 768 + 3840 * 1.0);
    EXPECT_DOUBLE_EQ(attention_bytes(Precision::int4), 768 + 3840 * 0.5);
    // The whole step moves exactly the cache difference, once per layer.
    const double fp16 = decode_step_cost({m, sys, workload(3, 10, 20)}, layout(1, 1), 20).hbm_bytes;
    const double fp8 = decode_step_cost({m, sys, workload(3, 10, 20, Precision::fp8)}, layout(1, 1), 20).hbm_bytes;
    EXPECT_DOUBLE_EQ(fp16 - fp8, 2 * 3840 * (2.0 - 1.0));
}

TEST(InferenceByHand, Fp8MathReadsOneByteOperandsBesideBf16Activations) {
    const ModelSpec m = tiny_llama(2);
    const SystemSpec sys = round_inference_system();
    InferenceSpec s = workload(1, 10, 5);
    s.precision = Precision::fp8;
    s.weight_precision = Precision::fp8;
    // Decode ffn_up [1 x 64] x [64 x 256]: the fp8 input 64 x 1 B, fp8 weights 16,384 x 1 B, the
    // bf16 output 256 x 2 B = 16,960 B; the cast of the bf16 activation into fp8 reads 2 B and
    // writes 1 B per element: 64 x 3 = 192 B more. 32,768 FLOP at the 200 TFLOP/s 8-bit peak.
    const Roofline r = inference_roofline({m, sys, s}, layout(1, 1), 12);
    const RooflineRow* up = nullptr;
    for (const RooflineRow& row : r.rows)
        if (row.phase == "decode" && row.name == "ffn_up") up = &row;
    ASSERT_NE(up, nullptr);
    EXPECT_DOUBLE_EQ(up->bytes, 16960.0 + 192);
    EXPECT_DOUBLE_EQ(up->compute_s, 32768 / 200e12);
    EXPECT_DOUBLE_EQ(up->memory_s, 16960 / 1e12);
    EXPECT_DOUBLE_EQ(up->time_s, (16960.0 + 192) / 1e12);
    EXPECT_DOUBLE_EQ(r.balance, 200e12 / 1e12);
}

TEST(InferenceByHand, PrefillFlopHasOneHeadPosition) {
    const ModelSpec m = tiny_llama(2);
    const SystemSpec sys = round_inference_system();
    // Batch 1, 10 prompt tokens: 2 x 10 x 36,864 weight FLOP per layer, causal attention
    // 4 x 4 heads x 10 x 10 x 16 x 1/2 = 12,800; the head only for the last position: 2 x 64 x 100.
    const PassCost pre = prefill_cost({m, sys, workload(1, 10, 5)}, layout(1, 1));
    EXPECT_DOUBLE_EQ(pre.flop, 2 * (2 * 10 * 36864.0 + 12800) + 2 * 64 * 100);
}

// A bidirectional model attends to the whole prompt: 4 x 4 heads x 10 x 10 x 16 = 25,600
// attention FLOP per layer instead of half of it. A decode step runs one query position per
// sequence: 2 x 36,864 weight FLOP per layer, attention 4 x 4 heads x 1 x 20 x 16 = 5,120 at a
// 20-token context, the head 2 x 64 x 100.
TEST(InferenceByHand, NonCausalPrefillAndOneTokenDecodeFlop) {
    ModelSpec m = tiny_llama(2);
    m.causal = false;
    const SystemSpec sys = round_inference_system();
    EXPECT_DOUBLE_EQ(prefill_cost({m, sys, workload(1, 10, 5)}, layout(1, 1)).flop, 2 * (2 * 10 * 36864.0 + 25600) + 2 * 64 * 100);
    EXPECT_DOUBLE_EQ(decode_step_cost({m, sys, workload(1, 10, 5)}, layout(1, 1), 20).flop,
                     2 * (2 * 36864.0 + 5120) + 2 * 64 * 100);
}

// Two answer tokens: the first comes from the prefill, the one decode step (at 11 tokens of
// context: weights 2 x 36,864, attention 4 x 4 x 11 x 16 = 2,816 per layer, head 12,800 FLOP)
// is the whole decode and the time per output token.
TEST(InferenceByHand, OneDecodeStepIsTheTimePerToken) {
    const ModelSpec m = tiny_llama(2);
    const SystemSpec sys = round_inference_system();
    const InferResult r = evaluate_inference({m, sys, workload(1, 10, 2)}, layout(1, 1));
    EXPECT_EQ(r.decode_steps, 1);
    EXPECT_DOUBLE_EQ(r.decode.flop, 2 * (2 * 36864.0 + 2816) + 12800);
    EXPECT_GT(r.tpot_s, 0.0);
    EXPECT_DOUBLE_EQ(r.tpot_s, r.decode.total_s());
}

// The pipeline hop of a decode step does not grow with the context: over 4 steps at pp 2 the
// decode spends 4 x (3 x 64 x 2 B / 100 GB/s + 1 us) in hops.
TEST(InferenceByHand, DecodeSumsThePipelineHops) {
    const ModelSpec m = tiny_llama(4);
    const SystemSpec sys = round_inference_system();
    const InferResult r = evaluate_inference({m, sys, workload(3, 10, 5)}, layout(1, 2));
    EXPECT_NEAR(r.decode.pp_comm_s, 4 * (384 / 100e9 + 1e-6), 1e-18);
}

// With a narrow FFN (16), full KV heads and learned positions (RoPE would read and write as much
// as the projection writes) the QKV projection is the largest kernel of the prompt: it reads
// [10, 64] and writes [10, 192] (Q, K, V of 4 heads of 16): (640 + 1,920) x 2 B = 5,120 B, above
// the residual add's 10 x 64 x 3 x 2 = 3,840 and the fp32 logits (400 B). Beside the 1,280-byte
// residual stream: 6,400 B.
TEST(InferenceByHand, ActivationsOfTheLargestGemm) {
    ModelSpec m = tiny_llama(2);
    m.kv_heads = 4;
    m.ffn_hidden = 16;
    m.position = PositionKind::learned;
    const SystemSpec sys = round_inference_system();
    EXPECT_DOUBLE_EQ(inference_memory({m, sys, workload(1, 10, 5)}, layout(1, 1), 1).activations_bytes, 1280 + 5120.0);
}

TEST(InferenceByHand, MemoryPeakAndLargestBatch) {
    const ModelSpec m = tiny_llama(2);
    SystemSpec sys = round_inference_system();
    const InferenceSpec s = workload(1, 10, 5);
    // Prefill activations: the residual stream 10 x 64 x 2 = 1,280 B beside the largest kernel
    // working set, the SwiGLU (10 x 256 in + 10 x 128 out) x 2 B = 7,680 (fp32 logits of the
    // sampled position, 100 x 4 = 400 B, are smaller): 8,960. Decode at 15 tokens: 128 + 768.
    // KV: 2,560 B for the prompt, 3,840 B at 15 tokens. Weights 86,848 x 2 B; allowance 1,000.
    const double weights = 86848 * 2.0, fixed = weights + 1000;
    const double per_seq = std::max(2560.0 + 8960, 3840.0 + 896);  // 11,520: the prompt phase
    const InferMemory mem = inference_memory({m, sys, s}, layout(1, 1), 1);
    EXPECT_DOUBLE_EQ(mem.weights_bytes, weights);
    EXPECT_DOUBLE_EQ(mem.overhead_bytes, 1000.0);
    EXPECT_DOUBLE_EQ(mem.kv_cache_bytes, 3840.0);
    EXPECT_DOUBLE_EQ(mem.activations_bytes, 8960.0);
    EXPECT_DOUBLE_EQ(mem.peak_bytes_per_gpu, fixed + per_seq);
    // Every per-sequence term doubles with the batch.
    EXPECT_DOUBLE_EQ(inference_memory({m, sys, s}, layout(1, 1), 2).peak_bytes_per_gpu, fixed + 2 * per_seq);
    // A long answer: the full cache (2 x 2 x 1,010 x 2 x 16 x 2 = 258,560 B) beside the decode
    // working set outgrows the prompt phase.
    const InferenceSpec longer = workload(1, 10, 1000);
    EXPECT_DOUBLE_EQ(inference_memory({m, sys, longer}, layout(1, 1), 1).peak_bytes_per_gpu, fixed + 258560 + 896);

    // The largest batch: floor((capacity - fixed) / per_seq).
    sys.accel.memory_bytes = fixed + 7 * per_seq;
    EXPECT_EQ(max_batch_that_fits({m, sys, s}, layout(1, 1)), 7);
    sys.accel.memory_bytes = fixed + 7 * per_seq - 1;
    EXPECT_EQ(max_batch_that_fits({m, sys, s}, layout(1, 1)), 6);
    sys.accel.memory_bytes = fixed + per_seq;
    EXPECT_EQ(max_batch_that_fits({m, sys, s}, layout(1, 1)), 1);
    sys.accel.memory_bytes = fixed + per_seq - 1;
    EXPECT_EQ(max_batch_that_fits({m, sys, s}, layout(1, 1)), 0);
    sys.accel.memory_bytes = fixed - 1;
    EXPECT_EQ(max_batch_that_fits({m, sys, s}, layout(1, 1)), 0);
    // Fitting is "at most the capacity".
    sys.accel.memory_bytes = fixed + per_seq;
    EXPECT_TRUE(evaluate_inference({m, sys, s}, layout(1, 1)).fits_in_memory);
    sys.accel.memory_bytes = fixed + per_seq - 1;
    EXPECT_FALSE(evaluate_inference({m, sys, s}, layout(1, 1)).fits_in_memory);
}

TEST(InferenceByHand, ActivationsOfLogitsAndUnfusedScores) {
    const SystemSpec sys = round_inference_system();
    // A 10,000-word vocabulary: the fp32 logits of the sampled positions (batch 2 x 10,000 x 4 B
    // = 80,000 B; 40,000 B per rank at tp 2) outgrow every kernel's working set.
    ModelSpec big_vocab = tiny_llama(2);
    big_vocab.vocab = 10000;
    const InferenceSpec s = workload(2, 10, 5);
    EXPECT_DOUBLE_EQ(inference_memory({big_vocab, sys, s}, layout(1, 1), 2).activations_bytes, 2 * 10 * 64 * 2 + 80000.0);
    EXPECT_DOUBLE_EQ(inference_memory({big_vocab, sys, s}, layout(2, 1), 2).activations_bytes, 2 * 10 * 64 * 2 + 40000.0);
    // Unfused attention materialises the scores: at the last decode step (1,010 tokens) the
    // softmax reads and writes 4 heads x 1,010 x 2 B twice = 16,160 B, beside the 128 B residual.
    // The full cache (258,560 B) and these activations make the peak.
    ModelSpec unfused = tiny_llama(2);
    unfused.attention = AttentionImpl::unfused;
    const InferenceSpec longer = workload(1, 10, 1000);
    const InferMemory mem = inference_memory({unfused, sys, longer}, layout(1, 1), 1);
    EXPECT_DOUBLE_EQ(mem.activations_bytes, 128 + 16160.0);
    EXPECT_DOUBLE_EQ(mem.peak_bytes_per_gpu, 86848 * 2.0 + 1000 + 258560 + 128 + 16160);
}

TEST(InferenceByHand, ResultFiguresFromThePasses) {
    const ModelSpec m = tiny_llama(2);
    const SystemSpec sys = round_inference_system();
    const InferenceSpec s = workload(3, 10, 5);
    const ParallelConfig p = layout(2, 1, 4);
    const InferResult r = evaluate_inference({m, sys, s}, p);
    EXPECT_EQ(r.gpus, 2 * 1 * 4);
    EXPECT_EQ(r.decode_steps, 4);  // token 1 comes from the prefill
    const PassCost first = decode_step_cost({m, sys, s}, p, 11), last = decode_step_cost({m, sys, s}, p, 14);
    EXPECT_DOUBLE_EQ(r.decode_first.total_s(), first.total_s());
    EXPECT_DOUBLE_EQ(r.decode_last.total_s(), last.total_s());
    EXPECT_DOUBLE_EQ(r.ttft_s, prefill_cost({m, sys, s}, p).total_s());
    EXPECT_NEAR(r.e2e_latency_s, r.ttft_s + r.decode.total_s(), 1e-15);
    EXPECT_NEAR(r.tpot_s, r.decode.total_s() / 4, 1e-15);
    // 4 replicas x batch 3 x 5 tokens over the end-to-end latency.
    EXPECT_NEAR(r.output_tokens_per_s, 4.0 * 3 * 5 / r.e2e_latency_s, 1e-9 * r.output_tokens_per_s);
}

// The round machine with every GPU in a scale-up domain of its own: all traffic crosses the network.
SystemSpec one_gpu_per_domain() {
    SystemSpec sys = round_inference_system();
    sys.scale_up_domain = 1;
    sys.node_gpus = 1;
    return sys;
}

// Pipeline stages hand one activation across each of the pp - 1 stage boundaries per pass: 2
// sequences x 100 prompt tokens x h 64 x 2 bytes = 25,600 bytes per hop, 1 hop at pp 2, 3 at pp 4.
// With every GPU in its own scale-up domain the hops cross the scale-out network; within one
// domain they ride the scale-up fabric; never both.
TEST(InferenceModel, PipelineHopsArePpMinusOneMessagesOnTheirLink) {
    const ModelSpec m = tiny_llama(4);
    const InferenceSpec s = testing::fp16_workload(2, 100, 10);
    for (const bool apart : {true, false}) {
        const SystemSpec sys = apart ? one_gpu_per_domain() : round_inference_system();
        const CollectiveCost k = collective_cost(Collective::p2p, 2.0 * 100 * 64 * 2, apart ? GroupSpan{2, 1, 2} : GroupSpan{2, 2, 1}, sys);
        const double hop = apart ? k.scale_out_bytes : k.scale_up_bytes;
        ASSERT_GT(hop, 0);
        for (const int64_t pp : {2, 4}) {
            ParallelConfig p;
            p.pp = pp;
            const InferResult r = evaluate_inference({m, sys, s}, p);
            const double on = apart ? r.prefill.scale_out_bytes : r.prefill.scale_up_bytes;
            const double off = apart ? r.prefill.scale_up_bytes : r.prefill.scale_out_bytes;
            EXPECT_DOUBLE_EQ(on, static_cast<double>(pp - 1) * hop) << "pp " << pp << (apart ? " apart" : " within");
            EXPECT_EQ(off, 0.0) << "pp " << pp << (apart ? " apart" : " within");
        }
    }
}

// Tensor parallelism across scale-up domains: each layer's two all-reduces (after attention and
// after the FFN, 2 x 100 tokens x h 64 x 2 bytes each) cross the scale-out network, 4 layers of
// them at least (the embedding's and the logits' collectives come on top).
TEST(InferenceModel, TensorParallelCollectivesAcrossDomainsCountAsScaleOut) {
    const ModelSpec m = tiny_llama(4);
    const SystemSpec sys = one_gpu_per_domain();
    const InferenceSpec s = testing::fp16_workload(2, 100, 10);
    const double ar = collective_cost(Collective::all_reduce, 2.0 * 100 * 64 * 2, GroupSpan{2, 1, 2}, sys).scale_out_bytes;
    ASSERT_GT(ar, 0);
    ParallelConfig p;
    p.tp = 2;
    const InferResult r = evaluate_inference({m, sys, s}, p);
    EXPECT_GE(r.prefill.scale_out_bytes, 4 * 2 * ar);
    EXPECT_EQ(r.prefill.scale_up_bytes, 0.0);
}

// Sampling gathers the vocabulary-parallel logits of the last position: 2 sequences x 1 x vocab x
// 2 bytes, of which a ring all-gather over the 2 ranks sends half from each GPU, across the network
// here: 2 x vocab bytes. Only that collective grows with the vocabulary (the embedding's and the
// layers' traffic is [tokens, h]), so going from 100 to 1,100 words adds 2,000 bytes of scale-out.
TEST(InferenceModel, LogitsGatherAcrossDomainsCountsAsScaleOut) {
    const SystemSpec sys = one_gpu_per_domain();
    const InferenceSpec s = testing::fp16_workload(2, 100, 10);
    ParallelConfig p;
    p.tp = 2;
    ModelSpec small = tiny_llama(4), large = tiny_llama(4);
    large.vocab = 1100;
    const InferResult a = evaluate_inference({small, sys, s}, p), b = evaluate_inference({large, sys, s}, p);
    EXPECT_DOUBLE_EQ(b.prefill.scale_out_bytes - a.prefill.scale_out_bytes, 2000);
    EXPECT_DOUBLE_EQ(b.prefill.scale_up_bytes, 0.0);
}

// One output token is the prefill's: no decode step runs, so none is costed.
TEST(InferenceModel, OneOutputTokenHasNoDecodeStep) {
    const InferResult r = evaluate_inference({tiny_llama(2), round_inference_system(), testing::fp16_workload(2, 100, 1)}, ParallelConfig{});
    EXPECT_EQ(r.decode_steps, 0);
    EXPECT_EQ(r.decode_first.total_s(), 0.0);
    EXPECT_EQ(r.decode_last.total_s(), 0.0);
    EXPECT_EQ(r.decode.total_s(), 0.0);
    EXPECT_DOUBLE_EQ(r.e2e_latency_s, r.ttft_s);
}

}  // namespace
}  // namespace sm
