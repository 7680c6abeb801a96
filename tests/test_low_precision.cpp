// Low-precision math: 16/8/4-bit GEMM efficiencies, the scaling recipes' cast traffic, the
// sustained clock, and the output layer kept in bf16. Expectations are computed by hand.
#include <gtest/gtest.h>

#include <random>
#include <string_view>
#include <utility>
#include <vector>

#include "hardware/cost.hpp"
#include "test_helpers.hpp"

namespace sm {
namespace {

// A GEMM entering a weight: X[m,k] x W[k,n], m = 1024, k = 4096, n = 8192.
const GemmShape kG{1024, 8192, 4096, 1};
constexpr double kX = 1024.0 * 4096;  // input elements
constexpr double kGrad = 1024.0 * 8192;  // output-gradient elements

CostContext low(Precision p, Fp8Recipe r = Fp8Recipe::delayed) {
    CostContext c;
    c.math = p;
    c.act_bytes = 2;
    c.operand_bytes = c.weight_bytes = bytes_per_element(p);
    c.fp8_recipe = r;
    return c;
}

Op weight_gemm(const GemmShape& g) {
    Op op;
    op.kind = OpKind::gemm;
    op.weight = true;
    op.gemm = g;
    return op;
}

TEST(Quantisation, DelayedScalingIsOneCastPass) {
    // Forward: read X in bf16 (2 B), write X in fp8 (1 B). Backward: read G (2 B), write G and
    // its transpose (2 x 1 B); write the transposed X (1 B).
    EXPECT_DOUBLE_EQ(cast_bytes_fwd(kG, low(Precision::fp8)), kX * 3);           // 12,582,912
    EXPECT_DOUBLE_EQ(cast_bytes_bwd(kG, low(Precision::fp8)), kGrad * 4 + kX);   // 37,748,736
}

TEST(Quantisation, CurrentScalingReadsEachInputOnceMore) {
    // The amax reduction reads X (forward) and G (backward) in bf16 before the cast.
    EXPECT_DOUBLE_EQ(cast_bytes_fwd(kG, low(Precision::fp8, Fp8Recipe::current)), 20971520.0);  // 4,194,304 x 5
    EXPECT_DOUBLE_EQ(cast_bytes_bwd(kG, low(Precision::fp8, Fp8Recipe::current)), 54525952.0);  // + 8,388,608 x 2
}

TEST(Quantisation, Mxfp8WritesOneScaleBytePer32Elements) {
    EXPECT_DOUBLE_EQ(cast_bytes_fwd(kG, low(Precision::fp8, Fp8Recipe::mxfp8)), 12713984.0);  // 4,194,304 x 3.03125
    // G: 2 + 2 x 1.03125 = 4.0625 B per element; X transposed: 1.03125.
    EXPECT_DOUBLE_EQ(cast_bytes_bwd(kG, low(Precision::fp8, Fp8Recipe::mxfp8)), 34078720.0 + 4325376.0);
}

TEST(Quantisation, Nvfp4IsHalfBytesPlusE4m3ScalesPer16AndAnAmaxPass) {
    // Forward: read 2 + write 0.5 + scales 1/16, plus the amax read of 2: 4.5625 B per element.
    EXPECT_DOUBLE_EQ(cast_bytes_fwd(kG, low(Precision::fp4)), 19136512.0);
    // Backward: G 2 + 2 x 0.5625 + amax 2 = 5.125 B; X transposed 0.5625 B.
    EXPECT_DOUBLE_EQ(cast_bytes_bwd(kG, low(Precision::fp4)), 42991616.0 + 2359296.0);
    // The recipe field is for 8-bit operands only: NVFP4 whatever it says.
    EXPECT_DOUBLE_EQ(cast_bytes_fwd(kG, low(Precision::fp4, Fp8Recipe::mxfp8)), 19136512.0);
}

TEST(Quantisation, CurrentScalingCostsAnExtraKernelAndItsTraffic) {
    SystemSpec sys = testing::round_system();
    sys.eff.kernel_latency_s = 1e-6;
    const Op op = weight_gemm(kG);
    const OpCost d = cost_op(op, sys, low(Precision::fp8));
    const OpCost c = cost_op(op, sys, low(Precision::fp8, Fp8Recipe::current));
    // 1 TB/s at full efficiency: the amax pass reads 8,388,608 B forward (+ one kernel).
    EXPECT_NEAR(c.fwd_s - d.fwd_s, 8388608.0 / 1e12 + 1e-6, 1e-15);
    EXPECT_NEAR(c.dgrad_s - d.dgrad_s, 16777216.0 / 1e12 + 1e-6, 1e-15);
}

// A serving engine's fused quantisation (inference.activation_quantisation fused): the producer
// writes X quantised with calibrated scales, so the forward cast is only that write (NVFP4: 0.5 B
// + 1/16 B of scales per element, no read, no amax pass; fp8 under any recipe: 1 B) and no kernel
// of its own. kG: 4,194,304 input elements; round_system's 1 TB/s at full efficiency.
TEST(Quantisation, ACastInItsProducerIsTheQuantisedWriteAlone) {
    CostContext fused = low(Precision::fp4);
    fused.cast_in_producer = true;
    EXPECT_DOUBLE_EQ(cast_bytes_fwd(kG, fused), kX * 0.5625);  // 2,359,296
    CostContext fp8 = low(Precision::fp8, Fp8Recipe::current);
    fp8.cast_in_producer = true;
    EXPECT_DOUBLE_EQ(cast_bytes_fwd(kG, fp8), kX * 1.0);
    SystemSpec sys = testing::round_system();
    sys.eff.kernel_latency_s = 1e-6;
    const Op op = weight_gemm(kG);
    const OpCost separate = cost_op(op, sys, low(Precision::fp4)), in_producer = cost_op(op, sys, fused);
    // Separate: 19,136,512 B and two kernels (amax, cast); fused: 2,359,296 B and none.
    EXPECT_NEAR(separate.fwd_s - in_producer.fwd_s, (19136512.0 - 2359296.0) / 1e12 + 2e-6, 1e-15);
    EXPECT_DOUBLE_EQ(separate.fwd_bytes - in_producer.fwd_bytes, 19136512.0 - 2359296.0);
}

// Transformer Engine casts a sequence-parallel shard to fp8 before all-gathering it: a
// column-parallel GEMM at tp 4 casts a quarter of its input rows (3 B per element of X: 12,582,912
// B in full, 3,145,728 B for the quarter); its backward casts are unchanged.
TEST(Quantisation, ASequenceParallelShardIsCastBeforeItIsGathered) {
    const SystemSpec sys = testing::round_system();
    const Op whole = weight_gemm(kG);
    Op shard = whole;
    shard.cast_rows_share = 0.25;
    const OpCost w = cost_op(whole, sys, low(Precision::fp8)), q = cost_op(shard, sys, low(Precision::fp8));
    EXPECT_DOUBLE_EQ(w.fwd_bytes - q.fwd_bytes, 12582912.0 - 3145728.0);
    EXPECT_DOUBLE_EQ(w.dgrad_bytes, q.dgrad_bytes);
    // The op list marks the column-parallel GEMMs behind a sequence-parallel gather, and only them.
    const ModelSpec m = testing::tiny_llama(2);
    LayerShape s;
    s.q_len = s.kv_len = 128;
    s.tp = 4;
    s.sequence_parallel = true;
    for (const Op& op : layer_ops(m, s, LayerKind::dense).ops)
        if (op.kind == OpKind::gemm)
            EXPECT_DOUBLE_EQ(op.cast_rows_share, op.name == "qkv_proj" || op.name == "ffn_up" ? 0.25 : 1.0) << op.name;
    s.sequence_parallel = false;
    for (const Op& op : layer_ops(m, s, LayerKind::dense).ops) EXPECT_DOUBLE_EQ(op.cast_rows_share, 1.0) << op.name;
}

// ... and gathers it in fp8 (TransformerEngine issue #1579: tensor-parallel all-gathers in FP8,
// reduce-scatters in BF16). tiny_llama, 128 tokens of 64 at tp 2: each gather feeding the QKV or
// the FFN up projection moves 128 x 64 x 1 B forward and again to rebuild the input for the
// weight gradient; the gradient's reduce-scatter 2 B per element. An MoE block routes each rank's
// own tokens and gathers none (its dispatcher's collectives are bf16); with a shared expert it
// gathers them for that expert's up projection alone, quantised. Training at fp8 sets 1 B; bf16
// 2 B; NVFP4 0.5 B.
TEST(Quantisation, SequenceParallelInputsAreGatheredQuantised) {
    LayerShape s;
    s.q_len = s.kv_len = 128;
    s.tp = 2;
    s.sequence_parallel = true;
    s.gather_bytes = 1;
    auto bytes = [](const LayerOps& l, std::string_view name) {
        std::vector<double> b;
        for (const CommOp& c : l.comms)
            if (c.name == name) b.push_back(c.bytes);
        return b;
    };
    const LayerOps dense = layer_ops(testing::tiny_llama(2), s, LayerKind::dense);
    EXPECT_EQ(bytes(dense, "sp_all_gather"), (std::vector<double>{8192, 8192}));
    EXPECT_EQ(bytes(dense, "sp_regather_input"), (std::vector<double>{8192, 8192}));
    EXPECT_EQ(bytes(dense, "sp_reduce_scatter_grad"), (std::vector<double>{16384, 16384}));
    EXPECT_EQ(bytes(layer_ops(testing::tiny_moe(), s, LayerKind::moe), "sp_all_gather"), (std::vector<double>{8192}));
    ModelSpec shared = testing::tiny_moe();
    shared.moe.shared_experts = 1;
    shared.moe.shared_expert_ffn_hidden = 128;
    EXPECT_EQ(bytes(layer_ops(shared, s, LayerKind::moe), "sp_all_gather"), (std::vector<double>{8192, 8192}));
    s.gather_bytes = 0;
    EXPECT_EQ(bytes(layer_ops(testing::tiny_llama(2), s, LayerKind::dense), "sp_all_gather"), (std::vector<double>{16384, 16384}));
    const ModelSpec m = testing::tiny_llama(2);
    ParallelConfig p;
    TrainingSpec t;
    for (const auto& [precision, want] : std::vector<std::pair<Precision, double>>{
             {Precision::fp8, 1.0}, {Precision::bf16, 2.0}, {Precision::fp4, 0.5}}) {
        t.precision = precision;
        EXPECT_DOUBLE_EQ(training_shape(m, p, t).gather_bytes, want) << to_string(precision);
    }
}

TEST(LowPrecisionGemm, EachWidthHasItsOwnAsymptote) {
    Efficiency e;
    e.gemm_max = 0.9;
    e.gemm_max_8bit = 0.8;
    e.gemm_max_4bit = 0.7;
    e.gemm_half_dim = 1024;
    e.gemm_half_tokens = 8;
    // m = 8192, n = k = 1024: 8192/8200 x 1/2 x 1/2 = 0.24975609...
    const GemmShape g{8192, 1024, 1024, 1};
    const double u = 8192.0 / 8200.0 * 0.25;
    EXPECT_DOUBLE_EQ(gemm_efficiency(g, e, 2), 0.9 * u);
    EXPECT_DOUBLE_EQ(gemm_efficiency(g, e, 1), 0.8 * u);
    EXPECT_DOUBLE_EQ(gemm_efficiency(g, e, 0.5), 0.7 * u);
    EXPECT_DOUBLE_EQ(gemm_efficiency(g, e, 4), 0.9 * u);  // tf32/fp32 operands: the 16-bit curve
}

TEST(LowPrecisionGemm, PresetWithout4bitValueTakesThe8bitOne) {
    Json j = system_preset_json("dgx-h100").value();
    j["efficiency"].erase("gemm_max_4bit");
    j["efficiency"]["gemm_max_8bit"] = 0.77;
    const auto s = parse_system(j, "x");
    ASSERT_TRUE(s.ok());
    EXPECT_DOUBLE_EQ(s->eff.gemm_max_4bit, 0.77);
    EXPECT_DOUBLE_EQ(s->eff.clock_fraction, 1.0);
}

TEST(ClockFraction, ScalesEveryPeak) {
    SystemSpec sys = testing::round_system();
    const Op op = weight_gemm({65536, 65536, 65536, 1});  // compute-bound on the round machine
    const double t1 = cost_op(op, sys, CostContext{}).fwd_s;
    EXPECT_DOUBLE_EQ(t1, 2.0 * 65536.0 * 65536 * 65536 / 1e15);
    sys.eff.clock_fraction = 0.8;
    EXPECT_DOUBLE_EQ(cost_op(op, sys, CostContext{}).fwd_s, t1 / 0.8);
    EXPECT_DOUBLE_EQ(sustained_matrix_peak(sys, Precision::bf16), 0.8e15);
    // Vector math too: an element-wise op with no memory traffic.
    Op v;
    v.kind = OpKind::elementwise;
    v.vector_flop = 1e12;
    EXPECT_DOUBLE_EQ(cost_op(v, sys, CostContext{}).fwd_s, 1e12 / 0.8e15);
}

TEST(OutputLayer, StaysInBf16UnderFp8Training) {
    SystemSpec sys = testing::system_preset("dgx-h100");
    Op head = weight_gemm({8192, 16032, 8192, 1});
    head.keep_activation_precision = true;
    Op plain = head;
    plain.keep_activation_precision = false;
    CostContext bf16;  // the default: bf16 math, 2-byte operands
    const OpCost kept = cost_op(head, sys, low(Precision::fp8));
    const OpCost as_bf16 = cost_op(plain, sys, bf16);
    EXPECT_DOUBLE_EQ(kept.fwd_s, as_bf16.fwd_s);
    EXPECT_DOUBLE_EQ(kept.bwd_s, as_bf16.bwd_s);
    EXPECT_DOUBLE_EQ(kept.peak_flop_per_s, 989.4e12);
    EXPECT_LT(cost_op(plain, sys, low(Precision::fp8)).fwd_s, kept.fwd_s);  // fp8 would be faster
    // The training op list marks the head, and only the head.
    const ModelSpec m = testing::model_preset("llama3-8b");
    LayerShape s;
    s.q_len = s.kv_len = 8192;
    for (const Op& op : head_ops(m, s, true).ops) EXPECT_EQ(op.keep_activation_precision, op.name == "lm_head") << op.name;
    for (const Op& op : layer_ops(m, s, LayerKind::dense).ops) EXPECT_FALSE(op.keep_activation_precision) << op.name;
    for (const Op& op : head_ops(m, s, false).ops) EXPECT_FALSE(op.keep_activation_precision) << op.name;  // serving
}

// Under TF32 training the activations are fp32 and the GEMMs TF32 already: the output layer keeps
// TF32 math (A100: 156 TFLOP/s), not the 19.5 TFLOP/s of plain fp32 that its 4-byte
// activations would name.
TEST(OutputLayer, KeepsTf32WhenOperandsAreActivationWidth) {
    const SystemSpec sys = testing::system_preset("dgx-a100-80gb");
    Op head = weight_gemm({8192, 16032, 8192, 1});
    head.keep_activation_precision = true;
    CostContext tf32;
    tf32.math = Precision::tf32;
    tf32.act_bytes = tf32.operand_bytes = tf32.weight_bytes = tf32.kv_bytes = 4;
    EXPECT_DOUBLE_EQ(cost_op(head, sys, tf32).peak_flop_per_s, 156e12 * sys.eff.clock_fraction);
}

// With fp32 activations and 16-bit operands the output layer runs in fp32 (A100: the 19.5
// TFLOP/s of its CUDA cores), its operands and weights 4 bytes.
TEST(OutputLayer, Fp32ActivationsKeepFp32Math) {
    const SystemSpec sys = testing::system_preset("dgx-a100-80gb");
    Op head = weight_gemm({8192, 16032, 8192, 1});
    head.keep_activation_precision = true;
    CostContext mixed;
    mixed.act_bytes = 4;  // bf16 math and operands (the default) beside fp32 activations
    EXPECT_DOUBLE_EQ(cost_op(head, sys, mixed).peak_flop_per_s, 19.5e12 * sys.eff.clock_fraction);
}

TEST(Fp8Recipe, ScenarioFieldReachesTheCostsAndRejectsUnknownRecipes) {
    const std::string base = R"({"model": {"preset": "llama3-8b"}, "system": {"preset": "dgx-h100"},
        "parallel": {"dp": 8}, "training": {"global_batch": 8, "precision": "fp8")";
    const Scenario d = testing::scenario(base + "}}");
    const Scenario c = testing::scenario(base + R"(, "fp8_recipe": "current"}})");
    EXPECT_EQ(d.training.fp8_recipe, Fp8Recipe::delayed);
    EXPECT_EQ(training_cost_context(c.training).fp8_recipe, Fp8Recipe::current);
    EXPECT_GT(evaluate_training({c.model, c.system, c.training}, c.parallel).step_time_s,
              evaluate_training({d.model, d.system, d.training}, d.parallel).step_time_s);
    auto doc = parse_scenario_text(base + R"(, "fp8_recipe": "mx"}})", "t");
    ASSERT_TRUE(doc.ok());
    const auto bad = build_scenario(doc.value(), Purpose::train);
    ASSERT_FALSE(bad.ok());
    EXPECT_NE(bad.error().message().find("training.fp8_recipe"), std::string::npos) << bad.error().message();
}

// Properties over random compute-bound GEMMs on a Blackwell node at equal efficiency for every
// width: fewer bits never slower (casts included), a faster clock never slower.
TEST(LowPrecisionProperties, NarrowerIsNeverSlowerAndFasterClockNeverSlower) {
    SystemSpec sys = testing::system_preset("dgx-b200");
    sys.eff.gemm_max_8bit = sys.eff.gemm_max_4bit = sys.eff.gemm_max;
    std::mt19937_64 rng(8);
    std::uniform_int_distribution<int> dim(4096, 32768);
    for (int i = 0; i < 200; ++i) {
        const Op op = weight_gemm({static_cast<double>(dim(rng)), static_cast<double>(dim(rng)), static_cast<double>(dim(rng)), 1});
        auto total = [&](const CostContext& c, const SystemSpec& s) {
            const OpCost o = cost_op(op, s, c);
            return o.fwd_s + o.bwd_s;
        };
        const double b = total(CostContext{}, sys), f8 = total(low(Precision::fp8), sys), f4 = total(low(Precision::fp4), sys);
        EXPECT_LE(f8, b) << i;
        EXPECT_LE(f4, f8) << i;
        EXPECT_LE(total(low(Precision::fp8, Fp8Recipe::current), sys), b) << i;
        SystemSpec slow = sys;
        slow.eff.clock_fraction = sys.eff.clock_fraction * std::uniform_real_distribution<double>(0.5, 0.99)(rng);
        for (const CostContext& c : {CostContext{}, low(Precision::fp8), low(Precision::fp4)})
            EXPECT_GE(total(c, slow), total(c, sys)) << i;
    }
}

}  // namespace
}  // namespace sm
