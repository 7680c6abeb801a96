#include <iostream>

#include "cli/commands.hpp"
#include "cli/common.hpp"

#ifndef SCALEMODEL_VERSION
#define SCALEMODEL_VERSION "0.0.0"
#endif

int main(int argc, char** argv) {
    using namespace sm::cli;
    const ClusterSession session = open_cluster(argc, argv);
    const sm::Cluster& cluster = session.cluster;
    CLI::App app{"scalemodel: analytical performance model of distributed transformer training and inference"};
    app.set_version_flag("--version", std::string("scalemodel ") + SCALEMODEL_VERSION);
    app.require_subcommand(1);
    std::vector<Runner> runners = {add_train(app), add_search(app), add_infer(app), add_roofline(app), add_validate(app), add_presets(app),
                                   add_serve_search(app), add_resolve(app), add_sweep(app, cluster), add_attribute(app, cluster),
                                   add_sensitivity(app, cluster)};
    try {
        app.parse(argc, argv);
    } catch (const CLI::CallForHelp& e) {
        return app.exit(e);
    } catch (const CLI::CallForAllHelp& e) {
        return app.exit(e);
    } catch (const CLI::CallForVersion& e) {
        return app.exit(e);
    } catch (const CLI::ParseError& e) {
        std::cerr << "scalemodel: error: " << e.what() << " (see scalemodel --help)\n";
        return kExitBadInput;
    }
    try {
        for (auto& run : runners) {
            const int rc = run();
            if (rc >= 0) return rc;
        }
    } catch (const std::exception& e) {
        std::cerr << "scalemodel: internal error: " << e.what() << "\n";
        return kExitInternal;
    }
    return kExitInternal;
}
