#include "training/step.hpp"

#include <algorithm>
#include <cmath>

namespace sm {

namespace {

double as_d(int64_t x) { return static_cast<double>(x); }

// Weights as the framework stores them: bf16/fp16 (fp8 GEMMs cast from them), fp32 for fp32/tf32.
double stored_weight_bytes(Precision p) { return bytes_per_element(activation_precision(p)); }

// Parameters held by one GPU of the first and of the last pipeline stage; `experts` of them
// (the same on every stage) are expert weights, sharded over ep as well as tp.
struct StageParams {
    double first = 0, last = 0, experts = 0;
};

StageParams stage_params(const ModelSpec& m, const ParamCount& pc, const ParallelConfig& p) {
    const double tp = as_d(p.tp);
    const double expert_layer = pc.per_layer_experts / (tp * as_d(p.ep));
    const double layer = (pc.per_layer - pc.per_layer_experts) / tp + expert_layer;
    const double layers = std::ceil(as_d(m.layers) / as_d(p.pp));
    const double embed = pc.embedding / tp;
    // A tied output layer keeps its own copy of the word embedding on the last stage.
    const double head = (m.tied_embeddings && p.pp > 1 ? as_d(m.vocab) * as_d(m.hidden) : pc.lm_head) / tp + pc.final_norm;
    const double experts = layers * expert_layer;
    if (p.pp == 1) {
        const double whole = layers * layer + embed + head;  // one stage is both first and last
        return {whole, whole, experts};
    }
    return {layers * layer + embed, layers * layer + head, experts};
}

// What one GPU keeps of `n` stage parameters when ZeRO partitions them: dense ones over the
// dp x cp replicas, expert ones over the dp x cp / ep replicas that hold the same experts (the
// ep ranks are carved out of dp x cp, so they are not replicas of each other).
double zero_shard(double n, double experts, const ParallelConfig& p) {
    const double dpc = as_d(p.dp * p.cp);
    return (n - experts) / dpc + experts / (dpc / as_d(p.ep));
}

}  // namespace

CostContext training_cost_context(const TrainingSpec& t) {
    CostContext ctx;
    ctx.math = t.precision;
    ctx.act_bytes = bytes_per_element(activation_precision(t.precision));
    ctx.operand_bytes = bytes_per_element(t.precision);
    ctx.weight_bytes = ctx.operand_bytes;
    ctx.kv_bytes = ctx.act_bytes;
    return ctx;
}

LayerShape training_shape(const ModelSpec& m, const ParallelConfig& p, const TrainingSpec& t) {
    LayerShape s;
    s.batch = as_d(p.microbatch);
    s.q_len = as_d(m.seq_len) / as_d(p.cp);
    s.kv_len = as_d(m.seq_len);
    // Causal attention computes the lower triangle (load-balanced across context-parallel ranks).
    s.causal_fraction = m.causal ? 0.5 : 1.0;
    s.tp = p.tp;
    s.cp = p.cp;
    s.ep = p.ep;
    s.sequence_parallel = p.sequence_parallel && p.tp > 1;
    s.act_bytes = bytes_per_element(activation_precision(t.precision));
    s.kv_bytes = s.act_bytes;
    return s;
}

LayerCosts cost_layers(const TrainContext& c, const ParallelConfig& p) {
    const LayerShape shape = training_shape(c.model, p, c.training);
    const CostContext ctx = training_cost_context(c.training);
    const CommSpans spans = place_groups(p, c.system);
    const double ov = c.training.tp_overlap;
    LayerCosts out;
    out.layer = cost_block(layer_ops(c.model, shape), c.system, ctx, spans, p.recompute, ov);
    out.embedding = cost_block(embedding_ops(c.model, shape), c.system, ctx, spans, Recompute::none, ov);
    out.head = cost_block(head_ops(c.model, shape, true), c.system, ctx, spans, Recompute::none, ov);
    return out;
}

namespace {

// One micro-batch on the slowest stage (the first holds the embedding, the last the head): what
// neither vp nor ZeRO changes.
struct StageMicrobatch {
    double mb = 0;      // micro-batches per step
    double layers = 0;  // on the fullest stage
    double compute_s = 0, recompute_s = 0;
    std::array<double, kGroups> exposed_s{};
    double total_s = 0;    // compute + recompute + exposed layer traffic
    double tp_link_s = 0;  // tensor-parallel time on the wire
};

StageMicrobatch stage_microbatch(const TrainContext& c, const ParallelConfig& p, const LayerCosts& lc) {
    StageMicrobatch s;
    s.mb = std::ceil(as_d(c.training.global_batch) / as_d(p.dp * p.microbatch));
    s.layers = std::ceil(as_d(c.model.layers) / as_d(p.pp));
    const BlockCost& L = lc.layer;
    const BlockCost& first = lc.embedding;
    const BlockCost& last = lc.head;
    const bool single = p.pp == 1;
    const bool last_slower = last.total_s() > first.total_s();
    auto extra = [&](auto get) { return single ? get(first) + get(last) : get(last_slower ? last : first); };
    s.compute_s = s.layers * (L.fwd_s + L.bwd_s) + extra([](const BlockCost& b) { return b.fwd_s + b.bwd_s; });
    s.recompute_s = s.layers * L.recompute_s;
    s.total_s = s.compute_s + s.recompute_s;
    for (size_t g = 0; g < kGroups; ++g) {
        s.exposed_s[g] = s.layers * L.comm_exposed_s[g] + extra([g](const BlockCost& b) { return b.comm_exposed_s[g]; });
        s.total_s += s.exposed_s[g];
    }
    s.tp_link_s = s.layers * L.comm_link_s[idx(CommGroup::tp)] +
                  extra([](const BlockCost& b) { return b.comm_link_s[idx(CommGroup::tp)]; });
    return s;
}

}  // namespace

double step_time_floor_s(const TrainContext& c, const ParallelConfig& p, const LayerCosts& lc) {
    const StageMicrobatch s = stage_microbatch(c, p, lc);
    return s.mb * s.total_s;
}

TrainResult assemble_step(const TrainContext& c, const ParallelConfig& p, const LayerCosts& lc) {
    const ModelSpec& m = c.model;
    const SystemSpec& sys = c.system;
    const TrainingSpec& t = c.training;
    TrainResult r;
    r.gpus = p.gpus();
    const StageMicrobatch smb = stage_microbatch(c, p, lc);
    const double mb = smb.mb;
    r.microbatches = static_cast<int64_t>(mb);
    const double layers = smb.layers;  // the fullest stage
    const double pp = as_d(p.pp);
    const double vp = p.pp > 1 ? as_d(p.vp) : 1.0;
    const CommSpans spans = place_groups(p, sys);
    const BlockCost& L = lc.layer;
    const BlockCost& first = lc.embedding;
    const BlockCost& last = lc.head;
    const bool single = p.pp == 1;
    const double compute_mb = smb.compute_s;
    const double recompute_mb = smb.recompute_s;
    const std::array<double, kGroups>& exposed_mb = smb.exposed_s;
    const double t_mb = smb.total_s;

    TrainBreakdown& bd = r.breakdown;
    bd.compute_s = mb * compute_mb;
    bd.recompute_s = mb * recompute_mb;
    bd.tp_comm_exposed_s = mb * exposed_mb[idx(CommGroup::tp)];
    bd.cp_comm_exposed_s = mb * exposed_mb[idx(CommGroup::cp)];
    bd.ep_comm_exposed_s = mb * exposed_mb[idx(CommGroup::ep)];
    bd.bubble_s = (pp - 1.0) / vp * t_mb;
    r.link.tp_s = mb * smb.tp_link_s;
    r.link.cp_s = mb * layers * L.comm_link_s[idx(CommGroup::cp)];
    r.link.ep_s = mb * layers * L.comm_link_s[idx(CommGroup::ep)];

    // Pipeline point-to-point: one activation forward and one gradient backward per micro-batch
    // and virtual stage; the fill and drain add pp-1 more on the critical path.
    // Each TP rank sends 1/tp of the activation over its own NIC (Megatron's scatter/gather
    // optimisation, Narayanan et al. 2021 sec. 4.1; with SP the tensor is already sharded); the
    // receiver reassembles it over the scale-up fabric.
    if (p.pp > 1) {
        const double full = as_d(p.microbatch) * as_d(m.seq_len) / as_d(p.cp) * as_d(m.hidden) *
                            bytes_per_element(activation_precision(t.precision));
        const double shard = full / as_d(p.tp);
        double hop = collective_time_s(Collective::p2p, shard, spans.span[idx(CommGroup::pp)], sys);
        if (!p.sequence_parallel)
            hop += collective_time_s(Collective::all_gather, full, spans.span[idx(CommGroup::tp)], sys);
        r.link.pp_s = 2.0 * mb * vp * hop;
        bd.pp_comm_exposed_s = (1.0 - t.pp_overlap) * 2.0 * (mb * vp + pp - 1.0) * hop;
    }

    // Data parallelism over dp x cp replicas: gradient reduction, parameter gathers (ZeRO).
    const ParamCount pc = count_params(m);
    const StageParams sp = stage_params(m, pc, p);
    const double params = std::max(sp.first, sp.last);
    const double wbytes = stored_weight_bytes(t.precision);
    const double gbytes = bytes_per_element(t.grad_precision);
    if (p.dp * p.cp > 1) {
        const GroupSpan& g = spans.span[idx(CommGroup::dp)];
        const double grads = params * gbytes;
        const double weights = params * wbytes;
        const double grad_s = collective_time_s(p.zero == 0 ? Collective::all_reduce : Collective::reduce_scatter, grads, g, sys);
        const double gather_s = p.zero >= 1 ? collective_time_s(Collective::all_gather, weights, g, sys) : 0.0;
        // Windows are wall times of the passes (exposed layer traffic included), so a faster
        // GPU never exposes more data-parallel traffic than it saves.
        const double bwd_window = layers * (L.bwd_wall_s + L.recompute_s);
        const double fwd_window = layers * L.fwd_wall_s;
        // Bucketed overlap: all but the last layer's bucket can hide behind backward compute;
        // what hides still slows that compute (NCCL kernels take SMs and HBM bandwidth).
        const double slow = sys.eff.overlap_interference;
        auto exposed_of = [&](double link, double window) {
            if (!t.dp_overlap) return link;
            const double e = std::max(link / layers, link - window);
            return e + slow * (link - e);
        };
        // One data-parallel stream: what runs in the same window shares the same links.
        double link = 0, exposed = 0;
        if (p.zero == 3) {  // per micro-batch: weights gathered for forward and for backward, and
                            // the partitioned gradients reduce-scattered
            link = mb * (2.0 * gather_s + grad_s);
            exposed = mb * exposed_of(2.0 * gather_s + grad_s, fwd_window + bwd_window);
        } else if (p.zero == 2) {  // partitioned gradients reduce-scattered every micro-batch
            link = mb * grad_s + gather_s;
            exposed = mb * exposed_of(grad_s, bwd_window) + exposed_of(gather_s, fwd_window);
        } else {  // accumulated locally and reduced once after the last micro-batch (ZeRO 0/1);
                  // ZeRO 1 gathers the updated shards during the next forward
            link = grad_s + gather_s;
            exposed = exposed_of(grad_s, bwd_window) + exposed_of(gather_s, fwd_window);
        }
        r.link.dp_s = link;
        bd.dp_comm_exposed_s = exposed;
    }

    // Adam: memory-bound over the local shard: read grads, read/write master weights and both
    // moments, write the working copy.
    auto held = [&](double n, bool sharded) { return sharded ? zero_shard(n, sp.experts, p) : n; };
    const double local = held(params, p.zero >= 1);
    bd.optimizer_s = memory_time_s(local * (gbytes + 2.0 * t.optimizer_state_bytes_per_param + wbytes), sys);

    // Overlap hides traffic behind compute, not behind other traffic: every collective crossing
    // the scale-out network shares each GPU's NIC, so the step lasts at least their sum. What
    // overlap claimed beyond that is exposed after all (booked as data-parallel, the overlapped kind).
    double nic_s = 0;
    const std::pair<CommGroup, double> traffic[] = {{CommGroup::tp, r.link.tp_s}, {CommGroup::cp, r.link.cp_s},
                                                    {CommGroup::ep, r.link.ep_s}, {CommGroup::dp, r.link.dp_s},
                                                    {CommGroup::pp, r.link.pp_s}};
    for (const auto& [g, link] : traffic)
        if (spans.span[idx(g)].remote > 1) nic_s += link;
    if (nic_s > bd.sum()) bd.dp_comm_exposed_s += nic_s - bd.sum();
    r.step_time_s = bd.sum();
    const double tokens = as_d(t.global_batch) * as_d(m.seq_len);
    r.tokens_per_s = tokens / r.step_time_s;
    r.tokens_per_s_per_gpu = r.tokens_per_s / as_d(r.gpus);

    // FLOP: per-GPU block FLOP x (tp x cp) = one micro-batch's, over mb x dp micro-batches.
    const double shards = as_d(p.tp * p.cp);
    const double per_mb = (as_d(m.layers) * L.model_flop + first.model_flop + last.model_flop) * shards;
    r.model_flop_per_step = per_mb * mb * as_d(p.dp);
    const double recompute_flop = as_d(m.layers) * L.recompute_flop * shards * mb * as_d(p.dp);
    const double peak = sys.accel.matrix_peak(t.precision).value_or(0) * as_d(r.gpus) * r.step_time_s;
    r.mfu = peak > 0 ? r.model_flop_per_step / peak : 0;
    r.hfu = peak > 0 ? (r.model_flop_per_step + recompute_flop) / peak : 0;
    r.params_total = pc.total(m.layers);

    // Memory of the first and last stages; the larger is the peak.
    const double in_flight = std::min(pp, mb);
    const double interleave = p.vp > 1 && p.pp > 1 ? 1.0 + (pp - 1.0) / (pp * as_d(p.vp)) : 1.0;
    const double act_layer = L.activation_bytes(p.recompute);
    // The layer in backward holds what recompute rebuilt: a whole layer (beyond its stored input)
    // under full recompute, the attention core under selective.
    const double working = p.recompute == Recompute::full        ? L.saved_bytes - L.input_bytes
                           : p.recompute == Recompute::selective ? L.core_saved_bytes
                                                                 : 0.0;
    const double overhead = t.framework_overhead_bytes + t.comm_buffer_bytes;
    auto stage_memory = [&](double stage_params_n, double act) {
        TrainMemory mem;
        mem.weights_bytes = held(stage_params_n, p.zero == 3) * wbytes;
        mem.gradients_bytes = held(stage_params_n, p.zero >= 2) * gbytes;
        mem.optimizer_bytes = held(stage_params_n, p.zero >= 1) * t.optimizer_state_bytes_per_param;
        mem.activations_bytes = act;
        mem.overhead_bytes = overhead;
        mem.peak_bytes_per_gpu = mem.weights_bytes + mem.gradients_bytes + mem.optimizer_bytes + act + overhead;
        return mem;
    };
    const double act_first = layers * act_layer * in_flight * interleave + first.saved_bytes * in_flight + working +
                             (single ? last.saved_bytes : 0.0);
    const double act_last = layers * act_layer + last.saved_bytes + working;
    const TrainMemory m_first = stage_memory(sp.first, act_first);
    const TrainMemory m_last = stage_memory(sp.last, act_last);
    r.memory = m_first.peak_bytes_per_gpu >= m_last.peak_bytes_per_gpu ? m_first : m_last;
    r.fits_in_memory = r.memory.peak_bytes_per_gpu <= sys.accel.memory_bytes;
    return r;
}

TrainResult evaluate_training(const TrainContext& c, const ParallelConfig& p) {
    return assemble_step(c, p, cost_layers(c, p));
}

}  // namespace sm
