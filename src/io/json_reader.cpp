#include "io/json_reader.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "core/error.hpp"

namespace sm {

namespace {

size_t edit_distance(std::string_view a, std::string_view b) {
    std::vector<size_t> prev(b.size() + 1), cur(b.size() + 1);
    for (size_t j = 0; j <= b.size(); ++j) prev[j] = j;
    for (size_t i = 1; i <= a.size(); ++i) {
        cur[0] = i;
        for (size_t j = 1; j <= b.size(); ++j) {
            const size_t sub = prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1);
            cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, sub});
        }
        std::swap(prev, cur);
    }
    return prev[b.size()];
}

std::string join(const std::vector<std::string>& v) {
    std::string s;
    for (const auto& x : v) s += (s.empty() ? "" : ", ") + x;
    return s;
}

std::string fmt_num(double x) { return fmt::format("{:g}", x); }

}  // namespace

std::optional<std::string> did_you_mean(std::string_view word, const std::vector<std::string>& candidates) {
    std::optional<std::string> best;
    size_t best_d = std::max<size_t>(2, word.size() / 3) + 1;
    size_t best_prefix = 0;
    auto common_prefix = [&](const std::string& c) {
        size_t n = 0;
        while (n < word.size() && n < c.size() && word[n] == c[n]) ++n;
        return n;
    };
    for (const auto& c : candidates) {
        const size_t d = edit_distance(word, c);
        const size_t prefix = common_prefix(c);
        // Ties go to the candidate sharing the longer prefix: "tpp" means "tp" more likely than "pp".
        if (d < best_d || (best && d == best_d && prefix > best_prefix)) {
            best_d = d;
            best_prefix = prefix;
            best = c;
        }
    }
    return best;
}

std::string printable(std::string_view s, size_t max_chars) {
    std::string out;
    for (const char ch : s) {
        if (out.size() >= max_chars) return out + "...";
        const auto c = static_cast<unsigned char>(ch);
        if (c < 0x20 || c == 0x7f)
            out += fmt::format("\\x{:02x}", c);
        else
            out += ch;
    }
    return out;
}

std::string quote_input(std::string_view s) { return fmt::format("\"{}\"", printable(s)); }

std::string show(const Json& v) {
    // Containers are named, not dumped: a deep one would recurse and a big one cost time.
    if (v.is_object()) return "an object";
    if (v.is_array()) return "an array";
    std::string s = v.dump(-1, ' ', true, Json::error_handler_t::replace);
    if (s.size() > 60) s = s.substr(0, 57) + "...";
    if (v.is_string()) return s;
    if (v.is_boolean()) return "boolean " + s;
    if (v.is_null()) return "null";
    return s;
}

ObjectReader::ObjectReader(const Json& j, std::string path) : j_(j), path_(std::move(path)) {
    if (!j.is_object()) fail(path_, show(j), "expected an object");
}

std::string ObjectReader::path_of(const char* key) const { return path_.empty() ? key : path_ + "." + key; }

bool ObjectReader::has(const char* key) const { return j_.contains(key); }

const Json* ObjectReader::find(const char* key) {
    known_.insert(key);
    auto it = j_.find(key);
    return it == j_.end() ? nullptr : &*it;
}

void ObjectReader::set_recorded(const char* key, const Json& v) {
    if (sink_) (*sink_)[key] = v;
}

void ObjectReader::drop_recorded(const char* key) {
    if (sink_) sink_->erase(key);
}

void ObjectReader::ignore(const char* key) {
    known_.insert(key);
    if (sink_ && j_.contains(key)) (*sink_)[key] = j_[key];  // documentation travels with the data
}

int64_t ObjectReader::integer(const char* key, std::optional<int64_t> def, int64_t lo, int64_t hi) {
    const Json* v = find(key);
    const std::string allowed = fmt::format("expected an integer from {} to {}", lo, hi);
    if (!v) {
        if (!def) fail(path_of(key), "nothing", "required: " + allowed);
        return keep(key, *def);
    }
    double x = 0;
    if (v->is_number_integer() || v->is_number_unsigned()) {
        if (v->is_number_unsigned() && v->get<uint64_t>() > static_cast<uint64_t>(INT64_MAX))
            fail(path_of(key), show(*v), allowed);
        const int64_t i = v->get<int64_t>();
        if (i < lo || i > hi) fail(path_of(key), show(*v), allowed);
        return keep(key, i);
    }
    if (v->is_number_float()) {
        x = v->get<double>();
        if (std::isfinite(x) && x == std::floor(x) && x >= static_cast<double>(lo) && x <= static_cast<double>(hi))
            return keep(key, static_cast<int64_t>(x));
    }
    fail(path_of(key), show(*v), allowed);
}

double ObjectReader::number(const char* key, std::optional<double> def, double lo, double hi) {
    const Json* v = find(key);
    const std::string allowed = fmt::format("expected a number from {} to {}", fmt_num(lo), fmt_num(hi));
    if (!v) {
        if (!def) fail(path_of(key), "nothing", "required: " + allowed);
        return keep(key, *def);
    }
    if (!v->is_number()) fail(path_of(key), show(*v), allowed);
    const double x = v->get<double>();
    if (!std::isfinite(x) || x < lo || x > hi) fail(path_of(key), show(*v), allowed);
    return keep(key, x);
}

bool ObjectReader::boolean(const char* key, std::optional<bool> def) {
    const Json* v = find(key);
    if (!v) {
        if (!def) fail(path_of(key), "nothing", "required: expected true or false");
        return keep(key, *def);
    }
    if (!v->is_boolean()) fail(path_of(key), show(*v), "expected true or false");
    return keep(key, v->get<bool>());
}

std::string ObjectReader::text(const char* key, std::optional<std::string> def) {
    const Json* v = find(key);
    if (!v) {
        if (!def) fail(path_of(key), "nothing", "required: expected a string");
        return keep(key, *def);
    }
    if (!v->is_string()) fail(path_of(key), show(*v), "expected a string");
    return keep(key, v->get<std::string>());
}

std::string ObjectReader::choice(const char* key, std::optional<std::string> def, const std::vector<std::string>& allowed) {
    const Json* v = find(key);
    const std::string list = "expected one of: " + join(allowed);
    if (!v) {
        if (!def) fail(path_of(key), "nothing", "required: " + list);
        return keep(key, *def);
    }
    if (!v->is_string()) fail(path_of(key), show(*v), list);
    std::string s = v->get<std::string>();  // not const: returned by move
    if (std::find(allowed.begin(), allowed.end(), s) != allowed.end()) return keep(key, std::move(s));
    auto hint = did_you_mean(s, allowed);
    fail(path_of(key), show(*v), list + (hint ? " (did you mean \"" + *hint + "\"?)" : ""));
}

std::vector<std::string> ObjectReader::choices(const char* key, const std::vector<std::string>& def,
                                               const std::vector<std::string>& allowed) {
    const Json* v = find(key);
    if (!v) return def;
    const std::string list = "a list of distinct names from: " + join(allowed);
    std::vector<std::string> names;
    if (v->is_string()) {
        const std::string text = v->get<std::string>();
        size_t start = 0;
        while (start <= text.size()) {
            const size_t comma = std::min(text.find(',', start), text.size());
            names.push_back(text.substr(start, comma - start));
            start = comma + 1;
        }
    } else if (v->is_array() && v->size() <= allowed.size()) {
        for (const Json& x : *v) {
            if (!x.is_string()) fail(path_of(key), show(*v), list);
            names.push_back(x.get<std::string>());
        }
    } else {
        fail(path_of(key), show(*v), list);
    }
    if (names.empty()) fail(path_of(key), show(*v), list);
    for (size_t i = 0; i < names.size(); ++i) {
        const bool known = std::find(allowed.begin(), allowed.end(), names[i]) != allowed.end();
        const bool repeated = std::find(names.begin(), names.begin() + static_cast<std::ptrdiff_t>(i), names[i]) !=
                              names.begin() + static_cast<std::ptrdiff_t>(i);
        if (!known) {
            auto hint = did_you_mean(names[i], allowed);
            fail(path_of(key), quote_input(names[i]), list + (hint ? " (did you mean \"" + *hint + "\"?)" : ""));
        }
        if (repeated) fail(path_of(key), quote_input(names[i]) + " twice", list);
    }
    return names;
}

std::optional<ObjectReader> ObjectReader::child(const char* key) {
    const Json* v = find(key);
    if (!v) return std::nullopt;
    ObjectReader r(*v, path_of(key));
    if (sink_) r.record_into(&(*sink_)[key]);
    return r;
}

ObjectReader ObjectReader::child_or_empty(const char* key) {
    static const Json kEmpty = Json::object();  // immutable: shared by every reader safely
    if (auto c = child(key)) return *c;
    ObjectReader r(kEmpty, path_of(key));
    if (sink_) r.record_into(&(*sink_)[key]);
    return r;
}

void ObjectReader::finish() const {
    std::vector<std::string> known(known_.begin(), known_.end());
    for (const auto& [k, v] : j_.items()) {
        if (known_.count(k)) continue;
        auto hint = did_you_mean(k, known);
        fail(path_of(printable(k).c_str()), "",
             hint ? "unknown field; did you mean \"" + *hint + "\"?" : "unknown field; allowed fields: " + join(known));
    }
}

}  // namespace sm
