#pragma once
// The processes a study's points are split over: one (the default), or the ranks of an MPI job
// (the scalemodel_mpi build). Points are dealt to ranks in a scrambled order (points_of_rank);
// rank 0 gathers and prints.
#include <functional>
#include <string>
#include <vector>

namespace sm {

struct Cluster {
    int rank = 0;
    int size = 1;
    int local_size = 1;  // ranks on this machine, which share its cores
    // Every rank's text on rank 0, in rank order (other ranks get an empty list). Called by every
    // rank exactly once per study.
    std::function<std::vector<std::string>(const std::string& mine)> gather = [](const std::string& mine) {
        return std::vector<std::string>{mine};
    };
};

}  // namespace sm
