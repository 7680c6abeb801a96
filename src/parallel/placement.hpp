#pragma once
// Where each communication group of a layout sits on the machine: how many of its members share
// a scale-up domain and how many domains it spans. Training, inference and the roofline all cost
// their collectives over these spans.
#include <array>
#include <cstddef>
#include <cstdint>

#include "comm/collectives.hpp"
#include "parallel/parallel_config.hpp"

namespace sm {

inline constexpr size_t kGroups = 5;  // indexed by CommGroup
inline size_t idx(CommGroup g) { return static_cast<size_t>(g); }

struct CommSpans {
    std::array<GroupSpan, kGroups> span{};
    // The replicas of one expert's weights (dp x cp / ep of them): the group its gradients reduce
    // over. Without expert parallelism, the data-parallel group.
    GroupSpan expert_dp;
};

// Ranks fill scale-up domains in order, `used` of them per domain (a job may leave GPUs of a
// domain idle): global rank r sits in domain r / used. The groups of one kind are the runs
// {a, a + stride, ..., a + stride (size - 1)} with a = o + k stride size (0 <= o < stride) over
// the `gpus` ranks. Returns the slowest of them under the hierarchical collective model
// (collective_time_s): a collective waits for its slowest group. A group's `local` is its fewest
// members in one domain: those members' NICs carry the domain's share of the cross-domain phase,
// bytes / local each. `remote` is the domains it touches. The slowest group is the one with the
// largest cross-domain bandwidth term (remote - 1) / (remote local), ties to the most domains.
// When groups straddle domains unevenly, `size` != local x remote.
GroupSpan place_group(int64_t stride, int64_t size, int64_t gpus, int64_t used);

// Ranks are laid out tp fastest, then cp, dp, pp: Megatron's order; ep is carved out of the
// dp x cp ranks next to tp.
CommSpans place_groups(const ParallelConfig& p, const SystemSpec& s);

}  // namespace sm
