// `scalemodel search`: the best parallel layouts of a scenario for one GPU count, or the best
// layout per GPU count (the scaling curve) when --gpus is a list or a range.
#include <unistd.h>

#include <cmath>
#include <iostream>
#include <thread>

#include <fmt/format.h>

#include "cli/commands.hpp"
#include "cli/common.hpp"
#include "cli/quick_flags.hpp"
#include "cli/interrupt.hpp"
#include "io/launch_settings.hpp"
#include "io/provenance.hpp"
#include "search/frameworks.hpp"
#include "search/search.hpp"

namespace sm::cli {

namespace {

std::string count(int64_t n) {
    std::string s = std::to_string(n), o;
    for (size_t i = 0; i < s.size(); ++i) {
        if (i && (s.size() - i) % 3 == 0) o += ',';
        o += s[i];
    }
    return o;
}

std::string rate(double per_s) {
    if (per_s >= 1e6) return fmt::format("{:.2f} M", per_s / 1e6);
    if (per_s >= 1e3) return fmt::format("{:.1f} k", per_s / 1e3);
    return fmt::format("{:.0f} ", per_s);
}

// What a score means to a person: the objective's own value and unit.
std::string score_text(Objective o, double score) {
    switch (o) {
        case Objective::step_time: return "step " + seconds(score);
        case Objective::tokens_per_s_per_gpu: return fmt::format("{:.1f} tokens/s/GPU", -score);
        case Objective::mfu: return fmt::format("MFU {:.1f}%", -100 * score);
        case Objective::energy: return fmt::format("{:.4g} MJ per step", score / 1e6);
        case Objective::cost: return fmt::format("${:.4g} per step", score);
    }
    return "";
}

// One line on a terminal's stderr, redrawn in place.
ProgressFn progress_bar(const Io& io, Objective obj, int64_t gpus) {
    return [&io, obj, gpus](const SearchProgress& p) {
        const double frac = p.total > 0 ? std::min(1.0, static_cast<double>(p.done) / static_cast<double>(p.total)) : 0.0;
        constexpr int kWidth = 24;
        const int filled = static_cast<int>(frac * kWidth);
        const double per_s = p.elapsed_s > 0 ? static_cast<double>(p.done) / p.elapsed_s : 0.0;
        const double left_s = p.done > 0 ? p.elapsed_s * static_cast<double>(p.total - p.done) / static_cast<double>(p.done) : 0.0;
        io.err << fmt::format("\r\033[K{} GPUs [{}{}] {:3.0f}%  {}/{} layouts  {}layouts/s  best {}  ~{:.1f} s left", gpus,
                                 std::string(static_cast<size_t>(filled), '#'), std::string(static_cast<size_t>(kWidth - filled), '.'),
                                 100 * frac, count(p.done), count(p.total), rate(per_s),
                                 p.have_best ? score_text(obj, p.best_score) : std::string("-"), left_s)
                  << std::flush;
    };
}

void clear_progress(const Io& io) { io.err << "\r\033[K" << std::flush; }

Scenario with_layout(const Scenario& s, const ParallelConfig& p) {
    Scenario out = s;
    out.parallel = p;
    return out;
}

Json hit_json(const Scenario& s, const SearchHit& h, double tokens) {
    Json j = train_json(with_layout(s, h.layout), h.result);
    if (tokens > 0) {
        j["training_days"] = tokens / h.result.tokens_per_s / 86400.0;
        // The run's energy and cost: the token budget at the step's rates.
        if (j.contains("energy_per_token_j")) j["training_energy_j"] = tokens * j["energy_per_token_j"].get<double>();
        if (j.contains("cost_per_million_tokens_usd"))
            j["training_cost_usd"] = tokens / 1e6 * j["cost_per_million_tokens_usd"].get<double>();
    }
    return j;
}

Json stats_json(const SearchStats& st) {
    return Json{{"evaluated", st.evaluated},
                {"feasible", st.feasible},
                {"elapsed_s", st.elapsed_s},
                {"candidates", st.candidates},
                {"pruned", {{"network_domain", st.pruned_domain}, {"memory", st.pruned_memory}}},
                {"layer_costings", st.layer_costings},
                {"evaluations_per_s", st.elapsed_s > 0 ? static_cast<double>(st.evaluated) / st.elapsed_s : 0.0},
                {"threads", st.threads},
                {"interrupted", st.interrupted}};
}

// The nearest GPU counts below and above o.gpus with some valid layout, within 256 of it: "992 or
// 1,008", or "" when there is none.
std::string nearest_valid_counts(const TrainContext& c, const LayoutConstraints& f, SearchOptions o) {
    const int64_t n = o.gpus;
    int64_t below = 0, above = 0;
    for (int64_t k = 1; k <= 256 && (below == 0 || above == 0); ++k) {
        if (below == 0 && n - k >= 1) {
            o.gpus = n - k;
            if (candidate_layouts(c, f, o) > 0) below = n - k;
        }
        if (above == 0) {
            o.gpus = n + k;
            if (candidate_layouts(c, f, o) > 0) above = n + k;
        }
    }
    if (below > 0 && above > 0) return fmt::format("{} or {}", count(below), count(above));
    return below > 0 ? count(below) : above > 0 ? count(above) : "";
}

std::string held_text(const std::set<std::string>& given, const Json& par) {
    std::string o;
    for (const std::string& k : given) o += (o.empty() ? "" : ", ") + k + "=" + par[k].dump();
    return o.empty() ? "nothing (every field searched)" : o;
}

std::string header_text(const Scenario& s, const SearchOptions& o, double tokens) {
    std::string t = fmt::format("Layout search: {} ({:.1f}B params) on {} ({}), global batch {} x {} tokens, {}\n", s.model.name,
                                count_params(s.model).total() / 1e9, s.system.accel.name, s.system.name,
                                s.training.global_batch, s.model.seq_len, to_string(s.training.precision));
    t += provenance_text(s);
    t += fmt::format("Objective: {}   held fixed: {}   MFU: of the {} matrix peak\n", to_string(o.objective),
                     held_text(s.parallel_given, parallel_json(s.parallel)), to_string(s.training.precision));
    if (tokens > 0) t += fmt::format("Token budget: {:.4g} tokens\n", tokens);
    return t;
}

// Twins: layouts this close (relative) to a better one that differ from it only in ZeRO stage,
// rank order or CP kind; folded from a list this many times deeper than --top.
constexpr double kTwinTolerance = 0.005;
constexpr size_t kTwinDepth = 4;

// What --framework and --memory-headroom narrowed, when given.
std::string limits_text(const std::string& framework, double headroom, double capacity_bytes) {
    std::string t;
    if (const Framework* f = framework_named(framework))
        t += fmt::format("Framework: {}, the layouts it ships ({})\n", f->name, f->source);
    if (headroom > 0)
        t += fmt::format("Memory headroom: {:g}% (layouts use at most {} of {})\n", 100 * headroom, gib((1 - headroom) * capacity_bytes),
                         gib(capacity_bytes));
    return t;
}

// `gpus`: the search's GPU count (0: several), for the domain rule's ranks per domain.
std::string stats_text(const SearchStats& st, const SystemSpec& sys, int64_t gpus) {
    const double per_s = st.elapsed_s > 0 ? static_cast<double>(st.evaluated) / st.elapsed_s : 0.0;
    std::string t = fmt::format("{} valid layouts; in {:.3f} s {} costed ({}layouts/s on {} threads, {} per-layer costings), {} fit in memory",
                                count(st.candidates), st.elapsed_s, count(st.evaluated), rate(per_s), st.threads,
                                count(st.layer_costings), count(st.feasible));
    t += fmt::format("; pruned {} (tp beyond the {}-GPU scale-up domain) and {} (weights + optimizer state alone overflow memory)\n",
                     count(st.pruned_domain), sys.used_per_domain(gpus), count(st.pruned_memory));
    if (st.interrupted) t += "INTERRUPTED: the best found so far.\n";
    return t;
}

std::string table_header(bool with_gpus, bool with_days) {
    return fmt::format("\n {:>3} {}{:>4} {:>3} {:>5} {:>3} {:>3} {:>3} {:>3} {:>4} {:>4} {:>9} {:>12} {:>10} {:>6} {:>10}{}  {:<11} {}\n", "#",
                       with_gpus ? fmt::format("{:>6} ", "gpus") : "", "tp", "pp", "dp", "cp", "ep", "vp", "SP", "mb", "ZeRO",
                       "recompute", "step time", "tok/s/GPU", "MFU", "memory", with_days ? fmt::format(" {:>8}", "days") : "",
                       "order", "cp kind");
}

std::string table_row(size_t rank, const SearchHit& h, bool with_gpus, double tokens) {
    const ParallelConfig& p = h.layout;
    const TrainResult& r = h.result;
    return fmt::format(" {:>3} {}{:>4} {:>3} {:>5} {:>3} {:>3} {:>3} {:>3} {:>4} {:>4} {:>9} {:>12} {:>10.1f} {:>5.1f}% {:>10}{}  {:<11} {}\n", rank,
                       with_gpus ? fmt::format("{:>6} ", r.gpus) : "",
                       p.summa() ? fmt::format("{}x{}", p.tp_rows, p.tp_cols()) : std::to_string(p.tp), p.pp, p.dp, p.cp, p.ep, p.vp,
                       p.sequence_parallel ? "on" : "-", p.microbatch, p.zero, to_string(p.recompute), seconds(r.step_time_s),
                       r.tokens_per_s_per_gpu, 100 * r.mfu, gib(r.memory.peak_bytes_per_gpu),
                       tokens > 0 ? fmt::format(" {:>8.1f}", tokens / r.tokens_per_s / 86400.0) : "", to_string(p.order),
                       p.cp > 1 ? to_string(p.cp_kind) : "-");
}

// One header, also when nothing was found: its columns are those of any result of this scenario.
std::string csv_of(const Scenario& s, const Json& results, double tokens) {
    std::string o = csv_header(hit_json(s, SearchHit{s.parallel, TrainResult{}, 0.0}, tokens));
    for (const Json& r : results) o += csv_row(r);
    return o;
}

}  // namespace

Runner add_search(CLI::App& app, const Io& io) {
    struct Opts {
        std::string scenario;
        std::vector<std::string> sets;
        std::string gpus;
        size_t top = 10;
        unsigned threads = 0;
        std::string objective = "step_time";
        std::string format = "text";
        double tokens = 0;
        bool cross_domain_tp = false;
        bool no_progress = false;
        bool keep_twins = false;
        std::string framework;
        std::string emit;
        double headroom = 0;
        QuickFlags quick;
    };
    auto o = std::make_shared<Opts>();
    CLI::App* cmd = app.add_subcommand("search", "Find the best parallel layouts (or the best per GPU count)");
    cmd->add_option("SCENARIO", o->scenario, "scenario JSON file, '-' for stdin; fields given in `parallel` are held fixed "
                    "(or none: --model and --system)");
    cmd->add_option("--set", o->sets, "override a field: PATH=VALUE (repeatable)")->take_all();
    cmd->add_option("--gpus", o->gpus,
                    "GPU count, list (1024,2048) or range START:STOP[:xF|:+S] (256:16384:x2) for a scaling curve "
                    "(default: tp*pp*dp*cp when all four are given)");
    add_quick_flags(cmd, o->quick, kQuickTraining);
    cmd->add_option("--top", o->top, "results to keep")->check(CLI::Range(size_t{1}, size_t{10000}));
    cmd->add_option("--threads", o->threads, "worker threads (default: all cores)")->check(CLI::Range(1u, 1024u));
    cmd->add_option("--objective", o->objective, "what 'best' means")
        ->check(CLI::IsMember({"step_time", "tokens_per_s_per_gpu", "mfu", "energy", "cost"}));
    cmd->add_option("--format", o->format, "output format (html: one self-contained page with charts)")
        ->check(CLI::IsMember({"text", "json", "csv", "html"}));
    cmd->add_option("--tokens", o->tokens, "token budget: also report training days (e.g. 300e9)")
        ->check(CLI::Range(1.0, 1e18));
    cmd->add_flag("--cross-domain-tp", o->cross_domain_tp, "also search tensor parallelism beyond one scale-up domain");
    cmd->add_flag("--no-progress", o->no_progress, "no progress bar even on a terminal");
    std::vector<std::string> names;
    for (const Framework& f : frameworks()) names.emplace_back(f.name);
    cmd->add_option("--framework", o->framework,
                    "only layouts this framework ships: 1D tensor parallelism, its rank order, ZeRO stages, context-parallel kinds "
                    "and pipeline schedules")
        ->check(CLI::IsMember(names));
    cmd->add_option("--memory-headroom", o->headroom, "fraction of GPU memory kept free (0.1: layouts use at most 90%)")
        ->check(CLI::Range(0.0, 0.9));
    cmd->add_option("--emit", o->emit, "print the best layout as that framework's launch arguments (instead of the table)")
        ->check(CLI::IsMember(training_launch_targets()))
        ->excludes("--format");
    cmd->add_flag("--keep-twins", o->keep_twins,
                  "list layouts within 0.5% that differ from a better one only in ZeRO stage, rank order or CP kind (folded by default)");
    return [cmd, o, &io]() -> int {
        if (!cmd->parsed()) return -1;
        if (!std::isfinite(o->tokens) || o->tokens < 0)
            return bad_input(io, {"--tokens", fmt::format("{}", o->tokens), "a token budget from 1 to 1e18, e.g. 300e9"});
        if (auto missing = missing_scenario(o->scenario, o->quick)) return bad_input(io, *missing);
        auto loaded = load(io, o->scenario, o->sets, Purpose::search, &o->quick);
        if (!loaded) return bad_input(io, loaded.error());
        Scenario s = std::move(loaded).value();
        if (auto missing = missing_training_workload(s)) return bad_input(io, *missing);
        const double capacity = s.system.accel.memory_bytes;
        s.system.accel.memory_bytes *= 1.0 - o->headroom;
        LayoutConstraints fixed = constraints_from(s.parallel, s.parallel_given);
        if (!o->framework.empty()) {
            Expected<LayoutConstraints> narrowed = restrict_to(fixed, *framework_named(o->framework));
            if (!narrowed) return bad_input(io, narrowed.error());
            fixed = narrowed.value();
        }
        if (o->objective == "energy" && !s.system.energy.known())
            return bad_input(io, {"--objective", "energy", "a system with energy figures (system.energy; docs/PRESET_SCHEMA.md)"});
        if (o->objective == "cost" && !(s.system.price_per_gpu_hour > 0))
            return bad_input(io, {"--objective", "cost", "a system with a price (system.price_per_gpu_hour > 0)"});
        const std::set<std::string>& given = s.parallel_given;

        std::vector<int64_t> counts;
        if (!o->gpus.empty()) {
            auto parsed = parse_gpu_counts(o->gpus);
            if (!parsed) return bad_input(io, parsed.error());
            counts = parsed.value();
        } else if (given.count("tp") && given.count("pp") && given.count("dp") && given.count("cp")) {
            counts = {s.parallel.gpus()};
        } else {
            return bad_input(io, {"--gpus", "nothing",
                              "a GPU count (4096), a list or a range (256:16384:x2); required unless parallel.tp, pp, dp and cp are all given"});
        }

        note_assumptions(io, s, Purpose::search);
        SearchOptions opt;
        const bool curve = counts.size() > 1;
        if (curve && !o->emit.empty()) return bad_input(io, {"--emit", o->emit, "one GPU count (--gpus N): the launch settings of its best layout"});
        // Twins are folded from a deeper list, so that --top K still shows K distinct layouts.
        const bool fold = !curve && !o->keep_twins;
        opt.top_k = fold ? o->top * kTwinDepth : o->top;
        opt.threads = o->threads > 0 ? o->threads : std::max(1u, std::thread::hardware_concurrency());
        opt.objective = *parse_objective(o->objective);
        opt.tp_within_domain = !o->cross_domain_tp;
        opt.stop = &sigint_flag();
        const bool bar = !o->no_progress && io.err_is_terminal;
        const TrainContext ctx{s.model, s.system, s.training};
        const Format fmt_out = parse_format(o->format);

        SigintGuard guard;
        std::vector<std::pair<int64_t, SearchResult>> runs;
        for (int64_t n : counts) {
            opt.gpus = n;
            SearchResult r = search_layouts(ctx, fixed, opt,
                                            bar ? progress_bar(io, opt.objective, n) : ProgressFn{});
            if (bar) clear_progress(io);
            const bool stopped = r.stats.interrupted;
            runs.emplace_back(n, std::move(r));
            if (stopped) break;
        }
        const bool interrupted = runs.back().second.stats.interrupted;

        if (!curve) {
            const SearchResult& r = runs.front().second;
            if (r.stats.candidates == 0) {
                opt.gpus = counts.front();
                const std::string near = nearest_valid_counts(ctx, fixed, opt);
                return bad_input(io, {"--gpus", std::to_string(counts.front()),
                                  fmt::format("no valid layout of this many GPUs for {} with global batch {}{}{}", s.model.name,
                                              s.training.global_batch,
                                              given.empty() ? "" : " and " + held_text(given, parallel_json(s.parallel)) + " held fixed",
                                              near.empty() ? "" : "; the nearest GPU counts with one: " + near)});
            }
            if (r.best.empty() && !o->emit.empty())
                return bad_input(io, {"--emit", o->emit, "a layout that fits in memory: none does at this GPU count"});
            if (r.best.empty() && !interrupted)
                io.err << fmt::format("scalemodel: warning: no layout of {} GPUs fits in {} per GPU ({} overflow on weights, "
                                         "gradients and optimizer state alone, {} more once activations count)\n",
                                         counts.front(), gib(s.system.accel.memory_bytes), count(r.stats.pruned_memory),
                                         count(r.stats.evaluated));
            std::vector<FoldedHit> shown;
            if (fold)
                shown = fold_twins(r.best, o->top, kTwinTolerance);
            else
                for (const SearchHit& h : r.best) shown.push_back({h, 0});
            int64_t folded = 0;
            Json results = Json::array();
            for (const FoldedHit& f : shown) {
                results.push_back(hit_json(s, f.hit, o->tokens));
                if (fold) results.back()["twins"] = f.twins;
                folded += f.twins;
            }
            Json doc = stats_json(r.stats);
            doc["gpus"] = counts.front();
            doc["objective"] = to_string(opt.objective);
            doc["results"] = results;
            doc["overrides"] = overrides_json(o->sets);
            if (!o->emit.empty()) {
                Expected<std::string> launch = training_launch(s, shown.front().hit.layout, o->emit);
                if (!launch) return bad_input(io, launch.error());
                return emit_checked(io, doc, launch.value());
            }
            const auto text = [&] {
                std::string t = header_text(s, opt, o->tokens) + limits_text(o->framework, o->headroom, capacity) +
                                stats_text(r.stats, s.system, opt.gpus);
                if (!shown.empty()) {
                    t += table_header(false, o->tokens > 0);
                    for (size_t i = 0; i < shown.size(); ++i) t += table_row(i + 1, shown[i].hit, false, o->tokens);
                    if (folded > 0)
                        t += fmt::format("({} more within {}% of a row above, differing from it only in ZeRO stage, rank order or "
                                         "CP kind, folded into it: --keep-twins lists them)\n",
                                         folded, 100 * kTwinTolerance);
                    t += "\nThe best layout in detail:\n\n" + train_text(with_layout(s, shown.front().hit.layout), shown.front().hit.result);
                }
                return t;
            };
            int rc = kExitOk;
            if (o->format == "html") {
                BarChart best{"Step time of the layouts found", "s", 1.0, {}, false};
                for (size_t i = 0; i < shown.size(); ++i)
                    best.bars.emplace_back(fmt::format("#{} {}", i + 1, layout_label(shown[i].hit.layout)), shown[i].hit.result.step_time_s);
                std::vector<BarChart> charts = {best};
                if (!results.empty())
                    for (BarChart& c : training_charts(results.front())) {
                        c.title = "The best layout: " + c.title;
                        charts.push_back(std::move(c));
                    }
                rc = emit_html(io, doc, html_title("search", s, counts.front()), text(), charts);
            } else {
                switch (fmt_out) {
                    case Format::json: rc = emit_json(io, doc); break;
                    case Format::csv: rc = emit_checked(io, doc, csv_of(s, results, o->tokens)); break;
                    case Format::text: rc = emit_checked(io, doc, text());
                }
            }
            return interrupted && rc == kExitOk ? kExitInterrupted : rc;
        }

        // The scaling curve: the best layout per GPU count (the best --top per count when given).
        const size_t per_count = cmd->count("--top") > 0 ? o->top : 1;
        SearchStats total;
        Json scaling = Json::array(), results = Json::array();
        std::string rows;
        for (const auto& [n, r] : runs) {
            total.candidates += r.stats.candidates;
            total.pruned_domain += r.stats.pruned_domain;
            total.pruned_memory += r.stats.pruned_memory;
            total.evaluated += r.stats.evaluated;
            total.feasible += r.stats.feasible;
            total.layer_costings += r.stats.layer_costings;
            total.elapsed_s += r.stats.elapsed_s;
            Json entry = stats_json(r.stats);
            entry["gpus"] = n;
            entry["found"] = !r.best.empty();
            scaling.push_back(entry);
            if (r.best.empty()) {
                rows += fmt::format(" {:>3} {:>6}  {}\n", "-", n,
                                    r.stats.candidates == 0 ? "no valid layout" : "no layout fits in memory");
                continue;
            }
            for (size_t i = 0; i < std::min(per_count, r.best.size()); ++i) {
                results.push_back(hit_json(s, r.best[i], o->tokens));
                rows += table_row(per_count == 1 ? results.size() : i + 1, r.best[i], true, o->tokens);
            }
        }
        total.threads = opt.threads;
        total.interrupted = interrupted;
        Json doc = stats_json(total);
        doc["objective"] = to_string(opt.objective);
        doc["gpus"] = counts;
        if (o->tokens > 0) doc["tokens"] = o->tokens;
        doc["scaling"] = scaling;
        doc["results"] = results;
        doc["overrides"] = overrides_json(o->sets);
        const std::string text = header_text(s, opt, o->tokens) + limits_text(o->framework, o->headroom, capacity) +
                                 stats_text(total, s.system, 0) +
                                 (per_count == 1 ? std::string("\nThe best layout per GPU count:\n")
                                                 : fmt::format("\nThe best {} layouts per GPU count:\n", per_count)) +
                                 table_header(true, o->tokens > 0) + rows;
        int rc = kExitOk;
        if (o->format == "html") {
            BarChart step{"Step time of the best layout per GPU count", "s", 1.0, {}, false};
            BarChart rate{"Tokens per second per GPU of the best layout per GPU count", "tokens/s", 1.0, {}, false};
            for (const auto& [n, r] : runs)
                if (!r.best.empty()) {
                    step.bars.emplace_back(fmt::format("{} GPUs", n), r.best.front().result.step_time_s);
                    rate.bars.emplace_back(fmt::format("{} GPUs", n), r.best.front().result.tokens_per_s_per_gpu);
                }
            const std::string title = fmt::format("scalemodel search: {} on {} to {} GPUs of {}", s.model.name, counts.front(), counts.back(), s.system.name);
            rc = emit_html(io, doc, title, text, {step, rate});
        } else {
            switch (fmt_out) {
                case Format::json: rc = emit_json(io, doc); break;
                case Format::csv: rc = emit_checked(io, doc, csv_of(s, results, o->tokens)); break;
                case Format::text: rc = emit_checked(io, doc, text);
            }
        }
        return interrupted && rc == kExitOk ? kExitInterrupted : rc;
    };
}

}  // namespace sm::cli
