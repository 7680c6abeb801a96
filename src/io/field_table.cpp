#include "io/field_table.hpp"

#include <array>
#include <cmath>
#include <cstring>
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
    EfficiencyField{"scan_max", &Efficiency::scan_max, 1e-3, 1.0, "1", nullptr,
                    "Mamba-2 SSD scan products (mamba_ssm's Triton kernels): fraction of the 16-bit matrix peak"},
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
    IF{"cuda_graph_max_batch", nullptr, &InferenceSpec::cuda_graph_max_batch, 0, 1048576, "requests",
       "decode-only steps of at most this many requests replay a CUDA graph: no host dispatch (0: none)"},
    IF{"kv_block_tokens", nullptr, &InferenceSpec::kv_block_tokens, 1, 65536, "tokens", "tokens per paged KV-cache block"},
    IF{"kv_cache_memory_fraction", &InferenceSpec::kv_cache_memory_fraction, nullptr, 0.01, 1.0, "1",
       "of the memory left after weights and runtime, the share the KV cache takes"},
    IF{"speculative_tokens", nullptr, &InferenceSpec::speculative_tokens, 0, 64, "tokens", "draft tokens verified per step (0: none)"},
    IF{"acceptance_rate", &InferenceSpec::acceptance_rate, nullptr, 0.0, 1.0, "1", "chance each draft token is accepted"},
    IF{"num_requests", nullptr, &InferenceSpec::num_requests, 0, 1048576, "requests",
       "`--max-throughput` over a finite run of this many requests queued at once (0: the steady state); with "
       "`--concurrency` / `--request-rate`, the requests the benchmark sends (0: 10 per client; 1,000 at a rate)"},
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
        o += fmt::format("| `{}.{}` | {} | {} to {} | {} | {} |\n", section, f.key, f.unit, figure(f.lo), figure(f.hi),
                         f.default_text ? f.default_text : figure(def), f.doc);
    }
    return o;
}

// In the order the docs list them.
constexpr std::array kSystem{
    NumericField{"accelerator.matrix_flop_per_s.PRECISION", "FLOP/s", 1e6, 1e20, "absent: unsupported",
                "dense matrix peak of fp32, tf32, fp16, bf16, fp8, fp4, int8 or int4 (never the 2:4-sparsity figure)"},
    NumericField{"accelerator.vector_flop_per_s", "FLOP/s", 1e6, 1e20, "required", "FP32 non-tensor (CUDA-core, vector) peak"},
    NumericField{"accelerator.memory_bytes", "bytes", 1, 1e15, "required (or accelerator.hbm)", "HBM capacity per GPU"},
    NumericField{"accelerator.memory_bw_bytes_per_s", "bytes/s", 1e6, 1e16, "required (or accelerator.hbm)", "HBM bandwidth per GPU"},
    NumericField{"accelerator.sram_bytes", "bytes", 0, 1e13, "0 (not described)", "on-chip SRAM a GEMM can block in"},
    NumericField{"accelerator.sram_bw_bytes_per_s", "bytes/s", 0, 1e17, "0 (no SRAM term)", "rate the SRAM feeds the compute units"},
    NumericField{"node_gpus", "count", 1, 4096, "8", "GPUs per node (server)"},
    NumericField{"scale_up.domain_gpus", "count", 1, 16777216, "`node_gpus`", "GPUs one scale-up fabric (NVLink/NVSwitch) joins"},
    NumericField{"scale_up.gpus_used_per_domain", "count", 1, 16777216, "`scale_up.domain_gpus`",
                "ranks a job places per domain, at most domain_gpus (a GB200 NVL72 rack run as 64: spare trays)"},
    NumericField{"accelerator.hbm.stacks", "count", 1, 32, "required in accelerator.hbm", "HBM stacks of the named generation"},
    NumericField{"scale_up.bw_bytes_per_s", "bytes/s", 1e3, 1e15, "required", "per GPU per direction within the scale-up domain"},
    NumericField{"scale_up.latency_s", "s", 0, 1, "0", "per message on the scale-up fabric"},
    NumericField{"scale_out.bw_bytes_per_s", "bytes/s", 1e3, 1e15, "required", "per GPU per direction on the network (NIC line rate / 8)"},
    NumericField{"scale_out.latency_s", "s", 0, 1, "0", "per message on the network"},
    NumericField{"host_memory.capacity_bytes", "bytes", 0, 1e15, "required in host_memory", "the second memory tier's share per GPU"},
    NumericField{"host_memory.bw_bytes_per_s", "bytes/s", 1e6, 1e15, "required in host_memory", "its share of the host link per direction"},
    NumericField{"host_memory.memory_bw_bytes_per_s", "bytes/s", 1e6, 1e15, "required in host_memory",
                "its share of host memory bandwidth (a host-side Adam step streams through it)"},
    NumericField{"energy.tdp_w", "W", 1, 1e6, "required in energy", "the GPU's board power limit"},
    NumericField{"energy.idle_w", "W", 0, 1e6, "required in energy", "drawn whenever powered"},
    NumericField{"energy.sram_j_per_bit", "J/bit", 0, 1e-9, "0 (inside active_w)", "between the on-chip SRAM level and the compute units"},
    NumericField{"energy.hbm_j_per_bit", "J/bit", 0, 1e-9, "the accelerator.hbm generation's (else required)", "per bit read or written"},
    NumericField{"energy.scale_up_j_per_bit", "J/bit", 0, 1e-9, "required in energy", "per bit at each end of a scale-up link"},
    NumericField{"energy.scale_out_j_per_bit", "J/bit", 0, 1e-9, "required in energy", "per bit at each end of a NIC link (outside the TDP)"},
    NumericField{"energy.tensor_j_per_flop", "J/FLOP", 1e-16, 1e-9, "calibrated: a fully busy GPU draws its TDP",
                "the tensor array's power at the sustained bf16 peak over that peak"},
    NumericField{"energy.active_w", "W", 0, 1e6, "half the budget above idle, SRAM, HBM and links (the rest if tensor_j_per_flop is given)",
                "drawn above idle while any kernel runs, the tensor array aside"},
    NumericField{"price_per_gpu_hour", "USD", 0, 1e6, "0 (unknown: no cost keys)", "price of one GPU for an hour"},
    NumericField{"accelerator.hbm.stack_bw_bytes_per_s", "bytes/s", 1e9, 1e14, "the generation's (presets/memory/hbm.json)",
                 "bandwidth of one stack (a part may run its pins below the standard's rate)"},
    NumericField{"accelerator.hbm.stack_bytes", "bytes", 1e8, 1e12, "the generation's", "capacity of one stack"},
    // system.technology (below: how the chip is generated from them).
    NumericField{"technology.logic_density_per_m2", "transistors/m2", 1e9, 1e16, "the node's", "logic density GPU designs realise"},
    NumericField{"technology.sram_bytes_per_m2", "bytes/m2", 1e8, 1e15, "`sram_node`'s", "SRAM bit-cell density"},
    NumericField{"technology.clock_hz", "Hz", 1e7, 1e11, "the node's", "the boost clock peaks are quoted at"},
    NumericField{"technology.bf16_j_per_flop", "J/FLOP", 1e-16, 1e-9, "the node's", "one dense bf16 tensor FLOP with its operand delivery"},
    NumericField{"technology.sram_j_per_bit", "J/bit", 0, 1e-9, "`sram_node`'s", "per bit between SRAM and the compute units"},
    NumericField{"technology.leakage_w_per_m2", "W/m2", 0, 1e7, "the node's", "static power per die area"},
    NumericField{"technology.dies", "count", 1, 64, "1", "dies per package"},
    NumericField{"technology.die_area_mm2", "mm2", 1, 50000, "required", "area of one die"},
    NumericField{"technology.tdp_w", "W", 1, 1e6, "required", "the package's power limit"},
    NumericField{"technology.tensor_share", "1", 1e-4, 1, "0.28 (B200)", "die area of tensor datapaths and their operand staging"},
    NumericField{"technology.vector_share", "1", 0, 1, "0.055 (B200)", "die area of FP32 (vector) units"},
    NumericField{"technology.sram_share", "1", 0, 1, "0.032 (B200)", "die area of SRAM"},
    NumericField{"technology.tensor_transistors_per_flop_cycle", "transistors", 1, 1e9, "36000",
                 "tensor-array transistors per dense bf16 FLOP per clock"},
    NumericField{"technology.vector_transistors_per_flop_cycle", "transistors", 1, 1e10, "200000",
                 "vector-unit transistors per FP32 FLOP per clock"},
    NumericField{"technology.sram_bytes_per_cycle_per_m2", "bytes/(clock m2)", 1e3, 1e13, "475e6",
                 "SRAM bandwidth per unit of SRAM area"},
    NumericField{"technology.hbm.stacks", "count", 1, 1024, "as many as the shoreline holds (more is an error)", "HBM stacks"},
    NumericField{"technology.hbm.stack_bw_bytes_per_s", "bytes/s", 1e9, 1e14, "the generation's", "bandwidth of one stack"},
    NumericField{"technology.hbm.stack_bytes", "bytes", 1e8, 1e12, "the generation's", "capacity of one stack"},
    NumericField{"technology.hbm.j_per_bit", "J/bit", 0, 1e-9, "the generation's", "HBM energy per bit read or written"},
    NumericField{"technology.serdes.scale_up_lanes", "lanes", 1, 100000, "36 (NVLink 4/5: 18 links x 2)", "scale-up SerDes lanes per GPU"},
    NumericField{"technology.serdes.scale_out_lanes", "lanes", 1, 100000, "4 (one 4-lane NIC)", "scale-out SerDes lanes per GPU"},
};

constexpr int64_t kMaxWidth = int64_t{1} << 22;
constexpr int64_t kMaxHeads = int64_t{1} << 16;
constexpr int64_t kMaxDim = int64_t{1} << 16;  // MLA ranks and head dimensions
// In the order the reader takes them.
constexpr std::array kModel{
    NumericField{"layers", "blocks", 1, 100000, "required", "transformer blocks"},
    NumericField{"hidden", "elements", 1, int64_t{1} << 20, "required", "model width"},
    NumericField{"heads", "heads", 1, kMaxHeads, "required", "attention (query) heads"},
    NumericField{"kv_heads", "heads", 1, kMaxHeads, "`heads`", "key/value heads (grouped-query attention); must divide heads"},
    NumericField{"ffn_hidden", "elements", 1, kMaxWidth, "4 x `hidden`", "FFN width of a dense block"},
    NumericField{"image.height", "pixels", 1, int64_t{1} << 20, "required (vit)", "image height, a multiple of patch"},
    NumericField{"image.width", "pixels", 1, int64_t{1} << 20, "required (vit)", "image width, a multiple of patch"},
    NumericField{"image.patch", "pixels", 1, 4096, "required (vit)", "side of a square patch (one token)"},
    NumericField{"image.in_channels", "channels", 1, 65536, "required (vit)", "input channels per pixel"},
    NumericField{"image.out_channels", "channels", 1, 65536, "`image.in_channels`", "channels the head predicts per pixel"},
    NumericField{"seq_len", "tokens", 1, int64_t{1} << 27, "required (vit: the image's patches)", "tokens per sequence"},
    NumericField{"vocab", "tokens", 1, int64_t{1} << 24, "required (none for vit)", "vocabulary size"},
    NumericField{"moe.experts", "experts", 1, 65536, "required in moe", "routed experts per MoE block"},
    NumericField{"moe.top_k", "experts", 1, 65536, "required in moe", "experts each token is routed to; at most experts"},
    NumericField{"moe.expert_ffn_hidden", "elements", 1, kMaxWidth, "`ffn_hidden`", "FFN width of one expert"},
    NumericField{"moe.first_dense_layers", "blocks", 0, 100000, "0", "leading dense blocks; at most layers - 1"},
    NumericField{"moe.interval", "blocks", 1, 100000, "1", "block i (past the dense ones) is MoE when i + 1 is a multiple; at most layers"},
    NumericField{"moe.shared_experts", "experts", 0, 1024, "0", "experts every token of an MoE block runs (never dispatched)"},
    NumericField{"moe.shared_expert_ffn_hidden", "elements", 1, kMaxWidth, "`moe.expert_ffn_hidden`", "FFN width of one shared expert"},
    NumericField{"moe.load_imbalance", "1", 1, 65536, "1 (balanced)",
                 "token copies the busiest expert-parallel rank receives over the mean; at most experts / top_k"},
    NumericField{"moe.latent_size", "elements", 1, kMaxWidth, "none",
                 "latent MoE (Nemotron 3 Super: 1024): routed experts run this wide, tokens projected in and out of it"},
    NumericField{"mla.q_lora_rank", "elements", 0, kMaxDim, "required in mla", "query compression rank (0: queries projected directly)"},
    NumericField{"mla.kv_lora_rank", "elements", 1, kMaxDim, "required in mla", "compressed K/V rank (what decode caches)"},
    NumericField{"mla.qk_nope_head_dim", "elements", 1, kMaxDim, "required in mla", "per-head query/key dimension without position"},
    NumericField{"mla.qk_rope_head_dim", "elements", 0, kMaxDim, "required in mla", "per-head query/key dimension with RoPE (shared key)"},
    NumericField{"mla.v_head_dim", "elements", 1, kMaxDim, "required in mla", "per-head value dimension"},
    NumericField{"head_dim", "elements", 1, kMaxDim, "`hidden` / `heads`", "per-head dimension (Gemma's 256 at hidden 3072); none with mla"},
    NumericField{"sliding_window", "tokens", 1, int64_t{1} << 27, "none (full attention)",
                 "positions a windowed layer's query attends to, itself included (gpt-oss: 128); fused attention, not mla"},
    NumericField{"mtp_layers", "blocks", 0, 16, "0",
                 "multi-token prediction depth trained (DeepSeek-V3: 1); each a block of the last layer's kind, on the last stage"},
    NumericField{"sliding_window_pattern", "layers", 0, 100000, "0",
                 "with sliding_window: layer i keeps full attention when i + 1 is a multiple (gpt-oss: 2); 0: every layer windowed"},
    NumericField{"mamba.state_dim", "elements", 1, kMaxDim, "128", "SSM state per head (Nemotron-H 56B: 256); with hybrid_pattern"},
    NumericField{"mamba.groups", "groups", 1, kMaxHeads, "8", "B/C groups shared by the heads; divides the heads"},
    NumericField{"mamba.head_dim", "elements", 1, kMaxDim, "64", "width of one Mamba head; divides expand x hidden"},
    NumericField{"mamba.expand", "1", 1, 64, "2", "d_inner = expand x hidden (unless num_heads is given)"},
    NumericField{"mamba.num_heads", "heads", 1, kMaxHeads, "expand x hidden / head_dim",
                 "Mamba heads given outright (Nemotron 3 Nano: 64): d_inner = num_heads x head_dim"},
    NumericField{"mamba.conv_kernel", "taps", 1, 64, "4", "causal depthwise convolution width"},
    NumericField{"mamba.chunk", "tokens", 1, 65536, "128", "SSD scan chunk (Megatron-Core's chunk_size); divides seq_len"},
    NumericField{"linear_attention.full_attention_interval", "layers", 1, 100000, "required in linear_attention",
                 "layer i keeps full attention when i + 1 is a multiple (Qwen3.5: 4); the others are Gated DeltaNet"},
    NumericField{"linear_attention.key_heads", "heads", 1, kMaxHeads, "16", "Gated DeltaNet query/key heads (Qwen3.5-397B: 16)"},
    NumericField{"linear_attention.value_heads", "heads", 1, kMaxHeads, "32",
                 "Gated DeltaNet value heads, each with its own state; a multiple of key_heads (Qwen3.5-397B: 64)"},
    NumericField{"linear_attention.key_head_dim", "elements", 1, kMaxDim, "128", "per-head query/key width (the state's rows)"},
    NumericField{"linear_attention.value_head_dim", "elements", 1, kMaxDim, "128", "per-head value width (the state's columns)"},
    NumericField{"linear_attention.conv_kernel", "taps", 1, 64, "4", "causal depthwise convolution width over q, k, v"},
    NumericField{"linear_attention.chunk", "tokens", 1, 65536, "64", "prompt chunk of the chunked delta rule (flash-linear-attention: 64)"},
};

constexpr double kMaxDegree = double(int64_t{1} << 20);
using PF = SpecField<ParallelConfig>;
constexpr std::array kParallel{
    PF{"tp", nullptr, &ParallelConfig::tp, 1, kMaxDegree, "ranks", "tensor-parallel degree"},
    PF{"tp_rows", nullptr, &ParallelConfig::tp_rows, 1, kMaxDegree, "ranks",
       "rows of a SUMMA grid of tp ranks (2D tensor parallelism; 1: Megatron's 1D); divides tp"},
    PF{"pp", nullptr, &ParallelConfig::pp, 1, kMaxDegree, "stages", "pipeline-parallel degree"},
    PF{"dp", nullptr, &ParallelConfig::dp, 1, kMaxDegree, "replicas", "data-parallel degree"},
    PF{"cp", nullptr, &ParallelConfig::cp, 1, kMaxDegree, "ranks", "context-parallel degree (the sequence split)"},
    PF{"ep", nullptr, &ParallelConfig::ep, 1, kMaxDegree, "ranks", "expert-parallel degree, carved out of dp x cp (x tp when etp is 1)"},
    PF{"etp", nullptr, &ParallelConfig::etp, 1, kMaxDegree, "ranks", "expert tensor parallelism (1: every expert whole on its GPU; inference: a divisor of tp, or a multiple of tp spanning the replicas)",
       "`tp`"},
    PF{"vp", nullptr, &ParallelConfig::vp, 1, 1024, "chunks", "interleaved virtual stages per GPU (needs pp > 1)"},
    PF{"microbatch", nullptr, &ParallelConfig::microbatch, 1, kMaxDegree, "sequences", "sequences per micro-batch"},
    PF{"zero", nullptr, &ParallelConfig::zero, 0, 3, "stage", "ZeRO stage: 1 shards optimizer state, 2 also gradients, 3 also weights"},
    PF{"recompute_layers", nullptr, &ParallelConfig::recompute_layers, 0, 100000, "layers",
       "with recompute full: the first this many layers of each pipeline chunk re-run, the rest kept whole (Megatron's recompute_method block, recompute_num_layers; 0: every layer)"},
    PF{"first_stage_layers", nullptr, &ParallelConfig::first_stage_layers, 0, 100000, "layers",
       "blocks on the first pipeline stage (0: an even share; Megatron's decoder_first_pipeline_num_layers)"},
    PF{"last_stage_layers", nullptr, &ParallelConfig::last_stage_layers, 0, 100000, "layers",
       "blocks on the last pipeline stage (0: an even share)"},
};

}  // namespace

std::span<const EfficiencyField> efficiency_fields() { return kEfficiency; }

std::span<const char* const> decode_attention_choices() { return kDecodeAttention; }

std::span<const NumericField> system_fields() { return kSystem; }

std::span<const NumericField> model_fields() { return kModel; }

std::span<const SpecField<ParallelConfig>> parallel_fields() { return kParallel; }

std::span<const SpecField<TrainingSpec>> training_fields() { return kTraining; }

std::span<const SpecField<InferenceSpec>> inference_fields() { return kInference; }

namespace {

const NumericField& row_of(std::span<const NumericField> table, std::string_view path, const char* section) {
    for (const NumericField& f : table)
        if (path == f.path) return f;
    throw std::logic_error(fmt::format("{} field not in the table: {}", section, path));
}

// The key a row's field has in the object that holds it.
const char* key_of(const NumericField& f) {
    const char* dot = std::strrchr(f.path, '.');
    return dot ? dot + 1 : f.path;
}

}  // namespace

const NumericField& system_field(std::string_view path) { return row_of(kSystem, path, "system"); }

const NumericField& model_field(std::string_view path) { return row_of(kModel, path, "model"); }

double read_number(ObjectReader& r, const NumericField& f, std::optional<double> def, std::optional<double> lo) {
    return r.number(key_of(f), def, lo.value_or(f.lo), f.hi);
}

int64_t read_count(ObjectReader& r, const NumericField& f, std::optional<int64_t> def, std::optional<int64_t> hi) {
    const auto top = static_cast<int64_t>(f.hi);
    return r.integer(key_of(f), def, static_cast<int64_t>(f.lo), hi ? std::min(*hi, top) : top);
}

namespace {

const NumericField& system_row(std::string_view section, const char* key) {
    return system_field(section.empty() ? std::string(key) : fmt::format("{}.{}", section, key));
}

}  // namespace

double system_number(ObjectReader& r, std::string_view section, const char* key, std::optional<double> def, std::optional<double> lo) {
    return read_number(r, system_row(section, key), def, lo);
}

int64_t system_count(ObjectReader& r, std::string_view section, const char* key, std::optional<int64_t> def, std::optional<int64_t> hi) {
    return read_count(r, system_row(section, key), def, hi);
}

std::string system_schema_markdown() {
    const Efficiency defaults{};
    auto rows = [](std::span<const NumericField> table, std::string_view section) {
        std::string t = kTableHead;
        for (const NumericField& f : table)
            t += fmt::format("| `{}.{}` | {} | {} to {} | {} | {} |\n", section, f.path, f.unit, figure(f.lo), figure(f.hi), f.default_text, f.doc);
        return t;
    };
    std::string o = rows(kSystem, "system");
    o += "\nAnd `system.efficiency` (calibration: each preset's values and sources in docs/CALIBRATION.md):\n\n";
    o += kTableHead;
    for (const EfficiencyField& f : kEfficiency) {
        const std::string def = f.default_from ? fmt::format("`{}`", f.default_from) : fmt::format("{:g}", defaults.*f.member);
        o += fmt::format("| `system.efficiency.{}` | {} | {:g} to {:g} | {} | {} |\n", f.key, f.unit, f.lo, f.hi, def, f.doc);
    }
    o += fmt::format("| `system.efficiency.decode_attention` | choice | `{}` or `{}` | `{}` | the units decode attention runs on: a "
                     "tensor-core GQA kernel (XQA) or a CUDA-core masked MHA kernel |\n",
                     kDecodeAttention[0], kDecodeAttention[1], kDecodeAttention[0]);
    o += "\nA model (a preset's file or a scenario's `model` section; the choices are above):\n\n";
    o += rows(kModel, "model");
    o += "\nA scenario's `parallel` section (besides the choices: see SPEC.md):\n\n";
    o += spec_table(kParallel, "parallel");
    o += "\nIts `training` section (besides `global_batch`, `precision`, the choices and LoRA: see "
         "SPEC.md):\n\n";
    o += spec_table(kTraining, "training");
    o += "\nIts `inference` section (besides the precisions, `kv_reservation`, `prefill_schedule`, `window_cache` and `activation_quantisation`):\n\n";
    o += spec_table(kInference, "inference");
    return o;
}

}  // namespace sm
