#pragma once
// `scalemodel validate`: every row of a measured data set rebuilt as a scenario and predicted.
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

struct ValidationReport {
    std::vector<ValidationCase> cases;
    std::vector<std::string> skipped;  // "id: reason"
};

// The scenario a training or inference row describes. Models that are not presets take the
// family defaults of their feed-forward type (GPT-style for gelu, Llama-style for swiglu).
Expected<Json> row_scenario(const CsvRow& row);
ValidationReport run_validation(const std::string& dataset, std::string_view csv_text);
ValidationReport run_builtin_validation();
ValidationSummary summarize(const std::vector<ValidationCase>& cases);

}  // namespace sm
