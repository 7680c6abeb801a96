// The layout rules (src/layout/rules.hpp): every rule a layout breaks, each with its field, the
// value given and the requirement; the first is what reading a scenario reports.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "layout/rules.hpp"
#include "test_helpers.hpp"

namespace sm {
namespace {

using testing::round_system;
using testing::tiny_gpt;
using testing::tiny_moe;

std::vector<std::string> paths(const std::vector<InputError>& v) {
    std::vector<std::string> out;
    for (const InputError& e : v) out.push_back(e.path);
    return out;
}

TEST(LayoutRules, AValidLayoutBreaksNone) {
    ParallelConfig p;
    p.tp = 4;
    p.pp = 2;
    p.dp = 2;
    EXPECT_TRUE(check_layout(tiny_gpt(), round_system(), testing::batch_of(8), p).empty());
    EXPECT_TRUE(check_layout(tiny_gpt(), testing::round_inference_system(), testing::fp16_workload(1, 16, 4), p).empty());
}

TEST(LayoutRules, TrainingReportsEveryIndependentRuleInOrder) {
    // tiny_gpt: 8 layers, 4 heads, 128 tokens; no experts.
    ParallelConfig p;
    p.tp = 3;  // divides neither the 4 heads nor the widths
    p.vp = 2;  // interleaving without a pipeline
    p.cp = 3;  // does not divide 128 tokens
    p.dp = 4;  // 10 sequences do not split over 4 replicas
    p.ep = 2;  // experts of a dense model
    const std::vector<InputError> v = check_layout(tiny_gpt(), round_system(), testing::batch_of(10), p);
    ASSERT_EQ(paths(v), (std::vector<std::string>{"parallel.tp", "parallel.vp", "parallel.cp", "training.global_batch", "parallel.ep"}));
    EXPECT_EQ(v[0].given, "3");
    EXPECT_EQ(v[1].message(), "parallel.vp: got 2; interleaving (vp > 1) needs pp > 1");
    EXPECT_EQ(v[2].message(), "parallel.cp: got 3; must divide model.seq_len (128)");
    EXPECT_EQ(v[3].message(), "training.global_batch: got 10; must be a multiple of dp*microbatch (4)");
    EXPECT_EQ(v[4].message(), "parallel.ep: got 2; expert parallelism needs model.moe");
}

TEST(LayoutRules, TheBatchRuleCountsTheMicroBatch) {
    ParallelConfig p;
    p.dp = 4;
    p.microbatch = 2;  // 12 sequences: 4 replicas of 3, not of whole micro-batches of 2
    const std::vector<InputError> v = check_layout(tiny_gpt(), round_system(), testing::batch_of(12), p);
    ASSERT_EQ(v.size(), 1u);
    EXPECT_EQ(v[0].message(), "training.global_batch: got 12; must be a multiple of dp*microbatch (8)");
    EXPECT_TRUE(check_layout(tiny_gpt(), round_system(), testing::batch_of(16), p).empty());
}

TEST(LayoutRules, SummaGridColumnsCutHeadsAsOneDimensionalTensorParallelismDoes) {
    // 24 heads and 8 K/V heads over a hidden width of 96 (then 120) that the grid's tp divides.
    ModelSpec m = tiny_gpt();
    m.heads = 24;
    m.kv_heads = 8;
    m.hidden = 96;
    m.ffn_hidden = 384;
    ParallelConfig p;
    p.tp = 6;
    p.tp_rows = 2;  // 3 columns: divide the 24 heads, neither divide nor are a multiple of 8 K/V heads
    p.sequence_parallel = true;
    std::vector<InputError> v = check_layout(m, round_system(), testing::batch_of(8), p);
    ASSERT_EQ(v.size(), 1u);
    EXPECT_EQ(v[0].message(), "parallel.tp_rows: got 2; tp / tp_rows = 3 grid columns must divide model.kv_heads (8) or be a multiple of it");
    m.hidden = 120;
    m.ffn_hidden = 480;
    p.tp = 10;  // 5 columns do not divide the 24 heads, and nothing else may stand in for that
    v = check_layout(m, round_system(), testing::batch_of(8), p);
    ASSERT_EQ(v.size(), 1u);
    EXPECT_EQ(v[0].message(), "parallel.tp_rows: got 2; tp / tp_rows = 5 grid columns must divide model.heads (24)");
    m.kv_heads = 24;
    p.tp = 8;  // 4 columns: every width divides
    m.hidden = 96;
    m.ffn_hidden = 384;
    EXPECT_TRUE(check_layout(m, round_system(), testing::batch_of(8), p).empty());
}

TEST(LayoutRules, PastTheGpuLimitIsReportedAlone) {
    ParallelConfig p;
    p.tp = 2;
    p.dp = kMaxGpus;  // 2^25 GPUs, and a batch of 3 that dp does not divide
    const std::vector<InputError> v = check_layout(tiny_gpt(), round_system(), testing::batch_of(3), p);
    ASSERT_EQ(v.size(), 1u);
    EXPECT_EQ(v[0].message(), "parallel: got tp*pp*dp*cp = 33554432; at most 16777216 GPUs");
    const std::vector<InputError> infer = check_layout(tiny_gpt(), testing::round_inference_system(), testing::fp16_workload(3, 16, 4), p);
    ASSERT_EQ(infer.size(), 1u);
    EXPECT_EQ(infer[0].message(), "parallel: got tp*pp*dp = 33554432; at most 16777216 GPUs");
    // Context parallelism counts: 2 x 2^23 x 2 is past the limit though tp*pp*dp is at it.
    p.dp = kMaxGpus / 2;
    p.cp = 2;
    const std::vector<InputError> cp = check_layout(tiny_gpt(), round_system(), testing::batch_of(kMaxGpus / 2), p);
    ASSERT_FALSE(cp.empty());
    EXPECT_EQ(cp[0].message(), "parallel: got tp*pp*dp*cp = 33554432; at most 16777216 GPUs");
    // Exactly at the limit is allowed, in training and in inference.
    p.tp = 1;
    p.cp = 1;
    p.dp = kMaxGpus;
    EXPECT_TRUE(check_layout(tiny_gpt(), round_system(), testing::batch_of(kMaxGpus), p).empty());
    EXPECT_TRUE(check_layout(tiny_gpt(), testing::round_inference_system(), testing::fp16_workload(3, 16, 4), p).empty());
}

TEST(LayoutRules, AnUnevenSplitNamesTheFieldItCameFrom) {
    // 8 layers on pp 4 with 1 on the first stage: 7 left for 3 stages do not split evenly.
    ParallelConfig p;
    p.pp = 4;
    p.split = PipelineSplit::first_last;
    p.first_stage_layers = 1;
    std::vector<InputError> v = check_layout(tiny_gpt(), round_system(), testing::batch_of(8), p);
    ASSERT_EQ(v.size(), 1u);
    EXPECT_EQ(v[0].path, "parallel.first_stage_layers");
    EXPECT_EQ(v[0].given, "first 1 / last 0 of 8 layers on pp 4 vp 1");
    p.first_stage_layers = 0;
    p.last_stage_layers = 1;
    v = check_layout(tiny_gpt(), round_system(), testing::batch_of(8), p);
    ASSERT_EQ(v.size(), 1u);
    EXPECT_EQ(v[0].path, "parallel.last_stage_layers");
}

TEST(LayoutRules, ARuleThatPresumesAnEarlierOneIsCheckedOnlyOnceThatHolds) {
    // SUMMA: 3 grid rows do not divide tp 4; that tiny_moe has experts (SUMMA is for dense
    // models) is a rule of the grid, not reported until the grid exists.
    ParallelConfig p;
    p.tp = 4;
    p.tp_rows = 3;
    p.sequence_parallel = true;
    std::vector<InputError> v = check_layout(tiny_moe(), round_system(), testing::batch_of(8), p);
    ASSERT_EQ(v.size(), 1u);
    EXPECT_EQ(v[0].message(), "parallel.tp_rows: got 3; must divide parallel.tp (4)");
    p.tp_rows = 2;
    v = check_layout(tiny_moe(), round_system(), testing::batch_of(8), p);
    ASSERT_EQ(v.size(), 1u);
    EXPECT_EQ(v[0].message(), "parallel.tp_rows: got 2; 1: SUMMA (tp_rows > 1) is modelled for dense models, and model.moe is set");
    // Experts: ep 3 does not divide the 8 experts, so whether it divides dp*cp is not asked.
    ParallelConfig e;
    e.ep = 3;
    v = check_layout(tiny_moe(), round_system(), testing::batch_of(8), e);
    ASSERT_EQ(v.size(), 1u);
    EXPECT_EQ(v[0].message(), "parallel.ep: got 3; must divide model.moe.experts (8)");
    e.ep = 4;
    e.dp = 2;
    v = check_layout(tiny_moe(), round_system(), testing::batch_of(8), e);
    ASSERT_EQ(v.size(), 1u);
    EXPECT_EQ(v[0].message(), "parallel.ep: got 4; must divide dp*cp (2)");
}

TEST(LayoutRules, InferenceReportsEveryRule) {
    ModelSpec m = tiny_gpt();
    m.kind = ModelKind::encoder;
    ParallelConfig p;
    p.tp = 4;
    p.tp_rows = 2;  // SUMMA: training only (and its grid rules are not asked)
    p.pp = 3;       // does not divide 8 layers
    p.cp = 2;
    p.ep = 2;
    InferenceSpec s = testing::fp16_workload(1, 16, 4);
    s.precision = Precision::int4;  // round_system has no int4 peak
    const std::vector<InputError> v = check_layout(m, testing::round_inference_system(), s, p);
    ASSERT_EQ(paths(v), (std::vector<std::string>{"model.kind", "parallel.tp_rows", "parallel.pp", "parallel.cp", "parallel.ep",
                                                  "inference.precision"}));
    EXPECT_EQ(v[2].message(), "parallel.pp: got 3; must divide model.layers (8)");
    EXPECT_EQ(v[5].given, "\"int4\"");
}

TEST(LayoutRules, WhatASearchChecksBeforeItEnumerates) {
    ModelSpec m = tiny_gpt();
    m.hybrid_pattern = "M-M-M-M*";
    TrainingSpec t = testing::batch_of(8);
    t.precision = Precision::int4;
    EXPECT_EQ(paths(check_trainable(m, round_system(), t, 2)), (std::vector<std::string>{"training.precision", "parallel.cp"}));
    t.precision = Precision::bf16;
    EXPECT_TRUE(check_trainable(m, round_system(), t, 1).empty());
    EXPECT_TRUE(check_trainable(tiny_gpt(), round_system(), t, 2).empty());  // a transformer takes cp
}

TEST(LayoutRules, AScenarioReportsTheFirstRuleItBreaks) {
    // tp 3 and cp 3 on Llama 3 8B (32 heads, 8,192 tokens): both are broken, tp is reported.
    const std::string json = R"({"model": {"preset": "llama3-8b"}, "system": {"preset": "dgx-h100"},
        "parallel": {"tp": 3, "cp": 3, "dp": 1}, "training": {"global_batch": 8}})";
    const std::string refused = testing::refusal(json);
    ASSERT_FALSE(refused.empty());
    EXPECT_EQ(refused.rfind("parallel.tp: got 3; ", 0), 0u) << refused;
    const Expected<Scenario> fine = testing::load(json, {"parallel.tp=1", "parallel.cp=1"});
    ASSERT_TRUE(fine.ok()) << fine.error().message();
    const Scenario& s = fine.value();
    ParallelConfig p = s.parallel;
    p.tp = 3;
    p.cp = 3;
    const std::vector<InputError> v = check_layout(s.model, s.system, s.training, p);
    ASSERT_EQ(paths(v), (std::vector<std::string>{"parallel.tp", "parallel.cp"}));
    EXPECT_EQ(v[0].message(), refused);
}

}  // namespace
}  // namespace sm
