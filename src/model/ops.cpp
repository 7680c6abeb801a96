#include "model/ops.hpp"

#include <algorithm>

namespace sm {

namespace {

Op gemm_op(std::string_view name, double m, double n, double k, double saved_bytes) {
    Op op;
    op.name = name;
    op.kind = OpKind::gemm;
    op.gemm = {m, n, k, 1};
    op.weight = true;
    op.saved_bytes = saved_bytes;
    return op;
}

// Vector-unit FLOP per element of the element-wise kernels (fp32 math on CUDA cores): their
// compute term, which only matters where bandwidth is plentiful relative to vector FLOP/s.
constexpr double kLayerNormFlop = 8;  // mean, variance, normalise, scale and shift
constexpr double kRmsNormFlop = 4;
constexpr double kResidualFlop = 3;   // bias, dropout scale, residual add
constexpr double kSoftmaxFlop = 5;    // scale, mask, max, exp, normalise
constexpr double kDropoutFlop = 2;
constexpr double kGeluFlop = 10;      // tanh approximation
constexpr double kSwigluFlop = 7;     // SiLU (exp, add, divide, multiply) and the gate product
constexpr double kRopeFlop = 3;
constexpr double kCrossEntropyFlop = 6;

Op elementwise_op(std::string_view name, double bytes, double saved_bytes, double bwd_factor = 2.0, double flop = 0) {
    Op op;
    op.vector_flop = flop;
    op.name = name;
    op.kind = OpKind::elementwise;
    op.bytes = bytes;
    op.saved_bytes = saved_bytes;
    op.bwd_bytes_factor = bwd_factor;
    return op;
}

// Megatron's conjugate TP operators. Entering a column-parallel block: all-gather with sequence
// parallelism (its backward reduce-scatters, and the sharded input saved for the weight gradient
// is gathered again, overlapped with the data-gradient GEMM); without it, identity forward and
// all-reduce backward (overlapped with the weight-gradient GEMM).
void enter_tp_region(std::vector<CommOp>& c, const LayerShape& s, double bytes) {
    if (s.tp <= 1) return;
    if (s.sequence_parallel) {
        c.push_back({"sp_all_gather", Collective::all_gather, CommGroup::tp, Pass::fwd, bytes, 1, false});
        c.push_back({"sp_reduce_scatter_grad", Collective::reduce_scatter, CommGroup::tp, Pass::bwd, bytes, 1, false});
        c.push_back({"sp_regather_input", Collective::all_gather, CommGroup::tp, Pass::bwd, bytes, 1, true});
    } else {
        c.push_back({"tp_all_reduce_grad", Collective::all_reduce, CommGroup::tp, Pass::bwd, bytes, 1, true});
    }
}

// Leaving a row-parallel block: reduce-scatter (SP) or all-reduce forward; the backward of the
// reduce-scatter is an all-gather, of the all-reduce the identity.
void leave_tp_region(std::vector<CommOp>& c, const LayerShape& s, double bytes) {
    if (s.tp <= 1) return;
    if (s.sequence_parallel) {
        c.push_back({"sp_reduce_scatter", Collective::reduce_scatter, CommGroup::tp, Pass::fwd, bytes, 1, false});
        c.push_back({"sp_all_gather_grad", Collective::all_gather, CommGroup::tp, Pass::bwd, bytes, 1, false});
    } else {
        c.push_back({"tp_all_reduce", Collective::all_reduce, CommGroup::tp, Pass::fwd, bytes, 1, false});
    }
}

struct Dims {
    double tokens;     // T: tokens of this GPU's micro-batch entering a GEMM
    double tokens_sp;  // tokens held between GEMMs (T / tp with sequence parallelism)
    double h, d, heads, kv_heads, e;
};

Dims dims(const ModelSpec& m, const LayerShape& s) {
    Dims d{};
    d.tokens = s.batch * s.q_len;
    d.tokens_sp = s.sequence_parallel ? d.tokens / static_cast<double>(s.tp) : d.tokens;
    d.h = static_cast<double>(m.hidden);
    d.d = static_cast<double>(m.head_dim());
    d.heads = static_cast<double>(m.heads) / static_cast<double>(s.tp);
    d.kv_heads = kv_heads_per_rank(m, s.tp);
    d.e = s.act_bytes;
    return d;
}

void norm(LayerOps& out, std::string_view name, const ModelSpec& m, const Dims& d) {
    const double elems = d.tokens_sp * d.h;
    const double flop = (m.norm == NormKind::layernorm ? kLayerNormFlop : kRmsNormFlop) * elems;
    out.ops.push_back(elementwise_op(name, 2.0 * elems * d.e, elems * d.e, 1.5, flop));
}

// Bias + dropout + residual add, fused as in Megatron.
void residual(LayerOps& out, std::string_view name, const ModelSpec& m, const Dims& d) {
    const double elems = d.tokens_sp * d.h;
    const double mask = m.dropout ? 1.0 : 0.0;
    out.ops.push_back(elementwise_op(name, elems * (3.0 * d.e + mask), elems * mask, 2.0, kResidualFlop * elems));
}

void attention(LayerOps& out, const ModelSpec& m, const LayerShape& s, const Dims& d) {
    const double q_elems = d.tokens * d.heads * d.d;
    const double kv_elems = s.batch * s.kv_len * d.kv_heads * d.d;  // K (or V) as attended
    const double local_kv = d.tokens * d.kv_heads * d.d;             // K (or V) produced here
    const double scores = s.batch * d.heads * s.q_len * s.kv_len;
    if (m.attention == AttentionImpl::fused) {
        Op op;
        op.name = "attention";
        op.kind = OpKind::attention;
        op.attn_model_flop = 4.0 * scores * d.d;
        op.attn_flop = op.attn_model_flop * s.causal_fraction;
        op.attn_io_elems = 2.0 * q_elems;
        op.attn_kv_elems = 2.0 * kv_elems;
        op.saved_bytes = (q_elems + 2.0 * local_kv) * d.e;  // Q, K, V
        op.core_saved_bytes = d.tokens * d.heads * 4.0;     // fp32 log-sum-exp
        op.attention_core = true;
        out.ops.push_back(op);
        return;
    }
    // Unfused: two batched GEMMs around a materialised softmax (Korthikanti et al.'s 5as^2b).
    Op qk;
    qk.name = "attn_scores";
    qk.kind = OpKind::batched_gemm;
    qk.gemm = {s.q_len, s.kv_len, d.d, s.batch * d.heads};
    qk.saved_bytes = (q_elems + local_kv) * d.e;
    qk.attention_core = true;
    out.ops.push_back(qk);

    Op sm = elementwise_op("softmax", 2.0 * scores * d.e, 0.0, 2.0, kSoftmaxFlop * scores);
    sm.core_saved_bytes = scores * d.e;
    sm.attention_core = true;
    out.ops.push_back(sm);
    if (m.dropout) {
        Op dr = elementwise_op("attn_dropout", scores * (2.0 * d.e + 1.0), 0.0, 2.0, kDropoutFlop * scores);
        dr.core_saved_bytes = scores * (d.e + 1.0);
        dr.attention_core = true;
        out.ops.push_back(dr);
    }
    Op av;
    av.name = "attn_values";
    av.kind = OpKind::batched_gemm;
    av.gemm = {s.q_len, d.d, s.kv_len, s.batch * d.heads};
    av.saved_bytes = local_kv * d.e;
    av.attention_core = true;
    out.ops.push_back(av);
}

void feed_forward(LayerOps& out, const ModelSpec& m, const LayerShape& s, const Dims& d, LayerKind kind) {
    const double tp = static_cast<double>(s.tp);
    const double gated = m.ffn_act == FfnAct::swiglu ? 2.0 : 1.0;
    const double act_flop = m.ffn_act == FfnAct::swiglu ? kSwigluFlop : kGeluFlop;
    const double in_saved = d.tokens_sp * d.h * d.e;
    if (kind == LayerKind::dense) {
        const double f = static_cast<double>(m.ffn_hidden) / tp;
        out.ops.push_back(gemm_op("ffn_up", d.tokens, gated * f, d.h, in_saved));
        const double act_in = d.tokens * f * gated;
        out.ops.push_back(elementwise_op("ffn_act", (act_in + d.tokens * f) * d.e, act_in * d.e, 2.0, act_flop * d.tokens * f));
        out.ops.push_back(gemm_op("ffn_down", d.tokens, d.h, f, d.tokens * f * d.e));
        return;
    }
    // Mixture of experts: router, all-to-all dispatch over the expert-parallel group, the local
    // experts as a grouped GEMM (balanced routing), all-to-all combine.
    const double experts = static_cast<double>(m.moe.experts);
    const double topk = static_cast<double>(m.moe.top_k);
    const double ep = static_cast<double>(s.ep);
    const double f = static_cast<double>(m.moe.expert_ffn_hidden) / tp;
    const double routed = d.tokens * topk;  // token copies this GPU's experts process
    const double local_experts = experts / ep;
    const double per_expert = routed / local_experts;

    Op router = gemm_op("moe_router", d.tokens, experts, d.h, in_saved);
    out.ops.push_back(router);
    const double a2a = routed * d.h * d.e;
    if (s.ep > 1) {
        out.comms.push_back({"moe_dispatch", Collective::all_to_all, CommGroup::ep, Pass::fwd, a2a, 1, false});
        out.comms.push_back({"moe_dispatch_grad", Collective::all_to_all, CommGroup::ep, Pass::bwd, a2a, 1, false});
    }
    Op up = gemm_op("expert_up", per_expert, gated * f, d.h, routed * d.h * d.e);
    up.gemm.batch = local_experts;
    out.ops.push_back(up);
    const double act_in = routed * f * gated;
    out.ops.push_back(elementwise_op("expert_act", (act_in + routed * f) * d.e, act_in * d.e, 2.0, act_flop * routed * f));
    Op down = gemm_op("expert_down", per_expert, d.h, f, routed * f * d.e);
    down.gemm.batch = local_experts;
    out.ops.push_back(down);
    if (s.ep > 1) {
        out.comms.push_back({"moe_combine", Collective::all_to_all, CommGroup::ep, Pass::fwd, a2a, 1, false});
        out.comms.push_back({"moe_combine_grad", Collective::all_to_all, CommGroup::ep, Pass::bwd, a2a, 1, false});
    }
}

}  // namespace

double kv_heads_per_rank(const ModelSpec& m, int64_t tp) {
    return std::max(1.0, static_cast<double>(m.kv_heads) / static_cast<double>(tp));
}

LayerOps layer_ops(const ModelSpec& m, const LayerShape& s, LayerKind kind) {
    LayerOps out;
    const Dims d = dims(m, s);
    const double full_act = d.tokens * d.h * d.e;  // one [T, h] activation, gathered
    out.input_bytes = d.tokens_sp * d.h * d.e;  // sharded by sequence parallelism, as Megatron keeps it

    norm(out, "attn_norm", m, d);
    enter_tp_region(out.comms, s, full_act);
    const double qkv_n = (d.heads + 2.0 * d.kv_heads) * d.d;
    out.ops.push_back(gemm_op("qkv_proj", d.tokens, qkv_n, d.h, d.tokens_sp * d.h * d.e));
    if (m.position == PositionKind::rope)
        out.ops.push_back(elementwise_op("rope", 2.0 * d.tokens * (d.heads + d.kv_heads) * d.d * d.e, 0.0, 2.0,
                                         kRopeFlop * d.tokens * (d.heads + d.kv_heads) * d.d));
    if (s.cp > 1) {
        // Ring attention: K and V chunks travel cp-1 hops forward; backward sends them again
        // with their gradients. Each hop hides behind the attention of the previous chunk.
        const double chunk = 2.0 * d.tokens * d.kv_heads * d.d * d.e;
        const double hops = static_cast<double>(s.cp - 1);
        out.comms.push_back({"cp_kv_ring", Collective::p2p, CommGroup::cp, Pass::fwd, chunk, hops, true});
        out.comms.push_back({"cp_kv_ring_grad", Collective::p2p, CommGroup::cp, Pass::bwd, 2.0 * chunk, hops, true});
    }
    attention(out, m, s, d);
    out.ops.push_back(gemm_op("attn_out_proj", d.tokens, d.h, d.heads * d.d, d.tokens * d.heads * d.d * d.e));
    leave_tp_region(out.comms, s, full_act);
    residual(out, "attn_residual", m, d);

    norm(out, "ffn_norm", m, d);
    enter_tp_region(out.comms, s, full_act);
    feed_forward(out, m, s, d, kind);
    leave_tp_region(out.comms, s, full_act);
    residual(out, "ffn_residual", m, d);
    return out;
}

LayerOps embedding_ops(const ModelSpec& m, const LayerShape& s) {
    LayerOps out;
    const Dims d = dims(m, s);
    const double positions = m.position == PositionKind::learned ? 1.0 : 0.0;
    const double mask = m.dropout ? d.tokens_sp * d.h : 0.0;
    out.ops.push_back(elementwise_op("embedding", (2.0 + positions) * d.tokens * d.h * d.e, mask));
    // Vocabulary-parallel embedding: each rank holds V/tp rows; partial rows are summed.
    leave_tp_region(out.comms, s, d.tokens * d.h * d.e);
    return out;
}

LayerOps head_ops(const ModelSpec& m, const LayerShape& s, bool with_loss) {
    LayerOps out;
    const Dims d = dims(m, s);
    norm(out, "final_norm", m, d);
    enter_tp_region(out.comms, s, d.tokens * d.h * d.e);
    const double v = static_cast<double>(m.vocab) / static_cast<double>(s.tp);
    out.ops.push_back(gemm_op("lm_head", d.tokens, v, d.h, d.tokens_sp * d.h * d.e));
    // Training keeps the output layer in bf16 under fp8/fp4 (see Op); a serving engine's choice
    // is its weight_precision.
    out.ops.back().keep_activation_precision = with_loss;
    if (with_loss) {
        // Vocabulary-parallel cross-entropy in fp32: the softmax is kept for backward.
        const double logits = d.tokens * v;
        out.ops.push_back(elementwise_op("cross_entropy", logits * (d.e + 2.0 * 4.0), logits * 4.0, 2.0, kCrossEntropyFlop * logits));
        if (s.tp > 1)
            out.comms.push_back({"loss_all_reduce", Collective::all_reduce, CommGroup::tp, Pass::fwd,
                                 3.0 * d.tokens * 4.0, 1, false});
    }
    return out;
}

}  // namespace sm
