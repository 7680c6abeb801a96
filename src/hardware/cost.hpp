#pragma once
// Op costs on one accelerator: the only place a GEMM, an attention kernel or a memory-bound
// kernel is timed. Roofline with size-dependent efficiency plus a fixed per-kernel latency.
#include "hardware/system_spec.hpp"
#include "model/ops.hpp"

namespace sm {

// Number formats of one costing: math precision and the storage of each operand.
struct CostContext {
    Precision math = Precision::bf16;
    double act_bytes = 2;     // activations (GEMM A and C, element-wise ops)
    double operand_bytes = 2; // GEMM A and B as the tensor cores read them
    double weight_bytes = 2;  // weights as stored in HBM
    double kv_bytes = 2;      // K/V cache elements
    Fp8Recipe fp8_recipe = Fp8Recipe::delayed;  // scaling of 8-bit operands
    // The activation operand arrives quantised from the kernel that produced it, its scales
    // calibrated (a serving engine's fused quantisation): no cast kernel, no amax pass, the
    // quantised copy and its block scales written.
    bool cast_in_producer = false;
};

// The scaling work that quantising one GEMM operand adds to its cast, per element.
struct Quantisation {
    bool amax_pass = false;      // a separate reduction reads the tensor once more before the cast
    double scale_bytes = 0;      // block scales written per quantised element
};
Quantisation quantisation(const CostContext& ctx);
// The matrix peak of precision p as the part sustains it (datasheet peak x clock_fraction).
double sustained_matrix_peak(const SystemSpec& sys, Precision p);

struct OpCost {
    double fwd_s = 0;
    double bwd_s = 0;           // dgrad_s + wgrad_s
    double dgrad_s = 0;         // activation-gradient pass (all of backward for weightless ops)
    double wgrad_s = 0;         // weight-gradient GEMM
    double fwd_flop = 0;        // executed
    double bwd_flop = 0;
    double fwd_model_flop = 0;  // by convention (see README: MFU)
    double fwd_bytes = 0;       // HBM traffic of the forward pass
    double dgrad_flop = 0, wgrad_flop = 0;    // bwd_flop split by pass
    double dgrad_bytes = 0, wgrad_bytes = 0;  // HBM traffic of each backward pass
    // The roofline terms of the forward pass (fwd_s is the larger plus kernel latency and casts),
    // and the matrix peak the op runs against: what the roofline table shows.
    double fwd_compute_s = 0;
    double fwd_memory_s = 0;
    double fwd_sram_bytes = 0;  // GEMMs: bytes between SRAM and the compute units (0 otherwise)
    double fwd_sram_s = 0;      // those bytes at the SRAM bandwidth: the third roofline term
    double dgrad_sram_bytes = 0, wgrad_sram_bytes = 0;  // the backward GEMMs' (0 otherwise)
    double peak_flop_per_s = 0;
    // Seconds each pass keeps the tensor array engaged: a matrix kernel's FLOP at the rate it
    // reaches (tile waste and stalls included); its costed time when compute-bound, less the
    // launch latency; memory waits and casts are not counted. 0 for element-wise ops.
    double fwd_tensor_s = 0, bwd_tensor_s = 0;
};

// An output tile of a GEMM, elements along m and n.
struct GemmTile {
    double m = 0, n = 0;
};

// Fraction of matrix peak a GEMM of this shape reaches; `operand_bytes` selects the 16-bit,
// 8-bit (1 byte) or 4-bit (half a byte) tensor-core path.
double gemm_efficiency(const GemmShape& g, const Efficiency& eff, double operand_bytes = 2);
// Bytes of one GEMM (or batched GEMM) with each operand read once and C written once, at the
// given element sizes: its HBM traffic when the SRAM holds the whole problem.
double gemm_bytes(const GemmShape& g, double a_bytes, double b_bytes, double c_bytes);
// The output tile a GEMM is blocked into so that it fits `sram_bytes` of on-chip memory: an A
// slab, a B slab and the tile's fp32 accumulators (docs/CALIBRATION.md, "On-chip memory").
GemmTile sram_tile(const GemmShape& g, double a_bytes, double b_bytes, double sram_bytes);
// HBM bytes of a GEMM blocked into tiles t: A is read once per column of tiles (n / t.n times),
// B once per row of them (m / t.m times), C written once.
double tiled_gemm_bytes(const GemmShape& g, double a_bytes, double b_bytes, double c_bytes, const GemmTile& t);
// HBM bytes of a GEMM on accelerator acc: tiled in its SRAM, or gemm_bytes when it has none described.
double gemm_hbm_bytes(const GemmShape& g, double a_bytes, double b_bytes, double c_bytes, const Accelerator& acc);
// Bytes between SRAM and the compute units: the operands each core tile reads, and at least
// what comes from HBM (`hbm_bytes`).
double gemm_sram_bytes(const GemmShape& g, double a_bytes, double b_bytes, double c_bytes, double hbm_bytes);
// Bytes through the on-chip SRAM level in the forward and in the backward passes, what the energy
// model charges per bit: a GEMM's SRAM traffic, and any other kernel's HBM traffic, which streams
// through L2 once.
double fwd_onchip_bytes(const OpCost& c);
double bwd_onchip_bytes(const OpCost& c);
// Time to move `bytes` through the SRAM level (0 when the accelerator gives no SRAM bandwidth).
double sram_time_s(double bytes, const SystemSpec& sys);
// Time of one GEMM (or batched GEMM) given operand sizes in bytes per element.
double gemm_time_s(const GemmShape& g, double a_bytes, double b_bytes, double c_bytes,
                   double peak_flop_per_s, const SystemSpec& sys);
// Memory traffic of the casts around a low-precision weight GEMM (Transformer Engine quantises
// the activation entering it and, in backward, the incoming gradient plus a transposed copy),
// with the scaling recipe's amax pass and block scales (see quantisation()).
double cast_bytes_fwd(const GemmShape& g, const CostContext& ctx);
double cast_bytes_bwd(const GemmShape& g, const CostContext& ctx);
// Time of a memory-bound kernel moving `bytes` through HBM.
double memory_time_s(double bytes, const SystemSpec& sys);
// Forward and backward cost of one op.
OpCost cost_op(const Op& op, const SystemSpec& sys, const CostContext& ctx);

}  // namespace sm
