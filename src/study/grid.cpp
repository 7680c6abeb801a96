#include "study/grid.hpp"

#include <charconv>
#include <cmath>

#include <fmt/format.h>

#include "io/scenario.hpp"

namespace sm {

namespace {

constexpr const char* kForms = "PATH=a,b,c or PATH=START:STOP:xF (geometric) or PATH=START:STOP:+S (arithmetic)";

bool is_integer_text(std::string_view t) {
    int64_t v = 0;
    const auto [p, ec] = std::from_chars(t.data(), t.data() + t.size(), v);
    return ec == std::errc() && p == t.data() + t.size();
}

std::optional<double> number_of(std::string_view t) {
    const Json v = Json::parse(t, nullptr, false);
    if (v.is_discarded() || !v.is_number()) return std::nullopt;
    const double x = v.get<double>();
    if (!std::isfinite(x)) return std::nullopt;
    return x;
}

std::vector<std::string> split(std::string_view s, char sep) {
    std::vector<std::string> out;
    size_t start = 0;
    while (true) {
        const auto at = s.find(sep, start);
        out.emplace_back(s.substr(start, at == std::string_view::npos ? std::string_view::npos : at - start));
        if (at == std::string_view::npos) return out;
        start = at + 1;
    }
}

std::vector<Json> range_values(std::string_view list, const std::vector<std::string>& parts,
                               const char* flag) {
    const auto lo = number_of(parts[0]);
    const auto hi = number_of(parts[1]);
    const std::string_view step_text = std::string_view(parts[2]).substr(parts[2].empty() ? 0 : 1);
    const auto step = number_of(step_text);
    const bool geometric = !parts[2].empty() && parts[2][0] == 'x';
    const bool arithmetic = !parts[2].empty() && parts[2][0] == '+';
    if (!lo || !hi || !step || !(geometric || arithmetic))
        fail(flag, quote_input(list), std::string("a range is START:STOP:xF or START:STOP:+S with numbers, e.g. 1:16:x2 or 0:1:+0.25"));
    if (*hi < *lo) fail(flag, quote_input(list), "STOP must not be below START");
    if (geometric && (*step <= 1.0 || *lo <= 0.0))
        fail(flag, quote_input(list), "a geometric range needs START > 0 and a factor F > 1");
    if (arithmetic && *step <= 0.0) fail(flag, quote_input(list), "an arithmetic range needs a step S > 0");
    const bool integers = is_integer_text(parts[0]) && is_integer_text(parts[1]) && is_integer_text(step_text);
    // Count first, so a huge range is refused before anything is built.
    const double count = geometric ? std::floor(std::log(*hi / *lo) / std::log(*step) + 1e-9) + 1
                                   : std::floor((*hi - *lo) / *step + 1e-9) + 1;
    if (!(count <= static_cast<double>(kMaxSweepPoints)))
        fail(flag, quote_input(list), fmt::format("{:.0f} values; at most {} per sweep", count, kMaxSweepPoints));
    std::vector<Json> out;
    for (int64_t i = 0; i < static_cast<int64_t>(count); ++i) {
        // Each value from START directly (not by accumulation), so rounding does not drift.
        const double x = geometric ? *lo * std::pow(*step, static_cast<double>(i)) : *lo + *step * static_cast<double>(i);
        if (integers)
            out.emplace_back(static_cast<int64_t>(std::llround(x)));
        else
            out.emplace_back(x);
    }
    return out;
}

}  // namespace

Expected<Vary> parse_vary(std::string_view spec, const char* flag) {
    return capture([&] {
        const auto eq = spec.find('=');
        if (eq == std::string_view::npos || eq == 0 || eq + 1 == spec.size()) fail(flag, quote_input(spec), kForms);
        Vary v;
        v.path = std::string(spec.substr(0, eq));
        const std::string_view list = spec.substr(eq + 1);
        for (const std::string& key : split(v.path, '.'))
            if (key.empty()) fail(flag, quote_input(spec), "PATH is a dotted field path such as system.scale_up.domain_gpus");
        const auto colon = split(list, ':');
        if (colon.size() == 3) {
            v.values = range_values(list, colon, flag);
        } else if (colon.size() == 1) {
            for (const std::string& item : split(list, ',')) {
                if (item.empty()) fail(flag, quote_input(spec), "an empty item in the list a,b,c");
                v.values.push_back(override_value(item));
            }
        } else {
            fail(flag, quote_input(spec), kForms);
        }
        const bool model = v.path == "model.preset";
        if (model || v.path == "system.preset") {
            const std::vector<std::string> names = model ? model_preset_names() : system_preset_names();
            if (v.values.size() == 1 && v.values[0] == "all") {
                v.values.clear();
                for (const std::string& n : names) v.values.emplace_back(n);
            }
            for (const Json& n : v.values) {
                const bool known = n.is_string() && std::find(names.begin(), names.end(), n.get<std::string>()) != names.end();
                if (!known) {
                    const auto hint = n.is_string() ? did_you_mean(n.get<std::string>(), names) : std::nullopt;
                    fail(flag, fmt::format("{}={}", v.path, show(n)),
                         hint ? fmt::format("unknown preset; did you mean \"{}\"? (`all` for every one)", *hint)
                              : std::string("unknown preset; see `scalemodel presets`, or `all`"));
                }
            }
        }
        return v;
    });
}

Expected<std::vector<Edits>> grid_points(const std::vector<Vary>& vs, const char* flag) {
    return capture([&] {
        double total = 1;
        std::string dims;
        for (const Vary& v : vs) {
            total *= static_cast<double>(v.values.size());
            dims += (dims.empty() ? "" : " x ") + std::to_string(v.values.size());
        }
        if (total > static_cast<double>(kMaxSweepPoints))
            fail(flag, fmt::format("a grid of {} = {:.0f} points", dims, total),
                 fmt::format("at most {} points; split the sweep or coarsen a range", kMaxSweepPoints));
        std::vector<Edits> out(static_cast<size_t>(total));
        size_t stride = out.size();
        for (const Vary& v : vs) {
            stride /= v.values.size();
            for (size_t i = 0; i < out.size(); ++i) out[i].emplace_back(v.path, v.values[(i / stride) % v.values.size()]);
        }
        return out;
    });
}

Expected<Json> apply_edits(Json doc, const Edits& edits) {
    std::vector<std::string> sets;
    sets.reserve(edits.size());
    for (const auto& [path, value] : edits) sets.push_back(path + "=" + value.dump());
    return apply_overrides(std::move(doc), sets);
}

}  // namespace sm
