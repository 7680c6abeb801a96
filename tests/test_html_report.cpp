// `--format html` (io/html_report.hpp): escaping, the bars' geometry and the tables, by hand.
#include <gtest/gtest.h>

#include <string>

#include "io/html_report.hpp"

namespace sm {
namespace {

size_t count_of(const std::string& text, const std::string& what) {
    size_t n = 0;
    for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
    return n;
}

TEST(HtmlReport, EscapesMarkupAndDropsControlCharacters) {
    EXPECT_EQ(html_escape("a<b>&\"c'\n\td\x01"), "a&lt;b&gt;&amp;&quot;c&#39;\n\td");
}

TEST(HtmlReport, BarsAreDrawnToTheLargestValue) {
    // Labels of 2 characters: the column is its floor, 120 px. Values 4, 1 and 0: bars of 360 px
    // and 90 px, none for the zero.
    const BarChart c{"t", "s", 1.0, {{"ab", 4.0}, {"cd", 1.0}, {"ef", 0.0}}};
    const std::string svg = svg_bar_chart(c);
    EXPECT_EQ(count_of(svg, "<rect"), 2u);
    EXPECT_NE(svg.find("<rect x=\"120\" y=\"14\" width=\"360\""), std::string::npos) << svg;
    EXPECT_NE(svg.find("<rect x=\"120\" y=\"36\" width=\"90\""), std::string::npos) << svg;
    // Each value printed after its bar: 120 + 360 + 6 and 120 + 90 + 6.
    EXPECT_NE(svg.find("<text x=\"486\" y=\"26\">4 s</text>"), std::string::npos) << svg;
    EXPECT_NE(svg.find("<text x=\"216\" y=\"48\">1 s</text>"), std::string::npos) << svg;
    // Width 120 + 360 + 110, height 22 x (3 + 1.5).
    EXPECT_NE(svg.find("width=\"590\" height=\"99\""), std::string::npos) << svg;
}

TEST(HtmlReport, LongLabelsWidenTheirColumn) {
    // 20 characters at 8.5 px plus 12: a 182 px column.
    const BarChart c{"t", "s", 1.0, {{std::string(20, 'x'), 1.0}}};
    EXPECT_NE(svg_bar_chart(c).find("<rect x=\"182\""), std::string::npos);
}

TEST(HtmlReport, TableGivesScaledValuesAndShares) {
    const double gib = 1024.0 * 1024.0 * 1024.0;
    const BarChart parts{"m", "GiB", gib, {{"weights", 3 * gib}, {"activations", 1 * gib}}};
    const std::string t = html_table(parts);
    EXPECT_NE(t.find("<tr><td>weights</td><td>3</td><td>75.0%</td></tr>"), std::string::npos) << t;
    EXPECT_NE(t.find("<tr><td>activations</td><td>1</td><td>25.0%</td></tr>"), std::string::npos) << t;
    BarChart alternatives = parts;
    alternatives.shares = false;
    EXPECT_EQ(html_table(alternatives).find("share"), std::string::npos);
}

TEST(HtmlReport, MembersByTheirSuffixPositiveOnly) {
    const Json j = {{"compute_s", 2.0}, {"tp_comm_exposed_s", 0.5}, {"dp_comm_exposed_s", 0.0}, {"time_s", 9.0}, {"flop", 1e12},
                    {"name_s", "x"}};
    const BarChart c = chart_of_members(j, "_s", "t", "s", 1.0, {"time_s"});
    ASSERT_EQ(c.bars.size(), 2u);  // key order: compute, tp comm exposed
    EXPECT_EQ(c.bars[0].first, "compute");
    EXPECT_EQ(c.bars[0].second, 2.0);
    EXPECT_EQ(c.bars[1].first, "tp comm exposed");
    EXPECT_EQ(c.bars[1].second, 0.5);
}

TEST(HtmlReport, PageIsSelfContained) {
    const std::string page = html_page("a <title>", "report & text", {BarChart{"chart", "s", 1.0, {{"x", 1.0}}}, BarChart{"empty", "s", 1.0, {}}});
    EXPECT_EQ(page.rfind("<!DOCTYPE html>", 0), 0u);
    EXPECT_NE(page.find("<title>a &lt;title&gt;</title>"), std::string::npos);
    EXPECT_NE(page.find("<pre>report &amp; text</pre>"), std::string::npos);
    EXPECT_EQ(count_of(page, "<svg"), 1u);  // a chart without bars is left out
    EXPECT_EQ(count_of(page, "<table>"), 1u);
    for (const char* fetched : {"<script", "<link", "src=", "@import", "url("}) EXPECT_EQ(page.find(fetched), std::string::npos) << fetched;
}

TEST(HtmlReport, LayoutLabelNamesWhatIsSet) {
    ParallelConfig p;
    p.tp = 8;
    p.pp = 4;
    p.dp = 16;
    EXPECT_EQ(layout_label(p), "tp8 pp4 dp16 ZeRO-0 mb1");
    p.tp_rows = 2;
    p.vp = 3;
    p.cp = 2;
    p.cp_kind = CpKind::ulysses;
    p.ep = 4;
    p.zero = 1;
    p.microbatch = 2;
    p.recompute = Recompute::full;
    EXPECT_EQ(layout_label(p), "tp2x4 pp4 vp3 dp16 cp2 ulysses ep4 ZeRO-1 mb2 full");
}

}  // namespace
}  // namespace sm
