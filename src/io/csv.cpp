#include "io/csv.hpp"

#include <fmt/format.h>

namespace sm {

namespace {

// One record at a time out of the text; a record holds at most `max_fields` fields (the reader
// stops filling it beyond that and reports the overflow).
class RecordReader {
public:
    explicit RecordReader(std::string_view text) : text_(text) {}

    // False at the end of the text. `overflow` is set when the record had more than max_fields.
    bool next(std::vector<std::string>& rec, size_t max_fields, bool& overflow) {
        rec.clear();
        overflow = false;
        std::string field;
        bool quoted = false, any = false;
        auto push = [&] {
            if (rec.size() < max_fields) rec.push_back(std::move(field));
            else overflow = true;
            field.clear();
        };
        for (; pos_ < text_.size(); ++pos_) {
            const char c = text_[pos_];
            if (quoted) {
                if (c == '"' && pos_ + 1 < text_.size() && text_[pos_ + 1] == '"') {
                    field += '"';
                    ++pos_;
                } else if (c == '"') {
                    quoted = false;
                } else {
                    field += c;
                }
                continue;
            }
            if (c == '"') {
                quoted = true;
                any = true;
            } else if (c == ',') {
                push();
                any = true;
            } else if (c == '\n' || c == '\r') {
                if (c == '\r' && pos_ + 1 < text_.size() && text_[pos_ + 1] == '\n') ++pos_;
                if (any || !field.empty()) {
                    ++pos_;
                    push();
                    return true;
                }  // else a blank line: skipped
            } else {
                field += c;
                any = true;
            }
        }
        if (any || !field.empty()) {
            push();
            return true;
        }
        return false;
    }

private:
    std::string_view text_;
    size_t pos_ = 0;
};

}  // namespace

Expected<size_t> for_each_csv_row(std::string_view text, const CsvLimits& limits, const std::string& origin,
                                  const std::function<void(const CsvRow&)>& fn) {
    std::vector<std::string> rec;
    bool overflow = false;
    size_t records = 0;
    for (RecordReader count(text); count.next(rec, limits.max_columns, overflow); ++records) {
        if (overflow)
            return InputError{origin, fmt::format("more than {} fields in record {}", limits.max_columns, records + 1),
                              fmt::format("at most {} columns", limits.max_columns)};
        if (records > limits.max_rows)
            return InputError{origin, fmt::format("more than {} rows", limits.max_rows),
                              fmt::format("at most {} rows after the header", limits.max_rows)};
    }
    RecordReader reader(text);
    std::vector<std::string> header;
    if (!reader.next(header, limits.max_columns, overflow)) return size_t{0};
    size_t rows = 0;
    CsvRow row;
    while (reader.next(rec, limits.max_columns, overflow)) {
        row.clear();
        for (size_t c = 0; c < header.size(); ++c) row[header[c]] = c < rec.size() ? rec[c] : "";
        fn(row);
        ++rows;
    }
    return rows;
}

std::string csv_field(std::string_view s) {
    if (s.find_first_of(",\"\n\r") == std::string_view::npos) return std::string(s);
    std::string o = "\"";
    for (const char ch : s) o += ch == '"' ? std::string("\"\"") : std::string(1, ch);
    return o + "\"";
}

std::string csv_number(double x) { return fmt::format("{}", x); }

std::string csv_line(const std::vector<std::string>& fields) {
    std::string o;
    for (size_t i = 0; i < fields.size(); ++i) o += (i ? "," : "") + fields[i];
    return o + "\n";
}

}  // namespace sm
