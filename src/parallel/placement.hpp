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

inline constexpr size_t kGroups = 7;  // indexed by CommGroup
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

// The stride of each group's digit in the rank layout of p.order (tp-cp-dp-pp: tp 1, cp tp,
// dp tp x cp, pp tp x cp x dp).
struct RankStrides {
    int64_t tp = 1, cp = 1, dp = 1, pp = 1;
};
RankStrides rank_strides(const ParallelConfig& p);

// The groups a layer's own collectives use: all that costing a layer needs of the placement.
struct LayerSpans {
    GroupSpan tp, cp, ep;
    GroupSpan tp_rows;  // SUMMA's grid columns (size 1 under 1D tensor parallelism)
    bool operator==(const LayerSpans&) const = default;
};
LayerSpans place_layer_groups(const ParallelConfig& p, const SystemSpec& s);

// Under SUMMA the tp digit is itself two: the grid's columns fastest (a grid row, CommGroup::tp,
// is tp / tp_rows consecutive tp ranks), then its rows (CommGroup::tp_rows).
// Ranks are laid out in p.order, fastest digit first (Megatron's tp-cp-dp-pp by default), pp
// always outermost. Every tp, cp, dp and pp group is one strided run (place_group); the
// gradients' dp x cp group is one too when cp and dp are neighbours in the order, else runs of
// the inner one with the tp ranks between (cp-tp-dp-pp, dp-tp-cp-pp), placed exactly as well.
// Expert layers (ep, etp, expert replicas) re-cut each stage's tp x cp x dp ranks etp fastest,
// then ep, then the replicas, whatever the dense order: ep is carved out of dp x cp next to tp
// (out of tp x dp x cp when etp = 1), as Megatron-Core's expert rank generator does.
CommSpans place_groups(const ParallelConfig& p, const SystemSpec& s);

// Whether two placements cost every collective alike: a layout under either order is the same.
inline bool same_spans(const CommSpans& a, const CommSpans& b) { return a.span == b.span && a.expert_dp == b.expert_dp; }

}  // namespace sm
