#include "core/precision.hpp"

namespace sm {

std::string_view to_string(Precision p) {
    switch (p) {
        case Precision::fp32: return "fp32";
        case Precision::tf32: return "tf32";
        case Precision::fp16: return "fp16";
        case Precision::bf16: return "bf16";
        case Precision::fp8: return "fp8";
        case Precision::fp4: return "fp4";
        case Precision::int8: return "int8";
        case Precision::int4: return "int4";
    }
    return "?";
}

std::optional<Precision> parse_precision(std::string_view s) {
    for (Precision p : kAllPrecisions)
        if (to_string(p) == s) return p;
    return std::nullopt;
}

std::string_view to_string(Fp8Recipe r) {
    switch (r) {
        case Fp8Recipe::delayed: return "delayed";
        case Fp8Recipe::current: return "current";
        case Fp8Recipe::mxfp8: return "mxfp8";
    }
    return "?";
}

std::optional<Fp8Recipe> parse_fp8_recipe(std::string_view s) {
    for (Fp8Recipe r : {Fp8Recipe::delayed, Fp8Recipe::current, Fp8Recipe::mxfp8})
        if (to_string(r) == s) return r;
    return std::nullopt;
}

double bytes_per_element(Precision p) {
    switch (p) {
        case Precision::fp32:
        case Precision::tf32: return 4.0;
        case Precision::fp16:
        case Precision::bf16: return 2.0;
        case Precision::fp8:
        case Precision::int8: return 1.0;
        case Precision::fp4:
        case Precision::int4: return 0.5;
    }
    return 2.0;
}

Precision activation_precision(Precision p) {
    switch (p) {
        case Precision::fp32:
        case Precision::tf32: return Precision::fp32;
        case Precision::fp16: return Precision::fp16;
        default: return Precision::bf16;
    }
}

}  // namespace sm
