// cost_block: how a layer's collectives are exposed or hidden (TP overlap, the CP ring behind the
// attention, TP gradient traffic behind the other backward GEMM) and what recompute repeats, on a
// hand-built layer whose every time is a round number.
#include <gtest/gtest.h>

#include "test_helpers.hpp"
#include "training/block_cost.hpp"

namespace sm {
namespace {

constexpr double ms = 1e-3;

// round_system() with 10% interference: a second of hidden traffic slows compute by 0.1 s.
SystemSpec machine() {
    SystemSpec s = testing::round_system();
    s.eff.overlap_interference = 0.1;
    return s;
}

// An element-wise op of `flop` vector FLOP, no bytes: flop / 1e15 s forward, twice that backward.
Op vector_op(double flop) {
    Op op;
    op.kind = OpKind::elementwise;
    op.vector_flop = flop;
    return op;
}

// tp = 2 and cp = 4, both inside one scale-up domain (100 GB/s, no latency).
CommSpans spans() {
    CommSpans c;
    c.span[idx(CommGroup::tp)] = {2, 2, 1};
    c.span[idx(CommGroup::cp)] = {4, 4, 1};
    return c;
}

// Attention: 1e12 FLOP at 1 PFLOP/s = 1 ms forward, 2.5 ms backward (FlashAttention's 2.5x).
// The rest: an element-wise op of 2e12 vector FLOP, 2 ms forward, 4 ms backward. Neither moves
// bytes. Forward 3 ms, backward 6.5 ms, of which attention 1 and 2.5 ms.
// Traffic at 100 GB/s: a 2-rank all-reduce of 1e8 bytes moves 2 x 1/2 x 1e8: 1 ms; a p2p of
// 5e7 bytes takes 0.5 ms, three hops 1.5 ms.
LayerOps hand_layer(double tp_grad_bytes) {
    LayerOps l;
    Op attn;
    attn.kind = OpKind::attention;
    attn.attn_flop = 1e12;
    attn.attn_model_flop = 2e12;
    attn.saved_bytes = 300;
    attn.core_saved_bytes = 20;
    attn.attention_core = true;
    l.ops.push_back(attn);
    Op rest = vector_op(2e12);
    rest.saved_bytes = 700;
    l.ops.push_back(rest);
    l.input_bytes = 100;
    l.comms.push_back({"tp_ar", Collective::all_reduce, CommGroup::tp, Pass::fwd, 1e8, 1, false});
    l.comms.push_back({"cp_ring", Collective::p2p, CommGroup::cp, Pass::fwd, 5e7, 3, true});
    l.comms.push_back({"cp_ring_grad", Collective::p2p, CommGroup::cp, Pass::bwd, 1e8, 3, true});
    l.comms.push_back({"tp_ar_grad", Collective::all_reduce, CommGroup::tp, Pass::bwd, tp_grad_bytes, 1, true});
    return l;
}

BlockCost cost(Recompute rc, double tp_overlap, double tp_grad_bytes = 1e8) {
    return cost_block(hand_layer(tp_grad_bytes), machine(), CostContext{}, spans(), rc, tp_overlap);
}

TEST(BlockCost, ComputeRecomputeAndBookkeeping) {
    const BlockCost b = cost(Recompute::none, 0);
    EXPECT_NEAR(b.fwd_s, 3 * ms, 1e-15);
    EXPECT_NEAR(b.bwd_s, 6.5 * ms, 1e-15);
    EXPECT_DOUBLE_EQ(b.fwd_flop, 1e12);
    EXPECT_DOUBLE_EQ(b.bwd_flop, 2.5e12);
    EXPECT_DOUBLE_EQ(b.model_flop, 3 * 2e12);  // forward + backward = 3x forward, by convention
    EXPECT_DOUBLE_EQ(b.saved_bytes, 1020);
    EXPECT_DOUBLE_EQ(b.selective_freed_bytes, 20);
    EXPECT_DOUBLE_EQ(b.input_bytes, 100);
    EXPECT_EQ(b.recompute_s, 0.0);
    // Selective re-runs the attention core's forward (1 ms); full re-runs the whole forward.
    const BlockCost sel = cost(Recompute::selective, 0);
    EXPECT_NEAR(sel.recompute_s, 1 * ms, 1e-15);
    EXPECT_DOUBLE_EQ(sel.recompute_flop, 1e12);
    EXPECT_NEAR(cost(Recompute::full, 0).recompute_s, 3 * ms, 1e-15);
}

// No recompute, a quarter of the blocking TP all-reduce hidden by comm-GEMM overlap:
// - TP forward all-reduce: 1 ms on the wire, 0.75 ms exposed;
// - CP forward ring 1.5 ms behind 1 ms of attention: 0.5 ms exposed, 1 ms hidden (+0.1 ms slowdown);
// - CP backward ring 3 ms behind 2.5 ms of attention backward: 0.5 ms exposed (+0.25 ms);
// - TP backward all-reduce 1 ms behind half the non-attention backward (2 ms): hidden (+0.1 ms).
// Each pass stretches by the worst group's excess, not their sum.
TEST(BlockCost, TpOverlapAndCpRingBehindAttention) {
    const BlockCost b = cost(Recompute::none, 0.25);
    EXPECT_NEAR(b.comm_link_s[idx(CommGroup::tp)], 2 * ms, 1e-15);
    EXPECT_NEAR(b.comm_link_s[idx(CommGroup::cp)], 4.5 * ms, 1e-15);
    EXPECT_NEAR(b.comm_exposed_s[idx(CommGroup::tp)], (0.75 + 0.1) * ms, 1e-15);
    EXPECT_NEAR(b.comm_exposed_s[idx(CommGroup::cp)], (0.5 + 0.1 + 0.5 + 0.25) * ms, 1e-15);
    EXPECT_NEAR(b.fwd_wall_s, (3 + 0.75 + 0.5 + 0.1) * ms, 1e-15);
    EXPECT_NEAR(b.bwd_wall_s, (6.5 + 0.5 + 0.25 + 0.1) * ms, 1e-15);
    // Without TP overlap the forward all-reduce is exposed whole.
    EXPECT_NEAR(cost(Recompute::none, 0).comm_exposed_s[idx(CommGroup::tp)], (1 + 0.1) * ms, 1e-15);
}

// Full recompute runs the forward twice: its collectives go on the wire twice (TP 2 ms, exposed
// 1.5 ms; CP ring 3 ms), and the recomputed attention (1 ms more) hides the ring too: 3 ms behind
// 2 ms leaves 1 ms exposed, 2 ms hidden (+0.2 ms). Backward is unchanged.
TEST(BlockCost, FullRecomputeRepeatsForwardTrafficAndItsWindow) {
    const BlockCost b = cost(Recompute::full, 0.25);
    EXPECT_NEAR(b.comm_link_s[idx(CommGroup::tp)], (2 + 1) * ms, 1e-15);
    EXPECT_NEAR(b.comm_link_s[idx(CommGroup::cp)], (3 + 3) * ms, 1e-15);
    EXPECT_NEAR(b.comm_exposed_s[idx(CommGroup::tp)], (1.5 + 0.1) * ms, 1e-15);
    EXPECT_NEAR(b.comm_exposed_s[idx(CommGroup::cp)], (1 + 0.2 + 0.5 + 0.25) * ms, 1e-15);
    EXPECT_NEAR(b.fwd_wall_s, (3 + 1.5 + 1 + 0.2) * ms, 1e-15);
    // Selective recompute re-runs no collective.
    const BlockCost sel = cost(Recompute::selective, 0.25);
    EXPECT_NEAR(sel.comm_link_s[idx(CommGroup::cp)], 4.5 * ms, 1e-15);
    EXPECT_NEAR(sel.comm_exposed_s[idx(CommGroup::cp)], (0.5 + 0.1 + 0.5 + 0.25) * ms, 1e-15);
}

// Collectives of different groups run on their own streams: when the TP gradient all-reduce
// (3 ms behind a 2 ms window: 1 ms over) and the CP ring (0.5 ms over) both overflow, the backward
// stretches by 1 ms, booked to TP; each still slows the compute by what it hid (0.2 + 0.25 ms).
TEST(BlockCost, PassStretchesByTheWorstGroupOnly) {
    const BlockCost b = cost(Recompute::none, 0.25, 3e8);
    EXPECT_NEAR(b.bwd_wall_s, (6.5 + 1 + 0.2 + 0.25) * ms, 1e-15);
    EXPECT_NEAR(b.comm_exposed_s[idx(CommGroup::tp)], (0.75 + 1 + 0.2) * ms, 1e-15);
    EXPECT_NEAR(b.comm_exposed_s[idx(CommGroup::cp)], (0.5 + 0.1 + 0.25) * ms, 1e-15);
    EXPECT_NEAR(b.exposed_comm_s(), (0.75 + 0.6 + 1.45) * ms, 1e-15);
    EXPECT_NEAR(b.total_s(), (3 + 6.5 + 0.75 + 0.6 + 1.45) * ms, 1e-15);
}

// Forward traffic outside the attention has no independent compute to hide behind: a forward
// TP all-reduce flagged overlappable (1 ms at 100 GB/s) is exposed whole, and slows nothing.
TEST(BlockCost, ForwardTrafficOutsideAttentionHasNoWindow) {
    LayerOps l;
    l.ops.push_back(vector_op(2e12));  // 2 ms forward
    l.comms.push_back({"tp_fwd", Collective::all_reduce, CommGroup::tp, Pass::fwd, 1e8, 1, true});
    const BlockCost b = cost_block(l, machine(), CostContext{}, spans(), Recompute::none, 0);
    EXPECT_NEAR(b.comm_exposed_s[idx(CommGroup::tp)], 1 * ms, 1e-15);
    EXPECT_NEAR(b.fwd_wall_s, 3 * ms, 1e-15);
}

// Megatron's shared-expert overlap: the expert all-to-all runs while the shared expert computes.
// Shared expert 1 ms forward, 2 ms backward; the rest 2 and 4 ms. Dispatch and combine, each pass,
// 2e8 bytes over 2 ranks in the domain: 1e8 bytes each way at 100 GB/s, 1 ms each. Off: all 4 ms
// exposed. On: forward 2 ms behind a 1 ms window leaves 1 ms, backward 2 ms behind 2 ms none;
// 10% of the 3 ms hidden slows the compute (0.1 + 0.2 ms). Full recompute repeats the forward
// traffic and the window: 4 ms behind 2 ms.
TEST(BlockCost, ExpertAllToAllHidesBehindTheSharedExpert) {
    LayerOps l;
    l.ops.push_back(vector_op(1e12));
    l.ops.back().shared_expert = true;
    l.ops.push_back(vector_op(2e12));
    for (Pass pass : {Pass::fwd, Pass::bwd})
        for (const char* name : {"dispatch", "combine"}) l.comms.push_back({name, Collective::all_to_all, CommGroup::ep, pass, 2e8, 1, false});
    CommSpans sp = spans();
    sp.span[idx(CommGroup::ep)] = {2, 2, 1};
    const size_t ep = idx(CommGroup::ep);
    const BlockCost off = cost_block(l, machine(), CostContext{}, sp, Recompute::none, 0);
    EXPECT_NEAR(off.comm_exposed_s[ep], 4 * ms, 1e-15);
    EXPECT_NEAR(off.fwd_wall_s, 5 * ms, 1e-15);
    EXPECT_NEAR(off.bwd_wall_s, 8 * ms, 1e-15);
    for (CommOp& c : l.comms) c.overlappable = true;  // what ops.cpp marks with the overlap on
    const BlockCost on = cost_block(l, machine(), CostContext{}, sp, Recompute::none, 0);
    EXPECT_NEAR(on.comm_exposed_s[ep], 1.3 * ms, 1e-15);
    EXPECT_NEAR(on.fwd_wall_s, 4.1 * ms, 1e-15);
    EXPECT_NEAR(on.bwd_wall_s, 6.2 * ms, 1e-15);
    EXPECT_NEAR(on.comm_link_s[ep], 4 * ms, 1e-15);  // the wire time is the same
    const BlockCost full = cost_block(l, machine(), CostContext{}, sp, Recompute::full, 0);
    EXPECT_NEAR(full.comm_exposed_s[ep], 2.4 * ms, 1e-15);
    // Without a shared expert there is nothing to hide behind.
    l.ops[0].shared_expert = false;
    EXPECT_NEAR(cost_block(l, machine(), CostContext{}, sp, Recompute::none, 0).comm_exposed_s[ep], 4 * ms, 1e-15);
}

// Megatron-Core's A2A overlap (training.moe_a2a_overlap): the all-to-all of one micro-batch runs
// while the micro-batch paired with it computes the other pass, so a forward all-to-all hides
// behind the layer's backward and a backward one behind its forward. The layer above: forward
// 3 ms, backward 6 ms. Dispatch and combine of 2e8 bytes: 1 ms each, 2 ms per pass, both hidden
// (2 behind 6, 2 behind 3); 10% of each slows the compute by 0.2 ms. At 8e8 bytes (4 ms each,
// 8 ms per pass): forward 8 behind 6 leaves 2 ms (+0.6), backward 8 behind 3 leaves 5 ms (+0.3).
// Full recompute repeats the forward traffic (16 ms behind 6) and the forward window (8 behind 6).
TEST(BlockCost, ExpertAllToAllHidesBehindThePairedMicroBatchsOtherPass) {
    auto layer = [](double bytes) {
        LayerOps l;
        l.ops.push_back(vector_op(1e12));
        l.ops.back().shared_expert = true;
        l.ops.push_back(vector_op(2e12));
        for (Pass pass : {Pass::fwd, Pass::bwd})
            for (const char* name : {"dispatch", "combine"}) {
                CommOp c{name, Collective::all_to_all, CommGroup::ep, pass, bytes, 1, true};
                c.cross_pass = true;  // what ops.cpp marks with the A2A overlap on
                l.comms.push_back(c);
            }
        return l;
    };
    CommSpans sp = spans();
    sp.span[idx(CommGroup::ep)] = {2, 2, 1};
    const size_t ep = idx(CommGroup::ep);
    const BlockCost small = cost_block(layer(2e8), machine(), CostContext{}, sp, Recompute::none, 0);
    EXPECT_NEAR(small.comm_exposed_s[ep], 0.4 * ms, 1e-15);
    EXPECT_NEAR(small.fwd_wall_s, 3.2 * ms, 1e-15);
    EXPECT_NEAR(small.bwd_wall_s, 6.2 * ms, 1e-15);
    EXPECT_NEAR(small.comm_link_s[ep], 4 * ms, 1e-15);
    const BlockCost big = cost_block(layer(8e8), machine(), CostContext{}, sp, Recompute::none, 0);
    EXPECT_NEAR(big.comm_exposed_s[ep], (2 + 0.6 + 5 + 0.3) * ms, 1e-15);
    EXPECT_NEAR(big.fwd_wall_s, (3 + 2.6) * ms, 1e-15);
    EXPECT_NEAR(big.bwd_wall_s, (6 + 5.3) * ms, 1e-15);
    const BlockCost full = cost_block(layer(8e8), machine(), CostContext{}, sp, Recompute::full, 0);
    EXPECT_NEAR(full.comm_exposed_s[ep], (10 + 0.6 + 2 + 0.6) * ms, 1e-15);
    // The same traffic behind the shared expert alone (1 ms forward, 2 ms backward) hides less.
    LayerOps same = layer(8e8);
    for (CommOp& c : same.comms) c.cross_pass = false;
    EXPECT_NEAR(cost_block(same, machine(), CostContext{}, sp, Recompute::none, 0).comm_exposed_s[ep], (7 + 0.1 + 6 + 0.2) * ms, 1e-15);
}

// What a layer keeps per in-flight micro-batch under each recompute mode (BlockCost::activation_bytes).
TEST(BlockCost, ActivationBytesPerRecomputeMode) {
    const BlockCost b = cost(Recompute::none, 0);
    EXPECT_DOUBLE_EQ(b.activation_bytes(Recompute::none), 1020);
    EXPECT_DOUBLE_EQ(b.activation_bytes(Recompute::selective), 1000);
    EXPECT_DOUBLE_EQ(b.activation_bytes(Recompute::full), 100);
}

// The energy model's on-chip bytes: an element-wise op moving 1e9 bytes forward and twice that
// backward streams them through L2 once per pass; full recompute runs the forward twice.
TEST(BlockCost, OnChipBytesPerPassAndRecompute) {
    LayerOps l;
    Op norm;
    norm.kind = OpKind::elementwise;
    norm.bytes = 1e9;
    norm.bwd_bytes_factor = 2.0;
    l.ops.push_back(norm);
    const BlockCost none = cost_block(l, machine(), CostContext{}, spans(), Recompute::none, 0);
    EXPECT_DOUBLE_EQ(none.work.hbm_bytes, 3e9);
    EXPECT_DOUBLE_EQ(none.work.sram_bytes, 3e9);
    const BlockCost full = cost_block(l, machine(), CostContext{}, spans(), Recompute::full, 0);
    EXPECT_DOUBLE_EQ(full.work.sram_bytes, 4e9);
}

}  // namespace
}  // namespace sm
