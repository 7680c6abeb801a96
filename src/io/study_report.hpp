#pragma once
// Writers for the studies (`sweep`, `attribute`, `sensitivity`): JSON, CSV (long format) and text.
#include <string>
#include <vector>

#include "io/json_reader.hpp"
#include "study/attribute.hpp"
#include "study/evaluate.hpp"
#include "study/grid.hpp"
#include "study/sensitivity.hpp"

namespace sm {

// What every study report starts from.
struct StudyHeader {
    std::string title;       // e.g. "GPT-3 175B on dgx-h100"
    std::string provenance;  // provenance_text of the base scenario
    StudyOptions options;
};

struct SweepTable {
    std::vector<std::string> varied;  // the --vary paths, in order
    std::vector<Edits> points;
    std::vector<PointOutcome> outcomes;
    Json columns;  // a result whose keys are the CSV columns (so a header prints when no point fits)
};
Json sweep_table_json(const SweepTable& t, const StudyHeader& h);
std::string sweep_table_csv(const SweepTable& t);
std::string sweep_table_text(const SweepTable& t, const StudyHeader& h);

Json attribution_json(const Attribution& a, const StudyHeader& h);
std::string attribution_csv(const Attribution& a);
std::string attribution_text(const Attribution& a, const StudyHeader& h, const std::string& to_title);

struct SensitivityReport {
    double value = 0;  // the objective at the base
    std::vector<Elasticity> fields;
};
Json sensitivity_json(const SensitivityReport& r, const StudyHeader& h);
std::string sensitivity_csv(const SensitivityReport& r);
std::string sensitivity_text(const SensitivityReport& r, const StudyHeader& h);

// An objective's value as a person reads it: seconds scaled, others with 4 significant digits.
std::string objective_text(const std::string& key, double v);

}  // namespace sm
