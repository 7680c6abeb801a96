#pragma once
// Input errors are values: the parser and validator produce them, the CLI prints them (exit 2).
#include <stdexcept>
#include <string>
#include <utility>
#include <variant>

namespace sm {

// One bad input: the dotted path of the field, what was given and what is allowed.
struct InputError {
    std::string path;
    std::string given;
    std::string allowed;

    [[nodiscard]] std::string message() const {
        std::string m = path.empty() ? std::string("input") : path;
        m += ": ";
        if (!given.empty()) m += "got " + given + "; ";
        m += allowed;
        return m;
    }
};

// Thrown only inside the I/O layer and converted to an Expected at its boundary.
struct InputException : std::runtime_error {
    InputError error;
    explicit InputException(InputError e) : std::runtime_error(e.message()), error(std::move(e)) {}
};

[[noreturn]] inline void fail(std::string path, std::string given, std::string allowed) {
    throw InputException(InputError{std::move(path), std::move(given), std::move(allowed)});
}

// Minimal std::expected stand-in (C++20): a value or an InputError.
template <class T>
class Expected {
public:
    Expected(T value) : v_(std::move(value)) {}            // NOLINT(google-explicit-constructor)
    Expected(InputError error) : v_(std::move(error)) {}   // NOLINT(google-explicit-constructor)
    [[nodiscard]] bool ok() const { return std::holds_alternative<T>(v_); }
    explicit operator bool() const { return ok(); }
    [[nodiscard]] const T& value() const& { return std::get<T>(v_); }
    [[nodiscard]] T& value() & { return std::get<T>(v_); }
    [[nodiscard]] T&& value() && { return std::get<T>(std::move(v_)); }
    [[nodiscard]] const InputError& error() const { return std::get<InputError>(v_); }
    const T* operator->() const { return &value(); }
    const T& operator*() const { return value(); }

private:
    std::variant<T, InputError> v_;
};

// Runs f, turning an InputException into an error value.
template <class F>
auto capture(F&& f) -> Expected<decltype(f())> {
    try {
        return f();
    } catch (const InputException& e) {
        return e.error;
    }
}

}  // namespace sm
