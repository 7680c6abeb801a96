// Model families: the ViT's patch embedding and regression head, bidirectional attention, and
// the vit-era5 preset, against hand-computed parameters, FLOP and bytes.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "hardware/cost.hpp"
#include "model/ops.hpp"
#include "test_helpers.hpp"
#include "training/block_cost.hpp"
#include "training/step.hpp"

namespace sm {
namespace {

using testing::load;
using testing::model_preset;
using testing::round_system;

// A small ViT: 2 layers, h = 64, 4 heads, ffn 256, GELU, layernorm, biases, learned positions;
// a 16 x 32 image of 3 channels in 4 x 4 patches (4 x 8 = 32 tokens), 2 channels regressed.
// patch_in = 4 * 4 * 3 = 48, patch_out = 4 * 4 * 2 = 32.
ModelSpec tiny_vit() {
    ModelSpec m;
    m.name = "tiny-vit";
    m.kind = ModelKind::vit;
    m.layers = 2;
    m.hidden = 64;
    m.heads = 4;
    m.kv_heads = 4;
    m.ffn_hidden = 256;
    m.image = {16, 32, 4, 3, 2};
    m.seq_len = 32;
    m.causal = false;
    return m;
}

const auto shape = testing::layer_shape;

TEST(Vit, DropoutWithoutAPositionTableIsItsOwnKernel) {
    // No position table to add (RoPE, ALiBi) and dropout on: the patch embedding's output passes
    // one dropout kernel, read and written: 2 x 32 tokens x 64 x 2 bytes = 8,192 bytes.
    ModelSpec m = tiny_vit();
    m.position = PositionKind::rope;
    m.dropout = true;
    LayerShape s = shape(1, 32, 1, false);
    s.act_bytes = 2;
    const LayerOps e = embedding_ops(m, s);
    const auto it = std::find_if(e.ops.begin(), e.ops.end(), [](const Op& o) { return o.name == "embed_dropout"; });
    ASSERT_NE(it, e.ops.end());
    EXPECT_DOUBLE_EQ(it->bytes, 8192.0);
}

const Op* find_op(const LayerOps& ops, std::string_view name) {
    for (const Op& op : ops.ops)
        if (op.name == name) return &op;
    return nullptr;
}

double gemm_flop_of(const Op& op) { return 2.0 * op.gemm.m * op.gemm.n * op.gemm.k * op.gemm.batch; }

double saved(const LayerOps& ops) {
    double b = 0;
    for (const Op& op : ops.ops) b += op.saved_bytes + op.core_saved_bytes;
    return b;
}

TEST(Vit, ParametersByHand) {
    const ModelSpec m = tiny_vit();
    EXPECT_EQ(m.image.tokens(), 32);
    const ParamCount p = count_params(m);
    // A layer: 12h^2 + 13h = 49,152 + 832 = 49,984 (as a GPT's: the blocks are the same).
    EXPECT_DOUBLE_EQ(p.layer[idx(LayerKind::dense)].total, 49984);
    // Patch embedding 48 x 64 + bias 64 = 3,136, learned positions 32 x 64 = 2,048: 5,184.
    EXPECT_DOUBLE_EQ(p.embedding, 5184);
    // Head 64 x 32 + bias 32 = 2,080; no vocabulary anywhere.
    EXPECT_DOUBLE_EQ(p.lm_head, 2080);
    EXPECT_DOUBLE_EQ(p.final_norm, 128);
    // 2 x 49,984 + 5,184 + 2,080 + 128 = 107,360.
    EXPECT_DOUBLE_EQ(p.total(), 107360);

    // Fixed 2D sin-cos positions have no parameters: 3,136. Without biases: 48 x 64 and 64 x 32.
    ModelSpec fixed = m;
    fixed.position = PositionKind::sincos;
    EXPECT_DOUBLE_EQ(count_params(fixed).embedding, 3136);
    ModelSpec plain = m;
    plain.bias = false;
    EXPECT_DOUBLE_EQ(count_params(plain).embedding, 3072 + 2048);
    EXPECT_DOUBLE_EQ(count_params(plain).lm_head, 2048);
}

TEST(Vit, PatchEmbeddingIsAGemmOverEveryToken) {
    const ModelSpec m = tiny_vit();
    // 2 images x 32 tokens = T = 64, bf16 activations (2 bytes).
    const LayerOps e = embedding_ops(m, shape(2, 32, 1, false));
    const Op* patch = find_op(e, "patch_embed");
    ASSERT_NE(patch, nullptr);
    EXPECT_EQ(find_op(e, "embedding"), nullptr);  // no vocabulary lookup
    // [T, 48] x [48, 64]: 2 x 64 x 48 x 64 = 393,216 FLOP.
    EXPECT_DOUBLE_EQ(gemm_flop_of(*patch), 393216);
    EXPECT_TRUE(patch->weight);
    EXPECT_FALSE(patch->input_grad);  // the pixels need no gradient
    // Kept for the weight gradient: the pixels, 64 x 48 x 2 B = 6,144; the position add keeps
    // nothing without dropout. Its traffic: read the GEMM output and the table, write: 3 x 64 x 64 x 2.
    const Op* pos = find_op(e, "position_add");
    ASSERT_NE(pos, nullptr);
    EXPECT_DOUBLE_EQ(pos->bytes, 24576);
    EXPECT_DOUBLE_EQ(pos->vector_flop, 64.0 * 64);  // one add per element
    // Backward reads the output's gradient and writes the input's and the table's: 2 x forward.
    EXPECT_DOUBLE_EQ(pos->bwd_bytes_factor, 2.0);
    EXPECT_DOUBLE_EQ(saved(e), 6144);

    // Tensor parallelism splits the patch's pixels (k = 24 per rank): half the FLOP, partial sums
    // reduced like the vocabulary-parallel embedding's (one all-reduce of T x h x 2 B = 8,192 B).
    const LayerOps e2 = embedding_ops(m, shape(2, 32, 2, false));
    EXPECT_DOUBLE_EQ(gemm_flop_of(*find_op(e2, "patch_embed")), 196608);
    ASSERT_EQ(e2.comms.size(), 1u);
    EXPECT_EQ(e2.comms[0].kind, Collective::all_reduce);
    EXPECT_DOUBLE_EQ(e2.comms[0].bytes, 8192);

    // A 2 x 2 SUMMA grid (tp 4, tp_rows 2) splits the GEMM's work over its 4 GPUs: a quarter of
    // the FLOP each, [h / tp = 16] output columns per GPU.
    LayerShape grid = shape(2, 32, 4, true);
    grid.tp_rows = 2;
    const LayerOps grid_ops = embedding_ops(m, grid);
    const Op* gp = find_op(grid_ops, "patch_embed");
    ASSERT_NE(gp, nullptr);
    EXPECT_DOUBLE_EQ(gemm_flop_of(*gp), 393216.0 / 4);
    EXPECT_DOUBLE_EQ(gp->gemm.n, 16);
    // Its panels: the pixels' [64, 48] row panel (6,144 B) broadcast along the grid row, forward
    // and again for the weight gradient; the weight's [48, 16] column panel (1,536 B) broadcast
    // along the grid column and its gradient reduced there. The pixels need no gradient: no
    // data-gradient traffic.
    std::vector<std::pair<std::string, double>> panels;
    for (const CommOp& c : grid_ops.comms) panels.emplace_back(c.name, c.bytes);
    EXPECT_EQ(panels, (std::vector<std::pair<std::string, double>>{
                          {"summa_bcast_x", 6144}, {"summa_bcast_w", 1536}, {"summa_bcast_x_wgrad", 6144}, {"summa_reduce_dw", 1536}}));

    // RoPE positions act in attention: no add.
    ModelSpec rope = m;
    rope.position = PositionKind::rope;
    EXPECT_EQ(find_op(embedding_ops(rope, shape(2, 32, 1, false)), "position_add"), nullptr);
}

TEST(Vit, HeadRegressesPatchesWithAnL2Loss) {
    const ModelSpec m = tiny_vit();
    const LayerOps h = head_ops(m, shape(2, 32, 1, false), true);
    EXPECT_EQ(find_op(h, "lm_head"), nullptr);
    EXPECT_EQ(find_op(h, "cross_entropy"), nullptr);
    const Op* head = find_op(h, "regression_head");
    ASSERT_NE(head, nullptr);
    // [T, 64] x [64, 32]: 2 x 64 x 64 x 32 = 262,144 FLOP.
    EXPECT_DOUBLE_EQ(gemm_flop_of(*head), 262144);
    const Op* mse = find_op(h, "mse_loss");
    ASSERT_NE(mse, nullptr);
    // 64 x 32 = 2,048 values: read in bf16 with their fp32 targets (2 + 4 B each) = 12,288 B;
    // the fp32 residual kept for backward 8,192 B; 3 vector FLOP each = 6,144.
    EXPECT_DOUBLE_EQ(mse->bytes, 12288);
    EXPECT_DOUBLE_EQ(mse->saved_bytes, 8192);
    EXPECT_DOUBLE_EQ(mse->vector_flop, 6144);
    // Kept: final norm input 64 x 64 x 2 = 8,192, head input 8,192, residual 8,192 = 24,576 B,
    // where a 1000-word LM head's fp32 softmax alone would keep 64 x 1000 x 4 = 256,000 B.
    EXPECT_DOUBLE_EQ(saved(h), 24576);

    // Column-parallel over the 32 regressed values: 16 per rank on tp 2, and the loss's per-token
    // fp32 partial sums are all-reduced (64 x 4 = 256 B).
    const LayerOps h2 = head_ops(m, shape(2, 32, 2, false), true);
    EXPECT_DOUBLE_EQ(gemm_flop_of(*find_op(h2, "regression_head")), 131072);
    bool loss_reduce = false;
    for (const CommOp& c : h2.comms)
        if (c.name == "loss_all_reduce") loss_reduce = c.bytes == 256;
    EXPECT_TRUE(loss_reduce);
    // Inference-style head (no loss): the GEMM only.
    EXPECT_EQ(find_op(head_ops(m, shape(2, 32, 1, false), false), "mse_loss"), nullptr);
}

TEST(Vit, PatchEmbeddingBackwardIsTheWeightGradientOnly) {
    const ModelSpec m = tiny_vit();
    const SystemSpec sys = round_system();
    const CostContext ctx = training_cost_context(TrainingSpec{});
    const LayerOps e = embedding_ops(m, shape(2, 32, 1, false));
    const OpCost c = cost_op(*find_op(e, "patch_embed"), sys, ctx);
    EXPECT_DOUBLE_EQ(c.dgrad_flop, 0);
    EXPECT_DOUBLE_EQ(c.bwd_flop, 393216);  // dW = X^T dY only
    // Model FLOP: forward and weight gradient, 2 x 393,216 (a trained GEMM with an input
    // gradient counts 3 x). The head counts 3 x 262,144.
    const CommSpans spans{};
    EXPECT_DOUBLE_EQ(cost_block(e, sys, ctx, spans, Recompute::none, 0).model_flop, 786432);
    EXPECT_DOUBLE_EQ(cost_block(head_ops(m, shape(2, 32, 1, false), true), sys, ctx, spans, Recompute::none, 0).model_flop,
                     786432);
}

TEST(Vit, AttentionIsBidirectional) {
    // Training shapes: a ViT computes the whole s x s score matrix, a causal decoder half of it
    // (the same layer, causal): the executed attention FLOP ratio is exactly 2.
    const ModelSpec vit = tiny_vit();
    ModelSpec causal = vit;
    causal.kind = ModelKind::decoder;
    causal.causal = true;
    ParallelConfig p;
    p.microbatch = 2;
    const TrainingSpec t;
    auto attention = [&](const ModelSpec& m) {
        const LayerOps ops = layer_ops(m, training_shape(m, p, t), LayerKind::dense);  // outlives `a`
        const Op* a = find_op(ops, "attention");
        EXPECT_NE(a, nullptr);
        return a ? *a : Op{};
    };
    const Op full = attention(vit), half = attention(causal);
    // Forward by convention: 4 b s^2 h = 4 x 2 x 32^2 x 64 = 524,288 for both.
    EXPECT_DOUBLE_EQ(full.attn_model_flop, 524288);
    EXPECT_DOUBLE_EQ(half.attn_model_flop, 524288);
    EXPECT_DOUBLE_EQ(full.attn_flop, 524288);
    EXPECT_DOUBLE_EQ(half.attn_flop, 262144);
}

TEST(Vit, TrainingStepModelFlopByHand) {
    const ModelSpec m = tiny_vit();
    const SystemSpec sys = round_system();
    TrainingSpec t;
    t.global_batch = 2;
    ParallelConfig p;
    p.microbatch = 2;
    const TrainResult r = evaluate_training({m, sys, t}, p);
    // One micro-batch of 2 images (T = 64): per layer forward 24 T h^2 + 4 b s^2 h
    // = 6,291,456 + 524,288 = 6,815,744, x 3 (forward and both gradients) x 2 layers = 40,894,464;
    // patch embedding 2 x 393,216 = 786,432; head 3 x 262,144 = 786,432. Sum 42,467,328.
    EXPECT_DOUBLE_EQ(r.model_flop_per_step, 42467328);
    EXPECT_DOUBLE_EQ(r.params_total, 107360);
    EXPECT_GT(r.step_time_s, 0);
}

TEST(Vit, PipelineStagesCarryThePatchEmbeddingAndTheHead) {
    // 4 layers on pp 2: stage 0 holds the patch embedding, stage 1 the head and the loss; the
    // stages' weights add up to the model's (tp 1, ZeRO 0, bf16: 2 B per parameter).
    ModelSpec m = tiny_vit();
    m.layers = 4;
    const SystemSpec sys = round_system();
    TrainingSpec t;
    t.global_batch = 4;
    ParallelConfig p;
    p.pp = 2;
    const auto stages = training_stages({m, sys, t}, p);
    ASSERT_EQ(stages.size(), 2u);
    EXPECT_TRUE(stages[0].load.embedding);
    EXPECT_FALSE(stages[0].load.head);
    EXPECT_TRUE(stages[1].load.head);
    // 4 x 49,984 + 5,184 + 2,080 + 128 = 207,328 parameters, 414,656 B.
    EXPECT_DOUBLE_EQ(stages[0].memory.weights_bytes + stages[1].memory.weights_bytes, 414656);
}

TEST(Vit, Era5PresetByHand) {
    const ModelSpec m = model_preset("vit-era5");
    EXPECT_EQ(m.kind, ModelKind::vit);
    EXPECT_FALSE(m.causal);
    EXPECT_EQ(m.vocab, 0);
    // ERA5 0.25 degree cropped to 720 x 1440, 4 x 4 patches: 180 x 360 = 64,800 tokens
    // (Subramanian et al.'s l); 20 variables: patch_in = patch_out = 4 x 4 x 20 = 320.
    EXPECT_EQ(m.seq_len, 64800);
    EXPECT_EQ(m.image.patch_in(), 320);
    EXPECT_EQ(m.image.patch_out(), 320);
    const ParamCount p = count_params(m);
    // Blocks: 48 x (12 h^2 + 13 h), h = 12,288: 48 x (1,811,939,328 + 159,744) = 86,980,755,456,
    // the ~87 B of 48 x 12 x 12288^2 = 86,973,087,744 plus biases and norms.
    EXPECT_DOUBLE_EQ(p.blocks(&LayerParams::total), 86980755456.0);
    // Patch embedding 320 x 12,288 + 12,288 = 3,944,448; learned positions 64,800 x 12,288
    // = 796,262,400; head 12,288 x 320 + 320 = 3,932,480; final norm 24,576.
    EXPECT_DOUBLE_EQ(p.embedding, 3944448.0 + 796262400.0);
    EXPECT_DOUBLE_EQ(p.lm_head, 3932480);
    EXPECT_DOUBLE_EQ(p.total(), 86980755456.0 + 800206848.0 + 3932480.0 + 24576.0);  // 87,784,919,360
}

const char* kVit = R"({"model": {"preset": "vit-era5"}, "system": {"preset": "perlmutter-a100"}})";

InputError error_of(const std::vector<std::string>& sets, Purpose purpose = Purpose::train) {
    auto s = load(kVit, sets, purpose);
    EXPECT_FALSE(s.ok()) << "accepted";
    if (s.ok()) return {};
    EXPECT_EQ(s.error().message().find('\n'), std::string::npos);
    return s.error();
}

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

TEST(Vit, ScenarioReadsTheImageAndDerivesTheSequence) {
    auto s = load(kVit);
    ASSERT_TRUE(s.ok()) << s.error().message();
    EXPECT_EQ(s->model.seq_len, 64800);
    // seq_len may be left out: derived from the image. resolve shows the kind and the image.
    auto derived = load(R"({"model": {"kind": "vit", "layers": 2, "hidden": 64, "heads": 4,
        "image": {"height": 16, "width": 32, "patch": 4, "in_channels": 3}}, "system": {"preset": "perlmutter-a100"}})");
    ASSERT_TRUE(derived.ok()) << derived.error().message();
    EXPECT_EQ(derived->model.seq_len, 32);
    EXPECT_EQ(derived->model.image.out_channels, 3);  // defaults to in_channels
    EXPECT_FALSE(derived->model.causal);              // bidirectional by default
    EXPECT_EQ(derived->full["model"]["kind"], "vit");
    EXPECT_EQ(derived->full["model"]["seq_len"], 32);
    EXPECT_EQ(derived->full["model"]["image"]["out_channels"], 3);
    // An encoder keeps its vocabulary and attends both ways by default.
    auto enc = load(R"({"model": {"preset": "gpt3-175b", "kind": "encoder", "causal": false}, "system": {"preset": "perlmutter-a100"}})");
    ASSERT_TRUE(enc.ok()) << enc.error().message();
    EXPECT_EQ(enc->model.kind, ModelKind::encoder);
    // End to end its attention is full (fraction 1), the decoder's half.
    EXPECT_DOUBLE_EQ(training_shape(enc->model, enc->parallel, enc->training).causal_fraction, 1.0);
    auto dec = load(R"({"model": {"preset": "gpt3-175b"}, "system": {"preset": "perlmutter-a100"}})");
    ASSERT_TRUE(dec.ok());
    EXPECT_DOUBLE_EQ(training_shape(dec->model, dec->parallel, dec->training).causal_fraction, 0.5);
}

TEST(Vit, BadImageFieldsAreNamed) {
    const InputError crop = error_of({"model.image.height=721"});
    EXPECT_EQ(crop.path, "model.image.height");
    EXPECT_EQ(crop.given, "721");
    EXPECT_TRUE(contains(crop.allowed, "multiple of model.image.patch (4)")) << crop.message();
    EXPECT_EQ(error_of({"model.image.width=1441"}).path, "model.image.width");
    EXPECT_EQ(error_of({"model.image.patch=0"}).path, "model.image.patch");
    EXPECT_EQ(error_of({"model.image.in_channels=-1"}).path, "model.image.in_channels");
    const InputError typo = error_of({"model.image.pach=4"});
    EXPECT_EQ(typo.path, "model.image.pach");
    EXPECT_TRUE(contains(typo.allowed, "\"patch\"")) << typo.message();
    const InputError seq = error_of({"model.seq_len=65536"});
    EXPECT_EQ(seq.path, "model.seq_len");
    EXPECT_TRUE(contains(seq.allowed, "64800")) << seq.message();
    EXPECT_EQ(error_of({"model.vocab=320"}).path, "model.vocab");
    EXPECT_EQ(error_of({"model.causal=true"}).path, "model.causal");
    EXPECT_EQ(error_of({"model.tied_embeddings=true"}).path, "model.tied_embeddings");
    EXPECT_EQ(error_of({"model.kind=vitt"}).path, "model.kind");
    // A decoder has no image; a ViT without one is incomplete.
    EXPECT_EQ(error_of({"model.kind=decoder", "model.vocab=320"}).path, "model.image");
    auto no_image = load(R"({"model": {"kind": "vit", "layers": 2, "hidden": 64, "heads": 4}, "system": {"preset": "perlmutter-a100"}})");
    ASSERT_FALSE(no_image.ok());
    EXPECT_EQ(no_image.error().path, "model.image");
    // Inference is a decoder's: refused with the reason.
    const InputError infer = error_of({}, Purpose::infer);
    EXPECT_EQ(infer.path, "model.kind");
    EXPECT_TRUE(contains(infer.allowed, "decoder")) << infer.message();
}

}  // namespace
}  // namespace sm
