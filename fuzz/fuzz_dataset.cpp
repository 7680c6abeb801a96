// libFuzzer harness for `validate --dataset`: bytes → CSV rows (and a data-set context file) →
// scenarios → predictions. The input is the data set's CSV text; anything after a NUL byte is
// the text of its context file (NAME.context.json), so both files a user hands `validate` are
// fuzzed together.
//
// What counts as a bug (abort, so libFuzzer records a crash):
//   - any crash, sanitizer report, or exception other than the InputError values returned;
//   - an error or a skipped row's line that is empty or spans more than one line (control
//     characters of the input, in the row's id too, must come out escaped);
//   - rows lost: every data row is either evaluated or listed as skipped;
//   - an evaluated row with a non-finite or non-positive prediction, or an error that is not
//     (predicted - measured) / measured.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <string_view>

#include "io/validation.hpp"

namespace {

[[noreturn]] void die(const std::string& what) {
    std::fprintf(stderr, "fuzz_dataset: invariant broken: %s\n", what.c_str());
    std::abort();
}

void check_line(const std::string& m, const char* what) {
    if (m.empty()) die(std::string("empty ") + what);
    if (m.find_first_of("\n\r") != std::string::npos) die(std::string("multi-line ") + what + ": " + m);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const std::string_view all(reinterpret_cast<const char*>(data), size);
    const size_t nul = all.find('\0');
    const std::string_view csv = all.substr(0, nul);
    std::optional<std::string_view> context;
    if (nul != std::string_view::npos) context = all.substr(nul + 1);

    auto rep = sm::run_validation("fuzz.csv", csv, context, {}, "data-set context file \"fuzz.context.json\"");
    if (!rep) {
        check_line(rep.error().message(), "error");
        return 0;
    }
    if (rep->cases.size() + rep->skipped.size() != rep->rows) die("rows neither evaluated nor skipped");
    for (const std::string& s : rep->skipped) check_line(s, "skipped row");
    for (const sm::ValidationCase& c : rep->cases) {
        if (!std::isfinite(c.predicted) || !(c.predicted > 0)) die("prediction not finite and positive: " + c.id);
        if (!(c.measured > 0) || !std::isfinite(c.measured)) die("evaluated a row without a positive measurement");
        const double err = (c.predicted - c.measured) / c.measured;
        if (!(std::abs(c.error - err) <= 1e-12 * std::max(1.0, std::abs(err)))) die("error is not (predicted - measured) / measured");
    }
    const sm::ValidationSummary s = sm::summarize(rep->cases);
    if (!std::isfinite(s.mean_abs_error) || !std::isfinite(s.max_abs_error) || s.mean_abs_error > s.max_abs_error + 1e-12)
        die("summary not finite or mean above max");
    return 0;
}
