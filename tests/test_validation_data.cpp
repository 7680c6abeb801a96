// Reading measured data sets: rows whose inputs were not published are skipped with the reason,
// and a data set's context may give per-model overrides or mark a model as not expressible.
#include <gtest/gtest.h>

#include <cmath>
#include <map>

#include "io/scenario.hpp"
#include "inference/inference.hpp"
#include "io/validation.hpp"

namespace sm {
namespace {

const std::string kHeader =
    "id,model,layers,hidden,heads,kv_heads,ffn_hidden,ffn_act,vocab,seq_len,system,tp,pp,dp,cp,ep,vp,mbs,gbs,"
    "sequence_parallel,zero,recompute,precision,measured_step_time_s,measured_peak_mem_gib,unpublished_fields\n";

CsvRow row(std::initializer_list<std::pair<const std::string, std::string>> cells) { return CsvRow(cells); }

// A context that gives a field (a model preset: the architecture columns; parallel.recompute)
// leaves it missing no more; what it does not give still is.
TEST(UnpublishedInputs, WhatTheContextGivesIsNotMissing) {
    const CsvRow r = row({{"measured_step_time_s", "1"}, {"pp", "1"}, {"layers", ""}, {"hidden", ""}, {"recompute", ""},
                          {"unpublished_fields", "recompute;layers;hidden"}});
    EXPECT_EQ(unpublished_inputs(r), "recompute, layers, hidden unpublished");
    EXPECT_EQ(unpublished_inputs(r, {"model.preset=nemotron-3-nano-30b-a3b"}), "recompute unpublished");
    EXPECT_EQ(unpublished_inputs(r, {"parallel.recompute=none", "model.layers=52"}), "hidden unpublished");
    EXPECT_EQ(unpublished_inputs(r, {"model.preset=x", "parallel.recompute=selective"}), "");
    // A preset gives no parallel field, and an unrelated override nothing.
    EXPECT_EQ(unpublished_inputs(r, {"parallel.tp=2", "training.precision=fp8"}), "recompute, layers, hidden unpublished");
}

TEST(UnpublishedInputs, AnEmptyListedInputSkipsTheRow) {
    EXPECT_EQ(unpublished_inputs(row({{"measured_step_time_s", "1"}, {"recompute", ""}, {"pp", "1"},
                                      {"unpublished_fields", "recompute;measured_peak_mem_gib"}})),
              "recompute unpublished");
    // Every missing input is named, in the order listed; the measured value is one of them.
    EXPECT_EQ(unpublished_inputs(row({{"measured_step_time_s", ""}, {"mbs", ""}, {"zero", ""}, {"pp", "1"},
                                      {"unpublished_fields", "measured_step_time_s; mbs;zero"}})),
              "measured_step_time_s, mbs, zero unpublished");
}

TEST(UnpublishedInputs, FilledOrUnneededFieldsDoNotSkip) {
    // Listed but filled: the data set's documented assumption (Calculon's vp, vTrain's zero).
    EXPECT_EQ(unpublished_inputs(row({{"measured_step_time_s", "1"}, {"vp", "3"}, {"pp", "8"}, {"unpublished_fields", "vp"}})), "");
    // Memory is not compared: its absence never skips.
    EXPECT_EQ(unpublished_inputs(row({{"measured_step_time_s", "1"}, {"measured_peak_mem_gib", ""}, {"pp", "1"},
                                      {"unpublished_fields", "measured_peak_mem_gib"}})),
              "");
    // Interleaving without a pipeline, experts without MoE: not read.
    EXPECT_EQ(unpublished_inputs(row({{"measured_step_time_s", "1"}, {"vp", ""}, {"ep", ""}, {"pp", "1"},
                                      {"unpublished_fields", "vp;ep"}})),
              "");
    EXPECT_EQ(unpublished_inputs(row({{"measured_step_time_s", "1"}, {"vp", ""}, {"pp", "4"}, {"unpublished_fields", "vp"}})),
              "vp unpublished");
}

TEST(UnpublishedInputs, RowIsReportedSkippedNotGuessed) {
    const std::string csv = kHeader +
                            "a,gpt-x,24,2048,16,16,8192,gelu,51200,2048,dgx-a100-80gb,1,1,8,1,1,1,1,64,false,0,,fp16,1.0,,"
                            "recompute;measured_peak_mem_gib\n"
                            "b,gpt-x,24,2048,16,16,8192,gelu,51200,2048,dgx-a100-80gb,1,1,8,1,1,1,1,64,false,0,none,fp16,1.0,,"
                            "measured_peak_mem_gib\n";
    const auto rep = run_validation("set", csv, std::nullopt);
    ASSERT_TRUE(rep.ok());
    ASSERT_EQ(rep->cases.size(), 1u);
    EXPECT_EQ(rep->cases[0].id, "b");
    ASSERT_EQ(rep->skipped.size(), 1u);
    EXPECT_EQ(rep->skipped[0], "a: recompute unpublished");
    EXPECT_EQ(rep->rows, 2u);
}

TEST(UnpublishedInputs, AnUnpublishedRecomputeIsBracketedNotGuessed) {
    // Row a lacks its recompute mode: skipped and in no mean, but predicted under each mode.
    // Rows n, s and f are the same run with the mode published: the bracket's three predictions
    // are theirs, and the measured 1.0 s stays a's own.
    std::string csv = kHeader +
                      "a,gpt-x,24,2048,16,16,8192,gelu,51200,2048,dgx-a100-80gb,1,1,8,1,1,1,1,64,false,0,,fp16,1.0,,"
                      "recompute;measured_peak_mem_gib\n";
    for (const char* mode : {"none", "selective", "full"})
        csv += std::string(1, mode[0]) + ",gpt-x,24,2048,16,16,8192,gelu,51200,2048,dgx-a100-80gb,1,1,8,1,1,1,1,64,false,0," + mode +
               ",fp16,2.0,,\n";
    // A row missing more than its recompute mode is not bracketed.
    csv += "m,gpt-x,24,2048,16,16,8192,gelu,51200,2048,dgx-a100-80gb,1,1,8,1,1,1,,64,false,0,,fp16,1.0,,recompute;mbs\n";
    const auto rep = run_validation("set", csv, std::nullopt);
    ASSERT_TRUE(rep.ok());
    ASSERT_EQ(rep->cases.size(), 3u);
    ASSERT_EQ(rep->skipped.size(), 2u);
    EXPECT_EQ(rep->skipped[0], "a: recompute unpublished");
    ASSERT_EQ(rep->bracketed.size(), 1u);
    const BracketCase& b = rep->bracketed[0];
    EXPECT_EQ(b.id, "a");
    EXPECT_EQ(b.measured, 1.0);
    EXPECT_EQ(b.family, "Ampere");
    EXPECT_EQ(b.precision, "fp16");
    for (size_t i = 0; i < 3; ++i) EXPECT_EQ(b.predicted[i], rep->cases[i].predicted) << rep->cases[i].id;
    // Recomputing more never shortens the step.
    EXPECT_LT(b.predicted[0], b.predicted[1]);
    EXPECT_LT(b.predicted[1], b.predicted[2]);
}

const std::string kTwoModels = kHeader +
                               "a,Model-A,24,2048,16,16,8192,gelu,51200,2048,dgx-a100-80gb,1,1,8,1,1,1,1,64,false,0,none,fp16,1.0,,\n"
                               "b,Model-B,24,2048,16,16,8192,gelu,51200,2048,dgx-a100-80gb,1,1,8,1,1,1,1,64,false,0,none,fp16,1.0,,\n";

TEST(DatasetContextModels, OverridesApplyToThatModelsRowsOnly) {
    const auto plain = run_validation("set", kTwoModels, std::nullopt);
    // Model-A's FFN made 4x wider through its context entry: only its row slows down.
    const auto ctx = run_validation("set", kTwoModels,
                                    R"({"reason": "r", "models": {"Model-A": {"overrides": ["model.ffn_hidden=32768"], "reason": "paper"}}})");
    ASSERT_TRUE(plain.ok() && ctx.ok());
    ASSERT_EQ(ctx->cases.size(), 2u);
    EXPECT_GT(ctx->cases[0].predicted, 1.5 * plain->cases[0].predicted);
    EXPECT_DOUBLE_EQ(ctx->cases[1].predicted, plain->cases[1].predicted);
    ASSERT_EQ(ctx->contexts.size(), 1u);
    EXPECT_EQ(ctx->contexts[0].models.at("Model-A").overrides.front(), "model.ffn_hidden=32768");
}

TEST(DatasetContextModels, UnsupportedModelIsSkippedWithItsReason) {
    const auto ctx = run_validation(
        "set", kTwoModels, R"({"reason": "r", "models": {"Model-B": {"unsupported": "latent attention not expressible", "reason": "paper"}}})");
    ASSERT_TRUE(ctx.ok());
    ASSERT_EQ(ctx->cases.size(), 1u);
    EXPECT_EQ(ctx->cases[0].id, "a");
    ASSERT_EQ(ctx->skipped.size(), 1u);
    EXPECT_EQ(ctx->skipped[0], "b: latent attention not expressible");
}

TEST(DatasetContextModels, MalformedEntriesNameTheirField) {
    const auto not_object = parse_context("set", R"({"reason": "r", "models": {"M": ["model.layers=2"]}})");
    ASSERT_FALSE(not_object.ok());
    EXPECT_NE(not_object.error().message().find("models.M"), std::string::npos) << not_object.error().message();
    const auto typo = parse_context("set", R"({"reason": "r", "models": {"M": {"overide": [], "reason": "x"}}})");
    ASSERT_FALSE(typo.ok());
    EXPECT_NE(typo.error().message().find("did you mean"), std::string::npos) << typo.error().message();
    const auto no_reason = parse_context("set", R"({"reason": "r", "models": {"M": {"overrides": []}}})");
    ASSERT_FALSE(no_reason.ok());
    EXPECT_NE(no_reason.error().message().find("models.M.reason"), std::string::npos) << no_reason.error().message();
}

// A layout the tool refuses today is a skipped row with the refusal, not a failure of the set.
// Expert parallelism wider than dp x cp is Megatron-Core's MoE parallel folding with experts whole
// (expert tensor parallelism 1): 8 experts over tp 2 x dp 4 = 8 GPUs. Within dp x cp, or at tp 1,
// the row's layout is read as given.
TEST(TrainingRows, ExpertsWiderThanDataParallelAreFoldedWhole) {
    const auto layout = [](const char* tp, const char* dp, const char* ep) {
        const CsvRow r = row({{"id", "moe"}, {"model", "moe-x"}, {"layers", "4"}, {"hidden", "1024"}, {"heads", "16"}, {"kv_heads", "8"},
                              {"ffn_hidden", "2048"}, {"ffn_act", "swiglu"}, {"vocab", "32000"}, {"seq_len", "2048"},
                              {"moe_experts", "8"}, {"moe_top_k", "2"}, {"system", "dgx-h100"}, {"tp", tp}, {"pp", "1"},
                              {"dp", dp}, {"cp", "1"}, {"ep", ep}, {"mbs", "1"}, {"gbs", "16"}, {"recompute", "none"},
                              {"precision", "bf16"}, {"measured_step_time_s", "1.0"}});
        const Expected<Json> doc = row_scenario(r);
        EXPECT_TRUE(doc.ok());
        return doc.ok() ? doc.value()["parallel"] : Json();
    };
    EXPECT_EQ(layout("2", "4", "8").value("etp", 0), 1);
    EXPECT_FALSE(layout("2", "4", "4").contains("etp"));
    EXPECT_FALSE(layout("1", "4", "8").contains("etp"));  // at tp 1 no rule is needed: ep 8 > dp 4 stays refused
    const std::string csv = "id,model,layers,hidden,heads,kv_heads,ffn_hidden,ffn_act,vocab,seq_len,moe_experts,moe_top_k,system,tp,pp,dp,cp,"
                            "ep,vp,mbs,gbs,sequence_parallel,zero,recompute,precision,measured_step_time_s,unpublished_fields\n"
                            "folded,moe-x,4,1024,16,8,2048,swiglu,32000,2048,8,2,dgx-h100,2,1,4,1,8,1,1,16,true,1,none,bf16,1.0,\n";
    const auto rep = run_validation("set", csv, std::nullopt);
    ASSERT_TRUE(rep.ok());
    ASSERT_EQ(rep->cases.size(), 1u) << (rep->skipped.empty() ? "" : rep->skipped[0]);
    EXPECT_GT(rep->cases[0].predicted, 0);
}

TEST(DatasetContextModels, RefusedLayoutIsSkippedWithTheMessage) {
    const std::string csv = kHeader +
                            "odd,gpt-x,30,2048,16,16,8192,gelu,51200,2048,dgx-a100-80gb,1,4,2,1,1,8,1,64,false,0,none,fp16,1.0,,\n";
    const auto rep = run_validation("set", csv, std::nullopt);
    ASSERT_TRUE(rep.ok());
    if (rep->cases.empty()) {  // until uneven pipeline stages are modelled
        ASSERT_EQ(rep->skipped.size(), 1u);
        EXPECT_EQ(rep->skipped[0].rfind("odd: parallel.", 0), 0u) << rep->skipped[0];
    }
}


// Fixed-concurrency serving rows (serving_aic_public.csv, five of its rows with source and notes
// cut, and one flagged row): each compared row yields a TTFT and a TPOT case grouped by source,
// backend and mode (a disaggregated row with its per-role workers and layouts among them, and an
// attention-DP row whose experts span tp x attention_dp, moe_tp 8 x moe_ep 8 over 64 replicas);
// a row whose expert layout does not cover its GPUs is skipped with its reason; the backends'
// schedulers and cache reservation come from the row.
const char* const kAicRows = R"csv(id,source,model,layers,hidden,heads,kv_heads,ffn_hidden,ffn_act,vocab,system,tp,pp,batch,input_len,output_len,precision,measured_e2e_latency_s,measured_ttft_s,measured_tpot_s,measured_output_tokens_per_s,throughput_scope,unpublished_fields,notes,serving_mode,backend,backend_version,concurrency,gpus,attention_dp,moe_tp,moe_ep,per_rank_batch,prefill_workers,prefill_tp,prefill_pp,prefill_attention_dp,prefill_moe_tp,prefill_moe_ep,prefill_batch,decode_workers,decode_tp,decode_pp,decode_attention_dp,decode_moe_tp,decode_moe_ep,decode_batch,gemm_quant,moe_quant,moe_experts,moe_top_k,head_dim,measured_date,layout_flags
aic-meta_llama_llama_3_1_8b_instruct_meta_llama_llama_3_1_8b_instruct_h100_sxm_trtllm_agg_1024x128_c128_tp1_epnone_37,,Llama-3.1-8B,32,4096,32,8,14336,swiglu,128256,dgx-h100,1,1,,1024,128,bf16,,0.532705,0.0316621,,,batch;measured_e2e_latency_s;measured_output_tokens_per_s,,agg,trtllm,1.0.0rc3,128,1,,1,1,128,,,,,,,,,,,,,,,,,,,,,"precision blank in source: gemm/moe quant blank = AIC default for the checkpoint (BF16 weights), read as bf16"
aic-meta_llama_llama_3_1_8b_instruct_meta_llama_llama_3_1_8b_instruct_h200_sxm_sglang_agg_1000x1000_c352_tp1_epnone_9,,Llama-3.1-8B,32,4096,32,8,14336,swiglu,128256,dgx-h200,1,1,,1000,1000,fp8,,0.9386,0.03655,,,batch;measured_e2e_latency_s;measured_output_tokens_per_s,,agg,sglang,0.5.6.post2,352,1,,1,1,352,,,,,,,,,,,,,,,fp8_block,fp8_block,,,,,
aic-2026_04_06_llama_3_1_70b_h100_sxm_vllm_fp8_agg_1024x1024_c8_tp2_ep1_630,,Llama-3.1-70B,80,8192,64,8,28672,swiglu,128256,dgx-h100,2,1,,1024,1024,fp8,,0.15025,0.0182208,,,batch;measured_e2e_latency_s;measured_output_tokens_per_s,,agg,vllm,,8,2,1,2,1,8,,,,,,,,,,,,,,,fp8,fp8,,,,2025-10-29,backend version blank in source
aic-dsr1_b200_sglang_fp4_disagg_1024x1024_c512_cfg527,,DeepSeek-V3-671B,61,7168,128,128,18432,swiglu,129280,dgx-b200,,,,1024,1024,nvfp4,,7.8165,0.0244888,,,batch;measured_e2e_latency_s;measured_output_tokens_per_s;tp;pp,,disagg,sglang,0.5.8.post1,512,12,,,,,1,1,1,4,1,4,1,1,1,1,8,1,8,64,nvfp4,nvfp4,256,8,,2026-02-11,
aic-2026_04_06_deepseek_r1_b200_sxm_trtllm_fp4_agg_1024x1024_c256_tp8_ep8_965,,DeepSeek-R1-671B,61,7168,128,128,18432,swiglu,129280,dgx-b200,1,1,,1024,1024,nvfp4,,0.791144,0.0239119,,,batch;measured_e2e_latency_s;measured_output_tokens_per_s,,agg,trtllm,1.2.0rc6.post2,256,64,64,8,8,4,,,,,,,,,,,,,,,nvfp4,nvfp4,256,8,,2026-02-03,64 GPUs per instance exceed one 8-GPU NVLink domain of dgx-b200
aic-qwen_qwen3_235b_a22b_fp8_qwen_qwen3_235b_a22b_fp8_h200_sxm_vllm_agg_1000x100_c8_tp1_epnone_2,,Qwen3-235B-A22B,94,4096,64,4,1536,swiglu,151936,dgx-h200,1,1,,1000,100,fp8,,0.35692,0.05493,,,batch;measured_e2e_latency_s;measured_output_tokens_per_s,,agg,vllm,0.12.0,8,1,,2,1,8,,,,,,,,,,,,,,,fp8,fp8,128,8,128,,moe_tp x moe_ep (2) != tp x attention_dp (1)
)csv";

// The public file's context for DeepSeek-V3 (its MLA and expert dimensions), as
// ../shared/validation/serving_aic_public.context.json gives them.
const char* const kAicContext = R"json({"models": {"DeepSeek-V3-671B": {"overrides": [
  "model.attention_kind=mla", "model.mla.q_lora_rank=1536", "model.mla.kv_lora_rank=512", "model.mla.qk_nope_head_dim=128",
  "model.mla.qk_rope_head_dim=64", "model.mla.v_head_dim=128", "model.moe.expert_ffn_hidden=2048",
  "model.moe.first_dense_layers=3", "model.moe.shared_experts=1", "model.moe.shared_expert_ffn_hidden=2048"],
  "reason": "ai-dynamo/aiconfigurator 095f58a51c4c model_configs/deepseek-ai--DeepSeek-V3_config.json"}},
  "reason": "the models' dimensions the columns cannot hold"})json";

TEST(ServingRows, EachComparedRowGivesTtftAndTpotByBackendAndMode) {
    const ValidationReport r = run_validation("aic", kAicRows, std::string_view(kAicContext)).value();
    ASSERT_EQ(r.cases.size(), 10U);
    std::map<std::string, int> seen;
    for (const ValidationCase& c : r.cases) {
        ++seen[c.group + " " + c.metric];
        EXPECT_GT(c.predicted, 0);
        EXPECT_DOUBLE_EQ(c.error, (c.predicted - c.measured) / c.measured);
    }
    const std::map<std::string, int> want{{"aic trtllm agg ttft_s", 2}, {"aic trtllm agg tpot_s", 2}, {"aic sglang agg ttft_s", 1},
                                          {"aic sglang agg tpot_s", 1}, {"aic vllm agg ttft_s", 1},   {"aic vllm agg tpot_s", 1},
                                          {"aic sglang disagg ttft_s", 1}, {"aic sglang disagg tpot_s", 1}};
    EXPECT_EQ(seen, want);
    // Golden: TPOT of the dense TensorRT-LLM and vLLM rows and of the disaggregated DeepSeek row
    // within 25% (14%, 6% and 15% when written).
    for (const ValidationCase& c : r.cases) {
        if (c.metric == "tpot_s" && c.group != "aic sglang agg" && c.id.find("_tp8_ep8_") == std::string::npos) {
            EXPECT_LT(std::fabs(c.error), 0.25) << c.id;
        }
    }
    ASSERT_EQ(r.skipped.size(), 1U);
    EXPECT_NE(r.skipped[0].find("MoE layout does not cover attention's GPUs (moe_tp 2 x moe_ep 1 against attention tp 1 x "
                                "attention_dp 1;"),
              std::string::npos)
        << r.skipped[0];
}

// --scenario: the disaggregated DeepSeek row's scenario carries its context's MLA (the model's
// overrides), the user's --set, each role's workers, and the command that predicts it; nothing is
// evaluated. The flagged row gives no scenario, only its reason; an unknown id neither.
TEST(ServingRows, ScenarioOfARowIsItsColumnsWithEveryOverride) {
    const std::string id = "aic-dsr1_b200_sglang_fp4_disagg_1024x1024_c512_cfg527";
    const ValidationReport r =
        run_validation("aic", kAicRows, std::string_view(kAicContext), {"inference.output_len=7"}, {}, id).value();
    EXPECT_TRUE(r.cases.empty());
    EXPECT_TRUE(r.skipped.empty());
    ASSERT_TRUE(r.scenario.has_value());
    const Json& s = *r.scenario;
    EXPECT_EQ(s["model"]["attention_kind"], "mla");
    EXPECT_EQ(s["model"]["mla"]["kv_lora_rank"], 512);
    EXPECT_EQ(s["inference"]["output_len"], 7);
    EXPECT_EQ(s["inference"]["input_len"], 1024);
    EXPECT_EQ(s["inference"]["engine"], "sglang");
    EXPECT_EQ(s["disaggregated"]["prefill"]["workers"], 1);
    EXPECT_EQ(s["disaggregated"]["decode"]["dp"], 8);
    EXPECT_EQ(r.scenario_command, "infer SCENARIO.json --concurrency 512");

    const ValidationReport flagged =
        run_validation("aic", kAicRows, std::string_view(kAicContext), {}, {},
                       "aic-qwen_qwen3_235b_a22b_fp8_qwen_qwen3_235b_a22b_fp8_h200_sxm_vllm_agg_1000x100_c8_tp1_epnone_2")
            .value();
    EXPECT_FALSE(flagged.scenario.has_value());
    ASSERT_EQ(flagged.skipped.size(), 1U);
    const ValidationReport none = run_validation("aic", kAicRows, std::string_view(kAicContext), {}, {}, "no-such-row").value();
    EXPECT_FALSE(none.scenario.has_value());
    EXPECT_TRUE(none.skipped.empty() && none.cases.empty());
}

// --scenario on the built-in sets: the command follows what the row measured (a static batch's
// throughput and a first-token time: plain infer; a maximum throughput: --max-throughput; a
// training step: train).
TEST(ServingRows, ScenarioCommandFollowsWhatTheRowMeasured) {
    const std::pair<const char*, const char*> rows[] = {
        {"trtllm-v0.9.0-h200-mixtral-8x7b-bs1024-tp2-128-128", "infer SCENARIO.json"},
        {"trtllm-v0.9.0-h200-mixtral-8x7b-bs1-tp2-2048-ttft", "infer SCENARIO.json"},
        {"trtllm-r1.2-h200-gpt-oss-120b-dep2-fp8-1024-1024", "infer SCENARIO.json --max-throughput"},
        {"korthikanti-gpt-1t-selective", "train SCENARIO.json"}};
    for (const auto& [id, command] : rows) {
        const ValidationReport r = run_builtin_validation({}, id);
        EXPECT_TRUE(r.scenario.has_value()) << id;
        EXPECT_TRUE(r.cases.empty()) << id;
        EXPECT_EQ(r.scenario_command, command) << id;
    }
}

// A disaggregated row's scenario: each role's workers and layout from its columns (attention-DP
// ranks as dp, the experts' split as etp and ep); its deployment layout (tp, pp) is not needed.
TEST(ServingRows, DisaggregatedRowGivesEachRoleItsWorkersAndLayout) {
    CsvRow row{{"model", "m"},          {"layers", "2"},      {"hidden", "64"},          {"heads", "4"},
               {"kv_heads", "2"},       {"ffn_hidden", "128"}, {"ffn_act", "swiglu"},    {"vocab", "100"},
               {"system", "dgx-b200"},  {"input_len", "10"},  {"output_len", "5"},       {"concurrency", "8"},
               {"backend", "trtllm"},   {"serving_mode", "disagg"}, {"moe_experts", "8"}, {"moe_top_k", "2"},
               {"prefill_workers", "3"}, {"prefill_tp", "1"},  {"prefill_pp", "1"},       {"prefill_attention_dp", "4"},
               {"prefill_moe_tp", "4"}, {"prefill_moe_ep", "1"}, {"decode_workers", "2"}, {"decode_tp", "2"},
               {"decode_pp", "1"},      {"decode_attention_dp", "1"}, {"decode_moe_tp", "1"}, {"decode_moe_ep", "2"},
               {"unpublished_fields", "tp;pp;batch"}};
    const Json d = row_scenario(row).value()["disaggregated"];
    // Experts wider than attention: each split 4 ways over the 4 replicas (etp 4 = tp x dp).
    EXPECT_EQ(d["prefill"], (Json{{"workers", 3}, {"tp", 1}, {"pp", 1}, {"dp", 4}, {"ep", 1}, {"etp", 4}}));
    // Experts over the role's tensor-parallel GPUs: etp 1 x ep 2 = tp 2.
    EXPECT_EQ(d["decode"], (Json{{"workers", 2}, {"tp", 2}, {"pp", 1}, {"dp", 1}, {"ep", 2}, {"etp", 1}}));
    EXPECT_EQ(unpublished_inputs(row), "");
    row["decode_workers"] = "";
    row["unpublished_fields"] = "tp;pp;batch;decode_workers";
    EXPECT_EQ(unpublished_inputs(row), "decode_workers unpublished");
}

TEST(ServingRows, BackendsScheduleAndReserveAsTheyRunByDefault) {
    auto doc = [](const std::string& backend) {
        return row_scenario(CsvRow{{"model", "m"},         {"layers", "2"},   {"hidden", "64"},     {"heads", "4"},
                                   {"kv_heads", "2"},      {"ffn_hidden", "128"}, {"ffn_act", "swiglu"}, {"vocab", "100"},
                                   {"system", "dgx-h100"}, {"tp", "2"},       {"pp", "1"},          {"attention_dp", "2"},
                                   {"input_len", "10"},    {"output_len", "5"}, {"concurrency", "8"}, {"backend", backend},
                                   {"serving_mode", "agg"}})
            .value();
    };
    const Json sglang = doc("sglang"), vllm = doc("vllm"), trtllm = doc("trtllm");
    EXPECT_EQ(sglang["inference"]["engine"], "sglang");
    // The engines' profiles (presets/engines/): SGLang prefills in steps of its own, vLLM and
    // SGLang allocate the cache as the context grows, vLLM graphs decode batches up to 512.
    auto built = [](const Json& d) { return build_scenario(d, Purpose::infer).value().inference; };
    const InferenceSpec sg = built(sglang), vl = built(vllm), tr = built(trtllm);
    EXPECT_EQ(sg.prefill_schedule, PrefillSchedule::separate);
    EXPECT_EQ(sg.kv_reservation, KvReservation::average);
    EXPECT_EQ(vl.prefill_schedule, PrefillSchedule::mixed);
    EXPECT_EQ(vl.kv_reservation, KvReservation::average);
    EXPECT_EQ(vl.cuda_graph_max_batch, 512);
    EXPECT_EQ(tr.prefill_schedule, PrefillSchedule::mixed);
    EXPECT_EQ(tr.kv_reservation, KvReservation::full);
    EXPECT_EQ(tr.cuda_graph_max_batch, 128);
    // All three quantise activations in the kernel that produces them; a scenario without an
    // engine casts in kernels of its own.
    for (const InferenceSpec* e : {&sg, &vl, &tr}) EXPECT_EQ(e->activation_quantisation, ActivationQuantisation::fused);
    EXPECT_EQ(InferenceSpec{}.activation_quantisation, ActivationQuantisation::separate);
    EXPECT_TRUE(inference_cost_context(tr).cast_in_producer);
    EXPECT_FALSE(inference_cost_context(InferenceSpec{}).cast_in_producer);
    // Attention data-parallel ranks are replicas.
    EXPECT_EQ(trtllm["parallel"]["dp"], 2);
    EXPECT_EQ(trtllm["parallel"]["tp"], 2);
}

// The batch each attention-DP rank ran (per_rank_batch) is the measurement's: clients a whole
// multiple K of per_rank_batch x attention_dp were served by K instances, so dp = clients /
// per_rank_batch; a batch that matches the clients, or one that does not divide them, leaves
// the layout as given.
TEST(ServingRows, ClientsBeyondTheMeasuredBatchAreSpreadOverInstances) {
    auto dp_of = [](const char* adp, const char* per_rank, const char* clients) {
        const Json d = row_scenario(CsvRow{{"model", "m"},         {"layers", "2"},   {"hidden", "64"},     {"heads", "4"},
                                           {"kv_heads", "2"},      {"ffn_hidden", "128"}, {"ffn_act", "swiglu"}, {"vocab", "100"},
                                           {"system", "dgx-h100"}, {"tp", "2"},       {"pp", "1"},          {"attention_dp", adp},
                                           {"per_rank_batch", per_rank}, {"input_len", "10"}, {"output_len", "5"},
                                           {"concurrency", clients}, {"backend", "trtllm"}, {"serving_mode", "agg"}})
                           .value();
        return d["parallel"].value("dp", Json(1)).get<int64_t>();
    };
    EXPECT_EQ(dp_of("1", "14", "448"), 32);  // 448 clients at 14 a rank: 32 instances of tp 2
    EXPECT_EQ(dp_of("2", "8", "64"), 8);     // 2 ranks an instance, 4 instances
    EXPECT_EQ(dp_of("2", "32", "64"), 2);    // the batch covers the clients: as given
    EXPECT_EQ(dp_of("1", "6", "64"), 1);     // 64 / 6 is no whole number: as given
    EXPECT_EQ(dp_of("1", "", "64"), 1);      // no batch published: as given
}

}  // namespace
}  // namespace sm
