// The op list of one layer, op by op, on a shape small enough to compute every entry by hand:
// the element-wise kernels' bytes, vector FLOP and saved bytes, the GEMM shapes, the attention
// kernel's figures and every collective with its bytes. Sums (FLOP, Korthikanti's activations)
// are in tests/test_ops.cpp; this pins each term.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "test_helpers.hpp"

namespace sm {
namespace {

// tiny_gpt (h 64, 4 heads of 16, ffn 256, GELU, LayerNorm) cut tp 2 with sequence parallelism,
// cp 2, 2 sequences of 128 (64 query tokens per rank, causal): T = 128 tokens enter each GEMM,
// T/tp = 64 are held between them; 2 heads and 2 KV heads per rank; 2-byte activations.
LayerShape cut() {
    LayerShape s;
    s.batch = 2;
    s.q_len = 64;
    s.kv_len = 128;
    s.causal_fraction = 0.5;
    s.tp = 2;
    s.cp = 2;
    s.sequence_parallel = true;
    return s;
}

struct Elementwise {
    std::string name;
    double bytes, flop, saved, core, bwd_factor;
};

const Op& find(const LayerOps& l, const std::string& name) {
    for (const Op& op : l.ops)
        if (op.name == name) return op;
    ADD_FAILURE() << "no op " << name;
    return l.ops.front();
}

void expect_elementwise(const LayerOps& l, const std::vector<Elementwise>& want) {
    for (const Elementwise& w : want) {
        const Op& op = find(l, w.name);
        EXPECT_EQ(op.kind, OpKind::elementwise) << w.name;
        EXPECT_DOUBLE_EQ(op.bytes, w.bytes) << w.name;
        EXPECT_DOUBLE_EQ(op.vector_flop, w.flop) << w.name;
        EXPECT_DOUBLE_EQ(op.saved_bytes, w.saved) << w.name;
        EXPECT_DOUBLE_EQ(op.core_saved_bytes, w.core) << w.name;
        EXPECT_DOUBLE_EQ(op.bwd_bytes_factor, w.bwd_factor) << w.name;
    }
}

void expect_gemm(const LayerOps& l, const std::string& name, GemmShape g, double saved) {
    const Op& op = find(l, name);
    EXPECT_EQ((std::vector<double>{op.gemm.m, op.gemm.n, op.gemm.k, op.gemm.batch}), (std::vector<double>{g.m, g.n, g.k, g.batch}))
        << name;
    EXPECT_DOUBLE_EQ(op.saved_bytes, saved) << name;
}

// Norms: 64 x 64 = 4,096 elements read and written (16,384 bytes), 8 FLOP each (LayerNorm), the
// input saved (8,192), backward 1.5x the bytes. Residual: read two inputs and write one (24,576
// bytes), 3 FLOP each, nothing saved without dropout. GELU: reads T x f/tp = 16,384 and writes as
// many (65,536 bytes), 10 FLOP each, keeps its input (32,768).
TEST(LayerOpsTable, ElementwiseKernels) {
    const LayerOps l = layer_ops(testing::tiny_gpt(), cut(), LayerKind::dense);
    expect_elementwise(l, {{"attn_norm", 16384, 32768, 8192, 0, 1.5},
                           {"ffn_norm", 16384, 32768, 8192, 0, 1.5},
                           {"attn_residual", 24576, 12288, 0, 0, 2},
                           {"ffn_residual", 24576, 12288, 0, 0, 2},
                           {"ffn_act", 65536, 163840, 32768, 0, 2}});
    EXPECT_DOUBLE_EQ(l.input_bytes, 8192);
}

// GEMMs on T = 128 tokens: QKV [128, (2 + 2 x 2) x 16 = 96, 64], out [128, 64, 32], up
// [128, 128, 64], down [128, 64, 128]; each keeps its input: the sharded norm output (8,192),
// the attention output (128 x 32 x 2), the GELU output (128 x 128 x 2).
// Fused attention: scores 2 x 2 heads x 64 x 128 = 32,768; model FLOP 4 x 32,768 x 16, half of it
// executed; Q and O 2 x 4,096 elements, K and V 2 x (2 x 128 x 2 x 16) attended; it keeps Q, K, V
// (3 x 4,096 x 2 bytes) and an fp32 log-sum-exp per query and head (128 x 2 x 4).
TEST(LayerOpsTable, GemmsAndAttention) {
    const LayerOps l = layer_ops(testing::tiny_gpt(), cut(), LayerKind::dense);
    expect_gemm(l, "qkv_proj", {128, 96, 64, 1}, 8192);
    expect_gemm(l, "attn_out_proj", {128, 64, 32, 1}, 8192);
    expect_gemm(l, "ffn_up", {128, 128, 64, 1}, 8192);
    expect_gemm(l, "ffn_down", {128, 64, 128, 1}, 32768);
    const Op& a = find(l, "attention");
    EXPECT_DOUBLE_EQ(a.attn_model_flop, 2097152);
    EXPECT_DOUBLE_EQ(a.attn_flop, 1048576);
    EXPECT_DOUBLE_EQ(a.attn_io_elems, 8192);
    EXPECT_DOUBLE_EQ(a.attn_kv_elems, 16384);
    EXPECT_DOUBLE_EQ(a.saved_bytes, 24576);
    EXPECT_DOUBLE_EQ(a.core_saved_bytes, 1024);
    EXPECT_TRUE(a.attention_core);
    EXPECT_EQ(l.ops.size(), 10u);  // 2 norms, 4 GEMMs, attention, GELU, 2 residuals
}

struct Comm {
    std::string name;
    Collective kind;
    CommGroup group;
    Pass pass;
    double bytes, count;
    bool overlappable;
};

void expect_comms(const LayerOps& l, const std::vector<Comm>& want) {
    ASSERT_EQ(l.comms.size(), want.size());
    for (size_t i = 0; i < want.size(); ++i) {
        const CommOp& c = l.comms[i];
        const Comm& w = want[i];
        EXPECT_EQ(std::string(c.name), w.name) << i;
        EXPECT_EQ(c.kind, w.kind) << w.name;
        EXPECT_EQ(c.group, w.group) << w.name;
        EXPECT_EQ(c.pass, w.pass) << w.name;
        EXPECT_DOUBLE_EQ(c.bytes, w.bytes) << w.name;
        EXPECT_DOUBLE_EQ(c.count, w.count) << w.name;
        EXPECT_EQ(c.overlappable, w.overlappable) << w.name;
    }
}

// Sequence parallelism: each TP region is entered by an all-gather of the [T, h] activation
// (128 x 64 x 2 = 16,384 bytes), whose backward reduce-scatters, with the input regathered in
// backward (overlappable); and left by a reduce-scatter whose backward all-gathers. Ring
// attention: the K and V chunk (2 x 128 x 2 x 16 x 2 = 16,384 bytes) travels cp - 1 = 1 hop
// forward, twice the bytes (with gradients) backward, both hidden behind attention.
TEST(LayerOpsTable, CollectivesWithSequenceAndContextParallelism) {
    const LayerOps l = layer_ops(testing::tiny_gpt(), cut(), LayerKind::dense);
    const double act = 16384;
    const std::vector<Comm> enter = {{"sp_all_gather", Collective::all_gather, CommGroup::tp, Pass::fwd, act, 1, false},
                                     {"sp_reduce_scatter_grad", Collective::reduce_scatter, CommGroup::tp, Pass::bwd, act, 1, false},
                                     {"sp_regather_input", Collective::all_gather, CommGroup::tp, Pass::bwd, act, 1, true}};
    const std::vector<Comm> leave = {{"sp_reduce_scatter", Collective::reduce_scatter, CommGroup::tp, Pass::fwd, act, 1, false},
                                     {"sp_all_gather_grad", Collective::all_gather, CommGroup::tp, Pass::bwd, act, 1, false}};
    std::vector<Comm> want = enter;
    want.push_back({"cp_kv_ring", Collective::p2p, CommGroup::cp, Pass::fwd, 16384, 1, true});
    want.push_back({"cp_kv_ring_grad", Collective::p2p, CommGroup::cp, Pass::bwd, 32768, 1, true});
    want.insert(want.end(), leave.begin(), leave.end());
    want.insert(want.end(), enter.begin(), enter.end());
    want.insert(want.end(), leave.begin(), leave.end());
    expect_comms(l, want);
    // cp 4: the same chunk travels three hops.
    LayerShape s = cut();
    s.cp = 4;
    const LayerOps l4 = layer_ops(testing::tiny_gpt(), s, LayerKind::dense);
    EXPECT_DOUBLE_EQ(l4.comms[3].count, 3);
    EXPECT_DOUBLE_EQ(l4.comms[4].count, 3);
}

// The three ways context parallelism moves K/V, on the cut above (T = 128 tokens per rank, 2 query
// and 2 K/V heads of 16 per TP rank: the local K and V are 128 x 2 x 32 x 2 = 16,384 bytes; Q and
// O 128 x 2 x 16 x 2 = 8,192 bytes each):
// - all_gather: the whole K/V, cp x 16,384 = 32,768 bytes, gathered forward, gathered again and
//   its gradient reduce-scattered backward, none hidden; backward holds the gathered K/V and
//   the full-length dK/dV: 2 x 32,768 bytes;
// - ulysses: four all-to-alls forward (Q, K, V before, O after: 8,192 bytes each, K and V
//   each half of 16,384) and four backward; attention runs on 256 tokens x 1 head per kind.
TEST(LayerOpsTable, ContextParallelKinds) {
    const ModelSpec m = testing::tiny_gpt();
    LayerShape s = cut();
    s.cp_kind = CpKind::all_gather;
    LayerOps l = layer_ops(m, s, LayerKind::dense);
    LayerOps lc = l;
    lc.comms = {};
    for (const CommOp& c : l.comms)
        if (c.group == CommGroup::cp) lc.comms.push_back(c);
    expect_comms(lc, {{"cp_kv_all_gather", Collective::all_gather, CommGroup::cp, Pass::fwd, 32768, 1, false},
                      {"cp_kv_regather", Collective::all_gather, CommGroup::cp, Pass::bwd, 32768, 1, false},
                      {"cp_dkv_reduce_scatter", Collective::reduce_scatter, CommGroup::cp, Pass::bwd, 32768, 1, false}});
    EXPECT_DOUBLE_EQ(l.transient_bytes, 65536);
    // The attention itself as under the ring: 2 x 2 heads x 64 x 128 scores x 32 x 2 FLOP, K/V of
    // 2 x 128 keys x 2 heads x 32 read.
    const LayerOps ring = layer_ops(m, cut(), LayerKind::dense);
    const Op& ring_attn = find(ring, "attention");
    EXPECT_DOUBLE_EQ(find(l, "attention").attn_model_flop, 2097152);
    EXPECT_DOUBLE_EQ(ring_attn.attn_model_flop, 2097152);
    EXPECT_DOUBLE_EQ(find(l, "attention").attn_kv_elems, 16384);
    EXPECT_DOUBLE_EQ(layer_ops(m, cut(), LayerKind::dense).transient_bytes, 0);

    s.cp_kind = CpKind::ulysses;
    l = layer_ops(m, s, LayerKind::dense);
    lc.comms = {};
    for (const CommOp& c : l.comms)
        if (c.group == CommGroup::cp) lc.comms.push_back(c);
    const double q = 8192, k = 8192;
    expect_comms(lc, {{"cp_a2a_q", Collective::all_to_all, CommGroup::cp, Pass::fwd, q, 1, false},
                      {"cp_a2a_k", Collective::all_to_all, CommGroup::cp, Pass::fwd, k, 1, false},
                      {"cp_a2a_v", Collective::all_to_all, CommGroup::cp, Pass::fwd, k, 1, false},
                      {"cp_a2a_o", Collective::all_to_all, CommGroup::cp, Pass::fwd, q, 1, false},
                      {"cp_a2a_o_grad", Collective::all_to_all, CommGroup::cp, Pass::bwd, q, 1, false},
                      {"cp_a2a_q_grad", Collective::all_to_all, CommGroup::cp, Pass::bwd, q, 1, false},
                      {"cp_a2a_k_grad", Collective::all_to_all, CommGroup::cp, Pass::bwd, k, 1, false},
                      {"cp_a2a_v_grad", Collective::all_to_all, CommGroup::cp, Pass::bwd, k, 1, false}});
    const Op& a = find(l, "attention");
    // 2 sequences x 1 head x 128 x 128 scores x 32 x 2: the same FLOP; K/V read for one head of
    // the whole sequence: 2 x 128 x 1 x 32 = 8,192 elements (half the ring's); Q and O 256 x 16
    // each; saved Q, K, V 3 x 256 x 16 x 2 bytes as under the ring (3 x 128 x 2 x 16 x 2).
    EXPECT_DOUBLE_EQ(a.attn_model_flop, 2097152);
    EXPECT_DOUBLE_EQ(a.attn_kv_elems, 8192);
    EXPECT_DOUBLE_EQ(a.attn_io_elems, 8192);
    EXPECT_DOUBLE_EQ(a.saved_bytes, 24576);
    EXPECT_DOUBLE_EQ(ring_attn.saved_bytes, 24576);
    EXPECT_DOUBLE_EQ(l.transient_bytes, 0);
    // The kernels' key loops: the ring's steps each span at most the 128 / cp = 64 keys of one
    // rank's two load-balanced chunks (Transformer Engine's AttnFuncWithCPAndKVP2P: the local
    // causal step over its own chunks, then half of the queries or half of the keys per step);
    // all_gather's and Ulysses' span the whole 128; at cp 4 the ring's are 32.
    EXPECT_DOUBLE_EQ(ring_attn.attn_kv_len, 64);
    EXPECT_DOUBLE_EQ(a.attn_kv_len, 128);
    s.cp_kind = CpKind::all_gather;
    EXPECT_DOUBLE_EQ(find(layer_ops(m, s, LayerKind::dense), "attention").attn_kv_len, 128);
    LayerShape four = cut();
    four.cp = 4;
    EXPECT_DOUBLE_EQ(find(layer_ops(m, four, LayerKind::dense), "attention").attn_kv_len, 32);
}

// Their times on the wire, by hand, on links of 1 GB/s and 1 us (scale-up) and 0.5 GB/s and 2 us
// (scale-out), efficiency 1. cp 2 with the two ranks in two domains ({2, 1, 2}):
// - ring: one hop of 16,384 B forward (32.768 + 2 us) and 32,768 B backward (65.536 + 2): 102.304 us;
// - all_gather: three collectives of 32,768 B over 2 ranks, 1/2 x 32,768 / 0.5e9 + 2 us each:
//   3 x 34.768 = 104.304 us, all exposed;
// - ulysses: eight all-to-alls of 8,192 B, 1/2 x 8,192 / 0.5e9 + 2 us each: 8 x 10.192 = 81.536 us.
// cp 4 as 2 + 2 over two domains ({4, 2, 2}): all_gather's 65,536 B gather is hierarchical, 1/2 x
// 65,536 / 1e9 + 1 us in the domain, then each of the 2 NICs carries half: 1/2 x 32,768 / 0.5e9
// + 2 us: 68.536 us each, 205.608 us for three (flat over 4 NICs in a row it would be 3/4 x
// 65,536 / 0.5e9 + 3 x 2 us = 104.304 us each).
TEST(LayerOpsTable, ContextParallelKindsByTheClock) {
    SystemSpec sys = testing::system_preset("dgx-h100");
    sys.scale_up = {};
    sys.scale_up.bw_bytes_per_s = 1e9;
    sys.scale_up.latency_s = 1e-6;
    sys.scale_out = {};
    sys.scale_out.bw_bytes_per_s = 0.5e9;
    sys.scale_out.latency_s = 2e-6;
    auto cp_time = [&](CpKind kind, int64_t cp, GroupSpan span, bool exposed) {
        LayerShape s = cut();
        s.cp = cp;
        s.cp_kind = kind;
        CommSpans spans;
        spans.span[idx(CommGroup::cp)] = span;
        const BlockCost b = cost_block(layer_ops(testing::tiny_gpt(), s, LayerKind::dense), sys, CostContext{}, spans,
                                       Recompute::none, 0.0);
        return exposed ? b.comm_exposed_s[idx(CommGroup::cp)] : b.comm_link_s[idx(CommGroup::cp)];
    };
    EXPECT_NEAR(cp_time(CpKind::ring, 2, {2, 1, 2}, false), 102.304e-6, 1e-15);
    EXPECT_NEAR(cp_time(CpKind::all_gather, 2, {2, 1, 2}, false), 104.304e-6, 1e-15);
    EXPECT_NEAR(cp_time(CpKind::all_gather, 2, {2, 1, 2}, true), 104.304e-6, 1e-15);
    EXPECT_NEAR(cp_time(CpKind::ulysses, 2, {2, 1, 2}, false), 81.536e-6, 1e-15);
    EXPECT_NEAR(cp_time(CpKind::ulysses, 2, {2, 1, 2}, true), 81.536e-6, 1e-15);
    EXPECT_NEAR(cp_time(CpKind::all_gather, 4, {4, 2, 2}, false), 205.608e-6, 1e-15);
    EXPECT_NEAR(cp_time(CpKind::all_gather, 4, {4, 1, 4}, false), 3 * 104.304e-6, 1e-15);
}

// All-gather CP's memory: Llama 3 70B, tp 8, cp 2, one sequence of 8,192 tokens: each rank makes
// K and V for 4,096 tokens x 1 K/V head x (128 + 128) x 2 bytes = 2,097,152 bytes; backward holds
// the gathered K/V and their full-length gradients, 2 x 2 x 2,097,152 = 8,388,608 bytes more than
// the ring, whose saved activations are the same.
TEST(LayerOpsTable, AllGatherHoldsTheWholeKeysAndValues) {
    const char* base = R"({"model": {"preset": "llama3-70b"}, "system": {"preset": "dgx-h100"},
                           "parallel": {"tp": 8, "cp": 2, "sequence_parallel": true}})";
    auto ring = testing::load(base);
    auto gather = testing::load(base, {"parallel.cp_kind=all_gather"});
    ASSERT_TRUE(ring.ok() && gather.ok());
    const TrainResult r = evaluate_training({ring->model, ring->system, ring->training}, ring->parallel);
    const TrainResult g = evaluate_training({gather->model, gather->system, gather->training}, gather->parallel);
    EXPECT_DOUBLE_EQ(g.memory.activations_bytes - r.memory.activations_bytes, 8388608);
}

// Without sequence parallelism: the column-parallel input's gradient is all-reduced in backward
// (overlappable with the weight-gradient GEMM), the row-parallel output all-reduced forward.
// The head adds the vocabulary-parallel loss's all-reduce of 3 fp32 values per token
// (max, sum, target logit: 3 x 128 x 4 bytes); the embedding leaves its TP region.
TEST(LayerOpsTable, CollectivesWithoutSequenceParallelismAndTheEnds) {
    LayerShape s = cut();
    s.sequence_parallel = false;
    s.cp = 1;
    s.q_len = 128;
    s.batch = 1;
    const ModelSpec m = testing::tiny_gpt();
    const double act = 128 * 64 * 2;
    const Comm grad = {"tp_all_reduce_grad", Collective::all_reduce, CommGroup::tp, Pass::bwd, act, 1, true};
    const Comm out = {"tp_all_reduce", Collective::all_reduce, CommGroup::tp, Pass::fwd, act, 1, false};
    expect_comms(layer_ops(m, s, LayerKind::dense), {grad, out, grad, out});
    expect_comms(head_ops(m, s, true), {grad, {"loss_all_reduce", Collective::all_reduce, CommGroup::tp, Pass::fwd, 1536, 1, false}});
    expect_comms(head_ops(m, s, false), {grad});
    expect_comms(embedding_ops(m, s), {out});
    s.tp = 1;
    EXPECT_TRUE(head_ops(m, s, true).comms.empty());
}

// The ends: the embedding reads the token and position rows and writes the sum (3 x T x h x 2
// bytes = 49,152 for T = 128); the head's final norm, the [T, V/tp] logits GEMM and the fp32
// cross-entropy over 128 x 500 logits: reads the bf16 logits, writes and keeps fp32 softmax
// (2 + 2 x 4 bytes each: 640,000; kept 256,000), 6 FLOP each.
TEST(LayerOpsTable, EmbeddingAndHead) {
    LayerShape s = cut();
    s.sequence_parallel = false;
    s.cp = 1;
    s.q_len = 128;
    s.batch = 1;
    ModelSpec m = testing::tiny_gpt();
    const LayerOps e = embedding_ops(m, s);
    expect_elementwise(e, {{"embedding", 49152, 0, 0, 0, 2}});
    m.position = PositionKind::rope;
    m.dropout = true;  // the dropout mask (1 byte per element) is kept
    expect_elementwise(embedding_ops(m, s), {{"embedding", 32768, 0, 128 * 64, 0, 2}});
    m = testing::tiny_gpt();
    const LayerOps h = head_ops(m, s, true);
    expect_gemm(h, "lm_head", {128, 500, 64, 1}, 128 * 64 * 2);
    expect_elementwise(h, {{"final_norm", 32768, 65536, 16384, 0, 1.5}, {"cross_entropy", 640000, 384000, 256000, 0, 2}});
    EXPECT_EQ(head_ops(m, s, false).ops.size(), 2u);  // no loss at inference
}

// SwiGLU, RMSNorm, rotary positions, dropout and unfused attention (no TP, no CP, 1 x 128 tokens,
// 4 heads of 16):
// - RMSNorm: 4 FLOP per element (8,192 elements: 32,768);
// - rope: reads and writes Q and K, 128 x (4 + 4) x 16 elements (16,384): 65,536 bytes, 3 FLOP each;
// - residual with dropout: 3 x 2 + 1 bytes per element, the 1-byte mask kept;
// - SwiGLU: the gated input is 2 x 128 x 256 elements, the output 128 x 256: 196,608 bytes,
//   7 FLOP per output element, keeps its 131,072-byte input;
// - unfused attention: scores [128, 128, 16] x 4 heads and values [128, 16, 128] x 4; softmax
//   reads and writes 4 x 128 x 128 = 65,536 scores (262,144 bytes), 5 FLOP each, keeps its
//   output (131,072); dropout reads scores and writes them and a mask (5 bytes each), keeps
//   output and mask (3 bytes each).
TEST(LayerOpsTable, GatedRmsRopeDropoutUnfused) {
    ModelSpec m = testing::tiny_gpt();
    m.ffn_act = FfnAct::swiglu;
    m.norm = NormKind::rmsnorm;
    m.position = PositionKind::rope;
    m.dropout = true;
    m.attention = AttentionImpl::unfused;
    LayerShape s;
    s.batch = 1;
    s.q_len = s.kv_len = 128;
    const LayerOps l = layer_ops(m, s, LayerKind::dense);
    const double elems = 128 * 64;
    expect_elementwise(l, {{"attn_norm", 4 * elems, 4 * elems, 2 * elems, 0, 1.5},
                           {"rope", 65536, 3 * 16384, 0, 0, 2},
                           {"attn_residual", 7 * elems, 3 * elems, elems, 0, 2},
                           {"ffn_act", 196608, 7 * 32768, 131072, 0, 2},
                           {"softmax", 262144, 5 * 65536, 0, 131072, 2},
                           {"attn_dropout", 5 * 65536, 2 * 65536, 0, 3 * 65536, 2}});
    expect_gemm(l, "attn_scores", {128, 128, 16, 4}, (128 * 64 + 128 * 64) * 2);
    expect_gemm(l, "attn_values", {128, 16, 128, 4}, 128 * 64 * 2);
    expect_gemm(l, "ffn_up", {128, 512, 64, 1}, 128 * 64 * 2);
    expect_gemm(l, "ffn_down", {128, 64, 256, 1}, 128 * 256 * 2);
    EXPECT_TRUE(l.comms.empty());
    // The attention core (what selective recompute re-runs instead of keeping, Korthikanti et
    // al.) is the four kernels between Q/K/V and the output projection, and nothing else.
    for (const Op& op : l.ops) {
        const bool core = op.name == "attn_scores" || op.name == "softmax" || op.name == "attn_dropout" || op.name == "attn_values";
        EXPECT_EQ(op.attention_core, core) << op.name;
    }
}

}  // namespace
}  // namespace sm
