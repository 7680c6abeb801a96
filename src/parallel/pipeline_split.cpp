#include "parallel/pipeline_split.hpp"

#include <algorithm>

namespace sm {

int64_t StageSplit::gpu_chunk(int64_t g) const {
    const int64_t base = pp == 1 ? first : g == 0 ? first : g == pp - 1 ? last : middle;
    return base + (g < extra ? 1 : 0);
}

int64_t StageSplit::chunk_layers(int64_t j) const {
    return gpu_chunk(j % pp) - (embedding_slot && j == 0 ? 1 : 0) - (loss_slot && j == chunks() - 1 ? 1 : 0);
}

int64_t StageSplit::chunk_begin(int64_t j) const {
    const int64_t v = j / pp, r = j % pp;
    // One round of chunks (one per GPU), then the GPUs before r in this round.
    const int64_t round = pp == 1 ? first : first + (pp - 2) * middle + last + extra;
    const int64_t before = (r >= 1 ? first : 0) + (r >= 2 ? (r - 1) * middle : 0) + std::min(r, extra);
    return v * round + before - (embedding_slot && j > 0 ? 1 : 0);
}

int64_t StageSplit::gpu_layers(int64_t g) const {
    return vp * gpu_chunk(g) - (embedding_slot && g == 0 ? 1 : 0) - (loss_slot && g == pp - 1 ? 1 : 0);
}

SplitOutcome split_layers(int64_t layers, const ParallelConfig& p) {
    SplitOutcome out;
    StageSplit& s = out.split;
    s.pp = p.pp;
    s.vp = p.pp > 1 ? p.vp : 1;
    const int64_t n = s.chunks();
    auto even = [&](int64_t per_chunk) { s.first = s.middle = s.last = per_chunk; };
    switch (p.split) {
        case PipelineSplit::even:
            if (layers % n != 0)
                out.problem = "must divide model.layers (or model.layers + 2 with parallel.pipeline_split "
                              "\"embedding_loss\", Megatron's accounting)";
            else
                even(layers / n);
            break;
        case PipelineSplit::embedding_loss:
        case PipelineSplit::embedding:
        case PipelineSplit::loss: {
            s.embedding_slot = p.split != PipelineSplit::loss;
            s.loss_slot = p.split != PipelineSplit::embedding;
            const int64_t slots = layers + (s.embedding_slot ? 1 : 0) + (s.loss_slot ? 1 : 0);
            if (slots % n != 0)
                out.problem = "must divide model.layers plus one slot for each of the embedding and the loss "
                              "(Megatron's account_for_*_in_pipeline_split)";
            else
                even(slots / n);
            break;
        }
        case PipelineSplit::uniform:
            if (s.vp > 1)
                out.problem = "DeepSpeed's uniform split has no interleaving: vp must be 1";
            else if (layers < s.pp)
                out.problem = "must not exceed model.layers (a stage without layers)";
            else {
                even(layers / s.pp);
                s.extra = layers % s.pp;
            }
            break;
        case PipelineSplit::first_last: {
            const int64_t f = p.first_stage_layers, l = p.last_stage_layers;
            const int64_t mid_layers = layers - f - l;
            const int64_t mid_stages = s.pp - (f > 0 ? 1 : 0) - (l > 0 ? 1 : 0);
            if (s.pp < 2)
                out.problem = "explicit first/last stage layers need pp > 1";
            else if (f % s.vp != 0 || l % s.vp != 0)
                out.problem = "first and last stage layers must be multiples of vp (one share per chunk)";
            else if (mid_layers < 0 || (mid_layers == 0) != (mid_stages == 0))
                out.problem = "first + last stage layers must leave layers for the middle stages, and only for them";
            else if (mid_stages > 0 && (mid_layers % mid_stages != 0 || (mid_layers / mid_stages) % s.vp != 0))
                out.problem = "the remaining layers must split evenly over the middle stages and their vp chunks";
            else {
                const int64_t middle = mid_stages > 0 ? mid_layers / mid_stages / s.vp : 0;
                s.middle = middle;
                s.first = f > 0 ? f / s.vp : middle;
                s.last = l > 0 ? l / s.vp : middle;
            }
            break;
        }
    }
    return out;
}

PipelineSplit default_split(int64_t layers, const ParallelConfig& p) {
    const int64_t n = p.pp * (p.pp > 1 ? p.vp : 1);
    if (layers % n == 0) return PipelineSplit::even;
    if ((layers + 2) % n == 0) return PipelineSplit::embedding_loss;
    return p.vp > 1 && p.pp > 1 ? PipelineSplit::even : PipelineSplit::uniform;  // even: the error that says most
}

StageLoad stage_load(const ModelSpec& m, const StageSplit& s, int64_t gpu) {
    StageLoad out;
    out.embedding = gpu == 0;
    out.head = gpu == s.pp - 1;
    if (!m.moe.enabled()) {  // one kind: the count is all there is (the search's hot path)
        out.layers = out.blocks[idx(LayerKind::dense)] = s.gpu_layers(gpu);
        return out;
    }
    for (int64_t v = 0; v < s.vp; ++v) {
        const int64_t j = gpu + v * s.pp;
        const int64_t begin = s.chunk_begin(j), end = begin + s.chunk_layers(j);
        for (size_t k = 0; k < kLayerKinds; ++k) out.blocks[k] += count_layers(m, static_cast<LayerKind>(k), begin, end);
        out.layers += end - begin;
    }
    return out;
}

}  // namespace sm
