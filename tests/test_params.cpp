// Parameter counts against hand-computed closed forms and published sizes.
#include <gtest/gtest.h>

#include "io/scenario.hpp"
#include "model/model_spec.hpp"

namespace sm {
namespace {

ModelSpec preset(const std::string& name) {
    auto j = model_preset_json(name);
    EXPECT_TRUE(j.ok()) << name;
    auto m = parse_model(j.value(), name);
    EXPECT_TRUE(m.ok()) << (m.ok() ? "" : m.error().message());
    return m.value();
}

TEST(Params, Gpt3ClosedForm) {
    // GPT-style block: 12h^2 + 13h; embeddings Vh + sh; final layernorm 2h; tied head.
    const ModelSpec m = preset("gpt3-175b");
    const double h = 12288, l = 96, v = 51200, s = 2048;
    const ParamCount p = count_params(m);
    EXPECT_DOUBLE_EQ(p.per_layer, 12 * h * h + 13 * h);
    EXPECT_DOUBLE_EQ(p.total(m.layers), l * (12 * h * h + 13 * h) + v * h + s * h + 2 * h);
    EXPECT_NEAR(p.total(m.layers) / 1e9, 174.6, 0.1);
}

TEST(Params, Llama2_7bMatchesPublished) {
    // Llama 2 7B: 6,738,415,616 parameters (Hugging Face model card).
    const ModelSpec m = preset("llama2-7b");
    EXPECT_DOUBLE_EQ(count_params(m).total(m.layers), 6738415616.0);
}

TEST(Params, Llama2_70bGqa) {
    // 70B with 8 KV heads: 68,976,648,192 parameters.
    const ModelSpec m = preset("llama2-70b");
    EXPECT_DOUBLE_EQ(count_params(m).total(m.layers), 68976648192.0);
}

TEST(Params, MixtralTotalAndActive) {
    // Mixtral 8x7B: 46.7B total, 12.9B active per token.
    const ModelSpec m = preset("mixtral-8x7b");
    const ParamCount p = count_params(m);
    EXPECT_NEAR(p.total(m.layers) / 1e9, 46.7, 0.1);
    const double active = p.per_layer_active * static_cast<double>(m.layers) + p.embedding + p.lm_head + p.final_norm;
    EXPECT_NEAR(active / 1e9, 12.9, 0.1);
}

TEST(Params, EveryPresetParses) {
    for (const auto& name : model_preset_names()) {
        auto j = model_preset_json(name);
        ASSERT_TRUE(j.ok()) << name;
        auto m = parse_model(j.value(), name);
        EXPECT_TRUE(m.ok()) << name << ": " << (m.ok() ? "" : m.error().message());
    }
    for (const auto& name : system_preset_names()) {
        auto j = system_preset_json(name);
        ASSERT_TRUE(j.ok()) << name;
        auto s = parse_system(j.value(), name);
        EXPECT_TRUE(s.ok()) << name << ": " << (s.ok() ? "" : s.error().message());
    }
    EXPECT_EQ(model_preset_names().size(), 15u);
    EXPECT_EQ(system_preset_names().size(), 8u);
}

}  // namespace
}  // namespace sm
