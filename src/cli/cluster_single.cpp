// The build without MPI: one process, rank 0 of 1.
#include "cli/commands.hpp"

namespace sm::cli {

ClusterSession open_cluster(int& /*argc*/, char**& /*argv*/) { return {}; }

}  // namespace sm::cli
