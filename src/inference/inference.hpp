#pragma once
// Inference: prefill (the prompt in one forward pass), decode (one token per forward pass while
// the KV cache grows), and the memory each GPU holds. Every op is the training op catalogue's
// (layer_ops / embedding_ops / head_ops) timed by cost_op and collective_time_s.
#include <cstdint>
#include <span>
#include <vector>

#include "hardware/cost.hpp"
#include "hardware/energy.hpp"
#include "inference/inference_spec.hpp"
#include "model/model_spec.hpp"
#include "parallel/placement.hpp"

namespace sm {

struct InferContext {
    const ModelSpec& model;
    const SystemSpec& system;
    const InferenceSpec& inference;
};

// One forward pass through the whole model on the critical path. Pipeline stages run one after
// another for a single batch (no micro-batching), so the latency is the sum over stages.
struct PassCost {
    double compute_s = 0;   // kernels, launch latencies included
    double tp_comm_s = 0;   // tensor-parallel collectives: blocking in inference (nothing to hide behind)
    double pp_comm_s = 0;   // stage-to-stage activations
    double ep_comm_s = 0;   // MoE all-to-all
    double host_s = 0;      // framework dispatch not hidden behind the GPU (Efficiency::host_*)
    double flop = 0;        // executed, all GPUs of one replica
    double hbm_bytes = 0;   // HBM traffic of one GPU of each stage, summed over stages
    double sram_bytes = 0;  // likewise through the on-chip SRAM level (fwd_onchip_bytes)
    // The rest of what the energy model charges, likewise per GPU of each stage: seconds the
    // tensor array is engaged (Work::tensor_s; compute_s is the kernel seconds) and bytes sent
    // over each network level.
    double tensor_s = 0, scale_up_bytes = 0, scale_out_bytes = 0;
    [[nodiscard]] double total_s() const { return compute_s + tp_comm_s + pp_comm_s + ep_comm_s + host_s; }
    PassCost& operator+=(const PassCost& o);
    [[nodiscard]] PassCost scaled(double k) const;
    // What the energy model charges for it, per GPU of each stage (times tp for the whole stage).
    [[nodiscard]] Work work() const { return {tensor_s, compute_s, hbm_bytes, scale_up_bytes, scale_out_bytes, sram_bytes}; }
};

struct InferMemory {
    double weights_bytes = 0;      // the fullest stage's weights, in their storage precision
    double kv_cache_bytes = 0;     // the cache at its largest: input_len + output_len tokens
    double activations_bytes = 0;  // the prefill working set (the larger of prefill and decode)
    double overhead_bytes = 0;     // framework allowance (inference.framework_overhead_bytes)
    double peak_bytes_per_gpu = 0;
};

struct InferResult {
    double ttft_s = 0;               // prefill: the prompt's forward pass, which yields token 1
    double tpot_s = 0;               // mean decode step over tokens 2..output_len
    double e2e_latency_s = 0;        // ttft + every decode step
    double output_tokens_per_s = 0;  // all replicas: dp x batch x output_len / e2e
    int64_t gpus = 0;
    int64_t decode_steps = 0;        // output_len - 1
    bool fits_in_memory = false;
    int64_t max_batch_fits = 0;      // the largest batch whose peak fits (0: not even the weights)
    PassCost prefill;
    PassCost decode;                 // summed over all decode steps
    PassCost decode_first;           // the first and last decode steps, for the growth of the cache
    PassCost decode_last;
    InferMemory memory;
    // One replica (tp x pp GPUs) serving its batch from the prompt to the last token (zero when
    // the system has no energy figures).
    Energy energy;
};

// Inference-time layer shapes: prefill (q = kv = input_len, causal) and one decode step.
LayerShape prefill_shape(const ModelSpec& m, const ParallelConfig& p, const InferenceSpec& s);
LayerShape decode_shape(const ParallelConfig& p, const InferenceSpec& s, double context);
CostContext inference_cost_context(const InferenceSpec& s);

// The prompt's forward pass (logits for the last position only).
PassCost prefill_cost(const InferContext& c, const ParallelConfig& p);
// One decode step whose new token attends to `context` tokens (itself included).
PassCost decode_step_cost(const InferContext& c, const ParallelConfig& p, double context);
// A forward pass whose blocks run the token-linear ops of `tokens` (every sequence's new tokens
// side by side) and the attention cores of `cores` (groups at their own query and context
// lengths), with the logits of `sampled` positions: one engine step of continuous batching.
// `graphed`: replayed from a captured CUDA graph, with no host dispatch per layer or collective.
PassCost mixed_pass_cost(const InferContext& c, const ParallelConfig& p, const LayerShape& tokens,
                         std::span<const LayerShape> cores, double sampled, bool graphed = false);
// Activation working set of one forward pass of `layer`: the residual stream beside the largest
// kernel's inputs and outputs (or the sampled logits).
double activation_bytes(const InferContext& c, const ParallelConfig& p, const LayerShape& layer);
// Decode steps for contexts first..last (inclusive), summed exactly. The step cost is piecewise
// linear in the context (each op a max of linear roofline terms), so segments on which it is
// linear are summed in closed form and the rest are bisected.
PassCost decode_sum(const InferContext& c, const ParallelConfig& p, int64_t first, int64_t last);

InferMemory inference_memory(const InferContext& c, const ParallelConfig& p, int64_t batch);
// Weights of one GPU of the fullest stage, in parameters, from the sharded op list.
double weight_params_per_gpu(const ModelSpec& m, const ParallelConfig& p);
// The KV cache of s.batch requests of `tokens` each on one GPU (attention layers only), with the
// recurrent states of Gated DeltaNet and Mamba layers (recurrent_state_bytes_per_gpu), whose size
// does not grow with tokens.
double kv_cache_bytes_per_gpu(const ModelSpec& m, const ParallelConfig& p, const InferenceSpec& s, double tokens);
double recurrent_state_bytes_per_gpu(const ModelSpec& m, const ParallelConfig& p, const InferenceSpec& s);
int64_t max_batch_that_fits(const InferContext& c, const ParallelConfig& p);

InferResult evaluate_inference(const InferContext& c, const ParallelConfig& p);

}  // namespace sm
