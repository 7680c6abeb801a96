// Result documents: the SPEC's keys, the op table, CSV and the finiteness guard.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "io/op_table.hpp"
#include "io/report.hpp"
#include "test_helpers.hpp"

namespace sm {
namespace {

const char* kScenario = R"({"model": {"preset": "llama3-70b"}, "system": {"preset": "dgx-h100"},
    "parallel": {"tp": 4, "pp": 4, "dp": 4, "vp": 5, "sequence_parallel": true, "zero": 1, "recompute": "selective"},
    "training": {"global_batch": 128, "precision": "fp8"}})";

TEST(Report, TrainJsonHasEverySpecKey) {
    const Scenario s = testing::scenario(kScenario);
    const Json j = train_json(s, evaluate_training({s.model, s.system, s.training}, s.parallel));
    for (const char* k : {"step_time_s", "tokens_per_s", "tokens_per_s_per_gpu", "mfu", "hfu", "gpus", "fits_in_memory"})
        EXPECT_TRUE(j.contains(k)) << k;
    for (const char* k : {"peak_bytes_per_gpu", "weights_bytes", "gradients_bytes", "optimizer_bytes", "activations_bytes"})
        EXPECT_TRUE(j["memory"].contains(k)) << k;
    for (const char* k : {"compute_s", "recompute_s", "bubble_s", "optimizer_s", "tp_comm_exposed_s", "pp_comm_exposed_s",
                          "dp_comm_exposed_s", "cp_comm_exposed_s"})
        EXPECT_TRUE(j["breakdown"].contains(k)) << k;
    EXPECT_EQ(j["gpus"].get<int64_t>(), 64);
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
