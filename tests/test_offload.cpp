// The second memory tier (parallel.offload): bytes moved off HBM, host memory used, link time
// and exposed time, by hand; and properties over layouts (more host bandwidth is never slower,
// offload never raises the HBM peak).
#include <gtest/gtest.h>

#include <vector>

#include "test_helpers.hpp"
#include "training/offload.hpp"

namespace sm {
namespace {

using testing::batch_of;
using testing::round_system;
using testing::tiny_gpt;

HostMemory host(double bw, double memory_bw = 200e9, double capacity = 1e12) { return {capacity, bw, memory_bw}; }

// An optimizer shard of 1e9 parameters: Adam's 12 bytes of state, fp32 gradients, bf16 weights.
OffloadInput with_optimizer(OffloadInput in) {
    in.optimizer_params = 1e9;
    in.state_bytes_per_param = 12;
    in.grad_bytes_per_param = 4;
    in.weight_bytes_per_param = 2;
    return in;
}

// 1e9 parameters in this GPU's shard, Adam's 12 bytes of state, fp32 gradients, bf16 weights,
// a 100 GB/s link and 200 GB/s host memory: 12 GB leave HBM, the host keeps them plus a 4 GB
// gradient copy; gradients take 4e9 / 100e9 = 0.04 s down, weights 2e9 / 100e9 = 0.02 s up, the
// host's Adam touches 1e9 x (4 + 2 x 12 + 2) = 30 GB: 0.15 s. They stream concurrently: 0.15 s.
TEST(Offload, OptimizerByHand) {
    const OffloadInput in = with_optimizer({});
    const OffloadResult r = offload_cost(Offload::optimizer, in, host(100e9), 0.5);
    EXPECT_DOUBLE_EQ(r.optimizer_hbm_bytes, 12e9);
    EXPECT_DOUBLE_EQ(r.activation_hbm_bytes, 0);
    EXPECT_DOUBLE_EQ(r.host_bytes, 16e9);
    EXPECT_NEAR(r.link_s, 0.06, 1e-12);
    EXPECT_NEAR(r.exposed_s, 0.15, 1e-12);
    EXPECT_DOUBLE_EQ(r.gpu_optimizer_s_saved, 0.5);  // the GPU's own pass is not run
    EXPECT_TRUE(r.fits_host);
    // A 20 GB/s link makes the gradient copy the slowest stage: 4e9 / 20e9 = 0.2 s.
    EXPECT_NEAR(offload_cost(Offload::optimizer, in, host(20e9), 0.5).exposed_s, 0.2, 1e-12);
    // 15 GB of host memory cannot hold 16 GB.
    EXPECT_FALSE(offload_cost(Offload::optimizer, in, host(100e9, 200e9, 15e9), 0.5).fits_host);
    // A link but no host memory bandwidth is no host tier: nothing moves, nothing is saved.
    const OffloadResult none = offload_cost(Offload::optimizer, in, host(100e9, 0), 0.5);
    EXPECT_FALSE(none.fits_host);
    EXPECT_EQ(none.optimizer_hbm_bytes, 0.0);
    EXPECT_EQ(none.gpu_optimizer_s_saved, 0.0);
}

// A layer saves 1 GB per micro-batch; 4 layers, 2 micro-batches in flight: 8 layer-activations
// at the peak, 2 stay (the one computing, the one in transit): 6 GB leave HBM. Per step,
// 3 micro-batches x 3 layers = 9 transfers each way of 1e9 / 100e9 = 0.01 s: 0.18 s on the link.
// Forward hides 0.005 s of each (0.005 s exposed), backward all of it: 9 x 0.005 = 0.045 s.
TEST(Offload, ActivationsByHand) {
    OffloadInput in;
    in.layer_activation_bytes = 1e9;
    in.layer_activations_held = 8;
    in.layers = 4;
    in.microbatches = 3;
    in.layer_fwd_s = 0.005;
    in.layer_bwd_s = 0.01;
    const OffloadResult r = offload_cost(Offload::activations, in, host(100e9), 0.5);
    EXPECT_DOUBLE_EQ(r.activation_hbm_bytes, 6e9);
    EXPECT_DOUBLE_EQ(r.optimizer_hbm_bytes, 0);
    EXPECT_DOUBLE_EQ(r.host_bytes, 6e9);
    EXPECT_NEAR(r.link_s, 0.18, 1e-12);
    EXPECT_NEAR(r.exposed_s, 0.045, 1e-12);
    EXPECT_DOUBLE_EQ(r.gpu_optimizer_s_saved, 0);
    // A link faster than both windows (1 TB/s: 1 ms per layer) hides everything.
    EXPECT_DOUBLE_EQ(offload_cost(Offload::activations, in, host(1e12), 0.5).exposed_s, 0);
    // A slower one (10 GB/s: 0.1 s per layer) exposes 9 x (0.095 + 0.09) = 1.665 s.
    EXPECT_NEAR(offload_cost(Offload::activations, in, host(10e9), 0.5).exposed_s, 1.665, 1e-9);
    // Both: the sums of the two.
    const OffloadResult both = offload_cost(Offload::optimizer_and_activations, with_optimizer(in), host(100e9), 0.5);
    EXPECT_DOUBLE_EQ(both.host_bytes, 16e9 + 6e9);
    EXPECT_NEAR(both.exposed_s, 0.15 + 0.045, 1e-12);
}

// The tiny GPT on one GPU (tp = pp = dp = 1, ZeRO 0): 8 x 49,984 + 72,192 + 64,000 + 128 =
// 536,192 parameters. Optimizer offload over a 1 GB/s link and 2 GB/s host memory: the HBM
// loses 12 x 536,192 = 6,434,304 bytes of state; the host holds 16 x 536,192 = 8,579,072; the
// host's Adam (30 bytes a parameter: 8.04288 ms) is slower than the gradient copy (2.144768 ms)
// and the weight copy (1.072384 ms); the GPU's optimizer pass is gone.
TEST(Offload, OptimizerThroughTheStepModel) {
    SystemSpec s = round_system();
    s.host_memory = host(1e9, 2e9);
    const ModelSpec m = tiny_gpt();
    const TrainingSpec t = batch_of(4);
    ParallelConfig p;
    const TrainResult base = evaluate_training({m, s, t}, p);
    p.offload = Offload::optimizer;
    const TrainResult off = evaluate_training({m, s, t}, p);
    EXPECT_DOUBLE_EQ(base.memory.optimizer_bytes, 6434304.0);
    EXPECT_DOUBLE_EQ(off.memory.optimizer_bytes, 0);
    EXPECT_DOUBLE_EQ(off.memory.host_bytes, 8579072.0);
    EXPECT_NEAR(base.memory.peak_bytes_per_gpu - off.memory.peak_bytes_per_gpu, 6434304.0, 1e-3);
    EXPECT_NEAR(off.breakdown.offload_exposed_s, 8.04288e-3, 1e-12);
    EXPECT_NEAR(off.link.offload_s, 2.144768e-3 + 1.072384e-3, 1e-12);
    EXPECT_DOUBLE_EQ(off.breakdown.optimizer_s, 0);
    EXPECT_NEAR(off.step_time_s, base.step_time_s - base.breakdown.optimizer_s + 8.04288e-3, 1e-12);
    // Adam's 30 bytes a parameter (16,085,760 B) no longer stream through HBM: the energy model's
    // HBM bytes lose them.
    EXPECT_NEAR(base.work.hbm_bytes - off.work.hbm_bytes, 30.0 * 536192, 1e-3);
    // A host with less memory than the state: the layout does not fit.
    s.host_memory.capacity_bytes = 8e6;
    EXPECT_FALSE(evaluate_training({m, s, t}, p).fits_in_memory);
}

// Over layouts of a real model and system: offload never raises the HBM peak, and more host
// bandwidth (link and host memory alike) never makes a step slower.
TEST(Offload, PropertiesOverLayouts) {
    const ModelSpec m = testing::model_preset("llama3-70b");
    SystemSpec s = testing::system_preset("dgx-h100");
    const TrainingSpec t = batch_of(256);
    const Offload modes[] = {Offload::optimizer, Offload::activations, Offload::optimizer_and_activations};
    int checked = 0;
    for (int64_t tp : {2, 4, 8})
        for (int64_t pp : {1, 4, 8})
            for (int64_t zero : {0, 1, 3})
                for (Recompute rc : {Recompute::none, Recompute::full}) {
                    ParallelConfig p;
                    p.tp = tp;
                    p.pp = pp;
                    p.dp = 8;
                    p.zero = zero;
                    p.recompute = rc;
                    p.sequence_parallel = true;
                    const TrainResult none = evaluate_training({m, s, t}, p);
                    for (Offload o : modes) {
                        p.offload = o;
                        EXPECT_LE(evaluate_training({m, s, t}, p).memory.peak_bytes_per_gpu,
                                  none.memory.peak_bytes_per_gpu);
                        double previous = 0;
                        for (double scale : {8.0, 2.0, 1.0, 0.5, 0.125}) {  // fastest first
                            SystemSpec slower = s;
                            slower.host_memory.bw_bytes_per_s *= scale;
                            slower.host_memory.memory_bw_bytes_per_s *= scale;
                            const double step = evaluate_training({m, slower, t}, p).step_time_s;
                            EXPECT_GE(step, previous);
                            previous = step;
                        }
                        ++checked;
                    }
                    p.offload = Offload::none;
                }
    EXPECT_EQ(checked, 3 * 3 * 3 * 2 * 3);
}

}  // namespace
}  // namespace sm
