#include "cli/common.hpp"

#include <iostream>

namespace sm::cli {

int bad_input(const InputError& e) {
    std::cerr << "scalemodel: error: " << e.message() << "\n";
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

Expected<Scenario> load(const std::string& path, const std::vector<std::string>& sets, Purpose purpose) {
    Expected<Json> doc = path.empty() ? parse_scenario_text(default_scenario(), "default scenario") : read_scenario_file(path);
    if (!doc) return doc.error();
    Expected<Json> over = apply_overrides(std::move(doc).value(), sets);
    if (!over) return over.error();
    return build_scenario(over.value(), purpose);
}

int emit_json(const Json& j) {
    const std::string bad = find_non_finite(j);
    if (!bad.empty()) {
        std::cerr << "scalemodel: internal error: " << bad << " is not a finite number; please report this input\n";
        return kExitInternal;
    }
    std::cout << j.dump(2) << "\n";
    return kExitOk;
}

int emit_checked(const Json& j, const std::string& text) {
    const std::string bad = find_non_finite(j);
    if (!bad.empty()) {
        std::cerr << "scalemodel: internal error: " << bad << " is not a finite number; please report this input\n";
        return kExitInternal;
    }
    std::cout << text;
    return kExitOk;
}

Format parse_format(const std::string& s) {
    if (s == "json") return Format::json;
    if (s == "csv") return Format::csv;
    return Format::text;
}

}  // namespace sm::cli
