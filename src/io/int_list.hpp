#pragma once
// Integer sequences on the command line (`--gpus`, `--sweep-batch`): one value, a comma list, or
// a range FIRST:LAST[:xK|:+K] (geometric by default, doubling).
#include <cstdint>
#include <string_view>
#include <vector>

#include "core/error.hpp"

namespace sm {

struct IntListRules {
    const char* option;    // named in errors, e.g. "--gpus"
    const char* example;   // shown in errors, e.g. "256:16384:x2"
    int64_t max_value;     // values run from 1 to max_value
    size_t max_count;      // at most this many values
};

Expected<std::vector<int64_t>> parse_int_list(std::string_view text, const IntListRules& rules);

}  // namespace sm
