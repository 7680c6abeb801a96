#pragma once
// The one-line question's flags (io/quick_question.hpp) declared on a subcommand.
#include <CLI/CLI.hpp>

#include "io/quick_question.hpp"

namespace sm::cli {

void add_quick_flags(CLI::App* cmd, QuickFlags& q, unsigned uses);

}  // namespace sm::cli
