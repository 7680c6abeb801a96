#include "hardware/technology.hpp"

#include <algorithm>
#include <cmath>

namespace sm {

double tensor_rate_ratio(Precision p) {
    switch (p) {
        case Precision::tf32: return 0.5;
        case Precision::fp16:
        case Precision::bf16: return 1.0;
        case Precision::fp8:
        case Precision::int8: return 2.0;
        case Precision::fp4:
        case Precision::int4: return 4.0;
        case Precision::fp32: return 0.0;  // no fp32 tensor path: the vector units' rate
    }
    return 0.0;
}

int64_t max_hbm_stacks(const TechnologySpec& t) {
    const double edge_per_die_m = 2.0 * std::sqrt(t.die_area_m2);
    return t.dies * static_cast<int64_t>(std::floor(edge_per_die_m / t.hbm.edge_m));
}

namespace {

// The SRAM level's bandwidth at the node's clock: banks of a fixed size each deliver a fixed
// width per clock.
double sram_bw_at_node_clock(const TechnologySpec& t) {
    const double area = t.die_area_m2 * static_cast<double>(t.dies);
    return t.sram_share * area * t.sram_bytes_per_cycle_per_m2 * t.node.clock_hz;
}

}  // namespace

ChipPower fixed_power(const TechnologySpec& t) {
    ChipPower p;
    const double area = t.die_area_m2 * static_cast<double>(t.dies);
    p.static_w = t.node.leakage_w_per_m2 * area;
    // The SRAM level at the node's clock: the most it can draw (a power-limited chip runs slower).
    p.sram_w = sram_bw_at_node_clock(t) * 8.0 * t.node.sram_j_per_bit;
    const double hbm_bw = static_cast<double>(t.hbm.stacks) * t.hbm.stack_bw_bytes_per_s;
    p.hbm_w = hbm_bw * 8.0 * t.hbm.j_per_bit;
    // Both directions of every lane carry data at full load.
    p.serdes_w = 2.0 * static_cast<double>(t.scale_up_lanes) * t.scale_up_serdes.lane_bits_per_s * t.scale_up_serdes.j_per_bit;
    return p;
}

GeneratedChip generate_chip(const TechnologySpec& t) {
    GeneratedChip g;
    const double area = t.die_area_m2 * static_cast<double>(t.dies);
    const double transistors = area * t.node.logic_density_per_m2;
    g.area_limited_bf16_flop_per_s =
        t.tensor_share * transistors / t.tensor_transistors_per_flop_cycle * t.node.clock_hz;
    g.power = fixed_power(t);
    const double tensor_budget_w = std::max(0.0, t.tdp_w - g.power.total_w());
    const double area_limited_w = g.area_limited_bf16_flop_per_s * t.node.bf16_j_per_flop;
    // Over budget, the chip lowers its clock, and its voltage with it: energy per operation falls
    // with the square of the clock, so power goes with its cube and the clock that fits the
    // budget is the node's times the cube root of budget over demand (the usual DVFS rule).
    const double headroom = std::cbrt(tensor_budget_w / area_limited_w);  // the clock the budget allows, over the node's
    const double clock_factor = std::min(1.0, headroom);
    g.power_limited = headroom < 1.0;
    g.power_limited_bf16_flop_per_s = g.area_limited_bf16_flop_per_s * headroom;
    const double bf16 = g.area_limited_bf16_flop_per_s * clock_factor;
    g.power.tensor_w = area_limited_w * clock_factor * clock_factor * clock_factor;
    g.vector_flop_per_s = t.vector_share * transistors / t.vector_transistors_per_flop_cycle * t.node.clock_hz * clock_factor;
    for (Precision p : kAllPrecisions) {
        const auto i = static_cast<size_t>(p);
        if (!t.precisions[i]) continue;
        g.matrix_flop_per_s[i] = p == Precision::fp32 ? g.vector_flop_per_s : bf16 * tensor_rate_ratio(p);
    }
    g.sram_bytes = t.sram_share * area * t.node.sram_bytes_per_m2;
    g.sram_bw_bytes_per_s = sram_bw_at_node_clock(t) * clock_factor;
    const auto stacks = static_cast<double>(t.hbm.stacks);
    g.memory_bytes = stacks * t.hbm.stack_bytes;
    g.memory_bw_bytes_per_s = stacks * t.hbm.stack_bw_bytes_per_s;
    g.scale_up_bw_bytes_per_s = static_cast<double>(t.scale_up_lanes) * t.scale_up_serdes.lane_bits_per_s / 8.0;
    g.scale_out_bw_bytes_per_s = static_cast<double>(t.scale_out_lanes) * t.scale_out_serdes.lane_bits_per_s / 8.0;
    const double io_area = stacks * t.hbm.phy_area_m2 + static_cast<double>(t.scale_up_lanes) * t.scale_up_serdes.lane_area_m2;
    g.area_used_share = t.tensor_share + t.vector_share + t.sram_share + io_area / area;
    return g;
}

}  // namespace sm
