#pragma once
// `scalemodel validate`: every row of a measured data set rebuilt as a scenario and predicted.
#include <optional>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "io/csv.hpp"
#include "io/json_reader.hpp"

namespace sm {

struct ValidationCase {
    std::string id;
    std::string dataset;
    std::string source;
    std::string metric;
    double measured = 0;
    double predicted = 0;
    double error = 0;  // (predicted - measured) / measured
    std::string layout;
};

struct ValidationSummary {
    size_t count = 0;
    double mean_abs_error = 0;
    double max_abs_error = 0;
    std::string worst_id;
};

// What every row of one data set shares (its cluster, its software), stated once with the
// source's words for it: `--set` overrides applied to each row of that set.
struct DatasetContext {
    std::string dataset;
    std::vector<std::string> overrides;
    std::string reason;
};

struct ValidationReport {
    std::vector<ValidationCase> cases;
    std::vector<std::string> skipped;  // "id: reason"
    std::vector<DatasetContext> contexts;
    size_t rows = 0;  // data rows read, evaluated or skipped
};

// `origin` names the context file in errors (empty: "the context of DATASET").
Expected<DatasetContext> parse_context(const std::string& dataset, std::string_view json_text, const std::string& origin = {});
// What a data set's context file is called beside NAME.csv: NAME.context.json.
std::string context_path_for(const std::string& dataset_path);
// The bounds on a data set read from a user (published sets hold tens of rows).
inline constexpr CsvLimits kDatasetLimits{10000, 1000};

// The scenario a training or inference row describes. Models that are not presets take the
// family defaults of their feed-forward type (GPT-style for gelu, Llama-style for swiglu).
Expected<Json> row_scenario(const CsvRow& row);
// Every row of one data set. `context_json` is the set's <set>.context.json, if it has one: its
// overrides apply to every row, before `sets` (the user's `--set`s, for sensitivity studies).
// `context_origin` names the context file in errors (see parse_context). Fails on a CSV over
// kDatasetLimits; rows that cannot be evaluated are listed in `skipped`.
Expected<ValidationReport> run_validation(const std::string& dataset, std::string_view csv_text,
                                          std::optional<std::string_view> context_json,
                                          const std::vector<std::string>& sets = {},
                                          const std::string& context_origin = {});
ValidationReport run_builtin_validation(const std::vector<std::string>& sets = {});
ValidationSummary summarize(const std::vector<ValidationCase>& cases);

}  // namespace sm
