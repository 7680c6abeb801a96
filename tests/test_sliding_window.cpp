// Sliding-window attention (model.sliding_window, model.sliding_window_pattern): the keys a
// windowed row attends to, the share of windowed layers, the attention op's work and K/V reads,
// the cache a windowed layer keeps, and the scenario's bounds. Every expected number is written
// out with its arithmetic on the toy model of test_helpers.hpp (4 heads of 16, 2 K/V heads).
#include <gtest/gtest.h>

#include "inference/inference.hpp"
#include "io/scenario.hpp"
#include "model/ops.hpp"
#include "test_helpers.hpp"

namespace sm {
namespace {

using testing::round_inference_system;
using testing::tiny_llama;

ModelSpec windowed(int64_t layers, int64_t window, int64_t pattern) {
    ModelSpec m = tiny_llama(layers);
    m.sliding_window = window;
    m.sliding_window_pattern = pattern;
    return m;
}

TEST(SlidingWindow, KeysPerRowByHand) {
    // Within the window nothing changes: the causal half of 80 keys, or all 80 for a decode row.
    EXPECT_DOUBLE_EQ(windowed_keys_per_row(80, 0.5, 100), 40.0);
    EXPECT_DOUBLE_EQ(windowed_keys_per_row(80, 1.0, 100), 80.0);
    // A decode row (or a bidirectional one) past the window sees the window.
    EXPECT_DOUBLE_EQ(windowed_keys_per_row(1000, 1.0, 100), 100.0);
    // Causal over 1,000 positions: position i sees min(i, 100); mean 100 - 100^2 / 2,000 = 95.
    EXPECT_DOUBLE_EQ(windowed_keys_per_row(1000, 0.5, 100), 95.0);
    // At the window's length both forms agree (100 / 2 = 100 - 100^2 / 200).
    EXPECT_DOUBLE_EQ(windowed_keys_per_row(100, 0.5, 100), 50.0);
}

TEST(SlidingWindow, WindowedShareFollowsThePattern) {
    EXPECT_EQ(windowed_layer_share(tiny_llama(4)), 0.0);           // no window
    EXPECT_EQ(windowed_layer_share(windowed(36, 128, 2)), 0.5);    // gpt-oss: 18 of 36
    EXPECT_EQ(windowed_layer_share(windowed(5, 128, 2)), 0.6);     // layers 0, 2, 4 of 5
    EXPECT_EQ(windowed_layer_share(windowed(12, 1024, 6)), 10.0 / 12.0);  // Gemma 3: five of six
    EXPECT_EQ(windowed_layer_share(windowed(4, 128, 0)), 1.0);     // Mistral 7B v0.1: every layer
    EXPECT_EQ(windowed_layer_share(windowed(4, 128, 1)), 0.0);     // every layer full
}

// A copy: callers pass op lists that are temporaries.
Op attention_of(const LayerOps& ops) {
    for (const Op& op : ops.ops)
        if (op.kind == OpKind::attention) return op;
    ADD_FAILURE() << "no attention op";
    return {};
}

LayerShape shape(double q_len, double kv_len, double causal_fraction) {
    LayerShape s;
    s.batch = 1;
    s.q_len = q_len;
    s.kv_len = kv_len;
    s.causal_fraction = causal_fraction;
    return s;
}

TEST(SlidingWindow, DecodeAttentionSpansTheWindow) {
    // One decode row at context 1,000, every layer windowed at 100: QK^T and PV over 4 heads x
    // 100 keys x (16 + 16) = 2 x 4 x 100 x 32 = 25,600 FLOP; K and V of 100 positions x 2 K/V
    // heads x 32 = 6,400 elements; the kernel's loop spans 100 keys.
    const LayerOps w = layer_ops(windowed(4, 100, 0), shape(1, 1000, 1.0), LayerKind::dense);
    const Op& a = attention_of(w);
    EXPECT_DOUBLE_EQ(a.attn_flop, 25600.0);
    EXPECT_DOUBLE_EQ(a.attn_model_flop, 25600.0);
    EXPECT_DOUBLE_EQ(a.attn_kv_elems, 6400.0);
    EXPECT_DOUBLE_EQ(a.attn_kv_len, 100.0);
    // Half the layers windowed (pattern 2): keys 0.5 x 1,000 + 0.5 x 100 = 550 -> 140,800 FLOP and
    // 35,200 K/V elements; the loop length weighted by the work, (500 x 1,000 + 50 x 100) / 550.
    const Op& h = attention_of(layer_ops(windowed(4, 100, 2), shape(1, 1000, 1.0), LayerKind::dense));
    EXPECT_DOUBLE_EQ(h.attn_flop, 140800.0);
    EXPECT_DOUBLE_EQ(h.attn_kv_elems, 35200.0);
    EXPECT_DOUBLE_EQ(h.attn_kv_len, (500.0 * 1000.0 + 50.0 * 100.0) / 550.0);
    // Without a window: all 1,000 keys, 256,000 FLOP.
    EXPECT_DOUBLE_EQ(attention_of(layer_ops(tiny_llama(4), shape(1, 1000, 1.0), LayerKind::dense)).attn_flop, 256000.0);
}

TEST(SlidingWindow, PrefillComputesTheBandOnly) {
    // A causal 1,000-token prompt, every layer windowed at 100: 95 keys per row on average
    // (KeysPerRowByHand), 2 x 4 heads x 1,000 rows x 95 x 32 = 24,320,000 FLOP executed; the
    // usual convention counts the band whole (100 keys per row): 25,600,000. Every K/V row is
    // read once: 1,000 positions x 2 heads x 32 = 64,000 elements.
    const Op& a = attention_of(layer_ops(windowed(4, 100, 0), shape(1000, 1000, 0.5), LayerKind::dense));
    EXPECT_DOUBLE_EQ(a.attn_flop, 24320000.0);
    EXPECT_DOUBLE_EQ(a.attn_model_flop, 25600000.0);
    EXPECT_DOUBLE_EQ(a.attn_kv_elems, 64000.0);
    // A window longer than the prompt changes nothing: 500 keys per row, 128,000,000 FLOP.
    const Op& wide = attention_of(layer_ops(windowed(4, 5000, 0), shape(1000, 1000, 0.5), LayerKind::dense));
    EXPECT_DOUBLE_EQ(wide.attn_flop, 128000000.0);
    EXPECT_DOUBLE_EQ(wide.attn_kv_len, 1000.0);
}

TEST(SlidingWindow, WindowedLayersCacheOnlyTheWindow) {
    InferenceSpec s = testing::fp16_workload(1, 900, 100);
    ParallelConfig p;
    // 4 layers x 1,000 tokens x (K and V) 2 x 2 heads x 16 x 2 B = 512,000 B without a window.
    EXPECT_DOUBLE_EQ(kv_cache_bytes_per_gpu(tiny_llama(4), p, s, 1000), 512000.0);
    // Every layer windowed at 100: 100 tokens each, 51,200 B.
    EXPECT_DOUBLE_EQ(kv_cache_bytes_per_gpu(windowed(4, 100, 0), p, s, 1000), 51200.0);
    // Half of them: 4 x (0.5 x 1,000 + 0.5 x 100) x 128 B = 281,600 B.
    EXPECT_DOUBLE_EQ(kv_cache_bytes_per_gpu(windowed(4, 100, 2), p, s, 1000), 281600.0);
    // Shorter contexts than the window keep every token.
    EXPECT_DOUBLE_EQ(kv_cache_bytes_per_gpu(windowed(4, 100, 0), p, s, 50), 25600.0);
    // An engine that reserves the whole sequence for windowed layers too (TensorRT-LLM 1.2) holds
    // what full attention holds: 512,000 B.
    s.window_cache = WindowCache::sequence;
    EXPECT_DOUBLE_EQ(kv_cache_bytes_per_gpu(windowed(4, 100, 0), p, s, 1000), 512000.0);
}

TEST(SlidingWindow, AShorterWindowIsNeverSlower) {
    // Property: the decode step and the prefill never get slower as the window shrinks, and a
    // window no longer than the context costs what full attention costs.
    const SystemSpec sys = round_inference_system();
    const InferenceSpec s = testing::fp16_workload(8, 2000, 100);
    ParallelConfig p;
    double prev_decode = 0, prev_prefill = 0;
    for (int64_t w : {16, 64, 256, 1024, 4096}) {
        const ModelSpec m = windowed(4, w, 2);
        const double d = decode_step_cost({m, sys, s}, p, 2050).total_s();
        const double f = prefill_cost({m, sys, s}, p).total_s();
        EXPECT_GE(d, prev_decode) << w;
        EXPECT_GE(f, prev_prefill) << w;
        prev_decode = d;
        prev_prefill = f;
    }
    const ModelSpec full = tiny_llama(4);
    EXPECT_DOUBLE_EQ(prev_decode, decode_step_cost({full, sys, s}, p, 2050).total_s());
    EXPECT_DOUBLE_EQ(prev_prefill, prefill_cost({full, sys, s}, p).total_s());
    EXPECT_LT(decode_step_cost({windowed(4, 16, 2), sys, s}, p, 2050).total_s(), prev_decode);
}

const char* kLlama8b = R"({"model": {"preset": "llama3-8b"}, "system": {"preset": "dgx-h100"}})";

InputError window_error(const std::vector<std::string>& sets) {
    auto r = testing::load(kLlama8b, sets, Purpose::infer);
    EXPECT_FALSE(r.ok());
    return r.ok() ? InputError{} : r.error();
}

TEST(SlidingWindow, ScenarioFieldsAreBounded) {
    auto ok = testing::load(kLlama8b, {"model.sliding_window=4096", "model.sliding_window_pattern=2"}, Purpose::infer);
    ASSERT_TRUE(ok.ok()) << ok.error().message();
    EXPECT_EQ(ok.value().model.sliding_window, 4096);
    EXPECT_EQ(ok.value().model.sliding_window_pattern, 2);
    EXPECT_EQ(window_error({"model.sliding_window=0"}).path, "model.sliding_window");
    EXPECT_EQ(window_error({"model.sliding_window=128", "model.sliding_window_pattern=-1"}).path, "model.sliding_window_pattern");
    EXPECT_EQ(window_error({"model.sliding_window=128", "model.sliding_window_pattern=33"}).path, "model.sliding_window_pattern");  // 32 layers
    EXPECT_EQ(window_error({"model.sliding_window_pattern=2"}).path, "model.sliding_window_pattern");  // no window
    auto seq = testing::load(kLlama8b, {"model.sliding_window=128", "inference.window_cache=sequence"}, Purpose::infer);
    ASSERT_TRUE(seq.ok()) << seq.error().message();
    EXPECT_EQ(seq.value().inference.window_cache, WindowCache::sequence);
    EXPECT_EQ(ok.value().inference.window_cache, WindowCache::window);  // the default
    EXPECT_EQ(window_error({"inference.window_cache=cyclic"}).path, "inference.window_cache");
    const InputError unfused = window_error({"model.sliding_window=128", "model.attention=unfused"});
    EXPECT_EQ(unfused.path, "model.sliding_window");
    EXPECT_NE(unfused.allowed.find("unfused"), std::string::npos);
}

}  // namespace
}  // namespace sm
