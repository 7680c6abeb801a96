// Inference: KV cache, decode FLOP and bytes by hand, exact summation of the growing cache,
// tensor- and pipeline-parallel bookkeeping, memory limits, and the seed paper's latencies.
#include <gtest/gtest.h>

#include <iterator>

#include <cmath>

#include "inference/inference.hpp"
#include "inference/roofline.hpp"
#include "io/scenario.hpp"
#include "io/validation.hpp"
#include "test_helpers.hpp"

namespace sm {
namespace {

using testing::model_preset;
using testing::system_preset;

// The toy model and fp16 workloads of test_helpers.hpp.
ModelSpec tiny() { return testing::tiny_llama(2); }
constexpr auto workload = &testing::fp16_workload;

// Scaling a pass (k layers alike, k draft passes) scales every figure it carries; adding one
// adds each.
TEST(Inference, PassCostScalesAndAddsEveryField) {
    PassCost a;
    a.compute_s = 1, a.tp_comm_s = 2, a.pp_comm_s = 3, a.ep_comm_s = 4, a.host_s = 5, a.flop = 6, a.hbm_bytes = 7, a.sram_bytes = 8;
    a.tensor_s = 9, a.scale_up_bytes = 10, a.scale_out_bytes = 11;
    const PassCost b = a.scaled(3);
    const double want[] = {3, 6, 9, 12, 15, 18, 21, 24, 27, 30, 33};
    const double got[] = {b.compute_s, b.tp_comm_s, b.pp_comm_s, b.ep_comm_s, b.host_s, b.flop, b.hbm_bytes, b.sram_bytes,
                          b.tensor_s, b.scale_up_bytes, b.scale_out_bytes};
    for (size_t i = 0; i < std::size(want); ++i) EXPECT_EQ(got[i], want[i]) << i;
    PassCost sum = a;
    sum += b;
    const double summed[] = {sum.compute_s, sum.tp_comm_s, sum.pp_comm_s, sum.ep_comm_s, sum.host_s, sum.flop, sum.hbm_bytes,
                             sum.sram_bytes, sum.tensor_s, sum.scale_up_bytes, sum.scale_out_bytes};
    for (size_t i = 0; i < std::size(want); ++i) EXPECT_EQ(summed[i], want[i] / 3 * 4) << i;
    EXPECT_EQ(b.total_s(), 3.0 * (1 + 2 + 3 + 4 + 5));
}

TEST(Inference, KvCacheBytesByHand) {
    const ModelSpec m = tiny();
    const SystemSpec sys = system_preset("dgx-h100");
    const InferenceSpec s = workload(3, 10, 5);
    const ParallelConfig p;
    // layers x (K and V) x batch x tokens x kv_heads x head_dim x bytes
    const double expected = 2.0 * 2.0 * 3.0 * 15.0 * 2.0 * 16.0 * 2.0;
    EXPECT_DOUBLE_EQ(inference_memory({m, sys, s}, p, s.batch).kv_cache_bytes, expected);
    // Multi-head attention keeps twice the cache of this 2-group GQA; an fp8 cache half.
    ModelSpec mha = m;
    mha.kv_heads = 4;
    EXPECT_DOUBLE_EQ(inference_memory({mha, sys, s}, p, s.batch).kv_cache_bytes, 2.0 * expected);
    InferenceSpec fp8 = s;
    fp8.kv_precision = Precision::fp8;
    EXPECT_DOUBLE_EQ(inference_memory({m, sys, fp8}, p, s.batch).kv_cache_bytes, 0.5 * expected);
}

TEST(Inference, DecodeFlopAndBytesPerTokenByHand) {
    const ModelSpec m = tiny();
    const SystemSpec sys = system_preset("dgx-h100");
    const InferenceSpec s = workload(1, 10, 5);
    const double h = 64, d = 16, heads = 4, kv = 2, f = 128, V = 100, L = 2, c = 12, e = 2;
    const PassCost step = decode_step_cost({m, sys, s}, ParallelConfig{}, c);

    // FLOP: 2 x every weight matrix (one token), the attention's 4 x heads x context x d, the head.
    const double weights = h * (heads + 2 * kv) * d + heads * d * h + h * 2 * f + f * h;
    const double flop = L * (2 * weights + 4 * heads * c * d) + 2 * h * V;
    EXPECT_DOUBLE_EQ(step.flop, flop);

    // Bytes: each GEMM reads its input and weight and writes its output; attention reads Q and
    // writes O (activations) and reads K and V for the whole context (cache); element-wise ops
    // as the op catalogue lists them.
    auto gemm = [&](double n, double k) { return k * e + k * n * e + n * e; };
    const double gemms = gemm((heads + 2 * kv) * d, h) + gemm(h, heads * d) + gemm(2 * f, h) + gemm(h, f);
    const double attention = 2 * heads * d * e + 2 * c * kv * d * e;
    const double norms = 2 * (2 * h * e);
    const double rope = 2 * (heads + kv) * d * e;
    const double residuals = 2 * (3 * h * e);
    const double act = (2 * f + f) * e;
    const double layer = gemms + attention + norms + rope + residuals + act;
    const double embedding = 2 * h * e;
    const double head = 2 * h * e + gemm(V, h);
    EXPECT_DOUBLE_EQ(step.hbm_bytes, L * layer + embedding + head);
}

TEST(Inference, HeadsWiderThanHiddenOverHeadsByHand) {
    // model.head_dim 32 on the 64-wide toy (4 heads of 32, not 16, as Qwen3's 128-wide heads on
    // a 2,048-wide model): Q is 4 x 32 = 128 wide, O reads 128, every K/V head caches 32 values.
    ModelSpec m = tiny();
    m.attention_head_dim = 32;
    const SystemSpec sys = system_preset("dgx-h100");
    const InferenceSpec s = workload(3, 10, 5);
    EXPECT_DOUBLE_EQ(inference_memory({m, sys, s}, ParallelConfig{}, s.batch).kv_cache_bytes,
                     2.0 * 2.0 * 3.0 * 15.0 * 2.0 * 32.0 * 2.0);
    const double h = 64, d = 32, heads = 4, kv = 2, f = 128, V = 100, L = 2, c = 12;
    const double weights = h * (heads + 2 * kv) * d + heads * d * h + h * 2 * f + f * h;
    const InferenceSpec one = workload(1, 10, 5);
    EXPECT_DOUBLE_EQ(decode_step_cost({m, sys, one}, ParallelConfig{}, c).flop, L * (2 * weights + 4 * heads * c * d) + 2 * h * V);
}

TEST(Inference, DecodeSumIsExactAcrossTheMemoryComputeKink) {
    // The toy model on a machine whose attention turns compute-bound as the cache grows, with
    // nothing else depending on the context. Per layer, batch 1, context c (fp16, 1e12 FLOP/s
    // attention peak, 1e12 B/s HBM, memory time = (bytes + 12,544 half-size bytes) / 1e12):
    //   FLOP  = 4 x 4 heads x c x 16 = 256 c
    //   bytes = Q and O 2 x 64 x 2 B + K and V 2 x c x 2 KV heads x 16 x 2 B = 256 + 128 c
    //   time  = max(256 c, 256 + 128 c + 12,544) / 1e12: memory-bound below c = 100, compute above.
    const ModelSpec m = testing::tiny_llama(2);
    SystemSpec sys = testing::round_inference_system();
    // Attention runs at the 16-bit peak (bf16 for fp16 activations too).
    for (Precision p : {Precision::fp16, Precision::bf16}) sys.accel.matrix_flop_per_s[static_cast<size_t>(p)] = 1e12;
    sys.eff.memory_half_bytes = 12544;
    const InferenceSpec s = workload(1, 50, 151);  // decode contexts 51..200
    const InferContext c{m, sys, s};
    auto attention_s = [](double ctx) { return std::max(256 * ctx, 12800 + 128 * ctx) / 1e12; };
    // The kink is inside the range: memory-bound at the first step, compute-bound at the last.
    EXPECT_GT(12800 + 128 * 51.0, 256 * 51.0);   // 19,328 > 13,056
    EXPECT_LT(12800 + 128 * 200.0, 256 * 200.0);  // 38,400 < 51,200
    for (auto [ctx, bound] : {std::pair{51, Bound::memory}, std::pair{200, Bound::compute}})
        for (const RooflineRow& row : inference_roofline(c, ParallelConfig{}, ctx).rows)
            if (row.phase == "decode" && row.name == "attention") {
                EXPECT_EQ(row.bound, bound) << ctx;
            }

    // From first principles: every step is step(51) plus the growth of two attentions.
    const PassCost first = decode_step_cost(c, ParallelConfig{}, 51);
    double growth_s = 0;
    for (int ctx = 51; ctx <= 200; ++ctx) growth_s += 2 * (attention_s(ctx) - attention_s(51));
    // In closed form: 50 x 12,800 + 128 x (51 + ... + 100) + 256 x (101 + ... + 200) - 150 x 19,328
    // = 2,076,800 per layer.
    EXPECT_NEAR(growth_s, 2 * 2076800e-12, 1e-20);
    const PassCost sum = decode_sum(c, ParallelConfig{}, 51, 200);
    const double expected = 150 * first.total_s() + growth_s;
    EXPECT_NEAR(sum.total_s(), expected, 1e-9 * expected);
    EXPECT_NEAR(sum.compute_s, 150 * first.compute_s + growth_s, 1e-9 * expected);
    // FLOP and bytes grow by 256 and 128 per context token per layer: 0 + 1 + ... + 149 = 11,175.
    EXPECT_NEAR(sum.flop, 150 * first.flop + 2 * 256 * 11175.0, 1e-9 * sum.flop);
    EXPECT_NEAR(sum.hbm_bytes, 150 * first.hbm_bytes + 2 * 128 * 11175.0, 1e-9 * sum.hbm_bytes);

    // And step by step.
    double direct = 0;
    for (int64_t ctx = 51; ctx <= 200; ++ctx) direct += decode_step_cost(c, ParallelConfig{}, static_cast<double>(ctx)).total_s();
    EXPECT_NEAR(sum.total_s(), direct, 1e-9 * direct);
    // A sub-range on one side of the kink, and a single step.
    double left = 0;
    for (int64_t ctx = 60; ctx <= 99; ++ctx) left += decode_step_cost(c, ParallelConfig{}, static_cast<double>(ctx)).total_s();
    EXPECT_NEAR(decode_sum(c, ParallelConfig{}, 60, 99).total_s(), left, 1e-9 * left);
    EXPECT_DOUBLE_EQ(decode_sum(c, ParallelConfig{}, 77, 77).total_s(), decode_step_cost(c, ParallelConfig{}, 77).total_s());
    EXPECT_EQ(decode_sum(c, ParallelConfig{}, 78, 77).total_s(), 0.0);

    const InferResult r = evaluate_inference(c, ParallelConfig{});
    EXPECT_EQ(r.decode_steps, 150);
    EXPECT_NEAR(r.e2e_latency_s, r.ttft_s + expected, 1e-9 * expected);
    EXPECT_NEAR(r.tpot_s, expected / 150, 1e-9 * expected / 150);
    EXPECT_NEAR(r.decode_last.total_s() - r.decode_first.total_s(), 2 * (attention_s(200) - attention_s(51)), 1e-18);
}

TEST(Inference, DecodeMemoryBoundAtBatchOneComputeBoundLater) {
    const ModelSpec m = model_preset("llama2-7b");
    const SystemSpec sys = system_preset("dgx-h100");
    auto ffn_up = [&](int64_t batch) {
        const InferenceSpec s = workload(batch, 512, 128);
        const Roofline r = inference_roofline({m, sys, s}, ParallelConfig{}, 0);
        for (const RooflineRow& row : r.rows)
            if (row.phase == "decode" && row.name == "ffn_up") return row;
        ADD_FAILURE() << "no decode ffn_up row";
        return RooflineRow{};
    };
    const RooflineRow one = ffn_up(1);
    EXPECT_EQ(one.bound, Bound::memory);
    EXPECT_LT(one.intensity, 2.0);  // a matrix-vector product: ~1 FLOP per weight byte
    EXPECT_EQ(ffn_up(1024).bound, Bound::compute);
    // Whole decode step of a GQA model at a short context (so that the weight GEMMs, not the
    // cache reads, dominate): memory-bound at batch 1, compute-bound at a large batch.
    const ModelSpec gqa = model_preset("llama2-70b");
    auto split = [&](int64_t batch) {
        const InferenceSpec s = workload(batch, 64, 16);
        return phase_split(inference_roofline({gqa, sys, s}, ParallelConfig{}, 0), "decode").dominant();
    };
    EXPECT_EQ(split(1), Bound::memory);
    EXPECT_EQ(split(1024), Bound::compute);
    // Multi-head attention's cache reads stay memory-bound at any batch (~1 FLOP per byte).
    const InferenceSpec big = workload(1024, 512, 128);
    for (const RooflineRow& row : inference_roofline({m, sys, big}, ParallelConfig{}, 0).rows)
        if (row.phase == "decode" && row.name == "attention") {
            EXPECT_EQ(row.bound, Bound::memory);
        }
    // And the time per output token barely moves from batch 1 to 8 (weights dominate).
    const InferenceSpec s1 = workload(1, 128, 16), s8 = workload(8, 128, 16);
    const double t1 = evaluate_inference({m, sys, s1}, ParallelConfig{}).tpot_s;
    const double t8 = evaluate_inference({m, sys, s8}, ParallelConfig{}).tpot_s;
    EXPECT_LT(t8, 1.1 * t1);
}

TEST(Inference, TensorParallelDividesWeightBytesExactly) {
    const ModelSpec m = model_preset("llama2-7b");
    const SystemSpec sys = system_preset("dgx-h100");
    const InferenceSpec s = workload(1, 400, 200);
    // With tp = 1 the op list's matrices plus the norms are the published parameter count.
    EXPECT_DOUBLE_EQ(weight_params_per_gpu(m, ParallelConfig{}), count_params(m).total());
    // RMSNorm vectors (2 per layer + the final one) are replicated; every matrix is split.
    const double norms = (2.0 * 32 + 1) * 4096 * 2;
    const double w1 = evaluate_inference({m, sys, s}, ParallelConfig{}).memory.weights_bytes;
    for (int64_t tp : {2, 4, 8}) {
        ParallelConfig p;
        p.tp = tp;
        const double wt = evaluate_inference({m, sys, s}, p).memory.weights_bytes;
        EXPECT_DOUBLE_EQ(w1 - norms, static_cast<double>(tp) * (wt - norms)) << tp;
    }
}

TEST(Inference, TensorParallelAddsAllReducesPerLayer) {
    const ModelSpec m = model_preset("llama2-7b");
    const SystemSpec sys = system_preset("dgx-h100");
    const InferenceSpec s = workload(1, 400, 200);
    ParallelConfig p;
    EXPECT_EQ(decode_step_cost({m, sys, s}, p, 500).tp_comm_s, 0.0);
    p.tp = 8;
    const PassCost step = decode_step_cost({m, sys, s}, p, 500);
    // 2 per layer + the embedding's + the logits gather; each at least the per-call overhead.
    EXPECT_GE(step.tp_comm_s, (2.0 * 32 + 2) * sys.eff.host_collective_overhead_s);
    EXPECT_GT(step.tp_comm_s, 0.0);
}

TEST(Inference, PipelineLatencyIsTheSumOverStages) {
    const ModelSpec m = model_preset("llama2-13b");
    const SystemSpec sys = system_preset("dgx-a100-80gb");
    const InferenceSpec s = workload(4, 400, 50);
    ParallelConfig p1, p4;
    p4.pp = 4;
    const PassCost a = decode_step_cost({m, sys, s}, p1, 420);
    const PassCost b = decode_step_cost({m, sys, s}, p4, 420);
    // Same kernels in sequence; three hops between the four stages on top.
    EXPECT_DOUBLE_EQ(a.compute_s, b.compute_s);
    EXPECT_EQ(a.pp_comm_s, 0.0);
    EXPECT_GT(b.pp_comm_s, 0.0);
    EXPECT_NEAR(b.total_s(), a.total_s() + b.pp_comm_s, 1e-12);
    // Each GPU holds a quarter of the layers.
    const InferResult r1 = evaluate_inference({m, sys, s}, p1), r4 = evaluate_inference({m, sys, s}, p4);
    EXPECT_NEAR(r4.memory.kv_cache_bytes, r1.memory.kv_cache_bytes / 4.0, 1e-6);
    EXPECT_LT(r4.memory.weights_bytes, r1.memory.weights_bytes / 3.0);
}

TEST(Inference, WeightPrecisionSetsStreamedBytes) {
    const ModelSpec m = model_preset("llama2-7b");
    const SystemSpec sys = system_preset("dgx-a100-80gb");
    InferenceSpec s = workload(1, 400, 200);
    const InferResult fp16 = evaluate_inference({m, sys, s}, ParallelConfig{});
    s.weight_precision = Precision::int4;
    const InferResult int4 = evaluate_inference({m, sys, s}, ParallelConfig{});
    EXPECT_DOUBLE_EQ(int4.memory.weights_bytes, fp16.memory.weights_bytes / 4.0);
    // Decode streams the weights in their storage format: the GEMMs move a quarter of the
    // weight bytes, and decoding gets faster (how much depends on when a GEMV turns
    // compute-bound under the GEMM efficiency curve).
    const double params = weight_params_per_gpu(m, ParallelConfig{});
    const double embedding = 32000.0 * 4096;  // looked up, not streamed
    const double saved = (params - embedding) * (2.0 - 0.5) * 199.0;  // per decode step x steps
    EXPECT_NEAR(fp16.decode.hbm_bytes - int4.decode.hbm_bytes, saved, 1e-3 * saved);
    EXPECT_LT(int4.decode.compute_s, 0.8 * fp16.decode.compute_s);
}

TEST(Inference, LargestBatchThatFits) {
    const ModelSpec m = model_preset("llama2-70b");
    const SystemSpec sys = system_preset("dgx-h100");
    ParallelConfig p;
    p.tp = 2;
    const InferenceSpec s = workload(1, 2048, 2048);
    const int64_t b = max_batch_that_fits({m, sys, s}, p);
    ASSERT_GT(b, 0);
    EXPECT_LE(inference_memory({m, sys, s}, p, b).peak_bytes_per_gpu, sys.accel.memory_bytes);
    EXPECT_GT(inference_memory({m, sys, s}, p, b + 1).peak_bytes_per_gpu, sys.accel.memory_bytes);
    // 70B in fp16 on one 80 GiB GPU: the weights alone do not fit.
    EXPECT_EQ(max_batch_that_fits({m, sys, s}, ParallelConfig{}), 0);
    EXPECT_FALSE(evaluate_inference({m, sys, s}, ParallelConfig{}).fits_in_memory);
}

TEST(Inference, PrecisionTheAcceleratorLacksIsAnInputError) {
    auto doc = parse_scenario_text(
        R"({"model": {"preset": "llama2-7b"}, "system": {"preset": "dgx-a100-80gb"},
            "inference": {"batch": 1, "input_len": 8, "output_len": 8, "precision": "fp8"}})",
        "test");
    ASSERT_TRUE(doc.ok());
    auto s = build_scenario(doc.value(), Purpose::infer);
    ASSERT_FALSE(s.ok());
    EXPECT_EQ(s.error().path, "inference.precision");
    // Weight-only int4 with fp16 math is fine on an A100.
    auto ok = parse_scenario_text(
        R"({"model": {"preset": "llama2-7b"}, "system": {"preset": "dgx-a100-80gb"},
            "inference": {"precision": "fp16", "weight_precision": "int4"}})",
        "test");
    ASSERT_TRUE(ok.ok());
    EXPECT_TRUE(build_scenario(ok.value(), Purpose::infer).ok());
}

TEST(Inference, SingleOutputTokenIsPrefillOnly) {
    const ModelSpec m = tiny();
    const SystemSpec sys = system_preset("dgx-h100");
    const InferenceSpec s = workload(2, 16, 1);
    const InferResult r = evaluate_inference({m, sys, s}, ParallelConfig{});
    EXPECT_EQ(r.decode_steps, 0);
    EXPECT_EQ(r.tpot_s, 0.0);
    EXPECT_DOUBLE_EQ(r.e2e_latency_s, r.ttft_s);
    EXPECT_TRUE(std::isfinite(r.output_tokens_per_s));
}

// The seed paper's validation: NeMo Llama-2 7B/13B/70B end-to-end latency on DGX A100 and H100.
TEST(Inference, SeedPaperLatenciesWithinTenPercent) {
    const ValidationReport rep = run_builtin_validation();
    std::vector<ValidationCase> imec;
    for (const auto& c : rep.cases)
        if (c.id.rfind("imec-", 0) == 0) imec.push_back(c);
    for (const auto& s : rep.skipped) EXPECT_NE(s.rfind("imec-", 0), 0u) << "skipped: " << s;
    ASSERT_EQ(imec.size(), 22u);
    for (const auto& c : imec) EXPECT_EQ(c.metric, "e2e_latency_s");
    const ValidationSummary sum = summarize(imec);
    EXPECT_LE(sum.mean_abs_error, 0.10) << "worst " << sum.worst_id;
}

}  // namespace
}  // namespace sm
