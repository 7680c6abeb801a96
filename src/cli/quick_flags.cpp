#include "cli/quick_flags.hpp"

#include <vector>

#include "core/precision.hpp"

namespace sm::cli {

namespace {
constexpr int64_t kMostTokens = int64_t{1} << 50;
}  // namespace

void add_quick_flags(CLI::App* cmd, QuickFlags& q, unsigned uses) {
    q.uses = uses;
    cmd->add_option("--model", q.model, "model preset (see `scalemodel presets models`) or a Hugging Face config.json path");
    cmd->add_option("--system", q.system, "system preset (see `scalemodel presets systems`)");
    std::vector<std::string> precisions;
    for (Precision p : kAllPrecisions) precisions.emplace_back(to_string(p));
    cmd->add_option("--precision", q.precision, "matrix-math precision of the workload")->check(CLI::IsMember(precisions));
    cmd->add_option("--seq", q.seq, "sequence length (model.seq_len)")->check(CLI::Range(int64_t{1}, kMostTokens));
    if (uses & kQuickTraining)
        cmd->add_option("--batch-tokens", q.batch_tokens, "tokens per training step (training.batch_tokens; a multiple of the sequence length)")
            ->check(CLI::Range(int64_t{1}, kMostTokens));
    if (uses & kQuickInference) {
        cmd->add_option("--isl", q.isl, "input (prompt) length in tokens (inference.input_len)")->check(CLI::Range(int64_t{1}, kMostTokens));
        cmd->add_option("--osl", q.osl, "output length in tokens (inference.output_len)")->check(CLI::Range(int64_t{1}, kMostTokens));
        cmd->add_option("--engine", q.engine,
                        "serving engine whose defaults to use: trtllm, vllm or sglang (inference.engine; see `scalemodel presets engines`)");
    }
    if (uses & kQuickGpus)
        cmd->add_option("--gpus", q.gpus,
                        (uses & kQuickTraining) ? "GPUs: sets parallel.dp to fill them with the scenario's tp x pp x cp"
                                                : "GPUs: sets parallel.tp to fill them (parallel.dp when tp is given)")
            ->check(CLI::Range(int64_t{1}, int64_t{1} << 30));
}

}  // namespace sm::cli
