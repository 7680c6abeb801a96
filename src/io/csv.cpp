#include "io/csv.hpp"

namespace sm {

namespace {

std::vector<std::vector<std::string>> records(std::string_view text) {
    std::vector<std::vector<std::string>> out;
    std::vector<std::string> rec;
    std::string field;
    bool quoted = false, any = false;
    for (size_t i = 0; i < text.size(); ++i) {
        const char c = text[i];
        if (quoted) {
            if (c == '"' && i + 1 < text.size() && text[i + 1] == '"') {
                field += '"';
                ++i;
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
            rec.push_back(std::move(field));
            field.clear();
            any = true;
        } else if (c == '\n' || c == '\r') {
            if (c == '\r' && i + 1 < text.size() && text[i + 1] == '\n') ++i;
            if (any || !field.empty()) {
                rec.push_back(std::move(field));
                out.push_back(std::move(rec));
            }
            rec.clear();
            field.clear();
            any = false;
        } else {
            field += c;
            any = true;
        }
    }
    if (any || !field.empty()) {
        rec.push_back(std::move(field));
        out.push_back(std::move(rec));
    }
    return out;
}

}  // namespace

std::vector<CsvRow> parse_csv(std::string_view text) {
    auto recs = records(text);
    std::vector<CsvRow> rows;
    if (recs.empty()) return rows;
    const auto& header = recs.front();
    for (size_t r = 1; r < recs.size(); ++r) {
        CsvRow row;
        for (size_t c = 0; c < header.size(); ++c) row[header[c]] = c < recs[r].size() ? recs[r][c] : "";
        rows.push_back(std::move(row));
    }
    return rows;
}

}  // namespace sm
