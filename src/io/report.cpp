#include "io/report.hpp"

#include <cmath>
#include <vector>

#include <fmt/format.h>

#include "io/csv.hpp"
#include "io/energy_report.hpp"
#include "io/provenance.hpp"
#include "parallel/pipeline_split.hpp"

namespace sm {

namespace {

void flatten(const Json& j, const std::string& prefix, std::vector<std::pair<std::string, std::string>>& out) {
    if (j.is_object()) {
        for (const auto& [k, v] : j.items()) flatten(v, prefix.empty() ? k : prefix + "." + k, out);
    } else if (j.is_array()) {
        return;  // lists (the op table, search results) have their own writers
    } else if (j.is_string()) {
        out.emplace_back(prefix, csv_field(j.get<std::string>()));
    } else if (j.is_number_float()) {
        out.emplace_back(prefix, csv_number(j.get<double>()));
    } else {
        out.emplace_back(prefix, j.dump());
    }
}

}  // namespace

std::string gib(double bytes) { return fmt::format("{:.2f} GiB", bytes / 1073741824.0); }

std::string seconds(double s) {
    if (s >= 1.0) return fmt::format("{:.3f} s", s);
    if (s >= 1e-3) return fmt::format("{:.3f} ms", s * 1e3);
    return fmt::format("{:.2f} us", s * 1e6);
}

std::string find_non_finite(const Json& j, const std::string& path) {
    if (j.is_number_float() && !std::isfinite(j.get<double>())) return path.empty() ? "(root)" : path;
    if (j.is_object())
        for (const auto& [k, v] : j.items()) {
            auto p = find_non_finite(v, path.empty() ? k : path + "." + k);
            if (!p.empty()) return p;
        }
    if (j.is_array())
        for (size_t i = 0; i < j.size(); ++i) {
            auto p = find_non_finite(j[i], path + "[" + std::to_string(i) + "]");
            if (!p.empty()) return p;
        }
    return {};
}

Json parallel_json(const ParallelConfig& p) {
    Json j{{"tp", p.tp}, {"tp_rows", p.tp_rows}, {"pp", p.pp}, {"dp", p.dp}, {"cp", p.cp}, {"ep", p.ep}, {"etp", p.expert_tp()}, {"vp", p.vp},
           {"sequence_parallel", p.sequence_parallel}, {"microbatch", p.microbatch}, {"zero", p.zero},
           {"recompute", to_string(p.recompute)}, {"offload", to_string(p.offload)}, {"order", to_string(p.order)},
           {"cp_kind", to_string(p.cp_kind)}};
    if (p.recompute == Recompute::selective && p.recompute_modules != kDefaultRecomputeModules)
        j["recompute_modules"] = module_list(p.recompute_modules);
    if (p.recompute == Recompute::full && p.recompute_layers > 0) j["recompute_layers"] = p.recompute_layers;
    if (p.split == PipelineSplit::first_last) {
        j["first_stage_layers"] = p.first_stage_layers;
        j["last_stage_layers"] = p.last_stage_layers;
    } else if (p.split == PipelineSplit::layout) {
        j["pipeline_layout"] = layout_text(p.layout, p.layout_mtp);
    } else {
        j["pipeline_split"] = to_string(p.split);
    }
    return j;
}

Json memory_json(const TrainMemory& m) {
    return Json{{"peak_bytes_per_gpu", m.peak_bytes_per_gpu}, {"weights_bytes", m.weights_bytes},
                {"gradients_bytes", m.gradients_bytes},       {"optimizer_bytes", m.optimizer_bytes},
                {"activations_bytes", m.activations_bytes},   {"overhead_bytes", m.overhead_bytes}};
}

Json stages_json(const std::vector<StageReport>& stages) {
    Json out = Json::array();
    for (const StageReport& s : stages) {
        Json chunks = Json::array();
        for (const auto& c : s.chunks) chunks.push_back({{"first_layer", c.first_layer}, {"layers", c.layers}});
        const BlockCost& b = s.micro_batch;
        out.push_back({{"gpu", s.gpu},
                       {"layers", s.load.layers},
                       {"dense_layers", s.load.blocks[idx(LayerKind::dense)]},
                       {"moe_layers", s.load.blocks[idx(LayerKind::moe)]},
                       {"mamba_layers", s.load.blocks[idx(LayerKind::mamba)]},
                       {"mlp_layers", s.load.blocks[idx(LayerKind::mlp)]},
                       {"attention_layers", s.load.blocks[idx(LayerKind::attention)]},
                       {"linear_layers", s.load.blocks[idx(LayerKind::linear)]},
                       {"experts_layers", s.load.blocks[idx(LayerKind::experts)]},
                       {"embedding", s.load.embedding},
                       {"head", s.load.head},
                       {"chunks", chunks},
                       {"micro_batch_s", s.micro_batch_s},
                       {"fwd_s", b.fwd_s},
                       {"bwd_s", b.bwd_s},
                       {"recompute_s", b.recompute_s},
                       {"comm_exposed_s", b.exposed_comm_s()},
                       {"microbatches_in_flight", s.in_flight},
                       {"memory", memory_json(s.memory)}});
    }
    return out;
}

std::string stages_text(const ParallelConfig& p, const std::vector<StageReport>& stages, double capacity_bytes) {
    std::string o = fmt::format("\n  pipeline stages (pp {} x vp {}, {} split)\n", p.pp, p.pp > 1 ? p.vp : 1, to_string(p.split));
    o += fmt::format("  {:>4} {:>7}  {:<28} {:<10} {:>14} {:>9} {:>12}\n", "GPU", "layers", "layer ranges", "ends",
                     "per micro-batch", "in flight", "memory");
    for (const StageReport& s : stages) {
        std::string ranges;
        for (const auto& c : s.chunks) {
            if (!ranges.empty()) ranges += ",";
            ranges += c.layers == 0   ? std::string("-")
                      : c.layers == 1 ? std::to_string(c.first_layer)
                                      : fmt::format("{}-{}", c.first_layer, c.first_layer + c.layers - 1);
        }
        if (ranges.size() > 28) ranges = ranges.substr(0, 25) + "...";
        const std::string ends = s.load.embedding && s.load.head ? "emb+head" : s.load.embedding ? "embedding" : s.load.head ? "head" : "";
        o += fmt::format("  {:>4} {:>7}  {:<28} {:<10} {:>14} {:>9.2f} {:>12}{}\n", s.gpu, s.load.layers, ranges, ends,
                         seconds(s.micro_batch_s), s.in_flight, gib(s.memory.peak_bytes_per_gpu),
                         s.memory.peak_bytes_per_gpu > capacity_bytes ? "  over" : "");
    }
    return o;
}

EnergyScope train_energy_scope(const TrainResult& r) {
    return {r.energy, r.step_time_s, static_cast<double>(r.gpus), r.tokens_per_s * r.step_time_s, 0.0};
}

Json train_json(const Scenario& s, const TrainResult& r) {
    const TrainMemory& m = r.memory;
    const TrainBreakdown& b = r.breakdown;
    Json j{
        {"model", s.model.name},
        {"system", s.system.name},
        {"parallel", parallel_json(s.parallel)},
        {"step_time_s", r.step_time_s},
        {"tokens_per_s", r.tokens_per_s},
        {"tokens_per_s_per_gpu", r.tokens_per_s_per_gpu},
        {"mfu", r.mfu},
        {"hfu", r.hfu},
        {"gpus", r.gpus},
        {"microbatches", r.microbatches},
        {"params", r.params_total},
        {"model_flop_per_step", r.model_flop_per_step},
        {"fits_in_memory", r.fits_in_memory},
        {"memory",
         {{"peak_bytes_per_gpu", m.peak_bytes_per_gpu},
          {"capacity_bytes", s.system.accel.memory_bytes},
          {"weights_bytes", m.weights_bytes},
          {"gradients_bytes", m.gradients_bytes},
          {"optimizer_bytes", m.optimizer_bytes},
          {"activations_bytes", m.activations_bytes},
          {"overhead_bytes", m.overhead_bytes},
          {"host_bytes", m.host_bytes}}},
        {"breakdown",
         {{"compute_s", b.compute_s},
          {"recompute_s", b.recompute_s},
          {"bubble_s", b.bubble_s},
          {"optimizer_s", b.optimizer_s},
          {"tp_comm_exposed_s", b.tp_comm_exposed_s},
          {"pp_comm_exposed_s", b.pp_comm_exposed_s},
          {"dp_comm_exposed_s", b.dp_comm_exposed_s},
          {"cp_comm_exposed_s", b.cp_comm_exposed_s},
          {"ep_comm_exposed_s", b.ep_comm_exposed_s},
          {"offload_exposed_s", b.offload_exposed_s}}},
        {"comm_link",
         {{"tp_s", r.link.tp_s}, {"pp_s", r.link.pp_s}, {"dp_s", r.link.dp_s}, {"cp_s", r.link.cp_s}, {"ep_s", r.link.ep_s},
          {"tp_rows_s", r.link.tp_rows_s}, {"offload_s", r.link.offload_s}}},
        {"slowest_stage", r.slowest_stage},
        {"peak_stage", r.peak_stage},
    };
    add_energy_keys(j, s.system, train_energy_scope(r), false);
    return j;
}

namespace {

// The recompute mode, with its modules or its layers per chunk where they are not the default.
std::string recompute_label(const ParallelConfig& p) {
    if (p.recompute == Recompute::selective && p.recompute_modules != kDefaultRecomputeModules)
        return fmt::format("selective ({})", module_names(p.recompute_modules, ", "));
    if (p.recompute == Recompute::full && p.recompute_layers > 0)
        return fmt::format("full (the first {} layer{} of each chunk)", p.recompute_layers, p.recompute_layers == 1 ? "" : "s");
    return std::string(to_string(p.recompute));
}

}  // namespace

std::string train_text(const Scenario& s, const TrainResult& r) {
    const ParallelConfig& p = s.parallel;
    const TrainBreakdown& b = r.breakdown;
    std::string o;
    o += fmt::format("Training step: {} ({:.1f}B params) on {} x {} ({})\n", s.model.name, r.params_total / 1e9, r.gpus,
                     s.system.accel.name, s.system.name);
    o += provenance_text(s);
    o += fmt::format("Layout: tp {} . pp {} . dp {} . cp {}{}  vp {}  micro-batch {} x {}  ZeRO {}  recompute {}  {}\n",
                     p.tp, p.pp, p.dp, p.cp, p.sequence_parallel ? " (+SP)" : "", p.vp, p.microbatch, r.microbatches,
                     p.zero, recompute_label(p), to_string(s.training.precision));
    if (p.summa())
        o += fmt::format("Tensor parallelism: SUMMA 2D, {} rows x {} columns (tokens over rows, heads and widths over columns)\n",
                         p.tp_rows, p.tp_cols());
    // Shown only where they differ from Megatron's defaults, so existing reports read as before.
    if (p.order != RankOrder::tp_cp_dp || (p.cp > 1 && p.cp_kind != CpKind::ring))
        o += fmt::format("Ranks: order {}  context parallelism {}\n", to_string(p.order), to_string(p.cp_kind));
    o += fmt::format("\n  step time            {:>12}\n", seconds(r.step_time_s));
    o += fmt::format("  tokens/s             {:>12.0f}   ({:.1f} per GPU)\n", r.tokens_per_s, r.tokens_per_s_per_gpu);
    // MFU is against the peak of the math precision: an fp8 or fp4 peak is 2x or 4x the bf16 one.
    o += fmt::format("  MFU / HFU            {:>11.1f}%   / {:.1f}%   (of the {} matrix peak)\n", 100 * r.mfu, 100 * r.hfu,
                     to_string(s.training.precision));
    o += "\n  where the time goes             time    share   on the wire\n";
    auto row = [&](const char* name, double t, double link) {
        const std::string wire = link >= 0 ? seconds(link) : std::string();
        o += fmt::format("  {:<24} {:>12} {:>7.1f}%   {}\n", name, seconds(t), 100 * t / r.step_time_s, wire);
    };
    row("compute", b.compute_s, -1);
    row("recompute", b.recompute_s, -1);
    row("pipeline bubble", b.bubble_s, -1);
    row("optimizer", b.optimizer_s, -1);
    row("TP comm (exposed)", b.tp_comm_exposed_s, r.link.tp_s);
    row("PP comm (exposed)", b.pp_comm_exposed_s, r.link.pp_s);
    row("DP comm (exposed)", b.dp_comm_exposed_s, r.link.dp_s);
    row("CP comm (exposed)", b.cp_comm_exposed_s, r.link.cp_s);
    if (s.model.moe.enabled()) row("EP comm (exposed)", b.ep_comm_exposed_s, r.link.ep_s);
    if (p.offload != Offload::none) row("offload (exposed)", b.offload_exposed_s, r.link.offload_s);
    const TrainMemory& m = r.memory;
    o += fmt::format("\n  memory per GPU (pipeline GPU {}, the largest; GPU {} sets the pace)\n", r.peak_stage, r.slowest_stage);
    o += fmt::format("  {:<24} {:>12}\n", "weights", gib(m.weights_bytes));
    o += fmt::format("  {:<24} {:>12}\n", "gradients", gib(m.gradients_bytes));
    o += fmt::format("  {:<24} {:>12}\n", "optimizer state", gib(m.optimizer_bytes));
    o += fmt::format("  {:<24} {:>12}\n", "activations", gib(m.activations_bytes));
    o += fmt::format("  {:<24} {:>12}\n", "buffers + framework", gib(m.overhead_bytes));
    if (p.offload != Offload::none)
        o += fmt::format("  {:<24} {:>12}   ({} offloaded; of {} host memory)\n", "host memory", gib(m.host_bytes),
                         to_string(p.offload), gib(s.system.host_memory.capacity_bytes));
    o += fmt::format("  {:<24} {:>12}   of {} -> {}\n", "peak", gib(m.peak_bytes_per_gpu), gib(s.system.accel.memory_bytes),
                     r.fits_in_memory ? "fits" : "DOES NOT FIT");
    o += energy_text(s.system, train_energy_scope(r), false);
    return o;
}

std::string csv_header(const Json& j) {
    std::vector<std::pair<std::string, std::string>> f;
    flatten(j, "", f);
    std::vector<std::string> names;
    for (auto& [name, value] : f) names.push_back(csv_field(name));
    return csv_line(names);
}

std::string csv_row(const Json& j) {
    std::vector<std::pair<std::string, std::string>> f;
    flatten(j, "", f);
    std::vector<std::string> values;
    for (auto& [name, value] : f) values.push_back(std::move(value));
    return csv_line(values);
}

}  // namespace sm
