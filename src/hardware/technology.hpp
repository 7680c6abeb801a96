#pragma once
// An accelerator generated from its technology: a process node, a chip budget (area, power and
// how the area is shared), an HBM generation and a SerDes generation (system.technology;
// presets/technology/, docs/PRESET_SCHEMA.md). Its output is an ordinary Accelerator and link
// bandwidths, so every command uses a generated chip unchanged.
#include <array>
#include <cstdint>

#include "core/precision.hpp"

namespace sm {

// One process node as large GPU designs realise it (presets/technology/nodes.json).
struct ProcessNode {
    double logic_density_per_m2 = 0;  // transistors per m2 of logic
    double sram_bytes_per_m2 = 0;     // SRAM macro density
    double clock_hz = 0;              // the boost clock datasheet peaks are quoted at
    double bf16_j_per_flop = 0;       // one dense bf16 tensor FLOP with its register-file operands
    double leakage_w_per_m2 = 0;      // static power per m2 of die
    double sram_j_per_bit = 0;        // one bit between the SRAM level and the compute units
};

struct HbmTech {
    int64_t stacks = 0;
    double stack_bw_bytes_per_s = 0, stack_bytes = 0;
    double j_per_bit = 0;     // per bit read or written
    double phy_area_m2 = 0;   // one stack's controller and PHY on the logic die
    double edge_m = 0;        // die edge one stack occupies
};

struct SerdesTech {
    double lane_bits_per_s = 0;  // per direction
    double j_per_bit = 0;
    double lane_area_m2 = 0;
};

struct TechnologySpec {
    ProcessNode node;
    int64_t dies = 1;
    double die_area_m2 = 0;   // per die
    double tdp_w = 0;         // the package's power
    double tensor_share = 0;  // of the die area: tensor datapaths with their operand staging
    double vector_share = 0;  // the FP32 (CUDA-core) units
    double sram_share = 0;    // on-chip SRAM (L2, shared memory, register files)
    // Microarchitecture: transistors per dense bf16 FLOP per clock in the tensor area, and per
    // FP32 FLOP per clock in the vector area (docs/PRESET_SCHEMA.md gives their derivation).
    double tensor_transistors_per_flop_cycle = 36e3;
    double vector_transistors_per_flop_cycle = 200e3;
    // SRAM bandwidth per clock per m2 of SRAM: banks of a fixed size each deliver a fixed width
    // per clock (docs/PRESET_SCHEMA.md: A100, H100 and B200 give 478, 577 and 370 B per clock per
    // mm2; the mean).
    double sram_bytes_per_cycle_per_m2 = 475e6;
    // Tensor-core formats the chip has (fp32 in matrix_flop_per_s is the vector rate).
    std::array<bool, 8> precisions{};
    HbmTech hbm;
    SerdesTech scale_up_serdes, scale_out_serdes;
    int64_t scale_up_lanes = 0;   // on the GPU die(s): per direction pairs (TX + RX)
    int64_t scale_out_lanes = 0;  // on the NIC: outside the GPU's area and TDP
};

// Dense tensor-core FLOP per clock of precision p relative to bf16: a tensor array does half as
// many tf32 operations, twice as many 8-bit and four times as many 4-bit (NVIDIA A100, H100 and
// B200 whitepapers: every generation keeps these ratios).
double tensor_rate_ratio(Precision p);

// The shoreline limit: HBM stacks the dies' long edges hold (each die's two edges of sqrt(area)).
int64_t max_hbm_stacks(const TechnologySpec& t);

// Power of the generated chip at full load, W, by where it goes.
struct ChipPower {
    double static_w = 0, tensor_w = 0, sram_w = 0, hbm_w = 0, serdes_w = 0;
    [[nodiscard]] double total_w() const { return static_w + tensor_w + sram_w + hbm_w + serdes_w; }
};

struct GeneratedChip {
    std::array<double, 8> matrix_flop_per_s{};  // 0: the format is not supported
    double vector_flop_per_s = 0;
    double area_limited_bf16_flop_per_s = 0;    // tensor area x density x the node's clock
    double power_limited_bf16_flop_per_s = 0;   // at the clock the TDP left for the tensors allows
    bool power_limited = false;                 // the power limit set the clock below the node's
    double sram_bytes = 0;
    double sram_bw_bytes_per_s = 0;             // at the generated clock
    double memory_bytes = 0, memory_bw_bytes_per_s = 0;
    double scale_up_bw_bytes_per_s = 0, scale_out_bw_bytes_per_s = 0;  // per direction
    double area_used_share = 0;  // tensor + vector + SRAM + HBM PHYs + SerDes, of the dies' area
    ChipPower power;             // at the generated rates, all units busy
};

// The chip t describes. Its inputs must be valid (read_system checks them: positive areas,
// shares that fit the die, a TDP above the static, HBM and SerDes power).
GeneratedChip generate_chip(const TechnologySpec& t);
// Power that is not the tensor array's at full load: static, HBM streaming, scale-up SerDes.
ChipPower fixed_power(const TechnologySpec& t);

}  // namespace sm
