// Number formats: storage sizes, the activation type of each math precision, names.
#include <gtest/gtest.h>

#include "core/precision.hpp"

namespace sm {
namespace {

TEST(Precision, StorageBytesPerElement) {
    EXPECT_EQ(bytes_per_element(Precision::fp32), 4.0);
    EXPECT_EQ(bytes_per_element(Precision::tf32), 4.0);  // stored as fp32
    EXPECT_EQ(bytes_per_element(Precision::fp16), 2.0);
    EXPECT_EQ(bytes_per_element(Precision::bf16), 2.0);
    EXPECT_EQ(bytes_per_element(Precision::fp8), 1.0);
    EXPECT_EQ(bytes_per_element(Precision::int8), 1.0);
    EXPECT_EQ(bytes_per_element(Precision::fp4), 0.5);
    EXPECT_EQ(bytes_per_element(Precision::int4), 0.5);
}

TEST(Precision, ActivationsOfEachMathPrecision) {
    EXPECT_EQ(activation_precision(Precision::fp32), Precision::fp32);
    EXPECT_EQ(activation_precision(Precision::tf32), Precision::fp32);
    EXPECT_EQ(activation_precision(Precision::fp16), Precision::fp16);
    EXPECT_EQ(activation_precision(Precision::bf16), Precision::bf16);
    // Transformer Engine keeps bf16 between 8- and 4-bit GEMMs.
    for (Precision p : {Precision::fp8, Precision::fp4, Precision::int8, Precision::int4})
        EXPECT_EQ(activation_precision(p), Precision::bf16) << to_string(p);
}

TEST(Precision, NamesRoundTrip) {
    const char* names[] = {"fp32", "tf32", "fp16", "bf16", "fp8", "fp4", "int8", "int4"};
    ASSERT_EQ(kAllPrecisions.size(), 8u);
    for (size_t i = 0; i < kAllPrecisions.size(); ++i) {
        EXPECT_EQ(to_string(kAllPrecisions[i]), names[i]);
        EXPECT_EQ(parse_precision(names[i]), kAllPrecisions[i]);
    }
    EXPECT_FALSE(parse_precision("fp9").has_value());
    EXPECT_FALSE(parse_precision("FP16").has_value());
    EXPECT_FALSE(parse_precision("").has_value());
}

}  // namespace
}  // namespace sm
