#include "io/technology_reader.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <string_view>
#include <vector>

#include "core/error.hpp"
#include "io/embedded.hpp"
#include "io/field_table.hpp"

namespace sm {

namespace {

Json technology_table(std::string_view name) {
    for (const auto& f : embedded_technology_presets())
        if (f.name == name) return Json::parse(f.text);
    throw std::logic_error("embedded technology table missing");
}

// The entries of a preset table (its objects; the rest is documentation), alphabetical.
std::vector<std::string> entries(const Json& t) {
    std::vector<std::string> v;
    for (const auto& [k, e] : t.items())
        if (e.is_object()) v.push_back(k);
    return v;
}

// Names that start with a number ("12nm", "1.4nm", "200g") in the order people read them.
std::vector<std::string> by_number(std::vector<std::string> v, bool descending) {
    std::stable_sort(v.begin(), v.end(), [&](const std::string& a, const std::string& b) {
        return descending ? std::stod(a) > std::stod(b) : std::stod(a) < std::stod(b);
    });
    return v;
}

double num(const Json& entry, const char* key) { return entry.at(key).get<double>(); }

}  // namespace

HbmStack read_hbm_stack(ObjectReader& h, const std::string& section, const std::optional<std::string>& default_generation) {
    const Json table = Json::parse(embedded_memory_presets().front().text);
    HbmStack out;
    out.generation = h.choice("generation", default_generation, entries(table));
    out.entry = table[out.generation];
    out.bw_bytes_per_s = system_number(h, section, "stack_bw_bytes_per_s", num(out.entry, "stack_bw_bytes_per_s"));
    out.bytes = system_number(h, section, "stack_bytes", num(out.entry, "stack_bytes"));
    return out;
}

std::optional<TechnologyReading> read_technology(ObjectReader& system) {
    auto r = system.child("technology");
    if (!r) return std::nullopt;
    const Json nodes = technology_table("nodes");
    const Json serdes = technology_table("serdes");
    const auto node_names = by_number(entries(nodes), true);

    TechnologyReading out;
    TechnologySpec& t = out.spec;
    const std::string node = r->choice("node", std::nullopt, node_names);
    const std::string memory_node = r->choice("memory_node", node, node_names);
    const std::string network_node = r->choice("network_node", node, node_names);
    const std::string sram_node = r->choice("sram_node", node, node_names);  // SRAM-only scaling
    const Json& n = nodes[node];
    // Any figure of the node may be overridden (what a sensitivity or a what-if varies).
    const std::string tech = "technology";
    t.node.logic_density_per_m2 = system_number(*r, tech, "logic_density_per_m2", num(n, "logic_density_per_m2"));
    t.node.sram_bytes_per_m2 = system_number(*r, tech, "sram_bytes_per_m2", num(nodes[sram_node], "sram_bytes_per_m2"));
    t.node.clock_hz = system_number(*r, tech, "clock_hz", num(n, "clock_hz"));
    t.node.bf16_j_per_flop = system_number(*r, tech, "bf16_j_per_flop", num(n, "bf16_j_per_flop"));
    t.node.sram_j_per_bit = system_number(*r, tech, "sram_j_per_bit", num(nodes[sram_node], "sram_j_per_bit"));
    t.node.leakage_w_per_m2 = system_number(*r, tech, "leakage_w_per_m2", num(n, "leakage_w_per_m2"));
    t.dies = system_count(*r, tech, "dies", 1);
    const double die_mm2 = system_number(*r, tech, "die_area_mm2", std::nullopt);
    t.die_area_m2 = die_mm2 * 1e-6;
    t.tdp_w = system_number(*r, tech, "tdp_w", std::nullopt);
    // Defaults: the B200's floorplan (docs/PRESET_SCHEMA.md).
    t.tensor_share = system_number(*r, tech, "tensor_share", 0.28);
    t.vector_share = system_number(*r, tech, "vector_share", 0.055);
    t.sram_share = system_number(*r, tech, "sram_share", 0.032);
    t.tensor_transistors_per_flop_cycle = system_number(*r, tech, "tensor_transistors_per_flop_cycle", t.tensor_transistors_per_flop_cycle);
    t.vector_transistors_per_flop_cycle = system_number(*r, tech, "vector_transistors_per_flop_cycle", t.vector_transistors_per_flop_cycle);
    t.sram_bytes_per_cycle_per_m2 = system_number(*r, tech, "sram_bytes_per_cycle_per_m2", t.sram_bytes_per_cycle_per_m2);
    std::vector<std::string> all;
    for (Precision p : kAllPrecisions) all.emplace_back(to_string(p));
    for (const std::string& p : r->choices("precisions", std::vector<std::string>{"fp32", "tf32", "fp16", "bf16", "fp8", "fp4", "int8"}, all))
        t.precisions[static_cast<size_t>(*parse_precision(p))] = true;
    if (!t.precisions[static_cast<size_t>(Precision::bf16)])
        fail(r->path_of("precisions"), "a list without bf16", "expected a list that includes bf16, the tensor array's reference format");

    {  // HBM: the memory node's generation unless named; as many stacks as the shoreline holds
        ObjectReader h = r->child_or_empty("hbm");
        const HbmStack stack = read_hbm_stack(h, "technology.hbm", nodes[memory_node]["hbm"].get<std::string>());
        const std::string& gen = stack.generation;
        t.hbm.stack_bw_bytes_per_s = stack.bw_bytes_per_s;
        t.hbm.stack_bytes = stack.bytes;
        t.hbm.j_per_bit = system_number(h, "technology.hbm", "j_per_bit", num(stack.entry, "j_per_bit"));
        t.hbm.phy_area_m2 = num(stack.entry, "phy_area_m2");
        t.hbm.edge_m = num(stack.entry, "edge_m");
        const int64_t most = max_hbm_stacks(t);
        if (most < 1)
            fail(h.path_of("stacks"), fmt::format("dies of {:g} mm2", die_mm2),
                 fmt::format("expected a die edge of at least {:g} mm for one stack", t.hbm.edge_m * 1e3));
        t.hbm.stacks = system_count(h, "technology.hbm", "stacks", most);
        if (t.hbm.stacks > most)
            fail(h.path_of("stacks"), std::to_string(t.hbm.stacks),
                 fmt::format("expected at most {}: {} die(s) of {:g} mm2 hold {} stacks of {} along two edges each ({:g} mm per stack)", most,
                             t.dies, die_mm2, most, gen, t.hbm.edge_m * 1e3));
        h.finish();
    }
    {  // SerDes: the network node's generation unless named
        ObjectReader s = r->child_or_empty("serdes");
        const auto gens = by_number(entries(serdes), false);
        const std::string up = s.choice("generation", nodes[network_node]["serdes"].get<std::string>(), gens);
        const std::string outg = s.choice("scale_out_generation", up, gens);
        auto lane = [&](const std::string& g) {
            const Json& e = serdes[g];
            return SerdesTech{num(e, "lane_bits_per_s"), num(e, "j_per_bit"), num(e, "lane_area_m2")};
        };
        t.scale_up_serdes = lane(up);
        t.scale_out_serdes = lane(outg);
        t.scale_up_lanes = system_count(s, "technology.serdes", "scale_up_lanes", 36);
        t.scale_out_lanes = system_count(s, "technology.serdes", "scale_out_lanes", 4);
        s.finish();
    }
    r->finish();

    const ChipPower fixed = fixed_power(t);
    if (t.tdp_w <= fixed.total_w())
        fail(r->path_of("tdp_w"), fmt::format("{:g} W", t.tdp_w),
             fmt::format("expected more than the {:.0f} W the chip spends before any math at full load (static {:.0f}, HBM {:.0f}, SerDes {:.0f})",
                         fixed.total_w(), fixed.static_w, fixed.hbm_w, fixed.serdes_w));
    out.chip = generate_chip(t);
    if (out.chip.area_used_share > 1.0)
        fail(r->path_of("tensor_share"), fmt::format("shares that use {:.3g} of the die area", out.chip.area_used_share),
             "expected at most 1: tensor + vector + SRAM shares plus the HBM PHYs and SerDes lanes must fit the dies");
    const GeneratedChip& g = out.chip;
    out.summary = fmt::format(
        "generated by system.technology: {} logic, {} x {:g} mm2, {:g} W; bf16 {:.4g} TFLOP/s ({}-limited; area {:.4g}, power {:.4g}); "
        "SRAM {:.4g} MB at {:.4g} TB/s; HBM {} x {:.4g} GB/s; scale-up {:.4g} GB/s, scale-out {:.4g} GB/s; full-load power {:.0f} W "
        "(tensor {:.0f}, SRAM {:.0f}, HBM {:.0f}, SerDes {:.0f}, static {:.0f})",
        node, t.dies, die_mm2, t.tdp_w, g.matrix_flop_per_s[static_cast<size_t>(Precision::bf16)] / 1e12,
        g.power_limited ? "power" : "area", g.area_limited_bf16_flop_per_s / 1e12, g.power_limited_bf16_flop_per_s / 1e12,
        g.sram_bytes / 1e6, g.sram_bw_bytes_per_s / 1e12, t.hbm.stacks, t.hbm.stack_bw_bytes_per_s / 1e9, g.scale_up_bw_bytes_per_s / 1e9,
        g.scale_out_bw_bytes_per_s / 1e9, g.power.total_w(), g.power.tensor_w, g.power.sram_w, g.power.hbm_w, g.power.serdes_w, g.power.static_w);
    return out;
}

}  // namespace sm
