#pragma once
// The system.efficiency fields as one table: parsing reads each field's range and default from
// it, and `scalemodel presets --schema` prints it as the table docs/PRESET_SCHEMA.md holds (a test
// fails when that copy is stale), so the documented defaults are the ones a system written
// without a preset runs on.
#include <span>
#include <string>

#include "hardware/system_spec.hpp"

namespace sm {

struct EfficiencyField {
    const char* key;              // below system.efficiency
    double Efficiency::*member;
    double lo, hi;                // accepted, inclusive
    const char* unit;             // "1": a fraction or a count
    // nullptr: the default is Efficiency{}'s value; else it is this earlier field's value.
    const char* default_from;
    const char* doc;
};

std::span<const EfficiencyField> efficiency_fields();
// The choices of system.efficiency.decode_attention, the default first.
std::span<const char* const> decode_attention_choices();
// docs/PRESET_SCHEMA.md's generated part: a markdown table of every efficiency field.
std::string efficiency_schema_markdown();

}  // namespace sm
