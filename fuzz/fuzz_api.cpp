// libFuzzer harness for the explorer's HTTP API (cli/explore_api.hpp), the handler the server
// runs on each POST /api/COMMAND: request body -> envelope -> the command's flags -> the CLI run
// in-process -> a status and a JSON body. The input's first byte picks the command (an unknown
// name among them, for the 404 path); the rest is the request body.
//
// What counts as a bug (abort, so libFuzzer records a crash):
//   - any crash, sanitizer report or escaping exception;
//   - a status other than 200, 400 (the CLI's bad input) or 404 (no such command): a 500 is an
//     internal error the request provoked;
//   - a body that is not JSON; a 200 whose JSON holds a NaN or infinity; an error body without
//     its one-line, non-empty "error".
//
// Each input stays in milliseconds: requests whose work grows without bound by design (a search
// over more than 64 GPUs or without a GPU count, a benchmark of over 4,096 clients, more than two
// threads) are passed over, not sent; the studies (sweep, attribute, sensitivity) and the
// built-in validation (seconds per request) are not fuzzed here; the scenario they read is the
// fuzz_scenario harness's.
#include <array>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "cli/explore_api.hpp"
#include "io/report.hpp"

namespace {

[[noreturn]] void die(const std::string& what) {
    std::fprintf(stderr, "fuzz_api: invariant broken: %s\n", what.c_str());
    std::abort();
}

constexpr std::array<std::string_view, 8> kCommands = {"train",  "infer",        "roofline", "resolve",
                                                       "search", "serve-search", "presets",  "trian"};

// A whole number from `lo` to `hi`, given as a JSON number or its digits.
bool small_count(const sm::Json& v, int64_t lo, int64_t hi) {
    int64_t n = 0;
    if (v.is_number_integer()) {
        n = v.get<int64_t>();
    } else if (v.is_string()) {
        const std::string& s = v.get_ref<const std::string&>();
        if (s.empty() || s.size() > 6 || s.find_first_not_of("0123456789") != std::string::npos) return false;
        n = std::stoll(s);
    } else {
        return false;
    }
    return n >= lo && n <= hi;
}

// Whether the request's work is bounded (see the file's comment); anything that is not an
// envelope is an error or a plain run of the scenario, both quick.
bool bounded(std::string_view command, std::string_view body) {
    const sm::Json req = sm::Json::parse(body, nullptr, false);
    const bool searches = command == "search" || command == "serve-search";
    if (req.is_discarded() || !req.is_object() || !req.contains("options") || !req["options"].is_object()) return !searches;
    const sm::Json& o = req["options"];
    if (o.contains("threads") && !small_count(o["threads"], 1, 2)) return false;
    if (o.contains("concurrency") && !small_count(o["concurrency"], 0, 4096)) return false;
    if (searches && !(o.contains("gpus") && small_count(o["gpus"], 1, 64))) return false;
    return true;
}

void check_error_body(const sm::Json& j, int status) {
    if (!j.is_object() || !j.contains("error") || !j["error"].is_string())
        die("status " + std::to_string(status) + " without an \"error\" string: " + j.dump().substr(0, 200));
    const std::string& m = j["error"].get_ref<const std::string&>();
    if (m.empty()) die("empty error line");
    if (m.find_first_of("\n\r") != std::string::npos) die("multi-line error: " + m);
    if (m.size() > 2000) die("error line longer than 2000 characters");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    if (size == 0) return 0;
    const std::string_view command = kCommands[data[0] % kCommands.size()];
    const std::string_view body(reinterpret_cast<const char*>(data) + 1, size - 1);
    if (body.size() > sm::cli::kMaxRequestBytes || !bounded(command, body)) return 0;
    const sm::cli::ApiReply r = sm::cli::api_reply(command, body);
    // FUZZ_API_SHOW=1: each input's command and status on stderr (to see what the seeds reach).
    if (std::getenv("FUZZ_API_SHOW") != nullptr)
        std::fprintf(stderr, "%.*s %d %.120s\n", static_cast<int>(command.size()), command.data(), r.status, r.body.c_str());
    if (r.status != 200 && r.status != 400 && r.status != 404)
        die("status " + std::to_string(r.status) + " for " + std::string(command) + ": " + r.body.substr(0, 300));
    const sm::Json j = sm::Json::parse(r.body, nullptr, false);
    if (j.is_discarded()) die("body is not JSON (" + std::string(command) + "): " + r.body.substr(0, 200));
    if (r.status == 200) {
        if (const std::string bad = sm::find_non_finite(j); !bad.empty()) die(std::string(command) + ": non-finite " + bad);
    } else {
        check_error_body(j, r.status);
    }
    return 0;
}
