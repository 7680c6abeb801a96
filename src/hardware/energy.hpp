#pragma once
// Energy of a training step or an inference batch from what it computes and moves (the model and
// its sources: docs/CALIBRATION.md, "Energy and cost"). The tensor array draws one power at its
// sustained peak in every format; HBM and links cost a fixed energy per bit; a powered GPU draws
// its idle power throughout. No second op loop: the work is summed where the ops are costed.
#include <cstdint>

#include "hardware/system_spec.hpp"

namespace sm {

// What a step (or a batch of requests) executes, summed over all its GPUs.
struct Work {
    // Seconds the ops would keep the tensor array busy at its sustained peak: each op's FLOP over
    // the peak it runs against (so a bf16 attention inside fp8 training costs bf16 energy).
    double tensor_s = 0;
    double hbm_bytes = 0;        // read and written
    double scale_up_bytes = 0;   // sent over the scale-up fabric
    double scale_out_bytes = 0;  // sent over the scale-out network
    Work& add(const Work& o, double n) {
        tensor_s += n * o.tensor_s;
        hbm_bytes += n * o.hbm_bytes;
        scale_up_bytes += n * o.scale_up_bytes;
        scale_out_bytes += n * o.scale_out_bytes;
        return *this;
    }
};

struct Energy {
    double compute_j = 0, hbm_j = 0, scale_up_j = 0, scale_out_j = 0, idle_j = 0;
    [[nodiscard]] double total_j() const { return compute_j + hbm_j + scale_up_j + scale_out_j + idle_j; }
    // What the GPUs themselves draw (the NICs' scale-out energy is outside their TDP).
    [[nodiscard]] double gpu_j() const { return total_j() - scale_out_j; }
};

// Power of the tensor array at its sustained bf16 peak (system.energy.tensor_j_per_flop x that peak).
double tensor_power_w(const SystemSpec& s);
// Energy of one FLOP of precision p at its sustained peak: the tensor power over p's peak (0 when
// the system lacks p).
double j_per_flop(const SystemSpec& s, Precision p);
// One GPU with the tensor array at its sustained peak and HBM and the scale-up links at full
// bandwidth both ways, plus idle: the most the model can charge it per second.
double full_load_power_w(const SystemSpec& s);
// The tensor_j_per_flop at which full_load_power_w equals the TDP: the datasheet convention that
// peaks are quoted within the board power (the default for a system that gives none).
double tdp_calibrated_j_per_flop(const SystemSpec& s);
// Energy of `w` over `seconds` on `gpus` GPUs.
Energy energy_of(const SystemSpec& s, const Work& w, double seconds, double gpus);
// USD for `gpus` GPUs held `seconds` at system.price_per_gpu_hour.
double cost_usd(const SystemSpec& s, double seconds, double gpus);

}  // namespace sm
