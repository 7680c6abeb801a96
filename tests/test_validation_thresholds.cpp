// Validation as a regression gate: each published data set's mean and worst |error| must stay
// within a point or two of what the model measured when the thresholds were set, so a change
// that costs a few points on any set fails here (and not only the docs/VALIDATION.md diff).
//
// Measured with `scalemodel validate` on 2026-11-22 (commit 3aeb823, docs/VALIDATION.md):
//   set          rows  mean |error|  worst |error|   threshold mean / worst
//   imec           22      3.53%         8.81%            4.5% / 10.8%
//   korthikanti     9      2.91%         6.11%            3.9% /  8.1%
//   narayanan      10      5.72%        13.67%            6.7% / 15.7%
//   nemo2407        7      5.98%        12.43%            7.0% / 14.4%
//   vtrain        109      9.29%        42.56%           10.3% / 44.6%
//   all           157      7.74%        42.56%            8.7% / 44.6%
//   TensorRT-LLM (inference_trtllm.csv, 2026-11-22, branch serving), by what each row measured:
//   trtllm output_tokens_per_s_per_gpu      88     26.68%       160.22%          27.7% / 162.3%
//   trtllm output_tokens_per_s_per_gpu_max  21     70.44%       299.44%          71.5% / 301.5%
//   trtllm ttft_s                           44     12.28%        58.97%          13.3% /  61.0%
//   all                                    310     18.01%       299.44%          19.1% / 301.5%
//   Dense models alone: static throughput 80 rows 22.2%, max throughput 12 rows 14.8%, first
//   token 40 rows 10.3%; the MoE rows (Mixtral, Qwen3-30B-A3B) are 72-145% off (docs/CALIBRATION.md).
//   2026-11-25 (session 7): decode attention by its kernel's units took the static rows to 23.2%
//   (worst 160.2%); the DEP and MLA rows now run (24 more max-throughput rows, DeepSeek-R1 and
//   Qwen3-235B-A22B): 45 rows, 67.2% mean, 266.2% worst; all 459 rows 17.2%.
//   2026-11-25 (session 8): the CUDA-core decode kernel reads K/V once per query head: static
//   rows 13.8% mean (worst 128.6%, Mixtral 8x7B at 1,024 x 128/128); all 459 rows 15.4%.
//   2026-11-25 (session 9): Qwen3's 128-wide heads (model.head_dim) and TensorRT-LLM's whole-cache
//   reservation (inference.kv_reservation full): max-throughput rows 19.9% mean (worst 121.7%,
//   Qwen3-30B-A3B on GB200 at 1,024/1,024); all 459 rows 10.8%. The cache pool at 90% of the free
//   memory (inference.kv_cache_memory_fraction): 18.9% (worst 117.7%); all 459 rows 10.7%.
//   2026-11-26 (session 13): sliding-window attention (model.sliding_window) runs the 29 gpt-oss
//   rows the set used to skip, with TensorRT-LLM 1.2's whole-sequence cache for windowed layers
//   and its MoE precisions (data-set context): max-throughput rows 74, 19.3% mean (gpt-oss 29.6%;
//   the other 45 unchanged at 12.7%), worst 119.6% (gpt-oss-120b on H200 at 1,024/1,024); all
//   488 rows 11.3%.
// Thresholds: mean + 1 point, worst + 2 points. A change that improves a set may tighten its
// line; one that worsens it must say why in docs/CALIBRATION.md and move the line knowingly.
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "io/validation.hpp"

namespace sm {
namespace {

struct Gate {
    const char* set;
    size_t rows;
    double mean, worst;
    // Rows past this need the author's explanation in data/validation/analysis.json (0: the worst).
    double unexplained = 0;
};

// training_nvidia_2025.csv: rows evaluated (the others are skipped with their reason): 200 of
// the DGX Cloud recipes, 4 and 2 of NeMo's 25.04 and 25.07 performance pages.
constexpr size_t kDgxcRows = 200;  // 193 + the 7 Nemotron-H rows (session 16)
constexpr size_t kNvidia2025Rows = kDgxcRows + 4 + 2;

constexpr Gate kGates[] = {
    {"imec", 22, 0.045, 0.108},     {"korthikanti", 9, 0.039, 0.081}, {"narayanan", 10, 0.067, 0.157},
    {"nemo2407", 7, 0.070, 0.144},  {"vtrain", 109, 0.103, 0.446},
    // Measured 6.7% mean (session 17); 62.8% worst (DeepSeek-V3 on GB200, explained); past 22%
    // only those three (Maverick on 512 H100s, +29/+31% until session 16, is now within 7%).
    {"dgxc", kDgxcRows, 0.069, 0.640, 0.220},
    // GB200 rows of NeMo's performance pages whose recompute mode the release's configs give:
    // 6.6% and 2.6% mean with Blackwell's clock_fraction 0.784 (fitted on the 18 GB200 rows).
    {"nemo2504", 4, 0.070, 0.110, 0},   {"nemo2507", 2, 0.035, 0.050, 0},
    {"trtllm output_tokens_per_s_per_gpu", 88, 0.137, 1.070},
    {"trtllm output_tokens_per_s_per_gpu_max", 74, 0.190, 1.080},
    {"trtllm ttft_s", 44, 0.130, 0.580},
};

const ValidationReport& report() {
    static const ValidationReport r = run_builtin_validation();
    return r;
}

// Rows by data set: the id's first word (imec-..., vtrain-...), as `validate` groups them.
std::map<std::string, std::vector<ValidationCase>> by_set() {
    std::map<std::string, std::vector<ValidationCase>> sets;
    for (const ValidationCase& c : report().cases) {
        const std::string study = c.id.substr(0, c.id.find('-'));
        const bool latency = c.metric == "step_time_s" || c.metric == "e2e_latency_s";
        sets[latency ? study : study + " " + c.metric].push_back(c);
    }
    return sets;
}

// Every row of the older sets runs; training_nvidia_2025 skips rows whose inputs were not
// published (recompute, ...) or whose model the tool cannot express yet, each with its reason;
// the TensorRT-LLM set would skip rows whose notes name what the model does not represent
// (sliding-window attention or MLA without its dimensions in the data-set context): none today.
TEST(ValidationThresholds, OnlyUnpublishedOrUnmodelledRowsAreSkipped) {
    size_t trtllm = 0;
    for (const std::string& s : report().skipped) {
        if (s.rfind("trtllm-", 0) == 0) {
            ++trtllm;
            EXPECT_NE(s.find("per the notes"), std::string::npos) << s;
            continue;
        }
        EXPECT_TRUE(s.rfind("dgxc-", 0) == 0 || s.rfind("nemo2504-", 0) == 0 || s.rfind("nemo2507-", 0) == 0 || s.rfind("nemo-longseq-", 0) == 0) << s;
    }
    EXPECT_EQ(trtllm, 0u);
    EXPECT_EQ(report().cases.size(), 157u + kNvidia2025Rows + 206u);
    EXPECT_EQ(report().rows, 157u + 228u + 206u);
}

TEST(ValidationThresholds, EverySetWithinItsMeanAndWorst) {
    const auto sets = by_set();
    EXPECT_EQ(sets.size(), std::size(kGates)) << "a data set without a gate: add its line above";
    for (const Gate& g : kGates) {
        SCOPED_TRACE(g.set);
        const auto it = sets.find(g.set);
        ASSERT_NE(it, sets.end());
        EXPECT_EQ(it->second.size(), g.rows);
        const ValidationSummary s = summarize(it->second);
        EXPECT_LE(s.mean_abs_error, g.mean);
        EXPECT_LE(s.max_abs_error, g.worst) << "worst row " << s.worst_id;
        // Each row on its own, so the message names every row past the line.
        for (const ValidationCase& c : it->second) EXPECT_LE(std::abs(c.error), g.worst) << c.id;
        // Past the plain line, a row needs its explanation (docs/VALIDATION.md shows it).
        const auto why = builtin_row_analysis();
        for (const ValidationCase& c : it->second)
            if (g.unexplained > 0 && std::abs(c.error) > g.unexplained) {
                EXPECT_TRUE(why.count(c.id)) << c.id << " is unexplained";
            }
    }
}

TEST(ValidationThresholds, AllRowsTogether) {
    const ValidationSummary s = summarize(report().cases);
    EXPECT_LE(s.mean_abs_error, 0.102);  // 10.07% (569 rows, session 17)
    EXPECT_LE(s.max_abs_error, 1.080) << s.worst_id;
}

// Issue 8's target for training_nvidia_2025.csv as a whole: the DGX Cloud recipes and NeMo's
// 25.04 and 25.07 pages together within 7% mean (6.68%, session 17).
TEST(ValidationThresholds, Nvidia2025WithinSevenPercent) {
    std::vector<ValidationCase> rows;
    for (const auto& [set, cases] : by_set())
        if (set == "dgxc" || set == "nemo2504" || set == "nemo2507") rows.insert(rows.end(), cases.begin(), cases.end());
    ASSERT_EQ(rows.size(), kNvidia2025Rows);
    EXPECT_LE(summarize(rows).mean_abs_error, 0.070);
}

// The summary itself, on rows whose errors are known.
TEST(ValidationThresholds, SummaryOfKnownRows) {
    std::vector<ValidationCase> rows(3);
    rows[0].id = "a";
    rows[0].error = 0.10;
    rows[1].id = "b";
    rows[1].error = -0.30;
    rows[2].id = "c";
    rows[2].error = 0.05;
    const ValidationSummary s = summarize(rows);
    EXPECT_EQ(s.count, 3u);
    EXPECT_NEAR(s.mean_abs_error, 0.15, 1e-15);  // (0.10 + 0.30 + 0.05) / 3
    EXPECT_NEAR(s.max_abs_error, 0.30, 1e-15);
    EXPECT_EQ(s.worst_id, "b");
}

}  // namespace
}  // namespace sm
