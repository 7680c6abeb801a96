// `scalemodel serve-search`: the best serving configurations under latency targets, and the
// Pareto front of tokens/s/GPU against tokens/s/user.
#include <unistd.h>

#include <iostream>

#include <fmt/format.h>

#include "cli/commands.hpp"
#include "cli/common.hpp"
#include "cli/quick_flags.hpp"
#include "io/csv.hpp"
#include "io/energy_report.hpp"
#include "io/launch_settings.hpp"
#include "io/serve_report.hpp"
#include "search/serve_search.hpp"

namespace sm::cli {

namespace {

// The GPU counts nearest to `gpus` (one below, one above, within 2x) at which some serving layout
// holds the model and a request in memory.
std::vector<int64_t> nearest_fitting_counts(const InferContext& c, int64_t gpus) {
    const auto fits = [&](int64_t n) { return !serve_search(c, n, ServeTargets{}, 1).pareto.empty(); };
    std::vector<int64_t> found;
    for (int64_t n = gpus - 1; n >= std::max<int64_t>(1, gpus / 2); --n)
        if (fits(n)) {
            found.push_back(n);
            break;
        }
    for (int64_t n = gpus + 1; n <= std::min<int64_t>(4096, 2 * gpus); ++n)
        if (fits(n)) {
            found.push_back(n);
            break;
        }
    return found;
}

}  // namespace

namespace {

const char* objective_name(ServeObjective o) { return o == ServeObjective::tokens_per_joule ? "tokens_per_j" : "tokens_per_gpu"; }

// A configuration's keys; its energy and price keys as `infer --concurrency` gives them.
Json hit_json(const SystemSpec& sys, const ServeHit& h) {
    const ServingPoint& p = h.point;
    Json j{{"tp", h.layout.tp},
           {"pp", h.layout.pp},
           {"dp", h.layout.dp},
           {"ep", h.layout.ep},
           {"etp", h.layout.expert_tp()},
           {"concurrency", p.concurrency},
           {"ttft_s", p.ttft_s},
           {"tpot_s", p.tpot_s},
           {"output_tokens_per_s_per_gpu", p.output_tokens_per_s_per_gpu},
           {"output_tokens_per_s_per_user", p.output_tokens_per_s_per_user},
           {"output_tokens_per_s", p.output_tokens_per_s},
           {"peak_bytes_per_gpu", p.memory.peak_bytes_per_gpu}};
    add_energy_keys(j, sys, serve_energy_scope(h.layout, p), true);
    return j;
}

Json result_json(const Scenario& s, int64_t gpus, const ServeTargets& t, const ServeSearchResult& r) {
    Json best = Json::array(), front = Json::array();
    for (const ServeHit& h : r.best) best.push_back(hit_json(s.system, h));
    for (const ServeHit& h : r.pareto) front.push_back(hit_json(s.system, h));
    return Json{{"model", s.model.name},   {"system", s.system.name},       {"gpus", gpus},
                {"input_len", s.inference.input_len}, {"output_len", s.inference.output_len},
                {"ttft_target_s", t.ttft_s}, {"tpot_target_s", t.tpot_s}, {"objective", objective_name(t.objective)},
                {"layouts", r.layouts},
                {"points", r.points},      {"best", best},                  {"pareto", front}};
}

// Energy per output token as a CSV cell: empty when the system has no energy figures.
std::string energy_cell(const SystemSpec& sys, double energy_per_request_j, int64_t tokens) {
    return sys.energy.known() ? csv_number(energy_per_request_j / static_cast<double>(tokens)) : std::string();
}

std::string hits_csv(const Scenario& s, const ServeSearchResult& r) {
    std::string o = csv_line({"list", "tp", "pp", "dp", "ep", "concurrency", "ttft_s", "tpot_s", "output_tokens_per_s_per_gpu",
                              "output_tokens_per_s_per_user", "energy_per_token_j", "etp"});
    auto rows = [&](const char* list, const std::vector<ServeHit>& hs) {
        for (const ServeHit& h : hs)
            o += csv_line({list, std::to_string(h.layout.tp), std::to_string(h.layout.pp), std::to_string(h.layout.dp),
                           std::to_string(h.layout.ep), std::to_string(h.point.concurrency), csv_number(h.point.ttft_s),
                           csv_number(h.point.tpot_s), csv_number(h.point.output_tokens_per_s_per_gpu),
                           csv_number(h.point.output_tokens_per_s_per_user),
                           energy_cell(s.system, h.point.energy_per_request_j, s.inference.output_len),
                           std::to_string(h.layout.expert_tp())});
    };
    rows("best", r.best);
    rows("pareto", r.pareto);
    return o;
}

Json disagg_json(const Scenario& s, const DisaggHit& h) {
    // A pool's own per-GPU rate and energy describe one instance of it alone.
    Json j{{"prefill", hit_json(s.system, h.prefill)},
           {"decode", hit_json(s.system, h.decode)},
           {"prefill_instances", h.prefill_instances},
           {"decode_instances", h.decode_instances},
           {"gpus_used", h.gpus},
           {"kv_transfer_s", h.kv_transfer_s},
           {"requests_per_s", h.requests_per_s},
           {"ttft_s", h.ttft_s},
           {"tpot_s", h.tpot_s},
           {"output_tokens_per_s_per_gpu", h.output_tokens_per_s_per_gpu},
           {"output_tokens_per_s_per_user", h.output_tokens_per_s_per_user}};
    // The pairing as a scenario's `disaggregated` section, and the requests it holds in flight:
    // `infer --concurrency CLIENTS` runs its benchmark.
    auto role = [](int64_t workers, const ParallelConfig& p) {
        return Json{{"workers", workers}, {"tp", p.tp}, {"pp", p.pp}, {"dp", p.dp}, {"ep", p.ep}, {"etp", p.expert_tp()}};
    };
    j["disaggregated"] = {{"prefill", role(h.prefill_instances, h.prefill.layout)}, {"decode", role(h.decode_instances, h.decode.layout)}};
    j["clients"] = h.prefill_instances * h.prefill.layout.dp * h.prefill.point.concurrency +
                   h.decode_instances * h.decode.layout.dp * h.decode.point.concurrency;
    // Per request: the pairing's GPUs for 1 / rate seconds.
    add_energy_keys(j, s.system,
                    {h.energy, 1.0 / h.requests_per_s, static_cast<double>(h.gpus), static_cast<double>(s.inference.output_len), 1.0},
                    true);
    return j;
}

std::string disagg_csv(const Scenario& s, const DisaggResult& d) {
    std::string o = csv_line({"prefill_instances", "prefill_tp", "prefill_pp", "prefill_dp", "prefill_ep", "prefill_concurrency",
                              "decode_instances", "decode_tp", "decode_pp", "decode_dp", "decode_ep", "decode_concurrency", "gpus_used",
                              "kv_transfer_s", "ttft_s", "tpot_s", "output_tokens_per_s_per_gpu", "output_tokens_per_s_per_user",
                              "energy_per_token_j", "prefill_etp", "decode_etp"});
    for (const DisaggHit& h : d.best) {
        const ParallelConfig &p = h.prefill.layout, &q = h.decode.layout;
        o += csv_line({std::to_string(h.prefill_instances), std::to_string(p.tp), std::to_string(p.pp), std::to_string(p.dp),
                       std::to_string(p.ep), std::to_string(h.prefill.point.concurrency), std::to_string(h.decode_instances),
                       std::to_string(q.tp), std::to_string(q.pp), std::to_string(q.dp), std::to_string(q.ep),
                       std::to_string(h.decode.point.concurrency), std::to_string(h.gpus), csv_number(h.kv_transfer_s),
                       csv_number(h.ttft_s), csv_number(h.tpot_s), csv_number(h.output_tokens_per_s_per_gpu),
                       csv_number(h.output_tokens_per_s_per_user), energy_cell(s.system, h.energy.total_j(), s.inference.output_len),
                       std::to_string(p.expert_tp()), std::to_string(q.expert_tp())});
    }
    return o;
}

// " J/token" cells: a column only when the system has energy figures.
std::string energy_header(const SystemSpec& sys) { return sys.energy.known() ? fmt::format(" {:>10}", "J/token") : std::string(); }
std::string energy_column(const SystemSpec& sys, double energy_per_request_j, int64_t tokens) {
    return sys.energy.known() ? fmt::format(" {:>10.4g}", energy_per_request_j / static_cast<double>(tokens)) : std::string();
}

std::string disagg_text(const Scenario& s, const DisaggResult& d, const ServeSearchResult& agg) {
    std::string o = fmt::format("\nDisaggregated prefill/decode (xPyD) under the targets: {} prefill points, {} decode layouts\n",
                                d.prefill_points, d.decode_points);
    if (d.best.empty()) return o + "  none: no pairing of pools meets the targets in memory\n";
    o += fmt::format("  {:>14} {:>5} {:>14} {:>5} {:>5} {:>10} {:>10} {:>10} {:>10} {:>10}{}\n", "prefill xP", "C", "decode yD", "C",
                     "GPUs", "KV move", "TTFT", "TPOT", "tok/s/GPU", "tok/s/user", energy_header(s.system));
    auto inst = [](int64_t n, const ParallelConfig& p) {
        return p.expert_tp() < p.tp   ? fmt::format("{}x tp{}pp{}dp{}ep{}", n, p.tp, p.pp, p.dp, p.ep)
               : p.expert_tp() > p.tp ? fmt::format("{}x tp{}pp{}dp{}ep{}etp{}", n, p.tp, p.pp, p.dp, p.ep, p.expert_tp())
                                      : fmt::format("{}x tp{}pp{}dp{}", n, p.tp, p.pp, p.dp);
    };
    for (const DisaggHit& h : d.best)
        o += fmt::format("  {:>14} {:>5} {:>14} {:>5} {:>5} {:>10} {:>10} {:>10} {:>10.1f} {:>10.1f}{}\n", inst(h.prefill_instances, h.prefill.layout),
                         h.prefill.point.concurrency, inst(h.decode_instances, h.decode.layout), h.decode.point.concurrency, h.gpus,
                         seconds(h.kv_transfer_s), seconds(h.ttft_s), seconds(h.tpot_s), h.output_tokens_per_s_per_gpu,
                         h.output_tokens_per_s_per_user, energy_column(s.system, h.energy.total_j(), s.inference.output_len));
    if (!agg.best.empty())
        o += fmt::format("  best disaggregated / best aggregated: {:.2f}x tokens/s/GPU\n",
                         d.best.front().output_tokens_per_s_per_gpu / agg.best.front().point.output_tokens_per_s_per_gpu);
    return o;
}

std::string hits_text(const Scenario& s, int64_t gpus, const ServeTargets& t, const ServeSearchResult& r) {
    auto target = [](double x) { return x > 0 ? seconds(x) : std::string("none"); };
    std::string o = fmt::format("Serving search: {} on {} x {} ({}), {} in / {} out; targets TTFT {}, TPOT {}\n",
                                s.model.name, gpus, s.system.accel.name, s.system.name, s.inference.input_len,
                                s.inference.output_len, target(t.ttft_s), target(t.tpot_s));
    o += fmt::format("{} layouts, {} steady states evaluated\n", r.layouts, r.points);
    auto table = [&](const std::vector<ServeHit>& hs) {
        o += fmt::format("  {:>3} {:>3} {:>3} {:>3} {:>3} {:>7} {:>12} {:>12} {:>12} {:>12}{}\n", "tp", "pp", "dp", "ep", "etp",
                         "C/repl", "TTFT", "TPOT", "tok/s/GPU", "tok/s/user", energy_header(s.system));
        for (const ServeHit& h : hs)
            o += fmt::format("  {:>3} {:>3} {:>3} {:>3} {:>3} {:>7} {:>12} {:>12} {:>12.1f} {:>12.1f}{}\n", h.layout.tp, h.layout.pp,
                             h.layout.dp, h.layout.ep, h.layout.expert_tp(), h.point.concurrency, seconds(h.point.ttft_s), seconds(h.point.tpot_s),
                             h.point.output_tokens_per_s_per_gpu, h.point.output_tokens_per_s_per_user,
                             energy_column(s.system, h.point.energy_per_request_j, s.inference.output_len));
    };
    o += t.objective == ServeObjective::tokens_per_joule ? "\nBest under the targets (output tokens per joule):\n"
                                                        : "\nBest under the targets (output tokens/s per GPU):\n";
    if (r.best.empty())
        o += "  none: no layout and concurrency meets the targets in memory\n";
    else
        table(r.best);
    o += "\nPareto front (tokens/s/GPU against tokens/s/user, all layouts and concurrencies):\n";
    table(r.pareto);
    return o;
}

}  // namespace

Runner add_serve_search(CLI::App& app, const Io& io) {
    struct Opts {
        std::string scenario;
        std::vector<std::string> sets;
        std::string format = "text";
        double ttft_ms = 0, tpot_ms = 0;
        int64_t gpus = 0;
        size_t top = 10;
        bool no_progress = false;
        bool disaggregated = false;
        std::string objective = "tokens_per_gpu";
        double headroom = 0;
        std::string emit;
        QuickFlags quick;
    };
    auto o = std::make_shared<Opts>();
    CLI::App* cmd = app.add_subcommand(
        "serve-search", "Best serving layouts and concurrencies under TTFT/TPOT targets; Pareto front of tokens/s/GPU vs tokens/s/user");
    cmd->add_option("SCENARIO", o->scenario, "scenario JSON file, '-' for stdin (its inference section: lengths, precision; or none: --model and --system)");
    cmd->add_option("--set", o->sets, "override a field: PATH=VALUE (repeatable)")->take_all();
    add_quick_flags(cmd, o->quick, kQuickInference);
    cmd->add_option("--ttft-ms", o->ttft_ms, "time-to-first-token target in ms (0: none)")->check(CLI::Range(0.0, 1e9));
    cmd->add_option("--tpot-ms", o->tpot_ms, "time-per-output-token target in ms (0: none)")->check(CLI::Range(0.0, 1e9));
    cmd->add_option("--gpus", o->gpus, "GPUs to serve on (default: the scenario's tp x pp x dp)")->check(CLI::Range(int64_t{1}, int64_t{4096}));
    cmd->add_option("--top", o->top, "configurations to list")->check(CLI::Range(size_t{1}, size_t{1000}));
    cmd->add_option("--format", o->format, "output format (html: one self-contained page with charts)")
        ->check(CLI::IsMember({"text", "json", "csv", "html"}));
    cmd->add_flag("--no-progress", o->no_progress, "no progress bar even on a terminal");
    cmd->add_option("--memory-headroom", o->headroom, "fraction of GPU memory kept free (0.1: weights and KV cache use at most 90%)")
        ->check(CLI::Range(0.0, 0.9));
    cmd->add_flag("--disaggregated", o->disaggregated,
                  "also search separate prefill and decode pools (xPyD) within --gpus, the KV cache moved between them");
    cmd->add_option("--objective", o->objective,
                    "what the best maximises: tokens_per_gpu (output tokens/s per GPU; at one price per GPU-hour also tokens per "
                    "dollar) or tokens_per_j (output tokens per joule; needs the system's energy figures)")
        ->check(CLI::IsMember({"tokens_per_gpu", "tokens_per_j"}));
    cmd->add_option("--emit", o->emit, "print the best configuration as that engine's launch command (instead of the table)")
        ->check(CLI::IsMember(serving_launch_targets()))
        ->excludes("--format")
        ->excludes("--disaggregated");
    return [cmd, o, &io]() -> int {
        if (!cmd->parsed()) return -1;
        if (auto missing = missing_scenario(o->scenario, o->quick)) return bad_input(io, *missing);
        // The launch settings of an engine come from a search under that engine's defaults.
        if (!o->emit.empty() && o->quick.engine.empty()) o->quick.engine = o->emit;
        auto s = load(io, o->scenario, o->sets, Purpose::infer, &o->quick);
        if (!s) return bad_input(io, s.error());
        const double capacity = s->system.accel.memory_bytes;
        s.value().system.accel.memory_bytes *= 1.0 - o->headroom;
        const std::string headroom = o->headroom > 0 ? fmt::format("Memory headroom: {:g}% (weights, activations and KV cache use at most {} of {})\n",
                                                                   100 * o->headroom, gib(s->system.accel.memory_bytes), gib(capacity))
                                                     : std::string();
        const ServeObjective objective = o->objective == "tokens_per_j" ? ServeObjective::tokens_per_joule : ServeObjective::tokens_per_gpu;
        if (objective == ServeObjective::tokens_per_joule && !s->system.energy.known())
            return bad_input(io, InputError{"--objective", "tokens_per_j",
                                            fmt::format("needs the system's energy figures (system.energy.tdp_w > 0), which '{}' does not give",
                                                        s->system.name)});
        note_assumptions(io, *s, Purpose::infer);
        const int64_t gpus = o->gpus > 0 ? o->gpus : s->parallel.tp * s->parallel.pp * s->parallel.dp;
        const ServeTargets t{o->ttft_ms / 1e3, o->tpot_ms / 1e3, objective};
        const bool bar = !o->no_progress && io.err_is_terminal;
        auto progress = [&](int64_t done, int64_t total) {
            constexpr int kWidth = 24;
            const int filled = total > 0 ? static_cast<int>(kWidth * done / total) : kWidth;
            io.err << fmt::format("\r\033[K{} GPUs [{}{}] {}/{} layouts", gpus, std::string(static_cast<size_t>(filled), '#'),
                                     std::string(static_cast<size_t>(kWidth - filled), '.'), done, total)
                      << std::flush;
        };
        const ServeSearchResult r =
            serve_search({s->model, s->system, s->inference}, gpus, t, o->top, bar ? std::function<void(int64_t, int64_t)>(progress) : nullptr);
        if (bar) io.err << "\r\033[K" << std::flush;
        Json j = result_json(*s, gpus, t, r);
        if (o->headroom > 0) j["memory_headroom"] = o->headroom;
        // Nothing fits at all (no point even on the Pareto front): say which GPU counts would hold one.
        std::string nearest;
        if (r.pareto.empty()) {
            const std::vector<int64_t> near = nearest_fitting_counts({s->model, s->system, s->inference}, gpus);
            j["nearest_gpus"] = near;
            for (int64_t n : near) nearest += fmt::format("{}{}", nearest.empty() ? "" : " or ", n);
            nearest = nearest.empty() ? "  no GPU count within 2x of this one holds the model\n"
                                      : fmt::format("  the nearest GPU counts where a layout fits in memory: {}\n", nearest);
        }
        if (!o->emit.empty()) {
            if (r.best.empty())
                return bad_input(io, InputError{"--emit", o->emit, "a configuration that meets the targets: none does; relax --ttft-ms or --tpot-ms"});
            Expected<std::string> launch = serving_launch(*s, r.best.front().layout, r.best.front().point, o->emit);
            if (!launch) return bad_input(io, launch.error());
            return emit_checked(io, j, launch.value());
        }
        std::optional<DisaggResult> d;
        if (o->disaggregated) {
            d = disaggregated_search({s->model, s->system, s->inference}, gpus, t, o->top);
            Json list = Json::array();
            for (const DisaggHit& h : d->best) list.push_back(disagg_json(*s, h));
            j["disaggregated"] = list;
        }
        const auto text = [&] {
            std::string hits = hits_text(*s, gpus, t, r);
            const size_t front = hits.find("\nPareto front");
            hits.insert(front == std::string::npos ? hits.size() : front, nearest);
            return headroom + hits + (d ? disagg_text(*s, *d, r) : std::string());
        };
        if (o->format == "html") {
            const auto label = [](const ServeHit& h) {
                const ParallelConfig& p = h.layout;
                return fmt::format("tp{} pp{} dp{}{} C{}", p.tp, p.pp, p.dp, p.ep > 1 ? fmt::format(" ep{}", p.ep) : "", h.point.concurrency);
            };
            // Alternatives, not parts of a whole: no shares.
            BarChart best{"Output tokens/s per GPU of the configurations that meet the targets", "tokens/s", 1.0, {}, false};
            for (const ServeHit& h : r.best)
                best.bars.emplace_back(label(h), h.point.output_tokens_per_s_per_gpu);
            BarChart front{"Pareto front: output tokens/s per GPU, by tokens/s per user", "tokens/s", 1.0, {}, false};
            for (const ServeHit& h : r.pareto)
                front.bars.emplace_back(fmt::format("{:.1f} tokens/s/user: {}", h.point.output_tokens_per_s_per_user, label(h)),
                                        h.point.output_tokens_per_s_per_gpu);
            return emit_html(io, j, html_title("serve-search", *s, gpus), text(), {best, front});
        }
        switch (parse_format(o->format)) {
            case Format::json: return emit_json(io, j);
            case Format::csv: return emit_checked(io, j, d ? disagg_csv(*s, *d) : hits_csv(*s, r));
            case Format::text: return emit_checked(io, j, text());
        }
        return kExitOk;
    };
}

}  // namespace sm::cli
