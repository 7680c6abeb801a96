#include "io/validation.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <filesystem>

#include <fmt/format.h>

#include "io/embedded.hpp"
#include "io/scenario.hpp"
#include "inference/inference.hpp"
#include "inference/serving.hpp"
#include "inference/serving_benchmark.hpp"
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

void copy(Json& dst, const char* key, const CsvRow& row, const std::string& column) { copy(dst, key, row, column.c_str()); }

bool is_model_preset(const std::string& name) {
    for (const auto& n : model_preset_names())
        if (n == name) return true;
    return false;
}

// A serving layout in the listing.
std::string layout_brief(const ParallelConfig& p) { return fmt::format("tp{} pp{} dp{} ep{}", p.tp, p.pp, p.dp, p.ep); }

bool is_training_row(const CsvRow& row) { return row.count("measured_step_time_s") > 0; }

std::string layout_of(const CsvRow& r) {
    return fmt::format("tp{} pp{} dp{} cp{} vp{} mb{}", field(r, "tp"), field(r, "pp"), field(r, "dp"),
                       field(r, "cp").empty() ? "1" : field(r, "cp"), field(r, "vp").empty() ? "1" : field(r, "vp"),
                       field(r, "mbs").empty() ? field(r, "batch") : field(r, "mbs"));
}

std::vector<std::string> split_list(const std::string& s) {
    std::vector<std::string> out;
    size_t start = 0;
    while (start <= s.size()) {
        size_t end = s.find(';', start);
        if (end == std::string::npos) end = s.size();
        std::string item = s.substr(start, end - start);
        while (!item.empty() && item.front() == ' ') item.erase(item.begin());
        while (!item.empty() && item.back() == ' ') item.pop_back();
        if (!item.empty()) out.push_back(item);
        start = end + 1;
    }
    return out;
}

// "MoE N experts top-K" in a notes cell: the digits of N and K (scanned by hand: a regex's
// backtracking recursion grows with the input a fuzzer feeds it).
std::optional<std::pair<std::string, std::string>> moe_from_notes(const std::string& notes) {
    auto digits = [&](size_t at) {
        size_t end = at;
        while (end < notes.size() && end - at < 12 && std::isdigit(static_cast<unsigned char>(notes[end]))) ++end;
        return notes.substr(at, end - at);
    };
    for (size_t at = notes.find("MoE "); at != std::string::npos; at = notes.find("MoE ", at + 1)) {
        const std::string experts = digits(at + 4);
        const size_t rest = at + 4 + experts.size();
        const std::string mid = " experts top-";
        if (experts.empty() || notes.compare(rest, mid.size(), mid) != 0) continue;
        const std::string top_k = digits(rest + mid.size());
        if (!top_k.empty()) return std::make_pair(experts, top_k);
    }
    return std::nullopt;
}

// A DEP row (TensorRT-LLM's attention data parallelism with expert parallelism), per its notes.
bool attention_data_parallel(const CsvRow& row) {
    return field(row, "notes").find("attention data-parallel") != std::string::npos;
}

bool lists(const std::string& semicolon_list, const std::string& item) {
    return (";" + semicolon_list + ";").find(";" + item + ";") != std::string::npos;
}

// What an inference row measured: the end-to-end latency of a static batch, the time to first
// token, or output tokens/s per GPU of a static batch or (batch unpublished) of a serving run at
// the best concurrency that fits; or (a `concurrency` column) a serving benchmark's TTFT and TPOT
// at a fixed client concurrency, each compared as a case of its own.
enum class InferMeasure { e2e, ttft, static_throughput, max_throughput, fixed_concurrency };
struct Measure {
    InferMeasure kind;
    const char* column;
    const char* metric;
};

bool fixed_concurrency(const CsvRow& row) { return !field(row, "concurrency").empty(); }
bool disaggregated(const CsvRow& row) { return fixed_concurrency(row) && field(row, "serving_mode") == "disagg"; }

// A serving layout's columns: the deployment's (prefix "") or one disaggregated role's
// ("prefill_", "decode_").
const std::string& role_field(const CsvRow& row, const std::string& prefix, const char* column) {
    return field(row, (prefix + column).c_str());
}

// A layout degree of a row as a number (blank: 1; anything outside 1..2^20: 0, matching nothing).
long long degree_cell(const std::string& text) {
    if (text.empty()) return 1;
    const long long v = std::atoll(text.c_str());
    return v >= 1 && v <= (1LL << 20) ? v : 0;
}

// Experts tensor-parallel other than attention, on the same GPUs: spread over attention's
// tensor-parallel GPUs (moe_tp x moe_ep = tp, moe_tp < tp, one attention-DP rank), or wider
// than attention over its replicas' GPUs (moe_tp x moe_ep = tp x attention_dp, moe_tp a
// multiple of tp): parallel.etp = moe_tp, ep = moe_ep.
bool experts_own_split(const CsvRow& row, const std::string& prefix = "") {
    const long long tp = degree_cell(role_field(row, prefix, "tp")), etp = degree_cell(role_field(row, prefix, "moe_tp")),
                    ep = degree_cell(role_field(row, prefix, "moe_ep")), adp = degree_cell(role_field(row, prefix, "attention_dp"));
    if (tp == 0 || etp == 0 || ep == 0 || adp == 0) return false;
    if (etp < tp) return etp * ep == tp && adp == 1;
    return etp > tp && etp % tp == 0 && etp * ep == tp * adp;
}

// Experts split as attention is (moe_tp = tp, moe_ep over the attention-DP ranks) or on their
// own split of the same GPUs (experts_own_split): why else not, or nullopt.
std::optional<std::string> moe_layout_unmodelled(const CsvRow& row, const std::string& prefix) {
    if (field(row, "moe_experts").empty() || role_field(row, prefix, "moe_tp") == role_field(row, prefix, "tp") ||
        experts_own_split(row, prefix))
        return std::nullopt;
    const std::string& adp = role_field(row, prefix, "attention_dp");
    const std::string layout = "moe_tp " + printable(role_field(row, prefix, "moe_tp")) + " x moe_ep " +
                               printable(role_field(row, prefix, "moe_ep")) + " against attention tp " +
                               printable(role_field(row, prefix, "tp")) + " x attention_dp " + printable(adp.empty() ? "1" : adp);
    const std::string role = prefix.empty() ? "" : "the " + prefix.substr(0, prefix.size() - 1) + " role's ";
    const long long gpus = degree_cell(role_field(row, prefix, "tp")) * degree_cell(adp),
                    moe = degree_cell(role_field(row, prefix, "moe_tp")) * degree_cell(role_field(row, prefix, "moe_ep"));
    if (moe != gpus)
        return role + "MoE layout does not cover attention's GPUs (" + layout + "; a source anomaly: the MoE layers run on the same GPUs)";
    return role + "MoE layers laid out apart from attention (" + layout +
           "): experts narrower than attention's tensor parallelism beside attention data parallelism are not modelled";
}

Measure inference_measure(const CsvRow& row) {
    if (fixed_concurrency(row)) return {InferMeasure::fixed_concurrency, "measured_tpot_s", "tpot_s"};
    if (field(row, "measured_e2e_latency_s").empty()) {
        if (!field(row, "measured_ttft_s").empty()) return {InferMeasure::ttft, "measured_ttft_s", "ttft_s"};
        if (!field(row, "measured_output_tokens_per_s").empty()) {
            if (lists(field(row, "unpublished_fields"), "batch"))
                return {InferMeasure::max_throughput, "measured_output_tokens_per_s", "output_tokens_per_s_per_gpu_max"};
            return {InferMeasure::static_throughput, "measured_output_tokens_per_s", "output_tokens_per_s_per_gpu"};
        }
    }
    return {InferMeasure::e2e, "measured_e2e_latency_s", "e2e_latency_s"};
}

// The columns row_scenario reads, and the measured value a row is compared on.
bool is_needed(const CsvRow& row, const std::string& column) {
    static const char* const kInputs[] = {
        "model",  "layers", "hidden",  "heads", "kv_heads", "ffn_hidden", "ffn_act", "vocab",
        "seq_len", "system", "tp",     "pp",    "dp",       "cp",         "mbs",     "sequence_parallel",
        "zero",   "recompute", "gbs",  "precision", "batch", "input_len", "output_len"};
    if (column == "vp") return field(row, "pp") != "1";             // interleaving needs a pipeline
    // A disaggregated deployment is its roles' layouts and worker counts.
    if (disaggregated(row)) {
        if (column == "tp" || column == "pp") return false;
        for (const char* role : {"prefill_", "decode_"})
            for (const char* c : {"workers", "tp", "pp"})
                if (column == std::string(role) + c) return true;
    }
    // A serving row without its batch is compared at the best concurrency (infer --max-throughput).
    if (column == "batch" && !is_training_row(row))
        return inference_measure(row).kind != InferMeasure::max_throughput && !fixed_concurrency(row);
    if (fixed_concurrency(row) && (column == "concurrency" || column == "measured_ttft_s" || column == "serving_mode"))
        return true;
    if (column == "ep" || column == "moe_experts" || column == "moe_top_k") return !field(row, "moe_experts").empty();
    if (column == (is_training_row(row) ? "measured_step_time_s" : inference_measure(row).column)) return true;
    for (const char* c : kInputs)
        if (column == c) return true;
    return false;
}

// What a row's notes say the model does not represent (never guessed around: the row is skipped).
// MLA's dimensions and sliding windows are not columns of the set: such rows run only where the
// data-set context gives the model's attention (`model.attention_kind` and `model.mla`, or
// `model.sliding_window`, with their source).
std::optional<std::string> unmodelled(const CsvRow& row, const std::vector<std::string>& model_overrides) {
    const std::string& notes = field(row, "notes");
    const bool attention_given = std::any_of(model_overrides.begin(), model_overrides.end(),
                                             [](const std::string& o) { return o.rfind("model.attention_kind=", 0) == 0; });
    if (notes.find("MLA attention") != std::string::npos && !attention_given)
        return "multi-head latent attention (MLA, per the notes) without its dimensions (the data-set context gives none)";
    const bool window_given = std::any_of(model_overrides.begin(), model_overrides.end(),
                                          [](const std::string& o) { return o.rfind("model.sliding_window=", 0) == 0; });
    if (notes.find("sliding-window") != std::string::npos && !window_given)
        return "sliding-window attention (per the notes) without its window (the data-set context gives none)";
    if (notes.find("EP degree not stated") != std::string::npos && field(row, "tp") != "1")
        return "the expert-parallel degree is unpublished (per the notes)";
    if (disaggregated(row)) {
        for (const char* role : {"prefill_", "decode_"})
            if (auto why = moe_layout_unmodelled(row, role)) return why;
        return std::nullopt;
    }
    if (fixed_concurrency(row)) return moe_layout_unmodelled(row, "");
    if (!field(row, "throughput_scope").empty() && field(row, "throughput_scope") != "per_gpu")
        return "throughput_scope " + printable(field(row, "throughput_scope")) + ": only per_gpu throughput is compared";
    return std::nullopt;
}

}  // namespace

namespace {

// The scenario path a data set's input column gives (empty: none of a context's business).
std::string column_path(const std::string& column) {
    static const std::pair<const char*, const char*> kPaths[] = {
        {"layers", "model.layers"},       {"hidden", "model.hidden"},     {"heads", "model.heads"},
        {"kv_heads", "model.kv_heads"},   {"ffn_hidden", "model.ffn_hidden"}, {"ffn_act", "model.ffn_act"},
        {"vocab", "model.vocab"},         {"seq_len", "model.seq_len"},   {"tp", "parallel.tp"},
        {"pp", "parallel.pp"},            {"dp", "parallel.dp"},          {"cp", "parallel.cp"},
        {"ep", "parallel.ep"},            {"vp", "parallel.vp"},          {"mbs", "parallel.microbatch"},
        {"zero", "parallel.zero"},        {"recompute", "parallel.recompute"}, {"sequence_parallel", "parallel.sequence_parallel"},
        {"gbs", "training.global_batch"}, {"precision", "training.precision"}};
    for (const auto& [c, path] : kPaths)
        if (column == c) return path;
    return "";
}

// Whether the overrides set `column`'s field: by its own path, or (an architecture column) by
// naming a model preset, which gives every one of them.
bool overridden(const std::vector<std::string>& overrides, const std::string& column) {
    const std::string path = column_path(column);
    if (path.empty()) return false;
    for (const std::string& o : overrides) {
        const std::string key = o.substr(0, o.find('='));
        if (key == path || (key == "model.preset" && path.starts_with("model."))) return true;
    }
    return false;
}

}  // namespace

std::string unpublished_inputs(const CsvRow& row, const std::vector<std::string>& overrides) {
    std::string missing;
    for (const std::string& f : split_list(field(row, "unpublished_fields"))) {
        if (!field(row, f.c_str()).empty() || !is_needed(row, f) || overridden(overrides, f)) continue;
        missing += (missing.empty() ? "" : ", ") + f;
    }
    return missing.empty() ? "" : printable(missing, 200) + " unpublished";
}

Expected<Json> row_scenario(const CsvRow& row) {
    Json model = Json::object();
    const std::string& name = field(row, "model");
    if (is_model_preset(name)) {
        model["preset"] = name;
    } else {
        model["name"] = name;
    }
    if (!is_model_preset(name) && !field(row, "ffn_act").empty()) {
        // The family's conventions, read off its FFN (a row without it takes its model from its
        // context: a preset).
        const bool gpt = field(row, "ffn_act") != "swiglu";
        model["norm"] = gpt ? "layernorm" : "rmsnorm";
        model["bias"] = gpt;
        model["position"] = gpt ? "learned" : "rope";
        model["tied_embeddings"] = gpt;
        model["dropout"] = gpt;
    }
    for (const char* k : {"layers", "hidden", "heads", "kv_heads", "ffn_hidden", "ffn_act", "vocab", "seq_len"})
        copy(model, k, row, k);
    // Inference never reads the model's context window beyond the row's own tokens: a set that
    // does not state it gets input_len + output_len (changes no prediction).
    if (field(row, "seq_len").empty() && !is_training_row(row)) {
        const Json in = cell(field(row, "input_len")), out = cell(field(row, "output_len"));
        if (in.is_number_integer() && out.is_number_integer() && in.get<int64_t>() < (int64_t{1} << 40) &&
            out.get<int64_t>() < (int64_t{1} << 40))
            model["seq_len"] = in.get<int64_t>() + out.get<int64_t>();
    }
    if (!field(row, "moe_experts").empty()) {
        model["moe"] = Json{{"experts", cell(field(row, "moe_experts"))}, {"top_k", cell(field(row, "moe_top_k"))},
                            {"expert_ffn_hidden", cell(field(row, "ffn_hidden"))}};
    } else {
        // Sets without MoE columns state the experts in their notes ("MoE 8 experts top-2";
        // ffn_hidden is then per expert).
        if (const auto moe = moe_from_notes(field(row, "notes")))
            model["moe"] = Json{{"experts", cell(moe->first)}, {"top_k", cell(moe->second)},
                                {"expert_ffn_hidden", cell(field(row, "ffn_hidden"))}};
    }
    Json doc = {{"model", model}, {"system", {{"preset", field(row, "system")}}}};
    Json par = Json::object();
    for (const char* k : {"tp", "pp", "dp", "cp", "ep", "vp", "sequence_parallel", "zero", "recompute"}) copy(par, k, row, k);
    copy(par, "microbatch", row, "mbs");
    // TensorRT-LLM's DEP-N (attention data-parallel + expert parallel N; the set's tp column holds
    // the GPU count N, per its notes): N attention replicas of tp 1 whose experts (if any) are
    // split N ways.
    if (attention_data_parallel(row) && par.contains("tp")) {
        par["dp"] = par["tp"];
        if (model.contains("moe")) par["ep"] = par["tp"];
        par["tp"] = 1;
    }
    // A serving benchmark's attention data-parallel ranks are replicas of tp GPUs (blank: one);
    // its experts split moe_ep ways across them.
    auto serving_layout = [&](Json& layout, const std::string& prefix) {
        copy(layout, "dp", row, prefix + "attention_dp");
        if (model.contains("moe")) copy(layout, "ep", row, prefix + "moe_ep");
        if (model.contains("moe") && experts_own_split(row, prefix)) copy(layout, "etp", row, prefix + "moe_tp");
    };
    if (fixed_concurrency(row)) {
        serving_layout(par, "");
        // The requests in flight on each attention-DP rank (per_rank_batch) are the measured
        // batch. Where the clients are a whole multiple K > 1 of per_rank_batch x attention_dp,
        // they were spread over K instances of the layout (a router in front of K copies): one
        // instance cannot hold them (Qwen3-32B, 448 clients of 15,500 tokens on 2 GB200: 0.75 s
        // to first token measured, 900 GB of cache needed).
        const long long per_rank = degree_cell(field(row, "per_rank_batch")), adp = degree_cell(field(row, "attention_dp")),
                        clients = degree_cell(field(row, "concurrency"));
        if (!field(row, "per_rank_batch").empty() && per_rank > 0 && adp > 0 && clients > per_rank * adp &&
            clients % (per_rank * adp) == 0)
            par["dp"] = clients / per_rank;
    }
    // A training row's expert parallelism wider than dp x cp exists only as Megatron-Core's MoE
    // parallel folding, experts whole on their GPUs (expert_tensor_parallel_size 1): with experts
    // split tp ways, ep x tp would outnumber a stage's tp x dp x cp GPUs. Megatron-Bridge's Qwen3
    // MoE recipes set it (scripts/performance/configs/qwen: expert_tensor_parallel_size=1).
    if (is_training_row(row) && model.contains("moe")) {
        const long long tp = degree_cell(field(row, "tp")), dp = degree_cell(field(row, "dp")), cp = degree_cell(field(row, "cp")),
                        ep = degree_cell(field(row, "ep"));
        if (tp > 1 && dp > 0 && cp > 0 && ep > dp * cp) par["etp"] = 1;
    }
    doc["parallel"] = par;
    // A disaggregated deployment: each role's workers and layout.
    if (disaggregated(row)) {
        Json d = Json::object();
        for (const char* role : {"prefill", "decode"}) {
            const std::string prefix = std::string(role) + "_";
            Json layout = Json::object();
            for (const char* k : {"workers", "tp", "pp"}) copy(layout, k, row, prefix + k);
            serving_layout(layout, prefix);
            d[role] = layout;
        }
        doc["disaggregated"] = d;
    }
    if (is_training_row(row)) {
        Json tr = Json::object();
        copy(tr, "global_batch", row, "gbs");
        copy(tr, "precision", row, "precision");
        doc["training"] = tr;
    } else {
        Json inf = Json::object();
        for (const char* k : {"batch", "input_len", "output_len", "precision"}) copy(inf, k, row, k);
        // The engine as each backend runs by default (presets/engines/: its scheduler, cache
        // reservation and CUDA graphs, with their sources).
        if (fixed_concurrency(row))
            for (const std::string& engine : engine_preset_names())
                if (field(row, "backend") == engine) inf["engine"] = engine;
        // NVFP4 (TensorRT-LLM): fp4 E2M1 values with a shared scale per 16; costed as fp4.
        if (field(row, "precision") == "nvfp4") inf["precision"] = "fp4";
        doc["inference"] = inf;
    }
    return doc;
}

namespace {

// The list of "PATH=VALUE" strings under "overrides" (absent: empty); `path` names it in errors.
std::vector<std::string> override_list(const Json& obj, const std::string& path) {
    const char* key = "overrides";
    std::vector<std::string> out;
    if (!obj.contains(key)) return out;
    const Json& list = obj[key];
    if (!list.is_array()) fail(path, show(list), "a list of \"PATH=VALUE\" strings");
    for (const Json& o : list) {
        if (!o.is_string()) fail(path, show(o), "a \"PATH=VALUE\" string");
        out.push_back(o.get<std::string>());
    }
    return out;
}

}  // namespace

Expected<DatasetContext> parse_context(const std::string& dataset, std::string_view json_text, const std::string& origin) {
    const std::string where = origin.empty() ? "the context of " + printable(dataset) : origin;
    Expected<DatasetContext> c = capture([&] {
        Expected<Json> j = parse_scenario_text(json_text, where);
        if (!j) throw InputException(j.error());
        // Fields are named after the file: "data-set context file "x.context.json" overrides".
        ObjectReader r(j.value(), "");
        DatasetContext ctx;
        ctx.dataset = dataset;
        ctx.reason = r.text("reason", std::nullopt);
        ctx.overrides = override_list(j.value(), "overrides");
        r.ignore("overrides");
        r.ignore("models");
        r.ignore("rows");
        r.finish();
        if (j.value().contains("rows")) {
            const Json& rows = j.value()["rows"];
            if (!rows.is_array()) fail("rows", show(rows), "a list of {where, overrides, reason}");
            for (size_t i = 0; i < rows.size(); ++i) {
                const std::string path = fmt::format("rows[{}]", i);
                if (!rows[i].is_object()) fail(path, show(rows[i]), "an object {where, overrides, reason}");
                ObjectReader e(rows[i], path);
                RowContext rc;
                const Json* where = rows[i].contains("where") ? &rows[i]["where"] : nullptr;
                if (!where || !where->is_object() || where->empty())
                    fail(path + ".where", where ? show(*where) : "nothing", "an object of column -> cell text, at least one");
                for (const auto& [column, text] : where->items()) {
                    if (!text.is_string()) fail(path + ".where." + printable(column), show(text), "the cell's text (a string)");
                    rc.where[column] = text.get<std::string>();
                }
                e.ignore("where");
                rc.overrides = override_list(rows[i], path + ".overrides");
                e.ignore("overrides");
                rc.reason = e.text("reason", std::nullopt);
                e.finish();
                ctx.rows.push_back(std::move(rc));
            }
        }
        if (j.value().contains("models")) {
            const Json& models = j.value()["models"];
            if (!models.is_object()) fail("models", show(models), "an object: model name -> {overrides, unsupported, reason}");
            for (const auto& [name, entry] : models.items()) {
                const std::string path = "models." + printable(name);
                if (!entry.is_object()) fail(path, show(entry), "an object {overrides, unsupported, reason}");
                ObjectReader m(entry, path);
                ModelContext mc;
                mc.overrides = override_list(entry, path + ".overrides");
                m.ignore("overrides");
                mc.unsupported = m.text("unsupported", std::string());
                mc.reason = m.text("reason", std::nullopt);
                m.finish();
                ctx.models[name] = std::move(mc);
            }
        }
        return ctx;
    });
    if (c) return c;
    InputError e = c.error();
    if (e.path != where) e.path = where + " " + e.path;
    return e;
}

std::string context_path_for(const std::string& dataset_path) {
    return std::filesystem::path(dataset_path).replace_extension(".context.json").string();
}

namespace {

// A training row's measured step beside the predictions under recompute none, selective and full
// (`build` makes the scenario with extra overrides); nothing when a mode cannot be built.
template <typename Build>
void bracket(ValidationReport& rep, const CsvRow& row, const std::string& dataset, const Build& build) {
    const double measured = std::strtod(field(row, "measured_step_time_s").c_str(), nullptr);
    if (!(measured > 0) || !std::isfinite(measured)) return;
    BracketCase b;
    b.id = field(row, "id");
    b.dataset = dataset;
    b.measured = measured;
    b.layout = layout_of(row);
    const char* const modes[] = {"none", "selective", "full"};
    for (size_t i = 0; i < 3; ++i) {
        Expected<Scenario> s = build(row, {std::string("parallel.recompute=") + modes[i]});
        if (!s) return;
        b.family = accelerator_family(s->system.accel.name);
        b.precision = std::string(to_string(s->training.precision));
        b.predicted[i] = evaluate_training({s->model, s->system, s->training}, s->parallel).step_time_s;
    }
    rep.bracketed.push_back(std::move(b));
}

}  // namespace

Expected<ValidationReport> run_validation(const std::string& dataset, std::string_view csv_text,
                                          std::optional<std::string_view> context_json,
                                          const std::vector<std::string>& user_sets, const std::string& context_origin,
                                          const std::string& scenario_of) {
    ValidationReport rep;
    DatasetContext ctx;
    if (context_json) {
        Expected<DatasetContext> c = parse_context(dataset, *context_json, context_origin);
        if (!c) return c.error();
        ctx = c.value();
        rep.contexts.push_back(c.value());
    }
    // The scenario a row describes with the context's overrides, `extra` and the user's (the
    // user's word last), or why it cannot be built (the row is then skipped with that reason;
    // what the model cannot represent comes with no path).
    // The overrides a row's scenario takes: the set's, then its model's, then its rows', then
    // `extra`, then the user's; or why the row cannot be modelled.
    auto overrides_for = [&](const CsvRow& row, const std::vector<std::string>& extra) -> Expected<std::vector<std::string>> {
        const auto model_ctx = ctx.models.find(field(row, "model"));
        const std::vector<std::string> no_overrides;
        const std::vector<std::string>& model_overrides = model_ctx != ctx.models.end() ? model_ctx->second.overrides : no_overrides;
        if (const auto why = is_training_row(row) ? std::nullopt : unmodelled(row, model_overrides)) return InputError{"", "", *why};
        std::vector<std::string> sets = ctx.overrides;
        if (model_ctx != ctx.models.end()) {
            if (!model_ctx->second.unsupported.empty()) return InputError{"", "", model_ctx->second.unsupported};
            sets.insert(sets.end(), model_overrides.begin(), model_overrides.end());
        }
        for (const RowContext& rc : ctx.rows)
            if (std::all_of(rc.where.begin(), rc.where.end(), [&](const auto& w) { return field(row, w.first.c_str()) == w.second; }))
                sets.insert(sets.end(), rc.overrides.begin(), rc.overrides.end());
        sets.insert(sets.end(), extra.begin(), extra.end());
        sets.insert(sets.end(), user_sets.begin(), user_sets.end());
        return sets;
    };
    auto document = [&](const CsvRow& row, const std::vector<std::string>& extra) -> Expected<Json> {
        Expected<std::vector<std::string>> sets = overrides_for(row, extra);
        if (!sets) return sets.error();
        Expected<Json> doc = row_scenario(row);
        if (doc) doc = apply_overrides(std::move(doc).value(), sets.value());
        return doc;
    };
    auto build = [&](const CsvRow& row, const std::vector<std::string>& extra) -> Expected<Scenario> {
        Expected<Json> doc = document(row, extra);
        if (!doc) return doc.error();
        return build_scenario(doc.value(), is_training_row(row) ? Purpose::train : Purpose::infer);
    };
    Expected<size_t> rows = for_each_csv_row(csv_text, kDatasetLimits, printable(dataset), [&](const CsvRow& row) {
        const std::string& id = field(row, "id");
        if (!scenario_of.empty() && id != scenario_of) return;
        const std::string shown_id = printable(id, 200);  // a skipped row is one line of text, whatever its cell holds
        const bool training = is_training_row(row);
        const Expected<std::vector<std::string>> given = overrides_for(row, {});
        if (const std::string missing = unpublished_inputs(row, given ? given.value() : std::vector<std::string>{}); !missing.empty()) {
            rep.skipped.push_back(shown_id + ": " + missing);
            if (training && missing == "recompute unpublished" && scenario_of.empty()) bracket(rep, row, dataset, build);
            return;
        }
        Expected<Scenario> s = build(row, {});
        if (!s) {
            // A reason of the context's (no field to name) stands alone.
            rep.skipped.push_back(shown_id + ": " + (s.error().path.empty() ? s.error().allowed : s.error().message()));
            return;
        }
        if (!scenario_of.empty()) {
            rep.scenario = document(row, {}).value();  // built above
            const InferMeasure kind = inference_measure(row).kind;
            rep.scenario_command = training                                   ? "train SCENARIO.json"
                                   : kind == InferMeasure::fixed_concurrency ? "infer SCENARIO.json --concurrency " + field(row, "concurrency")
                                   : kind == InferMeasure::max_throughput    ? "infer SCENARIO.json --max-throughput"
                                                                             : "infer SCENARIO.json";
            return;
        }
        const Measure how = inference_measure(row);
        const char* column = training ? "measured_step_time_s" : how.column;
        const double measured = std::strtod(field(row, column).c_str(), nullptr);
        if (!(measured > 0) || !std::isfinite(measured)) {  // 1e400 reads as infinity: no error can be computed
            rep.skipped.push_back(shown_id + ": " + column + " is not a positive finite number");
            return;
        }
        ValidationCase c;
        c.id = id;
        c.dataset = dataset;
        c.source = field(row, "source");
        c.measured = measured;
        c.family = accelerator_family(s->system.accel.name);
        c.precision = std::string(to_string(training ? s->training.precision : s->inference.precision));
        if (training) {
            c.metric = "step_time_s";
            const TrainResult t = evaluate_training({s->model, s->system, s->training}, s->parallel);
            c.predicted = t.step_time_s;
            const TrainBreakdown& b = t.breakdown;
            const double comm = b.tp_comm_exposed_s + b.pp_comm_exposed_s + b.dp_comm_exposed_s + b.cp_comm_exposed_s +
                                b.ep_comm_exposed_s;
            c.comm_share = t.step_time_s > 0 ? comm / t.step_time_s : 0.0;
            c.layout = layout_of(row);
        } else {
            const InferContext ic{s->model, s->system, s->inference};
            c.metric = how.metric;
            c.layout = fmt::format("tp{} pp{} batch {} {} in/{} out", s->parallel.tp, s->parallel.pp, s->inference.batch,
                                   s->inference.input_len, s->inference.output_len);
            if (how.kind == InferMeasure::fixed_concurrency) {
                // The benchmark: `concurrency` clients in a closed loop over the replicas
                // (benchmark_requests: 10 requests each), means compared.
                const double ttft_measured = std::strtod(field(row, "measured_ttft_s").c_str(), nullptr);
                if (!(ttft_measured > 0) || !std::isfinite(ttft_measured)) {
                    rep.skipped.push_back(shown_id + ": measured_ttft_s is not a positive finite number");
                    return;
                }
                const int64_t clients = std::strtoll(field(row, "concurrency").c_str(), nullptr, 10);
                if (clients < 1 || clients > (int64_t{1} << 20)) {
                    rep.skipped.push_back(shown_id + ": concurrency is not a whole number from 1 to 1048576");
                    return;
                }
                c.group = printable(id.substr(0, id.find('-')), 40) + " " + printable(field(row, "backend"), 20) + " " +
                          printable(field(row, "serving_mode"), 20);
                const int64_t requests = benchmark_requests(s->inference, clients);
                BenchmarkResult b;
                if (const std::optional<DisaggDeployment>& d = s->disaggregated) {
                    if (const std::vector<const char*> full = roles_without_room(ic, *d); !full.empty()) {
                        rep.skipped.push_back(shown_id + ": not even one request fits in the memory of a " + full.front() + " GPU");
                        return;
                    }
                    b = run_disaggregated_benchmark(ic, *d, clients, 0, requests, 1).result;
                    c.layout = fmt::format("prefill {} x {}, decode {} x {}, concurrency {} {} in/{} out", d->prefill.workers,
                                           layout_brief(d->prefill.layout), d->decode.workers, layout_brief(d->decode.layout), clients,
                                           s->inference.input_len, s->inference.output_len);
                } else {
                    const int64_t slots = max_concurrency_that_fits(ic, s->parallel);
                    if (slots == 0) {
                        rep.skipped.push_back(shown_id + ": not even one request fits in memory");
                        return;
                    }
                    b = run_benchmark(ic, s->parallel, slots, s->inference.prefill_schedule, clients, 0, requests, 1);
                    c.layout = fmt::format("{} concurrency {} {} in/{} out", layout_brief(s->parallel), clients, s->inference.input_len,
                                           s->inference.output_len);
                }
                ValidationCase ttft = c;
                ttft.metric = "ttft_s";
                ttft.measured = ttft_measured;
                ttft.predicted = b.ttft_s.mean;
                ttft.error = (ttft.predicted - ttft.measured) / ttft.measured;
                rep.cases.push_back(std::move(ttft));
                c.predicted = b.tpot_s.mean;
            } else if (how.kind == InferMeasure::max_throughput) {
                const std::optional<ServingPoint> best = max_throughput(ic, s->parallel);
                if (!best) {
                    rep.skipped.push_back(shown_id + ": not even one request fits in memory");
                    return;
                }
                c.predicted = best->output_tokens_per_s_per_gpu;
                c.layout = fmt::format("tp{} pp{} concurrency {} {} in/{} out", s->parallel.tp, s->parallel.pp,
                                       best->concurrency, s->inference.input_len, s->inference.output_len);
            } else {
                const InferResult r = evaluate_inference(ic, s->parallel);
                c.predicted = how.kind == InferMeasure::ttft                ? r.ttft_s
                              : how.kind == InferMeasure::static_throughput ? r.output_tokens_per_s / static_cast<double>(r.gpus)
                                                                            : r.e2e_latency_s;
            }
        }
        c.error = (c.predicted - c.measured) / c.measured;
        rep.cases.push_back(std::move(c));
    });
    if (!rows) return rows.error();
    rep.rows = rows.value();
    return rep;
}

ValidationReport run_builtin_validation(const std::vector<std::string>& sets, const std::string& scenario_of) {
    ValidationReport all;
    for (const auto& f : embedded_validation_sets()) {
        const std::string name(f.name);
        std::optional<std::string_view> context;
        for (const auto& ctx : embedded_validation_contexts())
            if (ctx.name == name + ".context") context = ctx.text;
        Expected<ValidationReport> r =
            run_validation(name, f.text, context, sets, "built-in data-set context data/validation/" + name + ".context.json", scenario_of);
        if (!r) {
            all.skipped.push_back(name + ": " + r.error().message());
            continue;
        }
        all.cases.insert(all.cases.end(), r->cases.begin(), r->cases.end());
        all.skipped.insert(all.skipped.end(), r->skipped.begin(), r->skipped.end());
        all.bracketed.insert(all.bracketed.end(), r->bracketed.begin(), r->bracketed.end());
        all.contexts.insert(all.contexts.end(), r->contexts.begin(), r->contexts.end());
        all.rows += r->rows;
        if (r->scenario) {
            all.scenario = r->scenario;
            all.scenario_command = r->scenario_command;
        }
    }
    return all;
}

std::string accelerator_family(const std::string& accelerator_name) {
    static const std::pair<const char*, const char*> kFamilies[] = {
        {"A100", "Ampere"}, {"H100", "Hopper"}, {"H200", "Hopper"}, {"B200", "Blackwell"},
        {"B300", "Blackwell Ultra"}, {"MI300X", "CDNA3"}};
    std::string chip = accelerator_name.substr(0, accelerator_name.find('-'));
    for (const auto& [prefix, family] : kFamilies)
        if (chip == prefix) return family;
    return chip;
}

std::map<std::string, std::string> builtin_row_analysis() {
    std::map<std::string, std::string> out;
    for (const auto& f : embedded_validation_analysis()) {
        const Json j = Json::parse(f.text, nullptr, false);
        if (!j.is_object() || !j.contains("rows") || !j["rows"].is_object()) continue;
        for (const auto& [id, text] : j["rows"].items())
            if (text.is_string()) out[id] = text.get<std::string>();
    }
    return out;
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
