// The MPI build (scalemodel_mpi): every rank runs the same command on its share of a study's
// points (point i on rank i % size); rank 0 gathers the results and alone prints. MPI is called
// from the main thread only (MPI_THREAD_FUNNELED): the worker threads never touch it.
#include <mpi.h>

#include <iostream>
#include <numeric>

#include "cli/commands.hpp"

namespace sm::cli {

namespace {

std::vector<std::string> gather_on_root(const std::string& mine) {
    int rank = 0, size = 1;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    // Counts are ints in MPI: a rank's share must stay under 2 GiB of serialized results.
    const int len = static_cast<int>(mine.size());
    std::vector<int> lens(rank == 0 ? static_cast<size_t>(size) : 0);
    MPI_Gather(&len, 1, MPI_INT, lens.data(), 1, MPI_INT, 0, MPI_COMM_WORLD);
    std::vector<int> displs(lens.size(), 0);
    if (rank == 0 && size > 1) std::partial_sum(lens.begin(), lens.end() - 1, displs.begin() + 1);
    std::vector<char> buf(rank == 0 ? static_cast<size_t>(std::accumulate(lens.begin(), lens.end(), 0L)) : 0);
    MPI_Gatherv(mine.data(), len, MPI_CHAR, buf.data(), lens.data(), displs.data(), MPI_CHAR, 0, MPI_COMM_WORLD);
    std::vector<std::string> out;
    for (size_t r = 0; r < lens.size(); ++r) out.emplace_back(buf.data() + displs[r], static_cast<size_t>(lens[r]));
    return out;
}

}  // namespace

ClusterSession open_cluster(int& argc, char**& argv) {
    int provided = 0;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
    ClusterSession s;
    MPI_Comm_rank(MPI_COMM_WORLD, &s.cluster.rank);
    MPI_Comm_size(MPI_COMM_WORLD, &s.cluster.size);
    MPI_Comm local;  // the ranks sharing this machine's cores
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &local);
    MPI_Comm_size(local, &s.cluster.local_size);
    MPI_Comm_free(&local);
    s.cluster.gather = gather_on_root;
    s.guard = std::shared_ptr<void>(nullptr, [](void*) { MPI_Finalize(); });
    if (s.cluster.rank != 0) {  // one voice: rank 0 prints results, errors and progress
        std::cout.setstate(std::ios::badbit);
        std::cerr.setstate(std::ios::badbit);
    }
    return s;
}

}  // namespace sm::cli
