// The command line as a function of its arguments and streams, shared by the binaries' main(),
// the Python module and the explorer.
#include <algorithm>
#include <ostream>

#include "cli/commands.hpp"
#include "io/json_reader.hpp"

#ifndef SCALEMODEL_VERSION
#define SCALEMODEL_VERSION "0.0.0"
#endif

namespace sm::cli {

int run_command_line(const std::vector<std::string>& args, Io& io, const Cluster& cluster) {
    CLI::App app{"scalemodel: analytical performance model of distributed transformer training and inference"};
    app.name("scalemodel");
    app.set_version_flag("--version", std::string("scalemodel ") + SCALEMODEL_VERSION);
    app.require_subcommand(1);
    std::vector<Runner> runners = {add_train(app, io),        add_search(app, io),         add_infer(app, io),
                                   add_roofline(app, io),     add_validate(app, io),       add_presets(app, io),
                                   add_serve_search(app, io), add_resolve(app, io),        add_plot(app, io),
                                   add_explore(app, io),
                                   add_sweep(app, io, cluster),
                                   add_attribute(app, io, cluster), add_sensitivity(app, io, cluster)};
    try {
        std::vector<std::string> reversed(args.rbegin(), args.rend());  // CLI11 consumes from the back
        app.parse(reversed);
    } catch (const CLI::CallForHelp& e) {
        return app.exit(e, io.out, io.err);
    } catch (const CLI::CallForAllHelp& e) {
        return app.exit(e, io.out, io.err);
    } catch (const CLI::CallForVersion& e) {
        return app.exit(e, io.out, io.err);
    } catch (const CLI::ParseError& e) {
        // A first word that names no command (`scalemodel trian x.json`): say which are.
        if (app.get_subcommands().empty() && !args.empty() && !args[0].empty() && args[0][0] != '-') {
            std::vector<std::string> names;
            for (const CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; })) names.push_back(sub->get_name());
            const std::optional<std::string> hint = did_you_mean(args[0], names);
            std::string list;
            for (const std::string& n : names) list += (list.empty() ? "" : ", ") + n;
            io.err << "scalemodel: error: command: got " << quote_input(args[0]) << "; one of " << list
                   << (hint ? " (did you mean \"" + *hint + "\"?)" : "") << "\n";
            return kExitBadInput;
        }
        io.err << "scalemodel: error: " << e.what() << " (see scalemodel --help)\n";
        return kExitBadInput;
    }
    try {
        for (auto& run : runners) {
            const int rc = run();
            if (rc >= 0) return rc;
        }
    } catch (const std::exception& e) {
        io.err << "scalemodel: internal error: " << e.what() << "\n";
        return kExitInternal;
    }
    return kExitInternal;
}

}  // namespace sm::cli
