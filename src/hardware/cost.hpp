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
    double peak_flop_per_s = 0;
    // Seconds each pass keeps the tensor array engaged: a matrix kernel's FLOP at the rate it
    // reaches (tile waste and stalls included); its costed time when compute-bound, less the
    // launch latency; memory waits and casts are not counted. 0 for element-wise ops.
    double fwd_tensor_s = 0, bwd_tensor_s = 0;
};

// Fraction of matrix peak a GEMM of this shape reaches; `operand_bytes` selects the 16-bit,
// 8-bit (1 byte) or 4-bit (half a byte) tensor-core path.
double gemm_efficiency(const GemmShape& g, const Efficiency& eff, double operand_bytes = 2);
// HBM bytes of one GEMM (or batched GEMM): A and B read, C written, at the given element sizes.
double gemm_bytes(const GemmShape& g, double a_bytes, double b_bytes, double c_bytes);
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
