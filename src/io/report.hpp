#pragma once
// Result writers: JSON (SPEC keys), CSV and a readable text report; and the finiteness guard
// every number passes before it leaves the program.
#include <string>
#include <vector>

#include "io/energy_report.hpp"
#include "io/json_reader.hpp"
#include "io/scenario.hpp"
#include "training/step.hpp"

namespace sm {

enum class Format { text, json, csv };

Json parallel_json(const ParallelConfig& p);
Json train_json(const Scenario& s, const TrainResult& r);
// A training step's energy and cost in the terms of io/energy_report.hpp.
EnergyScope train_energy_scope(const TrainResult& r);
std::string train_text(const Scenario& s, const TrainResult& r);
// The pipeline GPUs of a layout (training_stages): JSON array and a text table.
Json stages_json(const std::vector<StageReport>& stages);
std::string stages_text(const ParallelConfig& p, const std::vector<StageReport>& stages, double capacity_bytes);
// One CSV header line and one row per result, columns from a flat walk of the JSON.
std::string csv_header(const Json& flat_source);
std::string csv_row(const Json& flat_source);

// The first non-finite number's path, or empty when every number is finite.
std::string find_non_finite(const Json& j, const std::string& path = "");

std::string gib(double bytes);
std::string seconds(double s);

}  // namespace sm
