// `scalemodel resolve`: the scenario with every preset value and default filled in, as JSON that
// reads back as the same scenario.
#include "cli/commands.hpp"
#include "cli/common.hpp"
#include "cli/quick_flags.hpp"

namespace sm::cli {

Runner add_resolve(CLI::App& app, const Io& io) {
    struct Opts {
        std::string scenario;
        std::vector<std::string> sets;
        QuickFlags quick;
    };
    auto o = std::make_shared<Opts>();
    CLI::App* cmd = app.add_subcommand("resolve", "Print the fully resolved scenario (presets and defaults filled in) as JSON");
    cmd->add_option("SCENARIO", o->scenario, "scenario JSON file, '-' for stdin (default: the built-in scenario)");
    cmd->add_option("--set", o->sets, "override a field: PATH=VALUE (repeatable)")->take_all();
    add_quick_flags(cmd, o->quick, kQuickTraining | kQuickInference);
    return [cmd, o, &io]() -> int {
        if (!cmd->parsed()) return -1;
        // Only the parser's rules: a layout is checked by the command that uses it.
        auto s = load(io, o->scenario, o->sets, Purpose::search, &o->quick);
        if (!s) return bad_input(io, s.error());
        return emit_json(io, s->full);
    };
}

}  // namespace sm::cli
