#include "comm/collectives.hpp"

#include <algorithm>
#include <bit>
#include <cmath>

namespace sm {

namespace {

// Bytes one GPU sends in a ring collective of `n` GPUs on a buffer of `bytes`: the numerator of
// the collective's bandwidth term.
double ring_sent_bytes(Collective c, double bytes, int64_t n) {
    const double nd = static_cast<double>(n);
    const double steps = nd - 1.0;
    switch (c) {
        case Collective::all_reduce: return 2.0 * steps / nd * bytes;
        case Collective::all_gather:
        case Collective::reduce_scatter:
        case Collective::all_to_all: return steps / nd * bytes;
        case Collective::p2p: return bytes;
        case Collective::dispatch: break;  // dispatch_cost: rows and their fanout
    }
    return 0;
}

// The latency term of a ring collective of `n` GPUs. NCCL switches to trees when a ring's
// latency chain gets long: 2 ceil(log2(n)) hops (bit_width(n - 1) is ceil(log2(n)) for n >= 2,
// without the libm call: the search's hot path).
double ring_latency_s(Collective c, int64_t n, const LinkLevel& link) {
    const double steps = static_cast<double>(n) - 1.0;
    const double tree_hops = 2.0 * static_cast<double>(std::bit_width(static_cast<uint64_t>(n - 1)));
    switch (c) {
        case Collective::all_reduce: return std::min(2.0 * steps, tree_hops) * link.latency_s;
        case Collective::all_gather:
        case Collective::reduce_scatter: return std::min(steps, tree_hops) * link.latency_s;
        case Collective::all_to_all: return steps * link.latency_s;
        case Collective::p2p: return link.latency_s;
        case Collective::dispatch: break;
    }
    return 0;
}

// One level's collective with what it sends: the bytes over the bandwidth plus the latency.
CollectiveCost on_level(Collective c, double bytes, int64_t n, const LinkLevel& link, bool scale_out) {
    CollectiveCost k;
    if (n <= 1 || bytes <= 0) return k;
    const double sent = ring_sent_bytes(c, bytes, n);
    k.time_s = sent / link.effective_bw() + ring_latency_s(c, n, link);
    (scale_out ? k.scale_out_bytes : k.scale_up_bytes) = sent;
    return k;
}

// A deduplicating token dispatch (DeepEP's normal kernels, Megatron-Core's HybridEP) over an
// expert-parallel group of `remote` domains of `local` GPUs: each of a GPU's token rows (`bytes`
// in all) goes to every other domain holding one of its `fanout` experts once, over the scale-out
// network to the GPU of the same index there, and on to every GPU holding one once, over the
// scale-up links. With experts spread evenly, a row reaches (R - 1)(1 - (1 - 1/R)^k) other
// domains and n(1 - (1 - 1/n)^k) GPUs, R of them reached by the network: the scale-up links carry
// (n - R)(1 - (1 - 1/n)^k) rows (in one domain, R = 1, every other GPU's).
CollectiveCost dispatch_cost(double bytes, double fanout, const GroupSpan& g, const SystemSpec& sys) {
    CollectiveCost k;
    if (g.size <= 1 || bytes <= 0) return k;
    const double n = static_cast<double>(g.size), r = static_cast<double>(g.remote);
    k.scale_up_bytes = bytes * (n - r) * (1.0 - std::pow(1.0 - 1.0 / n, fanout));
    k.scale_out_bytes = bytes * (r - 1.0) * (1.0 - std::pow(1.0 - 1.0 / r, fanout));  // 0 in one domain
    const double up_latency = static_cast<double>(g.local - 1) * sys.scale_up.latency_s;
    const double out_latency = (r - 1.0) * sys.scale_out.latency_s;
    k.time_s = std::max(k.scale_out_bytes / sys.scale_out.effective_bw(), k.scale_up_bytes / sys.scale_up.effective_bw()) +
               up_latency + out_latency;
    return k;
}

}  // namespace

double ring_time_s(Collective c, double bytes, int64_t n, const LinkLevel& link) {
    return on_level(c, bytes, n, link, false).time_s;
}

CollectiveCost collective_cost(Collective c, double bytes, const GroupSpan& g, const SystemSpec& sys) {
    if (c == Collective::dispatch) return dispatch_cost(bytes, 1.0, g, sys);  // one expert copy a row
    if (g.size <= 1 || bytes <= 0) return {};
    if (c == Collective::p2p)
        return g.remote > 1 ? on_level(c, bytes, 2, sys.scale_out, true) : on_level(c, bytes, 2, sys.scale_up, false);
    if (g.remote <= 1) return on_level(c, bytes, g.local, sys.scale_up, false);
    if (g.local <= 1) return on_level(c, bytes, g.remote, sys.scale_out, true);
    const double shard = bytes / static_cast<double>(g.local);
    CollectiveCost k;
    switch (c) {
        case Collective::all_reduce:  // reduce-scatter in the domain, all-reduce across, all-gather back
            k = on_level(Collective::reduce_scatter, bytes, g.local, sys.scale_up, false);
            k += on_level(Collective::all_reduce, shard, g.remote, sys.scale_out, true);
            k += on_level(Collective::all_gather, bytes, g.local, sys.scale_up, false);
            return k;
        case Collective::all_gather:
        case Collective::reduce_scatter:
            k = on_level(c, bytes, g.local, sys.scale_up, false);
            k += on_level(c, shard, g.remote, sys.scale_out, true);
            return k;
        case Collective::all_to_all: {
            // Each GPU sends (size-1)/size of its buffer: the remote share crosses the NIC.
            const double n = static_cast<double>(g.size);
            const double remote_share = (n - static_cast<double>(g.local)) / n;
            const double local_share = (static_cast<double>(g.local) - 1.0) / n;
            k.scale_out_bytes = remote_share * bytes;
            k.scale_up_bytes = local_share * bytes;
            k.time_s = std::max(k.scale_out_bytes / sys.scale_out.effective_bw(), k.scale_up_bytes / sys.scale_up.effective_bw()) +
                       (n - 1.0) * sys.scale_out.latency_s;
            return k;
        }
        case Collective::p2p:
        case Collective::dispatch:
            break;
    }
    return k;
}

CollectiveCost collective_cost(const CommOp& op, const GroupSpan& g, const SystemSpec& sys) {
    return op.kind == Collective::dispatch ? dispatch_cost(op.bytes, op.fanout, g, sys) : collective_cost(op.kind, op.bytes, g, sys);
}

double collective_time_s(Collective c, double bytes, const GroupSpan& g, const SystemSpec& sys) {
    return collective_cost(c, bytes, g, sys).time_s;
}

}  // namespace sm
