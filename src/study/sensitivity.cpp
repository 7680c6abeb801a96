#include "study/sensitivity.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <string_view>

#include <fmt/format.h>

#include "io/field_table.hpp"
#include "io/provenance.hpp"

namespace sm {

namespace {

Probe probe_of(const std::string& path, const Json& v, FieldRange range) {
    Probe p{path, v, v, v};
    if (v.is_number_integer() || v.is_number_unsigned()) {
        const int64_t x = v.get<int64_t>();
        p.low = x % 2 == 0 && x >= 2 ? Json(x / 2) : Json(x);
        p.high = Json(2 * x);
    } else if (const double x = v.get<double>(); x != 0.0) {
        // A step that would leave the field's accepted range stops at its end (a shorter
        // secant, still d ln T / d ln x); at the end itself that side is not tried.
        p.low = std::clamp(x * (1 - kSensitivityStep), std::min(range.lo, x), std::max(range.hi, x));
        p.high = std::clamp(x * (1 + kSensitivityStep), std::min(range.lo, x), std::max(range.hi, x));
    }
    return p;
}

}  // namespace

std::vector<Probe> sensitivity_probes(const Json& base) {
    std::vector<Probe> out;
    if (!base.contains("system")) return out;
    const Json& sys = base["system"];
    // The field table's rows, in its order: each one the resolved system holds as a number.
    auto add = [&](const std::string& below, FieldRange range) {
        const Json* v = at_path(sys, below);
        if (v && v->is_number()) out.push_back(probe_of("system." + below, *v, range));
    };
    for (const EfficiencyField& f : efficiency_fields()) add(std::string("efficiency.") + f.key, {f.lo, f.hi});
    constexpr std::string_view kEachPrecision = ".PRECISION";
    for (const NumericField& f : system_fields()) {
        const std::string_view path = f.path;
        if (!path.ends_with(kEachPrecision)) {
            add(f.path, {f.lo, f.hi});
            continue;
        }
        const std::string parent(path.substr(0, path.size() - kEachPrecision.size()));
        if (const Json* peaks = at_path(sys, parent); peaks && peaks->is_object())
            for (const auto& [name, v] : peaks->items()) add(parent + "." + name, {f.lo, f.hi});
    }
    return out;
}

std::vector<Elasticity> rank_elasticities(const std::vector<Probe>& probes, const std::vector<PointOutcome>& low_out,
                                          const std::vector<PointOutcome>& high_out, double base_value) {
    std::vector<Elasticity> out;
    for (size_t i = 0; i < probes.size(); ++i) {
        const Probe& p = probes[i];
        Elasticity e{p.path, p.value, 0.0, ""};
        const double x = p.value.get<double>();
        if (x == 0.0) {
            e.method = "zero";
            out.push_back(std::move(e));
            continue;
        }
        const bool integer = p.value.is_number_integer() || p.value.is_number_unsigned();
        // A side that failed (out of range, invalid layout) falls back to the base point.
        const bool lo_ok = low_out[i].status == PointStatus::ok && p.low != p.value;
        const bool hi_ok = high_out[i].status == PointStatus::ok && p.high != p.value;
        const double t_lo = lo_ok ? low_out[i].value : base_value;
        const double t_hi = hi_ok ? high_out[i].value : base_value;
        const double x_lo = lo_ok ? p.low.get<double>() : x;
        const double x_hi = hi_ok ? p.high.get<double>() : x;
        if (x_lo == x_hi) {
            e.method = "failed: " + (high_out[i].message.empty() ? std::string("no valid neighbour") : high_out[i].message);
            out.push_back(std::move(e));
            continue;
        }
        e.elasticity = std::log(t_hi / t_lo) / std::log(x_hi / x_lo);
        e.method = integer ? fmt::format("integer {}..{}", x_lo, x_hi) : lo_ok && hi_ok ? "central" : lo_ok ? "backward" : "forward";
        out.push_back(std::move(e));
    }
    std::stable_sort(out.begin(), out.end(), [](const Elasticity& a, const Elasticity& b) {
        const double ea = std::abs(a.elasticity), eb = std::abs(b.elasticity);
        if (ea != eb) return ea > eb;
        return a.path < b.path;
    });
    return out;
}

}  // namespace sm
