// Mixture of experts: what every GPU keeps, summed over the machine, against the model's
// parameter count times how often the layout replicates each parameter; and the expert layer's
// shapes and all-to-all bytes with top-k routing.
//
// Layout convention (Megatron-LM): the ep ranks of an expert group are carved out of the dp x cp
// ranks; expert weights are split over tp x ep and replicated over the dp x cp / ep ranks that
// hold the same experts; dense weights are split over tp and replicated over dp x cp. ZeRO
// partitions each state over the ranks that replicate it, so a partitioned state is held once.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "test_helpers.hpp"

namespace sm {
namespace {

using testing::round_system;
using testing::step_over;

using testing::op_named;
using testing::tiny_moe;

// The expert-layer hand cases' micro-batch: 2 sequences of 128 tokens, experts over ep 2.
LayerShape two_sequences_over_ep2() {
    LayerShape sh;
    sh.batch = 2;
    sh.q_len = sh.kv_len = 128;
    sh.ep = 2;
    return sh;
}

constexpr double kFinalNorm = 64;
constexpr double kDense = 4 * 17024 + 64000 + 64000 + kFinalNorm;  // 196,160 (embedding, head, final norm)
constexpr double kExperts = 4 * 196608;                             // 786,432

// Every layout of tp 1-4, dp 1-8, cp 1-2, ep 1-8 and ZeRO 0-3 on one stage, where every GPU holds
// the same: the sum over the machine is gpus x one GPU. Experts split by tp (etp = tp, the
// default; ep | dp x cp) or whole (etp 1 with sequence parallelism; ep | tp x dp x cp).
// Expected sum of parameter copies: dense weights replicated dp x cp times, experts
// tp x dp x cp / (ep x etp) times (each once when ZeRO partitions this state). The final norm is
// kept whole by each tp rank (the model counts a layer's norms as split with the layer).
TEST(MoeMemory, StatesSummedOverAllGpusAreTheModelTimesItsReplication) {
    const ModelSpec m = tiny_moe();
    const SystemSpec s = round_system();
    int cases[2] = {0, 0};
    for (const bool whole : {false, true})
    for (const int64_t tp : {1, 2, 4})
    for (const int64_t dp : {1, 2, 4, 8})
    for (const int64_t cp : {1, 2})
    for (const int64_t ep : {1, 2, 4, 8})
    for (const int64_t zero : {0, 1, 2, 3}) {
        if (whole && tp == 1) continue;                             // etp 1 = tp: nothing to fold
        if (((whole ? tp : 1) * dp * cp) % ep != 0) continue;  // what ep is carved out of
        ParallelConfig p;
        p.tp = tp;
        p.dp = dp;
        p.cp = cp;
        p.ep = ep;
        p.zero = zero;
        if (whole) {
            p.etp = 1;
            p.sequence_parallel = true;
        }
        ++cases[whole];
        TrainingSpec t;
        t.global_batch = p.dp;
        const TrainResult r = step_over(m, s, t, p);
        const TrainMemory& mem = r.memory;
        const double gpus = static_cast<double>(tp * dp * cp);
        const double dpc = static_cast<double>(dp * cp);
        const double edp = gpus / static_cast<double>(ep * (whole ? 1 : tp));
        const double dense = kDense + kFinalNorm * static_cast<double>(tp - 1);
        auto copies = [&](bool partitioned) { return partitioned ? dense + kExperts : dpc * dense + edp * kExperts; };
        SCOPED_TRACE(::testing::Message() << (whole ? "etp 1" : "etp tp") << " tp " << tp << " dp " << dp << " cp " << cp << " ep "
                                          << ep << " zero " << zero);
        EXPECT_NEAR(gpus * mem.weights_bytes / 2, copies(zero == 3), 1e-9 * copies(zero == 3));
        EXPECT_NEAR(gpus * mem.gradients_bytes / 4, copies(zero >= 2), 1e-9 * copies(zero >= 2));
        EXPECT_NEAR(gpus * mem.optimizer_bytes / 12, copies(zero >= 1), 1e-9 * copies(zero >= 1));
        // The optimizer streams 30 bytes per parameter it holds (tests/test_zero.cpp).
        EXPECT_NEAR(gpus * r.breakdown.optimizer_s * 1e12 / 30, copies(zero >= 1), 1e-9 * copies(zero >= 1));
    }
    EXPECT_EQ(cases[0], 3 * 23 * 4);         // tp x the 23 (dp, cp, ep) with ep | dp cp x ZeRO 0-3
    EXPECT_EQ(cases[1], (28 + 31) * 4);      // (dp, cp, ep) with ep | tp dp cp: 28 at tp 2, 31 at tp 4
}

// Whole experts at ep 1 (etp 1, tp 2, dp 2: all four GPUs in one 100 GB/s domain): each GPU holds
// (196,160 + 64) / 2 = 98,112 dense parameters and all 786,432 expert ones. The dense gradients
// (fp32) all-reduce over the 2 dp ranks, 2 x 1/2 x 4 B each; the expert ones over all 4 GPUs
// that hold the same experts, 2 x 3/4 x 4 B each. One micro-batch, ZeRO 0.
TEST(MoeMemory, WholeExpertsReduceOverTheirOwnReplicas) {
    ParallelConfig p;
    p.tp = 2;
    p.dp = 2;
    p.etp = 1;
    p.sequence_parallel = true;
    const TrainResult r = step_over(tiny_moe(), round_system(), testing::batch_of(2, false), p);
    EXPECT_EQ(r.microbatches, 1);
    EXPECT_NEAR(r.link.dp_s, (4.0 * 98112 + 6.0 * 786432) / 100e9, 1e-12);
}

// GPT-MoE 1.8T on 4,096 GPUs (tp 2, dp 1024, cp 2, ep 4, ZeRO 1): Adam's 12 bytes for each of
// its parameters, held once over the machine, plus the final norm's second tp copy. By hand:
// per layer 4h^2 + 2h + 16h + 16 x 3 x h x 30,720 with h = 15,360; 76 layers; embedding and head
// 100,352 x h each; final norm h. About 1.796e12 parameters: 21.6 TB of optimizer state.
// (Before the fix of this test's commit the experts were divided by ep twice: 6.06 TB.)
TEST(MoeMemory, Gpt18TOptimizerStateOverTheMachine) {
    const ModelSpec m = testing::model_preset("gpt-moe-1.8t");
    const double h = 15360;
    const double params = 76 * (4 * h * h + 2 * h + 16 * h + 16 * 3 * h * 30720) + 2 * 100352 * h + h;
    EXPECT_NEAR(params / 1e12, 1.796, 0.001);
    ParallelConfig p;
    p.tp = 2;
    p.dp = 1024;
    p.cp = 2;
    p.ep = 4;
    p.zero = 1;
    TrainingSpec t;
    t.global_batch = 1024;
    const TrainMemory mem = step_over(m, testing::system_preset("gb200-nvl72"), t, p).memory;
    EXPECT_NEAR(4096 * mem.optimizer_bytes, 12 * (params + h), 1e-9 * 12 * params);
}

// The expert layer of one GPU (tiny_moe, 2 sequences of 128 tokens, ep 2): the router sees all
// 256 tokens; top-2 routing makes 512 token copies, spread over the 8/2 = 4 local experts (128
// each); each all-to-all moves every copy's h-vector in bf16: 512 x 64 x 2 = 65,536 bytes, four
// times (dispatch and combine, forward and backward).
TEST(MoeMemory, ExpertLayerShapesAndAllToAllBytes) {
    const ModelSpec m = tiny_moe();
    LayerShape sh = two_sequences_over_ep2();
    auto gemm = [](const LayerOps& l, std::string_view name) { return op_named(l, name).gemm; };
    auto a2a = [](const LayerOps& l) {
        std::vector<double> b;
        for (const CommOp& c : l.comms)
            if (c.group == CommGroup::ep && c.kind == Collective::all_to_all) b.push_back(c.bytes);
        return b;
    };
    const LayerOps l = layer_ops(m, sh, LayerKind::moe);
    const GemmShape router = gemm(l, "moe_router"), up = gemm(l, "expert_up"), down = gemm(l, "expert_down");
    EXPECT_EQ((std::vector<double>{router.m, router.n, router.k, router.batch}), (std::vector<double>{256, 8, 64, 1}));
    EXPECT_EQ((std::vector<double>{up.m, up.n, up.k, up.batch}), (std::vector<double>{128, 256, 64, 4}));
    EXPECT_EQ((std::vector<double>{down.m, down.n, down.k, down.batch}), (std::vector<double>{128, 64, 128, 4}));
    EXPECT_EQ(a2a(l), (std::vector<double>(4, 65536)));
    // One all-to-all each way per pass, none hidden behind compute (the experts wait for their
    // tokens; the next layer waits for the combined output): dispatch then combine, forward then
    // backward, in layer order.
    std::vector<std::string> names;
    for (const CommOp& c : l.comms) {
        names.emplace_back(c.name);
        EXPECT_DOUBLE_EQ(c.count, 1) << c.name;
        EXPECT_FALSE(c.overlappable) << c.name;
        EXPECT_EQ(c.pass, std::string_view(c.name).ends_with("_grad") ? Pass::bwd : Pass::fwd) << c.name;
    }
    EXPECT_EQ(names, (std::vector<std::string>{"moe_dispatch", "moe_dispatch_grad", "moe_combine", "moe_combine_grad"}));
    // Saved inputs: the router's 256 x 64, the experts' 512 copies x 64 and x 128, at 2 bytes. The
    // gated activation reads 512 x 2 x 128 and writes 512 x 128 elements (393,216 bytes), 7 FLOP
    // per output, and keeps its input (262,144 bytes).
    EXPECT_DOUBLE_EQ(op_named(l, "moe_router").saved_bytes, 32768);
    EXPECT_DOUBLE_EQ(op_named(l, "expert_up").saved_bytes, 65536);
    EXPECT_DOUBLE_EQ(op_named(l, "expert_down").saved_bytes, 131072);
    const Op& act = op_named(l, "expert_act");
    EXPECT_DOUBLE_EQ(act.bytes, 393216);
    EXPECT_DOUBLE_EQ(act.saved_bytes, 262144);
    EXPECT_DOUBLE_EQ(act.vector_flop, 7 * 512 * 128);
    // Backward reads the output gradient and the saved input and writes the input gradient: twice
    // the forward's traffic, as for the dense FFN's activation.
    EXPECT_DOUBLE_EQ(act.bwd_bytes_factor, 2);
    // Tensor parallelism splits each expert's FFN: 64 columns per rank.
    LayerShape tp2 = sh;
    tp2.tp = 2;
    const LayerOps l2 = layer_ops(m, tp2, LayerKind::moe);
    EXPECT_DOUBLE_EQ(gemm(l2, "expert_up").n, 128);
    EXPECT_DOUBLE_EQ(gemm(l2, "expert_down").k, 64);
    // With sequence parallelism the router's input is kept as the rank's 128-token shard
    // (regathered for backward, as Megatron does): 128 x 64 x 2 bytes.
    tp2.sequence_parallel = true;
    EXPECT_DOUBLE_EQ(op_named(layer_ops(m, tp2, LayerKind::moe), "moe_router").saved_bytes, 16384);
    // Top-1 halves the copies and the traffic; ep 1 has none.
    ModelSpec top1 = m;
    top1.moe.top_k = 1;
    EXPECT_EQ(a2a(layer_ops(top1, sh, LayerKind::moe)), (std::vector<double>(4, 32768)));
    // The busiest expert-parallel rank gets 1.5x the mean copies: 768 of them, 192 per local
    // expert, and receives 1.5 x 65,536 bytes in each all-to-all; the rest wait for it.
    ModelSpec skewed = m;
    skewed.moe.load_imbalance = 1.5;
    const LayerOps ls = layer_ops(skewed, sh, LayerKind::moe);
    EXPECT_DOUBLE_EQ(gemm(ls, "expert_up").m, 192);
    EXPECT_DOUBLE_EQ(gemm(ls, "expert_down").m, 192);
    EXPECT_EQ(a2a(ls), (std::vector<double>(4, 98304)));
    EXPECT_DOUBLE_EQ(op_named(ls, "expert_up").saved_bytes, 98304);
    sh.ep = 1;
    EXPECT_TRUE(a2a(layer_ops(m, sh, LayerKind::moe)).empty());
    EXPECT_EQ(gemm(layer_ops(m, sh, LayerKind::moe), "expert_up").batch, 8);
    // At ep 1 every GPU holds every expert: the skew moves copies between its own experts.
    EXPECT_DOUBLE_EQ(gemm(layer_ops(skewed, sh, LayerKind::moe), "expert_up").m, 64);
}

// Token permutation around the experts, memory-bound. 256 tokens of 64 at top-2 make 512 copies:
// 65,536 bytes, the token rows 32,768. The gather into expert order reads and writes every copy
// (131,072 bytes; backward scatters the same). With ep 2 each rank holds 4 experts, so the received
// copies are regrouped by expert before the grouped GEMM and back after it (2 x 65,536 each). The
// weighted scatter back reads the copies and writes the rows (98,304 bytes), keeps the copies for
// the probabilities' gradient, and backward reads the gradient per copy and the kept copies and
// writes the copies' gradient: 3 x 65,536 + 32,768 = 229,376 bytes, 7/3 of the forward.
TEST(MoeMemory, TokensArePermutedIntoExpertOrderAndBack) {
    const ModelSpec m = tiny_moe();
    LayerShape sh = two_sequences_over_ep2();
    auto names = [](const LayerOps& l) {
        std::vector<std::string> out;
        for (const Op& o : l.ops)
            if (o.name.starts_with("moe_") || o.name.starts_with("expert_")) out.emplace_back(o.name);
        return out;
    };
    const LayerOps l = layer_ops(m, sh, LayerKind::moe);
    EXPECT_EQ(names(l), (std::vector<std::string>{"moe_router", "moe_permute", "moe_sort_chunks", "expert_up",
                                                  "expert_act", "expert_down", "moe_unsort_chunks", "moe_unpermute"}));
    const Op &permute = op_named(l, "moe_permute"), &sort = op_named(l, "moe_sort_chunks"),
             &unsort = op_named(l, "moe_unsort_chunks"), &unpermute = op_named(l, "moe_unpermute");
    for (const Op& o : {permute, sort, unsort}) {
        EXPECT_EQ(o.kind, OpKind::elementwise) << o.name;
        EXPECT_DOUBLE_EQ(o.bytes, 131072) << o.name;
        EXPECT_DOUBLE_EQ(o.saved_bytes, 0) << o.name;
        EXPECT_DOUBLE_EQ(o.bwd_bytes_factor, 1) << o.name;
    }
    EXPECT_EQ(unpermute.kind, OpKind::elementwise);
    EXPECT_DOUBLE_EQ(unpermute.bytes, 98304);
    EXPECT_DOUBLE_EQ(unpermute.saved_bytes, 65536);
    EXPECT_DOUBLE_EQ(unpermute.bwd_bytes_factor, 229376.0 / 98304.0);
    // The busiest rank regroups 1.5x the mean copies; what it sends is its own tokens' copies.
    ModelSpec skewed = m;
    skewed.moe.load_imbalance = 1.5;
    const LayerOps ls = layer_ops(skewed, sh, LayerKind::moe);
    EXPECT_DOUBLE_EQ(op_named(ls, "moe_sort_chunks").bytes, 196608);
    EXPECT_DOUBLE_EQ(op_named(ls, "moe_permute").bytes, 131072);
    EXPECT_DOUBLE_EQ(op_named(ls, "moe_unpermute").bytes, 98304);
    // One expert per rank (ep 8) or every expert on one GPU (ep 1): the copies arrive in expert
    // order, nothing to regroup.
    for (const int64_t ep : {1, 8}) {
        sh.ep = ep;
        EXPECT_EQ(names(layer_ops(m, sh, LayerKind::moe)),
                  (std::vector<std::string>{"moe_router", "moe_permute", "expert_up", "expert_act", "expert_down",
                                            "moe_unpermute"}))
            << "ep " << ep;
    }
}

// Experts split over tp 2 (etp = tp) under sequence parallelism, as Megatron-Core's alltoall
// dispatcher runs them (core_v0.12 token_dispatcher.py): the MoE layer takes each rank's own 128
// of the 256 tokens, routes them (router [128, 8, 64]) and permutes their 256 copies (2 x 256 x 64
// x 2 = 65,536 bytes); each all-to-all moves those copies (32,768 bytes); then the tensor-parallel
// group gathers what its two ranks received, 512 copies (65,536 bytes), regroups them by local
// expert (4 of them, ep 2: 2 x 65,536 bytes) and runs each expert's half width (64, gated: 128
// columns) on 128 rows; the outputs are reduce-scattered back before the combine. The block
// gathers no tokens of its own: 5 tp collectives for attention, 4 for the dispatcher.
TEST(MoeMemory, SplitExpertsGatherTheirTensorParallelGroupsCopies) {
    const ModelSpec m = tiny_moe();
    LayerShape sh = two_sequences_over_ep2();
    sh.tp = 2;
    sh.sequence_parallel = true;
    const LayerOps l = layer_ops(m, sh, LayerKind::moe);
    EXPECT_EQ(testing::gemm_dims(l, "moe_router"), (std::vector<double>{128, 8, 64, 1}));
    EXPECT_EQ(testing::gemm_dims(l, "expert_up"), (std::vector<double>{128, 128, 64, 4}));
    EXPECT_EQ(testing::gemm_dims(l, "expert_down"), (std::vector<double>{128, 64, 64, 4}));
    EXPECT_DOUBLE_EQ(op_named(l, "moe_permute").bytes, 65536);
    EXPECT_DOUBLE_EQ(op_named(l, "moe_sort_chunks").bytes, 131072);
    EXPECT_DOUBLE_EQ(op_named(l, "moe_unsort_chunks").bytes, 131072);
    EXPECT_DOUBLE_EQ(op_named(l, "expert_up").saved_bytes, 65536);
    // The gathered copies are cast whole: the experts are no sequence-parallel region.
    EXPECT_DOUBLE_EQ(op_named(l, "expert_up").cast_rows_share, 1);
    std::vector<std::string> names;
    int tp_comms = 0;
    for (const CommOp& c : l.comms) {
        tp_comms += c.group == CommGroup::tp;
        if (!c.name.starts_with("moe_")) continue;
        names.emplace_back(c.name);
        EXPECT_DOUBLE_EQ(c.bytes, c.group == CommGroup::ep ? 32768 : 65536) << c.name;
        EXPECT_FALSE(c.overlappable) << c.name;
        EXPECT_EQ(c.pass, std::string_view(c.name).ends_with("_grad") ? Pass::bwd : Pass::fwd) << c.name;
        const bool gathers = std::string_view(c.name).find("all_gather") != std::string_view::npos;
        if (c.group == CommGroup::tp) {
            EXPECT_EQ(c.kind, gathers ? Collective::all_gather : Collective::reduce_scatter) << c.name;
        }
    }
    EXPECT_EQ(names, (std::vector<std::string>{"moe_dispatch", "moe_dispatch_grad", "moe_tp_all_gather",
                                               "moe_tp_reduce_scatter_grad", "moe_tp_reduce_scatter",
                                               "moe_tp_all_gather_grad", "moe_combine", "moe_combine_grad"}));
    EXPECT_EQ(tp_comms, 9);
    // Without expert parallelism the gathered copies still come from two ranks: regrouped too.
    sh.ep = 1;
    const LayerOps l1 = layer_ops(m, sh, LayerKind::moe);
    EXPECT_DOUBLE_EQ(op_named(l1, "moe_sort_chunks").bytes, 131072);
    EXPECT_DOUBLE_EQ(op_named(l1, "expert_up").gemm.m, 64);
    // One expert per rank (ep 8): a single GEMM, still cast whole, nothing to regroup.
    sh.ep = 8;
    const LayerOps l8 = layer_ops(m, sh, LayerKind::moe);
    EXPECT_DOUBLE_EQ(op_named(l8, "expert_up").gemm.batch, 1);
    EXPECT_DOUBLE_EQ(op_named(l8, "expert_up").cast_rows_share, 1);
    EXPECT_EQ(testing::count_ops_named(l8, "moe_sort_chunks"), 0);
    EXPECT_EQ(testing::count_ops_named(l1, "moe_sort_chunks"), 1);
}

// Expert tensor parallelism 1 under tp 2 with sequence parallelism (Megatron-Core's MoE parallel
// folding): each rank routes its own 128 of the 256 tokens (256 copies at top-2), keeps whole
// experts (width 128, gated: 256 columns) and, with ep 2, 4 of them: 64 rows each. The router
// reads the rank's 128 tokens; each all-to-all moves 256 x 64 x 2 = 32,768 bytes. The block has
// no tensor-parallel region: the only tp collectives are attention's.
TEST(MoeMemory, FoldedExpertsRouteTheirOwnTokens) {
    const ModelSpec m = tiny_moe();
    LayerShape sh = two_sequences_over_ep2();
    sh.tp = 2;
    sh.sequence_parallel = true;
    sh.etp = 1;
    const LayerOps l = layer_ops(m, sh, LayerKind::moe);
    auto gemm = [&](std::string_view name) { return op_named(l, name).gemm; };
    const GemmShape router = gemm("moe_router"), up = gemm("expert_up"), down = gemm("expert_down");
    EXPECT_EQ((std::vector<double>{router.m, router.n, router.k}), (std::vector<double>{128, 8, 64}));
    EXPECT_EQ((std::vector<double>{up.m, up.n, up.k, up.batch}), (std::vector<double>{64, 256, 64, 4}));
    EXPECT_EQ((std::vector<double>{down.m, down.n, down.k, down.batch}), (std::vector<double>{64, 64, 128, 4}));
    int tp_comms = 0;
    for (const CommOp& c : l.comms) {
        if (c.group == CommGroup::ep) EXPECT_DOUBLE_EQ(c.bytes, 32768) << c.name;
        tp_comms += c.group == CommGroup::tp;
    }
    // Attention under SP: all-gather in (its backward reduce-scatter and re-gather), reduce-scatter
    // out (its backward all-gather): 5. The dense block adds the same 5 around its FFN.
    EXPECT_EQ(tp_comms, 5);
    EXPECT_EQ([&] {
        int n = 0;
        for (const CommOp& c : layer_ops(m, sh, LayerKind::dense).comms) n += c.group == CommGroup::tp;
        return n;
    }(), 10);
    // Shared experts are tensor-parallel FFNs: with one, the block gathers its tokens again.
    ModelSpec shared = m;
    shared.moe.shared_experts = 1;
    shared.moe.shared_expert_ffn_hidden = 128;
    int with_shared = 0;
    for (const CommOp& c : layer_ops(shared, sh, LayerKind::moe).comms) with_shared += c.group == CommGroup::tp;
    EXPECT_EQ(with_shared, 10);
}

}  // namespace
}  // namespace sm
