#pragma once
#include <array>
#include <optional>
#include <string_view>

namespace sm {

// Number formats for matrix math, weights, activations and the KV cache.
enum class Precision { fp32, tf32, fp16, bf16, fp8, fp4, int8, int4 };

inline constexpr std::array<Precision, 8> kAllPrecisions = {
    Precision::fp32, Precision::tf32, Precision::fp16, Precision::bf16,
    Precision::fp8,  Precision::fp4,  Precision::int8, Precision::int4};

std::string_view to_string(Precision p);
std::optional<Precision> parse_precision(std::string_view s);

// How 8-bit GEMM operands are scaled (Transformer Engine's recipes). `delayed`: a per-tensor scale
// from the amax history, found inside the cast kernel; `current`: a per-tensor scale from this
// tensor's amax, an extra reduction pass before the cast; `mxfp8`: one E8M0 scale per 32
// elements, computed inside the cast kernel. 4-bit operands always use NVFP4 (see cost.cpp).
enum class Fp8Recipe { delayed, current, mxfp8 };
std::string_view to_string(Fp8Recipe r);
std::optional<Fp8Recipe> parse_fp8_recipe(std::string_view s);

// Storage size of one element. tf32 is stored as fp32.
double bytes_per_element(Precision p);

// The type activations are kept in when the matrix math runs in p: fp8/fp4 training keeps
// bf16 activations between layers (Transformer Engine casts at each GEMM).
Precision activation_precision(Precision p);

}  // namespace sm
