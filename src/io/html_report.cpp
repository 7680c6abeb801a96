#include "io/html_report.hpp"

#include <algorithm>

#include <fmt/format.h>

namespace sm {

std::string html_escape(std::string_view text) {
    std::string o;
    o.reserve(text.size());
    for (const char ch : text) {
        switch (ch) {
            case '<': o += "&lt;"; break;
            case '>': o += "&gt;"; break;
            case '&': o += "&amp;"; break;
            case '"': o += "&quot;"; break;
            case '\'': o += "&#39;"; break;
            default:
                if (static_cast<unsigned char>(ch) >= 0x20 || ch == '\n' || ch == '\t') o += ch;
        }
    }
    return o;
}

namespace {

std::string shown(const BarChart& c, double v) { return fmt::format("{:.4g} {}", v / c.scale, c.unit); }

}  // namespace

std::string svg_bar_chart(const BarChart& c) {
    double top = 0;
    size_t longest = 0;
    for (const auto& b : c.bars) {
        top = std::max(top, b.second);
        longest = std::max(longest, b.first.size());
    }
    const double label_px = std::max(kChartLabelMinPx, kChartCharPx * static_cast<double>(longest) + 12);
    const double height = kChartRowPx * (static_cast<double>(c.bars.size()) + 1.5);
    const double width = label_px + kChartBarPx + 110;
    std::string o = fmt::format(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{0}\" height=\"{1}\" viewBox=\"0 0 {0} {1}\" role=\"img\" "
        "font-family=\"sans-serif\" font-size=\"13\">\n<title>{2}</title>\n",
        width, height, html_escape(c.title));
    double y = kChartRowPx * 0.5;
    for (const auto& [label, value] : c.bars) {
        const double w = top > 0 && value > 0 ? value / top * kChartBarPx : 0.0;
        o += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"end\">{}</text>\n", label_px - 8, y + 15, html_escape(label));
        if (w > 0) o += fmt::format("<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"#4878a8\"/>\n", label_px, y + 3, w, kChartRowPx - 6);
        o += fmt::format("<text x=\"{}\" y=\"{}\">{}</text>\n", label_px + w + 6, y + 15, html_escape(shown(c, value)));
        y += kChartRowPx;
    }
    return o + "</svg>\n";
}

std::string html_table(const BarChart& c) {
    double sum = 0;
    for (const auto& b : c.bars) sum += b.second;
    std::string o = "<table>\n<tr><th></th><th>" + html_escape(c.unit) + "</th>" + (c.shares ? "<th>share</th>" : "") + "</tr>\n";
    for (const auto& [label, value] : c.bars) {
        o += fmt::format("<tr><td>{}</td><td>{:.4g}</td>", html_escape(label), value / c.scale);
        if (c.shares) o += fmt::format("<td>{:.1f}%</td>", sum > 0 ? 100.0 * value / sum : 0.0);
        o += "</tr>\n";
    }
    return o + "</table>\n";
}

std::string html_page(std::string_view title, std::string_view report_text, const std::vector<BarChart>& charts) {
    std::string o = fmt::format(
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
        "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<title>{}</title>\n"
        "<style>body{{font-family:sans-serif;margin:1.5em;max-width:60em}}pre{{font-size:12px;overflow-x:auto;"
        "background:#f6f6f6;padding:0.8em}}svg{{max-width:100%;height:auto}}table{{border-collapse:collapse;margin:0.5em 0 1.5em}}"
        "td,th{{border:1px solid #ccc;padding:2px 8px;text-align:right}}td:first-child{{text-align:left}}</style>\n"
        "</head>\n<body>\n<h1>{}</h1>\n<pre>{}</pre>\n",
        html_escape(title), html_escape(title), html_escape(report_text));
    for (const BarChart& c : charts) {
        if (c.bars.empty()) continue;
        o += "<h2>" + html_escape(c.title) + "</h2>\n" + svg_bar_chart(c) + html_table(c);
    }
    return o + "</body>\n</html>\n";
}

BarChart chart_of_members(const Json& obj, std::string_view suffix, std::string title, std::string unit, double scale,
                          const std::vector<std::string_view>& skip) {
    BarChart c{std::move(title), std::move(unit), scale, {}};
    if (!obj.is_object()) return c;
    for (const auto& [key, value] : obj.items()) {
        if (!key.ends_with(suffix) || !value.is_number() || std::find(skip.begin(), skip.end(), key) != skip.end()) continue;
        const double v = value.get<double>();
        if (!(v > 0)) continue;
        std::string label = key.substr(0, key.size() - suffix.size());
        std::replace(label.begin(), label.end(), '_', ' ');
        c.bars.emplace_back(std::move(label), v);
    }
    return c;
}

namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

BarChart memory_chart(const Json& doc) {
    return chart_of_members(doc.value("memory", Json::object()), "_bytes", "Memory per GPU (the GPU with the highest peak)", "GiB",
                            kGiB, {"peak_bytes_per_gpu", "capacity_bytes"});
}

}  // namespace

std::vector<BarChart> training_charts(const Json& train_doc) {
    return {chart_of_members(train_doc.value("breakdown", Json::object()), "_s", "Where the step time goes", "s", 1.0),
            memory_chart(train_doc)};
}

std::vector<BarChart> inference_charts(const Json& infer_doc) {
    const Json decode = infer_doc.value("decode", Json::object());
    return {chart_of_members(infer_doc.value("prefill", Json::object()), "_s", "Prefill (time to first token)", "s", 1.0, {"time_s"}),
            chart_of_members(decode.value("total", Json::object()), "_s", "Decode, all steps", "s", 1.0, {"time_s"}),
            memory_chart(infer_doc)};
}

std::string layout_label(const ParallelConfig& p) {
    std::string o = p.summa() ? fmt::format("tp{}x{}", p.tp_rows, p.tp_cols()) : fmt::format("tp{}", p.tp);
    o += fmt::format(" pp{}", p.pp);
    if (p.vp > 1) o += fmt::format(" vp{}", p.vp);
    o += fmt::format(" dp{}", p.dp);
    if (p.cp > 1) o += fmt::format(" cp{} {}", p.cp, to_string(p.cp_kind));
    if (p.ep > 1) o += fmt::format(" ep{}", p.ep);
    o += fmt::format(" ZeRO-{} mb{}", p.zero, p.microbatch);
    if (p.recompute != Recompute::none) o += fmt::format(" {}", to_string(p.recompute));
    return o;
}

}  // namespace sm
