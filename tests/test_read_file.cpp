// The bounded reader (src/io/read_file) and the CSV reader and writer (src/io/csv): what every
// input and every CSV output goes through.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "io/csv.hpp"
#include "io/read_file.hpp"
#include "io/validation.hpp"

namespace sm {
namespace {

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

std::string temp_file(const std::string& name, const std::string& text) {
    const auto path = std::filesystem::temp_directory_path() / ("scalemodel-test-" + name);
    std::ofstream(path, std::ios::binary) << text;
    return path.string();
}

TEST(ReadFile, ReadsAWholeFileUpToTheCap) {
    const std::string path = temp_file("ten.txt", "0123456789");
    auto text = read_bounded({path, "SCENARIO", "a JSON file"}, 10);
    ASSERT_TRUE(text.ok()) << text.error().message();
    EXPECT_EQ(text.value(), "0123456789");
    auto over = read_bounded({path, "SCENARIO", "a JSON file"}, 9);  // one byte over: refused
    ASSERT_FALSE(over.ok());
    EXPECT_EQ(over.error().path, "SCENARIO");
    EXPECT_TRUE(contains(over.error().message(), "at most 9 bytes")) << over.error().message();
    std::filesystem::remove(path);
}

TEST(ReadFile, EndlessDevicesStopAtTheCap) {
    for (const char* dev : {"/dev/zero", "/dev/urandom"}) {
        if (!std::filesystem::exists(dev)) continue;
        auto text = read_bounded({dev, "--dataset", "a CSV file"}, 1000);
        ASSERT_FALSE(text.ok()) << dev;
        EXPECT_TRUE(contains(text.error().message(), "more than 1000 bytes")) << text.error().message();
    }
}

TEST(ReadFile, DirectoryAndMissingFileAreNamed) {
    auto dir = read_bounded({SCALEMODEL_SOURCE_DIR, "--dataset", "a CSV file"});
    ASSERT_FALSE(dir.ok());
    EXPECT_EQ(dir.error().path, "--dataset");
    EXPECT_TRUE(contains(dir.error().allowed, "is a directory; expected a CSV file")) << dir.error().message();
    auto missing = read_bounded({"/nonexistent/x.json", "SCENARIO", "a JSON file"});
    ASSERT_FALSE(missing.ok());
    EXPECT_TRUE(contains(missing.error().message(), "\"/nonexistent/x.json\"")) << missing.error().message();
    EXPECT_TRUE(contains(missing.error().message(), "cannot open")) << missing.error().message();
}

TEST(ReadFile, AMissingOptionalFileIsNotAnError) {
    auto none = read_if_present({"/nonexistent/x.context.json", "context", "a JSON file"});
    ASSERT_TRUE(none.ok());
    EXPECT_FALSE(none.value().has_value());
    auto dir = read_if_present({SCALEMODEL_SOURCE_DIR, "context", "a JSON file"});
    EXPECT_FALSE(dir.ok());  // there, but not a file: an error, not "absent"
}

TEST(ReadFile, LongPathsKeepTheirFileName) {
    std::string path = "/start";
    for (int i = 0; i < 40; ++i) path += "/directory" + std::to_string(i);
    path += "/the-file.json";
    const std::string shown = printable_path(path);
    EXPECT_LT(shown.size(), path.size());
    EXPECT_EQ(shown.substr(0, 6), "/start");
    EXPECT_EQ(shown.substr(shown.size() - 14), "/the-file.json");
    EXPECT_TRUE(contains(shown, "..."));
    EXPECT_EQ(printable_path("short/path.json"), "short/path.json");  // short paths whole
    EXPECT_EQ(printable_path("a\nb"), "a\\x0ab");                     // one line
}

TEST(ContextFile, SitsBesideTheDataSetUnderItsOwnName) {
    EXPECT_EQ(context_path_for("data/vt.csv"), "data/vt.context.json");
    EXPECT_EQ(context_path_for("./vt"), "./vt.context.json");  // a dot in a directory is not an extension
    EXPECT_EQ(context_path_for("a.b/set.tar.csv"), "a.b/set.tar.context.json");
}

TEST(CsvWriter, NumbersReadBackAsTheSameDouble) {
    for (const double x : {0.1, 1.0 / 3.0, 2.0 / 3.0 * 1e-9, 1.2345678901234567e20, 123456789.125, 5e-324, 1.7976931348623157e308}) {
        const std::string s = csv_number(x);
        EXPECT_EQ(std::strtod(s.c_str(), nullptr), x) << s;
    }
    EXPECT_EQ(csv_number(64.0), "64");
    EXPECT_EQ(csv_number(0.5), "0.5");
}

TEST(CsvWriter, QuotesWhatWouldSplitAField) {
    EXPECT_EQ(csv_field("plain"), "plain");
    EXPECT_EQ(csv_field("a,b"), "\"a,b\"");
    EXPECT_EQ(csv_field("say \"hi\""), "\"say \"\"hi\"\"\"");
    EXPECT_EQ(csv_field("two\nlines"), "\"two\nlines\"");
    EXPECT_EQ(csv_line({"a", "b", ""}), "a,b,\n");
}

TEST(CsvReader, ReadsWhatTheWriterWrites) {
    const std::string text = csv_line({"name", "value"}) + csv_line({csv_field("x, \"y\"\nz"), csv_number(0.1)}) + "\n\n" +
                             csv_line({"short"});
    std::vector<CsvRow> rows;
    auto n = for_each_csv_row(text, CsvLimits{}, "t", [&](const CsvRow& r) { rows.push_back(r); });
    ASSERT_TRUE(n.ok());
    EXPECT_EQ(n.value(), 2u);  // the blank lines are skipped
    ASSERT_EQ(rows.size(), 2u);
    EXPECT_EQ(rows[0].at("name"), "x, \"y\"\nz");
    EXPECT_EQ(rows[0].at("value"), "0.1");
    EXPECT_EQ(rows[1].at("value"), "");  // a short row: missing cells are empty
}

TEST(CsvReader, LimitsAreCheckedBeforeAnyRowIsHandedOn) {
    std::string text = "a\n";
    for (int i = 0; i < 4; ++i) text += "1\n";
    int seen = 0;
    auto rows = for_each_csv_row(text, CsvLimits{3, 10}, "data.csv", [&](const CsvRow&) { ++seen; });
    ASSERT_FALSE(rows.ok());
    EXPECT_EQ(seen, 0);
    EXPECT_EQ(rows.error().path, "data.csv");
    EXPECT_TRUE(contains(rows.error().message(), "at most 3 rows")) << rows.error().message();
    EXPECT_TRUE(for_each_csv_row(text, CsvLimits{4, 10}, "data.csv", [](const CsvRow&) {}).ok());
    auto wide = for_each_csv_row("a,b,c,d\n", CsvLimits{3, 3}, "data.csv", [](const CsvRow&) {});
    ASSERT_FALSE(wide.ok());
    EXPECT_TRUE(contains(wide.error().message(), "at most 3 columns")) << wide.error().message();
}

TEST(Validation, ADataSetNamesItsContextFileByTheNameGiven) {
    auto bad = parse_context("vt.csv", "{\"reason\": 1}", "data-set context file \"vt.context.json\" beside the data set");
    ASSERT_FALSE(bad.ok());
    EXPECT_TRUE(contains(bad.error().message(), "\"vt.context.json\" beside the data set reason")) << bad.error().message();
    EXPECT_FALSE(contains(bad.error().message(), "vt.csv.context.json"));
}

}  // namespace
}  // namespace sm
