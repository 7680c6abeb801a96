#include "parallel/pipeline_split.hpp"

#include <algorithm>
#include <cctype>
#include <numeric>

#include <fmt/format.h>

namespace sm {

namespace {

// fill's cut of `layers` over n chunks: ceil(layers / n) on each but the last, which must keep at
// least one; 0 where it does not.
int64_t fill_per_chunk(int64_t layers, int64_t n) {
    const int64_t per = (layers + n - 1) / n;
    return layers >= n && per * (n - 1) < layers ? per : 0;
}

}  // namespace

int64_t StageSplit::gpu_chunk(int64_t g) const {
    const int64_t base = pp == 1 ? first : g == 0 ? first : g == pp - 1 ? last : middle;
    return base + (g < extra ? 1 : 0);
}

int64_t StageSplit::chunk_layers(int64_t j) const {
    if (listed != nullptr) return listed[j];
    return gpu_chunk(j % pp) - (embedding_slot && j == 0 ? 1 : 0) -
           ((loss_slot ? 1 : 0) + short_last) * (j == chunks() - 1 ? 1 : 0);
}

int64_t StageSplit::chunk_begin(int64_t j) const {
    if (listed != nullptr) return std::accumulate(listed, listed + j, int64_t{0});
    const int64_t v = j / pp, r = j % pp;
    // One round of chunks (one per GPU), then the GPUs before r in this round.
    const int64_t round = pp == 1 ? first : first + (pp - 2) * middle + last + extra;
    const int64_t before = (r >= 1 ? first : 0) + (r >= 2 ? (r - 1) * middle : 0) + std::min(r, extra);
    return v * round + before - (embedding_slot && j > 0 ? 1 : 0);
}

int64_t StageSplit::gpu_layers(int64_t g) const {
    if (listed != nullptr) {
        int64_t n = 0;
        for (int64_t v = 0; v < vp; ++v) n += listed[g + v * pp];
        return n;
    }
    return vp * gpu_chunk(g) - (embedding_slot && g == 0 ? 1 : 0) - ((loss_slot ? 1 : 0) + short_last) * (g == pp - 1 ? 1 : 0);
}

RecomputePlan recompute_plan(const ParallelConfig& p, int64_t layers) {
    if (p.recompute != Recompute::full || p.recompute_layers <= 0) return {p.recompute, p.recompute_modules};
    const SplitOutcome cut = split_layers(layers, p);
    if (!cut.ok()) return {p.recompute, p.recompute_modules};  // refused by the rules before it is costed
    int64_t rerun = 0, total = 0;
    for (int64_t j = 0; j < cut.split.chunks(); ++j) {
        rerun += std::min(p.recompute_layers, cut.split.chunk_layers(j));
        total += cut.split.chunk_layers(j);
    }
    return {p.recompute, p.recompute_modules, total > 0 ? static_cast<double>(rerun) / static_cast<double>(total) : 1.0};
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
                              "\"embedding_loss\", Megatron's accounting; or leave the last chunk a layer under \"fill\"); "
                              "parallel.pipeline_layout lists any cut";
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
        case PipelineSplit::fill: {
            const int64_t per = fill_per_chunk(layers, n);
            if (per == 0)
                out.problem = "fill: ceil(layers / (pp*vp)) layers on every chunk but the last must leave the last at least one";
            else {
                even(per);
                s.short_last = per * n - layers;
            }
            break;
        }
        case PipelineSplit::layout: {
            int64_t total = 0;
            for (int32_t c : p.layout) total += c;
            if (static_cast<int64_t>(p.layout.size()) != n)
                out.problem = "the pipeline layout's stages (separated by |) must number pp*vp";
            else if (total != layers)
                out.problem = "the pipeline layout's transformer layers (t) must number model.layers";
            else
                s.listed = p.layout.data();
            break;
        }
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
    if (p.vp > 1)  // even where fill does not cut either: the error that says most
        return fill_per_chunk(layers, n) > 0 ? PipelineSplit::fill : PipelineSplit::even;
    return PipelineSplit::uniform;
}

namespace {

// One pass of Megatron's unrolling, for "(group)*n" (group: no ')') or "x*n": the text with each
// repetition written out, or nullopt past `limit` characters.
std::optional<std::string> unroll(std::string_view in, bool groups, size_t limit) {
    std::string out;
    size_t i = 0;
    while (i < in.size()) {
        size_t body_begin = i, body_end = i + 1, star = i + 1;
        if (groups) {
            const size_t close = in[i] == '(' ? in.find(')', i + 1) : std::string_view::npos;
            if (close == std::string_view::npos || close == i + 1) {
                out += in[i++];
                continue;
            }
            body_begin = i + 1;
            body_end = close;
            star = close + 1;
        }
        size_t k = star + 1;
        int64_t times = 0;
        while (k < in.size() && std::isdigit(static_cast<unsigned char>(in[k])) != 0 && times <= 1000000)
            times = times * 10 + (in[k++] - '0');
        if (star >= in.size() || in[star] != '*' || k == star + 1) {
            out += in[i++];
            continue;
        }
        const std::string_view body = in.substr(body_begin, body_end - body_begin);
        if (times > 1000000 || out.size() + body.size() * static_cast<size_t>(times) > limit) return std::nullopt;
        for (int64_t t = 0; t < times; ++t) out += body;
        i = k;
    }
    return out;
}

}  // namespace

ParsedLayout parse_pipeline_layout(std::string_view text) {
    constexpr size_t kLimit = 1000000;  // characters unrolled: far beyond any cluster's layers
    ParsedLayout r;
    std::string t;
    for (char c : text)
        if (c != ',' && std::isspace(static_cast<unsigned char>(c)) == 0) t += c;
    std::optional<std::string> u = unroll(t, true, kLimit);
    if (u) u = unroll(*u, false, kLimit);
    if (!u) {
        r.problem = fmt::format("unrolls to more than {} characters", kLimit);
        return r;
    }
    int64_t embeddings = 0, losses = 0, stage = 0;
    r.chunks.push_back(0);
    for (char c : *u) {
        switch (c) {
            case '|': r.chunks.push_back(0); ++stage; break;
            case 't': ++r.chunks.back(); break;
            case 'E':
                if (stage != 0 || ++embeddings > 1) r.problem = "the embedding (E) must be once, in the first stage";
                break;
            case 'L': ++losses; break;
            case 'm': ++r.mtp; break;
            default:
                r.problem = fmt::format("'{}' is not a layer: t (transformer), E (embedding), L (loss), | between stages, "
                                        "(group)*n and x*n to repeat",
                                        c);
        }
        if (!r.problem.empty()) return r;
    }
    const size_t last_bar = u->rfind('|');
    if (embeddings != 1)
        r.problem = "the embedding (E) must be once, in the first stage";
    else if (losses != 1 || (last_bar != std::string::npos && u->find('L') < last_bar))
        r.problem = "the loss (L) must be once, in the last stage";
    else if (r.mtp > 0 && last_bar != std::string::npos && u->find('m') < last_bar)
        r.problem = "multi-token-prediction layers (m) belong in the last stage, with the loss";
    return r;
}

std::string layout_text(const std::vector<int32_t>& chunks, int32_t mtp) {
    std::string out;
    for (size_t j = 0; j < chunks.size(); ++j) {
        if (j > 0) out += '|';
        if (j == 0) out += 'E';
        if (chunks[j] == 1) out += 't';
        else if (chunks[j] > 1) out += fmt::format("t*{}", chunks[j]);
        if (j + 1 == chunks.size()) out += std::string(static_cast<size_t>(std::max(mtp, 0)), 'm') + 'L';
    }
    return out;
}

StageLoad stage_load(const ModelSpec& m, const StageSplit& s, int64_t gpu) {
    StageLoad out;
    out.embedding = gpu == 0;
    out.head = gpu == s.pp - 1;
    if (!m.moe.enabled() && !m.recurrent()) {  // one kind: the count is all there is (the search's hot path)
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
