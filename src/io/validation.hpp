#pragma once
// `scalemodel validate`: every row of a measured data set rebuilt as a scenario and predicted.
#include <array>
#include <map>
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
    // The group the row reports under instead of its id's first word (empty: that word); serving
    // benchmarks group by source, backend and mode ("aic trtllm agg").
    std::string group;
    // Regimes the error is reported by: the accelerator's generation, the math precision, and
    // the share of the predicted step (or latency) that is exposed communication.
    std::string family;
    std::string precision;
    double comm_share = -1;  // training rows; -1: not classified (inference)
};

// Communication-bound: exposed communication is at least this share of the predicted time.
inline constexpr double kCommBoundShare = 0.15;
// The accelerator generation of a system: "Ampere", "Hopper", "Blackwell", ... from its name.
std::string accelerator_family(const std::string& accelerator_name);
// The author's explanations of rows' errors (id -> one line), from data/validation/analysis.json:
// documentation only, never read by the model.
std::map<std::string, std::string> builtin_row_analysis();

struct ValidationSummary {
    size_t count = 0;
    double mean_abs_error = 0;
    double max_abs_error = 0;
    std::string worst_id;
};

// What every row of one data set shares (its cluster, its software), stated once with the
// source's words for it: `--set` overrides applied to each row of that set.
// Rows of one model may need more: architecture details the CSV holds only in its notes, given
// as `--set`s (fields that exist), or a feature the tool cannot express yet (`unsupported`:
// those rows are skipped with that reason instead of being evaluated as a different model).
struct ModelContext {
    std::vector<std::string> overrides;
    std::string unsupported;
    std::string reason;
};

// Overrides for the rows whose cells equal every one of `where` (column -> text; a column a row
// lacks reads as empty): how a source ran a subset of its rows (a benchmark's request count per
// sequence length).
struct RowContext {
    std::map<std::string, std::string> where;
    std::vector<std::string> overrides;
    std::string reason;
};

struct DatasetContext {
    std::string dataset;
    std::vector<std::string> overrides;
    std::string reason;
    std::map<std::string, ModelContext> models;  // by the CSV's `model` cell
    std::vector<RowContext> rows;                // applied after the model's, in order
};

// A training row whose one unpublished input is the recompute mode: skipped (never in the means),
// but predicted under each mode Megatron offers, so its measured step can be placed between them.
struct BracketCase {
    std::string id;
    std::string dataset;
    std::string layout;
    std::string family;
    std::string precision;
    double measured = 0;
    std::array<double, 3> predicted{};  // recompute none, selective, full
};

struct ValidationReport {
    std::vector<ValidationCase> cases;
    std::vector<BracketCase> bracketed;  // a subset of `skipped`
    std::vector<std::string> skipped;  // "id: reason"
    std::vector<DatasetContext> contexts;
    size_t rows = 0;  // data rows read, evaluated or skipped
    // With `scenario_of`: the scenario that row runs as (its columns with every override
    // applied), the row not evaluated; absent when no row has that id or the row is skipped.
    std::optional<Json> scenario;
    std::string scenario_command;  // how that row is predicted: "infer SCENARIO.json --concurrency C", ...
};

// `origin` names the context file in errors (empty: "the context of DATASET").
Expected<DatasetContext> parse_context(const std::string& dataset, std::string_view json_text, const std::string& origin = {});
// What a data set's context file is called beside NAME.csv: NAME.context.json.
std::string context_path_for(const std::string& dataset_path);
// Why a row cannot be evaluated because an input it needs was not published: the fields listed in
// its `unpublished_fields` (a ';' list) whose cell is empty and that the model reads, as
// "recompute unpublished" (empty when none). A listed field whose cell is filled anyway is the
// data set's documented assumption (see its notes) and is used; `measured_peak_mem_gib` and
// `measured_tokens_per_s_per_gpu` are never needed (the step time or latency is compared). A field
// the row's context overrides give (`overrides`, "path=value" each: parallel.recompute for
// recompute, a model.preset for the architecture columns) is not missing.
std::string unpublished_inputs(const CsvRow& row, const std::vector<std::string>& overrides = {});
// The bounds on a data set read from a user (published sets hold tens of rows).
inline constexpr CsvLimits kDatasetLimits{10000, 1000};

// The scenario a training or inference row describes. Models that are not presets take the
// family defaults of their feed-forward type (GPT-style for gelu, Llama-style for swiglu).
Expected<Json> row_scenario(const CsvRow& row);
// Every row of one data set. `context_json` is the set's <set>.context.json, if it has one: its
// overrides apply to every row, before `sets` (the user's `--set`s, for sensitivity studies).
// `context_origin` names the context file in errors (see parse_context). Fails on a CSV over
// kDatasetLimits; rows that cannot be evaluated are listed in `skipped`. A non-empty `scenario_of`
// evaluates nothing: it finds that row and sets `scenario` (or lists why it is skipped).
Expected<ValidationReport> run_validation(const std::string& dataset, std::string_view csv_text,
                                          std::optional<std::string_view> context_json,
                                          const std::vector<std::string>& sets = {},
                                          const std::string& context_origin = {}, const std::string& scenario_of = {});
ValidationReport run_builtin_validation(const std::vector<std::string>& sets = {}, const std::string& scenario_of = {});
ValidationSummary summarize(const std::vector<ValidationCase>& cases);

}  // namespace sm
