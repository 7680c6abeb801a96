#include "training/step.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "training/offload.hpp"

namespace sm {

namespace {

double as_d(int64_t x) { return static_cast<double>(x); }

// Weights as the framework stores them: bf16/fp16 (fp8 GEMMs cast from them), fp32 for fp32/tf32.
double stored_weight_bytes(Precision p) { return bytes_per_element(activation_precision(p)); }

// What one GPU keeps of `n` parameters when ZeRO partitions them: dense ones over the dp x cp
// replicas, expert ones over the tp x dp x cp / (ep x etp) replicas that hold the same experts
// (the ep ranks are carved out of the stage, so they are not replicas of each other).
double zero_shard(double n, double experts, const ParallelConfig& p) {
    return (n - experts) / as_d(p.dp * p.cp) + experts / as_d(p.expert_replicas());
}

// Micro-batches each data-parallel replica runs per step.
double microbatches_per_step(const TrainingSpec& t, const ParallelConfig& p) {
    return std::ceil(as_d(t.global_batch) / as_d(p.dp * p.microbatch));
}

GradReduce resolved(GradReduce g, const ParallelConfig& p) {
    if (g != GradReduce::automatic) return g;
    return p.pp > 1 ? GradReduce::per_step : GradReduce::per_microbatch;
}

// Gradients live partitioned only when they are reduce-scattered every micro-batch: ZeRO 3, and
// ZeRO 2 reducing per micro-batch; otherwise the whole stage's fp32 buffer accumulates.
bool grads_partitioned(const ParallelConfig& p, const TrainingSpec& t) {
    return p.zero == 3 || (p.zero == 2 && resolved(t.grad_reduce, p) == GradReduce::per_microbatch);
}

// Pipeline point-to-point: each TP rank sends 1/tp of the activation over its own NIC
// (Megatron's scatter/gather optimisation, Narayanan et al. 2021 sec. 4.1; with SP the tensor is
// already sharded); the receiver reassembles it over the scale-up fabric.
CollectiveCost pipeline_hop(const TrainContext& c, const ParallelConfig& p, const CommSpans& spans) {
    if (p.pp == 1) return {};
    const SystemSpec& sys = c.system;
    const double full = as_d(p.microbatch) * as_d(c.model.seq_len) / as_d(p.cp) * as_d(c.model.hidden) *
                        bytes_per_element(activation_precision(c.training.precision));
    CollectiveCost k = collective_cost(Collective::p2p, full / as_d(p.tp), spans.span[idx(CommGroup::pp)], sys);
    if (!p.sequence_parallel) k += collective_cost(Collective::all_gather, full, spans.span[idx(CommGroup::tp)], sys);
    return k;
}

}  // namespace

StageRates stage_rates(const TrainContext& c, const ParamCount& pc, const ParallelConfig& p, const LayerCosts& lc,
                       const CommSpans& spans) {
    const ModelSpec& m = c.model;
    const TrainingSpec& t = c.training;
    StageRates r;
    const double tp = as_d(p.tp);
    const double replicas[2] = {as_d(p.dp * p.cp), as_d(p.expert_replicas())};
    for (size_t e = 0; e < 2; ++e) {
        r.weight_bytes[e] = stored_weight_bytes(t.precision) / (p.zero == 3 ? replicas[e] : 1.0);
        r.grad_bytes[e] = bytes_per_element(t.grad_precision) / (grads_partitioned(p, t) ? replicas[e] : 1.0);
        r.optimizer_share[e] = p.zero >= 1 ? 1.0 / replicas[e] : 1.0;
        r.optimizer_bytes[e] = t.optimizer_state_bytes_per_param * r.optimizer_share[e];
    }
    // Only the kinds the model holds: a stage costs a few multiply-adds per kind, per layout.
    for (size_t k = 0; k < kLayerKinds && r.kinds.count < kMaxKindsHeld; ++k)
        if (pc.layers[k] > 0) r.kinds.kinds[r.kinds.count++] = static_cast<LayerKind>(k);
    for (size_t i = 0; i < r.kinds.size(); ++i) {
        const size_t k = idx(r.kinds.kinds[i]);
        const BlockCost& b = lc.layer[k];
        const LayerParams& lp = pc.layer[k];
        r.time_s[i] = b.total_s();
        r.experts[i] = lp.experts / as_d(p.expert_tp() * p.ep);
        r.params[i] = (lp.total - lp.experts) / tp + r.experts[i];
        r.trained_experts[i] = lp.trainable_experts / as_d(p.expert_tp() * p.ep);
        r.trained[i] = (lp.trainable - lp.trainable_experts) / tp + r.trained_experts[i];
        r.act_bytes[i] = b.activation_bytes(p.recompute);
        r.fwd_window_s[i] = b.fwd_wall_s;
        r.bwd_window_s[i] = b.bwd_wall_s + b.recompute_s;
        // The layer in backward holds what recompute rebuilt: a whole layer (beyond its stored
        // input) under full recompute, its recomputed modules' activations under selective.
        // Plus what the block holds only while it runs.
        r.working_bytes[i] = (p.recompute == Recompute::full        ? b.saved_bytes - b.input_bytes
                              : p.recompute == Recompute::selective ? b.selective_freed_bytes
                                                                    : 0.0) +
                             b.transient_bytes;
    }
    r.embed_time_s = lc.embedding.total_s();
    r.head_time_s = lc.head.total_s();
    r.embed_params = pc.embedding / tp;
    // Off the first stage, a tied output layer (whose lm_head count is 0) and multi-token
    // prediction, whose modules embed the next tokens, each need the word embedding: one copy.
    const bool words_copy = p.pp > 1 && (m.tied_embeddings || m.mtp_layers > 0);
    const double head = pc.lm_head + (words_copy ? as_d(m.vocab) * as_d(m.hidden) : 0.0);
    const double expert_ranks = as_d(p.expert_tp() * p.ep);
    r.head_experts = pc.mtp.experts / expert_ranks;
    r.head_params = head / tp + pc.final_norm + (pc.mtp.total - pc.mtp.experts) / tp + r.head_experts;
    // LoRA freezes the embedding, the head and the norms outside the blocks (the MTP blocks keep
    // their adapters).
    r.head_trained_experts = pc.mtp.trainable_experts / expert_ranks;
    r.embed_trained = pc.frozen_base ? 0.0 : r.embed_params;
    r.head_trained = pc.frozen_base ? (pc.mtp.trainable - pc.mtp.trainable_experts) / tp + r.head_trained_experts : r.head_params;
    r.embed_act = lc.embedding.saved_bytes;
    r.head_act = lc.head.saved_bytes;
    r.embed_fwd_window_s = lc.embedding.fwd_wall_s;
    r.embed_bwd_window_s = lc.embedding.bwd_wall_s + lc.embedding.recompute_s;
    r.head_fwd_window_s = lc.head.fwd_wall_s;
    r.head_bwd_window_s = lc.head.bwd_wall_s + lc.head.recompute_s;
    // One micro-batch through every stage: per-GPU block FLOP and work, all blocks.
    r.model_flop_mb = lc.embedding.model_flop + lc.head.model_flop;
    r.work_mb = lc.embedding.work;
    r.work_mb.add(lc.head.work, 1.0);
    for (const LayerKind kind : r.kinds) {
        const size_t k = idx(kind);
        r.model_flop_mb += as_d(pc.layers[k]) * lc.layer[k].model_flop;
        r.recompute_flop_mb += as_d(pc.layers[k]) * lc.layer[k].recompute_flop;
        r.work_mb.add(lc.layer[k].work, as_d(pc.layers[k]));
    }
    r.pp_hop = pipeline_hop(c, p, spans);
    return r;
}

namespace {

// One pipeline GPU in figures: its micro-batch time, parameters (of which expert ones), the
// trained ones among them, and activation bytes; `layers`, `layer_act` and the blocks' pass
// times are what activation offload moves per layer and hides behind; the whole GPU's pass
// times (ends included) are the data-parallel windows.
struct StageFigures {
    double time_s = 0, params = 0, experts = 0, trained = 0, trained_experts = 0, activations = 0;
    double layers = 0, layer_act = 0, in_flight = 0, block_fwd_s = 0, block_bwd_s = 0;
    double fwd_wall_s = 0, bwd_wall_s = 0;
};

// Summed in locals and returned whole: a default-constructed StageFigures is zeroed by a
// string store (rep stos) on every call, which the search's per-GPU scan pays dearly for.
StageFigures stage_figures(const StageLoad& l, const StageRates& r, double in_flight) {
    double time_s = 0, params = 0, experts = 0, trained = 0, trained_experts = 0, layers = 0;
    double block_fwd_s = 0, block_bwd_s = 0, act = 0, working = 0;
    for (size_t i = 0; i < r.kinds.size(); ++i) {
        const int64_t blocks = l.blocks[idx(r.kinds.kinds[i])];
        const double n = as_d(blocks);
        time_s += n * r.time_s[i];
        params += n * r.params[i];
        experts += n * r.experts[i];
        trained += n * r.trained[i];
        trained_experts += n * r.trained_experts[i];
        block_fwd_s += n * r.fwd_window_s[i];
        block_bwd_s += n * r.bwd_window_s[i];
        layers += n;
        act += n * r.act_bytes[i];
        if (blocks > 0) working = std::max(working, r.working_bytes[i]);
    }
    const double layer_act = layers > 0 ? act / layers : 0.0;
    double fwd_wall_s = block_fwd_s, bwd_wall_s = block_bwd_s;
    if (l.embedding) {
        time_s += r.embed_time_s;
        params += r.embed_params;
        trained += r.embed_trained;
        fwd_wall_s += r.embed_fwd_window_s;
        bwd_wall_s += r.embed_bwd_window_s;
        act += r.embed_act;
    }
    if (l.head) {
        time_s += r.head_time_s;
        params += r.head_params;
        experts += r.head_experts;
        trained += r.head_trained;
        trained_experts += r.head_trained_experts;
        fwd_wall_s += r.head_fwd_window_s;
        bwd_wall_s += r.head_bwd_window_s;
        act += r.head_act;
    }
    return StageFigures{.time_s = time_s,
                        .params = params,
                        .experts = experts,
                        .trained = trained,
                        .trained_experts = trained_experts,
                        .activations = in_flight * act + working,
                        .layers = layers,
                        .layer_act = layer_act,
                        .in_flight = in_flight,
                        .block_fwd_s = block_fwd_s,
                        .block_bwd_s = block_bwd_s,
                        .fwd_wall_s = fwd_wall_s,
                        .bwd_wall_s = bwd_wall_s};
}

// The second memory tier (parallel.offload, training/offload.cpp) for one pipeline GPU whose
// optimizer updates `optimizer_params` parameters; `gpu_optimizer_s` is its optimizer pass.
OffloadResult stage_offload(const StageFigures& f, double optimizer_params, const TrainContext& c, const ParallelConfig& p,
                            double mb, double gpu_optimizer_s) {
    if (p.offload == Offload::none) return {};
    const TrainingSpec& t = c.training;
    const double layers = std::max(1.0, f.layers);
    const OffloadInput in{optimizer_params, t.optimizer_state_bytes_per_param, bytes_per_element(t.grad_precision),
                          stored_weight_bytes(t.precision), f.layer_act, f.layers * f.in_flight, f.layers, mb,
                          f.block_fwd_s / layers, f.block_bwd_s / layers};
    return offload_cost(p.offload, in, c.system.host_memory, gpu_optimizer_s);
}

// Inlined into the pipeline scan, its one hot caller (the search costs it per GPU and layout).
[[gnu::always_inline]] inline TrainMemory stage_memory(const StageFigures& f, const StageRates& r, const TrainContext& c,
                                                       const ParallelConfig& p, double mb) {
    const TrainingSpec& t = c.training;
    const double dense = f.params - f.experts, trained_dense = f.trained - f.trained_experts;
    TrainMemory mem;
    mem.weights_bytes = dense * r.weight_bytes[0] + f.experts * r.weight_bytes[1];
    mem.gradients_bytes = trained_dense * r.grad_bytes[0] + f.trained_experts * r.grad_bytes[1];
    mem.optimizer_bytes = trained_dense * r.optimizer_bytes[0] + f.trained_experts * r.optimizer_bytes[1];
    mem.activations_bytes = f.activations;
    if (p.offload != Offload::none) {
        const double optimizer_params = trained_dense * r.optimizer_share[0] + f.trained_experts * r.optimizer_share[1];
        const OffloadResult off = stage_offload(f, optimizer_params, c, p, mb, 0.0);
        mem.optimizer_bytes -= off.optimizer_hbm_bytes;
        mem.activations_bytes -= off.activation_hbm_bytes;
        mem.host_bytes = off.host_bytes;
    }
    mem.overhead_bytes = t.framework_overhead_bytes + t.comm_buffer_bytes;
    mem.peak_bytes_per_gpu =
        mem.weights_bytes + mem.gradients_bytes + mem.optimizer_bytes + mem.activations_bytes + mem.overhead_bytes;
    return mem;
}

// A pipeline GPU's blocks summed into one micro-batch's cost.
BlockCost stage_block(const StageLoad& l, const LayerCosts& lc) {
    BlockCost b;
    for (size_t k = 0; k < kLayerKinds; ++k)
        if (l.blocks[k] > 0) b.add(lc.layer[k], as_d(l.blocks[k]));
    if (l.embedding) b.add(lc.embedding, 1.0);
    if (l.head) b.add(lc.head, 1.0);
    return b;
}

// The pipeline GPUs that set the step: the slowest (its micro-batch time paces the schedule),
// the one with the largest memory peak, and the one with the most parameters (its gradients are
// the largest data-parallel reduction).
struct PipelineScan {
    StageLoad slowest;
    StageFigures fullest;  // the GPU with the most parameters
    int64_t slowest_gpu = 0, peak_gpu = 0;
    double slowest_s = -1;
    double most_host_bytes = 0;  // offloaded to host memory by the GPU that offloads most
    TrainMemory peak;
};

PipelineScan scan_pipeline(const TrainContext& c, const StageSplit& split, const StageRates& rates, const ParallelConfig& p,
                           double mb) {
    const ModelSpec& m = c.model;
    PipelineScan s;
    s.peak.peak_bytes_per_gpu = -1;
    s.fullest.params = -1;
    // With one kind of block, GPUs of equal layer count are alike but for the micro-batches in
    // flight, which fall along the pipeline: GPU 0, GPU 1 (the middle ones), uniform's first
    // shorter stage and the last GPU cover every maximum. Mixed kinds or a listed layout: every GPU.
    const bool mixed = rates.kinds.size() > 1;
    auto next = [&](int64_t g) {
        if (mixed || split.listed != nullptr || g + 1 >= split.pp - 1) return g + 1;
        if (g == 0) return int64_t{1};
        return split.extra > g ? split.extra : split.pp - 1;
    };
    for (int64_t g = 0; g < split.pp; g = next(g)) {
        const StageLoad load = stage_load(m, split, g);
        const StageFigures f = stage_figures(load, rates, micro_batches_in_flight(split.pp, split.vp, g, mb));
        if (f.time_s > s.slowest_s) {
            s.slowest_s = f.time_s;
            s.slowest = load;
            s.slowest_gpu = g;
        }
        if (f.params > s.fullest.params) s.fullest = f;
        const TrainMemory mem = stage_memory(f, rates, c, p, mb);
        s.most_host_bytes = std::max(s.most_host_bytes, mem.host_bytes);
        if (mem.peak_bytes_per_gpu > s.peak.peak_bytes_per_gpu) {
            s.peak = mem;
            s.peak_gpu = g;
        }
    }
    return s;
}

// The schedule: every micro-batch passes the slowest GPU; the fill and drain add (pp - 1)
// micro-batch times, (pp - 1)/vp with vp interleaved chunks (Narayanan et al. 2021, sec. 2.2).
void schedule(const BlockCost& slowest, double mb, double pp, double vp, TrainBreakdown& bd, TrainLinkTimes& link) {
    bd.compute_s = mb * (slowest.fwd_s + slowest.bwd_s);
    bd.recompute_s = mb * slowest.recompute_s;
    // SUMMA's two grid directions are both tensor-parallel traffic.
    bd.tp_comm_exposed_s = mb * (slowest.comm_exposed_s[idx(CommGroup::tp)] + slowest.comm_exposed_s[idx(CommGroup::tp_rows)]);
    bd.cp_comm_exposed_s = mb * slowest.comm_exposed_s[idx(CommGroup::cp)];
    bd.ep_comm_exposed_s = mb * slowest.comm_exposed_s[idx(CommGroup::ep)];
    bd.bubble_s = (pp - 1.0) / vp * slowest.total_s();
    link.tp_rows_s = mb * slowest.comm_link_s[idx(CommGroup::tp_rows)];
    link.tp_s = mb * slowest.comm_link_s[idx(CommGroup::tp)] + link.tp_rows_s;
    link.cp_s = mb * slowest.comm_link_s[idx(CommGroup::cp)];
    link.ep_s = mb * slowest.comm_link_s[idx(CommGroup::ep)];
}

// Pipeline point-to-point: one activation forward and one gradient backward per micro-batch
// and chunk, each a hop `k` (pipeline_hop); the fill and drain add pp - 1 more each on the
// critical path. With overlap_p2p_comm (interleaved only) a steady-state transfer hides behind
// the chunk computed meanwhile; only what outlasts it is exposed.
void pipeline_p2p(const TrainContext& c, const ParallelConfig& p, const CollectiveCost& k, const BlockCost& slowest,
                  double mb, double vp, TrainBreakdown& bd, TrainLinkTimes& link, Work& work) {
    if (p.pp == 1) return;
    const SystemSpec& sys = c.system;
    const double hop = k.time_s;
    link.pp_s = 2.0 * mb * vp * hop;
    // Every one of the pp x vp - 1 chunk boundaries is crossed both ways per micro-batch, by each
    // of the stage's tp x cp x dp ranks.
    const double hops = 2.0 * mb * (as_d(p.pp) * vp - 1.0) * as_d(p.tp * p.cp * p.dp);
    work.scale_up_bytes += hops * k.scale_up_bytes;
    work.scale_out_bytes += hops * k.scale_out_bytes;
    double steady = link.pp_s;
    if (c.training.overlap_p2p_comm && vp > 1) {
        // What hides still slows the compute it hides behind (overlap_interference, as for DP).
        const double fwd = slowest.fwd_wall_s / vp, bwd = (slowest.bwd_wall_s + slowest.recompute_s) / vp;
        const double exposed = mb * vp * (std::max(0.0, hop - fwd) + std::max(0.0, hop - bwd));
        steady = exposed + sys.eff.overlap_interference * (link.pp_s - exposed);
    }
    bd.pp_comm_exposed_s = (1.0 - c.training.pp_overlap) * (steady + 2.0 * (as_d(p.pp) - 1.0) * hop);
}

// Exposed part of a gradient reduction of `link` seconds behind a backward pass of `window`
// seconds over `layers` layers: bucketed, so all but the last layer's bucket can hide. With
// `chunks` interleaved chunks each chunk's share starts when that chunk's last backward ends,
// `spacing` seconds after the previous chunk's (the cooldown runs one group of micro-batches
// per chunk), so the early shares hide behind the later chunks' backward too.
double exposed_reduction(double link, double window, double layers, int64_t chunks, double spacing) {
    if (chunks == 1) return std::max(link / layers, link - window);
    const double share = link / as_d(chunks), own = window / as_d(chunks);
    double end = -std::numeric_limits<double>::infinity();  // relative to the end of the backward
    for (int64_t v = chunks - 1; v >= 0; --v) end = std::max(end, -as_d(v) * spacing - own) + share;
    return std::max(link / layers, end);
}

// The gradient reduction and the parameter gather of `f`, the GPU with the most parameters, over
// its data-parallel replicas. Expert parameters have tp x dp x cp / (ep x etp) replicas (dp x cp /
// ep by default; more with whole experts): their gradients reduce over that group of their own.
StageRates::DataParallelCosts data_parallel_collectives(const TrainContext& c, const ParallelConfig& p, const CommSpans& spans,
                                                        const StageFigures& f) {
    const SystemSpec& sys = c.system;
    const TrainingSpec& t = c.training;
    const double wbytes = stored_weight_bytes(t.precision), gbytes = bytes_per_element(t.grad_precision);
    const bool split_experts = p.experts_have_own_replicas() && f.experts > 0;
    const GroupSpan& g = spans.span[idx(CommGroup::dp)];
    const GroupSpan& ge = spans.expert_dp;
    // `all` parameters of which `experts` are expert ones, `bytes_per_param` each.
    auto over_replicas = [&](Collective k, double all, double experts, double bytes_per_param) {
        if (!split_experts) return collective_cost(k, all * bytes_per_param, g, sys);
        CollectiveCost s = collective_cost(k, (all - experts) * bytes_per_param, g, sys);
        if (experts > 0 && ge.size > 1) s += collective_cost(k, experts * bytes_per_param, ge, sys);
        return s;
    };
    // Gradients exist for the trained parameters only (LoRA: the adapters); ZeRO-3 gathers every
    // weight for each pass, ZeRO-1/2 only the updated shards.
    const bool sharded_reduce = p.zero >= 1;
    StageRates::DataParallelCosts out;
    out.of = {f.trained, f.trained_experts, f.params, f.experts};
    out.grad = over_replicas(sharded_reduce ? Collective::reduce_scatter : Collective::all_reduce, f.trained, f.trained_experts,
                             gbytes);
    out.gather = p.zero == 3   ? over_replicas(Collective::all_gather, f.params, f.experts, wbytes)
                 : p.zero >= 1 ? over_replicas(Collective::all_gather, f.trained, f.trained_experts, wbytes)
                               : CollectiveCost{};
    return out;
}

// Data parallelism over dp x cp replicas: gradient reduction and parameter gathers (ZeRO) of
// `f` (data_parallel_collectives, kept in `rates` while the fullest GPU stays the same).
void data_parallel_sync(const TrainContext& c, const ParallelConfig& p, const CommSpans& spans, const StageFigures& f,
                        const StageRates& rates, double mb, TrainBreakdown& bd, TrainLinkTimes& link, Work& work) {
    if (p.dp * p.cp == 1) return;
    const SystemSpec& sys = c.system;
    const TrainingSpec& t = c.training;
    StageRates::DataParallelCosts& memo = rates.dp_memo;
    if (memo.of != std::array<double, 4>{f.trained, f.trained_experts, f.params, f.experts})
        memo = data_parallel_collectives(c, p, spans, f);
    const CollectiveCost& grad = memo.grad;
    const CollectiveCost& gather = memo.gather;
    const double grad_s = grad.time_s, gather_s = gather.time_s;

    // Windows are wall times of the passes (exposed layer traffic included), so a faster GPU
    // never exposes more data-parallel traffic than it saves.
    const double fwd_window = f.fwd_wall_s, bwd_window = f.bwd_wall_s;
    const double layers = std::max(1.0, f.layers);
    // What hides still slows the compute (NCCL kernels take SMs and HBM bandwidth).
    const double slow = sys.eff.overlap_interference;
    const int64_t vp = p.pp > 1 ? p.vp : 1;
    auto exposed_of = [&](double l, double window, int64_t chunks) {
        if (!t.dp_overlap) return l;
        const double spacing = std::min(as_d(p.pp), mb) * window / as_d(chunks);
        const double e = exposed_reduction(l, window, layers, chunks, spacing);
        return e + slow * (l - e);
    };
    const int64_t grad_chunks = t.grad_sync_per_chunk ? vp : 1;
    // Reductions and gathers per step: what the energy model charges, on every GPU.
    double grads = 1.0, gathers = 1.0;
    // One data-parallel stream: what runs in the same window shares the same links.
    if (p.zero == 3) {  // per micro-batch: weights gathered for forward and for backward, and the
                        // partitioned gradients reduce-scattered
        link.dp_s = mb * (2.0 * gather_s + grad_s);
        bd.dp_comm_exposed_s = mb * exposed_of(2.0 * gather_s + grad_s, fwd_window + bwd_window, 1);
        grads = mb;
        gathers = 2.0 * mb;
    } else if (grads_partitioned(p, t)) {  // ZeRO 2 per micro-batch (DeepSpeed)
        link.dp_s = mb * grad_s + gather_s;
        bd.dp_comm_exposed_s = mb * exposed_of(grad_s, bwd_window, 1) + exposed_of(gather_s, fwd_window, 1);
        grads = mb;
    } else {  // accumulated and reduced once after the last micro-batch (ZeRO 0/1, and 2 per step);
              // ZeRO >= 1 gathers the updated shards during the next forward
        link.dp_s = grad_s + gather_s;
        bd.dp_comm_exposed_s = exposed_of(grad_s, bwd_window, grad_chunks) + exposed_of(gather_s, fwd_window, 1);
    }
    const double gpus = as_d(p.gpus());
    work.scale_up_bytes += gpus * (grads * grad.scale_up_bytes + gathers * gather.scale_up_bytes);
    work.scale_out_bytes += gpus * (grads * grad.scale_out_bytes + gathers * gather.scale_out_bytes);
}

// Overlap hides traffic behind compute, not behind other traffic: every collective crossing the
// scale-out network shares each GPU's NIC, so the step lasts at least their sum. What overlap
// claimed beyond that is exposed after all (booked as data-parallel, the overlapped kind).
void nic_floor(const CommSpans& spans, const TrainLinkTimes& link, TrainBreakdown& bd) {
    double nic_s = 0;
    const std::pair<CommGroup, double> traffic[] = {{CommGroup::tp, link.tp_s - link.tp_rows_s},
                                                    {CommGroup::tp_rows, link.tp_rows_s},
                                                    {CommGroup::cp, link.cp_s},
                                                    {CommGroup::ep, link.ep_s}, {CommGroup::dp, link.dp_s},
                                                    {CommGroup::pp, link.pp_s}};
    for (const auto& [g, l] : traffic)
        if (spans.span[idx(g)].remote > 1) nic_s += l;
    if (nic_s > bd.sum()) bd.dp_comm_exposed_s += nic_s - bd.sum();
}

}  // namespace

CostContext training_cost_context(const TrainingSpec& t) {
    CostContext ctx;
    ctx.math = t.precision;
    ctx.act_bytes = bytes_per_element(activation_precision(t.precision));
    ctx.operand_bytes = bytes_per_element(t.precision);
    ctx.weight_bytes = ctx.operand_bytes;
    ctx.kv_bytes = ctx.act_bytes;
    ctx.fp8_recipe = t.fp8_recipe;
    return ctx;
}

LayerShape training_shape(const ModelSpec& m, const ParallelConfig& p, const TrainingSpec& t) {
    LayerShape s;
    s.batch = as_d(p.microbatch);
    // Under SUMMA each grid row holds 1/tp_rows of the context-parallel rank's tokens.
    s.q_len = as_d(m.seq_len) / as_d(p.cp * p.tp_rows);
    s.kv_len = as_d(m.seq_len);
    // Causal attention computes the lower triangle (load-balanced across context-parallel ranks).
    s.causal_fraction = m.causal ? 0.5 : 1.0;
    s.tp = p.tp_cols();
    s.tp_rows = p.tp_rows;
    s.cp = p.cp;
    s.cp_kind = p.cp_kind;
    s.ep = p.ep;
    s.etp = p.expert_tp();
    // SUMMA keeps activations sharded over the whole grid between GEMMs: its layouts carry
    // sequence_parallel (scenario.cpp and the search set it).
    s.sequence_parallel = p.sequence_parallel && s.tp > 1;
    s.act_bytes = bytes_per_element(activation_precision(t.precision));
    s.gather_bytes = std::min(s.act_bytes, bytes_per_element(t.precision));
    s.kv_bytes = s.act_bytes;
    s.lora = t.lora;
    s.shared_expert_overlap = t.moe_shared_expert_overlap;
    s.a2a_overlap = t.moe_a2a_overlap;
    s.dedup_dispatch = t.moe_dispatcher == MoeDispatcher::flex;
    return s;
}

LayerOpSet layer_op_set(const TrainContext& c, const ParallelConfig& p) {
    LayerOpSet out;
    layer_op_set(c, p, out);
    return out;
}

void layer_op_set(const TrainContext& c, const ParallelConfig& p, LayerOpSet& out) {
    const LayerShape shape = training_shape(c.model, p, c.training);
    const CostContext ctx = training_cost_context(c.training);
    for (const LayerKind k : layer_kinds(c.model)) {
        layer_ops(out.layer[idx(k)], c.model, shape, k);
        cost_ops(out.layer[idx(k)], c.system, ctx, out.layer_costs[idx(k)]);
    }
    embedding_ops(out.embedding, c.model, shape);
    cost_ops(out.embedding, c.system, ctx, out.embedding_costs);
    head_ops(out.head, c.model, shape, true);
    cost_ops(out.head, c.system, ctx, out.head_costs);
}

LayerCompute compute_layers(const TrainContext& c, const LayerOpSet& ops, RecomputePlan recompute) {
    LayerCompute out;
    compute_layers(c, ops, recompute, out);
    return out;
}

void compute_layers(const TrainContext& c, const LayerOpSet& ops, RecomputePlan recompute, LayerCompute& out) {
    out.ops = &ops;
    for (const LayerKind k : layer_kinds(c.model)) {
        out.layer[idx(k)] = cost_block_compute(ops.layer[idx(k)], ops.layer_costs[idx(k)], recompute);
        out.costs.layer[idx(k)] = out.layer[idx(k)].cost;
    }
    // The embedding and the head are never recomputed.
    out.embedding = cost_block_compute(ops.embedding, ops.embedding_costs, Recompute::none);
    out.costs.embedding = out.embedding.cost;
    out.head = cost_block_compute(ops.head, ops.head_costs, Recompute::none);
    out.costs.head = out.head.cost;
}

namespace {

CommSpans layer_comm_spans(const LayerSpans& l) {
    CommSpans spans;  // a layer's collectives run over tp, cp and ep only
    spans.span[idx(CommGroup::tp)] = l.tp;
    spans.span[idx(CommGroup::cp)] = l.cp;
    spans.span[idx(CommGroup::ep)] = l.ep;
    spans.span[idx(CommGroup::tp_rows)] = l.tp_rows;
    return spans;
}

}  // namespace

LayerComms layer_comms(const TrainContext& c, const LayerOpSet& ops, const LayerSpans& l) {
    LayerComms out;
    layer_comms(c, ops, l, out);
    return out;
}

void layer_comms(const TrainContext& c, const LayerOpSet& ops, const LayerSpans& l, LayerComms& out) {
    const CommSpans spans = layer_comm_spans(l);
    for (const LayerKind k : layer_kinds(c.model)) cost_comms(ops.layer[idx(k)].comms, c.system, spans, out.layer[idx(k)]);
    cost_comms(ops.embedding.comms, c.system, spans, out.embedding);
    cost_comms(ops.head.comms, c.system, spans, out.head);
}

LayerCosts cost_layers(const TrainContext& c, const ParallelConfig& p) {
    const LayerSpans l = place_layer_groups(p, c.system);
    const LayerOpSet ops = layer_op_set(c, p);
    return cost_layers(c, p, l, compute_layers(c, ops, recompute_plan(p, c.model.layers)), layer_comms(c, ops, l));
}

LayerCosts cost_layers(const TrainContext& c, const ParallelConfig& p, const LayerSpans& l, const LayerCompute& compute,
                       const LayerComms& comms) {
    LayerCosts out;
    cost_layers(c, p, l, compute, comms, out);
    return out;
}

void cost_layers(const TrainContext& c, const ParallelConfig& p, const LayerSpans& l, const LayerCompute& compute,
                 const LayerComms& comms, LayerCosts& out) {
    const CommSpans spans = layer_comm_spans(l);
    const double ov = c.training.tp_overlap;
    const LayerOpSet& ops = *compute.ops;
    const RecomputePlan plan = recompute_plan(p, c.model.layers);
    for (const LayerKind k : layer_kinds(c.model))
        out.layer[idx(k)] = with_comms(compute.layer[idx(k)], ops.layer[idx(k)].comms, comms.layer[idx(k)], c.system, spans, plan, ov);
    out.embedding = with_comms(compute.embedding, ops.embedding.comms, comms.embedding, c.system, spans, Recompute::none, ov);
    out.head = with_comms(compute.head, ops.head.comms, comms.head, c.system, spans, Recompute::none, ov);
}

double micro_batches_in_flight(int64_t pp, int64_t vp, int64_t gpu, double microbatches) {
    if (pp == 1) return 1.0;
    if (vp == 1) return std::min(as_d(pp - gpu), microbatches);
    const double chunks = as_d(2 * (pp - gpu - 1) + (vp - 1) * pp + 1);
    return std::min(chunks, microbatches * as_d(vp)) / as_d(vp);
}

// Every pipeline GPU's micro-batch takes at least the pipeline's average: the model's blocks, the
// embedding and the head over pp (the slowest GPU, which paces the step and the bubble, is at
// least that); the bubble's (pp - 1)/vp falls as vp grows, so p.vp's holds for every vp below.
namespace {

// One micro-batch through every stage: `part` of each block's cost times its count, and of the ends.
template <class Part>
double over_blocks(const std::array<int64_t, kLayerKinds>& counts, const LayerCosts& lc, Part part) {
    double total = part(lc.embedding) + part(lc.head);
    for (size_t k = 0; k < kLayerKinds; ++k)
        if (counts[k] > 0) total += as_d(counts[k]) * part(lc.layer[k]);
    return total;
}

}  // namespace

double micro_batch_total_s(const ModelSpec& m, const LayerCosts& lc) { return micro_batch_total_s(count_params(m).layers, lc); }

double micro_batch_total_s(const std::array<int64_t, kLayerKinds>& blocks, const LayerCosts& lc) {
    return over_blocks(blocks, lc, [](const BlockCost& b) { return b.total_s(); });
}

double micro_batch_tensor_s(const ModelSpec& m, const LayerCosts& lc) { return micro_batch_tensor_s(count_params(m).layers, lc); }

double micro_batch_tensor_s(const std::array<int64_t, kLayerKinds>& blocks, const LayerCosts& lc) {
    return over_blocks(blocks, lc, [](const BlockCost& b) { return b.work.tensor_s; });
}

double step_time_floor_s(const TrainContext& c, const ParallelConfig& p, const LayerCosts& lc) {
    return step_time_floor_s(c, p, micro_batch_total_s(c.model, lc));
}

double step_time_floor_s(const TrainContext& c, const ParallelConfig& p, double micro_batch_total_s) {
    const double mb = microbatches_per_step(c.training, p);
    return (mb + (as_d(p.pp) - 1.0) / as_d(p.vp)) * micro_batch_total_s / as_d(p.pp);
}

TrainResult assemble_step(const TrainContext& c, const ParallelConfig& p, const LayerCosts& lc) {
    return assemble_step(c, p, lc, count_params(c.model, c.training.lora));
}

TrainResult assemble_step(const TrainContext& c, const ParallelConfig& p, const LayerCosts& lc, const ParamCount& pc) {
    return assemble_step(c, p, lc, pc, place_groups(p, c.system));
}

TrainResult assemble_step(const TrainContext& c, const ParallelConfig& p, const LayerCosts& lc, const ParamCount& pc,
                          const CommSpans& spans) {
    return assemble_step(c, p, lc, pc, spans, stage_rates(c, pc, p, lc, spans));
}

TrainResult assemble_step(const TrainContext& c, const ParallelConfig& p, const LayerCosts& lc, const ParamCount& pc,
                          const CommSpans& spans, const StageRates& rates) {
    const ModelSpec& m = c.model;
    const TrainingSpec& t = c.training;
    TrainResult r;
    r.gpus = p.gpus();
    const double mb = microbatches_per_step(t, p);
    r.microbatches = static_cast<int64_t>(mb);
    const double pp = as_d(p.pp);
    const double vp = p.pp > 1 ? as_d(p.vp) : 1.0;

    // The stages: a layout the scenario checks refused never gets here; the search builds only
    // valid ones. Should one slip through, cost it as the even split of the fullest stage.
    SplitOutcome cut = split_layers(m.layers, p);
    if (!cut.ok()) {
        ParallelConfig q = p;
        q.split = PipelineSplit::uniform;
        q.vp = 1;
        cut = split_layers(m.layers, q);
    }
    const PipelineScan scan = scan_pipeline(c, cut.split, rates, p, mb);
    r.slowest_stage = scan.slowest_gpu;
    r.peak_stage = scan.peak_gpu;
    const BlockCost slowest = stage_block(scan.slowest, lc);

    TrainBreakdown& bd = r.breakdown;
    schedule(slowest, mb, pp, vp, bd, r.link);
    pipeline_p2p(c, p, rates.pp_hop, slowest, mb, vp, bd, r.link, r.work);
    data_parallel_sync(c, p, spans, scan.fullest, rates, mb, bd, r.link, r.work);

    // Adam: memory-bound over the local shard: read grads, read/write master weights and both
    // moments, write the working copy.
    const StageFigures& fullest = scan.fullest;
    const double local = p.zero >= 1 ? zero_shard(fullest.trained, fullest.trained_experts, p) : fullest.trained;
    double optimizer_bytes = local * (bytes_per_element(t.grad_precision) + 2.0 * t.optimizer_state_bytes_per_param +
                                      stored_weight_bytes(t.precision));
    bd.optimizer_s = memory_time_s(optimizer_bytes, c.system);
    // Second memory tier: the GPU with the most optimizer state sets the transfer time.
    if (p.offload != Offload::none) {
        const OffloadResult offload = stage_offload(fullest, local, c, p, mb, bd.optimizer_s);
        // What the host's optimizer step takes over no longer streams through HBM.
        if (bd.optimizer_s > 0) optimizer_bytes *= 1.0 - offload.gpu_optimizer_s_saved / bd.optimizer_s;
        bd.optimizer_s -= offload.gpu_optimizer_s_saved;
        bd.offload_exposed_s = offload.exposed_s;
        r.link.offload_s = offload.link_s;
    }
    r.work.hbm_bytes += optimizer_bytes * as_d(r.gpus);
    r.work.sram_bytes += optimizer_bytes * as_d(r.gpus);  // streamed through L2 once
    r.work.kernel_s += bd.optimizer_s * as_d(r.gpus);
    nic_floor(spans, r.link, bd);
    r.step_time_s = bd.sum();
    const double tokens = as_d(t.global_batch) * as_d(m.seq_len);
    r.tokens_per_s = tokens / r.step_time_s;
    r.tokens_per_s_per_gpu = r.tokens_per_s / as_d(r.gpus);

    // FLOP over every stage: per-GPU block FLOP x (tp x cp) = one micro-batch's, over mb x dp
    // micro-batches.
    const double shards = as_d(p.tp * p.cp);
    r.work.add(rates.work_mb, shards * mb * as_d(p.dp));
    if (c.system.energy.known()) r.energy = energy_of(c.system, r.work, r.step_time_s, as_d(r.gpus));
    r.cost_usd = cost_usd(c.system, r.step_time_s, as_d(r.gpus));
    r.model_flop_per_step = rates.model_flop_mb * shards * mb * as_d(p.dp);
    const double recompute_flop = rates.recompute_flop_mb * shards * mb * as_d(p.dp);
    const double peak = c.system.accel.matrix_peak(t.precision).value_or(0) * as_d(r.gpus) * r.step_time_s;
    r.mfu = peak > 0 ? r.model_flop_per_step / peak : 0;
    r.hfu = peak > 0 ? (r.model_flop_per_step + recompute_flop) / peak : 0;
    r.params_total = pc.total() + pc.mtp.total;

    r.memory = scan.peak;
    r.fits_in_memory = r.memory.peak_bytes_per_gpu <= c.system.accel.memory_bytes &&
                       scan.most_host_bytes <= c.system.host_memory.capacity_bytes;
    return r;
}

TrainResult evaluate_training(const TrainContext& c, const ParallelConfig& p) {
    return assemble_step(c, p, cost_layers(c, p));
}

std::vector<StageReport> training_stages(const TrainContext& c, const ParallelConfig& p) {
    std::vector<StageReport> out;
    const SplitOutcome cut = split_layers(c.model.layers, p);
    if (!cut.ok()) return out;
    const StageSplit& split = cut.split;
    const LayerCosts lc = cost_layers(c, p);
    const StageRates rates = stage_rates(c, count_params(c.model, c.training.lora), p, lc, place_groups(p, c.system));
    const double mb = microbatches_per_step(c.training, p);
    for (int64_t g = 0; g < split.pp; ++g) {
        StageReport s;
        s.gpu = g;
        for (int64_t v = 0; v < split.vp; ++v) {
            const int64_t j = g + v * split.pp;
            s.chunks.push_back({split.chunk_begin(j), split.chunk_layers(j)});
        }
        s.load = stage_load(c.model, split, g);
        s.micro_batch = stage_block(s.load, lc);
        s.micro_batch_s = s.micro_batch.total_s();
        s.in_flight = micro_batches_in_flight(split.pp, split.vp, g, mb);
        s.memory = stage_memory(stage_figures(s.load, rates, s.in_flight), rates, c, p, mb);
        out.push_back(std::move(s));
    }
    return out;
}

}  // namespace sm
