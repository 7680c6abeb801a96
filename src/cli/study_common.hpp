#pragma once
// What `sweep`, `attribute` and `sensitivity` share: their options, the base scenario, the
// study options (threads, ranks, Ctrl-C, progress) and the way results are written.
#include <memory>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "cli/common.hpp"
#include "io/study_report.hpp"
#include "study/cluster.hpp"
#include "study/evaluate.hpp"

namespace sm::cli {

struct StudyArgs {
    std::string scenario;
    std::vector<std::string> sets;
    std::string mode = "train";
    std::string gpus;
    std::string objective;
    std::string format = "text";
    unsigned threads = 0;
    bool cross_domain_tp = false;
    bool no_progress = false;
    bool gpus_varied = false;  // sweep's `--vary gpus=...`: each point brings its GPU count
};

// Registers SCENARIO, --set, --mode (one of `modes`), --gpus, --objective, --threads,
// --format, --cross-domain-tp and --no-progress.
void add_study_options(CLI::App* cmd, StudyArgs& a, const std::vector<std::string>& modes);

struct StudySetup {
    Json doc;       // the scenario file after --set (presets still named)
    Scenario base;  // the same, parsed
    StudyOptions options;
    StudyHeader header;
};

// Reads the scenario and the options; every bad input is an error naming its flag or field.
Expected<StudySetup> setup_study(const Io& io, const StudyArgs& a, const Cluster& cluster);

// "GPT-3 175B on dgx-h100 (64 GPUs)": a scenario in a few words.
std::string scenario_title(const Scenario& s);

// A progress bar on stderr while points run, when stderr is a terminal on rank 0.
std::function<void(size_t, size_t)> study_progress(const Io& io, const StudyArgs& a, const Cluster& c, const char* what);

// Writes a study's result in the chosen format (JSON gets `overrides` and `elapsed_s`), says on
// stderr when Ctrl-C cut it short, and returns the exit status. Ranks other than 0 print nothing.
int emit_study(const Io& io, const StudyArgs& a, const Cluster& c, Json doc, const std::string& text, const std::string& csv, double elapsed_s,
               size_t done, size_t total);

}  // namespace sm::cli
