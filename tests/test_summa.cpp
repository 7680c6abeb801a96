// SUMMA 2D tensor parallelism (parallel.tp_rows): per-GPU GEMM shapes, FLOP, panel traffic,
// activation memory and placement of the grid's two groups, against hand computation.
#include <gtest/gtest.h>

#include <string>
#include <string_view>

#include "hardware/cost.hpp"
#include "layout/rules.hpp"
#include "model/ops.hpp"
#include "parallel/placement.hpp"
#include "test_helpers.hpp"
#include "training/block_cost.hpp"
#include "training/step.hpp"

namespace sm {
namespace {

using testing::comm_named;
using testing::count_named;
using testing::load;
using testing::op_named;
using testing::round_system;

// h = 1024, 16 heads of 64 (MHA), FFN 4096 GELU, layernorm, learned positions, vocab 1000,
// seq 512, bf16 (2 bytes), micro-batch 1.
ModelSpec grid_gpt() {
    ModelSpec m = testing::tiny_gpt();
    m.hidden = 1024;
    m.heads = 16;
    m.kv_heads = 16;
    m.ffn_hidden = 4096;
    m.seq_len = 512;
    m.dropout = false;
    return m;
}

ParallelConfig grid(int64_t tp, int64_t rows) {
    ParallelConfig p;
    p.tp = tp;
    p.tp_rows = rows;
    p.sequence_parallel = true;
    return p;
}

// A 2 x 2 grid (tp 4): each GPU holds 512 / 2 = 256 tokens of its grid row, heads and widths
// split over 2 columns.
TEST(Summa, GemmShapesAreTheGridsBlocks) {
    const ModelSpec m = grid_gpt();
    const LayerShape s = training_shape(m, grid(4, 2), TrainingSpec{});
    EXPECT_EQ(s.q_len, 256);
    EXPECT_EQ(s.tp, 2);
    EXPECT_EQ(s.tp_rows, 2);
    const LayerOps ops = layer_ops(m, s, LayerKind::dense);
    // [256, 3 x 1024 / 2] = [256, 1024] x [1024, 1536]
    const Op& qkv = op_named(ops, "qkv_proj");
    EXPECT_EQ(qkv.gemm.m, 256);
    EXPECT_EQ(qkv.gemm.n, 1536);
    EXPECT_EQ(qkv.gemm.k, 1024);
    // Row-parallel in 1D ([256, 1024] x [512, 1024]); on the grid [256, 512] = [256, 1024] x [1024, 512].
    const Op& out = op_named(ops, "attn_out_proj");
    EXPECT_EQ(out.gemm.m, 256);
    EXPECT_EQ(out.gemm.n, 512);
    EXPECT_EQ(out.gemm.k, 1024);
    const Op& down = op_named(ops, "ffn_down");
    EXPECT_EQ(down.gemm.n, 512);
    EXPECT_EQ(down.gemm.k, 4096);
    // Per-GPU GEMM FLOP: a quarter of the layer's 2 x 512 x 12 h^2 = 12,884,901,888.
    double flop = 0;
    for (const Op& op : ops.ops)
        if (op.kind == OpKind::gemm) flop += 2 * op.gemm.m * op.gemm.n * op.gemm.k * op.gemm.batch;
    EXPECT_DOUBLE_EQ(flop, 2.0 * 512 * 12 * 1024.0 * 1024 / 4);
    // Attention: 8 heads of this column, 256 queries against 512 keys: 2 x 8 x 256 x 512 x 128.
    const Op& attn = op_named(ops, "attention");
    EXPECT_DOUBLE_EQ(attn.attn_model_flop, 2.0 * 8 * 256 * 512 * 128);
}

TEST(Summa, PanelTrafficPerGemm) {
    const ModelSpec m = grid_gpt();
    const LayerOps ops = layer_ops(m, training_shape(m, grid(4, 2), TrainingSpec{}), LayerKind::dense);
    // Four grid GEMMs: each broadcasts X and W forward, W and X again backward, and reduces dX, dW.
    for (const char* name : {"summa_bcast_x", "summa_bcast_w", "summa_bcast_w_dgrad", "summa_reduce_dx",
                             "summa_bcast_x_wgrad", "summa_reduce_dw"})
        EXPECT_EQ(count_named(ops, name), 4) << name;
    // Each is one collective of its panel bytes per GEMM (the nb panels together move what one
    // all-gather or reduce-scatter of the whole panel row or column does).
    for (const CommOp& c : ops.comms)
        if (std::string_view(c.name).starts_with("summa_")) EXPECT_DOUBLE_EQ(c.count, 1) << c.name;
    // qkv: X's panel row [256, 1024] x 2 bytes over the grid row; W's panel column [1024, 1536].
    const CommOp& x = comm_named(ops, "summa_bcast_x", 0);
    EXPECT_EQ(x.group, CommGroup::tp);
    EXPECT_EQ(x.kind, Collective::all_gather);
    EXPECT_EQ(x.pass, Pass::fwd);
    EXPECT_TRUE(x.overlappable);
    EXPECT_DOUBLE_EQ(x.bytes, 256.0 * 1024 * 2);
    const CommOp& w = comm_named(ops, "summa_bcast_w", 0);
    EXPECT_EQ(w.group, CommGroup::tp_rows);
    EXPECT_DOUBLE_EQ(w.bytes, 1024.0 * 1536 * 2);
    // attn_out_proj (second): X [256, 1024], W [1024, 512]; ffn_down (fourth): X [256, 4096], W [4096, 512].
    EXPECT_DOUBLE_EQ(comm_named(ops, "summa_bcast_x", 1).bytes, 256.0 * 1024 * 2);
    EXPECT_DOUBLE_EQ(comm_named(ops, "summa_bcast_w", 1).bytes, 1024.0 * 512 * 2);
    EXPECT_DOUBLE_EQ(comm_named(ops, "summa_bcast_x", 3).bytes, 256.0 * 4096 * 2);
    EXPECT_DOUBLE_EQ(comm_named(ops, "summa_bcast_w", 3).bytes, 4096.0 * 512 * 2);
    const CommOp& dx = comm_named(ops, "summa_reduce_dx", 3);
    EXPECT_EQ(dx.kind, Collective::reduce_scatter);
    EXPECT_EQ(dx.group, CommGroup::tp);
    EXPECT_EQ(dx.pass, Pass::bwd);
    EXPECT_DOUBLE_EQ(dx.bytes, 256.0 * 4096 * 2);
    const CommOp& dw = comm_named(ops, "summa_reduce_dw", 3);
    EXPECT_EQ(dw.group, CommGroup::tp_rows);
    EXPECT_DOUBLE_EQ(dw.bytes, 4096.0 * 512 * 2);
    // K and V of the grid column: 2 rows x 256 tokens x 8 heads x (64 + 64) x 2 bytes, exposed.
    const CommOp& kv = comm_named(ops, "summa_kv_all_gather");
    EXPECT_EQ(kv.group, CommGroup::tp_rows);
    EXPECT_FALSE(kv.overlappable);
    EXPECT_DOUBLE_EQ(kv.bytes, 2.0 * 256 * 8 * 128 * 2);
    EXPECT_DOUBLE_EQ(comm_named(ops, "summa_dkv_reduce_scatter").bytes, kv.bytes);
    EXPECT_FALSE(comm_named(ops, "summa_kv_regather").overlappable);
    EXPECT_FALSE(comm_named(ops, "summa_dkv_reduce_scatter").overlappable);
    EXPECT_EQ(comm_named(ops, "summa_kv_regather").pass, Pass::bwd);
    EXPECT_DOUBLE_EQ(ops.transient_bytes, 2 * kv.bytes);
    // Layernorm statistics (mean, variance in fp32) of 256 tokens over the grid row, per norm.
    EXPECT_EQ(count_named(ops, "summa_norm_stats"), 2);
    EXPECT_DOUBLE_EQ(comm_named(ops, "summa_norm_stats").bytes, 256.0 * 2 * 4);
    // No Megatron 1D collectives.
    for (const char* name : {"sp_all_gather", "sp_reduce_scatter", "tp_all_reduce", "tp_all_reduce_grad"})
        EXPECT_EQ(count_named(ops, name), 0) << name;
}

// What the backward needs, kept sharded over the whole grid: [256, 1024 / 2] inputs, the block
// input 128 x 1024 x 2 bytes (as sequence parallelism keeps it at tp 4).
TEST(Summa, ActivationsShardedOverTheGrid) {
    const ModelSpec m = grid_gpt();
    const LayerOps summa = layer_ops(m, training_shape(m, grid(4, 2), TrainingSpec{}), LayerKind::dense);
    EXPECT_DOUBLE_EQ(summa.input_bytes, 128.0 * 1024 * 2);
    EXPECT_DOUBLE_EQ(op_named(summa, "qkv_proj").saved_bytes, 128.0 * 1024 * 2);
    // attn_out_proj keeps its [256, 1024 / 2] input; ffn_down its [256, 4096 / 2].
    EXPECT_DOUBLE_EQ(op_named(summa, "attn_out_proj").saved_bytes, 256.0 * 512 * 2);
    EXPECT_DOUBLE_EQ(op_named(summa, "ffn_down").saved_bytes, 256.0 * 2048 * 2);
    // Attention keeps Q, K, V of its 256 tokens and 8 heads.
    EXPECT_DOUBLE_EQ(op_named(summa, "attention").saved_bytes, 3.0 * 256 * 8 * 64 * 2);
}

// The embedding looks up the grid column's 512 tokens in a 1/2 share of the width and reduce-
// scatters them over the column; the head is a grid GEMM [256, 1000 / 2] = [256, 1024] x [1024, 500].
TEST(Summa, EmbeddingAndHead) {
    const ModelSpec m = grid_gpt();
    const LayerShape s = training_shape(m, grid(4, 2), TrainingSpec{});
    const LayerOps emb = embedding_ops(m, s);
    const CommOp& rs = comm_named(emb, "summa_embed_reduce_scatter");
    EXPECT_EQ(rs.group, CommGroup::tp_rows);
    EXPECT_DOUBLE_EQ(rs.bytes, 512.0 * 512 * 2);
    // It reduces the rows the lookup just produced: nothing in the embedding runs beside it.
    EXPECT_FALSE(rs.overlappable);
    // Backward gathers the same partial rows back, once.
    const CommOp& ag = comm_named(emb, "summa_embed_all_gather_grad");
    EXPECT_EQ(ag.group, CommGroup::tp_rows);
    EXPECT_EQ(ag.pass, Pass::bwd);
    EXPECT_DOUBLE_EQ(ag.bytes, 512.0 * 512 * 2);
    EXPECT_EQ(ag.count, 1);
    EXPECT_FALSE(ag.overlappable);
    EXPECT_EQ(count_named(emb, "sp_reduce_scatter"), 0);
    const LayerOps head = head_ops(m, s, true);
    const Op& lm = op_named(head, "lm_head");
    EXPECT_EQ(lm.gemm.m, 256);
    EXPECT_EQ(lm.gemm.n, 500);
    EXPECT_EQ(lm.gemm.k, 1024);
    EXPECT_DOUBLE_EQ(comm_named(head, "summa_bcast_w").bytes, 1024.0 * 500 * 2);
    EXPECT_EQ(count_named(head, "sp_all_gather"), 0);
}

// A grid column is tp_rows ranks tp / tp_rows apart: on 4-GPU domains a 2 x 4 grid's rows sit in
// two domains (members 0 and 4), its columns' rows within one.
TEST(Summa, GridGroupsArePlacedColumnsFastest) {
    SystemSpec sys = round_system();
    sys.scale_up_domain = 4;
    ParallelConfig p = grid(8, 2);
    p.dp = 2;
    const LayerSpans l = place_layer_groups(p, sys);
    EXPECT_EQ(l.tp, (GroupSpan{4, 4, 1}));
    EXPECT_EQ(l.tp_rows, (GroupSpan{2, 1, 2}));
    const CommSpans c = place_groups(p, sys);
    EXPECT_EQ(c.span[idx(CommGroup::tp_rows)], (GroupSpan{2, 1, 2}));
    EXPECT_EQ(c.span[idx(CommGroup::dp)], (GroupSpan{2, 1, 2}));  // 8 apart
    // 1D: one group of 8 over two domains.
    p.tp_rows = 1;
    EXPECT_EQ(place_layer_groups(p, sys).tp, (GroupSpan{8, 4, 2}));
    EXPECT_EQ(place_layer_groups(p, sys).tp_rows, (GroupSpan{1, 1, 1}));
}

// Panel traffic hides behind the pass's GEMMs: on a machine whose links are fast the grid's
// broadcasts cost no exposed time; on one whose links are slow, what outlasts the GEMMs shows.
TEST(Summa, PanelTrafficHidesBehindTheGemms) {
    const ModelSpec m = grid_gpt();
    const LayerOps ops = layer_ops(m, training_shape(m, grid(4, 2), TrainingSpec{}), LayerKind::dense);
    SystemSpec sys = round_system();
    sys.scale_up.bw_bytes_per_s = 1e16;  // traffic far below the GEMMs' time
    CommSpans spans;
    spans.span[idx(CommGroup::tp)] = {2, 2, 1};
    spans.span[idx(CommGroup::tp_rows)] = {2, 2, 1};
    CostContext ctx;
    const BlockCost fast = cost_block(ops, sys, ctx, spans, Recompute::none, 0.0);
    // Every panel broadcast and reduction under its pass's GEMMs: only the K/V gather and the
    // norm statistics remain exposed.
    double exposed_link = 0;
    for (const CommOp& c : ops.comms) {
        if (c.overlappable) continue;
        exposed_link += collective_time_s(c.kind, c.bytes, spans.span[idx(c.group)], sys);
    }
    EXPECT_NEAR(fast.exposed_comm_s(), exposed_link, 1e-12);
    EXPECT_GT(fast.comm_link_s[idx(CommGroup::tp_rows)], 0);
    // 100 GB/s: the forward tp_rows broadcasts (W panels) outlast the forward compute outside
    // attention (GEMMs, norms, activation), which is the window they hide in.
    sys.scale_up.bw_bytes_per_s = 100e9;
    const BlockCost slow = cost_block(ops, sys, ctx, spans, Recompute::none, 0.0);
    double gemm_fwd = 0, w_fwd = 0, x_fwd = 0;
    for (const Op& op : ops.ops)
        if (op.kind != OpKind::attention) gemm_fwd += cost_op(op, sys, ctx).fwd_s;
    for (const CommOp& c : ops.comms)
        if (c.overlappable && c.pass == Pass::fwd)
            (c.group == CommGroup::tp_rows ? w_fwd : x_fwd) += collective_time_s(c.kind, c.bytes, spans.span[idx(c.group)], sys);
    ASSERT_GT(w_fwd, x_fwd);
    ASSERT_GT(w_fwd, gemm_fwd);
    double fwd_exposed_link = 0;
    for (const CommOp& c : ops.comms)
        if (!c.overlappable && c.pass == Pass::fwd)
            fwd_exposed_link += collective_time_s(c.kind, c.bytes, spans.span[idx(c.group)], sys);
    EXPECT_NEAR(slow.fwd_wall_s - slow.fwd_s, fwd_exposed_link + (w_fwd - gemm_fwd), 1e-9 * slow.fwd_wall_s);
    // Backward the same, over the backward's compute outside attention: the grid column carries
    // W's panels twice (data gradient) and the dW reductions, the row X's panel and dX.
    double gemm_bwd = 0, col_bwd = 0, row_bwd = 0, bwd_exposed_link = 0;
    for (const Op& op : ops.ops)
        if (op.kind != OpKind::attention) gemm_bwd += cost_op(op, sys, ctx).bwd_s;
    for (const CommOp& c : ops.comms) {
        if (c.pass != Pass::bwd) continue;
        const double t = collective_time_s(c.kind, c.bytes, spans.span[idx(c.group)], sys);
        if (!c.overlappable)
            bwd_exposed_link += t;
        else
            (c.group == CommGroup::tp_rows ? col_bwd : row_bwd) += t;
    }
    ASSERT_GT(col_bwd, row_bwd);
    ASSERT_GT(col_bwd, gemm_bwd);
    EXPECT_NEAR(slow.bwd_wall_s - slow.bwd_s, bwd_exposed_link + (col_bwd - gemm_bwd), 1e-9 * slow.bwd_wall_s);
}

// Which grids `train` takes (scenario.cpp check_summa) and the search enumerates.
TEST(Summa, WhichGridsFit) {
    const ModelSpec m = grid_gpt();  // 16 heads, 16 K/V heads, FFN 4096, h 1024, seq 512
    EXPECT_TRUE(summa_fits(m, 4, 2, 1));
    EXPECT_TRUE(summa_fits(m, 16, 16, 1));   // one column: tokens only
    EXPECT_TRUE(summa_fits(m, 32, 2, 1));    // 16 columns cut 16 heads
    EXPECT_FALSE(summa_fits(m, 4, 1, 1));    // one row is 1D tensor parallelism
    EXPECT_FALSE(summa_fits(m, 4, 3, 1));    // rows must divide tp
    ModelSpec wide = m;
    wide.hidden = 1536;  // divisible by 6: only the rows rule refuses 4 rows of tp 6
    wide.heads = wide.kv_heads = 24;
    wide.ffn_hidden = 4608;  // 3 columns cut 24 heads and 4,608
    EXPECT_FALSE(summa_fits(wide, 6, 4, 1));
    EXPECT_TRUE(summa_fits(wide, 6, 2, 1));
    EXPECT_FALSE(summa_fits(m, 64, 2, 1));   // 32 columns do not cut 16 heads
    EXPECT_FALSE(summa_fits(m, 2048, 1024, 1));  // tp 2048 does not divide h 1024
    EXPECT_FALSE(summa_fits(m, 8, 8, 128));  // 512 / 128 = 4 tokens over 8 rows
    EXPECT_TRUE(summa_fits(m, 8, 4, 128));
    ModelSpec gqa = m;
    gqa.kv_heads = 4;  // 8 columns hold half a K/V head each: replicated, as 1D tp allows
    EXPECT_TRUE(summa_fits(gqa, 16, 2, 1));
    gqa.kv_heads = 3;
    EXPECT_FALSE(summa_fits(gqa, 4, 2, 1));
    ModelSpec moe = testing::tiny_moe();
    EXPECT_FALSE(summa_fits(moe, 2, 2, 1));
    moe.moe = {};
    EXPECT_TRUE(summa_fits(moe, 2, 2, 1));
    ModelSpec mla = m;
    mla.attention_kind = AttentionKind::mla;
    EXPECT_FALSE(summa_fits(mla, 4, 2, 1));
}

// One column (rows = tp): the grid row is a single GPU, so every tensor-parallel second is the
// grid column's, and the step reports it as TP time.
TEST(Summa, OneColumnGridTrafficIsTensorParallel) {
    auto s = load(R"({"model": {"preset": "gpt3-175b", "layers": 8}, "system": {"preset": "dgx-a100-80gb"},
        "parallel": {"tp": 8, "tp_rows": 8}, "training": {"global_batch": 1, "precision": "bf16"}})");
    ASSERT_TRUE(s.ok());
    const TrainResult r = evaluate_training({s->model, s->system, s->training}, s->parallel);
    EXPECT_GT(r.breakdown.tp_comm_exposed_s, 0);
    EXPECT_DOUBLE_EQ(r.link.tp_s, r.link.tp_rows_s);
    // One rank per grid row: no norm statistics to all-reduce, no panel row to broadcast over.
    const LayerOps ops = layer_ops(s->model, training_shape(s->model, s->parallel, s->training), LayerKind::dense);
    EXPECT_EQ(count_named(ops, "summa_norm_stats"), 0);
    EXPECT_EQ(count_named(ops, "summa_norm_stats_grad"), 0);
    EXPECT_EQ(count_named(ops, "summa_bcast_w"), 4);
}

// Weights are 1/tp per GPU as under 1D tensor parallelism; the step runs and reports its grid.
TEST(Summa, TrainsWithTheSameWeightShare) {
    const std::string doc = R"({"model": {"preset": "gpt3-175b", "layers": 8}, "system": {"preset": "dgx-a100-80gb"},
        "parallel": {"tp": 8, "pp": 1, "dp": 1}, "training": {"global_batch": 1, "precision": "bf16"}})";
    auto one = load(doc);
    auto two = load(doc, {"parallel.tp_rows=4"});
    ASSERT_TRUE(one.ok() && two.ok());
    EXPECT_TRUE(two->parallel.sequence_parallel);
    const TrainResult a = evaluate_training({one->model, one->system, one->training}, one->parallel);
    const TrainResult b = evaluate_training({two->model, two->system, two->training}, two->parallel);
    EXPECT_DOUBLE_EQ(a.memory.weights_bytes, b.memory.weights_bytes);
    EXPECT_NEAR(a.model_flop_per_step, b.model_flop_per_step, 1e-9 * a.model_flop_per_step);
    EXPECT_TRUE(std::isfinite(b.step_time_s));
    EXPECT_GT(b.link.tp_rows_s, 0);
    EXPECT_GT(b.link.tp_s, b.link.tp_rows_s);
}

TEST(Summa, RefusesWhatItDoesNotModel) {
    const std::string dense = R"({"model": {"preset": "gpt3-175b", "layers": 8}, "system": {"preset": "dgx-a100-80gb"},
        "parallel": {"tp": 8, "tp_rows": 2}, "training": {"global_batch": 1}})";
    EXPECT_TRUE(load(dense).ok());
    auto expect_error = [](const Expected<Scenario>& s, const std::string& field) {
        ASSERT_FALSE(s.ok());
        EXPECT_NE(s.error().message().find(field), std::string::npos) << s.error().message();
    };
    expect_error(load(dense, {"parallel.tp_rows=3"}), "parallel.tp_rows");
    expect_error(load(dense, {"parallel.sequence_parallel=false"}), "parallel.sequence_parallel");
    // 96 heads over 8 / 1 ... tp 16, rows 2: 8 columns cut 96 heads; rows 16: 1 column.
    EXPECT_TRUE(load(dense, {"parallel.tp=16", "parallel.tp_rows=16"}).ok());
    // seq 2048 / cp 1 over 3 rows does not divide (tp 12 = 3 x 4).
    expect_error(load(dense, {"parallel.tp=12", "parallel.tp_rows=3"}), "parallel.tp_rows");
    expect_error(load(R"({"model": {"preset": "mixtral-8x7b", "layers": 2}, "system": {"preset": "dgx-h100"},
        "parallel": {"tp": 4, "tp_rows": 2}, "training": {"global_batch": 1}})"),
                 "parallel.tp_rows");
    expect_error(load(R"({"model": {"preset": "gpt3-175b", "layers": 8}, "system": {"preset": "dgx-a100-80gb"},
        "parallel": {"tp": 8, "tp_rows": 2}, "inference": {"batch": 1}})",
                      {}, Purpose::infer),
                 "parallel.tp_rows");
}

}  // namespace
}  // namespace sm
