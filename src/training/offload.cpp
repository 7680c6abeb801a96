#include "training/offload.hpp"

#include <algorithm>

namespace sm {

OffloadResult offload_cost(Offload what, const OffloadInput& in, const HostMemory& host, double gpu_optimizer_s) {
    OffloadResult r;
    if (what == Offload::none) return r;
    if (host.bw_bytes_per_s <= 0 || host.memory_bw_bytes_per_s <= 0) {  // no host tier: nothing can move
        r.fits_host = false;
        return r;
    }
    if (offloads_optimizer(what)) {
        const double n = in.optimizer_params;
        r.optimizer_hbm_bytes = n * in.state_bytes_per_param;
        // The host keeps the state and a pinned copy of the gradients it updates from.
        r.host_bytes += n * (in.state_bytes_per_param + in.grad_bytes_per_param);
        const double down_s = n * in.grad_bytes_per_param / host.bw_bytes_per_s;
        const double up_s = n * in.weight_bytes_per_param / host.bw_bytes_per_s;
        // Adam on the host touches what the GPU pass would: gradients, state read and written,
        // the updated weights.
        const double update_s =
            n * (in.grad_bytes_per_param + 2.0 * in.state_bytes_per_param + in.weight_bytes_per_param) /
            host.memory_bw_bytes_per_s;
        r.link_s += down_s + up_s;
        r.exposed_s += std::max({down_s, update_s, up_s});
        r.gpu_optimizer_s_saved = gpu_optimizer_s;
    }
    if (offloads_activations(what) && in.layers > 1) {
        const double a = in.layer_activation_bytes;
        const double kept = std::min(in.layer_activations_held, 2.0);  // computing + in transit
        r.activation_hbm_bytes = std::max(0.0, in.layer_activations_held - kept) * a;
        r.host_bytes += r.activation_hbm_bytes;
        // Every layer but the last of each micro-batch goes down in forward and back in backward,
        // one direction each (the link is full duplex).
        const double moves = in.microbatches * (in.layers - 1.0);
        const double one_s = a / host.bw_bytes_per_s;
        r.link_s += 2.0 * moves * one_s;
        r.exposed_s += moves * (std::max(0.0, one_s - in.layer_fwd_s) + std::max(0.0, one_s - in.layer_bwd_s));
    }
    r.fits_host = r.host_bytes <= host.capacity_bytes;
    return r;
}

}  // namespace sm
