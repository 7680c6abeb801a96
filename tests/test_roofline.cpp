// The per-op roofline of inference: intensities, balance points and bounds.
#include <gtest/gtest.h>

#include "inference/roofline.hpp"
#include "test_helpers.hpp"

namespace sm {
namespace {

using testing::model_preset;
using testing::system_preset;

InferenceSpec workload(int64_t batch) {
    InferenceSpec s;
    s.batch = batch;
    s.input_len = 400;
    s.output_len = 200;
    s.precision = Precision::fp16;
    s.weight_precision = Precision::fp16;
    s.kv_precision = Precision::fp16;
    return s;
}

const RooflineRow* find(const Roofline& r, std::string_view phase, std::string_view name) {
    for (const RooflineRow& row : r.rows)
        if (row.phase == phase && row.name == name) return &row;
    return nullptr;
}

TEST(Roofline, BalancePointIsPeakOverBandwidth) {
    const ModelSpec m = model_preset("llama2-7b");
    const SystemSpec a100 = system_preset("dgx-a100-80gb");
    const InferenceSpec s = workload(1);
    const Roofline r = inference_roofline({m, a100, s}, ParallelConfig{}, 0);
    EXPECT_DOUBLE_EQ(r.balance, 312e12 / 2.039e12);
    EXPECT_EQ(r.context, 400 + 100);  // default: input_len + output_len / 2
}

// Rows of the toy model on the round machine with HBM at 4 TB/s, GEMMs at half of peak,
// attention at a quarter, streaming at 80% of bandwidth and 2 us per kernel: each row's
// numbers by hand.
TEST(Roofline, RowsByHand) {
    const ModelSpec m = testing::tiny_llama(2);
    SystemSpec sys = testing::round_inference_system();
    sys.accel.memory_bw_bytes_per_s = 4e12;
    sys.eff.gemm_max = 0.5;
    sys.eff.attention_max = 0.25;
    sys.eff.memory_max = 0.8;
    sys.eff.kernel_latency_s = 2e-6;
    InferenceSpec s = workload(1);
    s.input_len = 100;
    s.output_len = 20;
    const Roofline r = inference_roofline({m, sys, s}, ParallelConfig{}, 0);
    EXPECT_EQ(r.context, 110);
    EXPECT_EQ(inference_roofline({m, sys, s}, ParallelConfig{}, 1).context, 1);  // given: kept
    EXPECT_DOUBLE_EQ(r.balance, 100e12 / 4e12);

    // Decode ffn_up: [1 x 64] x [64 x 256]: 2 x 256 x 64 = 32,768 FLOP; (64 + 16,384 + 256) x 2 B
    // = 33,408 B. Compute 32,768 / 50e12; memory 33,408 / 3.2e12: memory-bound.
    // A row by hand: FLOP, bytes, the compute and memory terms at their achievable rates, and
    // the time (the larger term + 2 us launch latency) with what bounds it.
    auto expect_row = [&](const char* phase, const char* name, double flop, double bytes, double rate, Bound bound) {
        SCOPED_TRACE(std::string(phase) + " " + name);
        const RooflineRow* row = find(r, phase, name);
        ASSERT_NE(row, nullptr);
        EXPECT_EQ(row->block, "layer");
        EXPECT_EQ(row->count, 2.0);
        EXPECT_DOUBLE_EQ(row->flop, flop);
        EXPECT_DOUBLE_EQ(row->bytes, bytes);
        EXPECT_DOUBLE_EQ(row->intensity, flop / bytes);
        EXPECT_DOUBLE_EQ(row->balance, 25.0);  // the matrix peak's, whatever fraction the op reaches
        EXPECT_DOUBLE_EQ(row->compute_s, flop / rate);
        EXPECT_DOUBLE_EQ(row->memory_s, bytes / 3.2e12);
        EXPECT_DOUBLE_EQ(row->time_s, std::max(flop / rate, bytes / 3.2e12) + 2e-6);
        EXPECT_EQ(row->bound, bound);
    };
    // Decode ffn_up: [1 x 64] x [64 x 256]: 2 x 256 x 64 = 32,768 FLOP; (64 + 16,384 + 256) x 2 B
    // = 33,408 B. Compute at 50 TFLOP/s, memory at 3.2 TB/s: memory-bound.
    expect_row("decode", "ffn_up", 32768, 33408, 50e12, Bound::memory);
    // Prefill ffn_up: [100 x 64] x [64 x 256]: 3,276,800 FLOP; (6,400 + 16,384 + 25,600) x 2 B
    // = 96,768 B (intensity 33.9 above the effective ridge 50e12 / 3.2e12 = 15.6): compute-bound.
    expect_row("prefill", "ffn_up", 3276800, 96768, 50e12, Bound::compute);
    // Decode attention at context 110: 4 x 4 heads x 110 x 16 = 28,160 FLOP at 25 TFLOP/s; Q and
    // O 2 x 64 x 2 B + K and V 2 x 110 x 2 x 16 x 2 B = 14,336 B.
    expect_row("decode", "attention", 28160, 14336, 25e12, Bound::memory);
    // Decode RMSNorm of one 64-wide token: 4 FLOP per element, 256 vector FLOP on the 10 TFLOP/s
    // vector units (no matrix FLOP; the balance is the vector units': 10e12 / 4e12); it reads
    // and writes 64 x 2 B: 256 B at 3.2 TB/s.
    const RooflineRow* norm = find(r, "decode", "attn_norm");
    ASSERT_NE(norm, nullptr);
    EXPECT_EQ(norm->flop, 0.0);
    EXPECT_DOUBLE_EQ(norm->balance, 2.5);
    EXPECT_DOUBLE_EQ(norm->compute_s, 256 / 10e12);
    EXPECT_DOUBLE_EQ(norm->memory_s, 256 / 3.2e12);
    EXPECT_DOUBLE_EQ(norm->time_s, 256 / 3.2e12 + 2e-6);
    EXPECT_EQ(norm->bound, Bound::memory);

    // The head: one position's logits in both phases, [1 x 64] x [64 x 100].
    for (const char* phase : {"prefill", "decode"}) {
        const RooflineRow* h = find(r, phase, "lm_head");
        ASSERT_NE(h, nullptr);
        EXPECT_EQ(h->block, "head");
        EXPECT_EQ(h->count, 1.0);
        EXPECT_DOUBLE_EQ(h->flop, 2.0 * 64 * 100);
    }

    // Collectives at tp 2, pp 2 (4 layers): a tp all-reduce of 1 x 100 x 64 x 2 B in prefill
    // (12,800 B / 100 GB/s + 2 x 1 us), one pp hop, the logits (1 x 100 x 2 B) gathered.
    const ModelSpec m4 = testing::tiny_llama(4);
    ParallelConfig tp2;
    tp2.tp = 2;
    tp2.pp = 2;
    const Roofline c = inference_roofline({m4, sys, s}, tp2, 0);
    const RooflineRow* ar = nullptr;
    int layer_all_reduces = 0;
    for (const RooflineRow& row : c.rows)
        if (row.phase == "prefill" && row.block == "layer" && row.name == "tp_all_reduce") {
            ar = &row;
            ++layer_all_reduces;
        }
    EXPECT_EQ(layer_all_reduces, 2);  // after attention and after the MLP
    ASSERT_NE(ar, nullptr);
    EXPECT_EQ(ar->bound, Bound::network);
    EXPECT_EQ(ar->count, 4.0);
    EXPECT_DOUBLE_EQ(ar->bytes, 12800.0);
    EXPECT_DOUBLE_EQ(ar->time_s, 12800 / 100e9 + 2e-6);
    const RooflineRow* lg = find(c, "decode", "logits_all_gather");
    ASSERT_NE(lg, nullptr);
    EXPECT_DOUBLE_EQ(lg->bytes, 200.0);
    EXPECT_DOUBLE_EQ(lg->time_s, 0.5 * 200 / 100e9 + 1e-6);
    // Prefill samples one position too: the same 200 B gathered.
    EXPECT_DOUBLE_EQ(find(c, "prefill", "logits_all_gather")->bytes, 200.0);
    const RooflineRow* pp = find(c, "decode", "pp_send");
    ASSERT_NE(pp, nullptr);
    EXPECT_EQ(pp->count, 1.0);
    EXPECT_DOUBLE_EQ(pp->bytes, 128.0);
    // tp 2 across 2 x 2 GPUs: the pipeline peers sit 2 ranks apart in one 8-GPU domain.
    EXPECT_DOUBLE_EQ(pp->time_s, 128 / 100e9 + 1e-6);
}

// The SRAM level in the table: prefill ffn_up of the toy model, [100 x 64] x [64 x 256] in fp16,
// on a machine with 8 KiB of SRAM at 1 GB/s. The tile side is sqrt(8,192 / (2 + 2 + 4)) = 32:
// A (100 x 64 x 2 = 12,800 B) is read 256 / 32 = 8 times, B (64 x 256 x 2 = 32,768 B) 100 / 32 =
// 3.125 times, C (100 x 256 x 2 = 51,200 B) written once: 102,400 + 102,400 + 51,200 = 256,000 B
// of HBM traffic. The 256 x 256 core tile covers the output, so SRAM carries no more than HBM
// delivers: 256,000 B at 1 GB/s = 256 us, the largest term.
TEST(Roofline, SramTermInTheTable) {
    const ModelSpec m = testing::tiny_llama(2);
    SystemSpec sys = testing::round_inference_system();
    sys.accel.sram_bytes = 8192;
    sys.accel.sram_bw_bytes_per_s = 1e9;
    InferenceSpec s = workload(1);
    s.input_len = 100;
    s.output_len = 20;
    const Roofline r = inference_roofline({m, sys, s}, ParallelConfig{}, 0);
    const RooflineRow* row = find(r, "prefill", "ffn_up");
    ASSERT_NE(row, nullptr);
    EXPECT_DOUBLE_EQ(row->bytes, 256000.0);
    EXPECT_DOUBLE_EQ(row->sram_bytes, 256000.0);
    EXPECT_DOUBLE_EQ(row->sram_s, 256e-6);
    EXPECT_DOUBLE_EQ(row->time_s, 256e-6 + sys.eff.kernel_latency_s);
    EXPECT_EQ(row->bound, Bound::sram);
    // Without an SRAM level the same op reads each operand once and has no SRAM term.
    sys.accel.sram_bytes = sys.accel.sram_bw_bytes_per_s = 0;
    const Roofline r0 = inference_roofline({m, sys, s}, ParallelConfig{}, 0);
    const RooflineRow* plain = find(r0, "prefill", "ffn_up");
    ASSERT_NE(plain, nullptr);
    EXPECT_DOUBLE_EQ(plain->bytes, 12800.0 + 32768.0 + 51200.0);
    EXPECT_EQ(plain->sram_s, 0.0);
}

TEST(Roofline, SplitSumsRowTimesByBound) {
    Roofline r;
    auto row = [&](const char* phase, Bound b, double t, double count) {
        RooflineRow x;
        x.phase = phase;
        x.bound = b;
        x.time_s = t;
        x.count = count;
        r.rows.push_back(x);
    };
    row("decode", Bound::compute, 1.0, 2);
    row("decode", Bound::memory, 0.5, 3);
    row("decode", Bound::network, 0.25, 4);
    row("decode", Bound::memory, 0.125, 1);
    row("prefill", Bound::compute, 100.0, 1);
    const BoundSplit b = phase_split(r, "decode");
    EXPECT_DOUBLE_EQ(b.compute_s, 2.0);
    EXPECT_DOUBLE_EQ(b.memory_s, 1.625);
    EXPECT_DOUBLE_EQ(b.network_s, 1.0);
    EXPECT_EQ(b.dominant(), Bound::compute);
    EXPECT_EQ((BoundSplit{1, 2, 0}).dominant(), Bound::memory);
    EXPECT_EQ((BoundSplit{1, 2, 3}).dominant(), Bound::network);
    EXPECT_EQ((BoundSplit{3, 2, 3}).dominant(), Bound::compute);  // network must exceed both
    EXPECT_EQ((BoundSplit{1, 3, 3}).dominant(), Bound::memory);   // a tie with memory is memory's
    EXPECT_EQ((BoundSplit{2, 2, 1}).dominant(), Bound::memory);   // a tie is memory's
    EXPECT_EQ((BoundSplit{1, 2, 0, 3}).dominant(), Bound::sram);  // SRAM-bound time the largest
    EXPECT_EQ((BoundSplit{1, 2, 3, 2.5}).dominant(), Bound::network);
    EXPECT_EQ((BoundSplit{1, 2, 0, 2}).dominant(), Bound::memory);  // SRAM must exceed both
    row("decode", Bound::sram, 2.0, 2);
    EXPECT_DOUBLE_EQ(phase_split(r, "decode").sram_s, 4.0);
    EXPECT_EQ(to_string(Bound::sram), "sram");
    EXPECT_EQ(to_string(Bound::compute), "compute");
    EXPECT_EQ(to_string(Bound::memory), "memory");
    EXPECT_EQ(to_string(Bound::network), "network");
}

TEST(Roofline, DecodeGemvIsMemoryBoundPrefillGemmComputeBound) {
    const ModelSpec m = model_preset("llama2-13b");
    for (const char* name : {"dgx-a100-80gb", "dgx-h100", "dgx-b200"}) {
        const SystemSpec sys = system_preset(name);
        const Roofline r = inference_roofline({m, sys, workload(1)}, ParallelConfig{}, 0);
        for (const char* op : {"qkv_proj", "attn_out_proj", "ffn_up", "ffn_down"}) {
            const RooflineRow* d = find(r, "decode", op);
            const RooflineRow* p = find(r, "prefill", op);
            ASSERT_TRUE(d && p) << op;
            EXPECT_EQ(d->bound, Bound::memory) << name << " " << op;
            EXPECT_LT(d->intensity, d->balance) << name << " " << op;
            EXPECT_EQ(p->bound, Bound::compute) << name << " " << op;
            EXPECT_EQ(d->count, 40.0);
        }
        // One decode GEMV reads each weight once: 2 FLOP per 2-byte weight, ~1 FLOP/B.
        const RooflineRow* up = find(r, "decode", "ffn_up");
        EXPECT_NEAR(up->intensity, 1.0, 0.01);
        EXPECT_DOUBLE_EQ(up->flop, 2.0 * 5120 * 2 * 13824);
    }
}

TEST(Roofline, CollectivesAppearWithTensorParallelism) {
    const ModelSpec m = model_preset("llama2-7b");
    const SystemSpec sys = system_preset("dgx-h100");
    ParallelConfig p;
    EXPECT_EQ(find(inference_roofline({m, sys, workload(1)}, p, 0), "decode", "tp_all_reduce"), nullptr);
    p.tp = 4;
    const Roofline r = inference_roofline({m, sys, workload(2)}, p, 0);
    const RooflineRow* ar = find(r, "decode", "tp_all_reduce");
    ASSERT_NE(ar, nullptr);
    EXPECT_EQ(ar->bound, Bound::network);
    EXPECT_DOUBLE_EQ(ar->bytes, 2.0 * 4096 * 2);  // batch x hidden x fp16
    EXPECT_GT(ar->time_s, 0.0);
    // A decode step's op times add up to the modelled step less the host dispatch overhead.
    const BoundSplit b = phase_split(r, "decode");
    const PassCost step = decode_step_cost({m, sys, workload(2)}, p, static_cast<double>(r.context));
    EXPECT_NEAR(b.compute_s + b.memory_s + b.network_s, step.total_s() - step.host_s, 1e-9);
}

TEST(Roofline, LongerContextMovesMoreCacheBytes) {
    const ModelSpec m = model_preset("llama2-7b");
    const SystemSpec sys = system_preset("dgx-h100");
    const Roofline a = inference_roofline({m, sys, workload(1)}, ParallelConfig{}, 1000);
    const Roofline b = inference_roofline({m, sys, workload(1)}, ParallelConfig{}, 2000);
    const double kv_per_token = 2.0 * 4096 * 2;  // K and V, 32 heads x 128, fp16
    EXPECT_DOUBLE_EQ(find(b, "decode", "attention")->bytes - find(a, "decode", "attention")->bytes, 1000 * kv_per_token);
}

}  // namespace
}  // namespace sm
