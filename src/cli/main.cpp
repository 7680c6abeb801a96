#include <unistd.h>

#include <iostream>

#include "cli/commands.hpp"

int main(int argc, char** argv) {
    using namespace sm::cli;
    const ClusterSession session = open_cluster(argc, argv);
    Io io{std::cout, std::cerr, isatty(STDERR_FILENO) != 0, std::nullopt};
    return run_command_line(std::vector<std::string>(argv + 1, argv + argc), io, session.cluster);
}
