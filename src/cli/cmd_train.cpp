#include <ostream>

#include "cli/commands.hpp"
#include "cli/common.hpp"
#include "cli/quick_flags.hpp"
#include "cli/train_run.hpp"
#include "io/launch_settings.hpp"
#include "io/op_table.hpp"

namespace sm::cli {

TrainRun run_train(const Io& io, const Scenario& s, bool ops) {
    note_assumptions(io, s, Purpose::train);
    TrainRun t;
    t.result = evaluate_training({s.model, s.system, s.training}, s.parallel);
    t.stages = training_stages({s.model, s.system, s.training}, s.parallel);
    t.doc = train_json(s, t.result);
    t.doc["stages"] = stages_json(t.stages);
    if (ops) t.doc["ops"] = training_ops_json(s);
    if (!t.result.fits_in_memory)
        io.err << "scalemodel: warning: needs " << gib(t.result.memory.peak_bytes_per_gpu) << " per GPU; " << s.system.accel.name
               << " has " << gib(s.system.accel.memory_bytes) << "\n";
    return t;
}

Runner add_train(CLI::App& app, const Io& io) {
    struct Opts {
        std::string scenario;
        std::vector<std::string> sets;
        std::string format = "text";
        bool ops = false;
        bool stages = false;
        std::string emit;
        QuickFlags quick;
    };
    auto o = std::make_shared<Opts>();
    CLI::App* cmd = app.add_subcommand("train", "Predict one training step: time, breakdown, memory");
    cmd->add_option("SCENARIO", o->scenario, "scenario JSON file, '-' for stdin (default: built-in GPT-3 175B on 64 A100s)");
    cmd->add_option("--set", o->sets, "override a field: PATH=VALUE (repeatable)")->take_all();
    cmd->add_option("--format", o->format, "output format (html: one self-contained page with charts)")
        ->check(CLI::IsMember({"text", "json", "csv", "html"}));
    add_quick_flags(cmd, o->quick, kQuickTraining | kQuickGpus);
    cmd->add_option("--emit", o->emit, "print the layout as that framework's launch arguments (instead of the report)")
        ->check(CLI::IsMember(training_launch_targets()))
        ->excludes("--format");
    cmd->add_flag("--stages", o->stages, "also show each pipeline GPU: its layers, one micro-batch's time, its memory");
    cmd->add_flag("--ops", o->ops, "also show the per-GPU op list of one micro-batch (shapes, FLOP, bytes, times)");
    return [cmd, o, &io]() -> int {
        if (!cmd->parsed()) return -1;
        auto s = load(io, o->scenario, o->sets, Purpose::train, &o->quick);
        if (!s) return bad_input(io, s.error());
        if (!o->emit.empty()) {
            Expected<std::string> launch = training_launch(*s, s->parallel, o->emit);
            if (!launch) return bad_input(io, launch.error());
            io.out << launch.value();
            return kExitOk;
        }
        const TrainRun run = run_train(io, *s, o->ops);
        const TrainResult& r = run.result;
        const std::vector<StageReport>& stages = run.stages;
        const Json& j = run.doc;
        const auto text = [&] {
            return train_text(*s, r) + (o->stages ? stages_text(s->parallel, stages, s->system.accel.memory_bytes) : "") +
                   (o->ops ? training_ops_text(*s) : "");
        };
        if (o->format == "html") return emit_html(io, j, html_title("train", *s, r.gpus), text(), training_charts(j));
        switch (parse_format(o->format)) {
            case Format::json: return emit_json(io, with_overrides(j, o->sets));
            case Format::csv: return emit_checked(io, j, csv_header(j) + csv_row(j));
            case Format::text: return emit_checked(io, j, text());
        }
        return kExitOk;
    };
}

}  // namespace sm::cli
