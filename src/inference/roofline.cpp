#include "inference/roofline.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "comm/collectives.hpp"
#include "parallel/placement.hpp"

namespace sm {

namespace {

double as_d(int64_t x) { return static_cast<double>(x); }

void add_block(std::vector<RooflineRow>& rows, const char* phase, const std::string& block, double count, const LayerOps& ops,
               const SystemSpec& sys, const CostContext& ctx, const CommSpans& spans) {
    const double bw = sys.accel.memory_bw_bytes_per_s;
    for (const Op& op : ops.ops) {
        const OpCost c = cost_op(op, sys, ctx);
        RooflineRow r;
        r.phase = phase;
        r.name = std::string(op.name);
        r.block = block;
        r.count = count;
        r.flop = c.fwd_flop;
        r.bytes = c.fwd_bytes;
        r.intensity = r.bytes > 0 ? r.flop / r.bytes : 0;
        r.balance = c.peak_flop_per_s / bw;
        r.compute_s = c.fwd_compute_s;
        r.memory_s = c.fwd_memory_s;
        r.sram_bytes = c.fwd_sram_bytes;
        r.sram_s = c.fwd_sram_s;
        r.time_s = c.fwd_s;
        r.bound = r.sram_s > std::max(r.compute_s, r.memory_s) ? Bound::sram
                  : r.compute_s > r.memory_s                    ? Bound::compute
                                                                : Bound::memory;
        rows.push_back(std::move(r));
    }
    for (const CommOp& op : ops.comms) {
        if (op.pass != Pass::fwd) continue;
        const GroupSpan& g = spans.span[idx(op.group)];
        if (g.size <= 1) continue;
        RooflineRow r;
        r.phase = phase;
        r.name = std::string(op.name);
        r.block = block;
        r.count = count;
        r.bytes = op.bytes * op.count;
        r.time_s = (collective_time_s(op.kind, op.bytes, g, sys) + sys.eff.host_collective_overhead_s) * op.count;
        r.bound = Bound::network;
        rows.push_back(std::move(r));
    }
}

void add_phase(std::vector<RooflineRow>& rows, const char* phase, const InferContext& c, const ParallelConfig& p,
               const LayerShape& layer, const LayerShape& head) {
    const SystemSpec& sys = c.system;
    const CostContext ctx = inference_cost_context(c.inference);
    const CommSpans spans = place_groups(p, sys);
    add_block(rows, phase, "embedding", 1, embedding_ops(c.model, layer), sys, ctx, spans);
    const LayerKindSet kinds = layer_kinds(c.model);
    for (const LayerKind k : kinds)
        add_block(rows, phase, kinds.size() == 1 ? std::string("layer") : fmt::format("{} layer", to_string(k)),
                  as_d(count_layers(c.model, k, 0, c.model.layers)), layer_ops(c.model, layer, k), sys, ctx, spans);
    add_block(rows, phase, "head", 1, head_ops(c.model, head, false), sys, ctx, spans);
    const GroupSpan& tp = spans.span[idx(CommGroup::tp)];
    if (tp.size > 1) {
        RooflineRow r;
        r.phase = phase;
        r.name = "logits_all_gather";
        r.block = "head";
        r.bytes = head.batch * head.q_len * as_d(c.model.vocab) * head.act_bytes;
        r.time_s = collective_time_s(Collective::all_gather, r.bytes, tp, sys) + sys.eff.host_collective_overhead_s;
        r.bound = Bound::network;
        rows.push_back(std::move(r));
    }
    if (p.pp > 1) {
        RooflineRow r;
        r.phase = phase;
        r.name = "pp_send";
        r.block = "pipeline";
        r.count = as_d(p.pp) - 1.0;
        r.bytes = layer.batch * layer.q_len * as_d(c.model.hidden) * layer.act_bytes;
        r.time_s = collective_time_s(Collective::p2p, r.bytes, spans.span[idx(CommGroup::pp)], sys) +
                   sys.eff.host_collective_overhead_s;
        r.bound = Bound::network;
        rows.push_back(std::move(r));
    }
}

}  // namespace

std::string_view to_string(Bound b) {
    switch (b) {
        case Bound::compute: return "compute";
        case Bound::memory: return "memory";
        case Bound::sram: return "sram";
        case Bound::network: return "network";
    }
    return "?";
}

Roofline inference_roofline(const InferContext& c, const ParallelConfig& p, int64_t context) {
    const InferenceSpec& s = c.inference;
    Roofline r;
    r.context = context > 0 ? context : s.input_len + s.output_len / 2;
    r.balance = c.system.accel.matrix_peak(s.precision).value_or(0) / c.system.accel.memory_bw_bytes_per_s;
    const LayerShape pre = prefill_shape(c.model, p, s);
    LayerShape pre_head = pre;
    pre_head.q_len = 1;
    add_phase(r.rows, "prefill", c, p, pre, pre_head);
    const LayerShape dec = decode_shape(p, s, static_cast<double>(r.context));
    add_phase(r.rows, "decode", c, p, dec, dec);
    return r;
}

Bound BoundSplit::dominant() const {
    if (network_s > std::max({compute_s, memory_s, sram_s})) return Bound::network;
    if (sram_s > std::max(compute_s, memory_s)) return Bound::sram;
    return compute_s > memory_s ? Bound::compute : Bound::memory;
}

BoundSplit phase_split(const Roofline& r, std::string_view phase) {
    BoundSplit s;
    for (const RooflineRow& row : r.rows) {
        if (row.phase != phase) continue;
        const double t = row.time_s * row.count;
        switch (row.bound) {
            case Bound::compute: s.compute_s += t; break;
            case Bound::memory: s.memory_s += t; break;
            case Bound::sram: s.sram_s += t; break;
            case Bound::network: s.network_s += t; break;
        }
    }
    return s;
}

}  // namespace sm
