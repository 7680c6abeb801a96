#include "layout/rules.hpp"

#include <fmt/format.h>

#include <numeric>
#include <string>
#include <utility>

#include "model/ops.hpp"
#include "parallel/pipeline_split.hpp"

namespace sm {

namespace {

using Violations = std::vector<InputError>;

// Records one broken rule; a group of rules stops at its first with `return broken(...)`.
void broken(Violations& v, std::string path, std::string given, std::string allowed) {
    v.push_back({std::move(path), std::move(given), std::move(allowed)});
}

// Whether d divides n; when not, records the rule as broken.
bool divides(Violations& v, int64_t d, int64_t n, const std::string& path, const std::string& what) {
    if (n % d == 0) return true;
    broken(v, path, std::to_string(d), fmt::format("must divide {} ({})", what, n));
    return false;
}

void has_peak(Violations& v, const SystemSpec& sys, Precision p, const std::string& path) {
    if (sys.accel.matrix_peak(p)) return;
    std::string have;
    for (Precision q : kAllPrecisions)
        if (sys.accel.matrix_peak(q)) have += (have.empty() ? "" : ", ") + std::string(to_string(q));
    broken(v, path, fmt::format("\"{}\"", to_string(p)), fmt::format("{} supports: {}", sys.accel.name, have));
}

// SUMMA's grid (training only): tp_rows x tp_cols ranks, the columns cutting heads and widths as
// 1D tensor parallelism does, the rows cutting this context-parallel rank's tokens and, with the
// columns, the hidden width. Dense models with multi-head or grouped-query attention only: the
// experts' grouped GEMMs and MLA's latent projections are not cut on a grid here.
void summa_grid(Violations& v, const ModelSpec& m, const ParallelConfig& p) {
    const std::string got = std::to_string(p.tp_rows);
    if (!divides(v, p.tp_rows, p.tp, "parallel.tp_rows", "parallel.tp")) return;
    if (m.moe.enabled())
        return broken(v, "parallel.tp_rows", got, "1: SUMMA (tp_rows > 1) is modelled for dense models, and model.moe is set");
    if (m.mtp_layers > 0)
        return broken(v, "parallel.tp_rows", got, "1: SUMMA (tp_rows > 1) is not modelled with multi-token prediction (model.mtp_layers)");
    if (m.hybrid())
        return broken(v, "parallel.tp_rows", got, "1: SUMMA (tp_rows > 1) is not modelled for a hybrid Mamba model (model.hybrid_pattern)");
    if (m.linear_attention.enabled())
        return broken(v, "parallel.tp_rows", got, "1: SUMMA (tp_rows > 1) is not modelled for Gated DeltaNet layers (model.linear_attention)");
    if (m.attention_kind == AttentionKind::mla)
        return broken(v, "parallel.tp_rows", got, "1: SUMMA (tp_rows > 1) is modelled for multi-head and grouped-query attention, not MLA");
    if (!divides(v, p.tp, m.hidden, "parallel.tp", "model.hidden (SUMMA splits it over the whole grid)")) return;
    if (!divides(v, p.tp_rows, m.seq_len / p.cp, "parallel.tp_rows", "model.seq_len / cp (tokens split over the grid rows)"))
        return;
    if (const std::optional<TpMisfit> bad = tensor_parallel_misfit(m, p.tp_cols()))
        broken(v, "parallel.tp_rows", got,
               fmt::format("tp / tp_rows = {} grid columns must divide {} ({}){}", p.tp_cols(), bad->field, bad->width,
                           bad->multiple_ok ? " or be a multiple of it" : ""));
}

// How the model's heads and widths are cut: 1D tensor parallelism, or a SUMMA grid.
void tensor_parallel(Violations& v, const ModelSpec& m, const ParallelConfig& p) {
    if (p.summa()) return summa_grid(v, m, p);
    const std::optional<TpMisfit> bad = tensor_parallel_misfit(m, p.tp);
    if (!bad) return;
    if (bad->multiple_ok)
        return broken(v, "parallel.tp", std::to_string(p.tp),
                      fmt::format("must divide {} ({}) or be a multiple of it", bad->field, bad->width));
    divides(v, p.tp, bad->width, "parallel.tp", std::string(bad->field));
}

void pipeline_split(Violations& v, const ModelSpec& m, const ParallelConfig& p) {
    const SplitOutcome cut = split_layers(m.layers, p);
    if (cut.ok()) return;
    if (p.split == PipelineSplit::first_last)
        return broken(v, p.first_stage_layers > 0 ? "parallel.first_stage_layers" : "parallel.last_stage_layers",
                      fmt::format("first {} / last {} of {} layers on pp {} vp {}", p.first_stage_layers, p.last_stage_layers,
                                  m.layers, p.pp, p.vp),
                      cut.problem);
    if (p.split == PipelineSplit::layout)
        return broken(v, "parallel.pipeline_layout",
                      fmt::format("{} stages, {} layers on pp {} x vp {} of {} layers", p.layout.size(),
                                  std::accumulate(p.layout.begin(), p.layout.end(), int64_t{0}), p.pp, p.vp, m.layers),
                      cut.problem);
    if (p.split == PipelineSplit::uniform && p.vp > 1) return broken(v, "parallel.vp", std::to_string(p.vp), cut.problem);
    broken(v, "parallel.pp", fmt::format("pp*vp = {} ({} split, {} layers)", p.pp * p.vp, to_string(p.split), m.layers),
           cut.problem);
}

// parallel.etp other than tp (the default): experts split narrower than the rest is
// tensor-parallel. Training (Megatron-Core's MoE parallel folding) keeps every expert whole,
// etp 1, over sequence-parallel tokens; inference spreads the experts over attention's
// tensor-parallel GPUs themselves, etp x ep = tp (TensorRT-LLM's and SGLang's moe_tp x moe_ep),
// or over every replica's, etp x ep = tp x dp with etp a multiple of tp (SGLang's DP attention
// with TP or TP x EP experts).
void expert_tensor_parallel(Violations& v, const ModelSpec& m, const ParallelConfig& p, bool training) {
    if (p.expert_tp() == p.tp) return;
    const std::string got = std::to_string(p.etp);
    if (!m.moe.enabled()) return broken(v, "parallel.etp", got, "expert tensor parallelism needs model.moe");
    if (training) {
        if (p.etp != 1) return broken(v, "parallel.etp", got, fmt::format("1 (experts whole on each GPU) or parallel.tp ({})", p.tp));
        if (!p.sequence_parallel)
            broken(v, "parallel.etp", got, "etp 1 with tp > 1 needs parallel.sequence_parallel (each rank routes its own tokens)");
        return;
    }
    if (p.etp > p.tp) {
        if (p.etp % p.tp != 0 || p.etp * p.ep != p.tp * p.dp)
            broken(v, "parallel.etp", got,
                   fmt::format("a multiple of parallel.tp ({}) with etp x ep = tp x dp ({}): experts wider than attention span its "
                               "replicas' GPUs",
                               p.tp, p.tp * p.dp));
        return;
    }
    if (divides(v, p.etp, p.tp, "parallel.etp", "parallel.tp") && p.etp * p.ep != p.tp)
        broken(v, "parallel.ep", std::to_string(p.ep),
               fmt::format("parallel.tp / parallel.etp ({}): the experts spread over the tensor-parallel GPUs", p.tp / p.etp));
}

// A hybrid Mamba model or a Gated DeltaNet one trains without context parallelism (the scan
// would pass its state between the ranks' chunks: not modelled) and without LoRA (no adapter
// targets in a mixer).
void recurrent_training(Violations& v, const ModelSpec& m, const TrainingSpec& t, int64_t cp) {
    if (!m.recurrent()) return;
    const char* field = m.hybrid() ? "model.hybrid_pattern" : "model.linear_attention";
    const char* layers = m.hybrid() ? "Mamba" : "Gated DeltaNet";
    if (cp > 1)
        return broken(v, "parallel.cp", std::to_string(cp),
                      fmt::format("1 with {}: context parallelism of {} layers is not modelled", field, layers));
    if (t.lora.enabled())
        broken(v, "training.method", "\"lora\"", fmt::format("\"full\" with {}: LoRA of {} layers is not modelled", field, layers));
}

}  // namespace

std::vector<InputError> check_layout(const ModelSpec& m, const SystemSpec& sys, const TrainingSpec& t, const ParallelConfig& p) {
    Violations v;
    recurrent_training(v, m, t, p.cp);
    if (p.tp * p.pp * p.dp > kMaxGpus || p.gpus() > kMaxGpus) {  // short-circuit: gpus() cannot overflow
        broken(v, "parallel", fmt::format("tp*pp*dp*cp = {}", static_cast<double>(p.tp) * p.pp * p.dp * p.cp),
               fmt::format("at most {} GPUs", kMaxGpus));
        return v;
    }
    tensor_parallel(v, m, p);
    if (p.vp > 1 && p.pp == 1) broken(v, "parallel.vp", std::to_string(p.vp), "interleaving (vp > 1) needs pp > 1");
    pipeline_split(v, m, p);
    divides(v, p.cp, m.seq_len, "parallel.cp", "model.seq_len");
    if (p.cp > 1 && p.cp_kind == CpKind::ulysses && !ulysses_fits(m, p.tp_cols(), p.cp))
        broken(v, "parallel.cp_kind", "\"ulysses\"",
               m.attention_kind == AttentionKind::mla
                   ? fmt::format("needs model.heads ({}) divisible by tp*cp ({}): Ulysses shards the heads", m.heads, p.tp * p.cp)
                   : fmt::format("needs model.heads ({}) and model.kv_heads ({}) divisible by tp*cp ({}): Ulysses shards the heads",
                                 m.heads, m.kv_heads, p.tp * p.cp));
    if (t.global_batch % (p.dp * p.microbatch) != 0)
        broken(v, "training.global_batch", std::to_string(t.global_batch),
               fmt::format("must be a multiple of dp*microbatch ({})", p.dp * p.microbatch));
    if (p.ep > 1 && !m.moe.enabled()) broken(v, "parallel.ep", std::to_string(p.ep), "expert parallelism needs model.moe");
    expert_tensor_parallel(v, m, p, true);
    if (m.moe.enabled() && divides(v, p.ep, m.moe.experts, "parallel.ep", "model.moe.experts")) {
        if (p.expert_tp() == p.tp)
            divides(v, p.ep, p.dp * p.cp, "parallel.ep", "dp*cp");
        else
            divides(v, p.ep, p.tp * p.dp * p.cp, "parallel.ep", "tp*dp*cp (etp 1: experts whole on each GPU)");
    }
    has_peak(v, sys, t.precision, "training.precision");
    if (p.offload != Offload::none && sys.host_memory.capacity_bytes <= 0)
        broken(v, "parallel.offload", fmt::format("\"{}\"", to_string(p.offload)),
               fmt::format("\"none\": system {} describes no host memory (set system.host_memory)", sys.name));
    return v;
}

std::vector<InputError> check_layout(const ModelSpec& m, const SystemSpec& sys, const InferenceSpec& s, const ParallelConfig& p) {
    Violations v;
    if (p.tp * p.pp * p.dp > kMaxGpus) {
        broken(v, "parallel", fmt::format("tp*pp*dp = {}", static_cast<double>(p.tp) * p.pp * p.dp), fmt::format("at most {} GPUs", kMaxGpus));
        return v;
    }
    // Inference is prefill then decode against a KV cache: a decoder's. An encoder or a ViT runs
    // one forward pass with nothing to decode (its forward is part of what `train` times).
    if (m.kind != ModelKind::decoder)
        broken(v, "model.kind", fmt::format("\"{}\"", to_string(m.kind)),
               "\"decoder\": infer, serve and roofline model autoregressive decoding; an encoder or ViT has none (time its training with `train`)");
    if (p.summa()) broken(v, "parallel.tp_rows", std::to_string(p.tp_rows), "1: SUMMA 2D tensor parallelism is modelled for training only");
    if (!p.summa()) tensor_parallel(v, m, p);
    divides(v, p.pp, m.layers, "parallel.pp", "model.layers");
    // Inference splits a batch over tp x pp and runs dp independent replicas; splitting one
    // prompt's sequence (context parallelism) is not modelled.
    if (p.cp != 1) broken(v, "parallel.cp", std::to_string(p.cp), "inference supports cp = 1 only");
    if (p.ep > 1 && !m.moe.enabled()) broken(v, "parallel.ep", std::to_string(p.ep), "expert parallelism needs model.moe");
    // Experts split like the dense FFN (etp = tp) go over ep of the dp replicas.
    expert_tensor_parallel(v, m, p, false);
    if (m.moe.enabled() && divides(v, p.ep, m.moe.experts, "parallel.ep", "model.moe.experts") && p.expert_tp() == p.tp)
        divides(v, p.ep, p.dp, "parallel.ep", "parallel.dp");
    has_peak(v, sys, s.precision, "inference.precision");
    return v;
}

bool ulysses_fits(const ModelSpec& m, int64_t tp, int64_t cp) {
    const int64_t ranks = tp * cp;
    // MLA attends with one K/V per query head.
    return m.heads % ranks == 0 && (m.attention_kind == AttentionKind::mla || m.kv_heads % ranks == 0);
}

bool summa_fits(const ModelSpec& m, int64_t tp, int64_t rows, int64_t cp) {
    if (rows <= 1 || m.seq_len % cp != 0) return false;
    ParallelConfig p;
    p.tp = tp;
    p.tp_rows = rows;
    p.cp = cp;
    Violations v;
    summa_grid(v, m, p);
    return v.empty();
}

std::vector<InputError> check_trainable(const ModelSpec& m, const SystemSpec& sys, const TrainingSpec& t, int64_t cp) {
    Violations v;
    has_peak(v, sys, t.precision, "training.precision");
    recurrent_training(v, m, t, cp);
    return v;
}

}  // namespace sm
