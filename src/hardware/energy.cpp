#include "hardware/energy.hpp"

#include <algorithm>

#include "hardware/cost.hpp"

namespace sm {

namespace {

constexpr double kBitsPerByte = 8.0;

// Power of the SRAM level and HBM streaming and the scale-up links carrying data both ways, all
// at full bandwidth.
double io_power_w(const SystemSpec& s) {
    const EnergySpec& e = s.energy;
    return s.accel.sram_bw_bytes_per_s * kBitsPerByte * e.sram_j_per_bit +
           s.accel.memory_bw_bytes_per_s * kBitsPerByte * e.hbm_j_per_bit +
           2.0 * s.scale_up.bw_bytes_per_s * kBitsPerByte * e.scale_up_j_per_bit;
}

}  // namespace

double tensor_power_w(const SystemSpec& s) { return s.energy.tensor_j_per_flop * sustained_matrix_peak(s, Precision::bf16); }

double j_per_flop(const SystemSpec& s, Precision p) {
    const double peak = sustained_matrix_peak(s, p);
    return peak > 0 ? tensor_power_w(s) / peak : 0.0;
}

double full_load_power_w(const SystemSpec& s) {
    return s.energy.idle_w + s.energy.active_w + tensor_power_w(s) + io_power_w(s);
}

double dynamic_budget_w(const SystemSpec& s) { return s.energy.tdp_w - s.energy.idle_w - io_power_w(s); }

double tdp_calibrated_j_per_flop(const SystemSpec& s) {
    const double peak = sustained_matrix_peak(s, Precision::bf16);
    return peak > 0 ? (dynamic_budget_w(s) - s.energy.active_w) / peak : 0.0;
}

Energy energy_of(const SystemSpec& s, const Work& w, double seconds, double gpus) {
    const EnergySpec& e = s.energy;
    Energy out;
    const double busy_s = std::min(w.kernel_s, seconds * gpus);
    out.compute_j = std::min(w.tensor_s, busy_s) * tensor_power_w(s);
    out.active_j = busy_s * e.active_w;
    out.sram_j = w.sram_bytes * kBitsPerByte * e.sram_j_per_bit;
    out.hbm_j = w.hbm_bytes * kBitsPerByte * e.hbm_j_per_bit;
    // Each bit sent is received too: both ends' SerDes spend their energy per bit.
    out.scale_up_j = 2.0 * w.scale_up_bytes * kBitsPerByte * e.scale_up_j_per_bit;
    out.scale_out_j = 2.0 * w.scale_out_bytes * kBitsPerByte * e.scale_out_j_per_bit;
    out.idle_j = e.idle_w * seconds * gpus;
    return out;
}

double cost_usd(const SystemSpec& s, double seconds, double gpus) { return s.price_per_gpu_hour * gpus * seconds / 3600.0; }

}  // namespace sm
