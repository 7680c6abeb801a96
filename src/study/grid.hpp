#pragma once
// The points of a sweep: `--vary PATH=LIST` specs and their cartesian product. A point is a list
// of (dotted path, value) edits applied to the scenario's JSON like `--set`.
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/error.hpp"
#include "io/json_reader.hpp"

namespace sm {

// Bounds that keep a sweep finite: a grid beyond this many points is refused, not started.
inline constexpr size_t kMaxSweepPoints = 1'000'000;

struct Vary {
    std::string path;         // e.g. "system.accelerator.memory_bw_bytes_per_s"
    std::vector<Json> values;  // in the order given (ranges ascending from START)
};

// One `--vary PATH=LIST`. LIST is `a,b,c` (each a JSON scalar, else a string), `START:STOP:xF`
// (geometric, F > 1), `START:STOP:+S` (arithmetic, S > 0), both inclusive of STOP within a
// relative 1e-9; integers when START, STOP and the step are written as integers. For
// `system.preset` / `model.preset` every name must be a preset, and `all` lists every preset.
// Errors name `flag` (e.g. "--vary").
Expected<Vary> parse_vary(std::string_view spec, const char* flag = "--vary");

// One point of a grid: the edits to apply, first varied field first.
using Edits = std::vector<std::pair<std::string, Json>>;

// The cartesian product, the first --vary varying slowest (row-major); refused beyond
// kMaxSweepPoints (naming `flag`).
Expected<std::vector<Edits>> grid_points(const std::vector<Vary>& vs, const char* flag = "--vary");

// `doc` with each edit applied at its dotted path (objects created on the way, as `--set` does).
Expected<Json> apply_edits(Json doc, const Edits& edits);

}  // namespace sm
