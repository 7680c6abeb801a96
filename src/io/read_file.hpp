#pragma once
// The one way scalemodel reads a file or stream (scenarios, data sets, their context files,
// standard input): a size cap enforced while reading, so /dev/zero, /dev/urandom or an endless
// pipe stop at the cap; a directory is refused by name; every error names the file by its role.
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

#include "core/error.hpp"

namespace sm {

// The documented cap on anything read (docs/ROBUSTNESS.md): 4 MiB.
inline constexpr size_t kMaxInputBytes = size_t{4} << 20;

// What is being read, for error messages: `role` is what the file is to the user ("SCENARIO",
// "--dataset", "data-set context file (beside the data set)"), `kind` what it should hold
// ("a JSON file").
struct InputSource {
    std::string path;  // "-": standard input
    std::string role;
    std::string kind;
};

// The whole text of `src`, or an error when it cannot be opened, is a directory, or holds more
// than `max_bytes` (reading stops at the cap). Regular files, pipes and character devices
// (/dev/stdin) are read; the cap bounds the endless ones.
Expected<std::string> read_bounded(const InputSource& src, size_t max_bytes = kMaxInputBytes);
// As read_bounded, but a file that does not exist is not an error: nullopt.
Expected<std::optional<std::string>> read_if_present(const InputSource& src, size_t max_bytes = kMaxInputBytes);

// A path for a one-line message: control characters escaped, and a long path cut in the middle
// so the file name at its end survives.
std::string printable_path(std::string_view path);
std::string quote_path(std::string_view path);

}  // namespace sm
