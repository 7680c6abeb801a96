// Hybrid Mamba-Transformer models (model.hybrid_pattern; Nemotron-H): single-purpose blocks of
// three kinds, "M" a Mamba-2 mixer, "-" an FFN, "*" attention. Parameters, op shapes and bytes by
// hand on a toy; where each kind lies; what is refused; the search's layouts cost what `train`
// costs.
#include <gtest/gtest.h>

#include <string>
#include <string_view>
#include <vector>

#include "inference/inference.hpp"
#include "io/report.hpp"
#include "search/search.hpp"
#include "test_helpers.hpp"

namespace sm {
namespace {

using testing::op_named;
using testing::refusal;

// testing::tiny_hybrid: h 64, 4 heads of 16 (2 K/V heads), squared-ReLU FFN 128, vocabulary 100,
// RMSNorm, no biases, no position signal; three layers "M-*"; the mixer d_inner 128, 8 heads of
// 16, 2 groups, state 16, convolution of 4, chunks of 64 tokens.
using testing::tiny_hybrid;

// Mamba block: in_proj 64 x (2 x 128 + 2 x 2 x 16 + 8) = 64 x 328 = 20,992; convolution over x, B
// and C (128 + 64 = 192 channels) of 4 taps and a bias: 960; dt bias, A and D per head: 24; the
// gated norm's 128; out_proj 128 x 64 = 8,192; its pre-norm 64: 30,360. FFN block: 64 x 128 +
// 128 x 64 + 64 = 16,448. Attention block: QKV 64 x (64 + 2 x 32) = 8,192, output 4,096, norm 64:
// 12,352. Embedding and output layer 100 x 64 each, the final norm 64: 72,024 in all.
TEST(Hybrid, ParametersByHand) {
    const ParamCount p = count_params(tiny_hybrid());
    EXPECT_DOUBLE_EQ(p.layer[idx(LayerKind::mamba)].total, 30360);
    EXPECT_DOUBLE_EQ(p.layer[idx(LayerKind::mlp)].total, 16448);
    EXPECT_DOUBLE_EQ(p.layer[idx(LayerKind::attention)].total, 12352);
    for (const LayerKind k : {LayerKind::mamba, LayerKind::mlp, LayerKind::attention}) {
        EXPECT_EQ(p.layers[idx(k)], 1) << to_string(k);
        EXPECT_DOUBLE_EQ(p.layer[idx(k)].trainable, p.layer[idx(k)].total) << to_string(k);
    }
    EXPECT_EQ(p.layers[idx(LayerKind::dense)], 0);
    EXPECT_DOUBLE_EQ(p.embedding, 6400);  // no position table
    EXPECT_DOUBLE_EQ(p.total(), 72024);
    // Biases on the two projections add their outputs: 328 + 64.
    ModelSpec biased = tiny_hybrid();
    biased.bias = true;
    EXPECT_DOUBLE_EQ(count_params(biased).layer[idx(LayerKind::mamba)].total, 30360 + 328 + 64);
}

// Nemotron-H 56B (the preset): 54 Mamba-2 layers of 438.4M, 54 FFNs of 536.9M, 10 attention
// layers of 151.0M and 2 x 1.074B of embedding and output layer: 56.3B, the model's name.
TEST(Hybrid, NemotronH56BHasItsParameters) {
    const ModelSpec m = testing::model_preset("nemotron-h-56b");
    const ParamCount p = count_params(m);
    EXPECT_EQ(p.layers[idx(LayerKind::mamba)], 54);
    EXPECT_EQ(p.layers[idx(LayerKind::mlp)], 54);
    EXPECT_EQ(p.layers[idx(LayerKind::attention)], 10);
    // in_proj 8192 x (2 x 16384 + 2 x 8 x 256 + 256), conv (16384 + 4096) x 5, 3 x 256, 16384,
    // out_proj 16384 x 8192, 8192.
    EXPECT_DOUBLE_EQ(p.layer[idx(LayerKind::mamba)].total,
                     8192.0 * 37120 + 20480.0 * 5 + 768 + 16384 + 16384.0 * 8192 + 8192);
    EXPECT_NEAR(p.total() / 1e9, 56.3, 0.05);
}

TEST(Hybrid, EachLayerIsOfItsCharactersKind) {
    ModelSpec m = tiny_hybrid();
    m.layers = 7;
    m.hybrid_pattern = "MM-*M-M";
    EXPECT_EQ(layer_kind(m, 0), LayerKind::mamba);
    EXPECT_EQ(layer_kind(m, 2), LayerKind::mlp);
    EXPECT_EQ(layer_kind(m, 3), LayerKind::attention);
    EXPECT_EQ(count_layers(m, LayerKind::mamba, 0, 7), 4);
    EXPECT_EQ(count_layers(m, LayerKind::mamba, 1, 5), 2);
    EXPECT_EQ(count_layers(m, LayerKind::mlp, 3, 7), 1);
    EXPECT_EQ(count_layers(m, LayerKind::attention, 4, 7), 0);
    EXPECT_EQ(count_layers(m, LayerKind::dense, 0, 7), 0);
    const LayerKindSet kinds = layer_kinds(m);
    EXPECT_EQ(std::vector<LayerKind>(kinds.begin(), kinds.end()),
              (std::vector<LayerKind>{LayerKind::mamba, LayerKind::mlp, LayerKind::attention}));
    // Without a pattern the transformer kinds hold every layer.
    EXPECT_EQ(count_layers(testing::tiny_llama(3), LayerKind::mamba, 0, 3), 0);
    EXPECT_EQ(count_layers(testing::tiny_llama(3), LayerKind::dense, 0, 3), 3);
}

// One sequence of 256 tokens at tp 2 with sequence parallelism: each rank holds 4 of the 8 heads
// and 1 of the 2 groups. in_proj [256, 164, 64]; the convolution reads and writes 256 x (64 + 32)
// elements (98,304 bytes) and keeps its input; 4 chunks of 64 tokens: C B^T [64, 64, 16] per chunk
// and group (4), chunk states [16, 16, 64] per chunk and head (16), their pass along the chunks
// (16 states of 16 x 16 read in fp32 and written in bf16: 24,576 bytes), the output from the states
// [64, 16, 16] and within the chunk [64, 16, 64] (16 each); the gated norm reads y and z and
// writes 256 x 64 (98,304 bytes) keeping both (65,536); out_proj [256, 64, 64]. The scan's
// products' traffic: B and C 256 x 16 x 2 = 8,192 bytes each, x and the output 256 x 64 x 2 =
// 32,768, C B^T 4 x 64 x 64 x 4 = 65,536, the states 4,096 elements (fp32 from chunk_state, bf16
// into the output). C B^T, the chunk states and their pass are recomputed in backward.
TEST(Hybrid, MambaBlockOpsByHand) {
    LayerShape s;
    s.q_len = s.kv_len = 256;
    s.tp = 2;
    s.sequence_parallel = true;
    const LayerOps l = layer_ops(tiny_hybrid(), s, LayerKind::mamba);
    std::vector<std::string> names;
    for (const Op& o : l.ops) names.emplace_back(o.name);
    EXPECT_EQ(names, (std::vector<std::string>{"pre_norm", "mamba_in_proj", "mamba_conv1d", "ssd_bmm_cb", "ssd_chunk_state",
                                               "ssd_state_passing", "ssd_chunk_scan_state", "ssd_chunk_scan_intra",
                                               "mamba_gated_norm", "mamba_out_proj", "residual"}));
    auto gemm = [&](std::string_view name) { return testing::gemm_dims(l, name); };
    EXPECT_EQ(gemm("mamba_in_proj"), (std::vector<double>{256, 164, 64, 1}));
    EXPECT_EQ(gemm("ssd_bmm_cb"), (std::vector<double>{64, 64, 16, 4}));
    EXPECT_EQ(gemm("ssd_chunk_state"), (std::vector<double>{16, 16, 64, 16}));
    EXPECT_EQ(gemm("ssd_chunk_scan_state"), (std::vector<double>{64, 16, 16, 16}));
    EXPECT_EQ(gemm("ssd_chunk_scan_intra"), (std::vector<double>{64, 16, 64, 16}));
    EXPECT_EQ(gemm("mamba_out_proj"), (std::vector<double>{256, 64, 64, 1}));
    for (const char* name : {"ssd_bmm_cb", "ssd_chunk_state", "ssd_chunk_scan_state", "ssd_chunk_scan_intra"})
        EXPECT_EQ(op_named(l, name).kind, OpKind::batched_gemm) << name;
    const Op &conv = op_named(l, "mamba_conv1d"), &pass = op_named(l, "ssd_state_passing"), &norm = op_named(l, "mamba_gated_norm");
    EXPECT_DOUBLE_EQ(conv.bytes, 98304);
    EXPECT_DOUBLE_EQ(conv.saved_bytes, 49152);
    EXPECT_DOUBLE_EQ(pass.bytes, 24576);
    EXPECT_DOUBLE_EQ(op_named(l, "ssd_bmm_cb").bytes, 2 * 8192 + 65536);
    EXPECT_DOUBLE_EQ(op_named(l, "ssd_chunk_state").bytes, 8192 + 32768 + 4096 * 4);
    EXPECT_DOUBLE_EQ(op_named(l, "ssd_chunk_scan_state").bytes, 8192 + 4096 * 2);
    EXPECT_DOUBLE_EQ(op_named(l, "ssd_chunk_scan_intra").bytes, 65536 + 2 * 32768);
    for (const char* name : {"ssd_bmm_cb", "ssd_chunk_state", "ssd_chunk_scan_state", "ssd_chunk_scan_intra"})
        EXPECT_TRUE(op_named(l, name).scan) << name;
    for (const Op& o : l.ops) {
        const std::string name(o.name);
        EXPECT_EQ(o.bwd_reruns_fwd, name == "ssd_bmm_cb" || name == "ssd_chunk_state" || name == "ssd_state_passing") << name;
        if (o.kind != OpKind::batched_gemm) EXPECT_FALSE(o.scan) << name;
    }
    EXPECT_DOUBLE_EQ(pass.saved_bytes, 0);
    EXPECT_DOUBLE_EQ(norm.bytes, 98304);
    EXPECT_DOUBLE_EQ(norm.saved_bytes, 65536);
    // Saved for backward: the sharded input (128 x 64), the convolution's input and output (256 x
    // 96 each), the norm's two inputs and out_proj's (256 x 64 each), at 2 bytes.
    EXPECT_DOUBLE_EQ(op_named(l, "mamba_in_proj").saved_bytes, 16384);
    EXPECT_DOUBLE_EQ(op_named(l, "ssd_chunk_state").saved_bytes, 49152);
    EXPECT_DOUBLE_EQ(op_named(l, "mamba_out_proj").saved_bytes, 32768);
    // One tensor-parallel region: the gather into in_proj (its backward reduce-scatter and
    // regather) and the reduce-scatter out of out_proj (its backward gather).
    std::vector<std::string> comms;
    for (const CommOp& c : l.comms) comms.emplace_back(c.name);
    EXPECT_EQ(comms, (std::vector<std::string>{"sp_all_gather", "sp_reduce_scatter_grad", "sp_regather_input",
                                               "sp_reduce_scatter", "sp_all_gather_grad"}));
}

// The FFN and attention blocks are the transformer block's halves, each with its own pre-norm and
// residual and no position op (the model has none).
TEST(Hybrid, FfnAndAttentionBlocksAreHalvesOfATransformerBlock) {
    LayerShape s;
    s.q_len = s.kv_len = 256;
    auto names = [&](LayerKind k) {
        std::vector<std::string> out;
        for (const Op& o : layer_ops(tiny_hybrid(), s, k).ops) out.emplace_back(o.name);
        return out;
    };
    EXPECT_EQ(names(LayerKind::mlp), (std::vector<std::string>{"pre_norm", "ffn_up", "ffn_act", "ffn_down", "residual"}));
    EXPECT_EQ(names(LayerKind::attention),
              (std::vector<std::string>{"pre_norm", "qkv_proj", "attention", "attn_out_proj", "residual"}));
}

std::string nemotron_h(const std::string& model_extra, const std::string& parallel, const std::string& training = "") {
    return R"({"model": {"preset": "nemotron-h-56b")" + model_extra + R"(}, "system": {"preset": "dgx-h100"},
               "parallel": {)" + parallel + R"(}, "training": {"global_batch": 64)" + training + "}}";
}

TEST(Hybrid, WhatItDoesNotCombineWithIsRefusedByName) {
    const std::string ok = R"("tp": 8, "dp": 4, "sequence_parallel": true)";
    EXPECT_EQ(refusal(nemotron_h("", ok)), "");
    const std::vector<std::pair<std::string, std::string>> models = {
        {R"(, "hybrid_pattern": "M-*")", "one character per layer"},
        {R"(, "layers": 3, "hybrid_pattern": "M+*")", "character 2"},
        {R"(, "moe": {"experts": 8, "top_k": 2})", "no model.moe"},
        {R"(, "layers": 3, "hybrid_pattern": "ME*")", "\"E\" layers with model.moe"},
        {R"(, "layers": 3, "hybrid_pattern": "ME*", "moe": {"experts": 8, "top_k": 2, "interval": 2})", "the pattern alone placing"},
        {R"(, "mamba": {"groups": 3})", "model.mamba.groups"},
        {R"(, "mamba": {"head_dim": 48})", "model.mamba.head_dim"},
        {R"(, "mamba": {"chunk": 96})", "model.mamba.chunk"},
        {R"(, "mamba": {"state_dim": 0})", "model.mamba.state_dim"},
    };
    for (const auto& [extra, needle] : models)
        EXPECT_NE(refusal(nemotron_h(extra, ok)).find(needle), std::string::npos) << extra << ": " << refusal(nemotron_h(extra, ok));
    EXPECT_NE(refusal(R"({"model": {"preset": "llama3-8b", "mamba": {"groups": 8}}, "system": {"preset": "dgx-h100"},
                         "training": {"global_batch": 8}})")
                  .find("only with model.hybrid_pattern"),
              std::string::npos);
    EXPECT_NE(refusal(nemotron_h("", R"("tp": 8, "dp": 2, "cp": 2, "sequence_parallel": true)")).find("parallel.cp"), std::string::npos);
    EXPECT_NE(refusal(nemotron_h("", R"("tp": 16, "dp": 2, "sequence_parallel": true)")).find("parallel.tp"), std::string::npos);
    EXPECT_NE(refusal(nemotron_h("", ok, R"(, "method": "lora", "lora_rank": 8)")).find("training.method"), std::string::npos);
    EXPECT_NE(refusal(nemotron_h("", R"("tp": 8, "tp_rows": 2, "dp": 4)")).find("parallel.tp_rows"), std::string::npos);
    // Inference decodes with an SSM state (Hybrid.DecodeUpdatesTheSsmState); it splits no sequence.
    const std::string infer = R"({"model": {"preset": "nemotron-h-56b"}, "system": {"preset": "dgx-h100"},
        "parallel": {"tp": 8}, "inference": {"batch": 1, "input_len": 128, "output_len": 16}})";
    const auto served = testing::load(infer, {}, Purpose::infer);
    ASSERT_TRUE(served.ok()) << served.error().message();
    const InferResult r = evaluate_inference({served->model, served->system, served->inference}, served->parallel);
    EXPECT_GT(r.tpot_s, 0);
    const auto split = testing::load(infer, {"parallel.cp=2"}, Purpose::infer);
    ASSERT_FALSE(split.ok());
    EXPECT_EQ(split.error().path, "parallel.cp");
}

// A decode step of 3 requests on tiny_hybrid's mixer (8 heads of 16, state 16, 2 groups, tp 1):
// each request's [16, 16] fp32 states per head read and written (2 x 3 x 8 x 256 x 4 B =
// 49,152 B), B and C (3 x 2 x 16 x 2 B each) read and x and y (3 x 128 x 2 B each) moved once:
// 384 + 1,536 B; 6 FLOP per state element: 6 x 3 x 2,048. The convolution over 192 channels moves
// the new token's in and out (2 x 3 x 192 x 2 B = 2,304 B) and its 3 cached inputs read and
// written (2 x 3 x 3 x 192 x 2 B = 6,912 B). No chunked scan runs.
TEST(Hybrid, DecodeUpdatesTheSsmState) {
    LayerShape s;
    s.batch = 3;
    s.q_len = 1;
    s.kv_len = 900;
    s.decode = true;
    const LayerOps ops = layer_ops(tiny_hybrid(), s, LayerKind::mamba);
    const Op& u = op_named(ops, "ssm_state_update");
    EXPECT_DOUBLE_EQ(u.bytes, 49152.0 + 384.0 + 1536.0);
    EXPECT_DOUBLE_EQ(u.vector_flop, 6.0 * 3.0 * 2048.0);
    EXPECT_DOUBLE_EQ(u.saved_bytes, 0.0);
    EXPECT_TRUE(u.core_projection);
    EXPECT_DOUBLE_EQ(op_named(ops, "mamba_conv1d").bytes, 2304.0 + 6912.0);
    for (const Op& op : ops.ops) EXPECT_FALSE(op.scan) << op.name;
    // A prompt runs the chunked scan, each product the step's per-group core. Of its ops only the
    // chunk states' keep anything (x, B and C: the conv output); the pass of the states runs in
    // backward at twice its forward bytes.
    s.decode = false;
    s.q_len = 128;
    const LayerOps prompt = layer_ops(tiny_hybrid(), s, LayerKind::mamba);
    for (const char* name : {"ssd_bmm_cb", "ssd_chunk_state", "ssd_state_passing", "ssd_chunk_scan_state", "ssd_chunk_scan_intra"}) {
        EXPECT_TRUE(op_named(prompt, name).core_projection) << name;
        // 3 x 128 tokens x 192 conv channels x 2 B
        EXPECT_DOUBLE_EQ(op_named(prompt, name).saved_bytes, std::string_view(name) == "ssd_chunk_state" ? 3.0 * 128 * 192 * 2 : 0.0)
            << name;
    }
    EXPECT_DOUBLE_EQ(op_named(prompt, "ssd_state_passing").bwd_bytes_factor, 2.0);
}

// Only the attention layer ("*") caches K/V: 2 K/V heads x 16 x K and V x 2 B = 128 B a token;
// the Mamba layer keeps per request its 8 heads' [16, 16] fp32 states (8,192 B) and 3 conv inputs
// of 192 channels (1,152 B); the FFN layer nothing. Batch 2, 100 tokens, tp 1: 25,600 + 18,688 B;
// at tp 2 the state halves.
TEST(Hybrid, CacheIsKvOfAttentionLayersAndMambaStates) {
    const ModelSpec m = tiny_hybrid();
    ParallelConfig p;
    const InferenceSpec s = testing::fp16_workload(2, 100, 10);
    EXPECT_DOUBLE_EQ(recurrent_state_bytes_per_gpu(m, p, s), 18688.0);
    EXPECT_DOUBLE_EQ(kv_cache_bytes_per_gpu(m, p, s, 100), 25600.0 + 18688.0);
    p.tp = 2;
    EXPECT_DOUBLE_EQ(recurrent_state_bytes_per_gpu(m, p, s), 18688.0 / 2.0);
}

// Over a pipeline each stage holds the kinds of its own layers: "M-*" on pp 3 puts one of each
// kind on each GPU, and the stage with attention is the one whose layer count says so.
TEST(Hybrid, StagesHoldTheirLayersKinds) {
    const Scenario s = testing::scenario(R"({"model": {"name": "toy", "layers": 3, "hidden": 64, "heads": 4, "kv_heads": 2,
        "ffn_hidden": 128, "ffn_act": "squared-relu", "vocab": 100, "seq_len": 256, "norm": "rmsnorm", "bias": false,
        "position": "none", "hybrid_pattern": "M-*", "mamba": {"state_dim": 16, "groups": 2, "head_dim": 16, "chunk": 64}},
        "system": {"preset": "dgx-h100"}, "parallel": {"pp": 3}, "training": {"global_batch": 8}})");
    EXPECT_EQ(s.model.hybrid_pattern, "M-*");
    EXPECT_EQ(s.model.mamba, tiny_hybrid().mamba);
    const std::vector<StageReport> stages = training_stages({s.model, s.system, s.training}, s.parallel);
    ASSERT_EQ(stages.size(), 3u);
    const LayerKind kinds[] = {LayerKind::mamba, LayerKind::mlp, LayerKind::attention};
    for (size_t g = 0; g < 3; ++g) {
        for (const LayerKind k : kinds) EXPECT_EQ(stages[g].load.blocks[idx(k)], k == kinds[g] ? 1 : 0) << g << " " << to_string(k);
        EXPECT_EQ(stages[g].load.layers, 1);
    }
    // Each GPU's micro-batch is its own block's: the Mamba stage's differs from the FFN stage's.
    EXPECT_NE(stages[0].micro_batch_s, stages[1].micro_batch_s);
}

// The search costs a hybrid layout as `train` does, and never splits the sequence (context
// parallelism) or the tensor-parallel grid (SUMMA), which a hybrid model is refused.
TEST(Hybrid, SearchAnswersCostWhatTrainCosts) {
    const Scenario s = testing::scenario(R"({"model": {"preset": "nemotron-h-56b", "layers": 6, "hybrid_pattern": "M-*M-M"},
        "system": {"preset": "dgx-h100"}, "training": {"global_batch": 32}})",
                                         Purpose::search);
    SearchOptions o;
    o.gpus = 16;
    o.top_k = 50;
    o.tp_within_domain = false;
    const SearchResult r = search_layouts({s.model, s.system, s.training}, {}, o);
    ASSERT_GE(r.best.size(), 10u);
    for (const SearchHit& h : r.best) {
        EXPECT_EQ(h.layout.cp, 1);
        EXPECT_EQ(h.layout.tp_rows, 1);
        const TrainResult t = evaluate_training({s.model, s.system, s.training}, h.layout);
        EXPECT_DOUBLE_EQ(h.result.step_time_s, t.step_time_s);
        EXPECT_DOUBLE_EQ(h.result.memory.peak_bytes_per_gpu, t.memory.peak_bytes_per_gpu);
    }
}

// A faster scan or faster hardware never slows a hybrid step: Nemotron-H 56B's first six layers
// ("M-*M-M") on 8 H100s at tp 8. The scan's products are compute-bound at these shares of the
// peak, so each step up of scan_max shortens the step; more HBM or link bandwidth never lengthens it.
TEST(Hybrid, FasterScanOrHardwareIsNeverSlower) {
    const Scenario s = testing::scenario(R"({"model": {"preset": "nemotron-h-56b", "layers": 6, "hybrid_pattern": "M-*M-M"},
        "system": {"preset": "dgx-h100"}, "parallel": {"tp": 8}, "training": {"global_batch": 4, "precision": "bf16"}})");
    auto step = [&](const SystemSpec& sys) { return evaluate_training({s.model, sys, s.training}, s.parallel).step_time_s; };
    double previous = 0;
    for (const double share : {0.4, 0.2, 0.1, 0.05}) {
        SystemSpec sys = s.system;
        sys.eff.scan_max = share;
        const double t = step(sys);
        EXPECT_GT(t, previous) << share;
        previous = t;
    }
    const double base = step(s.system);
    SystemSpec hbm = s.system, links = s.system;
    hbm.accel.memory_bw_bytes_per_s *= 2;
    links.scale_up.bw_bytes_per_s *= 2;
    EXPECT_LE(step(hbm), base);
    EXPECT_LE(step(links), base);
}

}  // namespace
}  // namespace sm
