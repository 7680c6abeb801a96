#pragma once
// Where each communication group of a layout sits on the machine: how many of its members share
// a scale-up domain and how many domains it spans. Training, inference and the roofline all cost
// their collectives over these spans.
#include <array>
#include <cstddef>

#include "comm/collectives.hpp"
#include "parallel/parallel_config.hpp"

namespace sm {

inline constexpr size_t kGroups = 5;  // indexed by CommGroup
inline size_t idx(CommGroup g) { return static_cast<size_t>(g); }

struct CommSpans {
    std::array<GroupSpan, kGroups> span{};
};

// Ranks are laid out tp fastest, then cp, dp (ep inside dp x cp), pp: Megatron's order.
CommSpans place_groups(const ParallelConfig& p, const SystemSpec& s);

}  // namespace sm
