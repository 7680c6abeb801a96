#include "study/evaluate.hpp"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <mutex>
#include <stdexcept>
#include <thread>

#include <fmt/format.h>

#include "inference/inference.hpp"
#include "io/infer_report.hpp"
#include "io/report.hpp"

namespace sm {

std::optional<StudyMode> parse_study_mode(std::string_view s) {
    if (s == "train") return StudyMode::train;
    if (s == "infer") return StudyMode::infer;
    if (s == "search") return StudyMode::search;
    return std::nullopt;
}

std::string_view to_string(StudyMode m) {
    switch (m) {
        case StudyMode::train: return "train";
        case StudyMode::infer: return "infer";
        case StudyMode::search: return "search";
    }
    return "";
}

std::string_view to_string(PointStatus s) {
    switch (s) {
        case PointStatus::ok: return "ok";
        case PointStatus::no_fit: return "no_fit";
        case PointStatus::error: return "error";
        case PointStatus::skipped: return "skipped";
    }
    return "";
}

bool is_duration_key(std::string_view key) { return key.ends_with("_s") && !key.ends_with("_per_s"); }

bool is_lower_better_key(std::string_view key) {
    return is_duration_key(key) || (key.ends_with("_j") && !key.ends_with("_per_j")) || key.ends_with("_usd");
}

std::vector<std::string> objective_names(StudyMode m) {
    if (m == StudyMode::infer)
        return {"e2e_latency_s", "ttft_s", "tpot_s", "output_tokens_per_s", "energy_per_request_j", "energy_per_token_j", "tokens_per_j",
                "cost_per_request_usd", "cost_per_million_tokens_usd"};
    return {"step_time_s", "tokens_per_s", "tokens_per_s_per_gpu", "mfu", "energy_per_step_j", "energy_per_token_j", "tokens_per_j",
            "cost_per_step_usd", "cost_per_million_tokens_usd"};
}

Expected<StudyObjective> parse_study_objective(std::string_view name, StudyMode m, const char* flag) {
    const auto names = objective_names(m);
    if (name.empty()) return StudyObjective{names.front(), true};
    if (std::find(names.begin(), names.end(), name) == names.end()) {
        std::string list;
        for (const auto& n : names) list += (list.empty() ? "" : ", ") + n;
        return InputError{flag, quote_input(name), fmt::format("for --mode {}: one of {}", to_string(m), list)};
    }
    return StudyObjective{std::string(name), is_lower_better_key(name)};
}

namespace {

// The layout search ranks by the objective when it is one it knows; tokens/s at a fixed GPU
// count orders layouts exactly as step time does.
Objective search_objective(const StudyObjective& o) {
    if (o.key == "tokens_per_s_per_gpu") return Objective::tokens_per_s_per_gpu;
    if (o.key == "mfu") return Objective::mfu;
    // At one GPU count and batch every energy key orders layouts as the step's energy does, and
    // every cost key as its cost.
    if (o.key.find("_j") != std::string::npos) return Objective::energy;
    if (o.key.ends_with("_usd")) return Objective::cost;
    return Objective::step_time;
}

Purpose purpose_of(StudyMode m) {
    switch (m) {
        case StudyMode::train: return Purpose::train;
        case StudyMode::infer: return Purpose::infer;
        case StudyMode::search: return Purpose::search;
    }
    return Purpose::train;
}

PointOutcome finish(Json result, const StudyOptions& o) {
    if (!result.contains(o.objective.key))  // an energy or cost key of a system without the figures
        return {PointStatus::error, {},
                fmt::format("{}: not computed; the system has no {}", o.objective.key,
                            o.objective.key.ends_with("_usd") ? "price (system.price_per_gpu_hour)" : "energy figures (system.energy)"),
                0};
    PointOutcome out;
    out.value = result.at(o.objective.key).get<double>();
    out.result = std::move(result);
    out.status = PointStatus::ok;
    return out;
}

// What a point's search reads, as text: its document without what cannot change which layout
// wins: ranked by step time (or its orders), energy figures and price do not; without offload
// the host tier does not.
std::string search_key(Json doc, const Scenario& s, const SearchOptions& so) {
    if (Json& sys = doc["system"]; sys.is_object()) {
        if (so.objective != Objective::energy) sys.erase("energy");
        if (so.objective != Objective::cost) sys.erase("price_per_gpu_hour");
        if (s.parallel.offload == Offload::none) sys.erase("host_memory");
    }
    return fmt::format("{} {} {} {}", so.gpus, to_string(so.objective), so.tp_within_domain, doc.dump());
}

// The search a point runs: at --gpus (or the point's own), else its whole layout's GPU count
// (0: none), keeping only the best layout.
SearchOptions point_search(const Scenario& s, const StudyOptions& o, unsigned threads) {
    const std::set<std::string>& given = s.parallel_given;
    const bool whole = given.count("tp") && given.count("pp") && given.count("dp") && given.count("cp");
    SearchOptions so;
    so.gpus = o.gpus > 0 ? o.gpus : whole ? s.parallel.gpus() : 0;
    so.top_k = 1;
    so.threads = threads;
    so.objective = search_objective(o.objective);
    so.tp_within_domain = o.tp_within_domain;
    so.prune_by_floor = true;  // only the best layout is kept: skip what cannot beat it
    so.plans = o.plans;
    return so;
}

PointOutcome search_point(const Json& doc, Scenario& s, const StudyOptions& o, unsigned threads) {
    const std::set<std::string>& given = s.parallel_given;
    const SearchOptions so = point_search(s, o, threads);
    if (so.gpus <= 0)
        return {PointStatus::error, {}, "--gpus: nothing; a GPU count is required unless parallel.tp, pp, dp and cp are all given", 0};
    const TrainContext c{s.model, s.system, s.training};
    const LayoutConstraints fixed = constraints_from(s.parallel, given);
    const std::string key = o.searched ? search_key(doc, s, so) : std::string();
    // A twin point's winner, costed under this point's figures; should it fall outside this
    // space after all, the point searches.
    std::optional<SearchHit> hit;
    if (const auto twin = o.searched ? o.searched->find(key) : std::nullopt) {
        if (!twin->found) return {PointStatus::no_fit, {}, twin->why, 0};
        hit = cost_in_space(c, fixed, so, twin->layout);
    }
    if (!hit) {
        const SearchResult r = search_layouts(c, fixed, so);
        std::string why;
        if (r.stats.candidates == 0)
            why = fmt::format("no valid layout of {} GPUs", so.gpus);
        // Every candidate pruned by the network-domain rule: say so, not "does not fit".
        else if (r.stats.candidates == r.stats.pruned_domain)
            why = fmt::format("no layout of {} GPUs keeps tp within the {}-GPU scale-up domain (--cross-domain-tp)", so.gpus,
                              s.system.used_per_domain(so.gpus));
        else if (r.best.empty())
            why = fmt::format("no layout of {} GPUs fits in memory", so.gpus);
        if (o.searched) o.searched->add(key, {why.empty(), why.empty() ? r.best.front().layout : ParallelConfig{}, why});
        if (!why.empty()) return {PointStatus::no_fit, {}, why, 0};
        hit = r.best.front();
    }
    s.parallel = hit->layout;
    return finish(train_json(s, hit->result), o);
}

}  // namespace

namespace {

// A sweep may vary the GPU count itself (`--vary gpus=...`): the point's document then carries a
// top-level `gpus`, read by --gpus's rules and taken out before the scenario is read.
Expected<int64_t> point_gpus(Json& doc, const StudyOptions& o) {
    if (!doc.is_object() || !doc.contains("gpus")) return o.gpus;
    const Json g = doc["gpus"];
    doc.erase("gpus");
    const std::string text = g.is_number_integer() ? std::to_string(g.get<int64_t>()) : g.is_string() ? g.get<std::string>() : g.dump();
    if (o.mode != StudyMode::search) return InputError{"gpus", quote_input(text), "varies the GPU count of --mode search only"};
    auto counts = parse_gpu_counts(text);
    if (!counts) return InputError{"gpus", quote_input(text), "one GPU count per point: a positive integer"};
    if (counts->size() != 1) return InputError{"gpus", quote_input(text), "one GPU count per point"};
    return counts->front();
}

}  // namespace

PointOutcome evaluate_point(const Expected<Json>& given, const StudyOptions& options, unsigned search_threads) {
    if (!given) return {PointStatus::error, {}, given.error().message(), 0};
    Json doc = given.value();
    const Expected<int64_t> gpus = point_gpus(doc, options);
    if (!gpus) return {PointStatus::error, {}, gpus.error().message(), 0};
    StudyOptions o = options;
    o.gpus = gpus.value();
    Expected<Scenario> built = build_scenario(doc, purpose_of(o.mode));
    if (!built) return {PointStatus::error, {}, built.error().message(), 0};
    Scenario s = std::move(built).value();
    switch (o.mode) {
        case StudyMode::train: return finish(train_json(s, evaluate_training({s.model, s.system, s.training}, s.parallel)), o);
        case StudyMode::infer: return finish(infer_json(s, evaluate_inference({s.model, s.system, s.inference}, s.parallel)), o);
        case StudyMode::search: return search_point(doc, s, o, search_threads);
    }
    return {};
}

std::optional<SearchMemo::Found> SearchMemo::find(const std::string& key) const {
    const std::lock_guard lock(mu_);
    const auto it = kept_.find(key);
    if (it == kept_.end()) return std::nullopt;
    return it->second;
}

void SearchMemo::add(std::string key, Found f) {
    const std::lock_guard lock(mu_);
    ++searches_;
    kept_.emplace(std::move(key), std::move(f));
}

size_t SearchMemo::searches() const {
    const std::lock_guard lock(mu_);
    return searches_;
}

namespace {

// The search a point would run (search_key), or nullopt when it runs none (an error, no GPU count).
std::optional<std::string> point_search_key(const Expected<Json>& given, const StudyOptions& options) {
    if (!given) return std::nullopt;
    Json doc = given.value();
    const Expected<int64_t> gpus = point_gpus(doc, options);
    if (!gpus) return std::nullopt;
    StudyOptions o = options;
    o.gpus = gpus.value();
    const Expected<Scenario> s = build_scenario(doc, Purpose::search);
    if (!s) return std::nullopt;
    const SearchOptions so = point_search(s.value(), o, 1);
    if (so.gpus <= 0) return std::nullopt;
    return search_key(doc, s.value(), so);
}

}  // namespace

std::vector<size_t> twin_groups(size_t count, const PointDoc& doc, const StudyOptions& o) {
    std::vector<size_t> group(count);
    std::map<std::string, size_t> first;
    for (size_t i = 0; i < count; ++i) {
        const std::optional<std::string> key = o.mode == StudyMode::search ? point_search_key(doc(i), o) : std::nullopt;
        group[i] = key ? first.emplace(*key, i).first->second : i;
    }
    return group;
}

std::vector<size_t> points_of_rank(const std::vector<size_t>& group, size_t rank, size_t ranks) {
    std::vector<size_t> leaders;  // each group's first point, ascending
    for (size_t i = 0; i < group.size(); ++i)
        if (group[i] == i) leaders.push_back(i);
    std::vector<bool> dealt(group.size(), false);
    for (const size_t k : points_of_rank(leaders.size(), rank, ranks)) dealt[leaders[k]] = true;
    std::vector<size_t> mine;
    for (size_t i = 0; i < group.size(); ++i)
        if (dealt[group[i]]) mine.push_back(i);
    return mine;
}

Json study_base_doc(const Scenario& s) {
    Json doc = Json::object();
    doc["model"] = s.full["model"];
    doc["system"] = s.full["system"];
    // As given: their defaults follow other fields (global_batch from dp, the KV type from the
    // math type), so filling them in here would freeze them.
    for (const char* k : {"parallel", "training", "inference"})
        if (s.resolved.contains(k)) doc[k] = s.resolved[k];
    return doc;
}

namespace {

Json outcome_json(const PointOutcome& p) {
    return Json{{"s", static_cast<int>(p.status)}, {"r", p.result}, {"m", p.message}, {"v", p.value}};
}

PointOutcome outcome_of(const Json& j) {
    return {static_cast<PointStatus>(j.at("s").get<int>()), j.at("r"), j.at("m").get<std::string>(), j.at("v").get<double>()};
}

// This rank's points on `workers` threads; the caller's thread reports progress meanwhile.
void run_local(const std::vector<size_t>& mine, std::vector<PointOutcome>& out, const PointDoc& doc, const StudyOptions& o,
               unsigned workers, unsigned search_threads) {
    std::atomic<size_t> next{0}, done{0};
    std::mutex m;
    std::condition_variable cv;
    unsigned finished = 0;
    auto work = [&] {
        for (size_t k = next++; k < mine.size(); k = next++) {
            if (o.stop && o.stop->load()) break;  // the rest stay `skipped`
            out[mine[k]] = evaluate_point(doc(mine[k]), o, search_threads);
            ++done;
        }
        const std::lock_guard<std::mutex> lock(m);
        ++finished;
        cv.notify_one();
    };
    std::vector<std::thread> threads;
    for (unsigned i = 0; i < workers; ++i) threads.emplace_back(work);
    {
        std::unique_lock<std::mutex> lock(m);
        while (!cv.wait_for(lock, std::chrono::milliseconds(100), [&] { return finished == workers; }))
            if (o.progress) o.progress(done.load(), mine.size());
    }
    for (auto& t : threads) t.join();
    if (o.progress) o.progress(done.load(), mine.size());
}

}  // namespace

std::vector<size_t> points_of_rank(size_t count, size_t rank, size_t ranks) {
    ranks = std::max<size_t>(1, ranks);
    if (ranks == 1) {
        std::vector<size_t> all(count);
        for (size_t i = 0; i < count; ++i) all[i] = i;
        return all;
    }
    // Points ordered by a hash of their index (SplitMix64's finaliser: a fixed bijection, the
    // same on every rank), then dealt round robin.
    auto scramble = [](uint64_t x) {
        x += 0x9E3779B97F4A7C15ull;
        x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
        x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
        return x ^ (x >> 31);
    };
    std::vector<std::pair<uint64_t, size_t>> order(count);
    for (size_t i = 0; i < count; ++i) order[i] = {scramble(i), i};
    std::sort(order.begin(), order.end());
    std::vector<size_t> mine;
    for (size_t j = rank; j < count; j += ranks) mine.push_back(order[j].second);
    std::sort(mine.begin(), mine.end());
    return mine;
}

std::vector<PointOutcome> evaluate_points(size_t count, const PointDoc& doc, const StudyOptions& o) {
    const Cluster& c = o.cluster;
    const auto ranks = static_cast<size_t>(std::max(1, c.size));
    // On several ranks a search study deals twin points (SearchMemo) to one rank, so that each
    // search runs once in the whole study, as in one process.
    const std::vector<size_t> group = ranks > 1 ? twin_groups(count, doc, o) : std::vector<size_t>{};
    const auto deal = [&](size_t rank) { return ranks > 1 ? points_of_rank(group, rank, ranks) : points_of_rank(count, rank, ranks); };
    const std::vector<size_t> mine = deal(static_cast<size_t>(c.rank));
    std::vector<PointOutcome> out(count);
    // Threads go to the points when there are enough of them, else to each point's search: never
    // both, so the cores are not oversubscribed. Search results do not depend on its thread count.
    const unsigned threads = std::max(1u, o.threads);
    const bool across = mine.size() >= threads || o.mode != StudyMode::search;
    const unsigned workers = across ? static_cast<unsigned>(std::min<size_t>(threads, std::max<size_t>(1, mine.size()))) : 1;
    // Points that differ only in system figures (an attribution's subsets, a bandwidth sweep)
    // plan their searches alike: plan once.
    PlanCache plans;
    SearchMemo searched;
    StudyOptions with_plans = o;
    if (!with_plans.plans) with_plans.plans = &plans;
    if (!with_plans.searched) with_plans.searched = &searched;
    run_local(mine, out, doc, with_plans, workers, across ? 1 : threads);
    if (c.size <= 1) return out;

    Json own = Json::array();
    for (size_t i : mine) own.push_back(outcome_json(out[i]));
    const std::vector<std::string> all = c.gather(own.dump());
    if (c.rank != 0) return {};
    for (size_t r = 0; r < all.size(); ++r) {
        const Json theirs = Json::parse(all[r]);
        const std::vector<size_t> points = deal(r);
        if (theirs.size() != points.size())
            throw std::runtime_error(fmt::format("rank {} returned {} outcomes for its {} points", r, theirs.size(), points.size()));
        for (size_t k = 0; k < points.size(); ++k) out[points[k]] = outcome_of(theirs.at(k));
    }
    return out;
}

}  // namespace sm
