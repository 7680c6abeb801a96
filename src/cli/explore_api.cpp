#include "cli/explore_api.hpp"

#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include <fmt/format.h>

#include "cli/commands.hpp"

namespace sm::cli {

namespace {

const std::set<std::string, std::less<>> kCommands = {"train", "infer", "roofline", "search", "sweep", "attribute",
                                                      "sensitivity", "serve-search", "resolve", "validate", "presets"};

// Options a request may give: every flag of the commands except those that name files on this
// machine (attribute's --to takes a scenario object instead; validate's --dataset is not offered).
const std::set<std::string, std::less<>> kOptions = {
    "set",       "gpus",       "top",    "objective", "tokens",  "cross-domain-tp", "mode",          "vary",
    "systems",   "context",    "concurrency", "max-throughput", "sweep-batch", "ttft-ms", "tpot-ms",
    "disaggregated", "ops",    "stages", "threads"};

// The line quotes what the request gave, which need not be UTF-8: such bytes become U+FFFD
// (JSON text is UTF-8; a strict dump would throw).
ApiReply error_reply(int status, const std::string& line) {
    return {status, "application/json", Json{{"error", line}}.dump(-1, ' ', false, Json::error_handler_t::replace), ""};
}
ApiReply bad_request(const std::string& line) { return error_reply(400, line); }

std::string option_value(const Json& v) { return v.is_string() ? v.get<std::string>() : v.dump(); }

// A file that holds a scenario while a request runs (attribute's --to), removed afterwards.
class TempScenario {
public:
    explicit TempScenario(const Json& doc) {
        std::string name = (std::filesystem::temp_directory_path() / "scalemodel-explore-XXXXXX").string();
        const int fd = mkstemp(name.data());
        if (fd < 0) return;
        close(fd);
        std::ofstream(name) << doc.dump();
        path_ = name;
    }
    ~TempScenario() {
        if (!path_.empty()) std::remove(path_.c_str());
    }
    TempScenario(const TempScenario&) = delete;
    TempScenario& operator=(const TempScenario&) = delete;
    const std::string& path() const { return path_; }

private:
    std::string path_;
};

}  // namespace

ApiReply api_reply(std::string_view command, std::string_view body) {
    if (!kCommands.count(command)) return error_reply(404, fmt::format("no API command {}", quote_input(command)));
    std::vector<std::string> args = {std::string(command)};
    std::optional<std::string> scenario_text;
    std::optional<TempScenario> to;
    if (command != "presets" && command != "validate") {
        const Json req = Json::parse(body, nullptr, false);
        if (req.is_discarded() || !req.is_object())
            return bad_request("scalemodel: error: request: got " + quote_input(body.substr(0, 40)) +
                               "; a JSON object: a scenario, or {\"scenario\": {...}, \"options\": {...}}");
        const bool envelope = req.contains("scenario");
        const Json& scenario = envelope ? req["scenario"] : req;
        if (!scenario.is_object()) return bad_request("scalemodel: error: scenario: got " + show(scenario) + "; a scenario object");
        scenario_text = scenario.dump();
        args.emplace_back("-");
        const Json options = envelope && req.contains("options") ? req["options"] : Json::object();
        if (!options.is_object()) return bad_request("scalemodel: error: options: got " + show(options) + "; an object of the command's flags");
        for (const auto& [key, value] : options.items()) {
            if (key == "to" && command == "attribute") {
                if (!value.is_object()) return bad_request("scalemodel: error: options.to: got " + show(value) + "; a scenario object");
                to.emplace(value);
                if (to->path().empty()) return error_reply(500, "could not write a temporary file");
                args.insert(args.end(), {"--to", to->path()});
            } else if (!kOptions.count(key)) {
                return bad_request(fmt::format("scalemodel: error: options.{}: not an option the API offers for {}", printable(key), command));
            } else if (key == "set" && value.is_object()) {
                for (const auto& [path, v] : value.items()) args.insert(args.end(), {"--set", path + "=" + option_value(v)});
            } else if (value.is_array()) {
                for (const Json& v : value) args.insert(args.end(), {"--" + key, option_value(v)});
            } else if (value.is_boolean()) {
                if (value.get<bool>()) args.push_back("--" + key);
            } else {
                args.insert(args.end(), {"--" + key, option_value(value)});
            }
        }
    }
    if (command != "resolve") args.insert(args.end(), {"--format", "json"});
    if (command == "search" || command == "sweep" || command == "attribute" || command == "sensitivity" || command == "serve-search")
        args.emplace_back("--no-progress");
    std::ostringstream out, err;
    Io io{out, err, false, scenario_text};
    const int rc = run_command_line(args, io, Cluster{});
    if (rc == kExitOk) return {200, "application/json", out.str(), err.str()};
    // The CLI's error line: the last line of stderr (notes and warnings may come before it).
    std::string line = err.str();
    while (!line.empty() && line.back() == '\n') line.pop_back();
    if (const auto nl = line.rfind('\n'); nl != std::string::npos) line = line.substr(nl + 1);
    if (rc == kExitBadInput) return bad_request(line);
    return error_reply(500, line);
}

}  // namespace sm::cli
