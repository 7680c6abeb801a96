#pragma once
// Collective costs over the network levels a group spans: ring within a level, hierarchical
// (scale-up then scale-out) across levels, with bandwidth and latency terms.
#include <cstdint>

#include "hardware/system_spec.hpp"
#include "model/ops.hpp"

namespace sm {

// How a communication group of `size` GPUs sits on the machine: `local` members share a
// scale-up domain, `remote` domains are joined by the scale-out network (size = local x remote
// when the group splits evenly; place_group in parallel/placement.hpp says what they mean when not).
struct GroupSpan {
    int64_t size = 1;
    int64_t local = 1;
    int64_t remote = 1;
    bool operator==(const GroupSpan&) const = default;
};

// Time of one collective on a single level of `n` GPUs.
double ring_time_s(Collective c, double bytes, int64_t n, const LinkLevel& link);
// Time of one collective over a group placed as `g`.
double collective_time_s(Collective c, double bytes, const GroupSpan& g, const SystemSpec& sys);

}  // namespace sm
