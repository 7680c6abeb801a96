#include "cli/common.hpp"

#include <ostream>
#include <sstream>

#include <fmt/format.h>

#include "io/quick_question.hpp"
#include "io/provenance.hpp"

namespace sm::cli {

int bad_input(const Io& io, const InputError& e) {
    io.err << "scalemodel: error: " << e.message() << "\n";
    return kExitBadInput;
}

const char* default_scenario() {
    return R"({
  "description": "GPT-3 175B on 64 DGX A100 80GB GPUs, Korthikanti et al. 2022 layout",
  "model": {"preset": "gpt3-175b"},
  "system": {"preset": "dgx-a100-80gb"},
  "parallel": {"tp": 8, "pp": 8, "dp": 1, "vp": 3, "sequence_parallel": true, "microbatch": 1,
               "recompute": "selective"},
  "training": {"global_batch": 64, "precision": "fp16"}
})";
}

Expected<Json> read_scenario(const Io& io, const std::string& path) {
    if (path == "-" && io.stdin_text) return parse_scenario_text(*io.stdin_text, "stdin");
    return read_scenario_file(path);
}

Expected<Scenario> load(const Io& io, const std::string& path, const std::vector<std::string>& sets, Purpose purpose,
                        const QuickFlags* quick) {
    const bool one_line = path.empty() && quick && quick->names_scenario();
    Expected<Json> doc = !path.empty() ? read_scenario(io, path)
                         : one_line    ? Expected<Json>(Json::object())
                                       : parse_scenario_text(default_scenario(), "default scenario");
    if (!doc) return doc.error();
    if (quick) doc = apply_quick_flags(std::move(doc).value(), *quick);
    Expected<Json> over = apply_overrides(std::move(doc).value(), sets);
    if (!over) return over.error();
    if (one_line)
        for (const char* flag : {"model", "system"})
            if (!over.value().contains(flag))
                return InputError{fmt::format("--{}", flag), "nothing",
                                  fmt::format("required without a SCENARIO file: a {} preset (see `scalemodel presets {}s`){}", flag, flag,
                                              std::string(flag) == "model" ? " or a Hugging Face config.json" : "")};
    if (quick) over = apply_quick_gpus(std::move(over).value(), *quick);
    if (!over) return over.error();
    return build_scenario(over.value(), purpose);
}

int emit_json(const Io& io, const Json& j) {
    const std::string bad = find_non_finite(j);
    if (!bad.empty()) {
        io.err << "scalemodel: internal error: " << bad << " is not a finite number; please report this input\n";
        return kExitInternal;
    }
    io.out << j.dump(2) << "\n";
    return kExitOk;
}

int emit_checked(const Io& io, const Json& j, const std::string& text) {
    const std::string bad = find_non_finite(j);
    if (!bad.empty()) {
        io.err << "scalemodel: internal error: " << bad << " is not a finite number; please report this input\n";
        return kExitInternal;
    }
    io.out << text;
    return kExitOk;
}

namespace {
bool given(const Scenario& s, const char* section, const char* key) {
    const auto it = s.resolved.find(section);
    return it != s.resolved.end() && it->is_object() && (key == nullptr || it->contains(key));
}
}  // namespace

void note_assumptions(const Io& io, const Scenario& s, Purpose purpose) {
    const InferenceSpec& i = s.inference;
    if (purpose == Purpose::infer && !given(s, "inference", nullptr))
        io.err << fmt::format("scalemodel: note: the scenario has no \"inference\" section; assumed batch {}, {} tokens in, "
                                 "{} out, {} (set inference.batch, input_len, output_len, precision; or --isl, --osl, --precision)\n",
                                 i.batch, i.input_len, i.output_len, to_string(i.precision));
    if (purpose != Purpose::infer && s.training.precision == Precision::fp4)
        io.err << "scalemodel: warning: fp4 training (training.precision) is not yet production practice; the model "
                     "runs every matrix product at the fp4 peak, an upper bound on what published recipes reach\n";
}

std::optional<InputError> missing_training_workload(const Scenario& s) {
    if (given(s, "training", "global_batch") || given(s, "training", "batch_tokens")) return std::nullopt;
    return InputError{"training.global_batch", "nothing",
                      "search needs the training workload: the sequences per step, e.g. \"training\": {\"global_batch\": 1536}, "
                      "or the tokens per step (--batch-tokens 4194304)"};
}

Json with_overrides(Json j, const std::vector<std::string>& sets) {
    j["overrides"] = overrides_json(sets);
    return j;
}

int emit_html(const Io& io, const Json& j, std::string_view title, const std::string& text, const std::vector<BarChart>& charts) {
    return emit_checked(io, j, html_page(title, text, charts));
}

int emit_html_of(const Io& io, std::string_view title, const std::function<int(const Io&)>& run) {
    std::ostringstream text;
    const Io buffered{text, io.err, io.err_is_terminal, io.stdin_text};
    const int rc = run(buffered);
    if (rc == kExitOk) io.out << html_page(title, text.str(), {});
    return rc;
}

std::string html_title(std::string_view command, const Scenario& s, int64_t gpus) {
    return fmt::format("scalemodel {}: {} on {} x {}", command, s.model.name, gpus, s.system.name);
}

Format parse_format(const std::string& s) {
    if (s == "json") return Format::json;
    if (s == "csv") return Format::csv;
    return Format::text;
}

}  // namespace sm::cli
