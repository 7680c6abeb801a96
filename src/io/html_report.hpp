#pragma once
// `--format html`: one self-contained page to send to a colleague. It holds the command's text
// report as printed, and each chart as an inline SVG beside a table of the same numbers. Nothing
// is fetched when the page is opened: no scripts, no style sheets, no fonts, no images by URL.
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "io/json_reader.hpp"
#include "parallel/parallel_config.hpp"

namespace sm {

// Horizontal bars, one per (label, value), drawn to the largest value. `unit` is printed after
// each value; `scale` divides the values for printing (1 << 30 for GiB).
struct BarChart {
    std::string title;
    std::string unit;
    double scale = 1.0;
    std::vector<std::pair<std::string, double>> bars;
    bool shares = true;  // the parts of a whole (a breakdown), not alternatives: the table gives each one's share
};

// Geometry of svg_bar_chart, in pixels: the longest bar, one row, and the labels' column, wide
// enough for the longest label at kChartCharPx a character (at least kChartLabelMinPx).
inline constexpr double kChartBarPx = 360, kChartRowPx = 22, kChartCharPx = 8.5, kChartLabelMinPx = 120;

// <, >, &, " and ' as character references; control characters but tab and line feed dropped.
std::string html_escape(std::string_view text);
// The chart as an <svg> element: a bar of value / max x kChartBarPx per row (none for a value
// <= 0), its label on the left and its value on the right.
std::string svg_bar_chart(const BarChart& c);
// The chart's numbers as an HTML table: label, value, and (shares) the share of the sum.
std::string html_table(const BarChart& c);
// The page: `title`, the text report in <pre>, then each chart and its table.
std::string html_page(std::string_view title, std::string_view report_text, const std::vector<BarChart>& charts);

// The members of a JSON object whose names end in `suffix` and whose values are positive
// numbers, in key order, the suffix cut from each label ("tp_comm_exposed_s" ->
// "tp comm exposed"); members named in `skip` left out.
BarChart chart_of_members(const Json& obj, std::string_view suffix, std::string title, std::string unit, double scale,
                          const std::vector<std::string_view>& skip = {});

// A training step's charts from its JSON (train_json): where the step time goes, and the
// memory of the peak GPU by what holds it.
std::vector<BarChart> training_charts(const Json& train_doc);
// An inference run's charts from its JSON (infer_json): the prefill's time, all decode steps'
// time, and the memory per GPU.
std::vector<BarChart> inference_charts(const Json& infer_doc);

// A layout in a few words for a chart's label: "tp8 pp4 vp2 dp16 cp2 ring ZeRO-1 mb1 selective"
// (vp, cp and its kind, ep only when above 1; SUMMA as tp2x4; recompute unless none).
std::string layout_label(const ParallelConfig& p);

}  // namespace sm
