// libFuzzer harness: bytes → parse → `--set` overrides → validate → evaluate, for train and
// infer and search (each when its header is present). The input is a scenario's text; anything after
// a NUL byte is a list of NUL-separated `--set PATH=VALUE` overrides, so the fuzzer exercises
// both ways a user can reach a field.
//
// What counts as a bug (abort, so libFuzzer records a crash):
//   - any crash, sanitizer report, or exception other than the InputError values the I/O layer
//     returns;
//   - an error message that is empty or spans more than one line;
//   - a valid scenario whose result holds a NaN or infinity, a non-positive step time, or a
//     breakdown that does not add up to the step time.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "io/report.hpp"
#include "io/scenario.hpp"
#include "training/step.hpp"

#if __has_include("inference/inference.hpp") && __has_include("io/infer_report.hpp")
#include "inference/inference.hpp"
#include "io/infer_report.hpp"
#define SM_FUZZ_INFER 1
#endif
#if __has_include("search/search.hpp")
#include "search/search.hpp"
#define SM_FUZZ_SEARCH 1
#endif

namespace {

[[noreturn]] void die(const std::string& what) {
    std::fprintf(stderr, "fuzz_scenario: invariant broken: %s\n", what.c_str());
    std::abort();
}

void check_error(const sm::InputError& e) {
    const std::string m = e.message();
    if (m.empty()) die("empty error message");
    // Raw line breaks would split the one-line contract; printable() escapes them.
    if (m.find_first_of("\n\r") != std::string::npos) die("multi-line error: " + m);
    if (m.size() > 2000) die("error message longer than 2000 characters");
}

void check_finite(const sm::Json& j, const char* what) {
    const std::string bad = sm::find_non_finite(j);
    if (!bad.empty()) die(std::string(what) + ": non-finite " + bad);
}

void check_training(const sm::Scenario& s) {
    const sm::TrainResult r = sm::evaluate_training({s.model, s.system, s.training}, s.parallel);
    check_finite(sm::train_json(s, r), "train");
    if (!(r.step_time_s > 0)) die("step_time_s <= 0");
    const double sum = r.breakdown.sum();
    if (std::abs(sum - r.step_time_s) > 1e-9 * r.step_time_s) die("breakdown does not add up to step_time_s");
    if (!(r.memory.peak_bytes_per_gpu > 0)) die("peak memory <= 0");
}

#ifdef SM_FUZZ_INFER
void check_inference(const sm::Scenario& s) {
    const sm::InferResult r = sm::evaluate_inference({s.model, s.system, s.inference}, s.parallel);
    check_finite(sm::infer_json(s, r), "infer");
    if (!(r.ttft_s > 0) || !(r.e2e_latency_s >= r.ttft_s)) die("inference latencies out of order");
}
#endif

#ifdef SM_FUZZ_SEARCH
// A small search (8 GPUs, one thread) so that one input stays in milliseconds.
void check_search(const sm::Scenario& s) {
    sm::SearchOptions o;
    o.gpus = 8;
    o.top_k = 3;
    o.threads = 1;
    const sm::SearchResult r = sm::search_layouts({s.model, s.system, s.training},
                                                  sm::constraints_from(s.parallel, s.parallel_given), o);
    if (r.best.size() > o.top_k) die("search returned more than top_k results");
    for (size_t i = 0; i < r.best.size(); ++i) {
        if (!std::isfinite(r.best[i].score)) die("search: non-finite score");
        check_finite(sm::train_json(s, r.best[i].result), "search");
        if (i > 0 && sm::hit_before(r.best[i], r.best[i - 1])) die("search results out of order");
    }
}
#endif

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const std::string_view all(reinterpret_cast<const char*>(data), size);
    const size_t nul = all.find('\0');
    const std::string_view text = all.substr(0, nul);
    std::vector<std::string> sets;
    if (nul != std::string_view::npos) {
        std::string_view rest = all.substr(nul + 1);
        while (!rest.empty() && sets.size() < 16) {
            const size_t next = rest.find('\0');
            sets.emplace_back(rest.substr(0, next));
            rest = next == std::string_view::npos ? std::string_view() : rest.substr(next + 1);
        }
    }

#ifdef SM_FUZZ_SEARCH
    // `--gpus` syntax, on the first line of the input.
    const auto counts = sm::parse_gpu_counts(text.substr(0, std::min<size_t>(text.find('\n'), 64)));
    if (!counts) check_error(counts.error());
    else if (counts->empty() || counts->size() > 256) die("parse_gpu_counts: empty or over 256 counts");
#endif
    auto doc = sm::parse_scenario_text(text, "fuzz");
    if (!doc) {
        check_error(doc.error());
        return 0;
    }
    auto over = sm::apply_overrides(std::move(doc).value(), sets);
    if (!over) {
        check_error(over.error());
        return 0;
    }
    for (const sm::Purpose purpose : {sm::Purpose::train, sm::Purpose::infer, sm::Purpose::search}) {
        auto s = sm::build_scenario(over.value(), purpose);
        if (!s) {
            check_error(s.error());
            continue;
        }
        if (purpose == sm::Purpose::train) check_training(s.value());
#ifdef SM_FUZZ_INFER
        if (purpose == sm::Purpose::infer) check_inference(s.value());
#endif
#ifdef SM_FUZZ_SEARCH
        if (purpose == sm::Purpose::search) check_search(s.value());
#endif
    }
    return 0;
}
