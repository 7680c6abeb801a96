// The command line as a function of its arguments and streams, shared by the binaries' main(),
// the Python module and the explorer.
#include <algorithm>
#include <ostream>

#include "cli/commands.hpp"

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
