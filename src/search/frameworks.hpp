#pragma once
// What each training framework ships, as limits on the layout search (search --framework): a
// layout the search returns under one can be launched with that framework's own arguments.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/error.hpp"
#include "search/search.hpp"

namespace sm {

// What one framework ships, the single source for the search's limits (restrict_to) and for the
// launch settings that refuse a layout it cannot run (io/launch_settings.hpp).
struct Framework {
    std::string_view name;
    std::string_view source;    // where its options are listed
    unsigned zero_stages = 0;   // bit z: ZeRO stage z (0 replicated .. 3 weights sharded)
    unsigned cp_kinds = 0;      // bit of each CpKind at cp > 1
    bool interleaving = false;  // an interleaved (virtual) pipeline schedule: vp > 1
    std::string_view order_note;  // what its one rank order (tp-cp-dp-pp) is, in words
    std::string_view zero_note;   // its ZeRO stages, in words
    std::string_view cp_note;     // its context-parallel kinds, in words
    unsigned zero_stages_pipelined = 0xF;  // the ZeRO stages it runs with pipeline parallelism (pp > 1)

    // No framework ships SUMMA or another rank order than tp-cp-dp-pp.
    [[nodiscard]] static bool ships_tp_rows(int64_t rows) { return rows == 1; }
    [[nodiscard]] static bool ships_order(RankOrder o) { return o == RankOrder::tp_cp_dp; }
    [[nodiscard]] bool ships_zero(int64_t zero) const { return (zero_stages >> zero & 1U) != 0; }
    [[nodiscard]] bool ships_zero(int64_t zero, int64_t pp) const {
        return ships_zero(zero) && (pp == 1 || (zero_stages_pipelined >> zero & 1U) != 0);
    }
    // At cp 1 the kind is no kind.
    [[nodiscard]] bool ships_cp(int64_t cp, CpKind k) const { return cp == 1 || (cp_kinds >> static_cast<unsigned>(k) & 1U) != 0; }
    [[nodiscard]] bool ships_vp(int64_t vp) const { return vp == 1 || interleaving; }
    // Megatron-Core's recompute_modules and its block method (full recompute of some layers per
    // chunk); TorchTitan and DeepSpeed checkpoint the attention core or every layer, nothing between.
    [[nodiscard]] bool megatron_core() const { return name == "megatron" || name == "nemo"; }
    [[nodiscard]] bool ships_recompute_modules(ModuleSet m) const { return m == kDefaultRecomputeModules || megatron_core(); }
    [[nodiscard]] bool ships_recompute_layers(int64_t n) const { return n == 0 || megatron_core(); }
};

const std::vector<Framework>& frameworks();
const Framework* framework_named(std::string_view name);

// `f` narrowed to what `fw` ships: 1D tensor parallelism (SUMMA is a what-if no framework runs),
// the framework's default rank order, its ZeRO stages (those it runs with pipeline parallelism
// where pp > 1) and context-parallel kinds, vp 1 without interleaving. A field the scenario holds
// that `fw` does not ship is an error naming it.
Expected<LayoutConstraints> restrict_to(LayoutConstraints f, const Framework& fw);

}  // namespace sm
