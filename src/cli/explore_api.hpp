#pragma once
// The explorer's HTTP API without the HTTP: a request body in, a status and a body out. Each
// command is the command line's, run in-process on the request's scenario, so results and
// one-line errors are the CLI's (docs/EXPLORER.md).
#include <string>
#include <string_view>

namespace sm::cli {

struct ApiReply {
    int status = 200;  // 200, 400 (bad input: the CLI's one line), 404 (no such command), 500
    std::string content_type = "application/json";
    std::string body;
    std::string notes;  // the CLI's notes and warnings (stderr) of a successful run, one per line
};

// Largest request body accepted (the server answers 413 above it).
inline constexpr size_t kMaxRequestBytes = size_t{1} << 20;

// `command`: train, infer, roofline, search, sweep, attribute, sensitivity, serve-search,
// resolve, validate or presets. `body`: a scenario (the file format), or
// {"scenario": {...}, "options": {"gpus": 64, "set": {"parallel.tp": 4}, "vary": ["a=1,2"], ...}}
// where options are the command's flags without dashes (true for a flag that takes no value) and
// attribute's "to" is a scenario object.
ApiReply api_reply(std::string_view command, std::string_view body);

}  // namespace sm::cli
