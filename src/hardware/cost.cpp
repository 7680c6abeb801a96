#include "hardware/cost.hpp"

#include <algorithm>
#include <cmath>

namespace sm {

namespace {

double gemm_flop(const GemmShape& g) { return 2.0 * g.m * g.n * g.k * g.batch; }

// A GEMM dimension much smaller than the kernel's tile leaves tensor cores idle.
double dim_utilisation(double x, double half) { return x / (x + half); }

// FlashAttention backward: recomputes the scores and forms dQ, dK, dV: 2.5x the forward FLOP.
constexpr double kAttentionBwdFlopRatio = 2.5;

// Tensor cores accumulate in fp32 whatever the operand format (NVIDIA A100/H100/B200 whitepapers).
constexpr double kAccumulatorBytes = 4;
// The output tile one compute unit feeds from SRAM: Blackwell's two-SM 256 x 256 MMA tile, the
// largest of CUTLASS's SM80/SM90/SM100 GEMM tiles (docs/CALIBRATION.md). The largest tile gives
// the fewest SRAM bytes, so the SRAM term stays a ceiling, as a roofline's terms are.
constexpr double kCoreTileSide = 256;

}  // namespace

double gemm_efficiency(const GemmShape& g, const Efficiency& eff, double operand_bytes) {
    const double max = operand_bytes < 1 ? eff.gemm_max_4bit : operand_bytes < 2 ? eff.gemm_max_8bit : eff.gemm_max;
    return max * dim_utilisation(g.m, eff.gemm_half_tokens) * dim_utilisation(g.n, eff.gemm_half_dim) *
           dim_utilisation(g.k, eff.gemm_half_dim);
}

double memory_time_s(double bytes, const SystemSpec& sys) {
    if (bytes <= 0) return 0;
    const double eff = sys.eff.memory_max * bytes / (bytes + sys.eff.memory_half_bytes);
    return bytes / (sys.accel.memory_bw_bytes_per_s * eff);
}

double gemm_bytes(const GemmShape& g, double a_bytes, double b_bytes, double c_bytes) {
    return g.batch * (g.m * g.k * a_bytes + g.k * g.n * b_bytes + g.m * g.n * c_bytes);
}

GemmTile sram_tile(const GemmShape& g, double a_bytes, double b_bytes, double sram_bytes) {
    // Three blocks fill the SRAM: an A slab (tile_m x depth), a B slab (depth x tile_n) and the
    // output tile's fp32 accumulators, with the slab depth equal to the tile's shorter side
    // (Hong & Kung 1981; the textbook blocked matrix product, block side sqrt(M / 3)).
    const double side = std::sqrt(sram_bytes / (a_bytes + b_bytes + kAccumulatorBytes));
    if (g.m >= side && g.n >= side) return {side, side};
    // A short dimension is taken whole; what is left widens the tile along the long one.
    if (g.m <= g.n) return {g.m, std::min(g.n, (sram_bytes - a_bytes * g.m * g.m) / ((b_bytes + kAccumulatorBytes) * g.m))};
    return {std::min(g.m, (sram_bytes - b_bytes * g.n * g.n) / ((a_bytes + kAccumulatorBytes) * g.n)), g.n};
}

double tiled_gemm_bytes(const GemmShape& g, double a_bytes, double b_bytes, double c_bytes, const GemmTile& t) {
    // Each column of output tiles reads all of A, each row of them all of B.
    const double a_reads = std::max(1.0, g.n / t.n), b_reads = std::max(1.0, g.m / t.m);
    return g.batch * (g.m * g.k * a_bytes * a_reads + g.k * g.n * b_bytes * b_reads + g.m * g.n * c_bytes);
}

double gemm_hbm_bytes(const GemmShape& g, double a_bytes, double b_bytes, double c_bytes, const Accelerator& acc) {
    if (acc.sram_bytes <= 0) return gemm_bytes(g, a_bytes, b_bytes, c_bytes);
    return tiled_gemm_bytes(g, a_bytes, b_bytes, c_bytes, sram_tile(g, a_bytes, b_bytes, acc.sram_bytes));
}

double gemm_sram_bytes(const GemmShape& g, double a_bytes, double b_bytes, double c_bytes, double hbm_bytes) {
    // What comes from HBM passes through SRAM too: with an SRAM smaller than a core tile's
    // blocks, the HBM traffic is the larger.
    return std::max(hbm_bytes, tiled_gemm_bytes(g, a_bytes, b_bytes, c_bytes, {kCoreTileSide, kCoreTileSide}));
}

double sram_time_s(double bytes, const SystemSpec& sys) {
    return sys.accel.sram_bw_bytes_per_s > 0 ? bytes / sys.accel.sram_bw_bytes_per_s : 0.0;
}

namespace {

// A kernel on the roofline: the largest of its compute, HBM and SRAM terms, plus launch latency.
double roofline_s(double flop, double rate, double bytes, const SystemSpec& sys, double sram_bytes = 0) {
    return std::max({rate > 0 ? flop / rate : 0.0, memory_time_s(bytes, sys), sram_time_s(sram_bytes, sys)}) +
           sys.eff.kernel_latency_s;
}

// Attention math (fused kernels and the unfused score/value products alike) runs in the
// activation format, bf16/fp16, even under fp8 GEMMs.
double attention_peak(const SystemSpec& sys, const CostContext& ctx) {
    const Precision p = ctx.act_bytes >= 4 ? Precision::tf32 : Precision::bf16;
    return sys.accel.matrix_peak(p) ? sustained_matrix_peak(sys, p) : sustained_matrix_peak(sys, ctx.math);
}

// An op that keeps the activation format under low-precision training (Transformer Engine's
// output layer): 16-bit math on 16-bit operands and weights, no casts.
CostContext at_activation_precision(CostContext ctx) {
    if (ctx.operand_bytes >= ctx.act_bytes) return ctx;
    ctx.math = ctx.act_bytes >= 4 ? Precision::fp32 : Precision::bf16;
    ctx.operand_bytes = ctx.weight_bytes = ctx.act_bytes;
    return ctx;
}

}  // namespace

double sustained_matrix_peak(const SystemSpec& sys, Precision p) {
    return sys.accel.matrix_peak(p).value_or(0) * sys.eff.clock_fraction;
}

Quantisation quantisation(const CostContext& ctx) {
    // NVFP4 (NVIDIA, "Pretraining LLMs with NVFP4", arXiv:2509.25149): one E4M3 scale per 16
    // elements under a per-tensor fp32 scale, which needs the tensor's amax first.
    // A cast in its producer has its per-tensor scale calibrated: no amax pass in either format.
    if (ctx.operand_bytes < 1) return {!ctx.cast_in_producer, 1.0 / 16};
    if (ctx.operand_bytes >= ctx.act_bytes) return {};
    switch (ctx.fp8_recipe) {
        case Fp8Recipe::delayed: return {};
        case Fp8Recipe::current: return {!ctx.cast_in_producer, 0};
        case Fp8Recipe::mxfp8: return {false, 1.0 / 32};  // OCP MX: one E8M0 byte per 32 elements
    }
    return {};
}

double fwd_onchip_bytes(const OpCost& c) { return std::max(c.fwd_sram_bytes, c.fwd_bytes); }
double bwd_onchip_bytes(const OpCost& c) {
    return std::max(c.dgrad_sram_bytes, c.dgrad_bytes) + std::max(c.wgrad_sram_bytes, c.wgrad_bytes);
}

double gemm_time_s(const GemmShape& g, double a_bytes, double b_bytes, double c_bytes, double peak,
                   const SystemSpec& sys) {
    if (g.m <= 0 || g.n <= 0 || g.k <= 0 || g.batch <= 0) return 0;
    const double hbm = gemm_hbm_bytes(g, a_bytes, b_bytes, c_bytes, sys.accel);
    return roofline_s(gemm_flop(g), peak * gemm_efficiency(g, sys.eff, a_bytes), hbm, sys,
                      gemm_sram_bytes(g, a_bytes, b_bytes, c_bytes, hbm));
}

// Forward: read the input X[m,k], write its quantised copy (and scales); an amax pass reads X
// once more. Backward: read the gradient G[m,n], write it quantised and transposed (and
// scales), an amax pass reads G once more; the transposed X for the weight gradient is written.
double cast_bytes_fwd(const GemmShape& g, const CostContext& ctx) {
    if (ctx.operand_bytes >= ctx.act_bytes) return 0;
    const Quantisation q = quantisation(ctx);
    const double x = g.batch * g.m * g.k;
    // Cast in its producer: X is in registers already, only its quantised copy is written.
    const double read = ctx.cast_in_producer ? 0.0 : x * ctx.act_bytes;
    return read + x * (ctx.operand_bytes + q.scale_bytes) + (q.amax_pass ? x * ctx.act_bytes : 0.0);
}

double cast_bytes_bwd(const GemmShape& g, const CostContext& ctx) {
    if (ctx.operand_bytes >= ctx.act_bytes) return 0;
    const Quantisation q = quantisation(ctx);
    const double x = g.batch * g.m * g.k, grad = g.batch * g.m * g.n, copy = ctx.operand_bytes + q.scale_bytes;
    return grad * (ctx.act_bytes + 2.0 * copy) + x * copy + (q.amax_pass ? grad * ctx.act_bytes : 0.0);
}

namespace {

// A product of the SSD scan: a chunked-scan kernel at its own share of the 16-bit matrix peak
// (it runs in the activation format), against the HBM traffic the op states. Backward: the
// gradients of both operands, each the forward's work (the batched-GEMM rule).
OpCost scan_product_cost(const Op& op, const SystemSpec& sys, const CostContext& ctx) {
    OpCost c;
    const double peak = attention_peak(sys, ctx), rate = peak * sys.eff.scan_max;
    c.fwd_flop = c.fwd_model_flop = gemm_flop(op.gemm);
    c.fwd_bytes = c.dgrad_bytes = c.wgrad_bytes = op.bytes;
    c.peak_flop_per_s = peak;
    c.fwd_compute_s = c.fwd_flop / rate;
    c.fwd_memory_s = memory_time_s(op.bytes, sys);
    c.fwd_s = c.dgrad_s = c.wgrad_s = roofline_s(c.fwd_flop, rate, op.bytes, sys);
    c.dgrad_flop = c.wgrad_flop = c.fwd_flop;
    c.bwd_flop = 2.0 * c.fwd_flop;
    c.bwd_s = c.dgrad_s + c.wgrad_s;
    c.fwd_tensor_s = c.fwd_compute_s;
    c.bwd_tensor_s = 2.0 * c.fwd_compute_s;
    return c;
}

}  // namespace

OpCost cost_op(const Op& op, const SystemSpec& sys, const CostContext& given) {
    const CostContext ctx = op.keep_activation_precision ? at_activation_precision(given) : given;
    OpCost c;
    const double lat = sys.eff.kernel_latency_s;
    switch (op.kind) {
        case OpKind::gemm:
        case OpKind::batched_gemm: {
            if (op.scan) {
                c = scan_product_cost(op, sys, ctx);
                break;
            }
            const GemmShape& g = op.gemm;
            // Weight GEMMs follow the shape-dependent GEMM curve; the unfused attention's
            // score and value products (activation x activation, k = head_dim) are attention
            // kernels and run at the attention efficiency.
            const bool core = !op.weight;
            const double peak = core ? attention_peak(sys, ctx) : sustained_matrix_peak(sys, ctx.math);
            const double a = core ? ctx.act_bytes : ctx.operand_bytes;
            const double b = op.weight ? ctx.weight_bytes : a;  // weights stream in their storage format
            const double out = ctx.act_bytes;
            auto rate = [&](const GemmShape& s) {
                return peak * (core ? sys.eff.attention_max : gemm_efficiency(s, sys.eff, a));
            };
            // The time of one GEMM; its HBM and SRAM bytes into `hbm` and `sram`.
            auto time = [&](const GemmShape& s, double b_bytes, double c_bytes, double& hbm, double& sram) {
                hbm = gemm_hbm_bytes(s, a, b_bytes, c_bytes, sys.accel);
                sram = gemm_sram_bytes(s, a, b_bytes, c_bytes, hbm);
                return roofline_s(gemm_flop(s), rate(s), hbm, sys, sram);
            };
            auto engaged = [&](const GemmShape& s) {
                const double r = rate(s), f = gemm_flop(s);
                return r > 0 && f > 0 ? f / r : 0.0;
            };
            c.fwd_flop = gemm_flop(g);
            c.fwd_model_flop = c.fwd_flop;
            c.fwd_s = time(g, b, out, c.fwd_bytes, c.fwd_sram_bytes);
            c.peak_flop_per_s = peak;
            c.fwd_compute_s = c.fwd_flop / rate(g);
            c.fwd_memory_s = memory_time_s(c.fwd_bytes, sys);
            c.fwd_sram_s = sram_time_s(c.fwd_sram_bytes, sys);
            // Backward: data gradient dA[m,k] = dC[m,n] B^T, weight gradient dB[k,n] = A^T dC.
            c.bwd_flop = 2.0 * c.fwd_flop;
            const GemmShape dgrad{g.m, g.k, g.n, g.batch}, wgrad{g.k, g.n, g.m, g.batch};
            const double grad_out = op.weight ? 4.0 : out;  // weight gradients accumulate in fp32
            c.dgrad_s = time(dgrad, b, out, c.dgrad_bytes, c.dgrad_sram_bytes);
            c.wgrad_s = time(wgrad, a, grad_out, c.wgrad_bytes, c.wgrad_sram_bytes);
            c.dgrad_flop = c.wgrad_flop = c.fwd_flop;
            if (!op.input_grad) {  // the input is data: the weight gradient only (its cast stays)
                c.dgrad_s = c.dgrad_flop = c.dgrad_bytes = c.dgrad_sram_bytes = 0;
                c.bwd_flop = c.wgrad_flop;
            }
            if (op.weight && ctx.operand_bytes < ctx.act_bytes) {
                const double fwd_cast = cast_bytes_fwd(g, ctx) * op.cast_rows_share;
                // amax reduction, then cast; none when the producer casts
                const double kernels = ctx.cast_in_producer ? 0.0 : quantisation(ctx).amax_pass ? 2.0 : 1.0;
                c.fwd_s += memory_time_s(fwd_cast, sys) + kernels * lat;
                c.fwd_bytes += fwd_cast;
                c.dgrad_s += memory_time_s(cast_bytes_bwd(g, ctx), sys) + kernels * lat;
                c.dgrad_bytes += cast_bytes_bwd(g, ctx);
            }
            c.fwd_tensor_s = engaged(g);
            c.bwd_tensor_s = (op.input_grad ? engaged(dgrad) : 0.0) + engaged(wgrad);
            if (op.frozen) {  // LoRA's base weights: the activation gradient only
                c.wgrad_s = c.wgrad_flop = c.wgrad_bytes = 0;
                c.bwd_flop = c.dgrad_flop;
                c.bwd_tensor_s = engaged(dgrad);
            }
            c.bwd_s = c.dgrad_s + c.wgrad_s;
            break;
        }
        case OpKind::attention: {
            // A CUDA-core decode kernel (masked MHA) does the dot products at the vector rate.
            const bool vector = op.decode_core && sys.eff.decode_attention == DecodeAttentionUnits::cuda_core;
            const double matrix = vector ? sys.accel.vector_flop_per_s * sys.eff.clock_fraction : attention_peak(sys, ctx);
            // The kernel's loop over key blocks amortises its prologue, epilogue and causal
            // diagonal over the keys a query row spans (attention_half_tokens 0: flat).
            const double length = op.attn_kv_len > 0 ? dim_utilisation(op.attn_kv_len, sys.eff.attention_half_tokens) : 1.0;
            const double peak = matrix * (sys.eff.attention_max * length);
            const double kv_reads = vector ? op.decode_group : 1.0;
            const double bytes = op.attn_io_elems * ctx.act_bytes + kv_reads * op.attn_kv_elems * ctx.kv_bytes;
            c.fwd_flop = op.attn_flop;
            c.fwd_model_flop = op.attn_model_flop;
            c.fwd_bytes = bytes;
            c.peak_flop_per_s = matrix;
            c.fwd_compute_s = op.attn_flop / peak;
            c.fwd_memory_s = memory_time_s(bytes, sys);
            c.fwd_s = roofline_s(op.attn_flop, peak, bytes, sys);
            c.bwd_flop = kAttentionBwdFlopRatio * op.attn_flop;
            c.bwd_s = roofline_s(c.bwd_flop, peak, 2.0 * bytes, sys);
            c.dgrad_s = c.bwd_s;
            c.dgrad_flop = c.bwd_flop;
            c.dgrad_bytes = 2.0 * bytes;
            c.fwd_tensor_s = peak > 0 ? op.attn_flop / peak : 0.0;
            c.bwd_tensor_s = peak > 0 ? c.bwd_flop / peak : 0.0;
            break;
        }
        case OpKind::elementwise: {
            // Vector-unit math against HBM traffic: nearly always memory-bound.
            const double vec = sys.accel.vector_flop_per_s * sys.eff.clock_fraction;
            c.fwd_bytes = op.bytes;
            c.peak_flop_per_s = vec;
            c.fwd_compute_s = op.vector_flop / vec;
            c.fwd_memory_s = memory_time_s(op.bytes, sys);
            c.fwd_s = roofline_s(op.vector_flop, vec, op.bytes, sys);
            c.dgrad_bytes = op.bytes * op.bwd_bytes_factor;
            c.bwd_s = roofline_s(2.0 * op.vector_flop, vec, c.dgrad_bytes, sys);
            c.dgrad_s = c.bwd_s;
            break;
        }
    }
    if (op.bwd_reruns_fwd) {  // the backward kernels first recompute what the forward did not keep
        c.dgrad_s += c.fwd_s;
        c.bwd_s += c.fwd_s;
        c.dgrad_flop += c.fwd_flop;
        c.bwd_flop += c.fwd_flop;
        c.dgrad_bytes += c.fwd_bytes;
        c.dgrad_sram_bytes += c.fwd_sram_bytes;
        c.bwd_tensor_s += c.fwd_tensor_s;
    }
    return c;
}

}  // namespace sm
