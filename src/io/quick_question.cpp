#include "io/quick_question.hpp"

#include <vector>

#include <fmt/format.h>

namespace sm {

namespace {

// A config.json is named by its path; a preset name has neither a slash nor an extension.
bool names_a_file(const std::string& model) {
    return model.find('/') != std::string::npos || (model.size() > 5 && model.ends_with(".json"));
}

// The object at doc[key], made when absent; nullptr when the file holds something else there (the
// scenario reader then names it).
Json* section(Json& doc, const char* key) {
    if (!doc.contains(key)) doc[key] = Json::object();
    Json& s = doc[key];
    return s.is_object() ? &s : nullptr;
}

// A degree the scenario gives (a positive whole number), 0 when absent, -1 when malformed (the
// scenario reader names it).
int64_t degree(const Json& parallel, const char* key) {
    const auto it = parallel.find(key);
    if (it == parallel.end()) return 0;
    return it->is_number_integer() && it->get<int64_t>() >= 1 ? it->get<int64_t>() : -1;
}

}  // namespace

Json apply_quick_flags(Json doc, const QuickFlags& q) {
    if (!doc.is_object()) return doc;  // the reader says what is wrong with the file
    if (!q.model.empty()) doc["model"] = names_a_file(q.model) ? Json{{"from_hf", q.model}} : Json{{"preset", q.model}};
    if (!q.system.empty()) doc["system"] = Json{{"preset", q.system}};
    if (q.seq > 0)
        if (Json* m = section(doc, "model")) (*m)["seq_len"] = q.seq;
    if (q.batch_tokens > 0)
        if (Json* t = section(doc, "training")) {
            t->erase("global_batch");
            (*t)["batch_tokens"] = q.batch_tokens;
        }
    if (q.isl > 0)
        if (Json* i = section(doc, "inference")) (*i)["input_len"] = q.isl;
    if (q.osl > 0)
        if (Json* i = section(doc, "inference")) (*i)["output_len"] = q.osl;
    if (!q.engine.empty())
        if (Json* i = section(doc, "inference")) (*i)["engine"] = q.engine;
    if (!q.precision.empty()) {
        if (q.uses & kQuickTraining)
            if (Json* t = section(doc, "training")) (*t)["precision"] = q.precision;
        if (q.uses & kQuickInference)
            if (Json* i = section(doc, "inference")) (*i)["precision"] = q.precision;
    }
    return doc;
}

Expected<Json> apply_quick_gpus(Json doc, const QuickFlags& q) {
    if (q.gpus == 0 || !doc.is_object()) return doc;
    // A disaggregated deployment says its own GPUs: --gpus is the budget they must fit, checked
    // once the deployment is read (cmd_infer).
    if (doc.contains("disaggregated") && (q.uses & kQuickTraining) == 0) return doc;
    Json* p = section(doc, "parallel");
    if (!p) return doc;
    const bool training = (q.uses & kQuickTraining) != 0;
    // Training fills data parallelism; inference one engine's tensor parallelism unless tp is given.
    const char* free = training || degree(*p, "tp") != 0 ? "dp" : "tp";
    const std::vector<const char*> others = training ? std::vector<const char*>{"tp", "pp", "cp"}
                                            : std::string(free) == "dp" ? std::vector<const char*>{"tp", "pp"}
                                                                        : std::vector<const char*>{"pp", "dp"};
    int64_t product = 1;
    std::string named;
    for (const char* k : others) {
        const int64_t d = degree(*p, k);
        if (d < 0) return doc;
        if (d == 0) continue;
        product *= d;
        named += fmt::format("{}{} {}", named.empty() ? "" : " x ", k, d);
    }
    const std::string given = std::to_string(q.gpus);
    if (const int64_t held = degree(*p, free); held != 0) {
        if (held > 0 && held * product != q.gpus)
            return InputError{"--gpus", given,
                              fmt::format("parallel.{} is given too: the scenario's layout uses {} GPUs; leave parallel.{} out and "
                                          "--gpus sets it",
                                          free, held * product, free)};
        return doc;
    }
    if (q.gpus % product != 0)
        return InputError{"--gpus", given,
                          fmt::format("a multiple of {} (the scenario's {}): --gpus sets parallel.{} to fill the GPUs", product, named, free)};
    (*p)[free] = q.gpus / product;
    return doc;
}

std::optional<InputError> missing_scenario(const std::string& path, const QuickFlags& q) {
    if (!path.empty() || q.names_scenario()) return std::nullopt;
    return InputError{"SCENARIO", "nothing", "a scenario file ('-' for standard input), or --model and --system"};
}

}  // namespace sm
