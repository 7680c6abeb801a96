#include "io/field_table.hpp"

#include <array>
#include <cmath>
#include <stdexcept>
#include <string>

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
    EfficiencyField{"attention_half_tokens", &Efficiency::attention_half_tokens, 0.0, 1e9, "tokens", nullptr,
                    "keys per query row at which fused attention reaches half of attention_max (0: flat)"},
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

constexpr const char* kTableHead = "| field | unit | range | default | what it is |\n|---|---|---|---|---|\n";

using TF = SpecField<TrainingSpec>;
constexpr std::array kTraining{
    TF{"tp_overlap", &TrainingSpec::tp_overlap, nullptr, 0.0, 1.0, "1",
       "fraction of blocking tensor-parallel traffic hidden by comm-GEMM overlap (Transformer Engine userbuffers)"},
    TF{"pp_overlap", &TrainingSpec::pp_overlap, nullptr, 0.0, 1.0, "1", "fraction of pipeline send/receive hidden behind compute"},
    TF{"optimizer_state_bytes_per_param", &TrainingSpec::optimizer_state_bytes_per_param, nullptr, 0.0, 64.0, "bytes",
       "optimizer state per trained parameter (Adam: fp32 master weights and two moments)"},
    TF{"framework_overhead_bytes", &TrainingSpec::framework_overhead_bytes, nullptr, 0.0, 1e13, "bytes",
       "per GPU: CUDA context, allocator slack"},
    TF{"comm_buffer_bytes", &TrainingSpec::comm_buffer_bytes, nullptr, 0.0, 1e13, "bytes", "per GPU: NCCL and gradient-bucket buffers"},
};

using IF = SpecField<InferenceSpec>;
constexpr std::array kInference{
    IF{"batch", nullptr, &InferenceSpec::batch, 1, 1048576, "sequences", "the static batch (`infer` without --concurrency)"},
    IF{"input_len", nullptr, &InferenceSpec::input_len, 1, 16777216, "tokens", "prompt tokens per request"},
    IF{"output_len", nullptr, &InferenceSpec::output_len, 1, 16777216, "tokens", "generated tokens per request"},
    IF{"framework_overhead_bytes", &InferenceSpec::framework_overhead_bytes, nullptr, 0.0, 1e13, "bytes",
       "per GPU: CUDA context, runtime buffers"},
    IF{"prefill_chunk_tokens", nullptr, &InferenceSpec::prefill_chunk_tokens, 1, 16777216, "tokens",
       "most prompt tokens one engine step takes (chunked prefill)"},
    IF{"kv_block_tokens", nullptr, &InferenceSpec::kv_block_tokens, 1, 65536, "tokens", "tokens per paged KV-cache block"},
    IF{"kv_cache_memory_fraction", &InferenceSpec::kv_cache_memory_fraction, nullptr, 0.01, 1.0, "1",
       "of the memory left after weights and runtime, the share the KV cache takes"},
    IF{"speculative_tokens", nullptr, &InferenceSpec::speculative_tokens, 0, 64, "tokens", "draft tokens verified per step (0: none)"},
    IF{"acceptance_rate", &InferenceSpec::acceptance_rate, nullptr, 0.0, 1.0, "1", "chance each draft token is accepted"},
};

// A whole count or size below 1e12 in full (16777216, not 1.67772e+07); powers of ten and
// anything else short (1e+06).
std::string figure(double x) {
    const bool power_of_ten = x > 0 && std::pow(10.0, std::round(std::log10(x))) == x;
    return x == std::floor(x) && x >= 1e5 && x < 1e12 && !power_of_ten ? fmt::format("{:.0f}", x) : fmt::format("{:g}", x);
}

template <class Spec, size_t N>
std::string spec_table(const std::array<SpecField<Spec>, N>& fields, std::string_view section) {
    const Spec defaults{};
    std::string o = kTableHead;
    for (const SpecField<Spec>& f : fields) {
        const double def = f.real ? defaults.*f.real : static_cast<double>(defaults.*f.count);
        o += fmt::format("| `{}.{}` | {} | {} to {} | {} | {} |\n", section, f.key, f.unit, figure(f.lo), figure(f.hi), figure(def), f.doc);
    }
    return o;
}

// In the order the docs list them.
constexpr std::array kSystem{
    SystemField{"accelerator.matrix_flop_per_s.PRECISION", "FLOP/s", 1e6, 1e20, "absent: unsupported",
                "dense matrix peak of fp32, tf32, fp16, bf16, fp8, fp4, int8 or int4 (never the 2:4-sparsity figure)"},
    SystemField{"accelerator.vector_flop_per_s", "FLOP/s", 1e6, 1e20, "required", "FP32 non-tensor (CUDA-core, vector) peak"},
    SystemField{"accelerator.memory_bytes", "bytes", 1, 1e15, "required (or accelerator.hbm)", "HBM capacity per GPU"},
    SystemField{"accelerator.memory_bw_bytes_per_s", "bytes/s", 1e6, 1e16, "required (or accelerator.hbm)", "HBM bandwidth per GPU"},
    SystemField{"accelerator.sram_bytes", "bytes", 0, 1e13, "0 (not described)", "on-chip SRAM a GEMM can block in"},
    SystemField{"accelerator.sram_bw_bytes_per_s", "bytes/s", 0, 1e17, "0 (no SRAM term)", "rate the SRAM feeds the compute units"},
    SystemField{"node_gpus", "count", 1, 4096, "8", "GPUs per node (server)"},
    SystemField{"scale_up.domain_gpus", "count", 1, 16777216, "`node_gpus`", "GPUs one scale-up fabric (NVLink/NVSwitch) joins"},
    SystemField{"scale_up.gpus_used_per_domain", "count", 1, 16777216, "`scale_up.domain_gpus`",
                "ranks a job places per domain, at most domain_gpus (a GB200 NVL72 rack run as 64: spare trays)"},
    SystemField{"accelerator.hbm.stacks", "count", 1, 32, "required in accelerator.hbm", "HBM stacks of the named generation"},
    SystemField{"scale_up.bw_bytes_per_s", "bytes/s", 1e3, 1e15, "required", "per GPU per direction within the scale-up domain"},
    SystemField{"scale_up.latency_s", "s", 0, 1, "0", "per message on the scale-up fabric"},
    SystemField{"scale_out.bw_bytes_per_s", "bytes/s", 1e3, 1e15, "required", "per GPU per direction on the network (NIC line rate / 8)"},
    SystemField{"scale_out.latency_s", "s", 0, 1, "0", "per message on the network"},
    SystemField{"host_memory.capacity_bytes", "bytes", 0, 1e15, "required in host_memory", "the second memory tier's share per GPU"},
    SystemField{"host_memory.bw_bytes_per_s", "bytes/s", 1e6, 1e15, "required in host_memory", "its share of the host link per direction"},
    SystemField{"host_memory.memory_bw_bytes_per_s", "bytes/s", 1e6, 1e15, "required in host_memory",
                "its share of host memory bandwidth (a host-side Adam step streams through it)"},
    SystemField{"energy.tdp_w", "W", 1, 1e6, "required in energy", "the GPU's board power limit"},
    SystemField{"energy.idle_w", "W", 0, 1e6, "required in energy", "drawn whenever powered"},
    SystemField{"energy.sram_j_per_bit", "J/bit", 0, 1e-9, "0 (inside active_w)", "between the on-chip SRAM level and the compute units"},
    SystemField{"energy.hbm_j_per_bit", "J/bit", 0, 1e-9, "the accelerator.hbm generation's (else required)", "per bit read or written"},
    SystemField{"energy.scale_up_j_per_bit", "J/bit", 0, 1e-9, "required in energy", "per bit at each end of a scale-up link"},
    SystemField{"energy.scale_out_j_per_bit", "J/bit", 0, 1e-9, "required in energy", "per bit at each end of a NIC link (outside the TDP)"},
    SystemField{"energy.tensor_j_per_flop", "J/FLOP", 1e-16, 1e-9, "calibrated: a fully busy GPU draws its TDP",
                "the tensor array's power at the sustained bf16 peak over that peak"},
    SystemField{"energy.active_w", "W", 0, 1e6, "half the budget above idle, SRAM, HBM and links (the rest if tensor_j_per_flop is given)",
                "drawn above idle while any kernel runs, the tensor array aside"},
    SystemField{"price_per_gpu_hour", "USD", 0, 1e6, "0 (unknown: no cost keys)", "price of one GPU for an hour"},
};

}  // namespace

std::span<const EfficiencyField> efficiency_fields() { return kEfficiency; }

std::span<const char* const> decode_attention_choices() { return kDecodeAttention; }

std::span<const SystemField> system_fields() { return kSystem; }

std::span<const SpecField<TrainingSpec>> training_fields() { return kTraining; }

std::span<const SpecField<InferenceSpec>> inference_fields() { return kInference; }

const SystemField& system_field(std::string_view path) {
    for (const SystemField& f : kSystem)
        if (path == f.path) return f;
    throw std::logic_error("system field not in the table: " + std::string(path));
}

std::optional<FieldRange> system_field_range(std::string_view dotted) {
    constexpr std::string_view kSystemPrefix = "system.", kEfficiencyPrefix = "system.efficiency.",
                               kPeaksPrefix = "accelerator.matrix_flop_per_s.";
    if (!dotted.starts_with(kSystemPrefix)) return std::nullopt;
    if (dotted.starts_with(kEfficiencyPrefix)) {
        for (const EfficiencyField& f : kEfficiency)
            if (dotted.substr(kEfficiencyPrefix.size()) == f.key) return FieldRange{f.lo, f.hi};
        return std::nullopt;
    }
    std::string_view path = dotted.substr(kSystemPrefix.size());
    // Every precision's peak shares one entry.
    if (path.starts_with(kPeaksPrefix) && path.find('.', kPeaksPrefix.size()) == std::string_view::npos)
        path = "accelerator.matrix_flop_per_s.PRECISION";
    for (const SystemField& f : kSystem)
        if (path == f.path) return FieldRange{f.lo, f.hi};
    return std::nullopt;
}

std::string system_schema_markdown() {
    const Efficiency defaults{};
    std::string o = kTableHead;
    for (const SystemField& f : kSystem)
        o += fmt::format("| `system.{}` | {} | {} to {} | {} | {} |\n", f.path, f.unit, figure(f.lo), figure(f.hi), f.default_text, f.doc);
    o += "\nAnd `system.efficiency` (calibration: each preset's values and sources in docs/CALIBRATION.md):\n\n";
    o += kTableHead;
    for (const EfficiencyField& f : kEfficiency) {
        const std::string def = f.default_from ? fmt::format("`{}`", f.default_from) : fmt::format("{:g}", defaults.*f.member);
        o += fmt::format("| `system.efficiency.{}` | {} | {:g} to {:g} | {} | {} |\n", f.key, f.unit, f.lo, f.hi, def, f.doc);
    }
    o += fmt::format("| `system.efficiency.decode_attention` | choice | `{}` or `{}` | `{}` | the units decode attention runs on: a "
                     "tensor-core GQA kernel (XQA) or a CUDA-core masked MHA kernel |\n",
                     kDecodeAttention[0], kDecodeAttention[1], kDecodeAttention[0]);
    o += "\nA scenario's `training` section (besides `global_batch`, `precision`, the choices and LoRA: see "
         "SPEC.md):\n\n";
    o += spec_table(kTraining, "training");
    o += "\nIts `inference` section (besides the precisions and `kv_reservation`):\n\n";
    o += spec_table(kInference, "inference");
    return o;
}

}  // namespace sm
