// Parsing and validation errors: every bad input is an InputError naming the dotted path, what
// was given and what is allowed, on one line.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <set>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "io/field_table.hpp"
#include "io/report.hpp"
#include "io/scenario.hpp"
#include "test_helpers.hpp"
#include "training/step.hpp"

namespace sm {
namespace {

const char* kBase = R"({"model": {"preset": "llama3-70b"}, "system": {"preset": "dgx-h100"}})";

using testing::load;

// The error of an input that must be rejected; fails the test if it is accepted.
InputError error_of(const std::string& text, const std::vector<std::string>& sets = {},
                    Purpose purpose = Purpose::train) {
    auto s = load(text, sets, purpose);
    EXPECT_FALSE(s.ok()) << "accepted: " << text;
    if (s.ok()) return {};
    const std::string m = s.error().message();
    EXPECT_EQ(m.find('\n'), std::string::npos) << m;
    return s.error();
}

InputError set_error(const std::string& set, Purpose purpose = Purpose::train) { return error_of(kBase, {set}, purpose); }

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

TEST(Scenario, BaseIsValid) {
    auto s = load(kBase);
    ASSERT_TRUE(s.ok()) << s.error().message();
    EXPECT_EQ(s->model.layers, 80);
    EXPECT_EQ(s->parallel.gpus(), 1);
}

// A serving engine's profile (presets/engines/) fills the inference fields the scenario leaves
// out, each with its source; a field the scenario gives wins; an unknown engine is named.
TEST(Scenario, EngineProfilesFillTheInferenceFields) {
    ASSERT_EQ(engine_preset_names(), (std::vector<std::string>{"sglang", "trtllm", "vllm"}));
    for (const std::string& name : engine_preset_names()) {
        const Json j = engine_preset_json(name).value();
        for (const auto& [key, value] : j.at("inference").items())
            EXPECT_TRUE(j.at("sources").contains(key)) << name << ": " << key << " has no source";
    }
    auto s = load(kBase, {"inference.engine=sglang"}, Purpose::infer);
    ASSERT_TRUE(s.ok()) << s.error().message();
    EXPECT_EQ(s->inference.prefill_schedule, PrefillSchedule::separate);
    EXPECT_EQ(s->inference.kv_reservation, KvReservation::average);
    auto mixed = load(kBase, {"inference.engine=sglang", "inference.prefill_schedule=mixed"}, Purpose::infer);
    ASSERT_TRUE(mixed.ok()) << mixed.error().message();
    EXPECT_EQ(mixed->inference.prefill_schedule, PrefillSchedule::mixed);
    EXPECT_EQ(mixed->inference.kv_reservation, KvReservation::average);
    auto vllm = load(kBase, {"inference.engine=vllm"}, Purpose::infer);
    ASSERT_TRUE(vllm.ok()) << vllm.error().message();
    EXPECT_EQ(vllm->inference.cuda_graph_max_batch, 512);
    const InputError e = set_error("inference.engine=sglng", Purpose::infer);
    EXPECT_EQ(e.path, "inference.engine");
    EXPECT_TRUE(contains(e.allowed, "did you mean \"sglang\"")) << e.allowed;
    EXPECT_EQ(set_error("inference.engine=3", Purpose::infer).path, "inference.engine");
}

TEST(Scenario, HbmStacksSetTheMemory) {
    // H100's preset (80 GiB, 3.35 TB/s) with 6 stacks of HBM3E (24 GiB, 1.2 TB/s each, JEDEC and
    // Micron figures in presets/memory/hbm.json): 144 GiB and 7.2 TB/s, in the resolved scenario too.
    auto s = load(kBase, {"system.accelerator.hbm.generation=hbm3e", "system.accelerator.hbm.stacks=6"});
    ASSERT_TRUE(s.ok()) << s.error().message();
    EXPECT_DOUBLE_EQ(s->system.accel.memory_bytes, 6.0 * 24 * 1073741824);
    EXPECT_DOUBLE_EQ(s->system.accel.memory_bw_bytes_per_s, 7.2e12);
    const Json& acc = s->full["system"]["accelerator"];
    EXPECT_DOUBLE_EQ(acc["memory_bytes"].get<double>(), 6.0 * 24 * 1073741824);
    EXPECT_DOUBLE_EQ(acc["memory_bw_bytes_per_s"].get<double>(), 7.2e12);
    EXPECT_FALSE(acc.contains("hbm"));  // a generator, like a preset: the figures are what it made
    // A stack's figures can be given (a faster bin): 8 x 1.6 TB/s; HBM2e 5 stacks = A100 80GB's 80 GiB.
    auto fast = load(kBase, {"system.accelerator.hbm.generation=hbm3e", "system.accelerator.hbm.stacks=8",
                             "system.accelerator.hbm.stack_bw_bytes_per_s=1.6e12"});
    ASSERT_TRUE(fast.ok());
    EXPECT_DOUBLE_EQ(fast->system.accel.memory_bw_bytes_per_s, 12.8e12);
    auto a100 = load(kBase, {"system.accelerator.hbm.generation=hbm2e", "system.accelerator.hbm.stacks=5"});
    ASSERT_TRUE(a100.ok());
    EXPECT_DOUBLE_EQ(a100->system.accel.memory_bytes, 80.0 * 1073741824);
    EXPECT_DOUBLE_EQ(a100->system.accel.memory_bw_bytes_per_s, 2.3e12);
}

// parallel.order and parallel.cp_kind: read back as given; a misspelling names the field and
// the nearest; Ulysses needs Llama 3 70B's 64 heads and 8 K/V heads to split over tp x cp: tp 2 x
// cp 4 = 8 does, tp 4 x cp 4 = 16 does not (8 K/V heads), and the error says so.
TEST(Scenario, RankOrderAndContextParallelKind) {
    auto s = load(kBase, {"parallel.order=cp-tp-dp-pp", "parallel.cp_kind=all_gather", "parallel.cp=2"});
    ASSERT_TRUE(s.ok());
    EXPECT_EQ(s->parallel.order, RankOrder::cp_tp_dp);
    EXPECT_EQ(s->parallel.cp_kind, CpKind::all_gather);
    EXPECT_EQ(load(kBase).value().parallel.order, RankOrder::tp_cp_dp);
    EXPECT_EQ(load(kBase).value().parallel.cp_kind, CpKind::ring);
    const InputError o = set_error("parallel.order=pp-tp-cp-dp");
    EXPECT_EQ(o.path, "parallel.order");
    EXPECT_TRUE(contains(o.allowed, "cp-tp-dp-pp")) << o.allowed;
    EXPECT_EQ(set_error("parallel.cp_kind=allgather").path, "parallel.cp_kind");
    EXPECT_TRUE(load(kBase, {"parallel.cp_kind=ulysses", "parallel.tp=2", "parallel.cp=4"}).ok());
    const InputError u = error_of(kBase, {"parallel.cp_kind=ulysses", "parallel.tp=4", "parallel.cp=4"});
    EXPECT_EQ(u.path, "parallel.cp_kind");
    EXPECT_TRUE(contains(u.allowed, "model.kv_heads (8)")) << u.allowed;
    EXPECT_TRUE(contains(u.allowed, "tp*cp (16)")) << u.allowed;
    // At cp 1 the kind does nothing and is accepted.
    EXPECT_TRUE(load(kBase, {"parallel.cp_kind=ulysses", "parallel.tp=8"}).ok());
}

TEST(Scenario, HbmErrorsNameTheField) {
    EXPECT_EQ(set_error("system.accelerator.hbm.generation=hbm5").path, "system.accelerator.hbm.generation");
    EXPECT_TRUE(contains(error_of(kBase, {"system.accelerator.hbm.generation=hbm9", "system.accelerator.hbm.stacks=4"}).allowed,
                         "hbm2e, hbm3, hbm3e, hbm4"));
    EXPECT_EQ(set_error("system.accelerator.hbm.generation=hbm3").path, "system.accelerator.hbm.stacks");
    EXPECT_EQ(error_of(kBase, {"system.accelerator.hbm.generation=hbm3", "system.accelerator.hbm.stacks=0"}).path,
              "system.accelerator.hbm.stacks");
    EXPECT_EQ(error_of(kBase, {"system.accelerator.hbm.generation=hbm3", "system.accelerator.hbm.stacks=4",
                               "system.accelerator.hbm.pins=2048"}).path,
              "system.accelerator.hbm.pins");
}

TEST(Scenario, SramFiguresFromThePresetAndErrorsNameTheField) {
    // kBase runs on dgx-h100: 50 MiB L2 + 132 x (256 KiB L1 + 256 KiB registers) = 121,634,816 B,
    // fed at 132 SMs x 128 B x 1.98 GHz = 33.45 TB/s (presets/systems/dgx-h100.json); resolve shows them.
    auto s = load(kBase);
    ASSERT_TRUE(s.ok()) << s.error().message();
    EXPECT_DOUBLE_EQ(s->system.accel.sram_bytes, 121634816.0);
    EXPECT_DOUBLE_EQ(s->system.accel.sram_bw_bytes_per_s, 33.45e12);
    EXPECT_DOUBLE_EQ(s->full["system"]["accelerator"]["sram_bytes"].get<double>(), 121634816.0);
    auto none = load(kBase, {"system.accelerator.sram_bytes=0"});  // 0: the level is not described
    ASSERT_TRUE(none.ok());
    EXPECT_EQ(none->system.accel.sram_bytes, 0.0);
    EXPECT_EQ(set_error("system.accelerator.sram_bytes=-1").path, "system.accelerator.sram_bytes");
    EXPECT_EQ(set_error("system.accelerator.sram_bw_bytes_per_s=1e30").path, "system.accelerator.sram_bw_bytes_per_s");
    EXPECT_EQ(set_error("system.accelerator.sram_bw_bytes_per_s=fast").path, "system.accelerator.sram_bw_bytes_per_s");
}

TEST(Scenario, UnknownKeySuggestsTheNearest) {
    const InputError e = set_error("parallel.tpp=2");
    EXPECT_EQ(e.path, "parallel.tpp");
    EXPECT_TRUE(contains(e.allowed, "did you mean \"tp\"")) << e.message();

    const InputError m = error_of(R"({"model": {"preset": "llama3-70b", "hiden": 8}, "system": {"preset": "dgx-h100"}})");
    EXPECT_EQ(m.path, "model.hiden");
    EXPECT_TRUE(contains(m.allowed, "\"hidden\"")) << m.message();

    const InputError t = set_error("trainin.global_batch=8");
    EXPECT_EQ(t.path, "trainin");
    EXPECT_TRUE(contains(t.allowed, "\"training\"")) << t.message();
}

TEST(Scenario, UnknownKeyFarFromAnyListsTheAllowed) {
    const InputError e = set_error("parallel.zzzzzzzzzz=1");
    EXPECT_EQ(e.path, "parallel.zzzzzzzzzz");
    EXPECT_TRUE(contains(e.allowed, "allowed fields")) << e.message();
}

TEST(Scenario, UnknownChoiceSuggestsTheNearest) {
    const InputError e = set_error("parallel.recompute=selectve");
    EXPECT_EQ(e.path, "parallel.recompute");
    EXPECT_TRUE(contains(e.allowed, "did you mean \"selective\"")) << e.message();
    const InputError p = set_error("model.preset=llama3-7b");
    EXPECT_EQ(p.path, "model.preset");
    EXPECT_TRUE(contains(p.allowed, "did you mean")) << p.message();
}

TEST(Scenario, WrongTypes) {
    EXPECT_EQ(set_error("parallel.tp=\"8\"").path, "parallel.tp");
    EXPECT_EQ(set_error("parallel.tp=true").path, "parallel.tp");
    EXPECT_EQ(set_error("parallel.tp=2.5").path, "parallel.tp");
    EXPECT_EQ(set_error("parallel.sequence_parallel=1").path, "parallel.sequence_parallel");
    EXPECT_EQ(set_error("model.ffn_act=7").path, "model.ffn_act");
    EXPECT_EQ(set_error("model.name=5").path, "model.name");
    EXPECT_EQ(set_error("training=5").path, "training");
    EXPECT_EQ(set_error("model=[]").path, "model");
    EXPECT_EQ(set_error("system.accelerator.memory_bytes=null").path, "system.accelerator.memory_bytes");
    EXPECT_EQ(error_of(R"({"model": {"preset": 3}, "system": {"preset": "dgx-h100"}})").path, "model.preset");
}

TEST(Scenario, IntegersGivenAsWholeFloatsAreAccepted) {
    auto s = load(kBase, {"parallel.tp=8.0"});
    ASSERT_TRUE(s.ok()) << s.error().message();
    EXPECT_EQ(s->parallel.tp, 8);
}

TEST(Scenario, RangesAreChecked) {
    const InputError z = set_error("parallel.tp=0");
    EXPECT_EQ(z.path, "parallel.tp");
    EXPECT_EQ(z.given, "0");
    EXPECT_TRUE(contains(z.allowed, "from 1 to")) << z.message();
    EXPECT_EQ(set_error("parallel.dp=-4").path, "parallel.dp");
    EXPECT_EQ(set_error("parallel.zero=4").path, "parallel.zero");
    EXPECT_EQ(set_error("model.layers=100001").path, "model.layers");
    EXPECT_EQ(set_error("model.layers=1e30").path, "model.layers");
    EXPECT_EQ(set_error("model.layers=18446744073709551615").path, "model.layers");
    EXPECT_EQ(set_error("model.layers=-9223372036854775808").path, "model.layers");
    EXPECT_EQ(set_error("training.tp_overlap=1.5").path, "training.tp_overlap");
    EXPECT_EQ(set_error("system.accelerator.memory_bytes=-1").path, "system.accelerator.memory_bytes");
    EXPECT_EQ(set_error("system.accelerator.memory_bytes=0").path, "system.accelerator.memory_bytes");
    EXPECT_EQ(set_error("system.scale_out.bw_bytes_per_s=0").path, "system.scale_out.bw_bytes_per_s");
    EXPECT_EQ(set_error("system.efficiency.gemm_max=0").path, "system.efficiency.gemm_max");
    EXPECT_EQ(set_error("model.moe.experts=8", Purpose::train).path, "model.moe.top_k");  // required with experts
}

// A system written without a preset runs on the field table's defaults, which are Efficiency{}'s
// figures (hand-copied here: a changed default must be changed knowingly, here and in
// docs/PRESET_SCHEMA.md); the 8- and 4-bit GEMM ceilings follow the one above them.
TEST(Scenario, EfficiencyDefaultsOfASystemWithoutPreset) {
    const char* bare = R"({"model": {"preset": "llama3-70b"}, "system": {"accelerator": {"matrix_flop_per_s": {"bf16": 1e15},
        "vector_flop_per_s": 6e13, "memory_bytes": 8e10, "memory_bw_bytes_per_s": 3e12},
        "scale_up": {"bw_bytes_per_s": 4.5e11}, "scale_out": {"bw_bytes_per_s": 5e10}}})";
    auto s = load(bare, {});
    ASSERT_TRUE(s.ok()) << s.error().message();
    const Efficiency& e = s->system.eff;
    EXPECT_EQ(e.gemm_max, 0.8);
    EXPECT_EQ(e.gemm_half_dim, 96);
    EXPECT_EQ(e.gemm_half_tokens, 8);
    EXPECT_EQ(e.gemm_max_8bit, 0.8);
    EXPECT_EQ(e.gemm_max_4bit, 0.8);
    EXPECT_EQ(e.clock_fraction, 1.0);
    EXPECT_EQ(e.attention_max, 0.6);
    EXPECT_EQ(e.memory_max, 0.85);
    EXPECT_EQ(e.memory_half_bytes, 262144);
    EXPECT_EQ(e.kernel_latency_s, 4e-6);
    EXPECT_EQ(e.scale_up, 0.8);
    EXPECT_EQ(e.scale_out, 0.85);
    EXPECT_EQ(e.overlap_interference, 0.0);
    EXPECT_EQ(e.host_layer_overhead_s, 0.0);
    EXPECT_EQ(e.host_collective_overhead_s, 0.0);
    EXPECT_EQ(e.host_request_overhead_s, 0.0);
    EXPECT_EQ(e.decode_attention, DecodeAttentionUnits::tensor_core);
    auto chained = load(bare, {"system.efficiency.gemm_max=0.5"});
    ASSERT_TRUE(chained.ok());
    EXPECT_EQ(chained->system.eff.gemm_max_8bit, 0.5);
    EXPECT_EQ(chained->system.eff.gemm_max_4bit, 0.5);
    auto four = load(bare, {"system.efficiency.gemm_max_8bit=0.7"});
    ASSERT_TRUE(four.ok());
    EXPECT_EQ(four->system.eff.gemm_max, 0.8);
    EXPECT_EQ(four->system.eff.gemm_max_4bit, 0.7);
}

// Every efficiency field is read into its own member, and refused outside its range naming it.
TEST(Scenario, EveryEfficiencyFieldIsReadAndBounded) {
    // Ranges by hand: fractions (0.001 or 0.1 to 1), sizes, latencies.
    const std::map<std::string, std::pair<double, double>> ranges{
        {"gemm_max", {1e-3, 1}},         {"gemm_half_dim", {0, 1e6}},          {"gemm_half_tokens", {0, 1e6}},
        {"gemm_max_8bit", {1e-3, 1}},    {"gemm_max_4bit", {1e-3, 1}},         {"clock_fraction", {0.1, 1}},
        {"attention_max", {1e-3, 1}},    {"attention_half_tokens", {0, 1e9}},  {"scan_max", {1e-3, 1}},
        {"memory_max", {1e-3, 1}},
        {"memory_half_bytes", {0, 1e12}},
        {"kernel_latency_s", {0, 1}},    {"scale_up", {1e-3, 1}},              {"scale_out", {1e-3, 1}},
        {"overlap_interference", {0, 1}}, {"host_layer_overhead_s", {0, 1}}, {"host_collective_overhead_s", {0, 1}},
        {"host_request_overhead_s", {0, 10}}};
    ASSERT_EQ(efficiency_fields().size(), ranges.size());
    for (const EfficiencyField& f : efficiency_fields()) {
        const std::string path = std::string("system.efficiency.") + f.key;
        const auto r = ranges.at(f.key);
        EXPECT_EQ(f.lo, r.first) << f.key;
        EXPECT_EQ(f.hi, r.second) << f.key;
        const double mid = 0.5 * (r.first + r.second) * 0.999;
        auto s = load(kBase, {fmt::format("{}={}", path, mid)});
        ASSERT_TRUE(s.ok()) << s.error().message();
        EXPECT_EQ(s->system.eff.*f.member, mid) << f.key;
        EXPECT_EQ(set_error(fmt::format("{}={}", path, r.second * 1.5 + 1)).path, path);
        EXPECT_EQ(set_error(fmt::format("{}={}", path, -1)).path, path);
    }
}

// Every other numeric system field is refused past its table range naming its path; the ranges
// of a few by hand (a link's latency up to 1 s, energy per bit up to 1 nJ, the TDP from 1 W).
TEST(Scenario, EveryNumericFieldIsBounded) {
    EXPECT_EQ(system_field("scale_up.latency_s").hi, 1.0);
    EXPECT_EQ(system_field("energy.hbm_j_per_bit").hi, 1e-9);
    EXPECT_EQ(system_field("energy.tdp_w").lo, 1.0);
    EXPECT_EQ(system_field("accelerator.sram_bytes").lo, 0.0);
    EXPECT_THROW(system_field("accelerator.no_such_field"), std::logic_error);
    EXPECT_EQ(system_field("node_gpus").hi, 4096);
    EXPECT_EQ(system_field("accelerator.hbm.stacks").hi, 32);
    for (const NumericField& f : system_fields()) {
        std::string path = std::string("system.") + f.path;
        if (const auto at = path.find("PRECISION"); at != std::string::npos) path.replace(at, 9, "bf16");
        // The stacks are read only with a generation named.
        auto error = [&](double v) {
            std::vector<std::string> sets{fmt::format("{}={}", path, v)};
            if (path.starts_with("system.accelerator.hbm.")) sets.push_back("system.accelerator.hbm.generation=hbm3");
            // A technology description needs its node and the die's area and power.
            if (path.starts_with("system.technology."))
                for (const char* given : {"node=4nm", "die_area_mm2=814", "tdp_w=700"})
                    if (!path.ends_with(std::string(given).substr(0, std::string(given).find('='))))
                        sets.push_back(std::string("system.technology.") + given);
            return error_of(kBase, sets);
        };
        const InputError above = error(f.hi * 10 + 1);
        EXPECT_EQ(above.path, path) << above.message();
        if (f.lo > 0) {
            EXPECT_EQ(error(f.lo / 2).path, path);
        }
    }
    // A count's bound that another field sets: at most domain_gpus GPUs used of a domain.
    EXPECT_EQ(error_of(kBase, {"system.scale_up.domain_gpus=8", "system.scale_up.gpus_used_per_domain=9"}).path,
              "system.scale_up.gpus_used_per_domain");
}

// One section's table against its ranges written by hand: each field's range, a value inside it
// read into the field's own member, values on either side refused naming the field.
template <class Spec>
void expect_read_and_bounded(std::span<const SpecField<Spec>> fields, const std::map<std::string, std::pair<double, double>>& ranges,
                             const std::string& section, Purpose purpose, Spec Scenario::*spec) {
    ASSERT_EQ(fields.size(), ranges.size()) << section;
    for (const SpecField<Spec>& f : fields) {
        const auto r = ranges.at(f.key);
        EXPECT_EQ(f.lo, r.first) << f.key;
        EXPECT_EQ(f.hi, r.second) << f.key;
        const std::string path = section + "." + f.key;
        const double mid = f.count ? std::floor(0.25 * r.second) : 0.25 * r.second;
        auto s = load(kBase, {fmt::format("{}={}", path, mid)}, purpose);
        ASSERT_TRUE(s.ok()) << f.key << ": " << s.error().message();
        const Spec& read = s.value().*spec;
        EXPECT_EQ(f.count ? static_cast<double>(read.*f.count) : read.*f.real, mid) << f.key;
        EXPECT_EQ(set_error(fmt::format("{}={}", path, 2 * r.second + 1), purpose).path, path);
        EXPECT_EQ(set_error(fmt::format("{}={}", path, r.first - 1), purpose).path, path);
    }
}

// The parallel section's table against ranges written by hand; each field refused on either side
// of its range naming its path (a value inside it may still break a divisibility rule: those are
// tested by DivisibilityRules).
TEST(Scenario, EveryParallelFieldIsBounded) {
    const double degree = 1 << 20;
    const std::map<std::string, std::pair<double, double>> ranges = {
        {"tp", {1, degree}},         {"tp_rows", {1, degree}},    {"pp", {1, degree}},
        {"dp", {1, degree}},         {"cp", {1, degree}},         {"ep", {1, degree}},
        {"etp", {1, degree}},        {"vp", {1, 1024}},           {"microbatch", {1, degree}},
        {"zero", {0, 3}},            {"first_stage_layers", {0, 100000}}, {"last_stage_layers", {0, 100000}},
        {"recompute_layers", {0, 100000}}};
    ASSERT_EQ(parallel_fields().size(), ranges.size());
    for (const SpecField<ParallelConfig>& f : parallel_fields()) {
        const auto r = ranges.at(f.key);
        EXPECT_EQ(f.lo, r.first) << f.key;
        EXPECT_EQ(f.hi, r.second) << f.key;
        const std::string path = std::string("parallel.") + f.key;
        EXPECT_EQ(set_error(fmt::format("{}={}", path, r.second + 1)).path, path);
        EXPECT_EQ(set_error(fmt::format("{}={}", path, r.first - 1)).path, path);
    }
    // Read into their members; etp only when given (absent: 0, "follows tp").
    const Scenario s = load(kBase, {"parallel.zero=2", "parallel.microbatch=2", "parallel.dp=2"}).value();
    EXPECT_EQ(s.parallel.zero, 2);
    EXPECT_EQ(s.parallel.microbatch, 2);
    EXPECT_EQ(s.parallel.etp, 0);
    EXPECT_EQ(s.full["parallel"].count("etp"), 0u) << s.full["parallel"].dump();
}

// Every model field is refused past its table range naming its path (from the preset that has the
// field's section: MoE, MLA, an image, Mamba, Gated DeltaNet); the table's ranges of a few by hand.
TEST(Scenario, EveryModelFieldIsBounded) {
    EXPECT_EQ(model_field("layers").hi, 100000);
    EXPECT_EQ(model_field("seq_len").hi, double(int64_t{1} << 27));
    EXPECT_EQ(model_field("moe.shared_experts").hi, 1024);
    EXPECT_EQ(model_field("mla.q_lora_rank").lo, 0);
    EXPECT_THROW(model_field("no_such_field"), std::logic_error);
    for (const NumericField& f : model_fields()) {
        const std::string field = f.path;
        const char* preset = field.starts_with("moe.") ? "mixtral-8x7b" : field.starts_with("mla.") ? "deepseek-v3"
                             : field.starts_with("image.")                                          ? "vit-era5"
                             : field.starts_with("mamba.")                                          ? "nemotron-h-56b"
                             : field.starts_with("linear_attention.")                               ? "qwen3.5-397b-a17b"
                                                                                                     : "llama3-70b";
        // A ViT has no vocabulary, MLA no head_dim, and seq_len follows the image's patches.
        const std::string text = fmt::format(R"({{"model": {{"preset": "{}"}}, "system": {{"preset": "dgx-h100"}}}})", preset);
        const std::string path = "model." + field;
        for (const double v : {f.hi * 2 + 1, f.lo - 1}) {
            const InputError e = error_of(text, {fmt::format("{}={}", path, v)});
            EXPECT_EQ(e.path, path) << v << ": " << e.message();
        }
    }
}

TEST(Scenario, EveryTrainingAndInferenceFieldIsReadAndBounded) {
    expect_read_and_bounded(training_fields(),
                            {{"tp_overlap", {0, 1}},
                             {"pp_overlap", {0, 1}},
                             {"optimizer_state_bytes_per_param", {0, 64}},
                             {"framework_overhead_bytes", {0, 1e13}},
                             {"comm_buffer_bytes", {0, 1e13}}},
                            "training", Purpose::train, &Scenario::training);
    expect_read_and_bounded(inference_fields(),
                            {{"batch", {1, 1 << 20}},
                             {"input_len", {1, 1 << 24}},
                             {"output_len", {1, 1 << 24}},
                             {"framework_overhead_bytes", {0, 1e13}},
                             {"prefill_chunk_tokens", {1, 1 << 24}},
                             {"cuda_graph_max_batch", {0, 1 << 20}},
                             {"kv_block_tokens", {1, 1 << 16}},
                             {"kv_cache_memory_fraction", {0.01, 1}},
                             {"speculative_tokens", {0, 64}},
                             {"acceptance_rate", {0, 1}},
                             {"num_requests", {0, 1 << 20}}},
                            "inference", Purpose::infer, &Scenario::inference);
}

TEST(Scenario, OverflowingNumbersInFilesAreRejected) {
    const InputError e = error_of(R"({"model": {"preset": "llama3-70b", "layers": 1e400}, "system": {"preset": "dgx-h100"}})");
    EXPECT_FALSE(e.message().empty());
    const InputError big = error_of(R"({"model": {"preset": "llama3-70b", "layers": 99999999999999999999999}, "system": {"preset": "dgx-h100"}})");
    EXPECT_EQ(big.path, "model.layers");
}

TEST(Scenario, DivisibilityRules) {
    EXPECT_EQ(set_error("model.heads=3").path, "model.heads");     // hidden by heads
    EXPECT_EQ(set_error("model.kv_heads=3").path, "model.kv_heads");  // heads by kv_heads
    EXPECT_EQ(set_error("model.kv_heads=128").path, "model.kv_heads");
    EXPECT_EQ(set_error("parallel.tp=3").path, "parallel.tp");      // heads by tp
    // 80 layers on pp 3 run (DeepSpeed's uniform split: 27, 27, 26); on pp 100 no split runs.
    EXPECT_TRUE(load(kBase, {"parallel.pp=3"}).ok());
    const InputError pp = set_error("parallel.pp=100");
    EXPECT_EQ(pp.path, "parallel.pp");                              // layers by pp*vp
    EXPECT_TRUE(contains(pp.message(), "80 layers")) << pp.message();
    // pp 4 x vp 3 runs under fill (11 chunks of 7, the last 3); pp 4 x vp 7 has no cut (28 chunks:
    // 27 x 3 = 81 layers leave the last none, and neither 80 nor 82 divides by 28).
    EXPECT_TRUE(load(kBase, {"parallel.pp=4", "parallel.vp=3"}).ok());
    EXPECT_EQ(error_of(kBase, {"parallel.pp=4", "parallel.vp=7"}).path, "parallel.pp");
    EXPECT_EQ(set_error("parallel.vp=2").path, "parallel.vp");      // interleaving needs pp > 1
    EXPECT_EQ(error_of(kBase, {"parallel.dp=4", "training.global_batch=6"}).path, "training.global_batch");
    EXPECT_EQ(error_of(kBase, {"parallel.microbatch=4", "training.global_batch=6"}).path, "training.global_batch");
    EXPECT_EQ(set_error("parallel.cp=3").path, "parallel.cp");      // seq_len by cp
    EXPECT_EQ(set_error("parallel.ep=2").path, "parallel.ep");      // ep needs MoE
}

TEST(Scenario, KvHeadsByTp) {
    // 64 heads, 8 KV heads: tp 16 replicates KV heads (a multiple of 8) and is allowed; a model
    // with 6 KV heads cannot be cut 4 ways.
    EXPECT_TRUE(load(kBase, {"parallel.tp=16"}).ok());
    const InputError e = error_of(kBase, {"model.heads=48", "model.hidden=6144", "model.kv_heads=6", "parallel.tp=4"});
    EXPECT_EQ(e.path, "parallel.tp");
    EXPECT_TRUE(contains(e.allowed, "kv_heads")) << e.message();
}

TEST(Scenario, GpuCountIsBoundedWithoutOverflow) {
    // Each degree is in range but the product (2^80) is not: rejected, no signed overflow.
    const InputError e = error_of(kBase, {"parallel.tp=1048576", "parallel.pp=1048576", "parallel.dp=1048576", "parallel.cp=1048576"});
    EXPECT_EQ(e.path, "parallel");
    EXPECT_TRUE(contains(e.allowed, "GPUs")) << e.message();
}

TEST(Scenario, PrecisionMustBeSupportedByTheAccelerator) {
    const InputError e = set_error("training.precision=fp4");
    EXPECT_EQ(e.path, "training.precision");
    EXPECT_TRUE(contains(e.allowed, "supports")) << e.message();
    EXPECT_EQ(error_of(kBase, {"system.preset=dgx-a100-80gb", "training.precision=fp8"}).path, "training.precision");
    EXPECT_EQ(set_error("training.precision=fp16x").path, "training.precision");
}

TEST(Scenario, RequiredSectionsAndFields) {
    EXPECT_EQ(error_of(R"({"system": {"preset": "dgx-h100"}})").path, "model");
    EXPECT_EQ(error_of(R"({"model": {"preset": "llama3-70b"}})").path, "system");
    const InputError e = error_of(R"({"model": {"hidden": 64, "heads": 1}, "system": {"preset": "dgx-h100"}})");
    EXPECT_EQ(e.path, "model.layers");
    EXPECT_EQ(e.given, "nothing");
    EXPECT_EQ(error_of(R"({"model": {"preset": "llama3-70b"}, "system": {"name": "x"}})").path, "system.accelerator");
}

TEST(Scenario, MalformedJson) {
    for (const char* text : {"", "{", "{\"model\":", "[]", "3", "null", "\"text\"", "{\"a\" 1}", "{'a': 1}",
                             "{\"a\": NaN}", "{\"a\": Infinity}", "{\"a\": 1,}", "\x01\x02\xff\xfe", "{\"a\": \"\xff\"}"}) {
        auto doc = parse_scenario_text(text, "test");
        ASSERT_FALSE(doc.ok()) << text;
        EXPECT_EQ(doc.error().path, "test") << text;
        EXPECT_EQ(doc.error().message().find('\n'), std::string::npos) << doc.error().message();
    }
}

TEST(Scenario, DepthAndSizeLimits) {
    std::string deep;
    for (int i = 0; i < 10000; ++i) deep += "[";
    auto d = parse_scenario_text(deep, "test");
    ASSERT_FALSE(d.ok());
    EXPECT_TRUE(contains(d.error().given, "nested deeper")) << d.error().message();

    std::string big = "{\"description\": \"" + std::string(kMaxScenarioBytes, 'x') + "\"}";
    auto b = parse_scenario_text(big, "test");
    ASSERT_FALSE(b.ok());
    EXPECT_TRUE(contains(b.error().allowed, "at most")) << b.error().message();

    std::string path = "model";
    for (int i = 0; i < 1000; ++i) path += ".a";
    auto o = apply_overrides(Json::object(), {path + "=1"});
    ASSERT_FALSE(o.ok());
    EXPECT_EQ(o.error().path, "--set");
}

TEST(Scenario, DuplicateKeysAreErrors) {
    auto d = parse_scenario_text(R"({"model": {"layers": 1, "layers": 2}})", "test");
    ASSERT_FALSE(d.ok());
    EXPECT_TRUE(contains(d.error().given, "duplicate key \"layers\"")) << d.error().message();
    // The same key in sibling objects is fine.
    EXPECT_TRUE(parse_scenario_text(R"({"a": {"x": 1}, "b": {"x": 2}, "c": [{"x": 1}, {"x": 2}]})", "test").ok());
}

TEST(Scenario, ControlCharactersNeverBreakTheLine) {
    const InputError k = error_of("{\"model\": {\"preset\": \"llama3-70b\"}, \"system\": {\"preset\": \"dgx-h100\"}, \"a\\nb\": 1}");
    EXPECT_EQ(k.message().find('\n'), std::string::npos) << k.message();
    const InputError p = set_error("model.preset=llama\nx");
    EXPECT_EQ(p.message().find('\n'), std::string::npos) << p.message();
    const InputError s = set_error("parallel.t\np=1");
    EXPECT_EQ(s.message().find('\n'), std::string::npos) << s.message();
}

TEST(Scenario, SetSyntax) {
    EXPECT_EQ(set_error("=3").path, "--set");
    EXPECT_EQ(set_error("parallel.tp").path, "--set");
    EXPECT_EQ(set_error("parallel..tp=2").path, "--set");
    EXPECT_EQ(set_error(".tp=2").path, "--set");
    EXPECT_EQ(set_error("model.preset.x=2").path, "model.preset");
    // A bare word is a string; a JSON value is parsed.
    auto s = load(kBase, {"model.preset=llama2-7b", "parallel.sequence_parallel=true"});
    ASSERT_TRUE(s.ok()) << s.error().message();
    EXPECT_EQ(s->model.layers, 32);
    EXPECT_TRUE(s->parallel.sequence_parallel);
}

TEST(Scenario, InferencePurposeRules) {
    EXPECT_EQ(set_error("inference.precision=fp4", Purpose::infer).path, "inference.precision");
    EXPECT_EQ(set_error("inference.batch=0", Purpose::infer).path, "inference.batch");
    EXPECT_EQ(set_error("inference.input_len=-1", Purpose::infer).path, "inference.input_len");
    EXPECT_EQ(set_error("parallel.pp=3", Purpose::infer).path, "parallel.pp");
    // Training rules do not apply to infer: a global batch that dp does not divide is fine.
    EXPECT_TRUE(load(kBase, {"parallel.dp=4", "training.global_batch=6"}, Purpose::infer).ok());
}

// GPUs used per scale-up domain: 1 to the domain size (8 on dgx-h100), an integer.
TEST(Scenario, GpusUsedPerDomainBounds) {
    const char* field = "system.scale_up.gpus_used_per_domain";
    for (const char* v : {"0", "9", "4.5", "-1", "\"8\""}) {
        const InputError e = set_error(std::string(field) + "=" + v);
        EXPECT_EQ(e.path, field) << v;
        EXPECT_TRUE(contains(e.message(), "from 1 to 8")) << e.message();
    }
    auto s = load(kBase, {std::string(field) + "=6"});
    ASSERT_TRUE(s.ok());
    EXPECT_EQ(s.value().system.used_per_domain(), 6);
    EXPECT_EQ(load(kBase).value().system.used_per_domain(), 8);  // default: the whole domain
    // A job that fits in one domain is placed in one; a larger one 6 per domain.
    EXPECT_EQ(s.value().system.used_per_domain(8), 8);
    EXPECT_EQ(s.value().system.used_per_domain(7), 8);
    EXPECT_EQ(s.value().system.used_per_domain(9), 6);
    EXPECT_EQ(s.value().system.used_per_domain(0), 6);
}

// parallel.offload: one of four spellings, and only on a system with a host memory tier.
TEST(Scenario, OffloadChoicesAndHostMemory) {
    for (const char* v : {"optimizer", "activations", "optimizer+activations", "none"})
        EXPECT_TRUE(load(kBase, {std::string("parallel.offload=\"") + v + "\""}).ok()) << v;
    EXPECT_EQ(load(kBase, {"parallel.offload=\"optimizer+activations\""}).value().parallel.offload,
              Offload::optimizer_and_activations);
    EXPECT_EQ(set_error("parallel.offload=\"cpu\"").path, "parallel.offload");
    EXPECT_EQ(set_error("parallel.offload=1").path, "parallel.offload");
    // mi300x-8 describes no host memory: offloading to it is an error naming the field.
    const InputError e = error_of(kBase, {"system.preset=mi300x-8", "parallel.offload=\"optimizer\""});
    EXPECT_EQ(e.path, "parallel.offload");
    EXPECT_TRUE(contains(e.message(), "system.host_memory")) << e.message();
    EXPECT_EQ(set_error("system.host_memory.bw_bytes_per_s=0").path, "system.host_memory.bw_bytes_per_s");
    EXPECT_EQ(set_error("system.host_memory.capacity_bytes=-1").path, "system.host_memory.capacity_bytes");
    // dgx-h100: 2 TB of host memory and a PCIe Gen5 x16 link per GPU.
    const SystemSpec h100 = load(kBase).value().system;
    EXPECT_DOUBLE_EQ(h100.host_memory.capacity_bytes, 250e9);
    EXPECT_DOUBLE_EQ(h100.host_memory.bw_bytes_per_s, 55e9);
}

TEST(Scenario, ErrorMessageShape) {
    const InputError e = set_error("parallel.tp=0");
    EXPECT_EQ(e.message(), "parallel.tp: got 0; expected an integer from 1 to 1048576");
}

TEST(Scenario, ReadFileErrors) {
    auto missing = read_scenario_file("/nonexistent/dir/scenario.json");
    ASSERT_FALSE(missing.ok());
    EXPECT_EQ(missing.error().path, "SCENARIO");
    auto dir = read_scenario_file(SCALEMODEL_SOURCE_DIR);
    ASSERT_FALSE(dir.ok());
    EXPECT_EQ(dir.error().path, "SCENARIO");
    auto example = read_scenario_file(std::string(SCALEMODEL_SOURCE_DIR) + "/examples/gpt3-175b-64xa100.json");
    ASSERT_TRUE(example.ok()) << example.error().message();
}

TEST(Scenario, EveryPresetPairBuilds) {
    for (const auto& m : model_preset_names()) {
        for (const auto& sys : system_preset_names()) {
            Json doc = {{"model", {{"preset", m}}}, {"system", {{"preset", sys}}}};
            auto s = build_scenario(doc, Purpose::search);
            EXPECT_TRUE(s.ok()) << m << " on " << sys << ": " << (s.ok() ? "" : s.error().message());
        }
    }
}

// The dotted paths of a preset's figures (its sources, name and description left out).
std::set<std::string> preset_fields(const Json& j, const std::string& prefix = "") {
    std::set<std::string> out;
    for (const auto& [key, value] : j.items()) {
        if (prefix.empty() && (key == "sources" || key == "name" || key == "description")) continue;
        if (value.is_object()) {
            for (const std::string& f : preset_fields(value, prefix + key + ".")) out.insert(f);
        } else {
            out.insert(prefix + key);
        }
    }
    return out;
}

// Presets of one family set the same fields, so that none falls back to a default its sibling
// overrides (GB300 once lacked GB200's host memory and its 64-GPU use of a rack). The one
// difference allowed, each with its reason: Blackwell Ultra lists no INT8 peak (cut to a small
// fraction; int8 math is refused there). Every figure set has its source.
TEST(Presets, FamiliesSetTheSameFields) {
    const auto read = [](const std::string& name) {
        std::ifstream in(std::string(SCALEMODEL_SOURCE_DIR) + "/presets/systems/" + name + ".json");
        EXPECT_TRUE(in.good()) << name;
        return Json::parse(in);
    };
    const std::set<std::string> blackwell_ultra_lacks = {"accelerator.matrix_flop_per_s.int8"};
    const struct {
        const char *a, *b;
        const std::set<std::string>* b_lacks;
    } families[] = {{"dgx-h100", "dgx-h200", nullptr}, {"dgx-b200", "dgx-b300", &blackwell_ultra_lacks},
                    {"gb200-nvl72", "gb300-nvl72", &blackwell_ultra_lacks}};
    for (const auto& f : families) {
        SCOPED_TRACE(std::string(f.a) + " / " + f.b);
        const Json a = read(f.a), b = read(f.b);
        std::set<std::string> fa = preset_fields(a), fb = preset_fields(b);
        if (f.b_lacks)
            for (const std::string& k : *f.b_lacks) {
                EXPECT_TRUE(fa.count(k)) << k;
                EXPECT_FALSE(fb.count(k)) << k;
                fa.erase(k);
            }
        EXPECT_EQ(fa, fb);
        for (const Json* p : {&a, &b})
            for (const std::string& field : preset_fields(*p))
                // calibration has one "efficiency" source and docs/CALIBRATION.md; a name is a label
                if (!field.starts_with("efficiency.") && field != "accelerator.name")
                    EXPECT_TRUE((*p)["sources"].contains(field)) << (*p)["name"] << ": no source for " << field;
    }
}

// Every input that ever broke fuzz/fuzz_scenario.cpp, replayed the way the harness reads it: the
// scenario text, then NUL-separated `--set` overrides.
TEST(FuzzRegressions, ReplayCleanly) {
    int replayed = 0, trained = 0;
    for (const auto& entry : std::filesystem::directory_iterator(std::string(SCALEMODEL_SOURCE_DIR) + "/fuzz/regressions")) {
        SCOPED_TRACE(entry.path().string());
        std::ifstream in(entry.path(), std::ios::binary);
        const std::string all((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
        const size_t nul = all.find('\0');
        std::vector<std::string> sets;
        for (size_t at = nul; at != std::string::npos && at < all.size();) {
            const size_t next = all.find('\0', at + 1);
            sets.push_back(all.substr(at + 1, next == std::string::npos ? std::string::npos : next - at - 1));
            at = next;
        }
        ++replayed;
        auto doc = parse_scenario_text(all.substr(0, nul), "fuzz");
        auto over = doc ? apply_overrides(std::move(doc).value(), sets) : Expected<Json>(doc.error());
        if (!over) {
            EXPECT_EQ(over.error().message().find('\n'), std::string::npos) << over.error().message();
            continue;
        }
        for (Purpose purpose : {Purpose::train, Purpose::infer, Purpose::search}) {
            auto s = build_scenario(over.value(), purpose);
            if (!s) {
                EXPECT_EQ(s.error().message().find('\n'), std::string::npos) << s.error().message();
                continue;
            }
            if (purpose != Purpose::train) continue;
            ++trained;
            const TrainResult r = evaluate_training({s->model, s->system, s->training}, s->parallel);
            EXPECT_EQ(find_non_finite(train_json(s.value(), r)), "");
        }
    }
    EXPECT_GE(replayed, 4);
    // valid-zero-latency-one-token.bin (one-token sequences, no latencies) builds: the check above runs.
    EXPECT_GE(trained, 1);
}

}  // namespace
}  // namespace sm

namespace sm {
namespace {

// Model families and LoRA (issue 8): every new field bounded, named in its error.
TEST(Scenario, ModelFamilyFieldsValidated) {
    EXPECT_EQ(set_error("model.ffn_act=relu").path, "model.ffn_act");
    EXPECT_EQ(set_error("model.attention_kind=mqa").path, "model.attention_kind");
    // MLA needs its dimensions, and its dimensions need MLA.
    const InputError missing = set_error("model.attention_kind=mla");
    EXPECT_EQ(missing.path, "model.mla");
    EXPECT_EQ(error_of(kBase, {"model.mla.kv_lora_rank=512"}).path, "model.mla");
    const std::string v3 = R"({"model": {"preset": "deepseek-v3"}, "system": {"preset": "dgx-h100"}})";
    EXPECT_EQ(error_of(v3, {"model.mla.kv_lora_rank=0"}).path, "model.mla.kv_lora_rank");
    EXPECT_EQ(error_of(v3, {"model.mla.v_head_dim=-1"}).path, "model.mla.v_head_dim");
    EXPECT_EQ(error_of(v3, {"model.kv_heads=8"}).path, "model.kv_heads");
    EXPECT_EQ(error_of(v3, {"model.moe.shared_experts=-1"}).path, "model.moe.shared_experts");
    EXPECT_EQ(error_of(v3, {"model.moe.shared_expert_ffn_hidden=0"}).path, "model.moe.shared_expert_ffn_hidden");
    // tp must divide the shared experts' summed width: 1 x 2050 is not a multiple of 4.
    EXPECT_EQ(error_of(v3, {"model.moe.shared_expert_ffn_hidden=2050", "parallel.tp=4", "parallel.dp=4",
                            "parallel.pp=1"}).path,
              "parallel.tp");
}

TEST(Scenario, HeadDimDecouplesTheHeadsFromTheWidth) {
    // model.head_dim lifts "heads divides hidden" (Qwen3-30B-A3B: 2,048 wide, 32 heads of 128)
    // and is bounded; MLA sets its own head dimensions.
    EXPECT_EQ(set_error("model.heads=48").path, "model.heads");  // 8,192 / 48 is not whole
    auto s = load(kBase, {"model.heads=48", "model.kv_heads=8", "model.head_dim=128"});
    ASSERT_TRUE(s.ok()) << s.error().message();
    EXPECT_EQ(s.value().model.head_dim(), 128);
    EXPECT_EQ(s.value().model.kv_dim(), 8 * 128);
    EXPECT_EQ(set_error("model.head_dim=0").path, "model.head_dim");
    EXPECT_EQ(set_error("model.head_dim=100000").path, "model.head_dim");
    const std::string v3 = R"({"model": {"preset": "deepseek-v3"}, "system": {"preset": "dgx-h100"}})";
    EXPECT_EQ(error_of(v3, {"model.head_dim=128"}).path, "model.head_dim");
    // Left out: hidden / heads.
    auto plain = load(kBase);
    ASSERT_TRUE(plain.ok());
    EXPECT_EQ(plain.value().model.head_dim(), 8192 / 64);
}

TEST(Scenario, KvReservationChoices) {
    auto whole = load(kBase, {}, Purpose::infer);
    ASSERT_TRUE(whole.ok()) << whole.error().message();
    EXPECT_EQ(whole.value().inference.kv_reservation, KvReservation::full);  // TensorRT-LLM's default
    auto grown = load(kBase, {"inference.kv_reservation=average"}, Purpose::infer);
    ASSERT_TRUE(grown.ok());
    EXPECT_EQ(grown.value().inference.kv_reservation, KvReservation::average);
    EXPECT_EQ(set_error("inference.kv_reservation=half", Purpose::infer).path, "inference.kv_reservation");
    // The cache pool's share of the free memory: TensorRT-LLM's 0.9 unless given, within (0, 1].
    EXPECT_DOUBLE_EQ(whole.value().inference.kv_cache_memory_fraction, 0.9);
    auto all = load(kBase, {"inference.kv_cache_memory_fraction=1"}, Purpose::infer);
    ASSERT_TRUE(all.ok());
    EXPECT_DOUBLE_EQ(all.value().inference.kv_cache_memory_fraction, 1.0);
    EXPECT_EQ(set_error("inference.kv_cache_memory_fraction=0", Purpose::infer).path, "inference.kv_cache_memory_fraction");
    EXPECT_EQ(set_error("inference.kv_cache_memory_fraction=1.5", Purpose::infer).path, "inference.kv_cache_memory_fraction");
}

TEST(Scenario, LoraFieldsValidated) {
    const InputError no_rank = set_error("training.method=lora");
    EXPECT_EQ(no_rank.path, "training.lora_rank");
    EXPECT_EQ(error_of(kBase, {"training.method=lora", "training.lora_rank=0"}).path, "training.lora_rank");
    EXPECT_EQ(set_error("training.lora_rank=8").path, "training.lora_rank");  // without method lora
    EXPECT_EQ(set_error("training.method=qlora").path, "training.method");
    const InputError bad = error_of(kBase, {"training.method=lora", "training.lora_rank=8", "training.lora_targets=linear_qkv,q_proj"});
    EXPECT_EQ(bad.path, "training.lora_targets");
    EXPECT_TRUE(contains(bad.given, "q_proj")) << bad.given;
    EXPECT_EQ(error_of(kBase, {"training.method=lora", "training.lora_rank=8", "training.lora_targets=linear_qkv,linear_qkv"}).path,
              "training.lora_targets");
    auto ok = load(kBase, {"training.method=lora", "training.lora_rank=16", "training.lora_targets=linear_qkv,linear_fc2"});
    ASSERT_TRUE(ok.ok()) << ok.error().message();
    EXPECT_EQ(ok.value().training.lora.rank, 16);
    EXPECT_TRUE(ok.value().training.lora.adapts(LoraTarget::linear_qkv));
    EXPECT_FALSE(ok.value().training.lora.adapts(LoraTarget::linear_proj));
    EXPECT_TRUE(ok.value().training.lora.adapts(LoraTarget::linear_fc2));
}

}  // namespace
}  // namespace sm
