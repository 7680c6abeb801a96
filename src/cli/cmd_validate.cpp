#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

#include <fmt/format.h>

#include "cli/commands.hpp"
#include "cli/common.hpp"
#include "io/csv.hpp"
#include "io/read_file.hpp"
#include "io/scenario.hpp"
#include "io/validation.hpp"

namespace sm::cli {

namespace {

// Rows are grouped by the study they come from: the id's first word.
// Rows of one study measuring different things (latency, first token, throughput) are grouped
// apart: the id's first word, then the metric when it is neither a step time nor a latency.
std::string family(const ValidationCase& c) {
    const std::string study = c.group.empty() ? c.id.substr(0, c.id.find('-')) : c.group;
    return c.metric == "step_time_s" || c.metric == "e2e_latency_s" ? study : study + " " + c.metric;
}
std::string unit(const std::string& metric) { return metric.ends_with("_s") ? "s" : "tok/s/GPU"; }

std::map<std::string, std::vector<ValidationCase>> by_family(const std::vector<ValidationCase>& cases) {
    std::map<std::string, std::vector<ValidationCase>> g;
    for (const auto& c : cases) g[family(c)].push_back(c);
    return g;
}

// The regimes docs/VALIDATION.md reports error by: accelerator generation, math precision, and
// (training rows) whether exposed communication is at least kCommBoundShare of the step.
using Groups = std::map<std::string, std::vector<ValidationCase>>;
std::vector<std::pair<std::string, Groups>> by_regime(const std::vector<ValidationCase>& cases) {
    Groups family, precision, comm;
    for (const auto& c : cases) {
        family[c.family].push_back(c);
        precision[c.precision].push_back(c);
        if (c.comm_share >= 0)
            comm[c.comm_share >= kCommBoundShare ? "communication-bound" : "compute-bound"].push_back(c);
    }
    return {{"accelerator", family}, {"precision", precision}, {"training regime", comm}};
}

// Rows by |error|, largest first.
std::vector<ValidationCase> worst_rows(std::vector<ValidationCase> cases, size_t n) {
    std::stable_sort(cases.begin(), cases.end(),
                     [](const ValidationCase& a, const ValidationCase& b) { return std::fabs(a.error) > std::fabs(b.error); });
    if (cases.size() > n) cases.resize(n);
    return cases;
}

// Where a bracketed row's measured step lies against its predictions under recompute none,
// selective and full, and the smallest |error| any of the three gives (a lower bound on the
// model's error for that row, whatever mode ran; 0 between two modes, where one could match).
enum class Bracket { faster, none_selective, selective_full, slower };
Bracket bracket_of(const BracketCase& b) {
    if (b.measured < b.predicted[0]) return Bracket::faster;
    if (b.measured <= b.predicted[1]) return Bracket::none_selective;
    if (b.measured <= b.predicted[2]) return Bracket::selective_full;
    return Bracket::slower;
}
std::string_view to_string(Bracket k) {
    switch (k) {
        case Bracket::faster: return "faster than every mode";
        case Bracket::none_selective: return "between none and selective";
        case Bracket::selective_full: return "between selective and full";
        case Bracket::slower: return "slower than every mode";
    }
    return "";
}
double bracket_floor(const BracketCase& b) {
    const Bracket k = bracket_of(b);
    if (k != Bracket::faster && k != Bracket::slower) return 0.0;
    double best = std::numeric_limits<double>::infinity();
    for (double p : b.predicted) best = std::min(best, std::fabs(p - b.measured) / b.measured);
    return best;
}

Json report_json(const ValidationReport& rep) {
    Json cases = Json::array();
    for (const auto& c : rep.cases)
        cases.push_back({{"id", c.id}, {"dataset", c.dataset}, {"metric", c.metric}, {"measured", c.measured},
                         {"predicted", c.predicted}, {"error", c.error}});
    auto summary_json = [](const ValidationSummary& s) {
        return Json{{"count", s.count}, {"mean_abs_error", s.mean_abs_error}, {"max_abs_error", s.max_abs_error},
                    {"worst", s.worst_id}};
    };
    Json groups = Json::object();
    for (const auto& [name, cs] : by_family(rep.cases)) groups[name] = summary_json(summarize(cs));
    Json regimes = Json::object();
    for (const auto& [kind, gs] : by_regime(rep.cases))
        for (const auto& [name, cs] : gs) regimes[kind][name] = summary_json(summarize(cs));
    Json bracketed = Json::array();
    for (const BracketCase& b : rep.bracketed)
        bracketed.push_back({{"id", b.id},
                             {"dataset", b.dataset},
                             {"measured", b.measured},
                             {"predicted", {{"none", b.predicted[0]}, {"selective", b.predicted[1]}, {"full", b.predicted[2]}}},
                             {"position", to_string(bracket_of(b))},
                             {"min_abs_error", bracket_floor(b)}});
    return Json{{"cases", cases}, {"summary", summary_json(summarize(rep.cases))}, {"groups", groups},
                {"regimes", regimes}, {"skipped", rep.skipped}, {"bracketed", bracketed}};
}

std::string report_csv(const ValidationReport& rep) {
    std::string o = csv_line({"id", "dataset", "metric", "layout", "measured", "predicted", "error"});
    for (const auto& c : rep.cases)
        o += csv_line({csv_field(c.id), csv_field(c.dataset), c.metric, csv_field(c.layout), csv_number(c.measured),
                       csv_number(c.predicted), csv_number(c.error)});
    return o;
}

std::string pct(double x) { return fmt::format("{:+.1f}%", 100 * x); }

std::string report_text(const ValidationReport& rep, bool markdown) {
    std::string o;
    const auto groups = by_family(rep.cases);
    const ValidationSummary all = summarize(rep.cases);
    if (markdown) {
        o += "# Validation\n\nGenerated by `scalemodel validate --format markdown` (`make docs`); do not edit by hand.\n";
        o += "Error is (predicted - measured) / measured of the step time (training) or end-to-end latency\n"
             "(inference); for groups named with a metric, of that metric (time to first token, output\n"
             "tokens/s per GPU of a static batch, or `_max`: at the best concurrency under continuous batching,\n"
             "`infer --max-throughput`). Every row of `data/validation/` is listed; rows the model cannot\n"
             "represent are listed at the end with the reason.\n\n";
        o += "## Summary\n\n| group | rows | mean abs error | worst abs error | worst row |\n|---|---:|---:|---:|---|\n";
        for (const auto& [name, cs] : groups) {
            const auto s = summarize(cs);
            o += fmt::format("| {} | {} | {:.1f}% | {:.1f}% | {} |\n", name, s.count, 100 * s.mean_abs_error,
                             100 * s.max_abs_error, s.worst_id);
        }
        o += fmt::format("| **all** | {} | {:.1f}% | {:.1f}% | {} |\n\n", all.count, 100 * all.mean_abs_error,
                         100 * all.max_abs_error, all.worst_id);
        o += fmt::format("## Error by regime\n\nEvery evaluated row by its accelerator generation, its math precision and, for training\n"
                         "rows, its regime: communication-bound when the predicted exposed communication (tensor-,\n"
                         "pipeline-, data-, context- and expert-parallel time not hidden behind compute) is at least\n"
                         "{:.0f}% of the predicted step time, compute-bound below.\n\n",
                         100 * kCommBoundShare);
        for (const auto& [kind, gs] : by_regime(rep.cases)) {
            o += "| " + kind + " | rows | mean abs error | worst abs error | worst row |\n|---|---:|---:|---:|---|\n";
            for (const auto& [name, cs] : gs) {
                const auto s = summarize(cs);
                o += fmt::format("| {} | {} | {:.1f}% | {:.1f}% | {} |\n", name, s.count, 100 * s.mean_abs_error,
                                 100 * s.max_abs_error, s.worst_id);
            }
            o += "\n";
        }
        const auto analysis = builtin_row_analysis();
        o += "## Worst rows\n\nThe rows with the largest errors, with the author's analysis of each (data/validation/analysis.json;\n"
             "documentation only, the model never reads it).\n\n| id | error | exposed comm | analysis |\n|---|---:|---:|---|\n";
        for (const auto& c : worst_rows(rep.cases, 12)) {
            const auto it = analysis.find(c.id);
            o += fmt::format("| {} | {} | {} | {} |\n", printable(c.id), pct(c.error),
                             c.comm_share >= 0 ? fmt::format("{:.0f}%", 100 * c.comm_share) : "-",
                             it == analysis.end() ? "(not analysed yet)" : it->second);
        }
        o += "\n";
        for (const auto& [name, cs] : groups) {
            o += fmt::format("## {}\n\nSource: {}\n\n| id | layout | measured | predicted | error |\n|---|---|---:|---:|---:|\n",
                             name, cs.front().source);
            for (const auto& c : cs)
                o += fmt::format("| {} | {} | {:.4g} {} | {:.4g} {} | {} |\n", printable(c.id), c.layout, c.measured,
                                 unit(c.metric), c.predicted, unit(c.metric), pct(c.error));
            o += "\n";
        }
        if (!rep.bracketed.empty()) {
            o += "## Rows with an unpublished recompute mode, bracketed\n\n"
                 "Training rows whose one unpublished input is the recompute mode are not evaluated: they are in\n"
                 "no mean above and are listed at the end. Here each is predicted under recompute none, selective\n"
                 "and full, and its measured step placed against the three. A row measured faster than every mode\n"
                 "is one the model predicts slow whatever ran, slower than every mode one it predicts fast; the\n"
                 "floor is the smallest |error| any mode gives (0 between two modes).\n\n";
            std::map<std::string, std::vector<const BracketCase*>> fam;
            for (const BracketCase& b : rep.bracketed) fam[b.family + " " + b.precision].push_back(&b);
            o += "| accelerator, precision | rows | faster than every mode | between | slower than every mode | mean floor |\n"
                 "|---|---:|---:|---:|---:|---:|\n";
            for (const auto& [name, bs] : fam) {
                size_t below = 0, above = 0;
                double floor = 0;
                for (const BracketCase* b : bs) {
                    below += bracket_of(*b) == Bracket::faster;
                    above += bracket_of(*b) == Bracket::slower;
                    floor += bracket_floor(*b);
                }
                o += fmt::format("| {} | {} | {} | {} | {} | {:.1f}% |\n", name, bs.size(), below, bs.size() - below - above, above,
                                 100 * floor / static_cast<double>(bs.size()));
            }
            o += "\n| id | layout | measured | none | selective | full | measured lies | floor |\n"
                 "|---|---|---:|---:|---:|---:|---|---:|\n";
            for (const BracketCase& b : rep.bracketed)
                o += fmt::format("| {} | {} | {:.4g} s | {:.4g} s | {:.4g} s | {:.4g} s | {} | {:.1f}% |\n", printable(b.id), b.layout,
                                 b.measured, b.predicted[0], b.predicted[1], b.predicted[2], to_string(bracket_of(b)),
                                 100 * bracket_floor(b));
            o += "\n";
        }
        if (!rep.contexts.empty()) {
            o += "## Data-set context\n\nOverrides applied to every row of a data set, from the source's own description of\n"
                 "its cluster and software (`data/validation/<set>.context.json`):\n\n";
            for (const auto& c : rep.contexts) {
                o += "- **" + c.dataset + "**: ";
                for (const auto& s : c.overrides) o += "`" + s + "` ";
                o += "\n  " + c.reason + "\n";
                for (const RowContext& r : c.rows) {
                    o += "  - rows with";
                    for (const auto& [column, text] : r.where) o += fmt::format(" {} \"{}\"", column, text);
                    o += ": ";
                    for (const auto& s : r.overrides) o += "`" + s + "` ";
                    o += "\n    " + r.reason + "\n";
                }
            }
            o += "\n";
        }
        if (!rep.skipped.empty()) {
            o += "## Rows not evaluated\n\n";
            for (const auto& s : rep.skipped) o += "- " + s + "\n";
        }
        return o;
    }
    o += fmt::format("{:<48} {:>10} {:>10} {:>8}\n", "case", "measured", "predicted", "error");
    for (const auto& c : rep.cases)
        o += fmt::format("{:<48} {:>10.4g} {:>10.4g} {:>8}\n", printable(c.id), c.measured, c.predicted, pct(c.error));
    o += "\n";
    for (const auto& [name, cs] : groups) {
        const auto s = summarize(cs);
        o += fmt::format("{:<14} {:>4} rows  mean |error| {:5.1f}%  worst {:5.1f}% ({})\n", name, s.count,
                         100 * s.mean_abs_error, 100 * s.max_abs_error, s.worst_id);
    }
    o += fmt::format("{:<14} {:>4} rows  mean |error| {:5.1f}%  worst {:5.1f}% ({})\n", "all", all.count,
                     100 * all.mean_abs_error, 100 * all.max_abs_error, all.worst_id);
    for (const auto& s : rep.skipped) o += "skipped: " + s + "\n";
    for (const BracketCase& b : rep.bracketed)
        o += fmt::format("bracketed: {} measured {:.4g} s; recompute none {:.4g}, selective {:.4g}, full {:.4g} s: {}\n", printable(b.id),
                         b.measured, b.predicted[0], b.predicted[1], b.predicted[2], to_string(bracket_of(b)));
    return o;
}

// A second context (--context) read after the data set's own: its models replace the same-named
// entries, its overrides and rows are added after the others'; the data set's reason is kept.
Expected<std::string> merged_context(const std::optional<std::string>& own, const std::string& extra, const std::string& extra_path) {
    Expected<Json> add = parse_scenario_text(extra, "--context " + quote_path(extra_path));
    if (!add) return add.error();
    if (!add.value().is_object()) return InputError{"--context", quote_path(extra_path), "a JSON object {reason, overrides, models, rows}"};
    if (!own) return extra;
    Expected<Json> base = parse_scenario_text(*own, "the data set's context");
    if (!base) return base.error();
    Json out = base.value();
    if (!out.is_object()) return *own;  // parse_context reports it
    for (const char* list : {"overrides", "rows"})
        if (add.value().contains(list) && add.value()[list].is_array())
            for (const Json& item : add.value()[list]) out[list].push_back(item);
    if (add.value().contains("models") && add.value()["models"].is_object())
        for (const auto& [name, entry] : add.value()["models"].items()) out["models"][name] = entry;
    if (!out.contains("reason") && add.value().contains("reason")) out["reason"] = add.value()["reason"];
    return out.dump();
}

}  // namespace

Runner add_validate(CLI::App& app, const Io& io) {
    struct Opts {
        std::string dataset;
        std::vector<std::string> sets;
        std::string format = "text";
        std::vector<std::string> contexts;
        std::string scenario;
    };
    auto o = std::make_shared<Opts>();
    CLI::App* cmd = app.add_subcommand("validate", "Compare predictions with published measurements");
    cmd->add_option("--dataset", o->dataset,
                    "a CSV in the layout of data/validation/, '-' for stdin (default: the built-in sets); a data-set "
                    "context file NAME.context.json beside NAME.csv, when there, is read too: its overrides apply to "
                    "every row");
    cmd->add_option("--context", o->contexts,
                    "a further data-set context file read after the data set's own: its models replace the same-named "
                    "entries (an architecture the data set's context marks unsupported, given as overrides), its "
                    "overrides and rows are added; with --dataset; repeatable, each read in order");
    cmd->add_option("--set", o->sets, "override a field in every row: PATH=VALUE (repeatable)")->take_all();
    cmd->add_option("--format", o->format, "output format (html: one self-contained page with each group's error charted)")
        ->check(CLI::IsMember({"text", "json", "markdown", "csv", "html"}));
    cmd->add_option("--scenario", o->scenario,
                    "print the scenario JSON the row with this id runs as (its columns with the contexts' and --set "
                    "overrides applied) instead of comparing; the command that predicts it goes to stderr");
    return [cmd, o, &io]() -> int {
        if (!cmd->parsed()) return -1;
        ValidationReport rep;
        if (o->dataset.empty() && !o->contexts.empty())
            return bad_input(io, {"--context", quote_path(o->contexts.front()), "only with --dataset (the built-in sets carry their own contexts)"});
        if (o->dataset.empty()) {
            rep = run_builtin_validation(o->sets, o->scenario);
        } else {
            Expected<std::string> text = read_bounded({o->dataset, "--dataset", "a CSV file"});
            if (!text) return bad_input(io, text.error());
            std::optional<std::string> context;
            std::string origin;
            if (o->dataset != "-") {
                const std::string ctx_path = context_path_for(o->dataset);
                origin = "data-set context file " + quote_path(ctx_path) + " beside the data set";
                auto c = read_if_present({ctx_path, "data-set context file beside the data set", "a JSON file of overrides"});
                if (!c) return bad_input(io, c.error());
                context = std::move(c).value();
            }
            for (const std::string& path : o->contexts) {
                Expected<std::string> extra = read_bounded({path, "--context", "a JSON file of overrides"});
                if (!extra) return bad_input(io, extra.error());
                Expected<std::string> merged = merged_context(context, extra.value(), path);
                if (!merged) return bad_input(io, merged.error());
                context = std::move(merged).value();
                origin = (origin.empty() ? "" : origin + " with ") + "--context " + quote_path(path);
            }
            auto r = run_validation(o->dataset == "-" ? "stdin" : o->dataset, text.value(), context, o->sets, origin, o->scenario);
            if (!r) return bad_input(io, r.error());
            rep = std::move(r).value();
        }
        if (!o->scenario.empty()) {
            const std::string shown = printable(o->scenario, 200);
            if (!rep.skipped.empty()) {
                // "id: reason", the id shown as run_validation shows it.
                const std::string reason = rep.skipped.front().substr(std::min(rep.skipped.front().size(), shown.size() + 2));
                return bad_input(io, {"--scenario", shown, "a row that is evaluated; this one is skipped (" + reason + ")"});
            }
            if (!rep.scenario)
                return bad_input(io, {"--scenario", shown,
                                      o->dataset.empty() ? "the id of a row of the built-in sets" : "the id of a row of the data set"});
            io.err << "row " << shown << " is predicted by: scalemodel " << rep.scenario_command << "\n";
            return emit_json(io, *rep.scenario);
        }
        // Nothing to compare is bad input (a wrong file, or --set that breaks every row), not a 0% error.
        if (rep.cases.empty()) {
            const std::string first = rep.skipped.empty() ? "" : "; first: " + printable(rep.skipped.front(), 200);
            if (o->dataset.empty())
                return bad_input(io, {"--set", fmt::format("overrides under which none of {} rows can be evaluated{}", rep.rows, first),
                                  "overrides every row of the built-in sets accepts"});
            return bad_input(io, {"--dataset",
                              fmt::format("{} with {} rows, none of which can be evaluated{}",
                                          o->dataset == "-" ? "standard input" : quote_path(o->dataset), rep.rows, first),
                              "a CSV in the layout of data/validation/: a header line (id, model, system, tp, ..., "
                              "measured_step_time_s or measured_e2e_latency_s) and rows the model can evaluate"});
        }
        const Json j = report_json(rep);
        if (o->format == "json") return emit_json(io, j);
        if (o->format == "csv") return emit_checked(io, j, report_csv(rep));
        if (o->format == "html") {
            // Groups are alternatives, not parts of a whole: no shares.
            BarChart mean{"Mean |error| per group", "%", 0.01, {}, false}, worst{"Worst |error| per group", "%", 0.01, {}, false};
            for (const auto& [name, g] : j["groups"].items()) {
                mean.bars.emplace_back(name, g["mean_abs_error"].get<double>());
                worst.bars.emplace_back(name, g["max_abs_error"].get<double>());
            }
            return emit_html(io, j, o->dataset.empty() ? "scalemodel validate: the built-in data sets" : "scalemodel validate: " + o->dataset,
                             report_text(rep, false), {mean, worst});
        }
        return emit_checked(io, j, report_text(rep, o->format == "markdown"));
    };
}

}  // namespace sm::cli
