// system.technology: the accelerator generated from a process node, a chip budget and HBM and
// SerDes generations. Expectations are hand-computed closed forms and the datasheet figures in
// presets/systems (each with its source).
#include <gtest/gtest.h>

#include <cctype>

#include <random>
#include <string>

#include "hardware/technology.hpp"
#include "io/scenario.hpp"
#include "io/field_table.hpp"
#include "io/provenance.hpp"
#include "test_helpers.hpp"

namespace sm {
namespace {

using testing::load;

// A chip with round figures: 500 mm2 at 1e14 transistors/m2 (5e10 transistors), 2 GHz, 0.5 pJ per
// bf16 FLOP, 0.05 W/mm2 static; 4 HBM stacks of 1 TB/s at 3 pJ/bit; 10 scale-up lanes of 100 Gb/s
// at 5 pJ/bit; 4 NIC lanes of 50 Gb/s.
TechnologySpec round_chip(double tdp_w) {
    TechnologySpec t;
    t.node = {1e14, 4e12, 2e9, 0.5e-12, 5e4};
    t.dies = 1;
    t.die_area_m2 = 500e-6;
    t.tdp_w = tdp_w;
    t.tensor_share = 0.2;
    t.vector_share = 0.05;
    t.sram_share = 0.04;
    t.tensor_transistors_per_flop_cycle = 40e3;
    t.vector_transistors_per_flop_cycle = 200e3;
    for (Precision p : {Precision::fp32, Precision::tf32, Precision::bf16, Precision::fp8, Precision::fp4})
        t.precisions[static_cast<size_t>(p)] = true;
    t.hbm = {4, 1e12, 24e9, 3e-12, 12e-6, 11e-3};
    t.scale_up_serdes = {100e9, 5e-12, 0.3e-6};
    t.scale_out_serdes = {50e9, 5.5e-12, 0.2e-6};
    t.scale_up_lanes = 10;
    t.scale_out_lanes = 4;
    return t;
}

double rate(const GeneratedChip& g, Precision p) { return g.matrix_flop_per_s[static_cast<size_t>(p)]; }

TEST(Technology, FixedPowerOfTwoDiesWithAnSramEnergy) {
    // Two 500 mm2 dies: 1,000 mm2 of static power (0.05 W/mm2: 50 W) and 40 mm2 of SRAM at 475 B
    // per clock per mm2 and 2 GHz = 3.8e13 B/s, at 0.1 pJ per bit: 30.4 W.
    TechnologySpec t = round_chip(600);
    t.dies = 2;
    t.node.sram_j_per_bit = 0.1e-12;
    const ChipPower p = fixed_power(t);
    EXPECT_NEAR(p.static_w, 50.0, 1e-9);
    EXPECT_NEAR(p.sram_w, 30.4, 1e-9);
    EXPECT_NEAR(p.total_w(), 50.0 + 30.4 + 96.0 + 10.0, 1e-9);  // HBM and SerDes as one die's
}

TEST(Technology, AreaLimitedChipByHand) {
    const GeneratedChip g = generate_chip(round_chip(600));
    // 0.2 x 5e10 transistors / 40e3 per FLOP/clk = 250,000 FLOP/clk x 2 GHz = 5e14.
    EXPECT_DOUBLE_EQ(g.area_limited_bf16_flop_per_s, 5e14);
    // Static 0.05 W/mm2 x 500 = 25 W; HBM 4 TB/s x 8 x 3 pJ = 96 W; SerDes 2 x 10 x 100 Gb/s x 5 pJ
    // = 10 W: 131 W fixed, 469 W left, more than the 250 W the tensors draw at full rate.
    EXPECT_NEAR(g.power.static_w, 25.0, 1e-9);
    EXPECT_NEAR(g.power.hbm_w, 96.0, 1e-9);
    EXPECT_NEAR(g.power.serdes_w, 10.0, 1e-9);
    EXPECT_FALSE(g.power_limited);
    EXPECT_DOUBLE_EQ(rate(g, Precision::bf16), 5e14);
    EXPECT_DOUBLE_EQ(rate(g, Precision::tf32), 2.5e14);
    EXPECT_DOUBLE_EQ(rate(g, Precision::fp8), 1e15);
    EXPECT_DOUBLE_EQ(rate(g, Precision::fp4), 2e15);
    EXPECT_EQ(rate(g, Precision::int8), 0.0);  // not in the chip's formats
    EXPECT_EQ(rate(g, Precision::fp16), 0.0);
    // Vector: 0.05 x 5e10 / 200e3 = 12,500 FLOP/clk x 2 GHz; fp32 "matrix" is the vector rate.
    EXPECT_DOUBLE_EQ(g.vector_flop_per_s, 2.5e13);
    EXPECT_DOUBLE_EQ(rate(g, Precision::fp32), 2.5e13);
    EXPECT_NEAR(g.power.tensor_w, 250.0, 1e-9);  // 5e14 x 0.5 pJ
    EXPECT_NEAR(g.power.total_w(), 381.0, 1e-9);
    EXPECT_NEAR(g.sram_bytes, 8e7, 1.0);         // 0.04 x 500 mm2 x 4 MB/mm2
    // 20 mm2 of SRAM x 475 B per clock per mm2 = 9,500 B per clock x 2 GHz.
    EXPECT_NEAR(g.sram_bw_bytes_per_s, 19e12, 1.0);
    EXPECT_DOUBLE_EQ(g.memory_bytes, 96e9);
    EXPECT_DOUBLE_EQ(g.memory_bw_bytes_per_s, 4e12);
    EXPECT_DOUBLE_EQ(g.scale_up_bw_bytes_per_s, 125e9);  // 10 x 100 Gb/s / 8
    EXPECT_DOUBLE_EQ(g.scale_out_bw_bytes_per_s, 25e9);  // 4 x 50 Gb/s / 8
    // 0.29 of the area in shares + (4 x 12 mm2 PHYs + 10 x 0.3 mm2 lanes) / 500 mm2 = 0.392.
    EXPECT_NEAR(g.area_used_share, 0.392, 1e-12);
}

TEST(Technology, PowerLimitedChipByHand) {
    // 300 W: 169 W left for tensors that would draw 250 W at the node's clock. With the voltage
    // following the clock, power goes with the clock cubed: the clock drops to (169/250)^(1/3) =
    // 0.8776 of the node's, every rate with it, and the chip then draws exactly its TDP.
    const GeneratedChip g = generate_chip(round_chip(300));
    const double f = 0.877639;  // cube root of 0.676, by hand
    EXPECT_TRUE(g.power_limited);
    EXPECT_NEAR(rate(g, Precision::bf16), 5e14 * f, 1e9);
    EXPECT_NEAR(rate(g, Precision::fp8), 1e15 * f, 2e9);
    EXPECT_NEAR(g.vector_flop_per_s, 2.5e13 * f, 1e8);
    EXPECT_NEAR(g.sram_bw_bytes_per_s, 19e12 * f, 1e8);  // SRAM ports run at the lowered clock too
    EXPECT_NEAR(g.power.tensor_w, 169.0, 1e-6);
    EXPECT_NEAR(g.power.total_w(), 300.0, 1e-6);
    EXPECT_NEAR(g.power_limited_bf16_flop_per_s, 5e14 * f, 1e9);
    EXPECT_DOUBLE_EQ(g.area_limited_bf16_flop_per_s, 5e14);  // what the area alone would give
    // Not limited at 600 W: the TDP would allow (469/250)^(1/3) = 1.2333 x the node's clock.
    EXPECT_NEAR(generate_chip(round_chip(600)).power_limited_bf16_flop_per_s, 5e14 * 1.233325, 1e9);
    // Half a watt above the 131 W the chip spends before any math: the clock falls to
    // (0.5 / 250)^(1/3) = 0.125992 of the node's, and the tensors draw that half watt.
    const GeneratedChip starved = generate_chip(round_chip(131.5));
    EXPECT_NEAR(rate(starved, Precision::bf16), 5e14 * 0.125992, 1e9);
    EXPECT_NEAR(starved.power.tensor_w, 0.5, 1e-9);
}

TEST(Technology, TensorRatesPerFormat) {
    EXPECT_EQ(tensor_rate_ratio(Precision::tf32), 0.5);
    EXPECT_EQ(tensor_rate_ratio(Precision::fp16), 1.0);
    EXPECT_EQ(tensor_rate_ratio(Precision::bf16), 1.0);
    EXPECT_EQ(tensor_rate_ratio(Precision::fp8), 2.0);
    EXPECT_EQ(tensor_rate_ratio(Precision::int8), 2.0);
    EXPECT_EQ(tensor_rate_ratio(Precision::fp4), 4.0);
    EXPECT_EQ(tensor_rate_ratio(Precision::int4), 4.0);
    EXPECT_EQ(tensor_rate_ratio(Precision::fp32), 0.0);
}

TEST(Technology, ShorelineHoldsTheStacks) {
    TechnologySpec t = round_chip(600);
    // 500 mm2: two edges of 22.36 mm = 44.7 mm hold 4 stacks of 11 mm; two dies hold 8.
    EXPECT_EQ(max_hbm_stacks(t), 4);
    t.dies = 2;
    EXPECT_EQ(max_hbm_stacks(t), 8);
    t.dies = 1;
    t.die_area_m2 = 100e-6;  // 2 x 10 mm = 20 mm: one stack
    EXPECT_EQ(max_hbm_stacks(t), 1);
    t.die_area_m2 = 900e-6;  // 2 x 30 mm = 60 mm: 5 stacks (5.45)
    EXPECT_EQ(max_hbm_stacks(t), 5);
}

// Random chips: at the generated rates, all units busy, the chip never draws more than its TDP;
// a larger TDP is never slower; every figure is finite.
TEST(Technology, PropertyPowerWithinTdpAndMonotone) {
    std::mt19937_64 rng(7);
    auto u = [&](double lo, double hi) { return std::uniform_real_distribution<double>(lo, hi)(rng); };
    for (int i = 0; i < 2000; ++i) {
        TechnologySpec t = round_chip(0);
        t.node = {u(1e13, 3e14), u(1e12, 1e13), u(1e9, 3e9), u(0.05e-12, 2e-12), u(0, 1e5)};
        t.dies = 1 + static_cast<int64_t>(u(0, 4));
        t.die_area_m2 = u(100e-6, 900e-6);
        t.tensor_share = u(0.05, 0.5);
        t.vector_share = u(0.0, 0.1);
        t.hbm.stacks = 1 + static_cast<int64_t>(u(0, 8));
        t.scale_up_lanes = 1 + static_cast<int64_t>(u(0, 72));
        t.tdp_w = fixed_power(t).total_w() + u(1, 1500);
        const GeneratedChip g = generate_chip(t);
        ASSERT_LE(g.power.total_w(), t.tdp_w * (1 + 1e-12)) << i;
        ASSERT_TRUE(std::isfinite(rate(g, Precision::bf16)) && rate(g, Precision::bf16) > 0) << i;
        ASSERT_TRUE(std::isfinite(g.vector_flop_per_s) && std::isfinite(g.sram_bytes)) << i;
        TechnologySpec more = t;
        more.tdp_w *= 1.5;
        ASSERT_GE(rate(generate_chip(more), Precision::bf16), rate(g, Precision::bf16)) << i;
    }
}

// A100, H100 and B200 described by their node, area, power and memory and network generations
// (examples/technology/) against their datasheet figures (the presets', each with its source):
// every peak, HBM bandwidth and capacity, NVLink and NIC bandwidth within 15%.
void expect_reconstructs(const std::string& chip, const std::string& preset) {
    const auto doc = read_scenario_file(std::string(SCALEMODEL_SOURCE_DIR) + "/examples/technology/" + chip + ".json");
    ASSERT_TRUE(doc.ok()) << doc.error().message();
    const auto s = build_scenario(doc.value(), Purpose::train);
    ASSERT_TRUE(s.ok()) << s.error().message();
    const SystemSpec datasheet = testing::system_preset(preset);
    const auto within = [&](double got, double want, const std::string& what) {
        EXPECT_NEAR(got / want, 1.0, 0.15) << chip << " " << what << ": " << got << " vs " << want;
    };
    for (Precision p : kAllPrecisions) {
        const auto want = datasheet.accel.matrix_peak(p);
        const auto got = s->system.accel.matrix_peak(p);
        EXPECT_EQ(got.has_value(), want.has_value()) << chip << " " << to_string(p);
        if (got && want) within(*got, *want, std::string(to_string(p)));
    }
    within(s->system.accel.vector_flop_per_s, datasheet.accel.vector_flop_per_s, "vector");
    within(s->system.accel.memory_bw_bytes_per_s, datasheet.accel.memory_bw_bytes_per_s, "HBM bandwidth");
    within(s->system.accel.memory_bytes, datasheet.accel.memory_bytes, "HBM capacity");
    within(s->system.scale_up.bw_bytes_per_s, datasheet.scale_up.bw_bytes_per_s, "scale-up");
    within(s->system.scale_out.bw_bytes_per_s, datasheet.scale_out.bw_bytes_per_s, "scale-out");
}

TEST(Technology, ReconstructsA100) { expect_reconstructs("a100", "dgx-a100-40gb"); }
TEST(Technology, ReconstructsH100) { expect_reconstructs("h100", "dgx-h100"); }
TEST(Technology, ReconstructsB200) { expect_reconstructs("b200", "dgx-b200"); }

const char* kTech = R"({"model": {"preset": "llama3-8b"}, "system": {"preset": "dgx-h100", "technology":
    {"node": "4nm", "die_area_mm2": 814, "tdp_w": 700, "tensor_share": 0.24, "vector_share": 0.09,
     "hbm": {"generation": "hbm3", "stacks": 5}, "serdes": {"generation": "100g"}}}})";

const char* kBare = R"({"model": {"preset": "llama3-8b"}, "system": {"preset": "dgx-h100", "technology":
    {"node": "4nm", "die_area_mm2": 814, "tdp_w": 700, "tensor_share": 0.24, "vector_share": 0.09}}})";

std::string error_path(const std::vector<std::string>& sets) {
    auto s = load(kTech, sets);
    EXPECT_FALSE(s.ok());
    if (s.ok()) return "";
    EXPECT_EQ(s.error().message().find('\n'), std::string::npos);
    return s.error().path;
}

TEST(Technology, ScenarioReplacesThePresetAndResolvesToFigures) {
    auto s = load(kTech);
    ASSERT_TRUE(s.ok()) << s.error().message();
    // 4nm: 0.24 x 814 mm2 x 98.3 MTr/mm2 / 36e3 x 1.83 GHz; HBM3 at JEDEC's 819 GB/s x 5; 36 lanes
    // of 100 Gb/s; the default 4 NIC lanes.
    const double bf16 = 0.24 * 814e-6 * 98.3e12 / 36e3 * 1.83e9;
    EXPECT_NEAR(*s->system.accel.matrix_peak(Precision::bf16) / bf16, 1.0, 1e-12);
    // The default formats are Blackwell's: fp4 but no int4.
    EXPECT_NEAR(*s->system.accel.matrix_peak(Precision::fp4) / bf16, 4.0, 1e-12);
    EXPECT_FALSE(s->system.accel.matrix_peak(Precision::int4).has_value());
    EXPECT_DOUBLE_EQ(s->system.accel.memory_bw_bytes_per_s, 5 * 819e9);
    EXPECT_DOUBLE_EQ(s->system.scale_up.bw_bytes_per_s, 450e9);
    EXPECT_DOUBLE_EQ(s->system.scale_out.bw_bytes_per_s, 50e9);
    const Json& acc = s->full["system"]["accelerator"];
    EXPECT_DOUBLE_EQ(acc["matrix_flop_per_s"]["fp8"].get<double>(), 2 * bf16);
    EXPECT_DOUBLE_EQ(acc["memory_bw_bytes_per_s"].get<double>(), 5 * 819e9);
    EXPECT_NE(s->full["system"]["description"].get<std::string>().find("area-limited"), std::string::npos);
    // The node's contemporary generations when none is named: 2nm -> HBM4E, 400G lanes.
    auto n2 = load(kBare, {"system.technology.node=2nm"});
    ASSERT_TRUE(n2.ok()) << n2.error().message();
    EXPECT_DOUBLE_EQ(n2->system.scale_up.bw_bytes_per_s, 36 * 400e9 / 8);
    EXPECT_DOUBLE_EQ(n2->system.accel.memory_bw_bytes_per_s, 5 * 2.8e12);  // 5 stacks: the shoreline's most
    // memory_node moves only the memory: 7nm's HBM2E under 4nm logic.
    auto mem = load(kBare, {"system.technology.memory_node=7nm"});
    ASSERT_TRUE(mem.ok()) << mem.error().message();
    EXPECT_DOUBLE_EQ(mem->system.accel.memory_bw_bytes_per_s, 5 * 460e9);
    EXPECT_NEAR(*mem->system.accel.matrix_peak(Precision::bf16) / bf16, 1.0, 1e-12);
    // The SRAM level: the default 0.032 x 814 mm2 = 26.048 mm2 of SRAM at 4nm's 3.98 MB/mm2, fed at
    // 475 B per clock per mm2 x 1.83 GHz; resolve shows both.
    EXPECT_NEAR(s->system.accel.sram_bytes, 26.048 * 3.98e6, 1.0);
    EXPECT_NEAR(s->system.accel.sram_bw_bytes_per_s, 26.048 * 475 * 1.83e9, 1e3);
    EXPECT_NEAR(acc["sram_bytes"].get<double>(), 26.048 * 3.98e6, 1.0);
    // sram_node moves only the SRAM density: 12nm's 1.25 MB/mm2, same area, same bandwidth.
    auto old_sram = load(kBare, {"system.technology.sram_node=12nm"});
    ASSERT_TRUE(old_sram.ok()) << old_sram.error().message();
    EXPECT_NEAR(old_sram->system.accel.sram_bytes, 26.048 * 1.25e6, 1.0);
    EXPECT_NEAR(old_sram->system.accel.sram_bw_bytes_per_s, 26.048 * 475 * 1.83e9, 1e3);
    EXPECT_NEAR(*old_sram->system.accel.matrix_peak(Precision::bf16) / bf16, 1.0, 1e-12);
}

// The schema's defaults for system.technology are the reader's: every row whose documented
// default is a number resolves to that number when the field is left out.
TEST(Technology, DocumentedDefaultsAreTheOnesRead) {
    const auto s = build_scenario(Json::parse(R"({"model": {"preset": "llama3-8b"}, "system": {"preset": "dgx-h100",
        "technology": {"node": "4nm", "die_area_mm2": 814, "tdp_w": 700}}})"), Purpose::train);
    ASSERT_TRUE(s.ok()) << s.error().message();
    int checked = 0;
    for (const NumericField& f : system_fields()) {
        const std::string path = f.path;
        if (!path.starts_with("technology.") || !std::isdigit(static_cast<unsigned char>(f.default_text[0]))) continue;
        const Json* v = at_path(s->full["system"], path);
        ASSERT_NE(v, nullptr) << path;
        EXPECT_DOUBLE_EQ(v->get<double>(), std::stod(f.default_text)) << path;
        ++checked;
    }
    EXPECT_EQ(checked, 9);  // dies, three shares, two transistor counts, SRAM bandwidth, two lane counts
}

TEST(Technology, ErrorsNameTheField) {
    EXPECT_EQ(error_path({"system.technology.node=9nm"}), "system.technology.node");
    EXPECT_EQ(error_path({"system.technology.sram_node=6nm"}), "system.technology.sram_node");
    EXPECT_EQ(error_path({"system.technology.tdp_w=150"}), "system.technology.tdp_w");
    EXPECT_EQ(error_path({"system.technology.hbm.stacks=6"}), "system.technology.hbm.stacks");
    EXPECT_EQ(error_path({"system.technology.tensor_share=0.9"}), "system.technology.tensor_share");
    EXPECT_EQ(error_path({"system.technology.precisions=fp8"}), "system.technology.precisions");
    EXPECT_EQ(error_path({"system.technology.serdes.generation=800g"}), "system.technology.serdes.generation");
    EXPECT_EQ(error_path({"system.technology.die_area_mm2=0"}), "system.technology.die_area_mm2");
    EXPECT_EQ(error_path({"system.technology.hbm.generation=hbm3", "system.accelerator.hbm.generation=hbm3e"}),
              "system.accelerator.hbm");
    EXPECT_EQ(error_path({"system.technology.cores=4"}), "system.technology.cores");
}

}  // namespace
}  // namespace sm
