#pragma once
// The scenario's numeric fields as tables: parsing reads each field's range (and, where the
// table holds it, its default) from them, `sensitivity` probes the system fields they list, and
// `scalemodel presets --schema` prints them as the tables docs/PRESET_SCHEMA.md holds (a test
// fails when that copy is stale), so the documented ranges and defaults are the ones a scenario
// is read with. Bounds that depend on other fields (heads divide by tp, top_k at most experts)
// are checked beside the reader, which may tighten a row's range but never widen it.
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "hardware/system_spec.hpp"
#include "inference/inference_spec.hpp"
#include "io/json_reader.hpp"
#include "parallel/parallel_config.hpp"
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

// A numeric field read by its path (the system's other fields, the model's): its range, and its
// default as the docs say it (some follow from other fields: the calibrated energy figures, the
// generated ones under system.technology, a model's kv_heads).
struct NumericField {
    const char* path;          // below its section (system or model)
    const char* unit;
    double lo, hi;             // accepted, inclusive
    const char* default_text;  // "required" where there is none
    const char* doc;
};

// A numeric field of the parallel, training or inference section, read straight into its spec
// (exactly one of `real` and `count` set); its default is the spec's own (ParallelConfig{},
// TrainingSpec{}, InferenceSpec{}) unless `default_text` says it follows another field: such a
// field is read only when given, and left at the spec's value (its "derived" marker) otherwise.
template <class Spec>
struct SpecField {
    const char* key;
    double Spec::*real;
    int64_t Spec::*count;
    double lo, hi;  // accepted, inclusive
    const char* unit;
    const char* doc;
    const char* default_text = nullptr;
};

std::span<const EfficiencyField> efficiency_fields();
// training.*: the numeric fields with fixed bounds (global_batch's default follows the layout:
// read beside the layout).
std::span<const SpecField<TrainingSpec>> training_fields();
// inference.*: the numeric fields.
std::span<const SpecField<InferenceSpec>> inference_fields();
// parallel.*: the degrees, the micro-batch, the ZeRO stage, the explicit stage layer counts.
std::span<const SpecField<ParallelConfig>> parallel_fields();
std::span<const NumericField> system_fields();
std::span<const NumericField> model_fields();
// The entry of `path` (below system, below model); a path not in the table is a programming
// error (throws std::logic_error).
const NumericField& system_field(std::string_view path);
const NumericField& model_field(std::string_view path);

// A row's field from the reader of the object that holds it (the key is the path's last part),
// in the row's range; `lo` overrides its lower end where the field may be left 0 to be derived,
// `hi` tightens its upper end (a bound another field sets).
double read_number(ObjectReader& r, const NumericField& f, std::optional<double> def, std::optional<double> lo = std::nullopt);
int64_t read_count(ObjectReader& r, const NumericField& f, std::optional<int64_t> def, std::optional<int64_t> hi = std::nullopt);
// The same for the system table's row `key` below `section` (the reader's own path below system;
// empty: system itself).
double system_number(ObjectReader& r, std::string_view section, const char* key, std::optional<double> def,
                     std::optional<double> lo = std::nullopt);
int64_t system_count(ObjectReader& r, std::string_view section, const char* key, std::optional<int64_t> def,
                     std::optional<int64_t> hi = std::nullopt);
// Every numeric field of a spec table, into the spec.
template <class Spec>
void read_spec_fields(ObjectReader& r, Spec& s, std::span<const SpecField<Spec>> fields) {
    for (const SpecField<Spec>& f : fields) {
        if (f.default_text && !r.has(f.key)) continue;
        if (f.real)
            s.*f.real = r.number(f.key, s.*f.real, f.lo, f.hi);
        else
            s.*f.count = r.integer(f.key, s.*f.count, static_cast<int64_t>(f.lo), static_cast<int64_t>(f.hi));
    }
}
// A field's accepted range.
struct FieldRange {
    double lo, hi;
};
// The choices of system.efficiency.decode_attention, the default first.
std::span<const char* const> decode_attention_choices();
// docs/PRESET_SCHEMA.md's generated part: markdown tables of the system fields, of every
// efficiency field, and of the model, parallel, training and inference sections' numeric fields.
std::string system_schema_markdown();

}  // namespace sm
