// Energy and cost (docs/CALIBRATION.md, "Energy and cost"): the work the costed ops and
// collectives add up to, its energy, the TDP calibration, system.energy as read, and the bound
// that a GPU's average power never exceeds its TDP. Expectations are hand arithmetic.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>

#include "hardware/energy.hpp"
#include "inference/inference.hpp"
#include "inference/serving.hpp"
#include "io/report.hpp"
#include "io/scenario.hpp"
#include "test_helpers.hpp"
#include "training/block_cost.hpp"

namespace sm {
namespace {

using testing::load;

// round_system with energy figures: TDP 1000 W, idle 100 W, HBM 4 pJ/bit, scale-up 5 pJ/bit,
// scale-out 6 pJ/bit; active and tensor power at the default split (hand: below).
SystemSpec round_energy_system() {
    SystemSpec s = testing::round_system();
    s.accel.matrix_flop_per_s[static_cast<size_t>(Precision::fp8)] = 2e15;
    // HBM 1e12 B/s x 8 x 4e-12 = 32 W; scale-up both ways 2 x 100e9 x 8 x 5e-12 = 8 W; the
    // dynamic budget 1000 - 100 - 32 - 8 = 860 W, half active (430 W), half the tensors: 430 W
    // at 1e15 FLOP/s, 4.3e-13 J per FLOP.
    s.energy = {1000, 100, 4.3e-13, 4e-12, 5e-12, 6e-12, 430};
    return s;
}

TEST(Energy, CalibrationAndPerFlopByHand) {
    const SystemSpec s = round_energy_system();
    EXPECT_NEAR(dynamic_budget_w(s), 860.0, 1e-9);    // 1000 - 100 - 32 - 8
    EXPECT_NEAR(tdp_calibrated_j_per_flop(s), 4.3e-13, 1e-25);  // (860 - 430 active) / 1e15
    EXPECT_NEAR(tensor_power_w(s), 430.0, 1e-9);
    EXPECT_NEAR(full_load_power_w(s), 1000.0, 1e-9);  // 100 + 430 + 430 + 32 + 8
    EXPECT_NEAR(j_per_flop(s, Precision::bf16), 4.3e-13, 1e-25);
    EXPECT_NEAR(j_per_flop(s, Precision::fp8), 2.15e-13, 1e-25);  // 430 W at 2e15 FLOP/s
    EXPECT_EQ(j_per_flop(s, Precision::fp4), 0.0);                 // not supported
    SystemSpec slow = s;
    slow.eff.clock_fraction = 0.5;  // half the sustained rate: twice the J/FLOP at TDP
    EXPECT_NEAR(tdp_calibrated_j_per_flop(slow), 8.6e-13, 1e-24);
    SystemSpec lazy = s;
    lazy.energy.active_w = 0;  // no active power: the tensors take the whole 860 W
    EXPECT_NEAR(tdp_calibrated_j_per_flop(lazy), 8.6e-13, 1e-24);
}

TEST(Energy, PerFlopFiguresAtTheEdgesOfThePeak) {
    // No bf16 peak: nothing to calibrate against, and no energy per FLOP (not a division by 0).
    SystemSpec none = round_energy_system();
    none.accel.matrix_flop_per_s = {};
    EXPECT_EQ(tdp_calibrated_j_per_flop(none), 0.0);
    EXPECT_EQ(j_per_flop(none, Precision::bf16), 0.0);
    // A peak of exactly 1 FLOP/s: the formulas hold there too (860 W - 430 W active over 1 FLOP/s;
    // the tensor power 4.3e-13 W over 1 FLOP/s).
    SystemSpec one = round_energy_system();
    one.accel.matrix_flop_per_s = {};
    one.accel.matrix_flop_per_s[static_cast<size_t>(Precision::bf16)] = 1.0;
    EXPECT_NEAR(tdp_calibrated_j_per_flop(one), 430.0, 1e-9);
    EXPECT_NEAR(j_per_flop(one, Precision::bf16), 4.3e-13, 1e-25);
}

TEST(Energy, EnergyOfWorkByHand) {
    const SystemSpec s = round_energy_system();
    // 2 s of tensor engagement within 2.5 s of kernels, on 4 GPUs over 3 s.
    const Energy e = energy_of(s, Work{2.0, 2.5, 1e9, 1e9, 1e8}, 3.0, 4.0);
    EXPECT_NEAR(e.compute_j, 860.0, 1e-9);       // 2 s at 430 W
    EXPECT_NEAR(e.active_j, 1075.0, 1e-9);       // 2.5 s at 430 W
    EXPECT_NEAR(e.hbm_j, 0.032, 1e-15);          // 1e9 x 8 x 4e-12
    EXPECT_NEAR(e.scale_up_j, 0.08, 1e-15);      // both ends: 2 x 1e9 x 8 x 5e-12
    EXPECT_NEAR(e.scale_out_j, 0.0096, 1e-15);   // 2 x 1e8 x 8 x 6e-12
    EXPECT_NEAR(e.idle_j, 1200.0, 1e-9);         // 100 W x 3 s x 4 GPUs
    EXPECT_NEAR(e.total_j(), 3135.1216, 1e-9);   // 860 + 1075 + 1200 + 0.032 + 0.08 + 0.0096
    EXPECT_NEAR(e.gpu_j(), 3135.112, 1e-9);      // the NICs' share is outside the GPUs
    // Busy seconds never exceed the wall's (4 GPUs x 3 s = 12 s), tensor seconds the busy ones:
    // 12 s at 430 W each, the most a GPU can draw.
    const Energy capped = energy_of(s, Work{20.0, 30.0, 0, 0, 0}, 3.0, 4.0);
    EXPECT_NEAR(capped.compute_j, 5160.0, 1e-9);
    EXPECT_NEAR(capped.active_j, 5160.0, 1e-9);
    SystemSpec priced = s;
    priced.price_per_gpu_hour = 2.5;
    EXPECT_NEAR(cost_usd(priced, 7200.0, 4.0), 20.0, 1e-12);  // 4 GPUs x 2 h x $2.5
}

TEST(Energy, OnChipLevelByHand) {
    // 0.1 pJ per SRAM bit at 2e13 B/s: 2e13 x 8 x 1e-13 = 16 W at full bandwidth, taken from the
    // dynamic budget (860 - 16 = 844 W), so a GPU fully busy still draws its TDP.
    SystemSpec s = round_energy_system();
    s.accel.sram_bw_bytes_per_s = 2e13;
    s.energy.sram_j_per_bit = 1e-13;
    EXPECT_NEAR(dynamic_budget_w(s), 844.0, 1e-9);
    EXPECT_NEAR(tdp_calibrated_j_per_flop(s), 4.14e-13, 1e-25);  // (844 - 430 active) / 1e15
    s.energy.tensor_j_per_flop = 4.14e-13;
    EXPECT_NEAR(full_load_power_w(s), 1000.0, 1e-9);  // 100 + 430 + 414 + 16 + 32 + 8
    Work w;
    w.sram_bytes = 5e9;
    w.hbm_bytes = 1e9;
    const Energy e = energy_of(s, w, 1.0, 1.0);
    EXPECT_NEAR(e.sram_j, 4e-3, 1e-15);  // 5e9 x 8 x 1e-13
    EXPECT_NEAR(e.hbm_j, 0.032, 1e-15);
    EXPECT_NEAR(e.total_j(), 100.0 + 4e-3 + 0.032, 1e-9);  // idle 100 W x 1 s besides
}

TEST(Energy, OnChipBytesOfAGemmAndAnElementwiseOp) {
    // A GEMM's on-chip bytes are its SRAM traffic in each pass; a kernel with no SRAM figure (an
    // element-wise op) streams its HBM bytes through L2 once.
    OpCost gemm;
    gemm.fwd_sram_bytes = 300;
    gemm.fwd_bytes = 100;
    gemm.dgrad_sram_bytes = 250;
    gemm.dgrad_bytes = 90;
    gemm.wgrad_sram_bytes = 40;  // below its HBM bytes: at least what comes from HBM
    gemm.wgrad_bytes = 60;
    EXPECT_EQ(fwd_onchip_bytes(gemm), 300.0);
    EXPECT_EQ(bwd_onchip_bytes(gemm), 250.0 + 60.0);
    OpCost eltwise;
    eltwise.fwd_bytes = 64;
    eltwise.dgrad_bytes = 128;
    EXPECT_EQ(fwd_onchip_bytes(eltwise), 64.0);
    EXPECT_EQ(bwd_onchip_bytes(eltwise), 128.0);
}

// One weight GEMM (1024^3, bf16) and one tensor-parallel all-reduce of 1 MiB, costed as a block.
LayerOps gemm_and_all_reduce() {
    LayerOps ops;
    Op g;
    g.name = "w";
    g.kind = OpKind::gemm;
    g.gemm = {1024, 1024, 1024, 1};
    g.weight = true;
    ops.ops.push_back(g);
    CommOp c;
    c.name = "ar";
    c.kind = Collective::all_reduce;
    c.group = CommGroup::tp;
    c.pass = Pass::fwd;
    c.bytes = 1048576;
    ops.comms.push_back(c);
    return ops;
}

TEST(Energy, BlockWorkByHand) {
    SystemSpec s = round_energy_system();
    s.eff.gemm_max = 0.5;  // the tensors stay engaged twice FLOP / peak
    CommSpans spans;
    spans.span[idx(CommGroup::tp)] = {4, 4, 1};
    const BlockCost b = cost_block(gemm_and_all_reduce(), s, CostContext{}, spans, Recompute::none, 0.0);
    // Forward, data and weight gradient: 3 x 2 x 1024^3 = 6,442,450,944 FLOP at half of 1e15.
    EXPECT_NEAR(b.work.tensor_s, 6442450944.0 / 0.5e15, 1e-20);
    // Forward and data gradient read A and B and write C in bf16: 3 x 2^20 x 2 B each; the weight
    // gradient reads two bf16 operands and writes fp32: 2^20 x (2 + 2 + 4). 20 x 2^20 in all.
    EXPECT_DOUBLE_EQ(b.work.hbm_bytes, 20.0 * 1048576);
    // Each pass is memory-bound (6 MiB at 1e12 B/s = 6.29 us > 2^31 FLOP at 5e14 = 4.29 us), so
    // the kernels run for the bytes' time: 20 x 2^20 B at 1e12 B/s, the tensors engaged 12.9 us of it.
    EXPECT_NEAR(b.work.kernel_s, 20.0 * 1048576 / 1e12, 1e-18);
    // A ring all-reduce over 4 GPUs sends 2 x 3/4 of the buffer from each.
    EXPECT_DOUBLE_EQ(b.work.scale_up_bytes, 1.5 * 1048576);
    EXPECT_EQ(b.work.scale_out_bytes, 0.0);

    // Full recompute runs the forward once more: its FLOP, its bytes and its collective.
    const BlockCost r = cost_block(gemm_and_all_reduce(), s, CostContext{}, spans, Recompute::full, 0.0);
    EXPECT_NEAR(r.work.tensor_s, 4.0 * 2147483648.0 / 0.5e15, 1e-20);
    EXPECT_DOUBLE_EQ(r.work.hbm_bytes, 26.0 * 1048576);
    EXPECT_NEAR(r.work.kernel_s, 26.0 * 1048576 / 1e12, 1e-18);
    EXPECT_DOUBLE_EQ(r.work.scale_up_bytes, 3.0 * 1048576);

    // 8 GPUs over 2 domains of 4: reduce-scatter and all-gather in the domain (3/4 each), an
    // all-reduce of the 1/4 shard across the 2 domains (2 x 1/2 x 1/4).
    spans.span[idx(CommGroup::tp)] = {8, 4, 2};
    const BlockCost h = cost_block(gemm_and_all_reduce(), s, CostContext{}, spans, Recompute::none, 0.0);
    EXPECT_DOUBLE_EQ(h.work.scale_up_bytes, 1.5 * 1048576);
    EXPECT_DOUBLE_EQ(h.work.scale_out_bytes, 0.25 * 1048576);
    // Full recompute sends the forward's collective twice, over both levels.
    const BlockCost hr = cost_block(gemm_and_all_reduce(), s, CostContext{}, spans, Recompute::full, 0.0);
    EXPECT_DOUBLE_EQ(hr.work.scale_up_bytes, 3.0 * 1048576);
    EXPECT_DOUBLE_EQ(hr.work.scale_out_bytes, 0.5 * 1048576);
}

// The step adds the blocks over every GPU, the pipeline hops and the optimizer's HBM traffic.
// tiny_gpt (8 layers) on tp 2 x pp 2, 4 micro-batches of 1 sequence of 128 tokens.
TEST(Energy, StepWorkByHand) {
    const SystemSpec s = round_energy_system();
    ParallelConfig p;
    p.tp = 2;
    p.pp = 2;
    LayerCosts lc;
    lc.layer[idx(LayerKind::dense)].work = {1e-3, 2e-3, 1e6, 2e5, 0, 3e6};
    lc.embedding.work = {1e-4, 3e-4, 1e5, 0, 0, 2e5};
    lc.head.work = {2e-4, 5e-4, 3e5, 0, 0, 4e5};
    const TrainResult r = testing::step_over(testing::tiny_gpt(), s, testing::batch_of(4), p, lc);
    // Blocks: (8 layers + embedding + head) per GPU x tp 2 x 4 micro-batches.
    EXPECT_NEAR(r.work.tensor_s, (8 * 1e-3 + 1e-4 + 2e-4) * 2 * 4, 1e-15);
    // HBM: the blocks' (8e6 + 1e5 + 3e5) x 8 = 67.2e6, and Adam on every GPU over the fullest
    // GPU's parameters (GPU 0: 4 layers of 49,984 and the 72,192 embedding, over tp 2 = 136,064)
    // at 4 (fp32 grad) + 2 x 12 (states) + 2 (bf16 weight) = 30 B each: 4,081,920 x 4 GPUs.
    EXPECT_NEAR(r.work.hbm_bytes, 67.2e6 + 4 * 4081920.0, 1e-3);
    // On-chip: the blocks' (8 x 3e6 + 2e5 + 4e5) x 8 = 196.8e6, and Adam's HBM bytes once more
    // (an element-wise kernel streams them through L2).
    EXPECT_NEAR(r.work.sram_bytes, 196.8e6 + 4 * 4081920.0, 1e-3);
    // Scale-up: the blocks' 8 x 2e5 x 8 = 12.8e6; the pipeline hop of one micro-batch's activation
    // (128 x 64 x 2 B = 16,384): each TP rank sends half over the pipeline link and all-gathers the
    // whole (half sent); 2 directions x 4 micro-batches x 1 boundary x 2 ranks = 16 hops of 16,384.
    EXPECT_NEAR(r.work.scale_up_bytes, 12.8e6 + 16 * 16384.0, 1e-6);
    EXPECT_EQ(r.work.scale_out_bytes, 0.0);
    EXPECT_NEAR(r.energy.idle_j, 100.0 * 4 * r.step_time_s, 1e-9);
    // Kernels: the blocks' (8 x 2e-3 + 3e-4 + 5e-4) x 8 = 0.1344 s and Adam's 4,081,920 B at
    // 1e12 B/s = 4.08192 us on each of the 4 GPUs.
    EXPECT_NEAR(r.breakdown.optimizer_s, 4.08192e-6, 1e-15);
    EXPECT_NEAR(r.work.kernel_s, 0.1344 + 4 * 4.08192e-6, 1e-12);
    // The hand-made blocks take no time, so the step is far shorter than the kernels summed:
    // the charge stops at every GPU busy the whole step, 430 W active and 430 W tensors.
    ASSERT_LT(4 * r.step_time_s, r.work.tensor_s);
    EXPECT_NEAR(r.energy.active_j, 430.0 * 4 * r.step_time_s, 1e-12);
    EXPECT_NEAR(r.energy.compute_j, 430.0 * 4 * r.step_time_s, 1e-12);
}

// Data-parallel traffic across domains (one GPU per domain, dp 2, 2 micro-batches each), with
// gradients and weights of one width: ZeRO-1's reduce-scatter and all-gather move exactly what
// ZeRO-0's all-reduce moves; ZeRO-3 reduce-scatters every micro-batch and gathers twice per
// micro-batch (forward, backward): 2 x (1 + 2) / 2 = 3x ZeRO-1's.
TEST(Energy, DataParallelScaleOutBytesByZeroStage) {
    SystemSpec s = round_energy_system();
    s.node_gpus = 1;
    s.scale_up_domain = 1;
    s.gpus_used_per_domain = 1;
    TrainingSpec t = testing::batch_of(4);
    t.grad_precision = Precision::bf16;
    auto bytes = [&](int64_t zero) {
        ParallelConfig p;
        p.dp = 2;
        p.zero = zero;
        return testing::step_over(testing::tiny_llama(2), s, t, p).work.scale_out_bytes;
    };
    const double z0 = bytes(0), z1 = bytes(1), z3 = bytes(3);
    ASSERT_GT(z0, 0);
    EXPECT_NEAR(z1, z0, 1e-9 * z0);
    EXPECT_NEAR(z3, 3.0 * z1, 1e-9 * z1);
}

// Pipeline hops between domains (one GPU per domain, pp 2): 4 micro-batches cross the one
// boundary both ways, each a 128 x 64 x 2 B = 16,384 B activation over the network: 8 x 16,384.
TEST(Energy, PipelineHopsAcrossDomainsByHand) {
    SystemSpec s = round_energy_system();
    s.node_gpus = 1;
    s.scale_up_domain = 1;
    s.gpus_used_per_domain = 1;
    ParallelConfig p;
    p.pp = 2;
    const TrainResult r = testing::step_over(testing::tiny_gpt(), s, testing::batch_of(4), p);
    EXPECT_DOUBLE_EQ(r.work.scale_out_bytes, 8 * 16384.0);
    EXPECT_EQ(r.work.scale_up_bytes, 0.0);
}

// The tensor power is calibrated against the bf16 peak: a system with energy figures but no bf16
// matrix peak (here only fp8) is refused, naming the energy section.
TEST(Energy, NeedsABf16PeakToCalibrate) {
    const std::string text = R"({"model": {"preset": "llama3-8b"}, "system": {
        "accelerator": {"matrix_flop_per_s": {"fp8": 1e15}, "vector_flop_per_s": 6e13, "memory_bytes": 8e10,
                        "memory_bw_bytes_per_s": 3e12},
        "scale_up": {"bw_bytes_per_s": 4.5e11}, "scale_out": {"bw_bytes_per_s": 5e10},
        "energy": {"tdp_w": 700, "idle_w": 70, "hbm_j_per_bit": 3.4e-12, "scale_up_j_per_bit": 5e-12, "scale_out_j_per_bit": 5e-12}}})";
    const auto s = testing::load(text);
    ASSERT_FALSE(s.ok());
    EXPECT_EQ(s.error().path, "system.energy.idle_w") << s.error().message();
    EXPECT_NE(s.error().message().find("bf16 matrix peak"), std::string::npos) << s.error().message();
}

TEST(Energy, PresetReadsAndCalibratesToItsTdp) {
    const SystemSpec h = testing::system_preset("dgx-h100");
    EXPECT_EQ(h.energy.tdp_w, 700);
    // SRAM 33.45e12 x 8 x 0.066e-12 = 17.6616 W; HBM 3.35e12 x 8 x 3.4e-12 = 91.12 W; NVLink
    // 2 x 450e9 x 8 x 5e-12 = 36 W; idle 70 W: 700 - 70 - 17.6616 - 91.12 - 36 = 485.2184 W,
    // half active (242.6092 W), half the tensors at 989.4e12 FLOP/s: 2.4521e-13 J per bf16 FLOP.
    EXPECT_NEAR(h.energy.sram_j_per_bit, 0.066e-12, 1e-27);
    EXPECT_NEAR(h.energy.active_w, 242.6092, 1e-9);
    EXPECT_NEAR(h.energy.tensor_j_per_flop, 242.6092 / 989.4e12, 1e-20);
    EXPECT_NEAR(full_load_power_w(h), 700.0, 1e-6);
    EXPECT_EQ(h.price_per_gpu_hour, 0.0);
}

TEST(Energy, TechnologySystemTakesTheGeneratedFigures) {
    const auto doc = read_scenario_file(std::string(SCALEMODEL_SOURCE_DIR) + "/examples/technology/h100.json");
    ASSERT_TRUE(doc.ok()) << doc.error().message();
    const auto s = build_scenario(doc.value(), Purpose::train);
    ASSERT_TRUE(s.ok()) << s.error().message();
    const EnergySpec& e = s->system.energy;
    EXPECT_EQ(e.tdp_w, 700);
    EXPECT_NEAR(e.idle_w, 6e4 * 814e-6, 1e-9);  // 4nm leakage 0.06 W/mm2 x 814 mm2 = 48.84 W
    // Area-limited (tensors 264 W of a 524 W budget): the node's 0.27 pJ per bf16 FLOP.
    EXPECT_NEAR(e.tensor_j_per_flop, 0.27e-12, 1e-24);
    EXPECT_EQ(e.hbm_j_per_bit, 3.4e-12);       // HBM3
    EXPECT_EQ(e.scale_up_j_per_bit, 5.0e-12);  // 100G lanes
    EXPECT_EQ(e.scale_out_j_per_bit, 5.0e-12);
    EXPECT_EQ(s->full["system"]["energy"]["idle_w"].get<double>(), e.idle_w);  // resolve shows them
}

const char* kH100 = R"({"model": {"preset": "gpt3-175b"}, "system": {"preset": "dgx-h100"},
  "parallel": {"tp": 8, "pp": 8, "dp": 2, "microbatch": 1, "sequence_parallel": true, "recompute": "selective"},
  "training": {"global_batch": 64}})";

TEST(Energy, ErrorsNameTheField) {
    auto big = load(kH100, {"system.energy.tensor_j_per_flop=1e-12"});
    ASSERT_FALSE(big.ok());
    EXPECT_NE(big.error().message().find("system.energy.tensor_j_per_flop"), std::string::npos) << big.error().message();
    auto idle = load(kH100, {"system.energy.idle_w=650"});  // 650 + 17.7 + 91 + 36 W > 700 W
    ASSERT_FALSE(idle.ok());
    EXPECT_NE(idle.error().message().find("system.energy.idle_w"), std::string::npos) << idle.error().message();
    auto busy = load(kH100, {"system.energy.active_w=600"});  // more than the 485.2184 W budget
    ASSERT_FALSE(busy.ok());
    EXPECT_NE(busy.error().message().find("system.energy.active_w"), std::string::npos) << busy.error().message();
    // Both given: 300 W + 3e-13 x 989.4e12 = 296.8 W, 596.8 W > 485.2184 W.
    auto both = load(kH100, {"system.energy.active_w=300", "system.energy.tensor_j_per_flop=3e-13"});
    ASSERT_FALSE(both.ok());
    EXPECT_NE(both.error().message().find("system.energy.tensor_j_per_flop"), std::string::npos) << both.error().message();
    // One given, the other takes the rest of the 485.2184 W.
    auto active = load(kH100, {"system.energy.active_w=100"});
    ASSERT_TRUE(active.ok()) << active.error().message();
    EXPECT_NEAR(active->system.energy.tensor_j_per_flop, 385.2184 / 989.4e12, 1e-20);
    auto tensor = load(kH100, {"system.energy.tensor_j_per_flop=4e-13"});
    ASSERT_TRUE(tensor.ok()) << tensor.error().message();
    EXPECT_NEAR(tensor->system.energy.active_w, 485.2184 - 395.76, 1e-6);  // 4e-13 x 989.4e12 = 395.76 W
    auto typo = load(kH100, {"system.energy.tdp=700"});
    ASSERT_FALSE(typo.ok());
    EXPECT_NE(typo.error().message().find("tdp_w"), std::string::npos) << typo.error().message();
}

TEST(Energy, KeysOnlyWithTheFigures) {
    auto s = load(kH100);
    ASSERT_TRUE(s.ok()) << s.error().message();
    const TrainResult r = evaluate_training({s->model, s->system, s->training}, s->parallel);
    const Json j = train_json(*s, r);
    ASSERT_TRUE(j.contains("energy_per_step_j"));
    EXPECT_NEAR(j["energy_per_token_j"].get<double>(), r.energy.total_j() / (64.0 * 2048), 1e-9);
    EXPECT_FALSE(j.contains("cost_per_step_usd"));  // price 0: unknown

    auto priced = load(kH100, {"system.price_per_gpu_hour=2"});
    ASSERT_TRUE(priced.ok());
    const TrainResult rp = evaluate_training({priced->model, priced->system, priced->training}, priced->parallel);
    const Json jp = train_json(*priced, rp);
    // 128 GPUs x $2 per hour over the step.
    EXPECT_NEAR(jp["cost_per_step_usd"].get<double>(), 128 * 2.0 * rp.step_time_s / 3600, 1e-12);
    EXPECT_NEAR(jp["cost_per_million_tokens_usd"].get<double>(), 128 * 2.0 * rp.step_time_s / 3600 / (64.0 * 2048) * 1e6, 1e-9);

    Scenario bare = *s;  // a system without energy figures: no energy keys, nothing charged
    bare.system.energy = EnergySpec{};
    const TrainResult rb = evaluate_training({bare.model, bare.system, bare.training}, bare.parallel);
    EXPECT_FALSE(train_json(bare, rb).contains("energy_per_step_j"));
    EXPECT_EQ(rb.energy.total_j(), 0.0);
}

// Inference on the round machine in fp16: every op runs against the 100 TFLOP/s fp16 peak at
// full efficiency, so the tensors are engaged for the reported FLOP (per GPU of each stage, x tp)
// over 1e14 and draw 430 W then; the active 430 W is drawn for every kernel second.
TEST(Energy, InferenceComputeIsFlopTimesJoulePerFlop) {
    SystemSpec s = testing::round_inference_system();
    // HBM 1e12 x 8 x 4e-12 = 32 W; scale-up 2 x 100e9 x 8 x 5e-12 = 8 W: 860 W, half active and
    // half the tensors: 430 W at 100 TFLOP/s.
    s.energy = {1000, 100, 4.3e-12, 4e-12, 5e-12, 6e-12, 430};
    const ModelSpec m = testing::tiny_llama(4);
    const InferenceSpec w = testing::fp16_workload(4, 64, 8);
    ParallelConfig p;
    p.tp = 2;
    const InferResult r = evaluate_inference({m, s, w}, p);
    EXPECT_NEAR(r.energy.compute_j, (r.prefill.flop + r.decode.flop) * 2 * 4.3e-12, 1e-9 * r.energy.compute_j);
    EXPECT_NEAR(r.energy.active_j, (r.prefill.compute_s + r.decode.compute_s) * 2 * 430.0, 1e-9 * r.energy.active_j);
    EXPECT_NEAR(r.energy.hbm_j, (r.prefill.hbm_bytes + r.decode.hbm_bytes) * 2 * 8 * 4e-12, 1e-9 * r.energy.hbm_j);
    EXPECT_NEAR(r.energy.idle_j, 100.0 * 2 * r.e2e_latency_s, 1e-12);
    EXPECT_GT(r.energy.scale_up_j, 0.0);  // the tensor-parallel all-reduces
    // Two stages: four GPUs idle through the whole latency.
    p.pp = 2;
    const InferResult two = evaluate_inference({m, s, w}, p);
    EXPECT_NEAR(two.energy.idle_j, 100.0 * 4 * two.e2e_latency_s, 1e-12);
}

// Continuous batching: a step of a replica runs each of its micro-batches through every stage
// once, on tp GPUs per stage; idle power runs for the step on all of the replica's GPUs.
TEST(Energy, ServingStepByHand) {
    SystemSpec s = testing::round_inference_system();
    s.energy = {1000, 100, 4.3e-12, 4e-12, 5e-12, 6e-12, 430};
    s.accel.sram_bw_bytes_per_s = 2e13;
    s.energy.sram_j_per_bit = 1e-13;
    const ModelSpec m = testing::tiny_llama(4);
    for (const int64_t pp : {1, 2}) {
        ParallelConfig p;
        p.tp = 2;
        p.pp = pp;
        const ServingPoint r = serve_at({m, s, testing::toy_serving_workload()}, p, 3);
        const Energy e = with_energy(s, p, r).energy;
        SCOPED_TRACE("pp " + std::to_string(pp));
        ASSERT_EQ(r.micro_batches, pp);  // min(pp, C = 3)
        const double n = 2.0 * static_cast<double>(pp);  // tp x micro-batches
        EXPECT_NEAR(e.hbm_j, r.step.hbm_bytes * n * 8 * 4e-12, 1e-12 * e.hbm_j);
        EXPECT_NEAR(e.sram_j, r.step.sram_bytes * n * 8 * 1e-13, 1e-12 * e.sram_j);
        EXPECT_GE(r.step.sram_bytes, r.step.hbm_bytes);  // everything from HBM passes the SRAM level
        EXPECT_GT(e.sram_j, 0.0);
        EXPECT_NEAR(e.idle_j, 100.0 * r.step_s * 2.0 * static_cast<double>(pp), 1e-12);
        EXPECT_GT(e.scale_up_j, 0.0);  // the tensor-parallel all-reduces
    }
}

// A chip generated from its technology never draws more than its TDP on average, whatever the
// node, area and power budget; energy is finite and positive.
TEST(Energy, PropertyGeneratedChipsStayWithinTdp) {
    std::mt19937_64 rng(11);
    auto u = [&](double lo, double hi) { return std::uniform_real_distribution<double>(lo, hi)(rng); };
    const char* nodes[] = {"12nm", "7nm", "5nm", "4nm", "3nm", "2nm", "1.4nm", "1nm"};
    int checked = 0;
    for (int i = 0; i < 60; ++i) {
        Json doc = Json::parse(kH100);
        doc["system"]["technology"] = {{"node", nodes[i % 8]},
                                       {"dies", 1 + static_cast<int>(u(0, 2))},
                                       {"die_area_mm2", u(400, 850)},
                                       {"tdp_w", u(300, 1500)},
                                       {"tensor_share", u(0.1, 0.4)}};
        doc["parallel"]["pp"] = 4;
        doc["parallel"]["dp"] = 1;
        doc["parallel"]["recompute"] = i % 3 == 0 ? "full" : "selective";
        doc["training"]["global_batch"] = 8;
        auto s = build_scenario(doc, Purpose::train);
        if (!s.ok()) continue;  // a TDP below the chip's fixed power: refused, with its field
        ++checked;
        const TrainResult r = evaluate_training({s->model, s->system, s->training}, s->parallel);
        const double power = r.energy.gpu_j() / (r.step_time_s * static_cast<double>(r.gpus));
        ASSERT_TRUE(std::isfinite(r.energy.total_j()) && r.energy.total_j() > 0) << i;
        ASSERT_LE(power, s->system.energy.tdp_w * (1 + 1e-9)) << i << " " << doc.dump();
    }
    EXPECT_GT(checked, 30);
}

}  // namespace
}  // namespace sm
