#pragma once
// How a model's layers are cut into pipeline stages: pp GPUs, each holding vp interleaved chunks
// (virtual stage j of pp*vp is held by GPU j % pp: GPU g holds chunks g, g + pp, ...), with the
// embedding on the first chunk and the head (and loss) on the last. Layout only, no costs.
//
// The splits the frameworks offer:
// - even: pp*vp divides the layers (Megatron-LM's default rule).
// - embedding / loss / embedding_loss: Megatron-LM's account_for_embedding_in_pipeline_split and
//   account_for_loss_in_pipeline_split: the embedding and/or the loss count as one layer slot each,
//   (layers + slots) are split evenly over the pp*vp chunks, and the first (last) chunk builds one
//   transformer layer fewer (megatron/core/transformer/transformer_block.py,
//   get_num_layers_to_build; transformer_layer.py, get_transformer_layer_offset). Llama 3.1 405B:
//   126 + 2 = 128 slots. Megatron-DeepSpeed's partition method "type:transformer|embedding" (BLOOM:
//   70 layers + 2 embeddings on pp 12) cuts the same way.
// - first_last: Megatron-LM's num_layers_in_first/last_pipeline_stage (decoder_first/
//   last_pipeline_num_layers): the given counts on the first and/or last GPU, the rest split evenly
//   over the middle GPUs; with vp each count divides by vp (one share per chunk).
// - uniform: DeepSpeed's PipelineModule partition_method "uniform" (ds_utils.partition_uniform):
//   no interleaving; the first (layers mod pp) stages hold one layer more.
// - fill: every chunk ceil(layers / (pp*vp)) layers, the last chunk what remains (at least one):
//   the layouts Megatron-Bridge's DeepSeek-V3 recipes give pp x vp of 4x1, 8x1, 16x1, 4x2, 8x2,
//   4x4 (61 layers on pp 4 x vp 4: 15 chunks of 4, the last 1 beside the loss;
//   recipes/deepseek/deepseek_v3.py, _get_deepseek_v3_pipeline_layout).
// - layout: Megatron-Core's pipeline_model_parallel_layout, every chunk's layers spelled out
//   (parse_pipeline_layout).
#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "model/model_spec.hpp"
#include "parallel/parallel_config.hpp"

namespace sm {

// The layer counts of one split, in closed form: chunk j's layers and offset cost O(1), so the
// search's hot loop builds nothing.
struct StageSplit {
    int64_t pp = 1, vp = 1;
    int64_t first = 0, middle = 0, last = 0;  // layers per chunk on GPU 0, GPUs 1..pp-2, GPU pp-1
    int64_t extra = 0;                        // uniform: GPUs below `extra` hold one layer more
    int64_t short_last = 0;                   // fill: the last chunk holds this many layers fewer
    bool embedding_slot = false, loss_slot = false;
    const int32_t* listed = nullptr;          // layout: every chunk's layers (the config's vector)

    [[nodiscard]] int64_t chunks() const { return pp * vp; }
    // Layers per chunk on GPU g before the embedding/loss slots are taken out.
    [[nodiscard]] int64_t gpu_chunk(int64_t g) const;
    // Transformer layers of chunk j (0 .. pp*vp - 1) and the first of them.
    [[nodiscard]] int64_t chunk_layers(int64_t j) const;
    [[nodiscard]] int64_t chunk_begin(int64_t j) const;
    // Transformer layers GPU g holds over its vp chunks.
    [[nodiscard]] int64_t gpu_layers(int64_t g) const;
};

// A split, or why the layout cannot be cut (a sentence without the figures; the caller names the
// field and prints the values).
struct SplitOutcome {
    StageSplit split;
    const char* problem = nullptr;
    [[nodiscard]] bool ok() const { return problem == nullptr; }
};

// What p's layers run again in backward (`layers` the model's): under full recompute of the first
// p.recompute_layers of each chunk, the share of the pipeline's layers that is, over all chunks.
RecomputePlan recompute_plan(const ParallelConfig& p, int64_t layers);

// Cuts `layers` layers by p.split (and p.first_stage_layers / p.last_stage_layers, p.layout). A
// layout split's StageSplit points into p.layout: it lives no longer than p.
SplitOutcome split_layers(int64_t layers, const ParallelConfig& p);
// The split `auto` stands for: even when pp*vp divides the layers, else Megatron's embedding+loss
// accounting when it applies, else DeepSpeed's uniform split (vp 1) or fill (vp > 1); p.split
// itself is ignored.
PipelineSplit default_split(int64_t layers, const ParallelConfig& p);

// Megatron-Core's pipeline_model_parallel_layout string (megatron/core/transformer/
// pipeline_parallel_layer_layout.py, parse_str_to_list): stages in chunk order separated by '|',
// 't' a transformer layer, 'E' the embedding (first stage), 'L' the loss and head (last stage);
// "(group)*n" and "x*n" repeat, commas and blanks are cosmetic. "Et*4|(t*4|)*14tL" is 61 layers
// on 16 chunks. 'm' is a multi-token-prediction module, counted (the last stage only: it runs
// after the decoder there, as Megatron-Core places it).
struct ParsedLayout {
    std::vector<int32_t> chunks;  // transformer layers per stage
    int32_t mtp = 0;              // 'm's
    std::string problem;          // empty when the text is a layout
};
ParsedLayout parse_pipeline_layout(std::string_view text);
// The canonical spelling of a layout: "Et*4|t*4|...|tmL" (runs of equal stages not folded;
// `mtp` m's before the loss).
std::string layout_text(const std::vector<int32_t>& chunks, int32_t mtp = 0);

// One GPU's share of the pipeline: its blocks of each kind, summed over its chunks, and the ends
// of the model it holds.
struct StageLoad {
    std::array<int64_t, kLayerKinds> blocks{};
    int64_t layers = 0;
    bool embedding = false, head = false;
};
StageLoad stage_load(const ModelSpec& m, const StageSplit& s, int64_t gpu);

}  // namespace sm
