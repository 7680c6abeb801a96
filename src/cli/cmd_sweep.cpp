// `scalemodel sweep`: the cartesian grid of `--vary` fields, each point evaluated as train, infer
// or search, one row per point.
#include <chrono>

#include "cli/commands.hpp"
#include "cli/interrupt.hpp"
#include "cli/study_common.hpp"
#include "inference/inference.hpp"
#include "io/infer_report.hpp"

namespace sm::cli {

Runner add_sweep(CLI::App& app, const Io& io, const Cluster& cluster) {
    struct Opts : StudyArgs {
        std::vector<std::string> vary;
    };
    auto o = std::make_shared<Opts>();
    CLI::App* cmd = app.add_subcommand("sweep", "Evaluate a grid of scenario variants: one row per point");
    add_study_options(cmd, *o, {"train", "infer", "search"});
    cmd->add_option("--vary", o->vary,
                    "PATH=LIST (repeatable): a,b,c | START:STOP:xF (geometric) | START:STOP:+S (arithmetic) | preset "
                    "names (or `all`) for system.preset / model.preset; PATH `gpus`: the GPU count (--mode search)")
        ->required()
        ->take_all();
    return [cmd, o, cluster, &io]() -> int {
        if (!cmd->parsed()) return -1;
        std::vector<Vary> vs;
        for (const std::string& spec : o->vary) {
            auto v = parse_vary(spec);
            if (!v) return bad_input(io, v.error());
            if (v->path == "gpus") {
                if (o->mode != "search") return bad_input(io, {"--vary", quote_input(spec), "gpus varies the GPU count of --mode search only"});
                if (!o->gpus.empty()) return bad_input(io, {"--vary", quote_input(spec), "the GPU count is either --gpus N or varied, not both"});
                o->gpus_varied = true;
            }
            vs.push_back(std::move(v).value());
        }
        auto points = grid_points(vs);
        if (!points) return bad_input(io, points.error());
        auto setup = setup_study(io, *o, cluster);
        if (!setup) return bad_input(io, setup.error());
        StudySetup& st = setup.value();
        st.options.progress = study_progress(io, *o, cluster, "sweep");

        SweepTable t;
        for (const Vary& v : vs) t.varied.push_back(v.path);
        t.points = std::move(points).value();
        t.columns = st.options.mode == StudyMode::infer ? infer_json(st.base, InferResult{}) : train_json(st.base, TrainResult{});
        const auto start = std::chrono::steady_clock::now();
        {
            SigintGuard guard;
            t.outcomes = evaluate_points(
                t.points.size(), [&](size_t i) { return apply_edits(st.doc, t.points[i]); }, st.options);
        }
        const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        if (cluster.rank != 0) return kExitOk;
        size_t done = 0;
        for (const PointOutcome& p : t.outcomes) done += p.status != PointStatus::skipped;
        return emit_study(io, *o, cluster, sweep_table_json(t, st.header), sweep_table_text(t, st.header), sweep_table_csv(t), elapsed,
                          done, t.points.size());
    };
}

}  // namespace sm::cli
