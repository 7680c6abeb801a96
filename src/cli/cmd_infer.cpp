#include <iostream>

#include <fmt/format.h>

#include "cli/commands.hpp"
#include "cli/common.hpp"
#include "inference/inference.hpp"
#include "inference/roofline.hpp"
#include "inference/serving.hpp"
#include "io/infer_report.hpp"
#include "io/int_list.hpp"
#include "io/serve_report.hpp"

namespace sm::cli {

namespace {

constexpr int64_t kMaxSweepBatch = int64_t{1} << 20;  // inference.batch's own limit
constexpr size_t kMaxSweepPoints = 4096;

void warn_memory(const Io& io, const Scenario& s, const InferResult& r) {
    if (!r.fits_in_memory)
        io.err << "scalemodel: warning: needs " << gib(r.memory.peak_bytes_per_gpu) << " per GPU; " << s.system.accel.name
                  << " has " << gib(s.system.accel.memory_bytes) << " (largest batch that fits: " << r.max_batch_fits << ")\n";
    if (s.inference.input_len + s.inference.output_len > s.model.seq_len)
        io.err << "scalemodel: warning: input_len + output_len = " << s.inference.input_len + s.inference.output_len
                  << " exceeds the model's context (model.seq_len = " << s.model.seq_len << ")\n";
}

// `--concurrency C` or `--max-throughput`: the continuous-batching steady state.
int run_serving(const Io& io, const Scenario& s, std::optional<int64_t> concurrency, Format fmt) {
    const InferContext c{s.model, s.system, s.inference};
    const int64_t limit = max_concurrency_that_fits(c, s.parallel);
    ServingPoint r;
    std::string mode = "concurrency";
    if (concurrency) {
        r = with_energy(s.system, s.parallel, serve_at(c, s.parallel, *concurrency));
        if (!r.fits_in_memory)
            io.err << "scalemodel: warning: needs " << gib(r.memory.peak_bytes_per_gpu) << " per GPU; " << s.system.accel.name
                      << " has " << gib(s.system.accel.memory_bytes) << " (largest concurrency that fits: " << limit << ")\n";
    } else {
        std::optional<ServingPoint> best = max_throughput(c, s.parallel);
        if (!best)
            return bad_input(io, {"--max-throughput", "",
                              fmt::format("not even one request fits in {} per GPU with tp {} pp {} (weights {})",
                                          gib(s.system.accel.memory_bytes), s.parallel.tp, s.parallel.pp,
                                          gib(serving_memory(c, s.parallel, 1).weights_bytes))});
        r = *best;
        mode = "max_throughput";
    }
    const Json j = serve_json(s, r, mode, limit);
    switch (fmt) {
        case Format::json: return emit_json(io, j);
        case Format::csv: return emit_checked(io, j, csv_header(j) + csv_row(j));
        case Format::text: return emit_checked(io, j, serve_text(s, r, mode, limit));
    }
    return kExitOk;
}

}  // namespace

Runner add_infer(CLI::App& app, const Io& io) {
    struct Opts {
        std::string scenario;
        std::vector<std::string> sets;
        std::string format = "text";
        std::string sweep;
        int64_t concurrency = 0;
        bool max_throughput = false;
    };
    auto o = std::make_shared<Opts>();
    CLI::App* cmd = app.add_subcommand("infer", "Predict inference: time to first token, time per output token, memory");
    cmd->add_option("SCENARIO", o->scenario, "scenario JSON file, '-' for stdin")->required();
    cmd->add_option("--set", o->sets, "override a field: PATH=VALUE (repeatable)")->take_all();
    cmd->add_option("--sweep-batch", o->sweep,
                    "latency-throughput curve over batch sizes: FIRST:LAST[:xK|:+K] (e.g. 1:256:x2) or A,B,C");
    auto* conc = cmd->add_option("--concurrency", o->concurrency,
                                 "continuous batching: C requests in flight per replica (steady state)")
                     ->check(CLI::Range(int64_t{1}, kMaxSweepBatch));
    auto* best = cmd->add_flag("--max-throughput", o->max_throughput,
                               "continuous batching at the concurrency that fits with the most output tokens/s/GPU");
    conc->excludes(best);
    for (auto* opt : {conc, best}) opt->excludes("--sweep-batch");
    cmd->add_option("--format", o->format, "output format")->check(CLI::IsMember({"text", "json", "csv"}));
    return [cmd, o, &io]() -> int {
        if (!cmd->parsed()) return -1;
        std::optional<std::vector<int64_t>> sweep;
        if (!o->sweep.empty()) {
            auto sw = parse_int_list(o->sweep, {"--sweep-batch", "1:256:x2", kMaxSweepBatch, kMaxSweepPoints});
            if (!sw) return bad_input(io, sw.error());
            sweep = sw.value();
        }
        auto s = load(io, o->scenario, o->sets, Purpose::infer);
        if (!s) return bad_input(io, s.error());
        note_assumptions(io, *s, Purpose::infer);
        const Format fmt = parse_format(o->format);
        if (o->concurrency > 0 || o->max_throughput)
            return run_serving(io, *s, o->concurrency > 0 ? std::optional<int64_t>(o->concurrency) : std::nullopt, fmt);
        if (!sweep) {
            const InferResult r = evaluate_inference({s->model, s->system, s->inference}, s->parallel);
            warn_memory(io, *s, r);
            const Json j = infer_json(*s, r);
            switch (fmt) {
                case Format::json: return emit_json(io, with_overrides(j, o->sets));
                case Format::csv: return emit_checked(io, j, csv_header(j) + csv_row(j));
                case Format::text: return emit_checked(io, j, infer_text(*s, r));
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
            case Format::json: return emit_json(io, with_overrides(j, o->sets));
            case Format::csv: return emit_checked(io, j, sweep_csv(pts));
            case Format::text: return emit_checked(io, j, sweep_text(*s, pts));
        }
        return kExitOk;
    };
}

}  // namespace sm::cli
