#pragma once
// One function per subcommand; main() registers them with CLI11.
#include <CLI/CLI.hpp>

namespace sm::cli {

// Each registers its subcommand on `app` and returns a runner to call if it was chosen.
using Runner = std::function<int()>;
Runner add_train(CLI::App& app);
Runner add_search(CLI::App& app);
Runner add_infer(CLI::App& app);
Runner add_roofline(CLI::App& app);
Runner add_validate(CLI::App& app);
Runner add_presets(CLI::App& app);
Runner add_serve_search(CLI::App& app);

}  // namespace sm::cli
