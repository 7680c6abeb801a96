#pragma once
// Shared fixtures for the unit tests: presets and scenarios by name.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "io/scenario.hpp"
#include "model/ops.hpp"
#include "training/step.hpp"

namespace sm::testing {

inline ModelSpec model_preset(const std::string& name) {
    auto j = model_preset_json(name);
    EXPECT_TRUE(j.ok()) << name;
    auto m = parse_model(j.value(), name);
    EXPECT_TRUE(m.ok()) << (m.ok() ? "" : m.error().message());
    return m.value();
}

inline SystemSpec system_preset(const std::string& name) {
    auto j = system_preset_json(name);
    EXPECT_TRUE(j.ok()) << name;
    auto s = parse_system(j.value(), name);
    EXPECT_TRUE(s.ok()) << (s.ok() ? "" : s.error().message());
    return s.value();
}

// Runs the whole I/O pipeline (parse, `--set` overrides, build); returns the scenario or the
// first error.
inline Expected<Scenario> load(const std::string& text, const std::vector<std::string>& sets = {},
                               Purpose purpose = Purpose::train) {
    auto doc = parse_scenario_text(text, "test");
    if (!doc) return doc.error();
    auto over = apply_overrides(std::move(doc).value(), sets);
    if (!over) return over.error();
    return build_scenario(over.value(), purpose);
}

// The one-line refusal a training scenario gets, or "" when it builds.
inline std::string refusal(const std::string& json) {
    const Expected<Scenario> s = load(json);
    return s.ok() ? std::string() : s.error().message();
}

inline Scenario scenario(const std::string& json, Purpose purpose = Purpose::train) {
    auto doc = parse_scenario_text(json, "test");
    EXPECT_TRUE(doc.ok()) << (doc.ok() ? "" : doc.error().message());
    auto s = build_scenario(doc.value(), purpose);
    EXPECT_TRUE(s.ok()) << (s.ok() ? "" : s.error().message());
    return s.value();
}

// A machine with round numbers and no efficiency curves, so a test can time things by hand:
// bf16 and fp8 peaks 1 PFLOP/s at full efficiency, 1 TB/s HBM at full efficiency, no kernel
// latency; scale-up 100 GB/s and scale-out 10 GB/s per GPU, no latency, efficiency 1; domains
// of 8 GPUs.
inline SystemSpec round_system() {
    SystemSpec s;
    s.accel.matrix_flop_per_s[static_cast<size_t>(Precision::bf16)] = 1e15;
    s.accel.matrix_flop_per_s[static_cast<size_t>(Precision::fp8)] = 1e15;
    s.accel.vector_flop_per_s = 1e15;
    s.accel.memory_bytes = 80e9;
    s.accel.memory_bw_bytes_per_s = 1e12;
    s.scale_up_domain = 8;
    s.scale_up = {100e9, 0, 1};
    s.scale_out = {10e9, 0, 1};
    s.eff = Efficiency{};
    s.eff.gemm_max = s.eff.gemm_max_8bit = s.eff.gemm_max_4bit = s.eff.attention_max = s.eff.memory_max = 1;
    s.eff.gemm_half_dim = s.eff.gemm_half_tokens = s.eff.memory_half_bytes = 0;
    s.eff.kernel_latency_s = 0;
    s.eff.overlap_interference = 0;
    return s;
}

// A small GPT (8 layers, h = 64, 4 heads, ffn 256, vocab 1000, s = 128, learned positions, biases,
// layernorm, untied head). Parameters by hand: a layer is 12h^2 + 13h = 49,152 + 832 = 49,984;
// the embedding (1000 + 128) x 64 = 72,192; the head 1000 x 64 = 64,000; the final norm 2h = 128.
inline ModelSpec tiny_gpt() {
    ModelSpec m;
    m.name = "tiny";
    m.layers = 8;
    m.hidden = 64;
    m.heads = 4;
    m.kv_heads = 4;
    m.ffn_hidden = 256;
    m.vocab = 1000;
    m.seq_len = 128;
    return m;
}

// A small mixture of experts: tiny_gpt with 4 layers, SwiGLU experts (8 of them, top-2, expert
// FFN 128), RMSNorm, no biases, rotary positions, vocab 1000, untied head. By hand, per layer:
// attention 4h^2 = 16,384, two norms 2h = 128, router 8h = 512 (dense: 17,024), experts
// 8 x 3 x 64 x 128 = 196,608; per GPU 196,160 dense parameters beside them (embedding 64,000,
// head 64,000, final norm 64).
inline ModelSpec tiny_moe() {
    ModelSpec m = tiny_gpt();
    m.layers = 4;
    m.ffn_act = FfnAct::swiglu;
    m.norm = NormKind::rmsnorm;
    m.bias = false;
    m.position = PositionKind::rope;
    m.moe = {8, 2, 128};
    return m;
}

// The training workload of a hand case: `global_batch` sequences, defaults otherwise.
inline TrainingSpec batch_of(int64_t global_batch, bool dp_overlap = true) {
    TrainingSpec t;
    t.global_batch = global_batch;
    t.dp_overlap = dp_overlap;
    return t;
}

// A training step over hand-set layer costs: what assemble_step does with them, alone.
inline TrainResult step_over(const ModelSpec& m, const SystemSpec& s, const TrainingSpec& t, const ParallelConfig& p,
                             const LayerCosts& costs = {}) {
    return assemble_step({m, s, t}, p, costs);
}

// A Llama-style toy for hand computation: h = 64, 4 heads of 16, 2 KV heads (GQA), SwiGLU
// f = 128, V = 100, RMSNorm, no biases, RoPE, untied embeddings. Per layer: qkv 64x128,
// out 64x64, up 64x256, down 128x64 = 36,864 matrix weights + 2 x 64 norm weights.
inline ModelSpec tiny_llama(int64_t layers = 2) {
    ModelSpec m;
    m.name = "tiny";
    m.layers = layers;
    m.hidden = 64;
    m.heads = 4;
    m.kv_heads = 2;
    m.ffn_hidden = 128;
    m.ffn_act = FfnAct::swiglu;
    m.vocab = 100;
    m.seq_len = 1024;
    m.norm = NormKind::rmsnorm;
    m.bias = false;
    m.position = PositionKind::rope;
    return m;
}

// tiny_llama as a hybrid Mamba-Transformer: squared-ReLU FFN, no position signal, three layers
// "M-*". The mixer: expand 2 (d_inner 128), heads of 16 (8 of them), 2 groups, state 16,
// convolution of 4, chunks of 64 tokens.
inline ModelSpec tiny_hybrid() {
    ModelSpec m = tiny_llama(3);
    m.ffn_act = FfnAct::squared_relu;
    m.position = PositionKind::none;
    m.hybrid_pattern = "M-*";
    m.mamba = {.state_dim = 16, .groups = 2, .head_dim = 16, .expand = 2, .conv_kernel = 4, .chunk = 64};
    return m;
}

// Every pipeline GPU's blocks when m's layers split evenly over pp stages.
inline std::vector<StageLoad> stage_loads(const ModelSpec& m, int64_t pp) {
    ParallelConfig p;
    p.pp = pp;
    const SplitOutcome cut = split_layers(m.layers, p);
    EXPECT_TRUE(cut.ok()) << cut.problem;
    std::vector<StageLoad> out;
    if (!cut.ok()) return out;
    for (int64_t g = 0; g < pp; ++g) out.push_back(stage_load(m, cut.split, g));
    return out;
}

// An inference workload in fp16 throughout (math, weights, KV cache).
inline InferenceSpec fp16_workload(int64_t batch, int64_t in, int64_t out) {
    InferenceSpec s;
    s.batch = batch;
    s.input_len = in;
    s.output_len = out;
    s.precision = Precision::fp16;
    s.weight_precision = Precision::fp16;
    s.kv_precision = Precision::fp16;
    return s;
}

// The serving-search tests' workload: prompts of 300 tokens, 40 output tokens, chunks of 128,
// no framework memory.
inline InferenceSpec search_serving_workload() {
    InferenceSpec s = fp16_workload(1, 300, 40);
    s.prefill_chunk_tokens = 128;
    s.framework_overhead_bytes = 0;
    return s;
}

// The serving tests' workload: prompts of 100 tokens, 11 output tokens, chunks of 64, KV blocks
// of 64, no framework memory, the cache pool all of the free memory (what fits: the peak in HBM).
inline InferenceSpec toy_serving_workload() {
    InferenceSpec s = fp16_workload(1, 100, 11);
    s.prefill_chunk_tokens = 64;
    s.kv_block_tokens = 64;
    s.framework_overhead_bytes = 0;
    s.kv_cache_memory_fraction = 1.0;
    return s;
}

// A machine with round numbers and no calibration: every efficiency 1, no half-sizes, no
// latencies, so an op's time is max(FLOP / peak, bytes / bandwidth) and a test can state it.
// Matrix peak 100 TFLOP/s (16-bit), 200 (8-bit), 50 (fp32/tf32); HBM 1 TB/s; scale-up
// 100 GB/s with 1 us latency, scale-out 10 GB/s with 5 us; 8-GPU domains.
inline SystemSpec round_inference_system() {
    SystemSpec s;
    s.name = "round";
    s.accel.name = "round";
    auto peak = [&](Precision p, double v) { s.accel.matrix_flop_per_s[static_cast<size_t>(p)] = v; };
    peak(Precision::fp32, 50e12);
    peak(Precision::tf32, 50e12);
    peak(Precision::fp16, 100e12);
    peak(Precision::bf16, 100e12);
    peak(Precision::fp8, 200e12);
    peak(Precision::int8, 200e12);
    s.accel.vector_flop_per_s = 10e12;
    s.accel.memory_bytes = 80e9;
    s.accel.memory_bw_bytes_per_s = 1e12;
    s.node_gpus = 8;
    s.scale_up_domain = 8;
    s.scale_up = {100e9, 1e-6, 1.0};
    s.scale_out = {10e9, 5e-6, 1.0};
    s.eff = {.gemm_max = 1, .gemm_half_dim = 0, .gemm_half_tokens = 0, .gemm_max_8bit = 1, .attention_max = 1,
             .memory_max = 1, .memory_half_bytes = 0, .kernel_latency_s = 0, .scale_up = 1, .scale_out = 1,
             .overlap_interference = 0, .host_layer_overhead_s = 0, .host_collective_overhead_s = 0};
    return s;
}

// Round energy figures for the round machine: 100 W idle, 200 W active, the tensor array at
// 1 pJ/FLOP, HBM 4 pJ/bit, links 10 and 20 pJ/bit, TDP 1 kW.
inline EnergySpec round_energy() {
    EnergySpec e;
    e.tdp_w = 1000;
    e.idle_w = 100;
    e.active_w = 200;
    e.tensor_j_per_flop = 1e-12;
    e.hbm_j_per_bit = 4e-12;
    e.scale_up_j_per_bit = 10e-12;
    e.scale_out_j_per_bit = 20e-12;
    return e;
}

// An op list's entries by name, for hand checks of ops.cpp. Each returns a reference into `ops`:
// hold the LayerOps in a variable first (a temporary's ops die at the end of the statement).
// A missing name fails the test and returns an empty entry.
// One layer's shape: `batch` sequences of `s` tokens attending over themselves, tensor-parallel
// over `tp` ranks, with or without sequence parallelism.
inline LayerShape layer_shape(double batch, double s, int64_t tp, bool sp) {
    LayerShape x;
    x.batch = batch;
    x.q_len = s;
    x.kv_len = s;
    x.tp = tp;
    x.sequence_parallel = sp;
    return x;
}

inline const Op& op_named(const LayerOps& ops, std::string_view name) {
    for (const Op& op : ops.ops)
        if (op.name == name) return op;
    ADD_FAILURE() << "no op " << name;
    static const Op none;
    return none;
}

// The nth collective of that name (a layer issues one per GEMM).
inline const CommOp& comm_named(const LayerOps& ops, std::string_view name, int nth = 0) {
    for (const CommOp& c : ops.comms)
        if (c.name == name && nth-- == 0) return c;
    ADD_FAILURE() << "no collective " << name;
    static const CommOp none;
    return none;
}

// How many collectives of that name the layer issues.
inline int count_named(const LayerOps& ops, std::string_view name) {
    int n = 0;
    for (const CommOp& c : ops.comms) n += c.name == name;
    return n;
}

// How many ops of that name the layer runs.
inline int count_ops_named(const LayerOps& ops, std::string_view name) {
    int n = 0;
    for (const Op& o : ops.ops) n += o.name == name;
    return n;
}

// A GEMM op's m, n, k and batch, to compare with a hand-computed shape in one expectation.
inline std::vector<double> gemm_dims(const LayerOps& ops, std::string_view name) {
    const GemmShape g = op_named(ops, name).gemm;
    return {g.m, g.n, g.k, g.batch};
}

}  // namespace sm::testing
