#include "study/sensitivity.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>

#include <fmt/format.h>

#include "io/field_table.hpp"
#include "io/provenance.hpp"

namespace sm {

std::vector<Probe> sensitivity_probes(const Json& base) {
    std::vector<Probe> out;
    if (!base.contains("system")) return out;
    for_each_leaf(base["system"], "system", [&](const std::string& path, const Json& v) {
        if (!v.is_number() || path.find("sources") != std::string::npos) return;
        Probe p{path, v, v, v};
        if (v.is_number_integer() || v.is_number_unsigned()) {
            const int64_t x = v.get<int64_t>();
            p.low = x % 2 == 0 && x >= 2 ? Json(x / 2) : Json(x);
            p.high = Json(2 * x);
        } else if (const double x = v.get<double>(); x != 0.0) {
            // A step that would leave the field's accepted range stops at its end (a shorter
            // secant, still d ln T / d ln x); at the end itself that side is not tried.
            const std::optional<FieldRange> range = system_field_range(path);
            const double lo = range ? range->lo : -std::numeric_limits<double>::infinity();
            const double hi = range ? range->hi : std::numeric_limits<double>::infinity();
            p.low = std::clamp(x * (1 - kSensitivityStep), std::min(lo, x), std::max(hi, x));
            p.high = std::clamp(x * (1 + kSensitivityStep), std::min(lo, x), std::max(hi, x));
        }
        out.push_back(std::move(p));
    });
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
