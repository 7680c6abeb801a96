#pragma once
#include <cstdint>
#include <string_view>

#include "core/precision.hpp"

namespace sm {

// How much KV cache a serving engine holds for a request in flight.
enum class KvReservation {
    full,     // prompt + all output tokens, from admission (TensorRT-LLM GUARANTEED_NO_EVICT)
    average,  // what its context holds so far: I + O/2 on average (vLLM; TRT-LLM MAX_UTILIZATION)
};
// How a serving engine schedules prompt chunks beside decoding requests (InferenceSpec::prefill_schedule).
enum class PrefillSchedule {
    mixed,     // chunks ride in the decode steps (vLLM V1, TensorRT-LLM in-flight batching)
    separate,  // a step of prompt chunks alone while the decodes wait (SGLang without --enable-mixed-chunk)
};
constexpr std::string_view to_string(PrefillSchedule p) { return p == PrefillSchedule::mixed ? "mixed" : "separate"; }
// What a sliding-window layer's cache holds for a request (InferenceSpec::window_cache).
enum class WindowCache { window, sequence };
constexpr std::string_view to_string(WindowCache w) { return w == WindowCache::window ? "window" : "sequence"; }
constexpr std::string_view to_string(KvReservation k) { return k == KvReservation::full ? "full" : "average"; }
// Where a low-precision GEMM's activation operand is quantised (InferenceSpec::activation_quantisation).
enum class ActivationQuantisation {
    separate,  // a cast kernel of its own per GEMM, after an amax pass where the format needs one
    fused,     // by the kernel that produces it (norm, activation, all-reduce), scales calibrated
};
constexpr std::string_view to_string(ActivationQuantisation q) { return q == ActivationQuantisation::fused ? "fused" : "separate"; }

// An inference workload: `batch` requests of `input_len` prompt tokens generating `output_len`.
struct InferenceSpec {
    int64_t batch = 1;
    int64_t input_len = 512;
    int64_t output_len = 128;
    Precision precision = Precision::fp16;         // matrix math and activations
    Precision weight_precision = Precision::fp16;  // weights as stored
    Precision kv_precision = Precision::fp16;      // KV cache
    double framework_overhead_bytes = 1073741824.0;
    // Continuous batching (`infer --concurrency`, `--max-throughput`, `serve-search`).
    // Prefill tokens one engine step carries beside its decode tokens: a prompt longer than this
    // is prefilled in chunks. TensorRT-LLM's max_num_tokens default (8192).
    int64_t prefill_chunk_tokens = 8192;
    // Tokens per paged KV-cache block (TensorRT-LLM's tokens_per_block default, 64): a request
    // holds whole blocks.
    int64_t kv_block_tokens = 64;
    // TensorRT-LLM's default capacity scheduler (GUARANTEED_NO_EVICT, docs "Useful Runtime
    // Options") admits a request only once the blocks for its whole I + O are reserved, so a
    // started request is never paused.
    KvReservation kv_reservation = KvReservation::full;
    // The serving benchmark's scheduler (`infer --concurrency`, `--request-rate`).
    PrefillSchedule prefill_schedule = PrefillSchedule::mixed;
    // Continuous batching's decode-only steps of at most this many requests (per micro-batch)
    // replay captured CUDA graphs, so the host's per-layer and per-collective dispatch (system
    // efficiency host_*_overhead_s, an eager framework's) is not paid on them; larger decode
    // batches and steps carrying prompt chunks run eagerly. 128: the largest size of TensorRT-
    // LLM's generated CUDA-graph batch list without padding (llm_args.py, CudaGraphConfig:
    // 1-31, 32, 64, 128); vLLM captures up to min(2 max_num_seqs, 512). 0: no graphs.
    int64_t cuda_graph_max_batch = 128;
    // How an 8- or 4-bit GEMM's activation operand is quantised. `separate` (the default, as an
    // unfused framework runs it): its own cast kernel per GEMM, NVFP4 after an amax reduction
    // over the tensor. `fused`: the kernel that produces the activation (RMSNorm, the gated
    // activation, the all-reduce's residual + norm) writes it quantised, with per-tensor scales
    // calibrated offline (ModelOpt checkpoints' input_scale) and block scales computed in
    // registers: no kernel, no amax pass, only the quantised copy written. The engines' profiles
    // (presets/engines/) say which they run.
    ActivationQuantisation activation_quantisation = ActivationQuantisation::separate;
    // What a sliding-window layer's cache holds per request (model.sliding_window): `window`, its
    // last window of tokens (a cyclic or trimmed cache: vLLM's sliding-window manager, TensorRT-LLM
    // before 1.1); `sequence`, blocks for the whole sequence (TensorRT-LLM from PR #6768, Aug 2025:
    // blocks written linearly, a request reserving up to its full length, out-of-window blocks only
    // detached to a host pool when one is configured). The attention work is windowed either way.
    WindowCache window_cache = WindowCache::window;
    // The serving engine's KV-cache pool is this share of the memory the weights, activations and
    // runtime leave free, sized once at start-up (TensorRT-LLM's KvCacheConfig
    // free_gpu_memory_fraction, 0.9 by default); the rest stays unused.
    double kv_cache_memory_fraction = 0.9;
    // Speculative decoding with multi-token prediction (serving only): each step drafts
    // `speculative_tokens` tokens, one MTP block (one transformer layer and the head, as
    // DeepSeek-V3's) per draft token, and verifies them in one pass; each is accepted with
    // probability `acceptance_rate` until the first rejection (0 tokens: off).
    int64_t speculative_tokens = 0;
    double acceptance_rate = 0.0;
    // A finite benchmark run (`infer --max-throughput`): this many requests queued at once, its
    // throughput their output over the time until the last one finishes, ramp-up and tail
    // included (trtllm-bench throughput's dataset); 0: an endless stream's steady state.
    // With `--concurrency C` / `--request-rate R`: the requests the benchmark sends (0: 10 per
    // client, the request count of aiperf / genai-perf concurrency sweeps; 1,000 at a rate).
    int64_t num_requests = 0;
};

}  // namespace sm
