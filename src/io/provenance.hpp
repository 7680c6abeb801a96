#pragma once
// Where a scenario's values came from: which preset fields the file or `--set` changed, and the
// overrides a result was run with. Results carry both so that they can be reproduced.
#include <functional>
#include <string>
#include <vector>

#include "io/json_reader.hpp"

namespace sm {

struct Scenario;

// The dotted paths (e.g. "system.accelerator.memory_bw_bytes_per_s") of the leaves that a
// scenario's `model` or `system` section gives beside its `preset` with a value other than the
// preset's. `doc` is the scenario after `--set`; a section without a preset changes nothing.
std::vector<std::string> preset_changes(const Json& doc);

// "system: dgx-h100 (modified: system.accelerator.memory_bw_bytes_per_s)\n", one line per
// section whose preset was modified; empty when none was.
std::string provenance_text(const Scenario& s);

// `--set PATH=VALUE` arguments as an object {PATH: VALUE}, VALUE read as apply_overrides reads it.
Json overrides_json(const std::vector<std::string>& sets);

// The value at a dotted path below `root` ("accelerator.hbm.stacks"), or nullptr.
const Json* at_path(const Json& root, const std::string& path);
// Every leaf of `j` as (dotted path, value); arrays are leaves.
void for_each_leaf(const Json& j, const std::string& prefix, const std::function<void(const std::string&, const Json&)>& fn);

}  // namespace sm
