#pragma once
// One-line questions (SPEC.md): the flags that write scenario fields, so that
// `search --model llama3-70b --system dgx-h100 --gpus 512 --batch-tokens 4194304` needs no file.
// They write over the file's fields (or an empty scenario when no file is given); --set then
// writes over them. The command line declares them (cli/quick_flags.hpp).
#include <cstdint>
#include <optional>
#include <string>

#include "core/error.hpp"
#include "io/json_reader.hpp"

namespace sm {

// Which flags a command takes: the training workload's, the inference workload's, and --gpus as a
// layout degree (train and infer; search and serve-search have their own --gpus).
enum QuickUse : unsigned { kQuickTraining = 1, kQuickInference = 2, kQuickGpus = 4 };

struct QuickFlags {
    unsigned uses = 0;
    std::string model;   // a preset name, or a path to a Hugging Face config.json (model.from_hf)
    std::string system;  // a system preset
    std::string precision;
    int64_t gpus = 0;  // 0: not given
    int64_t seq = 0;
    int64_t batch_tokens = 0;
    int64_t isl = 0;
    int64_t osl = 0;
    std::string engine;  // a serving engine's profile (inference.engine)
    [[nodiscard]] bool names_scenario() const { return !model.empty() || !system.empty(); }
};

// The flags written into a scenario document, before the --set overrides.
Json apply_quick_flags(Json doc, const QuickFlags& q);
// --gpus as the one layout degree the scenario leaves out (training: dp; inference: tp, or dp when
// tp is given), after the --set overrides so that their degrees count. An error names --gpus when
// the given degrees do not divide it.
Expected<Json> apply_quick_gpus(Json doc, const QuickFlags& q);

// Commands without a built-in scenario need a file or --model and --system.
std::optional<InputError> missing_scenario(const std::string& path, const QuickFlags& q);

}  // namespace sm
