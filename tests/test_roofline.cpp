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
    for (const RooflineRow& row : r.rows) {
        if (row.bound == Bound::network) continue;
        EXPECT_DOUBLE_EQ(row.intensity, row.bytes > 0 ? row.flop / row.bytes : 0.0) << row.name;
        EXPECT_GE(row.time_s, std::max(row.compute_s, row.memory_s)) << row.name;  // + launch latency
    }
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
