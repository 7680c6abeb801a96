#include "inference/inference.hpp"

#include <algorithm>
#include <cmath>
#include <span>

#include "comm/collectives.hpp"
#include "parallel/placement.hpp"

namespace sm {

namespace {

double as_d(int64_t x) { return static_cast<double>(x); }

double act_bytes(const InferenceSpec& s) { return bytes_per_element(activation_precision(s.precision)); }

LayerShape base_shape(const ParallelConfig& p, const InferenceSpec& s) {
    LayerShape sh;
    sh.batch = as_d(s.batch);
    sh.tp = p.tp;
    sh.ep = p.ep;
    sh.etp = p.etp;
    // Sequence parallelism saves activation memory for backward; inference keeps the plain
    // all-reduce form of Megatron's TP.
    sh.sequence_parallel = false;
    sh.act_bytes = act_bytes(s);
    sh.kv_bytes = bytes_per_element(s.kv_precision);
    return sh;
}

// Cost of one block's forward pass on one GPU. Inference has no backward pass to hide traffic
// behind, so every forward collective is on the critical path. `collective_host_s`: the host's
// time per collective call (system efficiency, or 0 for a pass replayed from a CUDA graph).
PassCost cost_forward(const LayerOps& ops, const SystemSpec& sys, const CostContext& ctx, const CommSpans& spans,
                      double collective_host_s) {
    PassCost c;
    for (const Op& op : ops.ops) {
        const OpCost oc = cost_op(op, sys, ctx);
        c.compute_s += oc.fwd_s;
        c.flop += oc.fwd_flop;
        c.hbm_bytes += oc.fwd_bytes;
        c.sram_bytes += fwd_onchip_bytes(oc);
        c.tensor_s += oc.fwd_tensor_s;
    }
    for (const CommOp& op : ops.comms) {
        if (op.pass != Pass::fwd) continue;
        const GroupSpan& g = spans.span[idx(op.group)];
        if (g.size <= 1) continue;
        const CollectiveCost k = collective_cost(op, g, sys);
        c.scale_up_bytes += k.scale_up_bytes * op.count;
        c.scale_out_bytes += k.scale_out_bytes * op.count;
        const double t = (k.time_s + collective_host_s) * op.count;
        if (op.group == CommGroup::ep || op.group == CommGroup::etp)
            c.ep_comm_s += t;
        else
            c.tp_comm_s += t;
    }
    return c;
}

// One block's ops: `layer`'s own, or its token-linear ops with the attention cores of `cores`
// (groups of sequences at their own query and context lengths, side by side in one step), each
// with the projections of its own form (MLA: absorbed for decode groups, expanded for prompts).
LayerOps block_ops(const ModelSpec& m, const LayerShape& layer, LayerKind k, std::span<const LayerShape> cores) {
    LayerOps ops = layer_ops(m, layer, k);
    if (cores.empty()) return ops;
    const auto per_group = [](const Op& o) { return o.attention_core || o.core_projection; };
    std::erase_if(ops.ops, per_group);
    LayerOps group;  // each group's attention ops in turn, in one storage
    for (const LayerShape& g : cores) {
        if (!(g.batch * g.q_len > 0)) continue;
        attention_ops(group, m, g, k);
        for (const Op& o : group.ops)
            if (per_group(o)) ops.ops.push_back(o);
    }
    return ops;
}

// The whole model once: every layer of every stage (stages run in turn), the embedding, the
// head on `head` (the positions whose logits are needed), and the hops between stages.
// `graphed`: the pass replays a captured CUDA graph, so the host dispatches nothing (no per-layer
// or per-collective host time).
PassCost forward_pass(const InferContext& c, const ParallelConfig& p, const LayerShape& layer, const LayerShape& head,
                      std::span<const LayerShape> cores = {}, bool graphed = false) {
    const ModelSpec& m = c.model;
    const SystemSpec& sys = c.system;
    const CostContext ctx = inference_cost_context(c.inference);
    const CommSpans spans = place_groups(p, sys);
    const double layers = as_d(m.layers);
    const double layer_host_s = graphed ? 0.0 : sys.eff.host_layer_overhead_s;
    const double collective_host_s = graphed ? 0.0 : sys.eff.host_collective_overhead_s;

    PassCost total;
    for (const LayerKind k : layer_kinds(m))
        total += cost_forward(block_ops(m, layer, k, cores), sys, ctx, spans, collective_host_s)
                     .scaled(as_d(count_layers(m, k, 0, m.layers)));
    total += cost_forward(embedding_ops(m, layer), sys, ctx, spans, collective_host_s);
    total += cost_forward(head_ops(m, head, false), sys, ctx, spans, collective_host_s);
    const GroupSpan& tp = spans.span[idx(CommGroup::tp)];
    if (tp.size > 1) {
        // Sampling needs the whole vocabulary row: the vocabulary-parallel logits are gathered.
        const double logits = head.batch * head.q_len * as_d(m.vocab) * head.act_bytes;
        const CollectiveCost k = collective_cost(Collective::all_gather, logits, tp, sys);
        total.tp_comm_s += k.time_s + collective_host_s;
        total.scale_up_bytes += k.scale_up_bytes;
        total.scale_out_bytes += k.scale_out_bytes;
    }
    total.host_s += layers * layer_host_s;
    // Each stage hands its output activation to the next: pp-1 hops for one batch.
    const double bytes = layer.batch * layer.q_len * as_d(m.hidden) * layer.act_bytes;
    const CollectiveCost k = collective_cost(Collective::p2p, bytes, spans.span[idx(CommGroup::pp)], sys);
    const double hop = k.time_s + collective_host_s;
    total.pp_comm_s += (as_d(p.pp) - 1.0) * hop;
    total.scale_up_bytes += (as_d(p.pp) - 1.0) * k.scale_up_bytes;
    total.scale_out_bytes += (as_d(p.pp) - 1.0) * k.scale_out_bytes;
    return total;
}

// Sum of f(x) over integers x in [a, b] for f convex and piecewise linear in x: where f's value
// at the midpoint lies on the chord, f is linear on [a, b] (convexity) and the sum is the
// trapezoid n (f(a) + f(b)) / 2 exactly. Short or non-linear spans are split.
template <class F>
PassCost sum_piecewise_linear(const F& f, int64_t a, int64_t b, const PassCost& fa, const PassCost& fb, int depth) {
    const int64_t n = b - a + 1;
    if (n == 1) return fa;
    if (n == 2) {
        PassCost s = fa;
        s += fb;
        return s;
    }
    const int64_t mid = a + (b - a) / 2;
    const PassCost fm = f(mid);
    const double chord = fa.total_s() + (fb.total_s() - fa.total_s()) * as_d(mid - a) / as_d(b - a);
    const double scale = std::max({std::fabs(fa.total_s()), std::fabs(fb.total_s()), 1e-300});
    if (std::fabs(fm.total_s() - chord) <= 1e-12 * scale || depth > 60) {
        PassCost s = fa;
        s += fb;
        return s.scaled(as_d(n) / 2.0);
    }
    PassCost left = sum_piecewise_linear(f, a, mid, fa, fm, depth + 1);
    left += sum_piecewise_linear(f, mid + 1, b, f(mid + 1), fb, depth + 1);
    return left;
}

// Largest activation working set of one block: a kernel's inputs and outputs live together,
// beside the residual stream.
double working_set_bytes(const LayerOps& ops, double act) {
    double worst = 0;
    for (const Op& op : ops.ops) {
        double b = 0;
        switch (op.kind) {
            case OpKind::gemm:
            case OpKind::batched_gemm:
                b = op.gemm.batch * (op.gemm.m * op.gemm.k + op.gemm.m * op.gemm.n) * act;
                break;
            case OpKind::attention: b = op.attn_io_elems * act; break;
            case OpKind::elementwise: b = op.bytes; break;
        }
        worst = std::max(worst, b);
    }
    return worst;
}

}  // namespace

double activation_bytes(const InferContext& c, const ParallelConfig& p, const LayerShape& layer) {
    const ModelSpec& m = c.model;
    const double residual = layer.batch * layer.q_len * as_d(m.hidden) * layer.act_bytes;
    // fp32 logits of the positions sampled (one per sequence), vocabulary-parallel.
    const double logits = layer.batch * as_d(m.vocab) / as_d(p.tp) * 4.0;
    double working = logits;
    for (const LayerKind k : layer_kinds(m)) working = std::max(working, working_set_bytes(layer_ops(m, layer, k), layer.act_bytes));
    return residual + working;
}

PassCost& PassCost::operator+=(const PassCost& o) {
    compute_s += o.compute_s;
    tp_comm_s += o.tp_comm_s;
    pp_comm_s += o.pp_comm_s;
    ep_comm_s += o.ep_comm_s;
    host_s += o.host_s;
    flop += o.flop;
    hbm_bytes += o.hbm_bytes;
    sram_bytes += o.sram_bytes;
    tensor_s += o.tensor_s;
    scale_up_bytes += o.scale_up_bytes;
    scale_out_bytes += o.scale_out_bytes;
    return *this;
}

PassCost PassCost::scaled(double k) const {
    PassCost r = *this;
    r.compute_s *= k;
    r.tp_comm_s *= k;
    r.pp_comm_s *= k;
    r.ep_comm_s *= k;
    r.host_s *= k;
    r.flop *= k;
    r.hbm_bytes *= k;
    r.sram_bytes *= k;
    r.tensor_s *= k;
    r.scale_up_bytes *= k;
    r.scale_out_bytes *= k;
    return r;
}

CostContext inference_cost_context(const InferenceSpec& s) {
    CostContext ctx;
    ctx.math = s.precision;
    ctx.act_bytes = act_bytes(s);
    ctx.operand_bytes = bytes_per_element(s.precision);
    // Weights stream from HBM in their storage format (weight-only int4/int8 kernels dequantise
    // in registers); the K/V reads of attention in the cache's format.
    ctx.weight_bytes = bytes_per_element(s.weight_precision);
    ctx.kv_bytes = bytes_per_element(s.kv_precision);
    ctx.cast_in_producer = s.activation_quantisation == ActivationQuantisation::fused;
    return ctx;
}

LayerShape prefill_shape(const ModelSpec& m, const ParallelConfig& p, const InferenceSpec& s) {
    LayerShape sh = base_shape(p, s);
    sh.q_len = as_d(s.input_len);
    sh.kv_len = as_d(s.input_len);
    sh.causal_fraction = m.causal ? 0.5 : 1.0;
    return sh;
}

LayerShape decode_shape(const ParallelConfig& p, const InferenceSpec& s, double context) {
    LayerShape sh = base_shape(p, s);
    sh.q_len = 1;
    sh.kv_len = context;
    sh.causal_fraction = 1.0;  // the new token sees every cached one
    sh.decode = true;
    return sh;
}

PassCost prefill_cost(const InferContext& c, const ParallelConfig& p) {
    const LayerShape layer = prefill_shape(c.model, p, c.inference);
    LayerShape head = layer;
    head.q_len = 1;  // only the last position's logits yield the first token
    head.kv_len = 1;
    return forward_pass(c, p, layer, head);
}

PassCost decode_step_cost(const InferContext& c, const ParallelConfig& p, double context) {
    const LayerShape s = decode_shape(p, c.inference, context);
    return forward_pass(c, p, s, s);
}

PassCost mixed_pass_cost(const InferContext& c, const ParallelConfig& p, const LayerShape& tokens,
                         std::span<const LayerShape> cores, double sampled, bool graphed) {
    LayerShape head = tokens;
    head.batch = sampled;
    head.q_len = 1;
    head.kv_len = 1;
    return forward_pass(c, p, tokens, head, cores, graphed);
}

PassCost decode_sum(const InferContext& c, const ParallelConfig& p, int64_t first, int64_t last) {
    if (last < first) return {};
    auto f = [&](int64_t ctx) { return decode_step_cost(c, p, as_d(ctx)); };
    return sum_piecewise_linear(f, first, last, f(first), f(last), 0);
}

double weight_params_per_gpu(const ModelSpec& m, const ParallelConfig& p) {
    // Matrices: exactly what the sharded op list multiplies by (KV projections replicate when
    // tp exceeds the KV heads; the router replicates). Vectors (norms, biases): replicated.
    auto matrices = [&](LayerKind kind, int64_t tp, int64_t ep, int64_t etp = 0) {
        LayerShape s;
        s.batch = 1;
        s.q_len = 1;
        s.kv_len = 1;
        s.tp = tp;
        s.ep = ep;
        s.etp = etp;
        double w = 0;
        for (const Op& op : layer_ops(m, s, kind).ops)
            if (op.weight) w += op.gemm.k * op.gemm.n * op.gemm.batch;
        return w;
    };
    const ParamCount pc = count_params(m);
    double all_layers = 0;  // every block of the model, each kind at its sharded size
    for (const LayerKind k : layer_kinds(m)) {
        const double vectors = std::max(0.0, pc.layer[idx(k)].total - matrices(k, 1, 1));
        all_layers += as_d(pc.layers[idx(k)]) * (matrices(k, p.tp, p.ep, p.etp) + vectors);
    }
    const double stage = all_layers / as_d(p.pp);  // a stage's share of the blocks
    const double tp = as_d(p.tp);
    const double embed = pc.embedding / tp;
    const double head = (m.tied_embeddings && p.pp > 1 ? as_d(m.vocab) * as_d(m.hidden) : pc.lm_head) / tp + pc.final_norm;
    if (p.pp == 1) return stage + embed + head;
    return stage + std::max(embed, head);
}

double recurrent_state_bytes_per_gpu(const ModelSpec& m, const ParallelConfig& p, const InferenceSpec& s) {
    // Per request and recurrent layer: its fp32 state (SGLang's --mamba-ssm-dtype default
    // float32) and its convolution's cached inputs in the activation format.
    double per_request = 0;
    for (const LayerKind k : {LayerKind::mamba, LayerKind::linear}) {
        const RecurrentState r = recurrent_state(m, k, p.tp);
        per_request += as_d(count_layers(m, k, 0, m.layers)) * (r.state_elems * kRecurrentStateBytes + r.conv_elems * act_bytes(s));
    }
    return as_d(s.batch) * per_request / as_d(p.pp);
}

double kv_cache_bytes_per_gpu(const ModelSpec& m, const ParallelConfig& p, const InferenceSpec& s, double tokens) {
    // Only layers that attend keep K/V per token; Gated DeltaNet and Mamba layers keep a state of
    // fixed size per request instead, a hybrid's FFN blocks nothing.
    int64_t attending = 0;
    for (const LayerKind k : {LayerKind::dense, LayerKind::moe, LayerKind::attention}) attending += count_layers(m, k, 0, m.layers);
    const double layers = as_d(attending) / as_d(p.pp);
    // Per token and layer: K and V of this rank's KV heads; MLA caches the compressed latent and
    // the shared RoPE key (kv_lora_rank + qk_rope_head_dim, DeepSeek-V2 sec. 2.1.2), which every
    // TP rank needs whole (all its heads read it).
    const double per_token = m.attention_kind == AttentionKind::mla
                                 ? as_d(m.mla.cache_dim())
                                 : 2.0 * kv_heads_per_rank(m, p.tp) * as_d(m.head_dim());
    // A windowed layer keeps only its window's K/V, unless the engine reserves the whole sequence
    // for it too (inference.window_cache).
    const double f = s.window_cache == WindowCache::window ? windowed_layer_share(m) : 0.0;
    const double held = (1.0 - f) * tokens + f * std::min(tokens, as_d(m.sliding_window));
    return layers * as_d(s.batch) * held * per_token * bytes_per_element(s.kv_precision) + recurrent_state_bytes_per_gpu(m, p, s);
}

InferMemory inference_memory(const InferContext& c, const ParallelConfig& p, int64_t batch) {
    InferenceSpec s = c.inference;
    s.batch = batch;
    const InferContext cb{c.model, c.system, s};
    InferMemory mem;
    mem.weights_bytes = weight_params_per_gpu(c.model, p) * bytes_per_element(s.weight_precision);
    mem.overhead_bytes = s.framework_overhead_bytes;
    const double kv_prompt = kv_cache_bytes_per_gpu(c.model, p, s, as_d(s.input_len));
    mem.kv_cache_bytes = kv_cache_bytes_per_gpu(c.model, p, s, as_d(s.input_len + s.output_len));
    const double act_prefill = activation_bytes(cb, p, prefill_shape(c.model, p, s));
    const double act_decode = activation_bytes(cb, p, decode_shape(p, s, as_d(s.input_len + s.output_len)));
    mem.activations_bytes = std::max(act_prefill, act_decode);
    // The prompt's activations and the full cache are never resident together.
    mem.peak_bytes_per_gpu = mem.weights_bytes + mem.overhead_bytes +
                             std::max(kv_prompt + act_prefill, mem.kv_cache_bytes + act_decode);
    return mem;
}

int64_t max_batch_that_fits(const InferContext& c, const ParallelConfig& p) {
    // Every term but the weights and the allowance grows linearly with the batch.
    const InferMemory one = inference_memory(c, p, 1);
    const double fixed = one.weights_bytes + one.overhead_bytes;
    const double per_seq = one.peak_bytes_per_gpu - fixed;
    const double room = c.system.accel.memory_bytes - fixed;
    if (room < per_seq || per_seq <= 0) return 0;
    const double b = std::floor(room / per_seq);
    return b > 1e15 ? int64_t{1000000000000000} : static_cast<int64_t>(b);
}

InferResult evaluate_inference(const InferContext& c, const ParallelConfig& p) {
    const InferenceSpec& s = c.inference;
    InferResult r;
    r.gpus = p.tp * p.pp * p.dp;
    r.decode_steps = s.output_len - 1;
    r.prefill = prefill_cost(c, p);
    const int64_t first = s.input_len + 1;
    const int64_t last = s.input_len + r.decode_steps;
    if (r.decode_steps > 0) {
        r.decode = decode_sum(c, p, first, last);
        r.decode_first = decode_step_cost(c, p, as_d(first));
        r.decode_last = decode_step_cost(c, p, as_d(last));
    }
    r.ttft_s = r.prefill.total_s() + c.system.eff.host_request_overhead_s;  // the request's own host work
    r.e2e_latency_s = r.ttft_s + r.decode.total_s();
    r.tpot_s = r.decode_steps > 0 ? r.decode.total_s() / as_d(r.decode_steps) : 0.0;
    // dp replicas serve independent batches side by side.
    r.output_tokens_per_s = as_d(p.dp) * as_d(s.batch) * as_d(s.output_len) / r.e2e_latency_s;
    r.memory = inference_memory(c, p, s.batch);
    r.fits_in_memory = r.memory.peak_bytes_per_gpu <= c.system.accel.memory_bytes;
    r.max_batch_fits = max_batch_that_fits(c, p);
    if (c.system.energy.known()) {
        PassCost all = r.prefill;
        all += r.decode;
        // Per GPU of each stage, summed over the stages: the tp GPUs of a stage do alike.
        r.energy = energy_of(c.system, Work{}.add(all.work(), as_d(p.tp)), r.e2e_latency_s, as_d(p.tp * p.pp));
    }
    return r;
}

}  // namespace sm
