#pragma once
// Energy of a training step or an inference batch from what it computes and moves (the model and
// its sources: docs/CALIBRATION.md, "Energy and cost"). A powered GPU draws its idle power
// throughout; while any kernel runs it draws its active power on top (SMs, register files, L2 and
// the clock tree are busy even when a kernel waits on memory or a tile runs half empty); while a
// matrix kernel keeps the tensor array engaged, the tensor power on top of that; HBM, links and
// the traffic through the on-chip SRAM level cost a fixed energy per bit. No second op loop: the
// work is summed where the ops are costed.
#include <cstdint>

#include "hardware/system_spec.hpp"

namespace sm {

// What a step (or a batch of requests) executes, summed over all its GPUs.
struct Work {
    // Seconds matrix kernels (GEMMs, attention) keep the tensor array engaged: each one's FLOP at
    // the rate it reaches (OpCost::fwd_tensor_s), tile waste and stalls included.
    double tensor_s = 0;
    // Seconds any kernel runs (matrix, element-wise, casts, the optimizer): the costed times.
    double kernel_s = 0;
    double hbm_bytes = 0;        // read and written
    double scale_up_bytes = 0;   // sent over the scale-up fabric
    double scale_out_bytes = 0;  // sent over the scale-out network
    double sram_bytes = 0;       // between the on-chip SRAM level and the compute units (fwd/bwd_onchip_bytes)
    Work& add(const Work& o, double n) {
        tensor_s += n * o.tensor_s;
        kernel_s += n * o.kernel_s;
        hbm_bytes += n * o.hbm_bytes;
        sram_bytes += n * o.sram_bytes;
        scale_up_bytes += n * o.scale_up_bytes;
        scale_out_bytes += n * o.scale_out_bytes;
        return *this;
    }
};

struct Energy {
    double compute_j = 0;  // the tensor array while engaged
    double active_j = 0;   // the rest of the chip's dynamic power while any kernel runs
    double sram_j = 0;     // the on-chip SRAM level's traffic
    double hbm_j = 0, scale_up_j = 0, scale_out_j = 0, idle_j = 0;
    [[nodiscard]] double total_j() const { return compute_j + active_j + sram_j + hbm_j + scale_up_j + scale_out_j + idle_j; }
    // What the GPUs themselves draw (the NICs' scale-out energy is outside their TDP).
    [[nodiscard]] double gpu_j() const { return total_j() - scale_out_j; }
    [[nodiscard]] Energy scaled(double k) const {
        return {k * compute_j, k * active_j, k * sram_j, k * hbm_j, k * scale_up_j, k * scale_out_j, k * idle_j};
    }
    Energy& operator+=(const Energy& o) {
        compute_j += o.compute_j;
        active_j += o.active_j;
        sram_j += o.sram_j;
        hbm_j += o.hbm_j;
        scale_up_j += o.scale_up_j;
        scale_out_j += o.scale_out_j;
        idle_j += o.idle_j;
        return *this;
    }
    friend Energy operator+(Energy a, const Energy& b) { return a += b; }
};

// The default active_w: this share of dynamic_budget_w, the tensors the rest (docs/CALIBRATION.md,
// "Energy and cost": a memory-bound kernel then draws about 60% of the TDP, a GEMM all of it).
constexpr double kDefaultActiveShare = 0.5;

// Power of the tensor array at its sustained bf16 peak (system.energy.tensor_j_per_flop x that peak).
double tensor_power_w(const SystemSpec& s);
// Energy of one FLOP of precision p at its sustained peak: the tensor power over p's peak (0 when
// the system lacks p).
double j_per_flop(const SystemSpec& s, Precision p);
// One GPU running matrix kernels throughout (idle + active + tensor power) with the SRAM level,
// HBM and the scale-up links at full bandwidth (links both ways): the most the model can charge
// it per second.
double full_load_power_w(const SystemSpec& s);
// The dynamic power left for the active and tensor terms once idle, SRAM, HBM and scale-up at
// full bandwidth are taken from the TDP.
double dynamic_budget_w(const SystemSpec& s);
// The tensor_j_per_flop at which full_load_power_w equals the TDP with the system's active_w: the
// convention that a GPU fully busy draws its board power (the default for a system that gives none).
double tdp_calibrated_j_per_flop(const SystemSpec& s);
// Energy of `w` over `seconds` on `gpus` GPUs. Busy seconds are capped at the wall seconds (a GPU
// is busy at most all the time, even where the op sum counts overlapped kernels twice), and
// tensor seconds at the busy seconds.
Energy energy_of(const SystemSpec& s, const Work& w, double seconds, double gpus);
// USD for `gpus` GPUs held `seconds` at system.price_per_gpu_hour.
double cost_usd(const SystemSpec& s, double seconds, double gpus);

}  // namespace sm
