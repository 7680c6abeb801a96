#pragma once
// Shared fixtures for the unit tests: presets and scenarios by name.
#include <gtest/gtest.h>

#include <string>

#include "io/scenario.hpp"

namespace sm::testing {

inline ModelSpec model_preset(const std::string& name) {
    auto j = model_preset_json(name);
    EXPECT_TRUE(j.ok()) << name;
    auto m = parse_model(j.value(), name);
    EXPECT_TRUE(m.ok()) << (m.ok() ? "" : m.error().message());
    return m.value();
}

inline SystemSpec system_preset(const std::string& name) {
    auto j = system_preset_json(name);
    EXPECT_TRUE(j.ok()) << name;
    auto s = parse_system(j.value(), name);
    EXPECT_TRUE(s.ok()) << (s.ok() ? "" : s.error().message());
    return s.value();
}

inline Scenario scenario(const std::string& json, Purpose purpose = Purpose::train) {
    auto doc = parse_scenario_text(json, "test");
    EXPECT_TRUE(doc.ok()) << (doc.ok() ? "" : doc.error().message());
    auto s = build_scenario(doc.value(), purpose);
    EXPECT_TRUE(s.ok()) << (s.ok() ? "" : s.error().message());
    return s.value();
}

}  // namespace sm::testing
