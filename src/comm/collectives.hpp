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

// One collective on one GPU: its time and the bytes it sends over each level (what the energy
// model charges per bit; the time's bandwidth terms are these bytes over the levels' bandwidth).
struct CollectiveCost {
    double time_s = 0;
    double scale_up_bytes = 0, scale_out_bytes = 0;
    CollectiveCost& operator+=(const CollectiveCost& o) {
        time_s += o.time_s;
        scale_up_bytes += o.scale_up_bytes;
        scale_out_bytes += o.scale_out_bytes;
        return *this;
    }
};

// Time of one collective on a single level of `n` GPUs.
double ring_time_s(Collective c, double bytes, int64_t n, const LinkLevel& link);
// Time of one collective over a group placed as `g`.
double collective_time_s(Collective c, double bytes, const GroupSpan& g, const SystemSpec& sys);
// The same with the bytes each GPU sends on each level.
CollectiveCost collective_cost(Collective c, double bytes, const GroupSpan& g, const SystemSpec& sys);
// A block's collective as its op list states it: a dispatch with its fanout (the form above
// takes a dispatch's rows as one copy each).
CollectiveCost collective_cost(const CommOp& op, const GroupSpan& g, const SystemSpec& sys);

}  // namespace sm
