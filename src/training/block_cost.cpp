#include "training/block_cost.hpp"

#include <algorithm>

namespace sm {

std::vector<OpCost> cost_ops(const LayerOps& ops, const SystemSpec& sys, const CostContext& ctx) {
    std::vector<OpCost> out;
    cost_ops(ops, sys, ctx, out);
    return out;
}

void cost_ops(const LayerOps& ops, const SystemSpec& sys, const CostContext& ctx, std::vector<OpCost>& out) {
    out.clear();
    out.reserve(ops.ops.size());
    for (const Op& op : ops.ops) out.push_back(cost_op(op, sys, ctx));
}

BlockCompute cost_block_compute(const LayerOps& ops, const SystemSpec& sys, const CostContext& ctx, RecomputePlan recompute) {
    return cost_block_compute(ops, cost_ops(ops, sys, ctx), recompute);
}

BlockCompute cost_block_compute(const LayerOps& ops, const std::vector<OpCost>& costs, RecomputePlan recompute) {
    constexpr ModuleSet core_attn = module_bit(RecomputeModule::core_attn);
    BlockCompute out;
    BlockCost& b = out.cost;
    for (size_t i = 0; i < ops.ops.size(); ++i) {
        const Op& op = ops.ops[i];
        const OpCost& c = costs[i];
        b.fwd_s += c.fwd_s;
        b.bwd_s += c.bwd_s;
        b.fwd_flop += c.fwd_flop;
        b.bwd_flop += c.bwd_flop;
        // Forward, activation gradient and (for trained weights) weight gradient: a frozen
        // weight's gradient, or the gradient of data (a ViT's pixels), is work the step does not need.
        b.model_flop += (1.0 + (op.frozen ? 0.0 : 1.0) + (op.input_grad ? 1.0 : 0.0)) * c.fwd_model_flop;
        b.saved_bytes += op.saved_bytes + op.core_saved_bytes;
        // The attention core's internals go with core_attn; a tensor its modules recompute, with them.
        b.selective_freed_bytes += ((recompute.modules & core_attn) != 0 ? op.core_saved_bytes : 0.0) +
                                   ((recompute.modules & op.frees) != 0 ? op.saved_bytes : 0.0);
        // How often per layer the op runs again: once, or a layer's share under partial full recompute.
        const double rerun = recompute.rerun_share(op.modules | (op.attention_core ? core_attn : ModuleSet{0}));
        b.recompute_s += rerun * c.fwd_s;
        b.recompute_flop += rerun * c.fwd_flop;
        b.work.tensor_s += c.fwd_tensor_s + c.bwd_tensor_s + rerun * c.fwd_tensor_s;
        b.work.kernel_s += c.fwd_s + c.bwd_s + rerun * c.fwd_s;
        b.work.hbm_bytes += c.fwd_bytes + c.dgrad_bytes + c.wgrad_bytes + rerun * c.fwd_bytes;
        b.work.sram_bytes += (1.0 + rerun) * fwd_onchip_bytes(c) + bwd_onchip_bytes(c);
        if (op.kind == OpKind::attention || op.kind == OpKind::batched_gemm) {
            out.attn_fwd_s += c.fwd_s;
            out.attn_bwd_s += c.bwd_s;
        }
        if (op.shared_expert) {
            out.shared_fwd_s += c.fwd_s;
            out.shared_bwd_s += c.bwd_s;
        }
    }
    b.input_bytes = ops.input_bytes;
    // The layers partial full recompute leaves whole keep everything they saved.
    b.full_kept_bytes = (1.0 - recompute.full_share) * (b.saved_bytes - b.input_bytes);
    b.transient_bytes = ops.transient_bytes;
    b.fwd_wall_s = b.fwd_s;
    b.bwd_wall_s = b.bwd_s;
    return out;
}

std::vector<CollectiveCost> cost_comms(const std::vector<CommOp>& comms, const SystemSpec& sys, const CommSpans& spans) {
    std::vector<CollectiveCost> out;
    cost_comms(comms, sys, spans, out);
    return out;
}

void cost_comms(const std::vector<CommOp>& comms, const SystemSpec& sys, const CommSpans& spans, std::vector<CollectiveCost>& out) {
    out.clear();
    out.reserve(comms.size());
    for (const CommOp& c : comms) out.push_back(collective_cost(c, spans.span[idx(c.group)], sys));
}

BlockCost with_comms(const BlockCompute& compute, const std::vector<CommOp>& comms, const std::vector<CollectiveCost>& costs,
                     const SystemSpec& sys, const CommSpans& spans, RecomputePlan recompute, double tp_overlap) {
    BlockCost b = compute.cost;
    const double attn_fwd_s = compute.attn_fwd_s, attn_bwd_s = compute.attn_bwd_s;

    // Overlappable traffic hides behind independent compute of its own pass: ring attention
    // behind the attention of the previous chunk, TP gathers/reductions behind the other
    // gradient GEMM (half of the non-attention backward), the expert all-to-all behind the shared
    // experts (training.moe_shared_expert_overlap), or behind the other pass of the micro-batch
    // paired with this one (training.moe_a2a_overlap: a forward all-to-all behind the layer's
    // backward, a backward one behind its forward). The windows are disjoint slices of the compute,
    // and collectives of different groups run concurrently on their own streams, so a pass is
    // stretched by the worst of them, not by their sum: faster compute never exposes more than it
    // saves.
    std::array<double, kGroups> hidden_fwd{}, hidden_bwd{};
    std::array<bool, kGroups> cross{};
    double exposed_fwd = 0, exposed_bwd = 0;
    for (size_t i = 0; i < comms.size(); ++i) {
        const CommOp& c = comms[i];
        const CollectiveCost& k = costs[i];
        const double one = k.time_s * c.count;
        // Full recompute runs every forward collective again, a module's recompute those inside it.
        const double reps = c.pass == Pass::fwd ? 1.0 + recompute.rerun_share(c.modules) : 1.0;
        b.work.scale_up_bytes += k.scale_up_bytes * c.count * reps;
        b.work.scale_out_bytes += k.scale_out_bytes * c.count * reps;
        const size_t g = idx(c.group);
        b.comm_link_s[g] += one * reps;
        if (c.overlappable) {
            (c.pass == Pass::fwd ? hidden_fwd : hidden_bwd)[g] += one * reps;
            cross[g] = cross[g] || c.cross_pass;
        } else {
            const double hide = c.group == CommGroup::tp ? tp_overlap : 0.0;
            b.comm_exposed_s[g] += one * reps * (1.0 - hide);
            (c.pass == Pass::fwd ? exposed_fwd : exposed_bwd) += one * reps * (1.0 - hide);
        }
    }
    const double fwd_reps = recompute.mode == Recompute::full ? 1.0 + recompute.full_share : 1.0;  // the recompute's forward hides too
    // SUMMA pipelines its panel broadcasts and reductions with the panel GEMMs of the same pass
    // (both grid directions at once): its traffic hides behind the pass's compute outside the
    // attention core (the GEMMs and the element-wise work between them).
    const bool summa = spans.span[idx(CommGroup::tp_rows)].size > 1;
    const double gemm_fwd_s = (b.fwd_s - attn_fwd_s) * fwd_reps, gemm_bwd_s = b.bwd_s - attn_bwd_s;
    auto stretch = [&](const std::array<double, kGroups>& hidden, bool fwd) {
        double interference = 0;
        size_t worst = 0;
        double worst_s = 0;
        for (size_t g = 0; g < kGroups; ++g) {
            const bool cp = g == idx(CommGroup::cp);
            const bool grid = summa && (g == idx(CommGroup::tp) || g == idx(CommGroup::tp_rows));
            const double window = cross[g]                ? (fwd ? b.bwd_s : b.fwd_s * fwd_reps)
                                  : g == idx(CommGroup::ep) ? (fwd ? compute.shared_fwd_s * fwd_reps : compute.shared_bwd_s)
                                  : grid              ? (fwd ? gemm_fwd_s : gemm_bwd_s)
                                  : fwd               ? (cp ? attn_fwd_s * fwd_reps : 0.0)
                                                      : (cp ? attn_bwd_s : 0.5 * (b.bwd_s - attn_bwd_s));
            const double e = std::max(0.0, hidden[g] - window);
            // Hidden traffic still takes SMs and HBM bandwidth from the compute it hides behind.
            const double slowdown = sys.eff.overlap_interference * (hidden[g] - e);
            b.comm_exposed_s[g] += slowdown;
            interference += slowdown;
            if (e > worst_s) {
                worst_s = e;
                worst = g;
            }
        }
        b.comm_exposed_s[worst] += worst_s;
        return worst_s + interference;
    };
    exposed_fwd += stretch(hidden_fwd, true);
    exposed_bwd += stretch(hidden_bwd, false);
    b.fwd_wall_s = b.fwd_s + exposed_fwd;
    b.bwd_wall_s = b.bwd_s + exposed_bwd;
    return b;
}

BlockCost cost_block(const LayerOps& ops, const SystemSpec& sys, const CostContext& ctx,
                     const CommSpans& spans, RecomputePlan recompute, double tp_overlap) {
    return with_comms(cost_block_compute(ops, sys, ctx, recompute), ops.comms, cost_comms(ops.comms, sys, spans), sys, spans,
                      recompute, tp_overlap);
}

}  // namespace sm
