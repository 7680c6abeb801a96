#include "cli/study_common.hpp"

#include <algorithm>
#include <ostream>
#include <thread>

#include <fmt/format.h>

#include "cli/interrupt.hpp"
#include "io/provenance.hpp"

namespace sm::cli {

void add_study_options(CLI::App* cmd, StudyArgs& a, const std::vector<std::string>& modes) {
    cmd->add_option("SCENARIO", a.scenario, "scenario JSON file, '-' for stdin")->required();
    cmd->add_option("--set", a.sets, "override a field of the base scenario: PATH=VALUE (repeatable)")->take_all();
    const bool infer = std::find(modes.begin(), modes.end(), "infer") != modes.end();  // attribute has no infer mode
    cmd->add_option("--mode", a.mode,
                    std::string("evaluate each point as `train` (the layout given), ") + (infer ? "`infer`, " : "") +
                        "or `search` (its best layout)")
        ->check(CLI::IsMember(modes));
    cmd->add_option("--gpus", a.gpus, "--mode search: the GPU count (default: tp*pp*dp*cp when all four are given)");
    cmd->add_option("--objective", a.objective,
                    "result key to judge by: step_time_s (default), tokens_per_s, tokens_per_s_per_gpu, mfu; for infer "
                    "e2e_latency_s (default), ttft_s, tpot_s, output_tokens_per_s");
    cmd->add_option("--threads", a.threads, "worker threads (default: all cores)")->check(CLI::Range(1u, 1024u));
    cmd->add_option("--format", a.format, "output format")->check(CLI::IsMember({"text", "json", "csv"}));
    cmd->add_flag("--cross-domain-tp", a.cross_domain_tp, "--mode search: also search tensor parallelism beyond one scale-up domain");
    cmd->add_flag("--no-progress", a.no_progress, "no progress bar even on a terminal");
}

std::string scenario_title(const Scenario& s) {
    return fmt::format("{} on {} ({})", s.model.name, s.system.name, s.system.accel.name);
}

Expected<StudySetup> setup_study(const Io& io, const StudyArgs& a, const Cluster& cluster) {
    StudySetup st;
    const StudyMode mode = *parse_study_mode(a.mode);
    Expected<Json> file = read_scenario(io, a.scenario);
    if (!file) return file.error();
    Expected<Json> doc = apply_overrides(std::move(file).value(), a.sets);
    if (!doc) return doc.error();
    st.doc = std::move(doc).value();
    // The base is read with the fewest cross-field rules: a sweep may make a base layout valid.
    Expected<Scenario> base = build_scenario(st.doc, Purpose::search);
    if (!base) return base.error();
    st.base = std::move(base).value();
    Expected<StudyObjective> obj = parse_study_objective(a.objective, mode);
    if (!obj) return obj.error();
    StudyOptions& o = st.options;
    o.mode = mode;
    o.objective = obj.value();
    if (!a.gpus.empty()) {
        if (mode != StudyMode::search) return InputError{"--gpus", quote_input(a.gpus), "applies to --mode search only"};
        auto counts = parse_gpu_counts(a.gpus);
        if (!counts) return counts.error();
        if (counts->size() != 1) return InputError{"--gpus", quote_input(a.gpus), "one GPU count per study (sweep: --vary gpus=LIST)"};
        o.gpus = counts->front();
    }
    if (mode == StudyMode::search) {
        if (auto missing = missing_training_workload(st.base)) return *missing;
        const auto& g = st.base.parallel_given;
        if (o.gpus == 0 && !a.gpus_varied && !(g.count("tp") && g.count("pp") && g.count("dp") && g.count("cp")))
            return InputError{"--gpus", "nothing", "--mode search needs a GPU count unless parallel.tp, pp, dp and cp are all given"};
    }
    // The cores of this machine are shared by the ranks on it.
    const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
    o.threads = a.threads > 0 ? a.threads : std::max(1u, cores / static_cast<unsigned>(std::max(1, cluster.local_size)));
    o.tp_within_domain = !a.cross_domain_tp;
    o.stop = &sigint_flag();
    o.cluster = cluster;
    st.header.title = scenario_title(st.base);
    st.header.provenance = provenance_text(st.base);
    st.header.options = o;
    return st;
}

std::function<void(size_t, size_t)> study_progress(const Io& io, const StudyArgs& a, const Cluster& c, const char* what) {
    if (a.no_progress || c.rank != 0 || !io.err_is_terminal) return {};
    const auto start = std::chrono::steady_clock::now();
    return [&io, start, what](size_t done, size_t total) {
        const double frac = total ? static_cast<double>(done) / static_cast<double>(total) : 1.0;
        constexpr int kWidth = 24;
        const int filled = static_cast<int>(frac * kWidth);
        const double t = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        const double left = done ? t * static_cast<double>(total - done) / static_cast<double>(done) : 0.0;
        io.err << fmt::format("\r\033[K{} [{}{}] {}/{} points  ~{:.1f} s left", what, std::string(static_cast<size_t>(filled), '#'),
                                 std::string(static_cast<size_t>(kWidth - filled), '.'), done, total, left)
                  << (done == total ? "\r\033[K" : "") << std::flush;
    };
}

int emit_study(const Io& io, const StudyArgs& a, const Cluster& c, Json doc, const std::string& text, const std::string& csv, double elapsed_s,
               size_t done, size_t total) {
    if (c.rank != 0) return kExitOk;
    const bool cut = done < total;
    if (cut)
        io.err << fmt::format("scalemodel: interrupted: {} of {} points finished; printing those\n", done, total);
    doc["interrupted"] = cut;
    doc["overrides"] = overrides_json(a.sets);
    doc["elapsed_s"] = elapsed_s;
    int rc = kExitOk;
    switch (parse_format(a.format)) {
        case Format::json: rc = emit_json(io, doc); break;
        case Format::csv: rc = emit_checked(io, doc, csv); break;
        case Format::text: rc = emit_checked(io, doc, text); break;
    }
    return cut && rc == kExitOk ? kExitInterrupted : rc;
}

}  // namespace sm::cli
