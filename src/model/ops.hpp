#pragma once
// The per-GPU op list of one transformer layer (and of the embedding / output stages), with
// shapes after sharding. Shapes first, costs second: nothing here knows about a GPU.
#include <cstdint>
#include <string_view>
#include <vector>

#include "model/model_spec.hpp"
#include "parallel/parallel_config.hpp"

namespace sm {

enum class OpKind { gemm, batched_gemm, attention, elementwise };

// C[m,n] = A[m,k] * B[k,n], `batch` times. For weight GEMMs B is the weight.
struct GemmShape {
    double m = 0, n = 0, k = 0, batch = 1;
};

struct Op {
    std::string_view name;
    OpKind kind = OpKind::elementwise;
    GemmShape gemm;              // gemm, batched_gemm
    bool weight = false;         // B is a weight: a weight-gradient GEMM runs in backward
    bool frozen = false;         // a weight not trained (LoRA's base): no weight-gradient GEMM
    bool input_grad = true;      // false: A is data (a ViT's pixels), no data-gradient GEMM
    // Fused attention: one kernel over all heads.
    double attn_flop = 0;        // executed forward FLOP (causal blocks skipped)
    double attn_model_flop = 0;  // forward FLOP by the usual convention (full s x s)
    double attn_io_elems = 0;    // Q, O elements moved (activation precision)
    double attn_kv_elems = 0;    // K, V elements moved (KV-cache precision)
    double attn_kv_len = 0;      // keys each query row spans: the kernel's inner-loop length
    // Element-wise / normalisation: bytes moved and vector-unit FLOP of the forward pass.
    double bytes = 0;
    double vector_flop = 0;
    double bwd_bytes_factor = 2.0;
    // Activation memory kept for the backward pass: `saved_bytes` under every recompute mode
    // but full; `core_saved_bytes` (the attention core's internals) only without recompute.
    double saved_bytes = 0;
    double core_saved_bytes = 0;
    bool attention_core = false;  // re-run in backward under selective recompute (core_attn)
    // The other recompute modules this op runs inside (parallel.recompute_modules: re-run when one
    // is recomputed), and those whose recompute drops its `saved_bytes` (inside the module's
    // checkpoint, or the output of a module that is not kept: the norm's, read by the next GEMM).
    ModuleSet modules = 0;
    ModuleSet frees = 0;
    bool decode_core = false;     // decode attention over K/V heads (efficiency.decode_attention picks its units)
    double decode_group = 1;      // query heads per K/V head of a decode core
    // An MLA projection whose form follows the attention core's: absorbed into the query and
    // output when decoding, the K/V up-projection when attending over a prompt. A step that
    // mixes both takes it from each group of sequences, like the core itself (block_ops).
    bool core_projection = false;
    // Runs in the activation format (bf16) even when the other GEMMs run in fp8/fp4: Transformer
    // Engine quantises only the layers built from its modules, and Megatron's output layer is not one.
    bool keep_activation_precision = false;
    bool shared_expert = false;  // a shared expert's op: what the expert all-to-all can hide behind
    // Of a low-precision GEMM's input rows, the share this rank quantises in forward: Transformer
    // Engine casts a sequence-parallel shard to fp8 and all-gathers that, so a column-parallel
    // GEMM behind the gather casts 1/tp of the rows it multiplies.
    double cast_rows_share = 1.0;
    // A product of the Mamba-2 SSD scan (batched_gemm): costed at efficiency.scan_max, its HBM
    // traffic `bytes` per pass given by the op (operands a group's heads share are read once).
    bool scan = false;
    // Backward runs this op's forward again before its gradient (mamba_ssm's SSD backward
    // recomputes the chunk states rather than keep them): a kernel's own recompute, under every mode.
    bool bwd_reruns_fwd = false;
};

// dispatch: expert parallelism's token dispatch (or combine) by a deduplicating dispatcher
// (DeepEP, HybridEP): each token row crosses to a node once and to a GPU once, whatever the number
// of its expert copies there (CommOp::fanout); the others move what `bytes` says.
enum class Collective { all_reduce, all_gather, reduce_scatter, all_to_all, p2p, dispatch };
// tp: the tensor-parallel group (under SUMMA, one row of the grid: tp / tp_rows ranks);
// tp_rows: under SUMMA, one column of the grid (tp_rows ranks, one per row).
// etp: in inference, experts tensor-parallel wider than attention (etp > tp): the etp / tp
// attention replicas whose GPUs share each expert's slices.
enum class CommGroup { tp, cp, ep, dp, pp, tp_rows, etp };
enum class Pass { fwd, bwd };

// A collective issued by the layer. `bytes` is the full buffer size (the gathered tensor for
// all-gather, the input for reduce-scatter, the message for p2p). `count` repeats it (CP ring).
struct CommOp {
    std::string_view name;
    Collective kind = Collective::all_reduce;
    CommGroup group = CommGroup::tp;
    Pass pass = Pass::fwd;
    double bytes = 0;
    double count = 1;
    bool overlappable = false;  // can hide behind independent compute of the same pass
    double fanout = 1;          // dispatch: expert copies per token row (top_k); `bytes` holds the rows once
    bool cross_pass = false;    // overlappable behind the other pass's compute instead (a paired micro-batch's)
    ModuleSet modules = 0;      // the recompute modules it runs inside: re-run with their forward
};

// How one layer is cut on one GPU for one micro-batch.
struct LayerShape {
    double batch = 1;          // sequences per micro-batch (or decode batch)
    double q_len = 0;          // query tokens per sequence on this GPU
    double kv_len = 0;         // keys each query row spans (before the causal cut)
    double causal_fraction = 1;// fraction of the q x kv score matrix actually computed
    int64_t tp = 1;            // under SUMMA: the grid's columns (heads and widths split over them)
    int64_t tp_rows = 1;       // SUMMA grid rows (q_len is then this row's tokens); 1 = 1D TP
    int64_t cp = 1;
    CpKind cp_kind = CpKind::ring;  // how context parallelism exchanges K/V (ParallelConfig)
    int64_t ep = 1;
    int64_t etp = 0;           // expert tensor parallelism: 0 = tp, 1 = experts whole (ParallelConfig)
    bool sequence_parallel = false;
    double act_bytes = 2;      // bytes per activation element
    // Per element of a sequence-parallel all-gather that feeds low-precision GEMMs: Transformer
    // Engine gathers fp8 inputs already quantised (its reduce-scatters stay in bf16). 0: act_bytes.
    double gather_bytes = 0;
    double kv_bytes = 2;       // bytes per K/V element kept in the cache
    bool decode = false;       // one new token per sequence against a cache (MLA absorbs its up-projections)
    // Training: the expert all-to-all hides behind the shared experts (training.moe_shared_expert_overlap).
    bool shared_expert_overlap = false;
    // Training: the expert all-to-all hides behind the other pass of a paired micro-batch
    // (training.moe_a2a_overlap).
    bool a2a_overlap = false;
    // Tokens reach the experts through a deduplicating dispatcher (training.moe_dispatcher "flex").
    bool dedup_dispatch = false;
    LoraSpec lora;             // LoRA training: base weights frozen, adapters beside the targets
};

struct LayerOps {
    std::vector<Op> ops;
    std::vector<CommOp> comms;
    double input_bytes = 0;  // the block's input activation: what full recompute keeps
    // Held only while the block runs (all-gather context parallelism's gathered K/V and dK/dV).
    double transient_bytes = 0;
};

// One transformer block of kind `kind` (dense FFN or mixture of experts).
LayerOps layer_ops(const ModelSpec& m, const LayerShape& s, LayerKind kind);
// Token embedding (first pipeline stage).
LayerOps embedding_ops(const ModelSpec& m, const LayerShape& s);
// Final norm, LM head and loss (last pipeline stage). `with_loss`: training only.
LayerOps head_ops(const ModelSpec& m, const LayerShape& s, bool with_loss);
// The same three into `out`, whose storage is kept: the search rebuilds blocks per layer key.
void layer_ops(LayerOps& out, const ModelSpec& m, const LayerShape& s, LayerKind kind);
// The attention sub-layer of a `kind` block alone (what layer_ops builds for it, nothing for a
// block without attention): a step's attention cores are costed per group of sequences, the
// rest of the block once for all its tokens.
LayerOps attention_ops(const ModelSpec& m, const LayerShape& s, LayerKind kind);
void attention_ops(LayerOps& out, const ModelSpec& m, const LayerShape& s, LayerKind kind);  // into out's storage
void embedding_ops(LayerOps& out, const ModelSpec& m, const LayerShape& s);
void head_ops(LayerOps& out, const ModelSpec& m, const LayerShape& s, bool with_loss);

// Tensor-parallel shard of the KV heads: replicated when there are fewer KV heads than ranks.
double kv_heads_per_rank(const ModelSpec& m, int64_t tp);

// What one request keeps between decode steps in a recurrent layer (a Mamba-2 mixer, a Gated
// DeltaNet block) on one tensor-parallel rank: its state elements, held in fp32
// (kRecurrentStateBytes), and the convolution's conv_kernel - 1 cached inputs, in the activation
// format. Zero for any other kind. The decode ops move them; serving memory holds them.
struct RecurrentState {
    double state_elems = 0;
    double conv_elems = 0;
};
RecurrentState recurrent_state(const ModelSpec& m, LayerKind kind, int64_t tp);
// mamba_ssm's selective_state_update keeps the state in fp32; Qwen3.5's config.json: mamba_ssm_dtype float32.
inline constexpr double kRecurrentStateBytes = 4.0;

}  // namespace sm
