#pragma once
// What each training framework ships, as limits on the layout search (search --framework): a
// layout the search returns under one can be launched with that framework's own arguments.
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/error.hpp"
#include "search/search.hpp"

namespace sm {

struct Framework {
    std::string_view name;
    std::string_view source;    // where its options are listed
    unsigned zero_stages = 0;   // bit z: ZeRO stage z (0 replicated .. 3 weights sharded)
    unsigned cp_kinds = 0;      // bit of each CpKind at cp > 1
    bool interleaving = false;  // an interleaved (virtual) pipeline schedule: vp > 1
};

const std::vector<Framework>& frameworks();
const Framework* framework_named(std::string_view name);

// `f` narrowed to what `fw` ships: 1D tensor parallelism (SUMMA is a what-if no framework runs),
// the framework's default rank order, its ZeRO stages and context-parallel kinds, vp 1 without
// interleaving. A field the scenario holds that `fw` does not ship is an error naming it.
Expected<LayoutConstraints> restrict_to(LayoutConstraints f, const Framework& fw);

}  // namespace sm
