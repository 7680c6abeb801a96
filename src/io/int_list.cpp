#include "io/int_list.hpp"

#include <charconv>
#include <optional>
#include <string>

#include <fmt/format.h>

#include "io/json_reader.hpp"

namespace sm {

namespace {

std::vector<std::string_view> split(std::string_view text, char sep) {
    std::vector<std::string_view> parts;
    for (size_t from = 0;;) {
        const size_t at = text.find(sep, from);
        parts.push_back(text.substr(from, at == std::string_view::npos ? std::string_view::npos : at - from));
        if (at == std::string_view::npos) return parts;
        from = at + 1;
    }
}

}  // namespace

Expected<std::vector<int64_t>> parse_int_list(std::string_view text, const IntListRules& rules) {
    // printable(): a control character in the argument must not break the one-line error.
    const InputError bad{rules.option, quote_input(text),
                         fmt::format("a value, a list (A,B,C) or a range FIRST:LAST[:xK|:+K] (e.g. {}), "
                                     "values from 1 to {}, at most {} of them",
                                     rules.example, rules.max_value, rules.max_count)};
    auto number = [&](std::string_view s) -> std::optional<int64_t> {
        int64_t v = 0;
        const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
        if (ec != std::errc() || end != s.data() + s.size() || v < 1 || v > rules.max_value) return std::nullopt;
        return v;
    };
    std::vector<int64_t> out;
    if (text.find(':') == std::string_view::npos) {
        for (std::string_view part : split(text, ',')) {
            const auto v = number(part);
            if (!v || out.size() == rules.max_count) return bad;
            out.push_back(*v);
        }
        return out;
    }
    const auto parts = split(text, ':');
    if (parts.size() > 3) return bad;
    const auto first = number(parts[0]), last = number(parts[1]);
    if (!first || !last || *last < *first) return bad;
    const std::string_view step = parts.size() == 3 ? parts[2] : std::string_view("x2");
    if (step.size() < 2 || (step[0] != 'x' && step[0] != '+')) return bad;
    const bool geometric = step[0] == 'x';
    const auto by = number(step.substr(1));
    if (!by || (geometric && *by < 2)) return bad;
    for (int64_t v = *first;;) {
        if (out.size() == rules.max_count) return bad;
        out.push_back(v);
        // Stop before the next value passes LAST (checked without overflowing).
        if (geometric ? v > *last / *by : v > *last - *by) return out;
        v = geometric ? v * *by : v + *by;
    }
}

}  // namespace sm
