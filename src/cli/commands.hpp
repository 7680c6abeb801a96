#pragma once
// One function per subcommand; main() registers them with CLI11.
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "cli/common.hpp"
#include "study/cluster.hpp"

namespace sm::cli {

// Each registers its subcommand on `app` and returns a runner to call if it was chosen.
using Runner = std::function<int()>;
Runner add_train(CLI::App& app, const Io& io);
Runner add_search(CLI::App& app, const Io& io);
Runner add_infer(CLI::App& app, const Io& io);
Runner add_roofline(CLI::App& app, const Io& io);
Runner add_validate(CLI::App& app, const Io& io);
Runner add_presets(CLI::App& app, const Io& io);
Runner add_serve_search(CLI::App& app, const Io& io);
Runner add_resolve(CLI::App& app, const Io& io);
// Runs `python3 -m scalemodel plot ...` (the Python package beside the binary).
Runner add_plot(CLI::App& app, const Io& io);
// Serves the explorer (web/ and the HTTP API of explore_api.hpp) until killed.
Runner add_explore(CLI::App& app, const Io& io);
// The studies split their points over the cluster's ranks (one process without MPI).
Runner add_sweep(CLI::App& app, const Io& io, const Cluster& cluster);
Runner add_attribute(CLI::App& app, const Io& io, const Cluster& cluster);
Runner add_sensitivity(CLI::App& app, const Io& io, const Cluster& cluster);

// The whole command line: `args` without the program's name; returns the exit status. main()
// calls it with the process's streams; the Python module and the explorer with strings.
int run_command_line(const std::vector<std::string>& args, Io& io, const Cluster& cluster);

// The processes of this run: MPI's ranks in the scalemodel_mpi build, else this one. The
// returned guard finalizes MPI when destroyed; ranks other than 0 have their output silenced.
struct ClusterSession {
    Cluster cluster;
    std::shared_ptr<void> guard;
};
ClusterSession open_cluster(int& argc, char**& argv);

}  // namespace sm::cli
