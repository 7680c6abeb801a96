#pragma once
// Strict reading of one JSON object: every key must be consumed, numbers are range-checked, and
// errors name the dotted path, what was given and what is allowed (with "did you mean").
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace sm {

using Json = nlohmann::json;

// The closest candidate to `word`, if close enough to be a likely typo.
std::optional<std::string> did_you_mean(std::string_view word, const std::vector<std::string>& candidates);
// A short rendering of a JSON value for error messages.
std::string show(const Json& v);
// Text from the input made safe for a one-line message: control characters escaped, long text cut.
std::string printable(std::string_view s, size_t max_chars = 80);
// A user's string as an error message quotes it: printable and in double quotes.
std::string quote_input(std::string_view s);

class ObjectReader {
public:
    ObjectReader(const Json& j, std::string path);

    int64_t integer(const char* key, std::optional<int64_t> def, int64_t lo, int64_t hi);
    double number(const char* key, std::optional<double> def, double lo, double hi);
    bool boolean(const char* key, std::optional<bool> def);
    std::string choice(const char* key, std::optional<std::string> def, const std::vector<std::string>& allowed);
    std::string text(const char* key, std::optional<std::string> def);
    // Distinct choices: a JSON array of strings, or one string of comma-separated names (what
    // `--set PATH=a,b` gives); at least one.
    std::vector<std::string> choices(const char* key, const std::vector<std::string>& def,
                                     const std::vector<std::string>& allowed);
    // A nested object, or nullopt when absent.
    std::optional<ObjectReader> child(const char* key);
    // A nested object, or an empty one when absent (so that its defaults are read and recorded).
    ObjectReader child_or_empty(const char* key);
    // From now on every value read (the given one or the default taken) is written to
    // (*sink)[key], nested readers into sub-objects: the fully resolved input, for `resolve`.
    void record_into(Json* sink) { sink_ = sink; }
    // Replaces what the resolved input says for `key` (a value derived from other fields), or
    // removes it (a generator of other fields, such as a preset, that is not itself a figure).
    void set_recorded(const char* key, const Json& v);
    void drop_recorded(const char* key);
    // Marks a key as known without reading it (documentation fields such as `sources`).
    void ignore(const char* key);
    [[nodiscard]] bool has(const char* key) const;
    [[nodiscard]] std::string path_of(const char* key) const;
    // Fails on the first key nobody read.
    void finish() const;

private:
    const Json* find(const char* key);
    template <class T>
    T keep(const char* key, T value) {
        if (sink_) (*sink_)[key] = value;
        return value;
    }
    const Json& j_;
    Json* sink_ = nullptr;
    std::string path_;
    std::set<std::string> known_;
};

}  // namespace sm
