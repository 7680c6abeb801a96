#pragma once
// RFC 4180 CSV, both ways: quoted fields with embedded commas, quotes and line breaks.
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "core/error.hpp"

namespace sm {

using CsvRow = std::map<std::string, std::string>;

// Bounds on a CSV read from a user: rows are handed on one at a time, so memory stays at one
// row; the row count is checked over the whole text before the first row is handed on.
struct CsvLimits {
    size_t max_rows = 10000;
    size_t max_columns = 1000;
};

// Calls `fn` with each data row keyed by the header's column names (blank lines skipped) and
// returns the number of rows; fails, naming `origin`, on too many rows or fields in a record.
Expected<size_t> for_each_csv_row(std::string_view text, const CsvLimits& limits, const std::string& origin,
                                  const std::function<void(const CsvRow&)>& fn);

// Writing: a field quoted when it must be; a number in the shortest text that reads back as the
// same double; one line of fields.
std::string csv_field(std::string_view s);
std::string csv_number(double x);
std::string csv_line(const std::vector<std::string>& fields);

}  // namespace sm
