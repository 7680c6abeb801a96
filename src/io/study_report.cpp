#include "io/study_report.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "io/csv.hpp"
#include "io/report.hpp"

namespace sm {

namespace {

std::string value_text(const Json& v) {
    if (v.is_number_float()) return fmt::format("{:.6g}", v.get<double>());
    if (v.is_string()) return v.get<std::string>();
    return v.dump();
}

std::string value_csv(const Json& v) {
    if (v.is_number_float()) return csv_number(v.get<double>());
    if (v.is_string()) return csv_field(v.get<std::string>());
    return v.dump();
}

std::string layout_text(const Json& p) {
    // SUMMA shows its grid: tp16=4x4 is 4 rows by 4 columns.
    const int64_t tp = p["tp"].get<int64_t>(), rows = p.value("tp_rows", int64_t{1});
    const std::string grid = rows > 1 ? fmt::format("={}x{}", rows, tp / rows) : "";
    return fmt::format("tp{}{} pp{} dp{} cp{} ep{} vp{}{} mb{} z{} {}", tp, grid, p["pp"].get<int64_t>(),
                       p["dp"].get<int64_t>(), p["cp"].get<int64_t>(), p["ep"].get<int64_t>(), p["vp"].get<int64_t>(),
                       p["sequence_parallel"].get<bool>() ? " sp" : "", p["microbatch"].get<int64_t>(), p["zero"].get<int64_t>(),
                       p["recompute"].get<std::string>());
}

std::string header_text(const StudyHeader& h, const std::string& what) {
    return fmt::format("{}: {} (mode {}, objective {})\n{}", what, h.title, to_string(h.options.mode), h.options.objective.key,
                       h.provenance);
}

Json study_json_base(const StudyHeader& h) {
    return Json{{"mode", to_string(h.options.mode)}, {"objective", h.options.objective.key}};
}

size_t count_status(const std::vector<PointOutcome>& v, PointStatus s) {
    return static_cast<size_t>(std::count_if(v.begin(), v.end(), [s](const PointOutcome& p) { return p.status == s; }));
}

}  // namespace

std::string objective_text(const std::string& key, double v) {
    if (is_duration_key(key)) return seconds(v);
    return fmt::format("{:.4g}", v);
}

Json sweep_table_json(const SweepTable& t, const StudyHeader& h) {
    Json doc = study_json_base(h);
    doc["varied"] = t.varied;
    Json points = Json::array();
    for (size_t i = 0; i < t.points.size(); ++i) {
        const PointOutcome& o = t.outcomes[i];
        Json p = Json::object();
        Json inputs = Json::object();
        for (const auto& [path, v] : t.points[i]) inputs[path] = v;
        p["inputs"] = inputs;
        p["status"] = to_string(o.status);
        if (o.status == PointStatus::ok)
            for (const auto& [k, v] : o.result.items()) p[k] = v;
        else if (!o.message.empty())
            p["message"] = o.message;
        points.push_back(std::move(p));
    }
    doc["count"] = t.points.size();
    doc["completed"] = t.points.size() - count_status(t.outcomes, PointStatus::skipped);
    doc["points"] = std::move(points);
    return doc;
}

std::string sweep_table_csv(const SweepTable& t) {
    std::vector<std::string> head = t.varied;
    head.emplace_back("status");
    head.emplace_back("message");
    std::string o = csv_line(head);
    const std::string result_head = csv_header(t.columns);  // "a,b,...\n"
    o.pop_back();
    o += "," + result_head;
    const size_t n_result = static_cast<size_t>(std::count(result_head.begin(), result_head.end(), ',')) + 1;
    for (size_t i = 0; i < t.points.size(); ++i) {
        const PointOutcome& p = t.outcomes[i];
        std::vector<std::string> row;
        for (const auto& [path, v] : t.points[i]) row.push_back(value_csv(v));
        row.emplace_back(to_string(p.status));
        row.push_back(csv_field(p.message));
        std::string line = csv_line(row);
        line.pop_back();
        // A point without a result still has its row, its result columns empty.
        line += "," + (p.status == PointStatus::ok ? csv_row(p.result) : std::string(n_result - 1, ',') + "\n");
        o += line;
    }
    return o;
}

std::string sweep_table_text(const SweepTable& t, const StudyHeader& h) {
    std::string o = header_text(h, "Sweep");
    o += fmt::format("{} points, {} evaluated, {} without a result\n\n", t.points.size(),
                     t.points.size() - count_status(t.outcomes, PointStatus::skipped),
                     count_status(t.outcomes, PointStatus::error) + count_status(t.outcomes, PointStatus::no_fit));
    std::vector<size_t> width;
    for (const std::string& v : t.varied) {
        size_t w = v.size();
        for (const Edits& e : t.points) w = std::max(w, value_text(e[width.size()].second).size());
        width.push_back(w);
    }
    const bool search = h.options.mode == StudyMode::search;
    for (size_t c = 0; c < t.varied.size(); ++c) o += fmt::format("{:>{}}  ", t.varied[c], width[c]);
    o += fmt::format("{:>14} {:>12} {:>5}{}\n", h.options.objective.key, "memory/GPU", "fits", search ? "  best layout" : "");
    for (size_t i = 0; i < t.points.size(); ++i) {
        for (size_t c = 0; c < t.varied.size(); ++c) o += fmt::format("{:>{}}  ", value_text(t.points[i][c].second), width[c]);
        const PointOutcome& p = t.outcomes[i];
        if (p.status != PointStatus::ok) {
            o += fmt::format("{:>14} {}\n", to_string(p.status), p.message);
            continue;
        }
        const Json& mem = p.result["memory"];
        o += fmt::format("{:>14} {:>12} {:>5}{}\n", objective_text(h.options.objective.key, p.value),
                         gib(mem["peak_bytes_per_gpu"].get<double>()), p.result["fits_in_memory"].get<bool>() ? "yes" : "NO",
                         search ? "  " + layout_text(p.result["parallel"]) : "");
    }
    return o;
}

Json attribution_json(const Attribution& a, const StudyHeader& h) {
    Json doc = study_json_base(h);
    doc["from_value"] = a.from_value;
    doc["to_value"] = a.to_value;
    doc["ratio"] = a.ratio;
    doc["subsets"] = a.subsets;
    if (a.orders > 0) doc["orders"] = a.orders;
    Json fs = Json::array();
    for (const Factor& f : a.factors) {
        Json j{{"name", f.name}, {"speedup", f.speedup}, {"share", f.share}, {"alone", f.alone}, {"fields", f.fields}};
        if (a.orders > 0) {
            j["speedup_low"] = f.speedup_low;
            j["speedup_high"] = f.speedup_high;
        }
        fs.push_back(std::move(j));
    }
    doc["factors"] = std::move(fs);
    return doc;
}

std::string attribution_csv(const Attribution& a) {
    const bool sampled = a.orders > 0;
    std::vector<std::string> head{"name", "speedup", "share", "alone", "fields"};
    if (sampled) head.insert(head.begin() + 2, {"speedup_low", "speedup_high"});
    std::string o = csv_line(head);
    for (const Factor& f : a.factors) {
        std::string fields;
        for (const std::string& p : f.fields) fields += (fields.empty() ? "" : " ") + p;
        std::vector<std::string> row{csv_field(f.name), csv_number(f.speedup), csv_number(f.share), csv_number(f.alone), csv_field(fields)};
        if (sampled) row.insert(row.begin() + 2, {csv_number(f.speedup_low), csv_number(f.speedup_high)});
        o += csv_line(row);
    }
    return o;
}

std::string attribution_text(const Attribution& a, const StudyHeader& h, const std::string& to_title) {
    std::string o = header_text(h, "Attribution");
    o += fmt::format("to: {}\n", to_title);
    const std::string how = a.orders > 0 ? fmt::format("{} random orders of the groups, {} subsets evaluated; Shapley values in log space "
                                                       "estimated by permutation sampling, 95% intervals", a.orders, a.subsets)
                                          : fmt::format("{} subsets evaluated; Shapley values in log space", a.subsets);
    o += fmt::format("{} {} -> {}: {:.4g}x better over {} factor groups ({})\n\n", h.options.objective.key,
                     objective_text(a.objective.key, a.from_value), objective_text(a.objective.key, a.to_value), a.ratio,
                     a.factors.size(), how);
    size_t w = 6;
    for (const Factor& f : a.factors) w = std::max(w, std::min<size_t>(f.name.size(), 60));
    o += fmt::format("  {:<{}}  {:>9}  {:>7}  {:>10}  {:>9}{}\n", "factor", w, "speedup", "share", "cumulative", "alone",
                     a.orders > 0 ? "  95% interval" : "");
    double cum = 1;
    for (const Factor& f : a.factors) {
        cum *= f.speedup;
        const std::string name = f.name.size() > 60 ? f.name.substr(0, 57) + "..." : f.name;
        o += fmt::format("  {:<{}}  {:>8.4g}x  {:>6.1f}%  {:>9.4g}x  {:>8.4g}x", name, w, f.speedup, 100 * f.share, cum, f.alone);
        if (a.orders > 0) o += fmt::format("  [{:.4g}x, {:.4g}x]", f.speedup_low, f.speedup_high);
        o += "\n";
    }
    o += fmt::format("  {:<{}}  {:>8.4g}x  {:>6.1f}%\n", "total", w, a.ratio, a.factors.empty() ? 0.0 : 100.0);
    o += "\nfields in each group:\n";
    for (const Factor& f : a.factors) {
        std::string fields;
        for (const std::string& p : f.fields) fields += (fields.empty() ? "" : ", ") + p;
        o += fmt::format("  {}: {}\n", f.name.rfind("other:", 0) == 0 ? "other" : f.name, fields);
    }
    return o;
}

Json sensitivity_json(const SensitivityReport& r, const StudyHeader& h) {
    Json doc = study_json_base(h);
    doc["value"] = r.value;
    doc["step"] = kSensitivityStep;
    Json fs = Json::array();
    for (const Elasticity& e : r.fields)
        fs.push_back(Json{{"path", e.path}, {"value", e.value}, {"elasticity", e.elasticity}, {"method", e.method}});
    doc["fields"] = std::move(fs);
    return doc;
}

std::string sensitivity_csv(const SensitivityReport& r) {
    std::string o = csv_line({"path", "value", "elasticity", "method"});
    for (const Elasticity& e : r.fields)
        o += csv_line({csv_field(e.path), value_csv(e.value), csv_number(e.elasticity), csv_field(e.method)});
    return o;
}

std::string sensitivity_text(const SensitivityReport& r, const StudyHeader& h) {
    std::string o = header_text(h, "Sensitivity");
    o += fmt::format("{} = {}; elasticity d ln({}) / d ln(x): -1 means 1% more x gives 1% less {}\n", h.options.objective.key,
                     objective_text(h.options.objective.key, r.value), h.options.objective.key, h.options.objective.key);
    o += fmt::format("(central differences at x(1 +/- {:g}); integer fields at x/2 and 2x)\n\n", kSensitivityStep);
    size_t w = 5;
    for (const Elasticity& e : r.fields) w = std::max(w, e.path.size());
    o += fmt::format("  {:>4}  {:<{}}  {:>12}  {:>10}  {}\n", "rank", "field", w, "value", "elasticity", "method");
    for (size_t i = 0; i < r.fields.size(); ++i) {
        const Elasticity& e = r.fields[i];
        o += fmt::format("  {:>4}  {:<{}}  {:>12}  {:>+10.4f}  {}\n", i + 1, e.path, w, value_text(e.value), e.elasticity, e.method);
    }
    return o;
}

}  // namespace sm
