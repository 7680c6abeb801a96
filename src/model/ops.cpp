#include "model/ops.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <stdexcept>
#include <utility>

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
constexpr double kSiluFlop = 6;       // x / (1 + exp(-x)) times a gate: negate, exp, add, divide, multiply, multiply
constexpr double kSquaredReluFlop = 2;  // max(x, 0) and the square (Nemotron-4: So et al. 2021, Primer)
constexpr double kGegluFlop = kGeluFlop + 1;  // GELU of the gate half and the gate product
constexpr double kRopeFlop = 3;
constexpr double kCrossEntropyFlop = 6;
constexpr double kMseFlop = 3;  // subtract, square, accumulate

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

bool summa(const LayerShape& s) { return s.tp_rows > 1; }

// How a weight GEMM's 1D tensor-parallel shape is cut: Megatron's column-parallel (n split over
// tp), row-parallel (k split), or not at all (replicated, or a form SUMMA does not apply to).
enum class Split { column, row, none };

// SUMMA's traffic for one weight GEMM Y[m, n/C] = X[m, k/C] W[k/R, n/C] on an R x C grid
// (m: this grid row's tokens): nb panels of X travel along the grid row (all C ranks end up
// with X's [m, k] panel row) and of W along the grid column ([k, n/C]); each panel's partial
// product overlaps the next panel's broadcast. Backward: dX = dY W^T broadcasts W again and
// reduces [m, k] partial sums along the row; dW = X^T dY broadcasts X again and reduces [k, n/C]
// along the column. Over the nb panels a broadcast moves what an all-gather of the panel row
// moves and a reduction what a reduce-scatter does, so they are costed as those (the root of a
// panel changes with it). `x_bytes`, `w_bytes`: the whole [m, k] and [k, n/C] panels.
void summa_comms(LayerOps& out, double x_bytes, double w_bytes, bool data_grad, bool weight_grad) {
    auto& c = out.comms;
    c.push_back({"summa_bcast_x", Collective::all_gather, CommGroup::tp, Pass::fwd, x_bytes, 1, true});
    c.push_back({"summa_bcast_w", Collective::all_gather, CommGroup::tp_rows, Pass::fwd, w_bytes, 1, true});
    if (data_grad) {
        c.push_back({"summa_bcast_w_dgrad", Collective::all_gather, CommGroup::tp_rows, Pass::bwd, w_bytes, 1, true});
        c.push_back({"summa_reduce_dx", Collective::reduce_scatter, CommGroup::tp, Pass::bwd, x_bytes, 1, true});
    }
    if (weight_grad) {
        c.push_back({"summa_bcast_x_wgrad", Collective::all_gather, CommGroup::tp, Pass::bwd, x_bytes, 1, true});
        c.push_back({"summa_reduce_dw", Collective::reduce_scatter, CommGroup::tp_rows, Pass::bwd, w_bytes, 1, true});
    }
}

// A weight GEMM of the block ([m, k] x [k, n], `batch` times: one per local expert). Under LoRA
// the weight is frozen: no weight-gradient GEMM, so its input is kept for backward only when an
// adapter of `target` sits beside it (Transformer Engine saves a linear layer's input only when
// its weight needs a gradient). The adapter is A [k, r] then B [r, n] on the same input, output
// added: column-parallel bases shard B's n like theirs, row-parallel bases A's k; the partial
// [m, r] sums this leaves are r/h of the block's own TP traffic and not modelled.
// Under SUMMA (Split column or row) the GEMM is the grid's [m, n/C] = [m, k] x [k, n/C] per GPU,
// the same FLOP as the 1D shape given, with its panel traffic (summa_comms).
void weight_gemm(LayerOps& out, const LayerShape& s, std::string_view name, GemmShape g, double saved_bytes,
                 LoraTarget target, Split split = Split::none) {
    if (summa(s) && split != Split::none) {
        if (split == Split::row) {
            const double cols = static_cast<double>(s.tp);
            g.n /= cols;
            g.k *= cols;
        }
        summa_comms(out, g.m * g.k * s.act_bytes, g.k * g.n * s.act_bytes, true, !s.lora.enabled());
    }
    Op op = gemm_op(name, g.m, g.n, g.k, saved_bytes);
    op.gemm.batch = g.batch;
    if (split == Split::column && s.sequence_parallel && s.tp > 1 && !summa(s))
        op.cast_rows_share = 1.0 / static_cast<double>(s.tp);
    if (!s.lora.enabled()) {
        out.ops.push_back(op);
        return;
    }
    op.frozen = true;
    op.saved_bytes = 0;
    out.ops.push_back(op);
    if (!s.lora.adapts(target)) return;
    const double r = static_cast<double>(s.lora.rank);
    Op a = gemm_op("lora_a", g.m, r, g.k, saved_bytes);
    a.gemm.batch = g.batch;
    out.ops.push_back(a);
    Op b = gemm_op("lora_b", g.m, g.n, r, g.batch * g.m * r * s.act_bytes);
    b.gemm.batch = g.batch;
    out.ops.push_back(b);
}

// Where a block's op and comm lists stand: what is added after it is inside a module (inside()).
struct ListEnds {
    size_t ops, comms;
};
ListEnds ends(const LayerOps& out) { return {out.ops.size(), out.comms.size()}; }

// What is added to `out` since `from` runs inside recompute module `m`, so its recompute runs it
// again. `checkpointed`: Megatron checkpoints the module whole (tensor_parallel.checkpoint), which
// keeps only the module's input (saved by the ops that read the norm's output: norm_reader_gemm)
// and drops every other tensor its ops saved.
void inside(LayerOps& out, ListEnds from, RecomputeModule m, bool checkpointed) {
    const ModuleSet bit = module_bit(m);
    for (size_t i = from.ops; i < out.ops.size(); ++i) {
        Op& op = out.ops[i];
        op.modules |= bit;
        if (checkpointed && (op.frees & module_bit(RecomputeModule::layernorm)) == 0) op.frees |= bit;
    }
    for (size_t i = from.comms; i < out.comms.size(); ++i) out.comms[i].modules |= bit;
}

// The ops added since `from` that saved `bytes` (a module's output they read) lose it when `m`
// is recomputed: a module Megatron runs under CheckpointWithoutOutput (layernorm, moe_act,
// mla_up_proj) keeps its input and drops its output, which the next ops saved.
void output_dropped_by(LayerOps& out, size_t from, double bytes, RecomputeModule m) {
    for (size_t i = from; i < out.ops.size(); ++i)
        if (out.ops[i].saved_bytes == bytes) out.ops[i].frees |= module_bit(m);
}

// A weight GEMM reading a pre-norm's output (a sublayer's first GEMMs): what it saves, the
// norm's output, is dropped under layernorm recompute, and is what a checkpointed sublayer keeps.
void norm_reader_gemm(LayerOps& out, const LayerShape& s, std::string_view name, GemmShape g, double saved_bytes,
                      LoraTarget target, Split split = Split::none) {
    const size_t from = out.ops.size();
    weight_gemm(out, s, name, g, saved_bytes, target, split);
    output_dropped_by(out, from, saved_bytes, RecomputeModule::layernorm);
}

// Megatron's conjugate TP operators. Entering a column-parallel block: all-gather with sequence
// parallelism (its backward reduce-scatters, and the sharded input saved for the weight gradient
// is gathered again, overlapped with the data-gradient GEMM); without it, identity forward and
// all-reduce backward (overlapped with the weight-gradient GEMM).
// Under SUMMA each GEMM carries its own traffic (summa_comms) and activations stay sharded.
// `quantised`: the gathered input feeds low-precision GEMMs only, so both gathers move it in
// LayerShape::gather_bytes per element (the gradient's reduce-scatter stays at full width).
void enter_tp_region(std::vector<CommOp>& c, const LayerShape& s, double bytes, bool quantised = false) {
    if (s.tp <= 1 || summa(s)) return;
    if (s.sequence_parallel) {
        const double gathered = quantised && s.gather_bytes > 0 ? bytes * s.gather_bytes / s.act_bytes : bytes;
        c.push_back({"sp_all_gather", Collective::all_gather, CommGroup::tp, Pass::fwd, gathered, 1, false});
        c.push_back({"sp_reduce_scatter_grad", Collective::reduce_scatter, CommGroup::tp, Pass::bwd, bytes, 1, false});
        c.push_back({"sp_regather_input", Collective::all_gather, CommGroup::tp, Pass::bwd, gathered, 1, true});
    } else {
        c.push_back({"tp_all_reduce_grad", Collective::all_reduce, CommGroup::tp, Pass::bwd, bytes, 1, true});
    }
}

// Leaving a row-parallel block: reduce-scatter (SP) or all-reduce forward; the backward of the
// reduce-scatter is an all-gather, of the all-reduce the identity.
void leave_tp_region(std::vector<CommOp>& c, const LayerShape& s, double bytes) {
    if (s.tp <= 1 || summa(s)) return;
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
    double rows;       // SUMMA grid rows: a rank's K/V after the grid column's gather span rows x tokens
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
    d.rows = static_cast<double>(s.tp_rows);
    return d;
}

void norm(LayerOps& out, std::string_view name, const ModelSpec& m, const Dims& d, double width) {
    const double elems = d.tokens_sp * width;
    const double flop = (m.norm == NormKind::layernorm ? kLayerNormFlop : kRmsNormFlop) * elems;
    out.ops.push_back(elementwise_op(name, 2.0 * elems * d.e, elems * d.e, 1.5, flop));
}

// A layer's input or pre-MLP norm: layernorm recompute runs it again (its output dropped:
// norm_reader_gemm).
void pre_norm(LayerOps& out, std::string_view name, const ModelSpec& m, const Dims& d) {
    norm(out, name, m, d, d.h);
    out.ops.back().modules |= module_bit(RecomputeModule::layernorm);
}

// Under SUMMA a norm's rows are split over the grid row's C ranks: the per-token statistics
// (mean and variance, or the mean square) are all-reduced forward, and the two per-token sums of
// the backward too. Small, latency-bound, not overlapped.
void norm_stats(LayerOps& out, const ModelSpec& m, const LayerShape& s, const Dims& d) {
    if (!summa(s) || s.tp <= 1) return;
    const double stats = m.norm == NormKind::layernorm ? 2.0 : 1.0;
    out.comms.push_back({"summa_norm_stats", Collective::all_reduce, CommGroup::tp, Pass::fwd, d.tokens * stats * 4.0, 1, false});
    out.comms.push_back({"summa_norm_stats_grad", Collective::all_reduce, CommGroup::tp, Pass::bwd, d.tokens * 2.0 * 4.0, 1, false});
}

// Bias + dropout + residual add, fused as in Megatron.
void residual(LayerOps& out, std::string_view name, const ModelSpec& m, const Dims& d) {
    const double elems = d.tokens_sp * d.h;
    const double mask = m.dropout ? 1.0 : 0.0;
    out.ops.push_back(elementwise_op(name, elems * (3.0 * d.e + mask), elems * mask, 2.0, kResidualFlop * elems));
}

// The heads of one attention core on this GPU: query heads, K/V heads, the query-key and the
// value width per head, and (absorbed MLA decode) K and V read as one shared latent.
struct Heads {
    double q, kv, qk_dim, v_dim;
    double kv_read_elems = -1;  // < 0: K and V as attended, each read once
};

// Keys per query row of the block's attention, mixed over its full and windowed layers by the
// model's windowed share (one block stands for every layer of its kind): those it spans (before
// the causal cut), those it computes, those whose K/V it reads (a window of w behind the last of
// q_len rows), and the inner-loop length weighted by the work at each length.
struct KeySpan {
    double spanned = 0, computed = 0, read = 0, loop = 0;
};

KeySpan key_span(const ModelSpec& m, const LayerShape& s) {
    const double full_keys = s.causal_fraction * s.kv_len;
    const double f = windowed_layer_share(m);
    if (f <= 0.0) return {s.kv_len, full_keys, s.kv_len, s.kv_len};
    const double w = static_cast<double>(m.sliding_window);
    const double win_keys = windowed_keys_per_row(s.kv_len, s.causal_fraction, w);
    const double win_span = std::min(s.kv_len, w);
    KeySpan k;
    k.spanned = (1.0 - f) * s.kv_len + f * win_span;
    k.computed = (1.0 - f) * full_keys + f * win_keys;
    k.read = (1.0 - f) * s.kv_len + f * std::min(s.kv_len, s.q_len + w - 1.0);
    k.loop = k.computed > 0 ? ((1.0 - f) * full_keys * s.kv_len + f * win_keys * win_span) / k.computed : s.kv_len;
    return k;
}

void attention(LayerOps& out, const ModelSpec& m, const LayerShape& s, const Dims& d, const Heads& a) {
    const double q_elems = d.tokens * a.q * a.qk_dim;
    const double o_elems = d.tokens * a.q * a.v_dim;
    const double local_k = d.tokens * a.kv * a.qk_dim;                           // K produced here
    const double local_v = d.tokens * a.kv * a.v_dim;
    const double scores = s.batch * a.q * s.q_len * s.kv_len;
    if (m.attention == AttentionImpl::fused) {
        // A sliding window (fused kernels only: the scenario refuses it unfused) cuts the keys.
        const KeySpan k = key_span(m, s);
        const double rows = s.batch * a.q * s.q_len;
        Op op;
        op.name = "attention";
        op.kind = OpKind::attention;
        op.attn_model_flop = 2.0 * rows * k.spanned * (a.qk_dim + a.v_dim);  // Q K^T and P V
        op.attn_flop = 2.0 * rows * k.computed * (a.qk_dim + a.v_dim);
        op.attn_io_elems = q_elems + o_elems;
        op.attn_kv_elems = a.kv_read_elems >= 0 ? a.kv_read_elems : s.batch * k.read * a.kv * (a.qk_dim + a.v_dim);
        op.attn_kv_len = k.loop;
        op.saved_bytes = (q_elems + local_k + local_v) * d.e;  // Q, K, V
        op.core_saved_bytes = d.tokens * a.q * 4.0;             // fp32 log-sum-exp
        op.attention_core = true;
        // MLA's absorbed decode (one shared latent head) runs its own kernels (FlashMLA).
        op.decode_core = s.decode && a.kv_read_elems < 0;
        op.decode_group = a.kv > 0 ? a.q / a.kv : 1.0;
        out.ops.push_back(op);
        return;
    }
    // Unfused: two batched GEMMs around a materialised softmax (Korthikanti et al.'s 5as^2b).
    Op qk;
    qk.name = "attn_scores";
    qk.kind = OpKind::batched_gemm;
    qk.gemm = {s.q_len, s.kv_len, a.qk_dim, s.batch * a.q};
    qk.saved_bytes = (q_elems + local_k) * d.e;
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
    av.gemm = {s.q_len, a.v_dim, s.kv_len, s.batch * a.q};
    av.saved_bytes = local_v * d.e;
    av.attention_core = true;
    out.ops.push_back(av);
}

// K and V gathered over `group` before attention, exposed: `gathered` bytes (the whole group's)
// forward; only the local K/V is saved, so backward gathers them again and reduce-scatters the
// gathered dK/dV, holding both at once. Names: the gather, the regather, the reduce-scatter.
void gather_kv(LayerOps& out, CommGroup group, const std::array<std::string_view, 3>& names, double gathered) {
    out.comms.push_back({names[0], Collective::all_gather, group, Pass::fwd, gathered, 1, false});
    out.comms.push_back({names[1], Collective::all_gather, group, Pass::bwd, gathered, 1, false});
    out.comms.push_back({names[2], Collective::reduce_scatter, group, Pass::bwd, gathered, 1, false});
    out.transient_bytes = std::max(out.transient_bytes, 2.0 * gathered);
}

// The attention core under context parallelism and the K/V traffic of s.cp_kind. `a`: this
// tensor-parallel rank's heads; each context-parallel rank holds T/cp tokens of Q, K and V.
void cp_attention(LayerOps& out, const ModelSpec& m, const LayerShape& s, const Dims& d, const Heads& a) {
    if (s.cp <= 1) {
        attention(out, m, s, d, a);
        return;
    }
    const double cp = static_cast<double>(s.cp);
    // K and V of this rank's tokens (of its grid column's, gathered, under SUMMA).
    const double kv_local = d.rows * d.tokens * a.kv * (a.qk_dim + a.v_dim) * d.e;
    switch (s.cp_kind) {
        case CpKind::ring:
            // Ring attention: K and V chunks travel cp-1 hops forward; backward sends them again
            // with their gradients. Each hop hides behind the attention of the previous chunk.
            // Each step is its own kernel over at most this rank's T/cp keys (Transformer
            // Engine's AttnFuncWithCPAndKVP2P with load-balanced chunks: the causal step over the
            // rank's own two chunks, then all queries against half of a peer's keys or half of
            // the queries against all of them), so the key loop is T/cp long, not T.
            out.comms.push_back({"cp_kv_ring", Collective::p2p, CommGroup::cp, Pass::fwd, kv_local, cp - 1.0, true});
            out.comms.push_back({"cp_kv_ring_grad", Collective::p2p, CommGroup::cp, Pass::bwd, 2.0 * kv_local, cp - 1.0, true});
            attention(out, m, s, d, a);
            if (Op& core = out.ops.back(); core.kind == OpKind::attention)  // fused: one kernel per step
                core.attn_kv_len = std::min(core.attn_kv_len, s.kv_len / cp);
            return;
        case CpKind::all_gather:
            // Transformer Engine's AttnFuncWithCPAndKVAllGather (Megatron-Core cp_comm_type
            // "all_gather"; Llama 3 sec. 3.3.2): the whole K/V gathered before attention ("KV
            // all-gather between CP ranks is exposed"), only the local K/V saved, so backward
            // gathers them again and reduce-scatters the full-length dK/dV. A hierarchical
            // collective: every NIC of the domain carries a share of the cross-domain phase.
            // Backward holds the gathered K/V and their full-length gradients at once.
            gather_kv(out, CommGroup::cp, {"cp_kv_all_gather", "cp_kv_regather", "cp_dkv_reduce_scatter"}, cp * kv_local);
            attention(out, m, s, d, a);
            return;
        case CpKind::ulysses: {
            // DeepSpeed-Ulysses (Jacobs et al. 2023): all-to-alls turn Q, K, V from T/cp tokens x
            // all of the rank's heads into T tokens x 1/cp of them, attention runs on the whole
            // sequence, and O goes back; backward runs the four transposed. Not overlapped
            // (DeepSpeed's and TE's "a2a" are blocking). Each buffer is the local tensor.
            const double q = d.tokens * a.q * a.qk_dim * d.e, o = d.tokens * a.q * a.v_dim * d.e;
            const double k = d.rows * d.tokens * a.kv * a.qk_dim * d.e, v = d.rows * d.tokens * a.kv * a.v_dim * d.e;
            const std::pair<std::string_view, double> fwd[] = {
                {"cp_a2a_q", q}, {"cp_a2a_k", k}, {"cp_a2a_v", v}, {"cp_a2a_o", o}};
            const std::pair<std::string_view, double> bwd[] = {
                {"cp_a2a_o_grad", o}, {"cp_a2a_q_grad", q}, {"cp_a2a_k_grad", k}, {"cp_a2a_v_grad", v}};
            for (const auto& [name, bytes] : fwd)
                out.comms.push_back({name, Collective::all_to_all, CommGroup::cp, Pass::fwd, bytes, 1, false});
            for (const auto& [name, bytes] : bwd)
                out.comms.push_back({name, Collective::all_to_all, CommGroup::cp, Pass::bwd, bytes, 1, false});
            // The core on T tokens and heads / cp: the same FLOP and saved bytes, K/V read once
            // per head of this rank's 1/cp.
            LayerShape whole = s;
            whole.q_len *= cp;
            Dims dw = d;
            dw.tokens *= cp;
            attention(out, m, whole, dw, {a.q / cp, a.kv / cp, a.qk_dim, a.v_dim});
            return;
        }
    }
}

void rope(LayerOps& out, const Dims& d, double elems_per_token) {
    const double elems = d.tokens * elems_per_token;
    out.ops.push_back(elementwise_op("rope", 2.0 * elems * d.e, 0.0, 2.0, kRopeFlop * elems));
}

// Multi-head attention with grouped K/V heads: a fused QKV projection, the core, the output
// projection (column- then row-parallel, Megatron).
void mha(LayerOps& out, const ModelSpec& m, const LayerShape& s, const Dims& d) {
    const double full_act = d.tokens * d.h * d.e;
    enter_tp_region(out.comms, s, full_act, true);
    const double qkv_n = (d.heads + 2.0 * d.kv_heads) * d.d;
    norm_reader_gemm(out, s, "qkv_proj", {d.tokens, qkv_n, d.h, 1}, d.tokens_sp * d.h * d.e, LoraTarget::linear_qkv, Split::column);
    if (m.position == PositionKind::rope) rope(out, d, (d.heads + d.kv_heads) * d.d);
    if (summa(s)) {
        // SUMMA leaves each rank the Q, K, V of its grid row's tokens for its column's heads: the
        // grid column (same heads, the other rows' tokens) gathers K and V before attention and
        // reduce-scatters dK, dV after it, as all-gather context parallelism does (exposed; the
        // local K/V is what is saved, so backward gathers again).
        gather_kv(out, CommGroup::tp_rows, {"summa_kv_all_gather", "summa_kv_regather", "summa_dkv_reduce_scatter"},
                  d.rows * d.tokens * d.kv_heads * 2.0 * d.d * d.e);
    }
    cp_attention(out, m, s, d, {d.heads, d.kv_heads, d.d, d.d});
    weight_gemm(out, s, "attn_out_proj", {d.tokens, d.h, d.heads * d.d, 1}, d.tokens * d.heads * d.d * d.e,
                LoraTarget::linear_proj, Split::row);
}

// A recurrent mixer's scan (or its decode update) is the step's per-group core: a step mixing
// prompts and decodes runs each form on its own sequences (inference's block_ops).
Op per_group_core(Op op) {
    op.core_projection = true;
    return op;
}

// The causal depthwise convolution with SiLU of a recurrent mixer over `channels` of this rank:
// read and write each token's channels, keep the input; a decoding request also reads and writes
// its cached conv_kernel - 1 inputs (recurrent_state).
void causal_conv(LayerOps& out, std::string_view name, const ModelSpec& m, LayerKind kind, const LayerShape& s, const Dims& d,
                 double channels, int64_t taps) {
    const double elems = d.tokens * channels;
    const double cache = s.decode ? 2.0 * s.batch * recurrent_state(m, kind, s.tp).conv_elems * d.e : 0.0;
    out.ops.push_back(elementwise_op(name, 2.0 * elems * d.e + cache, elems * d.e, 2.0,
                                     (2.0 * static_cast<double>(taps) + kSiluFlop) * elems));
}

// A batched product of the SSD scan: `batch` products of [m, k] x [k, n] moving `bytes` of HBM
// traffic per pass, none kept for backward unless `saved_bytes` says so.
Op ssd_product(std::string_view name, GemmShape g, double bytes, double saved_bytes) {
    Op op;
    op.name = name;
    op.kind = OpKind::batched_gemm;
    op.scan = true;
    op.gemm = g;
    op.bytes = bytes;
    op.saved_bytes = saved_bytes;
    return op;
}

// A Mamba-2 mixer (Megatron-Core's MambaMixer over the mamba_ssm kernels) on this rank's
// heads and groups, the tensor-parallel group's tokens: in_proj column-parallel to [z, x, B, C,
// dt], the causal depthwise convolution with SiLU over x, B and C, the SSD scan
// (mamba_chunk_scan_combined) in chunks of Q tokens, the gated RMSNorm (per group, so no tp
// collective) and out_proj row-parallel. The scan is costed as what its kernels do: per chunk,
// C B^T per group ([Q, Q] over the state), each head's chunk state B^T x ([N, P] over Q tokens),
// the pass of those states along the chunks (memory-bound), and the output from the
// incoming state (C state) plus the causal intra-chunk part ((C B^T . L) x), batched products of
// the state's, head's and chunk's small dimensions at efficiency.scan_max. Their HBM traffic: B
// and C once per group (its heads share them), x and the output once per head, C B^T and the
// chunk states in fp32 (states_in_fp32); the pass reads the fp32 states and writes them in the
// operands' format (_state_passing_fwd's out_dtype), which the output's inter-chunk part reads.
// Backward runs each product twice (both operands' gradients) and the pass at twice its bytes,
// after recomputing C B^T, the chunk states and their pass, which the forward does not keep
// (_mamba_chunk_scan_combined_bwd). Measured on H100 and H200: docs/CALIBRATION.md, "Mamba-2
// mixers". The scan keeps x, B and C for backward, the gated norm its two inputs (the scan's
// output and z), out_proj the normalised output.
void mamba(LayerOps& out, const ModelSpec& m, const LayerShape& s, const Dims& d) {
    const MambaSpec& a = m.mamba;
    const double tp = static_cast<double>(s.tp);
    const double inner = static_cast<double>(a.d_inner(m.hidden)) / tp;
    const double heads = static_cast<double>(a.heads(m.hidden)) / tp;
    const double groups = static_cast<double>(a.groups) / tp;
    const double state = static_cast<double>(a.state_dim), head = static_cast<double>(a.head_dim);
    const double bc = 2.0 * groups * state, conv = inner + bc;
    const double q = static_cast<double>(a.chunk);
    const double chunks = d.tokens / q;

    enter_tp_region(out.comms, s, d.tokens * d.h * d.e, true);
    norm_reader_gemm(out, s, "mamba_in_proj", {d.tokens, 2.0 * inner + bc + heads, d.h, 1}, d.tokens_sp * d.h * d.e,
                     LoraTarget::none, Split::column);
    const double conv_elems = d.tokens * conv;
    causal_conv(out, "mamba_conv1d", m, LayerKind::mamba, s, d, conv, a.conv_kernel);
    const double y = d.tokens * inner * d.e;
    auto recomputed = [](Op op) {
        op.bwd_reruns_fwd = true;
        return op;
    };
    const double bc_bytes = d.tokens * groups * state * d.e;  // B or C (x and the output: y)
    if (s.decode) {
        // A decoded token updates each request's [head_dim, state_dim] state per head in place
        // (mamba_ssm's selective_state_update): read and write the states, read x, B and C, write
        // y; dA h + dB x and C h are about 6 FLOP per state element.
        const double states = s.batch * recurrent_state(m, LayerKind::mamba, s.tp).state_elems;
        out.ops.push_back(per_group_core(elementwise_op("ssm_state_update", 2.0 * states * kRecurrentStateBytes + 2.0 * bc_bytes + 2.0 * y,
                                              0.0, 2.0, 6.0 * d.tokens * heads * head * state)));
    } else {
        const double cb_bytes = chunks * groups * q * q * 4.0;
        const double states = chunks * heads * head * state;
        out.ops.push_back(per_group_core(recomputed(ssd_product("ssd_bmm_cb", {q, q, state, chunks * groups}, 2.0 * bc_bytes + cb_bytes, 0.0))));
        out.ops.push_back(per_group_core(recomputed(ssd_product("ssd_chunk_state", {state, head, q, chunks * heads},
                                                      bc_bytes + y + states * 4.0, conv_elems * d.e))));
        out.ops.push_back(per_group_core(recomputed(elementwise_op("ssd_state_passing", states * (4.0 + d.e), 0.0, 2.0, 2.0 * states))));
        out.ops.push_back(per_group_core(ssd_product("ssd_chunk_scan_state", {q, head, state, chunks * heads}, bc_bytes + states * d.e, 0.0)));
        out.ops.push_back(per_group_core(ssd_product("ssd_chunk_scan_intra", {q, head, q, chunks * heads}, cb_bytes + 2.0 * y, 0.0)));
    }
    out.ops.push_back(elementwise_op("mamba_gated_norm", 3.0 * y, 2.0 * y, 2.0, (kRmsNormFlop + kSiluFlop) * y / d.e));
    weight_gemm(out, s, "mamba_out_proj", {d.tokens, d.h, inner, 1}, y, LoraTarget::none, Split::row);
    leave_tp_region(out.comms, s, d.tokens * d.h * d.e);
}

// Gated DeltaNet (model.linear_attention; Qwen3NextGatedDeltaNet) on this rank's heads, the
// tensor-parallel group's tokens: in_proj_qkvz and in_proj_ba fused column-parallel, the causal
// depthwise convolution with SiLU over q, k and v, the gated delta rule, the gated RMSNorm per
// value head (no tp collective) and out_proj row-parallel; the block leaves the tensor-parallel
// region after it. The rule's state is [key_head_dim, value_head_dim] per value head, kept in fp32
// (kRecurrentStateBytes, as the Mamba mixers'). A prompt runs it in chunks of C tokens in the WY form (flash-linear-attention's
// chunk_gated_delta_rule, Yang et al. 2025 sec. 3.3): per chunk and value head, K K^T and Q K^T
// ([C, C] over the key dim), the WY products W and U ([C, dk + dv] over C), the incoming state's
// reads W S and Q S ([C, dv] over dk), the state update K^T U ([dk, dv] over C) and the intra-chunk
// output ([C, dv] over C): batched products at efficiency.scan_max, the chunk states moved in
// fp32. A decode step updates each request's state once per token instead (fused_recurrent: read
// and write the state, about 7 dk dv FLOP per value head), and the convolution reads and writes
// its conv_kernel - 1 cached inputs. The products are the step's per-group core (core_projection):
// a step mixing prompts and decodes runs each form on its own sequences (inference's block_ops).
void gated_deltanet(LayerOps& out, const ModelSpec& m, const LayerShape& s, const Dims& d) {
    const LinearAttentionSpec& a = m.linear_attention;
    const double tp = static_cast<double>(s.tp);
    const double kh = static_cast<double>(a.key_heads) / tp, vh = static_cast<double>(a.value_heads) / tp;
    const double dk = static_cast<double>(a.key_head_dim), dv = static_cast<double>(a.value_head_dim);
    const double kd = kh * dk, vd = vh * dv, conv = 2.0 * kd + vd;
    const double c = static_cast<double>(a.chunk);

    enter_tp_region(out.comms, s, d.tokens * d.h * d.e, true);
    norm_reader_gemm(out, s, "gdn_in_proj", {d.tokens, 2.0 * kd + 2.0 * vd + 2.0 * vh, d.h, 1}, d.tokens_sp * d.h * d.e,
                     LoraTarget::linear_qkv, Split::column);
    causal_conv(out, "gdn_conv1d", m, LayerKind::linear, s, d, conv, a.conv_kernel);
    const double qk_bytes = d.tokens * kd * d.e, v_bytes = d.tokens * vd * d.e;  // q or k; v or the output
    if (s.decode) {
        const double states = s.batch * recurrent_state(m, LayerKind::linear, s.tp).state_elems;
        const double per_token = d.tokens * vh * dk * dv;
        out.ops.push_back(per_group_core(elementwise_op("gdn_recurrent", 2.0 * states * kRecurrentStateBytes + 2.0 * qk_bytes + 2.0 * v_bytes,
                                              0.0, 2.0, 7.0 * per_token)));
    } else {
        // The chunk matrices ([C, C]) and the chunk states are fp32, as the decode state.
        const double n = d.tokens / c * vh;  // chunks x value heads
        const double states = n * dk * dv * kRecurrentStateBytes;
        out.ops.push_back(per_group_core(ssd_product("gdn_chunk_kkt", {c, c, dk, 2.0 * n}, 2.0 * qk_bytes + n * c * c * kRecurrentStateBytes,
                                           2.0 * qk_bytes + v_bytes)));
        out.ops.push_back(per_group_core(ssd_product("gdn_chunk_wy", {c, dk + dv, c, n}, n * c * c * kRecurrentStateBytes + qk_bytes + 2.0 * v_bytes, 0.0)));
        out.ops.push_back(per_group_core(ssd_product("gdn_chunk_state", {dk, dv, c, n}, qk_bytes + v_bytes + 2.0 * states, 0.0)));
        out.ops.push_back(per_group_core(ssd_product("gdn_chunk_inter", {c, dv, dk, 2.0 * n}, 2.0 * qk_bytes + states, 0.0)));
        out.ops.push_back(per_group_core(ssd_product("gdn_chunk_intra", {c, dv, c, n}, n * c * c * kRecurrentStateBytes + 2.0 * v_bytes, 0.0)));
    }
    out.ops.push_back(elementwise_op("gdn_gated_norm", 3.0 * v_bytes, 2.0 * v_bytes, 2.0, (kRmsNormFlop + kSiluFlop) * v_bytes / d.e));
    weight_gemm(out, s, "gdn_out_proj", {d.tokens, d.h, vd, 1}, v_bytes, LoraTarget::linear_proj, Split::row);
}

// Multi-head latent attention as Megatron-Core builds it (megatron/core/transformer/
// multi_latent_attention.py, MLASelfAttention): the down projections are TELinear with
// parallel_mode "duplicated" (replicated on every TP rank, run on the rank's own tokens: T/tp under
// sequence parallelism), the up projections column-parallel over heads, the output projection
// row-parallel. So the TP region is entered with the latents (q_lora_rank + kv_lora_rank +
// qk_rope_head_dim wide), not the hidden state. Decoding absorbs the K and V up-projections into
// the query and the output (DeepSeek-V2 sec. 2.1.3) and attends over the cached latent as one
// shared K/V head of width kv_lora_rank + qk_rope_head_dim (values: the first kv_lora_rank).
void mla(LayerOps& out, const ModelSpec& m, const LayerShape& s, const Dims& d) {
    const MlaSpec& a = m.mla;
    const double q_lat = static_cast<double>(a.q_lora_rank);
    const double kv_lat = static_cast<double>(a.kv_lora_rank);
    const double cache = static_cast<double>(a.cache_dim());
    const double nope = static_cast<double>(a.qk_nope_head_dim);
    const double rope_dim = static_cast<double>(a.qk_rope_head_dim);
    const double qk = static_cast<double>(a.qk_head_dim());
    const double v = static_cast<double>(a.v_head_dim);
    const double in_saved = d.tokens_sp * d.h * d.e;
    const LoraTarget qkv = LoraTarget::linear_qkv;

    // Down projections on this rank's tokens; the KV one keeps the shared input for backward.
    // mla_up_proj recompute (Megatron's qkv_up_checkpoint) keeps the latents the two latent norms
    // read and runs the norms, the up-projections and RoPE again: what the up-projections and the
    // core saved (their inputs; Q, K and V) is dropped.
    norm_reader_gemm(out, s, "kv_down_proj", {d.tokens_sp, cache, d.h, 1}, in_saved, qkv);
    norm(out, "kv_norm", m, d, kv_lat);
    out.ops.back().modules |= module_bit(RecomputeModule::mla_up_proj);
    if (q_lat > 0) {
        weight_gemm(out, s, "q_down_proj", {d.tokens_sp, q_lat, d.h, 1}, 0.0, qkv);
        norm(out, "q_norm", m, d, q_lat);
        out.ops.back().modules |= module_bit(RecomputeModule::mla_up_proj);
    }
    // Without a query latent the query projection is column-parallel on the hidden state itself.
    const double q_in = q_lat > 0 ? q_lat : d.h;
    enter_tp_region(out.comms, s, d.tokens * (q_in + cache) * d.e, true);
    const ListEnds up = ends(out);
    weight_gemm(out, s, q_lat > 0 ? "q_up_proj" : "q_proj", {d.tokens, d.heads * qk, q_in, 1},
                q_lat > 0 ? d.tokens_sp * q_lat * d.e : 0.0, qkv);
    if (s.decode) {
        // W_UK absorbed into the query (one [nope, kv_lora] product per head), attention over the
        // latent cache, W_UV applied to the per-head latent output.
        weight_gemm(out, s, "q_absorb_uk", {d.tokens, kv_lat, nope, d.heads}, 0.0, qkv);
        out.ops.back().core_projection = true;
        rope(out, d, (d.heads + 1.0) * rope_dim);
        attention(out, m, s, d, {d.heads, 1.0, cache, kv_lat, s.batch * s.kv_len * cache});
        weight_gemm(out, s, "o_absorb_uv", {d.tokens, v, kv_lat, d.heads}, 0.0, qkv);
        out.ops.back().core_projection = true;
    } else {
        weight_gemm(out, s, "kv_up_proj", {d.tokens, d.heads * (nope + v), kv_lat, 1}, d.tokens_sp * kv_lat * d.e, qkv);
        out.ops.back().core_projection = true;
        rope(out, d, (d.heads + 1.0) * rope_dim);  // the query's RoPE part per head, one shared RoPE key
        inside(out, up, RecomputeModule::mla_up_proj, true);
        const size_t core = out.ops.size();
        cp_attention(out, m, s, d, {d.heads, d.heads, qk, v});
        for (size_t i = core; i < out.ops.size(); ++i)
            if (out.ops[i].attention_core) out.ops[i].frees |= module_bit(RecomputeModule::mla_up_proj);
    }
    weight_gemm(out, s, "attn_out_proj", {d.tokens, d.h, d.heads * v, 1}, d.tokens * d.heads * v * d.e,
                LoraTarget::linear_proj);
}

// Vector FLOP per output element of an activation and whether it is gated (two input halves).
struct ActCost {
    double halves, flop;
};

ActCost activation_cost(FfnAct a) {
    switch (a) {
        case FfnAct::gelu: return {1, kGeluFlop};
        case FfnAct::swiglu: return {2, kSwigluFlop};
        case FfnAct::squared_relu: return {1, kSquaredReluFlop};
        case FfnAct::geglu: return {2, kGegluFlop};
    }
    throw std::logic_error("activation_cost: an FfnAct without a case");  // every enumerator returns above
}

struct FfnNames {
    std::string_view up, act, down;
};

// One FFN (or `batch` experts side by side, `m` token rows each) of width f on this GPU: up
// projection, activation (backward needs its input: both halves when gated), down projection
// (backward needs the activation's output). `in_saved`: the input kept for the up projection.
// `width`: the rows' width (the hidden width; a latent MoE's experts run in the latent width).
void ffn(LayerOps& out, const ModelSpec& m, const LayerShape& s, const Dims& d, const FfnNames& names, double rows,
         double batch, double f, double in_saved, bool experts = false, double width = 0) {
    const ActCost act = activation_cost(m.ffn_act);
    const double elems = rows * batch * f;  // activation outputs
    const double h = width > 0 ? width : d.h;
    // Experts are no tensor-parallel region of their own (their tokens come gathered by the
    // dispatcher, cast whole) and SUMMA is refused for them (scenario.cpp).
    // A dense or shared FFN reads the pre-norm's output; experts, the tokens dispatched to them.
    const Split up = experts ? Split::none : Split::column, down = experts ? Split::none : Split::row;
    if (experts)
        weight_gemm(out, s, names.up, {rows, act.halves * f, h, batch}, in_saved, LoraTarget::linear_fc1, up);
    else
        norm_reader_gemm(out, s, names.up, {rows, act.halves * f, h, batch}, in_saved, LoraTarget::linear_fc1, up);
    out.ops.push_back(elementwise_op(names.act, (act.halves + 1.0) * elems * d.e, act.halves * elems * d.e, 2.0, act.flop * elems));
    // moe_act recompute runs the experts' activation again and drops its output, which the down
    // projection saved.
    if (experts) out.ops.back().modules |= module_bit(RecomputeModule::moe_act);
    const size_t down_from = out.ops.size();
    weight_gemm(out, s, names.down, {rows, h, f, batch}, elems * d.e, LoraTarget::linear_fc2, down);
    if (experts) output_dropped_by(out, down_from, elems * d.e, RecomputeModule::moe_act);
}

// Experts split narrower than the rest is tensor-parallel (etp < tp; whole at etp 1): in
// training Megatron-Core's MoE parallel folding (expert_tensor_parallel_size 1), which needs
// sequence parallelism; in inference experts spread over attention's tensor-parallel GPUs.
int64_t expert_tp(const LayerShape& s) { return s.etp > 0 ? s.etp : s.tp; }
bool folded_experts(const LayerShape& s) { return expert_tp(s) < s.tp; }
// Experts split wider than attention (inference, etp > tp): each expert's slices span several
// attention-DP replicas, which all-gather the copies routed to them (the replicas' tokens
// differ) and reduce-scatter the partial outputs: SGLang's DP attention with TP experts.
bool widened_experts(const LayerShape& s) { return expert_tp(s) > s.tp; }

void feed_forward(LayerOps& out, const ModelSpec& m, const LayerShape& s, const Dims& d, LayerKind kind) {
    const double tp = static_cast<double>(s.tp);
    const double in_saved = d.tokens_sp * d.h * d.e;
    if (kind == LayerKind::dense) {
        ffn(out, m, s, d, {"ffn_up", "ffn_act", "ffn_down"}, d.tokens, 1, static_cast<double>(m.ffn_hidden) / tp, in_saved);
        return;
    }
    // Mixture of experts as Megatron-Core's alltoall dispatcher runs it (core_v0.12
    // token_dispatcher.py: permute, all-to-all over ep, all-gather over the expert
    // tensor-parallel group, sort by local expert; the reverse after the experts) behind its MoE
    // layer, which takes the sequence-parallel shard: the router, the permutation and the
    // all-to-alls see this rank's own tokens (T/tp under sequence parallelism). Experts split
    // over tp (etp = tp) then gather what the tensor-parallel group received, so each rank runs
    // its slice of every local expert's width on all of it; whole experts (etp 1, parallel
    // folding) do not. Shared experts are one tensor-parallel FFN of their summed width on every
    // token (Megatron's shared_expert), gathered by the block.
    const double experts = static_cast<double>(m.moe.experts);
    const double topk = static_cast<double>(m.moe.top_k);
    const double ep = static_cast<double>(s.ep);
    const bool folded = folded_experts(s);
    // Folded experts without sequence parallelism (inference's TP attention with the experts
    // spread over the same tensor-parallel GPUs, etp x ep = tp: TensorRT-LLM's and SGLang's
    // moe_tp x moe_ep inside attention's TP group): every rank holds all T tokens after
    // attention's all-reduce, routes them all, and runs only the copies routed to its expert
    // group (T / ep tokens' worth) on its etp-wide slice of each; the partial outputs join the
    // block's all-reduce, so nothing is dispatched.
    const bool replicated = folded && !s.sequence_parallel;
    // Experts wider than attention: every GPU first gathers the hidden states of the etp / tp
    // replicas sharing its expert slices and routes them all (SGLang's DP attention gathers
    // tokens before the MoE layer and scatters them after).
    const bool widened = widened_experts(s);
    const double replicas = widened ? static_cast<double>(expert_tp(s)) / static_cast<double>(s.tp) : 1.0;  // a whole number (rules)
    const double own = (replicated ? d.tokens / ep : d.tokens_sp) * replicas;
    const double gather = s.sequence_parallel && !folded && !widened ? tp : 1.0;
    const double expert_width = static_cast<double>(m.moe.expert_ffn_hidden) / static_cast<double>(expert_tp(s));
    // Token copies this GPU receives: the busiest expert-parallel rank's share; its experts run
    // on the tensor-parallel group's.
    const double routed = own * topk * (s.ep > 1 ? m.moe.load_imbalance : 1.0);
    const double rows = routed * gather;
    const double local_experts = experts / ep;
    const bool shared = m.moe.shared_experts > 0;

    // The router and the shared experts read the same input; it is kept once.
    const double routed_tokens = replicated ? d.tokens : own;
    norm_reader_gemm(out, s, "moe_router", {routed_tokens, experts, d.h, 1}, shared ? 0.0 : in_saved, LoraTarget::none);
    // Latent MoE: the routed path runs `width` wide, projected down from the hidden width first
    // (a GEMM every rank runs whole on the tokens it routes; it reads the router's input).
    const bool latent = m.moe.latent_size > 0;
    const double width = latent ? static_cast<double>(m.moe.latent_size) : d.h;
    if (latent) weight_gemm(out, s, "moe_latent_down", {routed_tokens, width, d.h, 1}, 0.0, LoraTarget::none);
    const double a2a = routed * width * d.e, gathered = rows * width * d.e;
    // Megatron's shared-expert overlap runs dispatch and combine while the shared experts compute;
    // its A2A overlap while a paired micro-batch computes the other pass.
    const bool hidden = (shared && s.shared_expert_overlap) || s.a2a_overlap;
    // Token permutation, memory-bound (Megatron-Core's alltoall dispatcher; TensorRT-LLM's
    // expand/finalize kernels): each token's top_k copies are gathered into expert order before
    // dispatch (read and write every copy) and after the combine scattered back, weighted by their
    // routing probabilities, into the token rows; backward scatters and gathers the same. The
    // weighted sum keeps the expert outputs for the probabilities' gradient. Fine-grained experts
    // (DeepSeek-V3: 2,048 wide, top 8) spend on this about a third of their GEMMs' time.
    const double copies = own * topk * width * d.e, token_rows = own * width * d.e;
    if (widened) {
        out.comms.push_back({"moe_dp_all_gather", Collective::all_gather, CommGroup::etp, Pass::fwd, token_rows, 1, false});
        out.comms.push_back({"moe_dp_reduce_scatter_grad", Collective::reduce_scatter, CommGroup::etp, Pass::bwd, token_rows, 1, false});
    }
    out.ops.push_back(elementwise_op("moe_permute", 2.0 * copies, 0.0, 1.0));
    const bool dispatched = s.ep > 1 && !replicated;
    // A deduplicating dispatcher (DeepEP, HybridEP) sends each token row once per node and GPU
    // with its expert indices, not once per copy: the rows, and top_k copies of each to route.
    const CommOp exchange = s.dedup_dispatch
                                ? CommOp{"", Collective::dispatch, CommGroup::ep, Pass::fwd, a2a / topk, 1, hidden, topk}
                                : CommOp{"", Collective::all_to_all, CommGroup::ep, Pass::fwd, a2a, 1, hidden};
    auto exchange_as = [&](std::string_view name, Pass pass) {
        CommOp c = exchange;
        c.name = name;
        c.pass = pass;
        c.cross_pass = s.a2a_overlap;
        out.comms.push_back(c);
    };
    if (dispatched) {
        exchange_as("moe_dispatch", Pass::fwd);
        exchange_as("moe_dispatch_grad", Pass::bwd);
    }
    // In bf16 (the dispatcher's own collectives), not hidden: the experts wait for them.
    if (gather > 1) {
        out.comms.push_back({"moe_tp_all_gather", Collective::all_gather, CommGroup::tp, Pass::fwd, gathered, 1, false});
        out.comms.push_back({"moe_tp_reduce_scatter_grad", Collective::reduce_scatter, CommGroup::tp, Pass::bwd, gathered, 1, false});
    }
    // Copies from more than one source rank arrive grouped by source; more than one local
    // expert needs them regrouped by expert before the grouped GEMM and back again after it.
    const bool regroup = (dispatched || gather > 1) && local_experts > 1;
    if (regroup) out.ops.push_back(elementwise_op("moe_sort_chunks", 2.0 * gathered, 0.0, 1.0));
    // Decoding a few tokens touches only some experts, and a grouped GEMM reads the weights of
    // those alone: each of the expert-parallel group's own x ep tokens picks top_k of the experts,
    // so a local expert is left idle with probability (1 - top_k / experts)^(own x ep) (uniform,
    // independent routing). Prefill and training batches touch every expert (the factor is 1 to
    // rounding), so only decode steps take the expectation.
    const double touched =
        s.decode ? local_experts * (1.0 - std::pow(1.0 - topk / experts, own * ep)) : local_experts;
    ffn(out, m, s, d, {"expert_up", "expert_act", "expert_down"}, rows / touched, touched, expert_width, gathered,
        true, width);
    if (regroup) out.ops.push_back(elementwise_op("moe_unsort_chunks", 2.0 * gathered, 0.0, 1.0));
    if (gather > 1) {
        out.comms.push_back({"moe_tp_reduce_scatter", Collective::reduce_scatter, CommGroup::tp, Pass::fwd, gathered, 1, false});
        out.comms.push_back({"moe_tp_all_gather_grad", Collective::all_gather, CommGroup::tp, Pass::bwd, gathered, 1, false});
    }
    if (dispatched) {
        exchange_as("moe_combine", Pass::fwd);
        exchange_as("moe_combine_grad", Pass::bwd);
    }
    // Forward reads the copies and writes the token rows; backward reads the gradient once per
    // copy, the kept copies for the probabilities, and writes the copies' gradient.
    out.ops.push_back(
        elementwise_op("moe_unpermute", copies + token_rows, copies, (3.0 * copies + token_rows) / (copies + token_rows)));
    if (widened) {
        out.comms.push_back({"moe_dp_reduce_scatter", Collective::reduce_scatter, CommGroup::etp, Pass::fwd, token_rows, 1, false});
        out.comms.push_back({"moe_dp_all_gather_grad", Collective::all_gather, CommGroup::etp, Pass::bwd, token_rows, 1, false});
    }
    // Back to the hidden width (backward needs the latent rows it read).
    if (latent) weight_gemm(out, s, "moe_latent_up", {routed_tokens, d.h, width, 1}, token_rows, LoraTarget::none);
    if (shared) {
        const ListEnds first = ends(out);
        ffn(out, m, s, d, {"shared_up", "shared_act", "shared_down"}, d.tokens, 1,
            static_cast<double>(m.moe.shared_experts * m.moe.shared_expert_ffn_hidden) / tp, in_saved);
        for (size_t i = first.ops; i < out.ops.size(); ++i) out.ops[i].shared_expert = true;
        inside(out, first, RecomputeModule::shared_experts, true);
    }
}

}  // namespace

double kv_heads_per_rank(const ModelSpec& m, int64_t tp) {
    return std::max(1.0, static_cast<double>(m.kv_heads) / static_cast<double>(tp));
}

RecurrentState recurrent_state(const ModelSpec& m, LayerKind kind, int64_t tp) {
    const double ranks = static_cast<double>(tp);
    if (kind == LayerKind::mamba) {
        // Per head a [head_dim, state_dim] state; the convolution runs over x, B and C.
        const MambaSpec& a = m.mamba;
        const double conv = static_cast<double>(a.d_inner(m.hidden) + 2 * a.groups * a.state_dim);
        return {static_cast<double>(a.heads(m.hidden) * a.head_dim * a.state_dim) / ranks,
                conv / ranks * static_cast<double>(a.conv_kernel - 1)};
    }
    if (kind == LayerKind::linear) {
        // Per value head a [key_head_dim, value_head_dim] state; the convolution runs over q, k, v.
        const LinearAttentionSpec& a = m.linear_attention;
        const double conv = static_cast<double>(2 * a.key_dim() + a.value_dim());
        return {static_cast<double>(a.value_heads * a.key_head_dim * a.value_head_dim) / ranks,
                conv / ranks * static_cast<double>(a.conv_kernel - 1)};
    }
    return {};
}

namespace {

// The FFN sub-layer of kind `ffn` (dense or moe) in its tensor-parallel region. Under sequence
// parallelism an MoE sub-layer routes each rank's own tokens (feed_forward): it enters the
// tensor-parallel region only for its shared experts, whose gather, like the dense FFN's, feeds a
// low-precision up projection alone.
void ffn_sublayer(LayerOps& out, const ModelSpec& m, const LayerShape& s, const Dims& d, LayerKind ffn, double full_act) {
    const bool own_tokens = ffn == LayerKind::moe && s.sequence_parallel && s.tp > 1;
    const bool tp_region = !own_tokens || m.moe.shared_experts > 0;
    const ListEnds from = ends(out);
    if (tp_region) enter_tp_region(out.comms, s, full_act, true);
    feed_forward(out, m, s, d, ffn);
    if (tp_region) leave_tp_region(out.comms, s, full_act);
    // Megatron checkpoints a dense MLP (mlp) or a MoE layer, shared experts and dispatch included
    // (moe), whole.
    inside(out, from, ffn == LayerKind::moe ? RecomputeModule::moe : RecomputeModule::mlp, true);
}

// `out` emptied for refilling: every field at its default, the vectors' storage kept.
void reset(LayerOps& out) {
    LayerOps fresh;
    fresh.ops = std::move(out.ops);
    fresh.comms = std::move(out.comms);
    fresh.ops.clear();
    fresh.comms.clear();
    out = std::move(fresh);
}

}  // namespace

LayerOps layer_ops(const ModelSpec& m, const LayerShape& s, LayerKind kind) {
    LayerOps out;
    layer_ops(out, m, s, kind);
    return out;
}

LayerOps embedding_ops(const ModelSpec& m, const LayerShape& s) {
    LayerOps out;
    embedding_ops(out, m, s);
    return out;
}

LayerOps head_ops(const ModelSpec& m, const LayerShape& s, bool with_loss) {
    LayerOps out;
    head_ops(out, m, s, with_loss);
    return out;
}

void layer_ops(LayerOps& out, const ModelSpec& m, const LayerShape& s, LayerKind kind) {
    reset(out);
    out.ops.reserve(48);  // a block has a few dozen ops: grown once, not op by op
    out.comms.reserve(32);  // SUMMA's panel traffic: up to six per weight GEMM
    const Dims d = dims(m, s);
    const double full_act = d.tokens * d.h * d.e;  // one [T, h] activation, gathered
    out.input_bytes = d.tokens_sp * d.h * d.e;  // sharded by sequence parallelism, as Megatron keeps it

    if (kind == LayerKind::mamba || kind == LayerKind::mlp || kind == LayerKind::attention || kind == LayerKind::experts) {
        // A hybrid model's single-purpose block: pre-norm, the one sub-layer, residual.
        pre_norm(out, "pre_norm", m, d);
        if (kind == LayerKind::mamba) {
            mamba(out, m, s, d);
        } else if (kind == LayerKind::attention) {
            mha(out, m, s, d);
            leave_tp_region(out.comms, s, full_act);
        } else {
            ffn_sublayer(out, m, s, d, kind == LayerKind::experts ? LayerKind::moe : LayerKind::dense, full_act);
        }
        residual(out, "residual", m, d);
        return;
    }

    pre_norm(out, "attn_norm", m, d);
    norm_stats(out, m, s, d);
    if (kind == LayerKind::linear)
        gated_deltanet(out, m, s, d);
    else if (m.attention_kind == AttentionKind::mla)
        mla(out, m, s, d);
    else
        mha(out, m, s, d);
    leave_tp_region(out.comms, s, full_act);
    residual(out, "attn_residual", m, d);

    pre_norm(out, "ffn_norm", m, d);
    norm_stats(out, m, s, d);
    ffn_sublayer(out, m, s, d, m.ffn_kind(kind), full_act);
    residual(out, "ffn_residual", m, d);
}

LayerOps attention_ops(const ModelSpec& m, const LayerShape& s, LayerKind kind) {
    LayerOps out;
    attention_ops(out, m, s, kind);
    return out;
}

void attention_ops(LayerOps& out, const ModelSpec& m, const LayerShape& s, LayerKind kind) {
    reset(out);
    if (kind == LayerKind::mlp || kind == LayerKind::experts) return;
    const Dims d = dims(m, s);
    // A recurrent mixer's core (its scan) is what a step runs per group of sequences.
    if (kind == LayerKind::mamba) return mamba(out, m, s, d);
    if (kind == LayerKind::linear) return gated_deltanet(out, m, s, d);
    // A hybrid model's attention block is multi-head (layer_ops); the others follow the model.
    if (kind != LayerKind::attention && m.attention_kind == AttentionKind::mla)
        mla(out, m, s, d);
    else
        mha(out, m, s, d);
}

namespace {

// Positions added to the embedded tokens: a learned table or fixed sinusoids are read (the
// output read and rewritten); RoPE and ALiBi act inside attention instead.
bool position_added(const ModelSpec& m) { return m.position == PositionKind::learned || m.position == PositionKind::sincos; }

// A ViT's patch embedding: each token's patch x patch x in_channels pixels times a
// [patch_in, h] matrix, a GEMM over every token (FourCastNet's PatchEmbed, a strided
// convolution). Split like the vocabulary-parallel embedding: each tensor-parallel rank holds
// patch_in/tp rows and the partial sums are reduced; the pixels need no gradient.
// Under SUMMA it is a grid GEMM whose input (the pixels) needs no gradient.
void patch_embedding(LayerOps& out, const ModelSpec& m, const LayerShape& s, const Dims& d) {
    const double patch_in = static_cast<double>(m.image.patch_in());
    const double k = patch_in / static_cast<double>(s.tp);
    if (summa(s)) {
        const double n = d.h / static_cast<double>(s.tp);
        summa_comms(out, d.tokens * patch_in * d.e, patch_in * n * d.e, false, true);
        weight_gemm(out, s, "patch_embed", {d.tokens, n, patch_in, 1}, d.tokens * k * d.e, LoraTarget::none);
    } else {
        weight_gemm(out, s, "patch_embed", {d.tokens, d.h, k, 1}, d.tokens * k * d.e, LoraTarget::none);
    }
    out.ops.back().input_grad = false;
    const double mask = m.dropout ? d.tokens_sp * d.h : 0.0;
    if (position_added(m))
        out.ops.push_back(elementwise_op("position_add", 3.0 * d.tokens * d.h * d.e, mask, 2.0, d.tokens * d.h));
    else if (m.dropout)
        out.ops.push_back(elementwise_op("embed_dropout", 2.0 * d.tokens * d.h * d.e, mask, 2.0, kDropoutFlop * d.tokens * d.h));
}

// A ViT's head: [h, patch_out] column-parallel over the regressed values, then the L2 loss in
// fp32: read the prediction and the fp32 target, keep the residual for backward; each rank
// reduces its slice, and the per-token partial sums are all-reduced over the ranks.
void regression_head(LayerOps& out, const ModelSpec& m, const LayerShape& s, const Dims& d, bool with_loss) {
    const double n = static_cast<double>(m.image.patch_out()) / static_cast<double>(s.tp);
    weight_gemm(out, s, "regression_head", {d.tokens, n, d.h, 1}, d.tokens_sp * d.h * d.e, LoraTarget::none, Split::column);
    out.ops.back().keep_activation_precision = with_loss;  // the output layer, as lm_head
    if (!with_loss) return;
    const double values = d.tokens * n;
    out.ops.push_back(elementwise_op("mse_loss", values * (d.e + 4.0), values * 4.0, 2.0, kMseFlop * values));
    if (s.tp > 1)
        out.comms.push_back({"loss_all_reduce", Collective::all_reduce, CommGroup::tp, Pass::fwd, d.tokens * 4.0, 1, false});
}

}  // namespace

void embedding_ops(LayerOps& out, const ModelSpec& m, const LayerShape& s) {
    reset(out);
    const Dims d = dims(m, s);
    if (m.kind == ModelKind::vit) {
        patch_embedding(out, m, s, d);
    } else {
        const double positions = position_added(m) ? 1.0 : 0.0;
        const double mask = m.dropout ? d.tokens_sp * d.h : 0.0;
        // Under SUMMA each rank looks up its grid column's tokens in its share of the vocabulary
        // and of the hidden width: rows x tokens x h/C partial rows, reduce-scattered over the column.
        const double looked_up = summa(s) ? d.rows * d.tokens * d.h / static_cast<double>(s.tp) : d.tokens * d.h;
        out.ops.push_back(elementwise_op("embedding", (2.0 + positions) * looked_up * d.e, mask));
        if (summa(s)) {
            out.comms.push_back({"summa_embed_reduce_scatter", Collective::reduce_scatter, CommGroup::tp_rows, Pass::fwd,
                                 looked_up * d.e, 1, false});
            out.comms.push_back({"summa_embed_all_gather_grad", Collective::all_gather, CommGroup::tp_rows, Pass::bwd,
                                 looked_up * d.e, 1, false});
        }
    }
    // Vocabulary-parallel embedding (a ViT's: split over the patch's pixels): each rank holds a
    // 1/tp share of the rows; partial rows are summed.
    leave_tp_region(out.comms, s, d.tokens * d.h * d.e);
}

namespace {

struct OutputNames {
    std::string_view norm, head, loss;
};

// The final norm and the entry into the column-parallel output layer.
void final_norm(LayerOps& out, std::string_view name, const ModelSpec& m, const LayerShape& s, const Dims& d) {
    norm(out, name, m, d, d.h);
    norm_stats(out, m, s, d);
    enter_tp_region(out.comms, s, d.tokens * d.h * d.e);
}

// Final norm, vocabulary-parallel output layer and (training) cross-entropy of a language model.
void lm_output(LayerOps& out, const ModelSpec& m, const LayerShape& s, const Dims& d, const OutputNames& names,
               bool with_loss) {
    final_norm(out, names.norm, m, s, d);
    const double v = static_cast<double>(m.vocab) / static_cast<double>(s.tp);
    weight_gemm(out, s, names.head, {d.tokens, v, d.h, 1}, d.tokens_sp * d.h * d.e, LoraTarget::none, Split::column);
    // Training keeps the output layer in bf16 under fp8/fp4 (see Op); a serving engine's choice
    // is its weight_precision.
    out.ops.back().keep_activation_precision = with_loss;
    if (with_loss) {
        // Vocabulary-parallel cross-entropy in fp32: the softmax is kept for backward.
        const double logits = d.tokens * v;
        out.ops.push_back(elementwise_op(names.loss, logits * (d.e + 2.0 * 4.0), logits * 4.0, 2.0, kCrossEntropyFlop * logits));
        if (s.tp > 1)
            out.comms.push_back({"loss_all_reduce", Collective::all_reduce, CommGroup::tp, Pass::fwd,
                                 3.0 * d.tokens * 4.0, 1, false});
    }
}

// Multi-token prediction in training (DeepSeek-V3 section 2.2; Megatron-Core's
// MultiTokenPredictionBlock, after the decoder on the last stage): per module, the next token's
// embedding (the model's, vocabulary-parallel) and the previous depth's hidden state, each
// normalised, concatenated and projected [2h -> h] (column-parallel, gathered back), one block
// (mtp_block_kind), then its own final norm, the shared output layer and a loss.
void mtp_modules(LayerOps& out, const ModelSpec& m, const LayerShape& s, const Dims& d) {
    LayerOps block;
    layer_ops(block, m, s, mtp_block_kind(m));
    for (int64_t i = 0; i < m.mtp_layers; ++i) {
        out.ops.push_back(elementwise_op("mtp_embedding", 2.0 * d.tokens * d.h * d.e, 0.0));
        leave_tp_region(out.comms, s, d.tokens * d.h * d.e);
        norm(out, "mtp_enorm", m, d, d.h);
        norm(out, "mtp_hnorm", m, d, d.h);
        enter_tp_region(out.comms, s, d.tokens * 2.0 * d.h * d.e);
        weight_gemm(out, s, "mtp_eh_proj", {d.tokens, d.h / static_cast<double>(s.tp), 2.0 * d.h, 1},
                    d.tokens_sp * 2.0 * d.h * d.e, LoraTarget::none);
        leave_tp_region(out.comms, s, d.tokens * d.h * d.e);
        out.ops.insert(out.ops.end(), block.ops.begin(), block.ops.end());
        out.comms.insert(out.comms.end(), block.comms.begin(), block.comms.end());
        lm_output(out, m, s, d, {"mtp_final_norm", "mtp_lm_head", "mtp_cross_entropy"}, true);
    }
}

}  // namespace

void head_ops(LayerOps& out, const ModelSpec& m, const LayerShape& s, bool with_loss) {
    reset(out);
    const Dims d = dims(m, s);
    if (m.kind == ModelKind::vit) {
        final_norm(out, "final_norm", m, s, d);
        regression_head(out, m, s, d, with_loss);
        return;
    }
    if (with_loss && m.mtp_layers > 0) mtp_modules(out, m, s, d);
    lm_output(out, m, s, d, {"final_norm", "lm_head", "cross_entropy"}, with_loss);
}

}  // namespace sm
