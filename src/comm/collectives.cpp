#include "comm/collectives.hpp"

#include <algorithm>
#include <bit>
#include <cmath>

namespace sm {

double ring_time_s(Collective c, double bytes, int64_t n, const LinkLevel& link) {
    if (n <= 1 || bytes <= 0) return 0;
    const double nd = static_cast<double>(n);
    const double bw = link.effective_bw();
    const double steps = nd - 1.0;
    // NCCL switches to trees when a ring's latency chain gets long: 2 ceil(log2(n)) hops
    // (bit_width(n - 1) is ceil(log2(n)) for n >= 2, without the libm call: the search's hot path).
    const double tree_hops = 2.0 * static_cast<double>(std::bit_width(static_cast<uint64_t>(n - 1)));
    switch (c) {
        case Collective::all_reduce:
            return 2.0 * steps / nd * bytes / bw + std::min(2.0 * steps, tree_hops) * link.latency_s;
        case Collective::all_gather:
        case Collective::reduce_scatter:
            return steps / nd * bytes / bw + std::min(steps, tree_hops) * link.latency_s;
        case Collective::all_to_all:
            return steps / nd * bytes / bw + steps * link.latency_s;
        case Collective::p2p:
            return bytes / bw + link.latency_s;
    }
    return 0;
}

double collective_time_s(Collective c, double bytes, const GroupSpan& g, const SystemSpec& sys) {
    if (g.size <= 1 || bytes <= 0) return 0;
    if (c == Collective::p2p) return ring_time_s(c, bytes, 2, g.remote > 1 ? sys.scale_out : sys.scale_up);
    if (g.remote <= 1) return ring_time_s(c, bytes, g.local, sys.scale_up);
    if (g.local <= 1) return ring_time_s(c, bytes, g.remote, sys.scale_out);
    const double shard = bytes / static_cast<double>(g.local);
    switch (c) {
        case Collective::all_reduce:  // reduce-scatter in the domain, all-reduce across, all-gather back
            return ring_time_s(Collective::reduce_scatter, bytes, g.local, sys.scale_up) +
                   ring_time_s(Collective::all_reduce, shard, g.remote, sys.scale_out) +
                   ring_time_s(Collective::all_gather, bytes, g.local, sys.scale_up);
        case Collective::all_gather:
        case Collective::reduce_scatter:
            return ring_time_s(c, bytes, g.local, sys.scale_up) + ring_time_s(c, shard, g.remote, sys.scale_out);
        case Collective::all_to_all: {
            // Each GPU sends (size-1)/size of its buffer: the remote share crosses the NIC.
            const double n = static_cast<double>(g.size);
            const double remote_share = (n - static_cast<double>(g.local)) / n;
            const double local_share = (static_cast<double>(g.local) - 1.0) / n;
            return std::max(remote_share * bytes / sys.scale_out.effective_bw(),
                            local_share * bytes / sys.scale_up.effective_bw()) +
                   (n - 1.0) * sys.scale_out.latency_s;
        }
        case Collective::p2p:
            break;
    }
    return 0;
}

}  // namespace sm
