#include <iostream>

#include "cli/commands.hpp"
#include "cli/common.hpp"
#include "inference/inference.hpp"
#include "inference/roofline.hpp"
#include "io/infer_report.hpp"
#include "io/int_list.hpp"

namespace sm::cli {

namespace {

constexpr int64_t kMaxSweepBatch = int64_t{1} << 20;  // inference.batch's own limit
constexpr size_t kMaxSweepPoints = 4096;

void warn_memory(const Scenario& s, const InferResult& r) {
    if (!r.fits_in_memory)
        std::cerr << "scalemodel: warning: needs " << gib(r.memory.peak_bytes_per_gpu) << " per GPU; " << s.system.accel.name
                  << " has " << gib(s.system.accel.memory_bytes) << " (largest batch that fits: " << r.max_batch_fits << ")\n";
    if (s.inference.input_len + s.inference.output_len > s.model.seq_len)
        std::cerr << "scalemodel: warning: input_len + output_len = " << s.inference.input_len + s.inference.output_len
                  << " exceeds the model's context (model.seq_len = " << s.model.seq_len << ")\n";
}

}  // namespace

Runner add_infer(CLI::App& app) {
    struct Opts {
        std::string scenario;
        std::vector<std::string> sets;
        std::string format = "text";
        std::string sweep;
    };
    auto o = std::make_shared<Opts>();
    CLI::App* cmd = app.add_subcommand("infer", "Predict inference: time to first token, time per output token, memory");
    cmd->add_option("SCENARIO", o->scenario, "scenario JSON file, '-' for stdin")->required();
    cmd->add_option("--set", o->sets, "override a field: PATH=VALUE (repeatable)")->take_all();
    cmd->add_option("--sweep-batch", o->sweep,
                    "latency-throughput curve over batch sizes: FIRST:LAST[:xK|:+K] (e.g. 1:256:x2) or A,B,C");
    cmd->add_option("--format", o->format, "output format")->check(CLI::IsMember({"text", "json", "csv"}));
    return [cmd, o]() -> int {
        if (!cmd->parsed()) return -1;
        std::optional<std::vector<int64_t>> sweep;
        if (!o->sweep.empty()) {
            auto sw = parse_int_list(o->sweep, {"--sweep-batch", "1:256:x2", kMaxSweepBatch, kMaxSweepPoints});
            if (!sw) return bad_input(sw.error());
            sweep = sw.value();
        }
        auto s = load(o->scenario, o->sets, Purpose::infer);
        if (!s) return bad_input(s.error());
        note_assumptions(*s, Purpose::infer);
        const Format fmt = parse_format(o->format);
        if (!sweep) {
            const InferResult r = evaluate_inference({s->model, s->system, s->inference}, s->parallel);
            warn_memory(*s, r);
            const Json j = infer_json(*s, r);
            switch (fmt) {
                case Format::json: return emit_json(with_overrides(j, o->sets));
                case Format::csv: return emit_checked(j, csv_header(j) + csv_row(j));
                case Format::text: return emit_checked(j, infer_text(*s, r));
            }
            return kExitOk;
        }
        std::vector<SweepPoint> pts;
        for (int64_t b : *sweep) {
            Scenario sb = *s;
            sb.inference.batch = b;
            const InferContext c{sb.model, sb.system, sb.inference};
            SweepPoint pt;
            pt.batch = b;
            pt.result = evaluate_inference(c, sb.parallel);
            pt.decode = phase_split(inference_roofline(c, sb.parallel, 0), "decode");
            pts.push_back(pt);
        }
        const Json j = sweep_json(*s, pts);
        switch (fmt) {
            case Format::json: return emit_json(with_overrides(j, o->sets));
            case Format::csv: return emit_checked(j, sweep_csv(pts));
            case Format::text: return emit_checked(j, sweep_text(*s, pts));
        }
        return kExitOk;
    };
}

}  // namespace sm::cli
