#pragma once
// Scenario files: JSON → presets resolved → `--set` overrides → strict, validated specs.
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "hardware/system_spec.hpp"
#include "inference/deployment.hpp"
#include "inference/inference_spec.hpp"
#include "io/json_reader.hpp"
#include "io/read_file.hpp"
#include "model/model_spec.hpp"
#include "parallel/parallel_config.hpp"
#include "training/training_spec.hpp"

namespace sm {

// Documented limits that keep every product finite and every input bounded.
inline constexpr size_t kMaxScenarioBytes = kMaxInputBytes;  // one cap for every input
inline constexpr int kMaxJsonDepth = 32;

struct Scenario {
    ModelSpec model;
    SystemSpec system;
    ParallelConfig parallel;
    TrainingSpec training;
    InferenceSpec inference;
    std::optional<DisaggDeployment> disaggregated;  // serving on prefill and decode pools of their own
    std::set<std::string> parallel_given;  // fields of `parallel` the user fixed (search holds them)
    Json resolved;                         // the scenario after presets and overrides
    Json full;                             // every field read, preset values and defaults filled in
    std::vector<std::string> modified;     // preset fields the scenario changed (io/provenance.hpp)
};

// What the scenario is for: which cross-field rules apply.
enum class Purpose { train, infer, search };

// Reads a scenario file (`-`: standard input), enforcing the size and depth limits.
Expected<Json> read_scenario_file(const std::string& path);
Expected<Json> parse_scenario_text(std::string_view text, const std::string& origin);
// Applies `--set a.b.c=VALUE` overrides (VALUE parsed as JSON, else taken as a string).
Expected<Json> apply_overrides(Json doc, const std::vector<std::string>& sets);
// An override's VALUE: JSON when it reads as a JSON scalar, else the text as a string.
Json override_value(const std::string& text);
// Resolves presets and builds validated specs.
Expected<Scenario> build_scenario(const Json& doc, Purpose purpose);

// Presets by name.
std::vector<std::string> model_preset_names();
std::vector<std::string> system_preset_names();
std::vector<std::string> engine_preset_names();  // serving engines' profiles (inference.engine)
Expected<Json> engine_preset_json(const std::string& name);
Expected<Json> model_preset_json(const std::string& name);
Expected<Json> system_preset_json(const std::string& name);
// Parses a preset (or any model/system object) on its own.
Expected<ModelSpec> parse_model(const Json& j, const std::string& path);
Expected<SystemSpec> parse_system(const Json& j, const std::string& path);

}  // namespace sm
