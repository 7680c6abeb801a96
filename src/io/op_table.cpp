#include "io/op_table.hpp"

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "io/report.hpp"
#include "training/step.hpp"

namespace sm {

namespace {

std::string_view kind_name(OpKind k) {
    switch (k) {
        case OpKind::gemm: return "gemm";
        case OpKind::batched_gemm: return "batched_gemm";
        case OpKind::attention: return "attention";
        case OpKind::elementwise: return "elementwise";
    }
    return "?";
}

std::string_view collective_name(Collective c) {
    switch (c) {
        case Collective::all_reduce: return "all_reduce";
        case Collective::all_gather: return "all_gather";
        case Collective::reduce_scatter: return "reduce_scatter";
        case Collective::all_to_all: return "all_to_all";
        case Collective::p2p: return "p2p";
        case Collective::dispatch: return "dispatch";
    }
    return "?";
}

std::string_view group_name(CommGroup g) {
    switch (g) {
        case CommGroup::tp: return "tp";
        case CommGroup::cp: return "cp";
        case CommGroup::ep: return "ep";
        case CommGroup::dp: return "dp";
        case CommGroup::pp: return "pp";
        case CommGroup::tp_rows: return "tp_rows";
        case CommGroup::etp: return "etp";
    }
    return "?";
}

struct Blocks {
    LayerOps layer, embedding, head;
    std::optional<LayerOps> dense_layer;  // the dense blocks of a model that mixes dense and MoE
    std::vector<std::pair<LayerKind, LayerOps>> hybrid;  // a hybrid model's block of each kind it holds
};

Blocks blocks(const Scenario& s) {
    const LayerShape shape = training_shape(s.model, s.parallel, s.training);
    const LayerKindSet kinds = layer_kinds(s.model);
    Blocks b{layer_ops(s.model, shape, kinds.back()), embedding_ops(s.model, shape), head_ops(s.model, shape, true), {}, {}};
    if (s.model.hybrid()) {
        for (const LayerKind k : kinds) b.hybrid.emplace_back(k, layer_ops(s.model, shape, k));
    } else if (kinds.size() > 1) {
        b.dense_layer = layer_ops(s.model, shape, LayerKind::dense);
    }
    return b;
}

// A hybrid block's title, with its character in Megatron-Core's pattern.
std::string hybrid_title(LayerKind k) {
    return k == LayerKind::mamba       ? "Mamba-2 layer (M)"
           : k == LayerKind::attention ? "attention layer (*)"
           : k == LayerKind::experts   ? "mixture-of-experts layer (E)"
                                       : "FFN layer (-)";
}

Json block_json(const LayerOps& ops, const Scenario& s) {
    const CostContext ctx = training_cost_context(s.training);
    const CommSpans spans = place_groups(s.parallel, s.system);
    Json out = {{"ops", Json::array()}, {"comms", Json::array()}};
    for (const Op& op : ops.ops) {
        const OpCost c = cost_op(op, s.system, ctx);
        Json row = {{"name", op.name},           {"kind", kind_name(op.kind)},     {"fwd_flop", c.fwd_flop},
                    {"bwd_flop", c.bwd_flop},    {"fwd_bytes", c.fwd_bytes},       {"fwd_s", c.fwd_s},
                    {"dgrad_s", c.dgrad_s},      {"wgrad_s", c.wgrad_s},
                    {"dgrad_flop", c.dgrad_flop}, {"wgrad_flop", c.wgrad_flop},
                    {"dgrad_bytes", c.dgrad_bytes}, {"wgrad_bytes", c.wgrad_bytes},
                    {"saved_bytes", op.saved_bytes + op.core_saved_bytes},
                    {"recomputed_by_selective", op.attention_core}};
        if (op.kind == OpKind::gemm || op.kind == OpKind::batched_gemm)
            row["shape"] = {{"m", op.gemm.m}, {"n", op.gemm.n}, {"k", op.gemm.k}, {"batch", op.gemm.batch}};
        out["ops"].push_back(row);
    }
    for (const CommOp& c : ops.comms) {
        const GroupSpan& g = spans.span[idx(c.group)];
        out["comms"].push_back({{"name", c.name},
                                {"collective", collective_name(c.kind)},
                                {"group", group_name(c.group)},
                                {"pass", c.pass == Pass::fwd ? "fwd" : "bwd"},
                                {"bytes", c.bytes},
                                {"count", c.count},
                                {"gpus_per_domain", g.local},
                                {"domains", g.remote},
                                {"overlappable", c.overlappable},
                                {"link_s", collective_time_s(c.kind, c.bytes, g, s.system) * c.count}});
    }
    return out;
}

std::string block_text(const std::string& title, const Json& b) {
    std::string o = fmt::format("\n  {}\n  {:<22} {:<13} {:>26} {:>10} {:>10} {:>10} {:>10} {:>10}\n", title, "op", "kind",
                                "m x n x k (x batch)", "GFLOP", "MB", "fwd", "dgrad", "wgrad");
    for (const Json& r : b["ops"]) {
        std::string shape;
        if (r.contains("shape")) {
            const Json& sh = r["shape"];
            shape = fmt::format("{:.0f} x {:.0f} x {:.0f}", sh["m"].get<double>(), sh["n"].get<double>(), sh["k"].get<double>());
            if (sh["batch"].get<double>() > 1) shape += fmt::format(" x{:.0f}", sh["batch"].get<double>());
        }
        o += fmt::format("  {:<22} {:<13} {:>26} {:>10.2f} {:>10.1f} {:>10} {:>10} {:>10}\n", r["name"].get<std::string>(),
                         r["kind"].get<std::string>(), shape, r["fwd_flop"].get<double>() / 1e9,
                         r["fwd_bytes"].get<double>() / 1e6, seconds(r["fwd_s"].get<double>()),
                         seconds(r["dgrad_s"].get<double>()), seconds(r["wgrad_s"].get<double>()));
    }
    for (const Json& c : b["comms"])
        o += fmt::format("  {:<22} {:<13} {:>26} {:>10} {:>10.1f} {:>10}   {} {} over {} x {}\n", c["name"].get<std::string>(),
                         c["collective"].get<std::string>(), "", "", c["bytes"].get<double>() / 1e6,
                         seconds(c["link_s"].get<double>()), c["group"].get<std::string>(), c["pass"].get<std::string>(),
                         c["gpus_per_domain"].get<int64_t>(), c["domains"].get<int64_t>());
    return o;
}

}  // namespace

Json training_ops_json(const Scenario& s) {
    const Blocks b = blocks(s);
    Json out = {{"layer", block_json(b.layer, s)}, {"embedding", block_json(b.embedding, s)}, {"head", block_json(b.head, s)}};
    if (b.dense_layer) out["dense_layer"] = block_json(*b.dense_layer, s);
    // A hybrid model: one block per kind, keyed mamba_layer, mlp_layer, attention_layer,
    // experts_layer ("layer" is the last of them).
    for (const auto& [k, ops] : b.hybrid) out[fmt::format("{}_layer", to_string(k))] = block_json(ops, s);
    return out;
}

std::string training_ops_text(const Scenario& s) {
    const Json j = training_ops_json(s);
    std::string o = "\nOps of one micro-batch on one GPU (per layer; times include kernel latency)";
    if (s.model.hybrid()) {
        for (const LayerKind k : layer_kinds(s.model)) o += block_text(hybrid_title(k), j[fmt::format("{}_layer", to_string(k))]);
    } else if (j.contains("dense_layer")) {
        o += block_text("MoE transformer layer", j["layer"]);
        o += block_text("dense transformer layer", j["dense_layer"]);
    } else {
        o += block_text("transformer layer", j["layer"]);
    }
    o += block_text("embedding (first stage)", j["embedding"]);
    o += block_text("head and loss (last stage)", j["head"]);
    return o;
}

}  // namespace sm
