// The training step: FLOP accounting, schedule, memory and the published-run thresholds.
#include <gtest/gtest.h>

#include <cmath>

#include "io/validation.hpp"
#include "test_helpers.hpp"
#include "training/step.hpp"

namespace sm {
namespace {

using testing::scenario;

const char* kGpt3 = R"({"model": {"preset": "gpt3-175b"}, "system": {"preset": "dgx-a100-80gb"},
    "parallel": {"tp": 8, "pp": 8, "dp": 4, "vp": 1, "sequence_parallel": true, "recompute": "selective"},
    "training": {"global_batch": 256, "precision": "bf16"}})";

TrainResult run(const Scenario& s) { return evaluate_training({s.model, s.system, s.training}, s.parallel); }

Scenario with(const std::string& json, const std::vector<std::string>& sets) {
    auto doc = apply_overrides(parse_scenario_text(json, "test").value(), sets);
    auto s = build_scenario(doc.value(), Purpose::train);
    EXPECT_TRUE(s.ok()) << (s.ok() ? "" : s.error().message());
    return s.value();
}

TEST(Training, ModelFlopMatchesMegatronFormula) {
    // Narayanan et al. 2021, eq. 3 without recompute: 72 B s l h^2 (1 + s/6h + V/12lh).
    const Scenario s = scenario(kGpt3);
    const double B = 256, sq = 2048, l = 96, h = 12288, V = 51200;
    const double expected = 72 * B * sq * l * h * h * (1 + sq / (6 * h) + V / (12 * l * h));
    EXPECT_NEAR(run(s).model_flop_per_step / expected, 1.0, 1e-12);
    // The layout does not change the model's FLOP: tp 4 x cp 2 x pp 4 x dp 8, 2 sequences per micro-batch.
    const Scenario other = with(kGpt3, {"parallel.tp=4", "parallel.cp=2", "parallel.pp=4", "parallel.dp=8", "parallel.microbatch=2"});
    EXPECT_NEAR(run(other).model_flop_per_step / expected, 1.0, 1e-12);
}

// Hardware FLOP over model FLOP (HFU / MFU) is 1 + recomputed / model FLOP. Recompute re-runs
// executed forward FLOP, causal attention at half the s x s scores: per sequence and layer, full
// recompute re-runs 24 s h^2 + 2 s^2 h, selective only the attention core's 2 s^2 h. Model FLOP
// per step: Narayanan et al. eq. 3 (the test above). Throughput: 256 x 2048 tokens per step.
TEST(Training, HardwareFlopCountsTheRecomputedForward) {
    const double B = 256, sq = 2048, l = 96, h = 12288, V = 51200;
    const double model = 72 * B * sq * l * h * h * (1 + sq / (6 * h) + V / (12 * l * h));
    const double rerun[3] = {0, B * l * 2 * sq * sq * h, B * l * (24 * sq * h * h + 2 * sq * sq * h)};
    const char* modes[3] = {"none", "selective", "full"};
    for (int i = 0; i < 3; ++i) {
        const TrainResult r = run(with(kGpt3, {std::string("parallel.recompute=") + modes[i], "parallel.zero=1"}));
        EXPECT_NEAR(r.hfu / r.mfu, 1 + rerun[i] / model, 1e-12) << modes[i];
        EXPECT_NEAR(r.tokens_per_s, B * sq / r.step_time_s, 1e-9 * r.tokens_per_s);
        EXPECT_NEAR(r.tokens_per_s_per_gpu, r.tokens_per_s / 256, 1e-9 * r.tokens_per_s);
        // A100 bf16 peak 312 TFLOP/s on 256 GPUs.
        EXPECT_NEAR(r.mfu, model / (312e12 * 256 * r.step_time_s), 1e-9) << modes[i];
        EXPECT_GT(r.mfu, 0.3);
        EXPECT_LT(r.mfu, 0.6);
    }
}

TEST(Training, BubbleIsPipelineDepthOverInterleaving) {
    for (int vp : {1, 2, 4}) {
        const TrainResult r = run(with(kGpt3, {"parallel.vp=" + std::to_string(vp)}));
        const TrainBreakdown& b = r.breakdown;
        const double per_mb = (b.compute_s + b.recompute_s + b.tp_comm_exposed_s + b.cp_comm_exposed_s + b.ep_comm_exposed_s) /
                              static_cast<double>(r.microbatches);
        EXPECT_NEAR(b.bubble_s, 7.0 / vp * per_mb, 1e-9) << vp;
    }
    EXPECT_EQ(run(with(kGpt3, {"parallel.pp=1", "parallel.dp=32"})).breakdown.bubble_s, 0.0);
}

TEST(Training, MicrobatchCount) {
    EXPECT_EQ(run(scenario(kGpt3)).microbatches, 64);  // 256 / (dp 4 x micro-batch 1)
    EXPECT_EQ(run(with(kGpt3, {"parallel.microbatch=2"})).microbatches, 32);
}

TEST(Training, ZeroShardsStatesOverDataParallelRanks) {
    const TrainResult z0 = run(with(kGpt3, {"parallel.zero=0"}));
    const TrainResult z1 = run(with(kGpt3, {"parallel.zero=1"}));
    const TrainResult z2 = run(with(kGpt3, {"parallel.zero=2"}));
    const TrainResult z3 = run(with(kGpt3, {"parallel.zero=3"}));
    EXPECT_DOUBLE_EQ(z1.memory.optimizer_bytes, z0.memory.optimizer_bytes / 4);
    EXPECT_DOUBLE_EQ(z1.memory.gradients_bytes, z0.memory.gradients_bytes);
    // ZeRO 2 on pp 8: Megatron accumulates the stage's fp32 gradients and reduce-scatters once
    // per step, so the buffer is whole; DeepSpeed's per-micro-batch reduction partitions it.
    EXPECT_DOUBLE_EQ(z2.memory.gradients_bytes, z0.memory.gradients_bytes);
    EXPECT_DOUBLE_EQ(run(with(kGpt3, {"parallel.zero=2", "training.grad_reduce=per_microbatch"})).memory.gradients_bytes,
                     z0.memory.gradients_bytes / 4);
    EXPECT_DOUBLE_EQ(z2.memory.weights_bytes, z0.memory.weights_bytes);
    EXPECT_DOUBLE_EQ(z3.memory.weights_bytes, z0.memory.weights_bytes / 4);
    // Mixed-precision Adam: 2 (bf16 weights) + 4 (fp32 main grads) + 12 (master + 2 moments).
    EXPECT_DOUBLE_EQ(z0.memory.optimizer_bytes / z0.memory.weights_bytes, 6.0);
    EXPECT_DOUBLE_EQ(z0.memory.gradients_bytes / z0.memory.weights_bytes, 2.0);
    EXPECT_GT(z3.link.dp_s, z1.link.dp_s);  // ZeRO-3 gathers weights every micro-batch
}

TEST(Training, WeightsPerGpuForGpt3OnTp8Pp8) {
    // First stage: 12 of 96 layers and the embedding, each split 8 ways, in bf16.
    const TrainResult r = run(with(kGpt3, {"parallel.zero=0"}));
    const double h = 12288;
    const double layer = 12 * h * h + 13 * h;
    const double first = (12 * layer + (51200 + 2048) * h) / 8;
    const double last = (12 * layer + 51200 * h) / 8 + 2 * h;  // tied: a copy of the embedding
    EXPECT_NEAR(r.memory.weights_bytes, 2 * std::max(first, last), 1.0);
}

TEST(Training, RecomputeOrdersActivationMemory) {
    const double none = run(with(kGpt3, {"parallel.recompute=none"})).memory.activations_bytes;
    const double sel = run(with(kGpt3, {"parallel.recompute=selective"})).memory.activations_bytes;
    const double full = run(with(kGpt3, {"parallel.recompute=full"})).memory.activations_bytes;
    EXPECT_LT(full, sel);
    EXPECT_LT(sel, none);
    const double t_none = run(with(kGpt3, {"parallel.recompute=none"})).step_time_s;
    const double t_full = run(with(kGpt3, {"parallel.recompute=full"})).step_time_s;
    EXPECT_GT(t_full, t_none);
}

TEST(Training, FirstStageHoldsPipelineDepthMicrobatches) {
    // With 1F1B, stage 1 keeps pp micro-batches of its L/pp layers: L layers' worth, whatever pp.
    const Scenario s2 = with(kGpt3, {"parallel.pp=2", "parallel.dp=16"});
    const Scenario s8 = with(kGpt3, {"parallel.pp=8", "parallel.dp=4"});
    const LayerCosts c2 = cost_layers({s2.model, s2.system, s2.training}, s2.parallel);
    const double per_layer = c2.layer[0].activation_bytes(Recompute::selective);
    const double a2 = run(s2).memory.activations_bytes;
    const double a8 = run(s8).memory.activations_bytes;
    EXPECT_NEAR(a2, a8, 0.01 * a2);
    EXPECT_GT(a2, 96 * per_layer);
}

TEST(Training, MemoryCapacityDecidesFit) {
    EXPECT_TRUE(run(scenario(kGpt3)).fits_in_memory);
    const TrainResult one = run(with(kGpt3, {"parallel.tp=1", "parallel.pp=1", "parallel.dp=1", "parallel.vp=1",
                                             "training.global_batch=1"}));
    EXPECT_FALSE(one.fits_in_memory);
    EXPECT_GT(one.memory.peak_bytes_per_gpu, 175e9 * 18);
}

TEST(Training, FasterNetworkNeverSlower) {
    const TrainResult base = run(scenario(kGpt3));
    const TrainResult fast = run(with(kGpt3, {"system.scale_out.bw_bytes_per_s=50e9", "system.scale_up.bw_bytes_per_s=600e9"}));
    EXPECT_LT(fast.step_time_s, base.step_time_s);
    const TrainResult hbm = run(with(kGpt3, {"system.accelerator.memory_bw_bytes_per_s=4e12"}));
    EXPECT_LT(hbm.step_time_s, base.step_time_s);
}

TEST(Training, UnfusedAttentionCostsItsScoresButStaysSane) {
    // Materialising the softmax adds s^2 traffic and runs the score/value products as batched
    // GEMMs; at s = 2048 that is a few percent of GPT-3's step, not a multiple of it.
    const double fused = run(scenario(kGpt3)).step_time_s;
    const double unfused = run(with(kGpt3, {"model.attention=unfused"})).step_time_s;
    EXPECT_GT(unfused, fused);
    EXPECT_LT(unfused, 1.15 * fused);
    // And it keeps 5 a s^2 b bytes per layer more activations without recompute.
    const double a_fused = run(with(kGpt3, {"parallel.recompute=none"})).memory.activations_bytes;
    const double a_unfused = run(with(kGpt3, {"parallel.recompute=none", "model.attention=unfused"})).memory.activations_bytes;
    EXPECT_GT(a_unfused, a_fused);
}

// The published-run thresholds of the training model (issue 2). Korthikanti et al. 2022 Table 5:
// the eight selective/full rows; Calculon reaches 3.65% mean, 8.87% worst.
TEST(Validation, KorthikantiTable5) {
    const ValidationReport rep = run_builtin_validation();
    std::vector<ValidationCase> rows;
    for (const auto& c : rep.cases)
        if (c.id.rfind("korthikanti-", 0) == 0 && c.id != "korthikanti-530b-dp8") rows.push_back(c);
    ASSERT_EQ(rows.size(), 8u);
    const ValidationSummary s = summarize(rows);
    EXPECT_LE(s.mean_abs_error, 0.05);
    EXPECT_LE(s.max_abs_error, 0.10) << s.worst_id;
}

TEST(Validation, VTrainMeasuredRuns) {
    const ValidationReport rep = run_builtin_validation();
    std::vector<ValidationCase> rows;
    for (const auto& c : rep.cases)
        if (c.dataset == "training_vtrain") rows.push_back(c);
    ASSERT_EQ(rows.size(), 109u);
    EXPECT_LE(summarize(rows).mean_abs_error, 0.12);
}

TEST(Validation, DatasetContextAppliesToEveryRowBeforeTheUsersSets) {
    const std::string csv =
        "id,model,layers,hidden,heads,kv_heads,ffn_hidden,ffn_act,vocab,seq_len,system,tp,pp,dp,cp,ep,vp,mbs,gbs,"
        "sequence_parallel,zero,recompute,precision,measured_step_time_s\n"
        "r1,gpt-x,24,2048,16,16,8192,gelu,51200,2048,dgx-a100-80gb,1,1,16,1,1,1,1,64,false,0,none,fp16,1.0\n";
    const auto plain = run_validation("set", csv, std::nullopt);
    const auto slow_net = run_validation("set", csv, R"({"overrides": ["system.scale_out.bw_bytes_per_s=1e9"], "reason": "r"})");
    ASSERT_TRUE(plain.ok() && slow_net.ok());
    ASSERT_EQ(slow_net->contexts.size(), 1u);
    EXPECT_GT(slow_net->cases.at(0).predicted, plain->cases.at(0).predicted);
    // The user's --set comes last and wins.
    const auto user = run_validation("set", csv, R"({"overrides": ["system.scale_out.bw_bytes_per_s=1e9"], "reason": "r"})",
                                     {"system.scale_out.bw_bytes_per_s=25e9"});
    EXPECT_DOUBLE_EQ(user->cases.at(0).predicted, plain->cases.at(0).predicted);
    const auto bad = run_validation("set", csv, R"({"overides": [], "reason": "r"})");
    ASSERT_FALSE(bad.ok());
    EXPECT_NE(bad.error().message().find("did you mean"), std::string::npos);
}

TEST(Validation, EveryTrainingRowEvaluatesFinitely) {
    const ValidationReport rep = run_builtin_validation();
    size_t training = 0;
    for (const auto& c : rep.cases) {
        EXPECT_TRUE(std::isfinite(c.predicted) && c.predicted > 0) << c.id;
        training += c.metric == "step_time_s" ? 1 : 0;
    }
    // training.csv, vTrain, and the rows of training_nvidia_2025 whose inputs were published and
    // whose model the tool can express (the rest are skipped with their reason, checked in
    // test_validation_thresholds.cpp).
    EXPECT_EQ(training, 26u + 109u + 206u);
    // The TensorRT-LLM set skips the rows its notes put beyond the model, training_nvidia_2025
    // those with unpublished inputs (test_validation_thresholds).
    for (const auto& s : rep.skipped)
        if (s.rfind("trtllm-", 0) != 0 && s.rfind("dgxc-", 0) != 0 && s.rfind("nemo", 0) != 0) ADD_FAILURE() << "skipped: " << s;
}

}  // namespace
}  // namespace sm
