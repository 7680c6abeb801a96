#include "io/validation.hpp"

#include <cmath>
#include <cstdlib>

#include <fmt/format.h>

#include "io/embedded.hpp"
#include "io/scenario.hpp"
#include "training/step.hpp"

namespace sm {

namespace {

const std::string& field(const CsvRow& row, const char* key) {
    static const std::string empty;
    auto it = row.find(key);
    return it == row.end() ? empty : it->second;
}

// A CSV cell as JSON: integer, number, boolean or string.
Json cell(const std::string& s) {
    if (s == "true") return true;
    if (s == "false") return false;
    char* end = nullptr;
    const long long i = std::strtoll(s.c_str(), &end, 10);
    if (end && *end == '\0' && !s.empty()) return i;
    const double d = std::strtod(s.c_str(), &end);
    if (end && *end == '\0' && !s.empty()) return d;
    return s;
}

void copy(Json& dst, const char* key, const CsvRow& row, const char* column) {
    const std::string& v = field(row, column);
    if (!v.empty()) dst[key] = cell(v);
}

bool is_model_preset(const std::string& name) {
    for (const auto& n : model_preset_names())
        if (n == name) return true;
    return false;
}

bool is_training_row(const CsvRow& row) { return row.count("measured_step_time_s") > 0; }

std::string layout_of(const CsvRow& r) {
    return fmt::format("tp{} pp{} dp{} cp{} vp{} mb{}", field(r, "tp"), field(r, "pp"), field(r, "dp"),
                       field(r, "cp").empty() ? "1" : field(r, "cp"), field(r, "vp").empty() ? "1" : field(r, "vp"),
                       field(r, "mbs").empty() ? field(r, "batch") : field(r, "mbs"));
}

}  // namespace

Expected<Json> row_scenario(const CsvRow& row) {
    Json model = Json::object();
    const std::string& name = field(row, "model");
    if (is_model_preset(name)) {
        model["preset"] = name;
    } else {
        const bool gpt = field(row, "ffn_act") != "swiglu";
        model["name"] = name;
        model["norm"] = gpt ? "layernorm" : "rmsnorm";
        model["bias"] = gpt;
        model["position"] = gpt ? "learned" : "rope";
        model["tied_embeddings"] = gpt;
        model["dropout"] = gpt;
    }
    for (const char* k : {"layers", "hidden", "heads", "kv_heads", "ffn_hidden", "ffn_act", "vocab", "seq_len"})
        copy(model, k, row, k);
    if (!field(row, "moe_experts").empty()) {
        model["moe"] = Json{{"experts", cell(field(row, "moe_experts"))}, {"top_k", cell(field(row, "moe_top_k"))},
                            {"expert_ffn_hidden", cell(field(row, "ffn_hidden"))}};
    }
    Json doc = {{"model", model}, {"system", {{"preset", field(row, "system")}}}};
    Json par = Json::object();
    for (const char* k : {"tp", "pp", "dp", "cp", "ep", "vp", "sequence_parallel", "zero", "recompute"}) copy(par, k, row, k);
    copy(par, "microbatch", row, "mbs");
    doc["parallel"] = par;
    if (is_training_row(row)) {
        Json tr = Json::object();
        copy(tr, "global_batch", row, "gbs");
        copy(tr, "precision", row, "precision");
        doc["training"] = tr;
    } else {
        Json inf = Json::object();
        for (const char* k : {"batch", "input_len", "output_len", "precision"}) copy(inf, k, row, k);
        doc["inference"] = inf;
    }
    return doc;
}

ValidationReport run_validation(const std::string& dataset, std::string_view csv_text) {
    ValidationReport rep;
    for (const CsvRow& row : parse_csv(csv_text)) {
        const std::string& id = field(row, "id");
        if (!is_training_row(row)) {
            rep.skipped.push_back(id + ": inference rows need `scalemodel infer` (not built yet)");
            continue;
        }
        Expected<Json> doc = row_scenario(row);
        if (!doc) {
            rep.skipped.push_back(id + ": " + doc.error().message());
            continue;
        }
        Expected<Scenario> s = build_scenario(doc.value(), Purpose::train);
        if (!s) {
            rep.skipped.push_back(id + ": " + s.error().message());
            continue;
        }
        const double measured = std::strtod(field(row, "measured_step_time_s").c_str(), nullptr);
        if (!(measured > 0)) {
            rep.skipped.push_back(id + ": no measured step time");
            continue;
        }
        const TrainResult r = evaluate_training({s->model, s->system, s->training}, s->parallel);
        ValidationCase c;
        c.id = id;
        c.dataset = dataset;
        c.source = field(row, "source");
        c.metric = "step_time_s";
        c.measured = measured;
        c.predicted = r.step_time_s;
        c.error = (c.predicted - c.measured) / c.measured;
        c.layout = layout_of(row);
        rep.cases.push_back(std::move(c));
    }
    return rep;
}

ValidationReport run_builtin_validation() {
    ValidationReport all;
    for (const auto& f : embedded_validation_sets()) {
        ValidationReport r = run_validation(std::string(f.name), f.text);
        all.cases.insert(all.cases.end(), r.cases.begin(), r.cases.end());
        all.skipped.insert(all.skipped.end(), r.skipped.begin(), r.skipped.end());
    }
    return all;
}

ValidationSummary summarize(const std::vector<ValidationCase>& cases) {
    ValidationSummary s;
    s.count = cases.size();
    double sum = 0;
    for (const auto& c : cases) {
        const double a = std::fabs(c.error);
        sum += a;
        if (a >= s.max_abs_error) {
            s.max_abs_error = a;
            s.worst_id = c.id;
        }
    }
    s.mean_abs_error = cases.empty() ? 0 : sum / static_cast<double>(cases.size());
    return s;
}

}  // namespace sm
