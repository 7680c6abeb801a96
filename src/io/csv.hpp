#pragma once
// RFC 4180 CSV: quoted fields with embedded commas and doubled quotes.
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace sm {

using CsvRow = std::map<std::string, std::string>;

// Rows keyed by the header's column names. Blank lines are skipped.
std::vector<CsvRow> parse_csv(std::string_view text);

}  // namespace sm
