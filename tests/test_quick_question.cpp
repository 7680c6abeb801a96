// One-line questions: the flags written into a scenario document (io/quick_question.hpp), and
// training.batch_tokens, which --batch-tokens writes.
#include <gtest/gtest.h>

#include "io/quick_question.hpp"
#include "io/scenario.hpp"
#include "test_helpers.hpp"

namespace sm {
namespace {
using namespace testing;

QuickFlags flags(unsigned uses) {
    QuickFlags q;
    q.uses = uses;
    return q;
}

Json after_gpus(const Json& doc, const QuickFlags& q) {
    Expected<Json> j = apply_quick_gpus(doc, q);
    EXPECT_TRUE(j.ok()) << (j.ok() ? "" : j.error().message());
    return j.value();
}

std::string gpus_error(const Json& doc, const QuickFlags& q) {
    Expected<Json> j = apply_quick_gpus(doc, q);
    return j.ok() ? "accepted" : j.error().message();
}

TEST(QuickQuestion, FlagsWriteTheirFieldsOverTheFile) {
    QuickFlags q = flags(kQuickTraining);
    q.model = "llama3-70b";
    q.system = "dgx-h100";
    q.seq = 4096;
    q.batch_tokens = 1 << 22;
    q.precision = "fp8";
    const Json file = {{"model", {{"preset", "gpt3-175b"}, {"layers", 4}}},
                       {"training", {{"global_batch", 64}, {"precision", "bf16"}}},
                       {"parallel", {{"tp", 8}}}};
    const Json doc = apply_quick_flags(file, q);
    // --model names the whole model: the file's override of a field of another model goes.
    EXPECT_EQ(doc["model"], (Json{{"preset", "llama3-70b"}, {"seq_len", 4096}}));
    EXPECT_EQ(doc["system"], (Json{{"preset", "dgx-h100"}}));
    EXPECT_EQ(doc["training"], (Json{{"batch_tokens", 1 << 22}, {"precision", "fp8"}}));
    EXPECT_EQ(doc["parallel"], file["parallel"]);
    EXPECT_FALSE(doc.contains("inference"));  // a training command's precision is the training's
    // A path is a Hugging Face config; a serving command's flags write the inference section.
    QuickFlags i = flags(kQuickInference);
    i.model = "./config.json";
    i.isl = 2048;
    i.osl = 256;
    i.precision = "fp8";
    const Json served = apply_quick_flags(Json::object(), i);
    EXPECT_EQ(served["model"], (Json{{"from_hf", "./config.json"}}));
    EXPECT_EQ(served["inference"], (Json{{"input_len", 2048}, {"output_len", 256}, {"precision", "fp8"}}));
    i.model = "qwen3.json";
    EXPECT_EQ(apply_quick_flags(Json::object(), i)["model"], (Json{{"from_hf", "qwen3.json"}}));
    // What the file holds in the wrong shape is left for the reader to name.
    q.model.clear();
    EXPECT_EQ(apply_quick_flags(Json{{"model", 3}}, q)["model"], 3);
    EXPECT_EQ(apply_quick_flags(Json::array(), q), Json::array());
}

TEST(QuickQuestion, GpusFillTheDegreeTheScenarioLeavesOut) {
    QuickFlags t = flags(kQuickTraining | kQuickGpus);
    t.gpus = 512;
    // Training: dp = 512 / (tp 8 x pp 4 x cp 2) = 8.
    const Json layout = {{"parallel", {{"tp", 8}, {"pp", 4}, {"cp", 2}}}};
    EXPECT_EQ(after_gpus(layout, t)["parallel"]["dp"], 8);
    EXPECT_EQ(after_gpus(Json::object(), t)["parallel"], (Json{{"dp", 512}}));
    EXPECT_EQ(gpus_error(Json{{"parallel", {{"tp", 3}}}}, t),
              "--gpus: got 512; a multiple of 3 (the scenario's tp 3): --gpus sets parallel.dp to fill the GPUs");
    EXPECT_EQ(gpus_error(Json{{"parallel", {{"tp", 8}, {"dp", 2}}}}, t),
              "--gpus: got 512; parallel.dp is given too: the scenario's layout uses 16 GPUs; leave parallel.dp out and --gpus sets it");
    EXPECT_EQ(after_gpus(Json{{"parallel", {{"tp", 8}, {"dp", 64}}}}, t)["parallel"]["dp"], 64);  // agrees: kept
    // Inference: one engine's tensor parallelism, or replicas when tp is given.
    QuickFlags i = flags(kQuickInference | kQuickGpus);
    i.gpus = 8;
    EXPECT_EQ(after_gpus(Json::object(), i)["parallel"], (Json{{"tp", 8}}));
    EXPECT_EQ(after_gpus(Json{{"parallel", {{"pp", 2}}}}, i)["parallel"]["tp"], 4);
    EXPECT_EQ(after_gpus(Json{{"parallel", {{"tp", 2}}}}, i)["parallel"]["dp"], 4);
    // No --gpus, or a malformed degree (the reader names it): nothing written.
    EXPECT_EQ(after_gpus(Json{{"parallel", {{"tp", "x"}}}}, i), (Json{{"parallel", {{"tp", "x"}}}}));
    i.gpus = 0;
    EXPECT_EQ(after_gpus(Json::object(), i), Json::object());
}

TEST(QuickQuestion, NoScenarioNeedsModelAndSystem) {
    QuickFlags q;
    EXPECT_EQ(missing_scenario("", q)->message(), "SCENARIO: got nothing; a scenario file ('-' for standard input), or --model and --system");
    EXPECT_FALSE(missing_scenario("x.json", q));
    q.system = "dgx-h100";
    EXPECT_FALSE(missing_scenario("", q));
}

TEST(QuickQuestion, BatchTokensAreWholeSequences) {
    const std::string head = R"({"model": {"preset": "llama3-70b"}, "system": {"preset": "dgx-h100"}, "training": )";
    // Llama 3's 4M-token batch at 8,192 tokens a sequence: 512 sequences.
    EXPECT_EQ(scenario(head + R"({"batch_tokens": 4194304}})").training.global_batch, 512);
    EXPECT_EQ(refusal(head + R"({"batch_tokens": 4194305}})"),
              "training.batch_tokens: got 4194305; a multiple of model.seq_len (8192), at most 2^30 sequences: a step holds whole sequences");
    EXPECT_EQ(refusal(head + R"({"batch_tokens": 8192, "global_batch": 1}})"),
              "training.batch_tokens: got a value beside training.global_batch; one of the two: tokens per step or sequences per step");
    // resolve shows the sequences only, so that its output reads back.
    const Scenario s = scenario(head + R"({"batch_tokens": 16384}})");
    EXPECT_EQ(s.full["training"]["global_batch"], 2);
    EXPECT_FALSE(s.full["training"].contains("batch_tokens"));
}

}  // namespace
}  // namespace sm
