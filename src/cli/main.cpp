#include <unistd.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif

#include <iostream>

#include "cli/commands.hpp"

int main(int argc, char** argv) {
    using namespace sm::cli;
#ifdef __GLIBC__
    // One malloc arena for every thread: the search's workers allocate little (a layer key's op
    // lists), while glibc reserves 64 MiB of address space per thread arena; under an
    // address-space limit (ulimit -v, tests/cli_bounds_test.sh) that reservation fails and every
    // allocation of a worker retries it (a search of 64 GPUs went from 0.15 s to 16 s).
    mallopt(M_ARENA_MAX, 1);
#endif
    const ClusterSession session = open_cluster(argc, argv);
    Io io{std::cout, std::cerr, isatty(STDERR_FILENO) != 0, std::nullopt};
    return run_command_line(std::vector<std::string>(argv + 1, argv + argc), io, session.cluster);
}
