// Result documents: the SPEC's keys, the op table, CSV and the finiteness guard.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "inference/inference.hpp"
#include "io/infer_report.hpp"
#include "io/op_table.hpp"
#include "io/report.hpp"
#include "test_helpers.hpp"

namespace sm {
namespace {

const char* kScenario = R"({"model": {"preset": "llama3-70b"}, "system": {"preset": "dgx-h100"},
    "parallel": {"tp": 4, "pp": 4, "dp": 4, "vp": 5, "sequence_parallel": true, "zero": 1, "recompute": "selective"},
    "training": {"global_batch": 128, "precision": "fp8"}})";

double num(const Json& j, const char* path) {
    const Json* at = &j;
    std::string p = path;
    for (size_t start = 0;;) {
        const size_t dot = p.find('.', start);
        const std::string key = p.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
        EXPECT_TRUE(at->contains(key)) << path;
        if (!at->contains(key)) return std::nan("");
        at = &(*at)[key];
        if (dot == std::string::npos) break;
        start = dot + 1;
    }
    return at->get<double>();
}

// Every SPEC key carries the Result field of its name (a swapped pair of keys fails).
TEST(Report, TrainJsonCarriesTheResult) {
    const Scenario s = testing::scenario(kScenario);
    const TrainResult r = evaluate_training({s.model, s.system, s.training}, s.parallel);
    const Json j = train_json(s, r);
    const std::pair<const char*, double> keys[] = {
        {"step_time_s", r.step_time_s},
        {"tokens_per_s", r.tokens_per_s},
        {"tokens_per_s_per_gpu", r.tokens_per_s_per_gpu},
        {"mfu", r.mfu},
        {"hfu", r.hfu},
        {"gpus", 64},
        {"microbatches", static_cast<double>(r.microbatches)},
        {"params", r.params_total},
        {"model_flop_per_step", r.model_flop_per_step},
        {"memory.peak_bytes_per_gpu", r.memory.peak_bytes_per_gpu},
        {"memory.capacity_bytes", 80.0 * 1073741824},
        {"memory.weights_bytes", r.memory.weights_bytes},
        {"memory.gradients_bytes", r.memory.gradients_bytes},
        {"memory.optimizer_bytes", r.memory.optimizer_bytes},
        {"memory.activations_bytes", r.memory.activations_bytes},
        {"memory.overhead_bytes", r.memory.overhead_bytes},
        {"breakdown.compute_s", r.breakdown.compute_s},
        {"breakdown.recompute_s", r.breakdown.recompute_s},
        {"breakdown.bubble_s", r.breakdown.bubble_s},
        {"breakdown.optimizer_s", r.breakdown.optimizer_s},
        {"breakdown.tp_comm_exposed_s", r.breakdown.tp_comm_exposed_s},
        {"breakdown.pp_comm_exposed_s", r.breakdown.pp_comm_exposed_s},
        {"breakdown.dp_comm_exposed_s", r.breakdown.dp_comm_exposed_s},
        {"breakdown.cp_comm_exposed_s", r.breakdown.cp_comm_exposed_s},
        {"breakdown.ep_comm_exposed_s", r.breakdown.ep_comm_exposed_s},
        {"comm_link.tp_s", r.link.tp_s},
        {"comm_link.pp_s", r.link.pp_s},
        {"comm_link.dp_s", r.link.dp_s},
        {"comm_link.cp_s", r.link.cp_s},
        {"comm_link.ep_s", r.link.ep_s},
    };
    for (const auto& [k, v] : keys) EXPECT_EQ(num(j, k), v) << k;
    // Distinct figures, so that a swap of two keys shows.
    EXPECT_NE(r.tokens_per_s, r.tokens_per_s_per_gpu);
    EXPECT_NE(r.memory.weights_bytes, r.memory.gradients_bytes);
    EXPECT_NE(r.breakdown.tp_comm_exposed_s, r.breakdown.pp_comm_exposed_s);
    EXPECT_EQ(j["fits_in_memory"].get<bool>(), r.fits_in_memory);
    EXPECT_EQ(j["model"], "llama3-70b");
    EXPECT_EQ(j["system"], "dgx-h100");
    const Json& p = j["parallel"];
    EXPECT_EQ(p["tp"], 4);
    EXPECT_EQ(p["pp"], 4);
    EXPECT_EQ(p["dp"], 4);
    EXPECT_EQ(p["vp"], 5);
    EXPECT_EQ(p["zero"], 1);
    EXPECT_EQ(p["sequence_parallel"], true);
    EXPECT_EQ(p["recompute"], "selective");
    // Llama-3 70B: 70.55e9 parameters (Meta's model card: 70.6B); 128 / dp 4 = 32 micro-batches.
    EXPECT_NEAR(r.params_total, 70.55e9, 0.01e9);
    EXPECT_EQ(r.microbatches, 128 / 4);
    // 128 sequences of 8,192 tokens per step, over 64 GPUs.
    EXPECT_NEAR(r.tokens_per_s, 128.0 * 8192 / r.step_time_s, 1e-9 * r.tokens_per_s);
    EXPECT_NEAR(r.tokens_per_s_per_gpu, r.tokens_per_s / 64, 1e-9 * r.tokens_per_s_per_gpu);
    EXPECT_TRUE(find_non_finite(j).empty());
}

// The inference document of the toy model on the round machine: the hand figures of
// test_inference_model.cpp (weights 86,848 x 2 B, the cache 3,840 B, activations 8,960 B).
TEST(Report, InferJsonCarriesTheResult) {
    Scenario s;
    s.model = testing::tiny_llama(2);
    s.system = testing::round_inference_system();
    s.inference.batch = 1;
    s.inference.input_len = 10;
    s.inference.output_len = 5;
    s.inference.kv_precision = Precision::fp8;
    s.inference.framework_overhead_bytes = 1000;
    s.parallel.dp = 3;
    const InferResult r = evaluate_inference({s.model, s.system, s.inference}, s.parallel);
    const Json j = infer_json(s, r);
    EXPECT_EQ(num(j, "memory.weights_bytes"), 86848 * 2.0);
    EXPECT_EQ(num(j, "memory.kv_cache_bytes"), 1920.0);  // fp8: half of 3,840
    EXPECT_EQ(num(j, "memory.activations_bytes"), 8960.0);
    EXPECT_EQ(num(j, "memory.overhead_bytes"), 1000.0);
    EXPECT_EQ(num(j, "memory.capacity_bytes"), 80e9);
    EXPECT_EQ(num(j, "memory.peak_bytes_per_gpu"), r.memory.peak_bytes_per_gpu);
    EXPECT_EQ(num(j, "gpus"), 3.0);
    EXPECT_EQ(num(j, "batch"), 1.0);
    EXPECT_EQ(num(j, "input_len"), 10.0);
    EXPECT_EQ(num(j, "output_len"), 5.0);
    EXPECT_EQ(num(j, "decode.steps"), 4.0);
    EXPECT_EQ(j["precision"]["kv_cache"], "fp8");
    EXPECT_EQ(j["precision"]["math"], "fp16");
    const std::pair<const char*, double> keys[] = {
        {"ttft_s", r.ttft_s},
        {"tpot_s", r.tpot_s},
        {"e2e_latency_s", r.e2e_latency_s},
        {"output_tokens_per_s", r.output_tokens_per_s},
        {"max_batch_fits", static_cast<double>(r.max_batch_fits)},
        {"prefill.time_s", r.prefill.total_s()},
        {"prefill.compute_s", r.prefill.compute_s},
        {"prefill.flop", r.prefill.flop},
        {"prefill.hbm_bytes", r.prefill.hbm_bytes},
        {"decode.total.time_s", r.decode.total_s()},
        {"decode.total.flop", r.decode.flop},
        {"decode.first_step_s", r.decode_first.total_s()},
        {"decode.last_step_s", r.decode_last.total_s()},
    };
    for (const auto& [k, v] : keys) EXPECT_EQ(num(j, k), v) << k;
    // The prefill FLOP by hand (test_inference_model.cpp): 2 x (737,280 + 12,800) + 12,800.
    EXPECT_EQ(num(j, "prefill.flop"), 1512960.0);
    EXPECT_TRUE(find_non_finite(j).empty());
}

TEST(Report, OpTableSplitsBackwardIntoDataAndWeightGradients) {
    const Scenario s = testing::scenario(kScenario);
    const Json t = training_ops_json(s);
    ASSERT_GT(t["layer"]["ops"].size(), 8u);
    bool saw_qkv = false;
    for (const Json& op : t["layer"]["ops"]) {
        if (op["name"] == "qkv_proj") {
            saw_qkv = true;
            // Llama-3 70B at tp 4: Q (64/4 heads) plus K and V (8/4 heads each), 128 wide.
            EXPECT_DOUBLE_EQ(op["shape"]["n"].get<double>(), (16 + 2 * 2) * 128.0);
            EXPECT_DOUBLE_EQ(op["bwd_flop"].get<double>(), 2 * op["fwd_flop"].get<double>());
            EXPECT_GT(op["wgrad_s"].get<double>(), 0.0);
            EXPECT_DOUBLE_EQ(op["dgrad_flop"].get<double>() + op["wgrad_flop"].get<double>(), op["bwd_flop"].get<double>());
            // Weight gradient dW[k=8192, n=2560] = A^T dC over 8192 tokens: fp8 operands, fp32 output.
            const double T = 8192, k = 8192, n = 2560;
            EXPECT_DOUBLE_EQ(op["wgrad_bytes"].get<double>(), k * T * 1 + T * n * 1 + k * n * 4);
        }
        if (op["kind"] == "elementwise") {
            EXPECT_EQ(op["wgrad_s"].get<double>(), 0.0);
        }
    }
    EXPECT_TRUE(saw_qkv);
    // Sequence parallelism: all-gathers and reduce-scatters inside one 8-GPU NVLink domain.
    for (const Json& c : t["layer"]["comms"]) {
        EXPECT_EQ(c["group"], "tp");
        EXPECT_EQ(c["gpus_per_domain"].get<int64_t>(), 4);
        EXPECT_EQ(c["domains"].get<int64_t>(), 1);
    }
}

TEST(Report, CsvHeaderMatchesRow) {
    const Json j = {{"a", 1}, {"b", {{"c", 2.5}, {"d", "x"}}}};
    EXPECT_EQ(csv_header(j), "a,b.c,b.d\n");
    EXPECT_EQ(csv_row(j), "1,2.5,x\n");
}

TEST(Report, NonFiniteNumbersAreFound) {
    Json j = {{"ok", 1.0}, {"nested", {{"bad", std::numeric_limits<double>::infinity()}}}};
    EXPECT_EQ(find_non_finite(j), "nested.bad");
    j["nested"]["bad"] = 2.0;
    j["list"] = Json::array({1.0, std::nan("")});
    EXPECT_EQ(find_non_finite(j), "list[1]");
}

}  // namespace
}  // namespace sm
