// `scalemodel sensitivity`: the elasticity of the objective to every numeric system field, most
// influential first (src/study/sensitivity.hpp).
#include <chrono>

#include "cli/commands.hpp"
#include "cli/interrupt.hpp"
#include "cli/study_common.hpp"
#include "study/grid.hpp"
#include "study/sensitivity.hpp"

namespace sm::cli {

Runner add_sensitivity(CLI::App& app, const Io& io, const Cluster& cluster) {
    auto o = std::make_shared<StudyArgs>();
    CLI::App* cmd = app.add_subcommand("sensitivity", "Rank the system's fields by the elasticity of the objective to each");
    add_study_options(cmd, *o, {"train", "infer", "search"});
    return [cmd, o, cluster, &io]() -> int {
        if (!cmd->parsed()) return -1;
        auto setup = setup_study(io, *o, cluster);
        if (!setup) return bad_input(io, setup.error());
        StudySetup& st = setup.value();
        const Json base = study_base_doc(st.base);
        const std::vector<Probe> probes = sensitivity_probes(base);
        // Point 0 is the base; probe k is measured at points 1 + 2k (low) and 2 + 2k (high).
        const size_t n = 1 + 2 * probes.size();
        st.options.progress = study_progress(io, *o, cluster, "sensitivity");
        const auto start = std::chrono::steady_clock::now();
        std::vector<PointOutcome> out;
        {
            SigintGuard guard;
            out = evaluate_points(
                n,
                [&](size_t i) -> Expected<Json> {
                    if (i == 0) return base;
                    const Probe& p = probes[(i - 1) / 2];
                    return apply_edits(base, {{p.path, i % 2 == 1 ? p.low : p.high}});
                },
                st.options);
        }
        const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        if (cluster.rank != 0) return kExitOk;
        size_t done = 0;
        for (const PointOutcome& p : out) done += p.status != PointStatus::skipped;
        if (out[0].status == PointStatus::skipped) return kExitInterrupted;
        if (out[0].status != PointStatus::ok) return bad_input(io, {"SCENARIO", "", "the base does not evaluate: " + out[0].message});
        std::vector<PointOutcome> low, high;
        for (size_t k = 0; k < probes.size(); ++k) {
            low.push_back(out[1 + 2 * k]);
            high.push_back(out[2 + 2 * k]);
        }
        SensitivityReport r{out[0].value, rank_elasticities(probes, low, high, out[0].value)};
        return emit_study(io, *o, cluster, sensitivity_json(r, st.header), sensitivity_text(r, st.header), sensitivity_csv(r), elapsed, done,
                          n);
    };
}

}  // namespace sm::cli
