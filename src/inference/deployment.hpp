#pragma once
// A disaggregated (xPyD) serving deployment: prefill and decode on GPUs of their own.
#include <cstdint>

#include "parallel/parallel_config.hpp"

namespace sm {

// `workers` instances of one layout (an instance of dp > 1 holds dp engines: its attention
// data-parallel ranks, the MoE layers spread over all of them by ep).
struct RolePool {
    ParallelConfig layout;
    int64_t workers = 1;
    [[nodiscard]] int64_t gpus() const { return workers * layout.tp * layout.pp * layout.dp; }
};

struct DisaggDeployment {
    RolePool prefill, decode;
    [[nodiscard]] int64_t gpus() const { return prefill.gpus() + decode.gpus(); }
};

}  // namespace sm
