#include <iostream>

#include <fmt/format.h>

#include "cli/commands.hpp"
#include "cli/common.hpp"
#include "cli/quick_flags.hpp"
#include "inference/inference.hpp"
#include "inference/roofline.hpp"
#include "inference/serving.hpp"
#include "inference/serving_benchmark.hpp"
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

// What `infer` was asked about continuous batching: a closed loop of C clients per replica, an
// open loop at a rate, or the best concurrency for throughput.
struct ServingAsk {
    int64_t concurrency = 0;
    double request_rate = 0;
    uint64_t seed = 1;
};

// A disaggregated deployment's benchmark: C clients for the whole deployment, or R requests/s.
int run_disaggregated(const Io& io, const Scenario& s, const ServingAsk& ask, Format fmt) {
    const InferContext c{s.model, s.system, s.inference};
    const DisaggDeployment& d = *s.disaggregated;
    for (const char* name : roles_without_room(c, d))
        io.err << "scalemodel: warning: not even one request fits in " << gib(s.system.accel.memory_bytes) << " per GPU of the "
               << name << " workers; they run one at a time\n";
    const uint64_t seed = ask.request_rate > 0 ? ask.seed : 0;
    const DisaggBenchmark b = run_disaggregated_benchmark(c, d, ask.concurrency, ask.request_rate,
                                                          benchmark_requests(s.inference, ask.concurrency), ask.seed);
    const Json j = disagg_json(s, b, ask.concurrency, ask.request_rate, seed);
    switch (fmt) {
        case Format::json: return emit_json(io, j);
        case Format::csv: return emit_checked(io, j, csv_header(j) + csv_row(j));
        case Format::text: return emit_checked(io, j, disagg_text(s, b, ask.concurrency, ask.request_rate, seed));
    }
    return kExitOk;
}

// `--concurrency C` / `--request-rate R`: the benchmark, with the steady state beside it;
// `--max-throughput`: the steady state at the best concurrency that fits.
int run_serving(const Io& io, const Scenario& s, const ServingAsk& ask, Format fmt) {
    const InferContext c{s.model, s.system, s.inference};
    const ParallelConfig& p = s.parallel;
    const int64_t limit = max_concurrency_that_fits(c, p);
    ServingPoint r;
    std::optional<BenchmarkReport> bench;
    std::string mode = "concurrency";
    if (ask.concurrency > 0 || ask.request_rate > 0) {
        if (limit == 0)
            io.err << "scalemodel: warning: not even one request fits in " << gib(s.system.accel.memory_bytes)
                   << " per GPU; the benchmark runs one at a time\n";
        BenchmarkReport b;
        b.clients = ask.concurrency * p.dp;
        b.request_rate_per_s = ask.request_rate;
        b.seed = ask.request_rate > 0 ? ask.seed : 0;
        b.result = run_benchmark(c, p, std::max<int64_t>(limit, 1), s.inference.prefill_schedule, b.clients, ask.request_rate,
                                 benchmark_requests(s.inference, b.clients), ask.seed);
        // An open loop's steady state: the requests in flight by Little's law, within the slots.
        int64_t in_flight = ask.concurrency;
        if (ask.request_rate > 0) {
            mode = "request_rate";
            const double n = std::round(b.result.requests_per_s / static_cast<double>(p.dp) * b.result.e2e_s.mean);
            in_flight = std::clamp<int64_t>(static_cast<int64_t>(std::min(n, 1e15)), 1, std::max<int64_t>(limit, 1));
        }
        r = with_energy(s.system, p, serve_at(c, p, in_flight));
        if (!r.fits_in_memory && limit > 0)
            io.err << "scalemodel: warning: " << in_flight << " requests need " << gib(r.memory.peak_bytes_per_gpu) << " per GPU; "
                   << s.system.accel.name << " has " << gib(s.system.accel.memory_bytes) << " (largest concurrency that fits: "
                   << limit << "; the rest wait for a slot)\n";
        bench = b;
    } else {
        std::optional<ServingPoint> best = max_throughput(c, p);
        if (!best)
            return bad_input(io, {"--max-throughput", "",
                              fmt::format("not even one request fits in {} per GPU with tp {} pp {} (weights {})",
                                          gib(s.system.accel.memory_bytes), p.tp, p.pp, gib(serving_memory(c, p, 1).weights_bytes))});
        r = *best;
        mode = "max_throughput";
    }
    const BenchmarkReport* b = bench ? &*bench : nullptr;
    const Json j = serve_json(s, r, mode, limit, b);
    switch (fmt) {
        case Format::json: return emit_json(io, j);
        case Format::csv: return emit_checked(io, j, csv_header(j) + csv_row(j));
        case Format::text: return emit_checked(io, j, serve_text(s, r, mode, limit, b));
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
        double request_rate = 0;
        uint64_t seed = 1;
        bool max_throughput = false;
        QuickFlags quick;
    };
    auto o = std::make_shared<Opts>();
    CLI::App* cmd = app.add_subcommand("infer", "Predict inference: time to first token, time per output token, memory");
    cmd->add_option("SCENARIO", o->scenario, "scenario JSON file, '-' for stdin (or none: --model and --system)");
    cmd->add_option("--set", o->sets, "override a field: PATH=VALUE (repeatable)")->take_all();
    add_quick_flags(cmd, o->quick, kQuickInference | kQuickGpus);
    cmd->add_option("--sweep-batch", o->sweep,
                    "latency-throughput curve over batch sizes: FIRST:LAST[:xK|:+K] (e.g. 1:256:x2) or A,B,C");
    auto* conc = cmd->add_option("--concurrency", o->concurrency,
                                 "continuous batching: a closed loop of C clients per replica (a benchmark: mean and "
                                 "percentiles, the steady state beside it)")
                     ->check(CLI::Range(int64_t{1}, kMaxSweepBatch));
    auto* rate = cmd->add_option("--request-rate", o->request_rate,
                                 "continuous batching: Poisson arrivals at R requests/s for the whole deployment")
                     ->check(CLI::Validator(
                         [](const std::string& v) -> std::string {
                             double x = 0;
                             return CLI::detail::lexical_cast(v, x) && x > 0 && x <= 1e9
                                        ? ""
                                        : "got " + v + "; must be requests per second above 0, at most 1e9";
                         },
                         "RATE"));
    cmd->add_option("--seed", o->seed, "the arrival process's seed (with --request-rate)")->needs(rate);
    auto* best = cmd->add_flag("--max-throughput", o->max_throughput,
                               "continuous batching at the concurrency that fits with the most output tokens/s/GPU");
    conc->excludes(best);
    rate->excludes(best);
    rate->excludes(conc);
    for (auto* opt : {conc, rate, best}) opt->excludes("--sweep-batch");
    cmd->add_option("--format", o->format, "output format (html: one self-contained page)")
        ->check(CLI::IsMember({"text", "json", "csv", "html"}));
    return [cmd, o, &io]() -> int {
        if (!cmd->parsed()) return -1;
        std::optional<std::vector<int64_t>> sweep;
        if (!o->sweep.empty()) {
            auto sw = parse_int_list(o->sweep, {"--sweep-batch", "1:256:x2", kMaxSweepBatch, kMaxSweepPoints});
            if (!sw) return bad_input(io, sw.error());
            sweep = sw.value();
        }
        if (auto missing = missing_scenario(o->scenario, o->quick)) return bad_input(io, *missing);
        auto s = load(io, o->scenario, o->sets, Purpose::infer, &o->quick);
        if (!s) return bad_input(io, s.error());
        note_assumptions(io, *s, Purpose::infer);
        const Format fmt = parse_format(o->format);
        const bool html = o->format == "html";  // the text report as a page (fmt is then text)
        const std::string title = html_title("infer", *s, s->parallel.gpus());
        if (s->disaggregated) {
            const DisaggDeployment& d = *s->disaggregated;
            if (o->quick.gpus > 0 && d.gpus() > o->quick.gpus)
                return bad_input(io, {"--gpus", std::to_string(o->quick.gpus),
                                      fmt::format("at least the disaggregated deployment's {} GPUs (prefill {}, decode {}): its workers "
                                                  "exceed the GPUs",
                                                  d.gpus(), d.prefill.gpus(), d.decode.gpus())});
            if (o->concurrency == 0 && o->request_rate == 0)
                return bad_input(io, {"disaggregated", "a deployment with no load given",
                                      "run by --concurrency C (clients for the whole deployment) or --request-rate R"});
            const ServingAsk load{o->concurrency, o->request_rate, o->seed};
            if (html)
                return emit_html_of(io, html_title("infer", *s, d.gpus()), [&](const Io& b) { return run_disaggregated(b, *s, load, fmt); });
            return run_disaggregated(io, *s, load, fmt);
        }
        if (o->concurrency > 0 || o->request_rate > 0 || o->max_throughput) {
            const ServingAsk load{o->concurrency, o->request_rate, o->seed};
            if (html) return emit_html_of(io, title, [&](const Io& b) { return run_serving(b, *s, load, fmt); });
            return run_serving(io, *s, load, fmt);
        }
        if (!sweep) {
            const InferResult r = evaluate_inference({s->model, s->system, s->inference}, s->parallel);
            warn_memory(io, *s, r);
            const Json j = infer_json(*s, r);
            if (html) return emit_html(io, j, title, infer_text(*s, r), inference_charts(j));
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
        if (html) return emit_html(io, j, title, sweep_text(*s, pts), {});
        switch (fmt) {
            case Format::json: return emit_json(io, with_overrides(j, o->sets));
            case Format::csv: return emit_checked(io, j, sweep_csv(pts));
            case Format::text: return emit_checked(io, j, sweep_text(*s, pts));
        }
        return kExitOk;
    };
}

}  // namespace sm::cli
