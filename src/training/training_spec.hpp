#pragma once
#include <cstdint>

#include "core/precision.hpp"
#include "model/model_spec.hpp"

namespace sm {

// ZeRO-2 gradients under gradient accumulation: reduce-scattered once per step from an fp32
// accumulation buffer (Megatron-LM's distributed optimizer, Llama 3's FSDP with pipeline
// parallelism: the full buffer is held until the step ends) or after every micro-batch, the
// partitioned gradients accumulated in place (DeepSpeed ZeRO-2, which refuses pipeline
// parallelism). `automatic`: per_step with pp > 1, per_microbatch without.
enum class GradReduce { automatic, per_step, per_microbatch };

enum class MoeDispatcher { alltoall, flex };

// The training workload and the software assumptions that move results by more than a few
// percent: each is a named scenario field (`training.*`) with the default documented here.
struct TrainingSpec {
    int64_t global_batch = 1;                 // sequences per optimizer step
    Precision precision = Precision::bf16;    // matrix math
    Precision grad_precision = Precision::fp32;  // Megatron accumulates main grads in fp32
    Fp8Recipe fp8_recipe = Fp8Recipe::delayed;   // Transformer Engine's default DelayedScaling
    bool dp_overlap = true;         // gradient reduction overlaps the last micro-batch's backward
    // With vp > 1, each chunk's gradient reduction starts when that chunk's last backward ends,
    // while the other chunks' backward still runs (Megatron-LM's interleaved schedule launches
    // grad sync per model chunk: pipeline_parallel/schedules.py, backward_step_helper_preprocess).
    bool grad_sync_per_chunk = true;
    // With vp > 1, the pipeline sends and receives of the steady state overlap the next chunk's
    // compute (Megatron-LM's overlap_p2p_comm, on by default with the interleaved schedule:
    // training/arguments.py --no-overlap-p2p-communication); the fill and drain stay exposed.
    bool overlap_p2p_comm = true;
    // With shared experts, the expert-parallel all-to-all (dispatch and combine) runs on its own
    // stream while the shared expert computes (Megatron-Core's moe_shared_expert_overlap; NeMo's
    // DeepSeek-V3 and Llama 4 configs set it: nemo/collections/llm/gpt/model/deepseek.py, llama.py).
    bool moe_shared_expert_overlap = true;
    // The expert-parallel dispatch and combine of one micro-batch run while another micro-batch
    // computes the other pass (Megatron-Core's overlap_moe_expert_parallel_comm with
    // delay_wgrad_compute, the "combined 1F1B" schedule; Megatron-Bridge's moe_a2a_overlap, which
    // also turns moe_shared_expert_overlap off): a forward all-to-all hides behind the paired
    // micro-batch's backward of the layer, a backward one behind its forward.
    bool moe_a2a_overlap = false;
    // How tokens reach the experts: Megatron-Core's alltoall dispatcher (the default) sends every
    // expert copy of a token; its flex dispatcher (DeepEP, HybridEP) sends each token once per
    // node and GPU that holds any of its experts (Collective::dispatch).
    MoeDispatcher moe_dispatcher = MoeDispatcher::alltoall;
    GradReduce grad_reduce = GradReduce::automatic;
    double tp_overlap = 0.0;        // fraction of blocking TP communication hidden (TE userbuffers)
    double pp_overlap = 0.0;        // fraction of pipeline p2p hidden behind compute
    double optimizer_state_bytes_per_param = 12;  // Adam: fp32 master weights + two moments
    LoraSpec lora;                  // training.method lora: base frozen, rank-r adapters trained
    double framework_overhead_bytes = 2.0 * 1073741824.0;  // CUDA context, allocator slack
    double comm_buffer_bytes = 0.5 * 1073741824.0;         // NCCL and bucket buffers
    bool operator==(const TrainingSpec&) const = default;
};

}  // namespace sm
