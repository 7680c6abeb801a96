#pragma once
// Shared plumbing of the subcommands: exit codes, scenario loading, writing results.
#include <functional>
#include <iosfwd>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "io/html_report.hpp"
#include "io/report.hpp"
#include "io/scenario.hpp"

namespace sm {
struct QuickFlags;
}

namespace sm::cli {

// Where a command reads its scenario and writes its result: the process's streams for the binary;
// strings for the Python module and the explorer, which run the same commands in-process.
struct Io {
    std::ostream& out;
    std::ostream& err;
    bool err_is_terminal = false;           // progress bars are drawn only on a terminal
    std::optional<std::string> stdin_text;  // what SCENARIO `-` reads; unset: the process's stdin
};

inline constexpr int kExitOk = 0;
inline constexpr int kExitInternal = 1;
inline constexpr int kExitBadInput = 2;

// Prints "scalemodel: error: MESSAGE" on one line of stderr and returns exit status 2.
int bad_input(const Io& io, const InputError& e);
// Reads a scenario file, or `io.stdin_text` / standard input for "-".
Expected<Json> read_scenario(const Io& io, const std::string& path);
// Loads SCENARIO ("-" for stdin, empty for the built-in default) with `--set` overrides; with the
// one-line flags (quick_flags.hpp) an empty SCENARIO starts from an empty scenario instead.
Expected<Scenario> load(const Io& io, const std::string& path, const std::vector<std::string>& sets, Purpose purpose,
                        const QuickFlags* quick = nullptr);
// Writes a JSON document after checking every number is finite (exit 1 if not).
int emit_json(const Io& io, const Json& j);
// Writes text after checking the JSON form of the same result is finite.
int emit_checked(const Io& io, const Json& j, const std::string& text);
Format parse_format(const std::string& s);
// `--format html` (io/html_report.hpp): the text report `text` as one self-contained page with
// `charts`, after the same finiteness check as emit_checked.
int emit_html(const Io& io, const Json& j, std::string_view title, const std::string& text, const std::vector<BarChart>& charts);
// `--format html` of a command whose text report is printed deep in its run: `run` writes it to
// a buffer, which becomes the page; nothing is printed when the run fails (its error is).
int emit_html_of(const Io& io, std::string_view title, const std::function<int(const Io&)>& run);
// The page's title: "scalemodel COMMAND: MODEL on N x SYSTEM".
std::string html_title(std::string_view command, const Scenario& s, int64_t gpus);
// A JSON result with the `--set` overrides it was run with, as {PATH: VALUE} under `overrides`.
Json with_overrides(Json j, const std::vector<std::string>& sets);

// Says on stderr, one line each, what a command assumed that the scenario did not state: the
// inference workload when `infer`/`roofline` meet a file without an `inference` section, and that
// fp4 training is not production practice. Call once the input is known to be good.
void note_assumptions(const Io& io, const Scenario& s, Purpose purpose);
// `search` optimizes a training step: without training.global_batch it would search a global
// batch of dp x microbatch (often 1) and find nothing. An error naming the field, if missing.
std::optional<InputError> missing_training_workload(const Scenario& s);

// The scenario `make run` and a bare `scalemodel train` use: GPT-3 175B on 64 A100s.
const char* default_scenario();

}  // namespace sm::cli
