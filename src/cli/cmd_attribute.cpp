// `scalemodel attribute`: the ratio of an objective between two scenarios split among named
// factor groups by Shapley values over every subset of the groups (src/study/attribute.hpp).
#include <algorithm>
#include <chrono>
#include <iostream>

#include <fmt/format.h>

#include "cli/commands.hpp"
#include "cli/interrupt.hpp"
#include "cli/study_common.hpp"
#include "study/attribute.hpp"

namespace sm::cli {

namespace {

std::string subset_names(const std::vector<FactorGroup>& groups, uint64_t mask) {
    std::string s;
    for (size_t g = 0; g < groups.size(); ++g)
        if (mask & (uint64_t{1} << g)) s += (s.empty() ? "" : ", ") + groups[g].name;
    return "{" + s + "}";
}

}  // namespace

Runner add_attribute(CLI::App& app, const Io& io, const Cluster& cluster) {
    struct Opts : StudyArgs {
        std::string to;
        int64_t samples = 0;
    };
    auto o = std::make_shared<Opts>();
    CLI::App* cmd = app.add_subcommand("attribute", "Split the speed-up from SCENARIO to another among its causes (Shapley values)");
    add_study_options(cmd, *o, {"train", "search"});
    cmd->add_option("--to", o->to, "the other scenario (JSON file); --set applies to SCENARIO only")->required();
    cmd->add_option("--samples", o->samples,
                    "estimate the Shapley values from N random orders of the groups (at most N x groups subsets, fixed seed) "
                    "instead of every subset; each factor then carries a 95% interval");
    return [cmd, o, cluster, &io]() -> int {
        if (!cmd->parsed()) return -1;
        auto setup = setup_study(io, *o, cluster);
        if (!setup) return bad_input(io, setup.error());
        StudySetup& st = setup.value();
        Expected<Json> other_doc = read_scenario(io, o->to);
        if (!other_doc) return bad_input(io, {"--to", other_doc.error().given, other_doc.error().allowed});
        Expected<Scenario> other = build_scenario(other_doc.value(), Purpose::search);
        if (!other) return bad_input(io, {"--to", quote_input(o->to), other.error().message()});
        const Json from = study_base_doc(st.base), to = study_base_doc(other.value());
        const std::vector<FactorGroup> groups = factor_groups(from, to);
        if (groups.size() > kMaxFactorGroups)
            return bad_input(io, {"--to", fmt::format("{} differing factor groups", groups.size()),
                              fmt::format("at most {} ({} subsets)", kMaxFactorGroups, uint64_t{1} << kMaxFactorGroups)});
        if (o->samples != 0 && (o->samples < 2 || o->samples > kMaxShapleyOrders))
            return bad_input(io, {"--samples", std::to_string(o->samples), fmt::format("2 to {} random orders", kMaxShapleyOrders)});
        // The subsets evaluated: every one, or those the sampled orders visit.
        const std::vector<std::vector<size_t>> orders = shapley_orders(groups.size(), static_cast<size_t>(o->samples), kShapleySeed);
        std::vector<uint64_t> masks;
        if (o->samples > 0)
            masks = sampled_masks(groups.size(), orders);
        else
            for (uint64_t m = 0; m < uint64_t{1} << groups.size(); ++m) masks.push_back(m);
        const size_t n = masks.size();
        st.options.progress = study_progress(io, *o, cluster, "attribute");
        const auto start = std::chrono::steady_clock::now();
        std::vector<PointOutcome> out;
        {
            SigintGuard guard;
            out = evaluate_points(n, [&](size_t i) -> Expected<Json> { return subset_doc(from, to, groups, masks[i]); }, st.options);
        }
        const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        if (cluster.rank != 0) return kExitOk;
        std::vector<double> values(n);
        size_t done = 0;
        for (size_t i = 0; i < n; ++i) done += out[i].status != PointStatus::skipped;
        if (done < n) {
            io.err << fmt::format("scalemodel: interrupted: {} of {} subsets finished; an attribution needs all of them\n", done, n);
            return kExitInterrupted;
        }
        for (size_t i = 0; i < n; ++i) {
            const PointOutcome& p = out[i];
            if (p.status != PointStatus::ok || !(p.value > 0))
                return bad_input(io, {"--to", quote_input(o->to),
                                  fmt::format("the subset {} of the factor groups does not evaluate ({}); attribution needs every "
                                              "combination to (try --mode search, or a layout valid on both systems)",
                                              subset_names(groups, masks[i]), p.message.empty() ? "objective not positive" : p.message)});
            values[i] = p.value;
        }
        const auto value = [&](uint64_t mask) { return values[static_cast<size_t>(std::lower_bound(masks.begin(), masks.end(), mask) - masks.begin())]; };
        const Attribution a = o->samples > 0 ? attribution_sampled(groups, orders, value, st.options.objective)
                                             : attribution_from(groups, values, st.options.objective);
        return emit_study(io, *o, cluster, attribution_json(a, st.header), attribution_text(a, st.header, scenario_title(other.value())),
                          attribution_csv(a), elapsed, n, n);
    };
}

}  // namespace sm::cli
