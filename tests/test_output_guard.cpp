// The output boundary: no NaN or infinity leaves the program. emit_json / emit_checked turn one
// into an internal error (exit 1, a message on stderr, nothing on stdout).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <sstream>
#include <string>

// The CLI's plumbing is not part of scalemodel_core; compile it into this test directly.
#include "cli/common.cpp"  // NOLINT(bugprone-suspicious-include)

namespace sm::cli {
namespace {

const double kNan = std::numeric_limits<double>::quiet_NaN();
const double kInf = std::numeric_limits<double>::infinity();

// A command's streams as strings.
struct Captured {
    std::ostringstream out, err;
    Io io{out, err, false, std::nullopt};
};

TEST(OutputGuard, FindsTheFirstNonFiniteNumberByPath) {
    EXPECT_EQ(find_non_finite(Json{{"a", 1.0}, {"b", {{"c", 2}}}}), "");
    EXPECT_EQ(find_non_finite(Json{{"a", 1.0}, {"b", {{"c", kNan}}}}), "b.c");
    EXPECT_EQ(find_non_finite(Json{{"step_time_s", kInf}}), "step_time_s");
    EXPECT_EQ(find_non_finite(Json{{"step_time_s", -kInf}}), "step_time_s");
    EXPECT_FALSE(find_non_finite(Json{{"results", Json::array({Json{{"x", 1.0}}, Json{{"x", kNan}}})}}).empty());
    EXPECT_EQ(find_non_finite(Json{{"name", "nan"}, {"ok", true}, {"n", nullptr}}), "");
}

TEST(OutputGuard, EmitJsonRefusesNonFinite) {
    Captured c;
    const int rc = emit_json(c.io, Json{{"breakdown", {{"compute_s", kNan}}}});
    const std::string out = c.out.str();
    const std::string err = c.err.str();
    EXPECT_EQ(rc, kExitInternal);
    EXPECT_EQ(out, "");
    EXPECT_NE(err.find("internal error: breakdown.compute_s is not a finite number"), std::string::npos) << err;
    EXPECT_EQ(err.find('\n'), err.size() - 1) << err;
}

TEST(OutputGuard, EmitCheckedRefusesNonFiniteText) {
    Captured c;
    const int rc = emit_checked(c.io, Json{{"tokens_per_s", kInf}}, "tokens/s: inf\n");
    const std::string out = c.out.str();
    const std::string err = c.err.str();
    EXPECT_EQ(rc, kExitInternal);
    EXPECT_EQ(out, "");
    EXPECT_NE(err.find("tokens_per_s"), std::string::npos) << err;
}

TEST(OutputGuard, FiniteOutputPassesThrough) {
    Captured a, b;
    EXPECT_EQ(emit_json(a.io, Json{{"step_time_s", 1.5}}), kExitOk);
    EXPECT_NE(a.out.str().find("\"step_time_s\": 1.5"), std::string::npos);
    EXPECT_EQ(emit_checked(b.io, Json{{"x", 1.0}}, "hello\n"), kExitOk);
    EXPECT_EQ(b.out.str(), "hello\n");
    EXPECT_EQ(a.err.str() + b.err.str(), "");
}

TEST(OutputGuard, BadInputIsOneLineOnStderr) {
    Captured c;
    EXPECT_EQ(bad_input(c.io, {"parallel.tp", "0", "expected an integer from 1 to 1048576"}), kExitBadInput);
    EXPECT_EQ(c.out.str(), "");
    EXPECT_EQ(c.err.str(),
              "scalemodel: error: parallel.tp: got 0; expected an integer from 1 to 1048576\n");
}

}  // namespace
}  // namespace sm::cli
