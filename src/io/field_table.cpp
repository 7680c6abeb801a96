#include "io/field_table.hpp"

#include <array>

#include <fmt/format.h>

namespace sm {

namespace {

// In parsing order: a field's default_from names one above it.
constexpr std::array kEfficiency{
    EfficiencyField{"gemm_max", &Efficiency::gemm_max, 1e-3, 1.0, "1", nullptr,
                    "large-GEMM fraction of the 16-bit matrix peak"},
    EfficiencyField{"gemm_half_dim", &Efficiency::gemm_half_dim, 0.0, 1e6, "elements", nullptr,
                    "an n or k (weight) dimension of this size halves a GEMM's efficiency"},
    EfficiencyField{"gemm_half_tokens", &Efficiency::gemm_half_tokens, 0.0, 1e6, "tokens", nullptr,
                    "the same for m (tokens): the kernel's M-tile granularity"},
    EfficiencyField{"gemm_max_8bit", &Efficiency::gemm_max_8bit, 1e-3, 1.0, "1", "gemm_max",
                    "large-GEMM fraction of the fp8/int8 peak"},
    EfficiencyField{"gemm_max_4bit", &Efficiency::gemm_max_4bit, 1e-3, 1.0, "1", "gemm_max_8bit",
                    "large-GEMM fraction of the fp4/int4 peak"},
    EfficiencyField{"clock_fraction", &Efficiency::clock_fraction, 0.1, 1.0, "1", nullptr,
                    "sustained clock under load over the datasheet's: scales every matrix and vector peak"},
    EfficiencyField{"attention_max", &Efficiency::attention_max, 1e-3, 1.0, "1", nullptr,
                    "fused-attention fraction of the 16-bit matrix peak (and of the vector peak on CUDA cores)"},
    EfficiencyField{"memory_max", &Efficiency::memory_max, 1e-3, 1.0, "1", nullptr, "streaming fraction of HBM bandwidth"},
    EfficiencyField{"memory_half_bytes", &Efficiency::memory_half_bytes, 0.0, 1e12, "bytes", nullptr,
                    "a transfer of this size reaches half of memory_max"},
    EfficiencyField{"kernel_latency_s", &Efficiency::kernel_latency_s, 0.0, 1.0, "s", nullptr, "launch and tail of one kernel"},
    EfficiencyField{"scale_up", &Efficiency::scale_up, 1e-3, 1.0, "1", nullptr,
                    "achieved fraction of scale-up link bandwidth (NCCL bus bandwidth)"},
    EfficiencyField{"scale_out", &Efficiency::scale_out, 1e-3, 1.0, "1", nullptr, "achieved fraction of scale-out NIC bandwidth"},
    EfficiencyField{"overlap_interference", &Efficiency::overlap_interference, 0.0, 1.0, "1", nullptr,
                    "compute slowdown per second of communication hidden behind it"},
    EfficiencyField{"host_layer_overhead_s", &Efficiency::host_layer_overhead_s, 0.0, 1.0, "s", nullptr,
                    "inference: host dispatch per layer per forward pass (0: a CUDA-graph engine)"},
    EfficiencyField{"host_collective_overhead_s", &Efficiency::host_collective_overhead_s, 0.0, 1.0, "s", nullptr,
                    "inference: host cost per collective call"},
    EfficiencyField{"host_request_overhead_s", &Efficiency::host_request_overhead_s, 0.0, 10.0, "s", nullptr,
                    "serving: a fixed host cost per request in its time to first token"},
};

constexpr std::array<const char*, 2> kDecodeAttention{"tensor_core", "cuda_core"};

}  // namespace

std::span<const EfficiencyField> efficiency_fields() { return kEfficiency; }

std::span<const char* const> decode_attention_choices() { return kDecodeAttention; }

std::string efficiency_schema_markdown() {
    const Efficiency defaults{};
    std::string o = "| field | unit | range | default | what it is |\n|---|---|---|---|---|\n";
    for (const EfficiencyField& f : kEfficiency) {
        const std::string def = f.default_from ? fmt::format("`{}`", f.default_from) : fmt::format("{:g}", defaults.*f.member);
        o += fmt::format("| `system.efficiency.{}` | {} | {:g} to {:g} | {} | {} |\n", f.key, f.unit, f.lo, f.hi, def, f.doc);
    }
    o += fmt::format("| `system.efficiency.decode_attention` | choice | `{}` or `{}` | `{}` | the units decode attention runs on: a "
                     "tensor-core GQA kernel (XQA) or a CUDA-core masked MHA kernel |\n",
                     kDecodeAttention[0], kDecodeAttention[1], kDecodeAttention[0]);
    return o;
}

}  // namespace sm
