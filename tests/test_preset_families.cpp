// The system presets of one family (issue 31): a preset that leaves out a field its sibling sets
// silently falls back to the default, so siblings set the same fields. The one exception is
// stated in the preset itself: Blackwell Ultra (B300, GB300) cut INT8 to a small fraction, and
// their presets leave int8 out on purpose (int8 math is refused there), saying so in a source.
#include <gtest/gtest.h>

#include <set>
#include <string>
#include <utility>
#include <vector>

#include "io/scenario.hpp"

namespace sm {
namespace {

// Every leaf field of a preset, as a dotted path (its name, description and sources aside).
void fields(const Json& j, const std::string& prefix, std::set<std::string>& out) {
    for (const auto& [k, v] : j.items()) {
        if (prefix.empty() && (k == "name" || k == "description" || k == "sources")) continue;
        if (v.is_object())
            fields(v, prefix + k + ".", out);
        else
            out.insert(prefix + k);
    }
}

std::set<std::string> fields_of(const std::string& preset) {
    const Expected<Json> j = system_preset_json(preset);
    EXPECT_TRUE(j.ok()) << preset;
    std::set<std::string> out;
    if (j.ok()) fields(j.value(), "", out);
    return out;
}

// What one preset of a pair sets and the other does not.
std::vector<std::string> only_in(const std::set<std::string>& a, const std::set<std::string>& b) {
    std::vector<std::string> out;
    for (const std::string& f : a)
        if (!b.contains(f)) out.push_back(f);
    return out;
}

TEST(PresetFamilies, SiblingsSetTheSameFields) {
    const std::vector<std::pair<std::string, std::string>> same = {{"dgx-h100", "dgx-h200"}, {"dgx-a100-40gb", "dgx-a100-80gb"}};
    for (const auto& [a, b] : same) {
        const std::set<std::string> fa = fields_of(a), fb = fields_of(b);
        EXPECT_EQ(only_in(fa, fb), std::vector<std::string>{}) << a << " sets what " << b << " does not";
        EXPECT_EQ(only_in(fb, fa), std::vector<std::string>{}) << b << " sets what " << a << " does not";
        EXPECT_GT(fa.size(), 20u) << a;  // the comparison sees the whole preset
    }
    // Blackwell and Blackwell Ultra: the same but INT8, which the Ultra presets leave out and say so.
    for (const auto& [blackwell, ultra] : {std::pair<std::string, std::string>{"dgx-b200", "dgx-b300"}, {"gb200-nvl72", "gb300-nvl72"}}) {
        const std::set<std::string> fa = fields_of(blackwell), fb = fields_of(ultra);
        EXPECT_EQ(only_in(fa, fb), std::vector<std::string>{"accelerator.matrix_flop_per_s.int8"}) << blackwell << " vs " << ultra;
        EXPECT_EQ(only_in(fb, fa), std::vector<std::string>{}) << ultra << " sets what " << blackwell << " does not";
        const Expected<Json> j = system_preset_json(ultra);
        ASSERT_TRUE(j.ok());
        EXPECT_NE(j.value().at("sources").dump().find("INT8 was cut"), std::string::npos) << ultra;
    }
}

}  // namespace
}  // namespace sm
