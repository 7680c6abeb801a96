#pragma once
// The scenario's numeric fields as tables: parsing reads each field's range (and, for
// system.efficiency, training and inference, its default) from them, and `scalemodel presets
// --schema` prints them as the tables docs/PRESET_SCHEMA.md holds (a test fails when that copy is
// stale), so the documented ranges and defaults are the ones a scenario is read with. The system's
// integer counts are in the system table (unit "count"); the model's and parallel section's
// fields, whose bounds depend on each other (heads divide by tp, ...), and the technology and
// HBM generation readers keep their checks beside their own code.
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "hardware/system_spec.hpp"
#include "inference/inference_spec.hpp"
#include "training/training_spec.hpp"

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

// Any other numeric system field: its range, and its default as the docs say it (some follow
// from other fields: the calibrated energy figures, the generated ones under system.technology).
struct SystemField {
    const char* path;          // below system
    const char* unit;
    double lo, hi;             // accepted, inclusive
    const char* default_text;  // "required" where there is none
    const char* doc;
};

// A numeric field of the training or inference section, read straight into its spec (exactly one
// of `real` and `count` set); its default is the spec's own (TrainingSpec{}, InferenceSpec{}).
template <class Spec>
struct SpecField {
    const char* key;
    double Spec::*real;
    int64_t Spec::*count;
    double lo, hi;  // accepted, inclusive
    const char* unit;
    const char* doc;
};

std::span<const EfficiencyField> efficiency_fields();
// training.*: the numeric fields with fixed bounds (global_batch's default follows the layout:
// read beside the layout).
std::span<const SpecField<TrainingSpec>> training_fields();
// inference.*: the numeric fields.
std::span<const SpecField<InferenceSpec>> inference_fields();
std::span<const SystemField> system_fields();
// The entry of `path` (below system); a path not in the table is a programming error (throws
// std::logic_error).
const SystemField& system_field(std::string_view path);
// The accepted range of a numeric system field by its dotted path from the document's root
// ("system.efficiency.gemm_max", "system.accelerator.matrix_flop_per_s.bf16"); nullopt for a
// path neither table holds (the integer counts, the technology and HBM sections).
struct FieldRange {
    double lo, hi;
};
std::optional<FieldRange> system_field_range(std::string_view dotted_path);
// The choices of system.efficiency.decode_attention, the default first.
std::span<const char* const> decode_attention_choices();
// docs/PRESET_SCHEMA.md's generated part: markdown tables of the system fields, of every
// efficiency field, and of the training and inference sections' numeric fields.
std::string system_schema_markdown();

}  // namespace sm
