#pragma once
// Costs of one block of ops (a layer, the embedding, the head) for one micro-batch on one GPU.
#include <algorithm>
#include <array>
#include <vector>

#include "hardware/cost.hpp"
#include "hardware/energy.hpp"
#include "parallel/placement.hpp"

namespace sm {

struct BlockCost {
    double fwd_s = 0, bwd_s = 0, recompute_s = 0;   // compute, kernel latencies included
    double fwd_flop = 0, bwd_flop = 0, recompute_flop = 0;
    double model_flop = 0;                           // forward + backward, by convention
    std::array<double, kGroups> comm_link_s{};       // time on the wire per group
    std::array<double, kGroups> comm_exposed_s{};    // part not hidden behind compute
    double fwd_wall_s = 0, bwd_wall_s = 0;           // each pass with its exposed communication
    double saved_bytes = 0;       // activations kept for backward (no recompute)
    double selective_freed_bytes = 0;  // of which dropped by selective recompute (its modules)
    double input_bytes = 0;       // the block's input: all that full recompute keeps
    double full_kept_bytes = 0;   // beyond it under partial full recompute: the whole layers' rest
    double transient_bytes = 0;   // held only while the block runs (LayerOps); the largest, not summed
    Work work;                    // what the energy model charges: passes, recompute and collectives

    // Adds n blocks of `o` (the blocks of a pipeline stage, of several kinds).
    // Field by field, not over a list of member pointers: the search sums stages per layout.
    BlockCost& add(const BlockCost& o, double n) {
        fwd_s += n * o.fwd_s;
        bwd_s += n * o.bwd_s;
        recompute_s += n * o.recompute_s;
        fwd_flop += n * o.fwd_flop;
        bwd_flop += n * o.bwd_flop;
        recompute_flop += n * o.recompute_flop;
        model_flop += n * o.model_flop;
        fwd_wall_s += n * o.fwd_wall_s;
        bwd_wall_s += n * o.bwd_wall_s;
        saved_bytes += n * o.saved_bytes;
        selective_freed_bytes += n * o.selective_freed_bytes;
        input_bytes += n * o.input_bytes;
        full_kept_bytes += n * o.full_kept_bytes;
        transient_bytes = std::max(transient_bytes, o.transient_bytes);
        work.add(o.work, n);
        for (size_t g = 0; g < kGroups; ++g) {
            comm_link_s[g] += n * o.comm_link_s[g];
            comm_exposed_s[g] += n * o.comm_exposed_s[g];
        }
        return *this;
    }
    [[nodiscard]] double exposed_comm_s() const {
        double t = 0;
        for (double x : comm_exposed_s) t += x;
        return t;
    }
    [[nodiscard]] double total_s() const { return fwd_s + bwd_s + recompute_s + exposed_comm_s(); }
    [[nodiscard]] double activation_bytes(Recompute r) const {
        switch (r) {
            case Recompute::none: return saved_bytes;
            case Recompute::selective: return saved_bytes - selective_freed_bytes;
            case Recompute::full: return input_bytes + full_kept_bytes;
        }
        return saved_bytes;
    }
};

// A block's compute: every op through cost_op. Its collectives are not costed yet (no exposed
// communication: the wall times are the compute times); the attention core's times are kept,
// since the collectives hide behind them. It does not depend on where the groups sit, so the
// search costs it once per layer key and only the collectives per placement.
struct BlockCompute {
    BlockCost cost;
    double attn_fwd_s = 0, attn_bwd_s = 0;  // attention and batched GEMMs, each pass
    double shared_fwd_s = 0, shared_bwd_s = 0;  // shared experts, each pass
};
BlockCompute cost_block_compute(const LayerOps& ops, const SystemSpec& sys, const CostContext& ctx, RecomputePlan recompute);
// Every op of a block through cost_op: the same under every recompute mode.
std::vector<OpCost> cost_ops(const LayerOps& ops, const SystemSpec& sys, const CostContext& ctx);
// The same into `out`, whose storage is kept.
void cost_ops(const LayerOps& ops, const SystemSpec& sys, const CostContext& ctx, std::vector<OpCost>& out);
// The block's compute from its ops' costs (`costs[i]` of `ops.ops[i]`) under one recompute mode;
// what selective recompute would drop follows the plan's modules, whatever its mode.
BlockCompute cost_block_compute(const LayerOps& ops, const std::vector<OpCost>& costs, RecomputePlan recompute);
// Each collective of a block over `spans`, once: the same under every recompute mode.
std::vector<CollectiveCost> cost_comms(const std::vector<CommOp>& comms, const SystemSpec& sys, const CommSpans& spans);
// The same into `out`, whose storage is kept.
void cost_comms(const std::vector<CommOp>& comms, const SystemSpec& sys, const CommSpans& spans, std::vector<CollectiveCost>& out);
// The block with its collectives added to its compute: `costs[i]` is one `comms[i]`'s cost
// (cost_comms), which the recompute mode repeats or hides. A hideable expert-parallel all-to-all
// hides behind the shared experts of its pass (training.moe_shared_expert_overlap).
BlockCost with_comms(const BlockCompute& compute, const std::vector<CommOp>& comms, const std::vector<CollectiveCost>& costs,
                     const SystemSpec& sys, const CommSpans& spans, RecomputePlan recompute, double tp_overlap);
// Cost a block: every op through cost_op, every collective through collective_time_s.
// `tp_overlap` is the fraction of blocking TP traffic hidden by comm-GEMM overlap.
BlockCost cost_block(const LayerOps& ops, const SystemSpec& sys, const CostContext& ctx,
                     const CommSpans& spans, RecomputePlan recompute, double tp_overlap);

}  // namespace sm
