#pragma once
// The one mechanism under every study: a list of scenario documents (points), each parsed and
// validated like any scenario and evaluated by the functions `train`, `infer` and `search` use,
// on all threads (and ranks), results in point order whatever ran where.
#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/error.hpp"
#include "io/json_reader.hpp"
#include "io/scenario.hpp"
#include "search/search.hpp"
#include "study/cluster.hpp"

namespace sm {

enum class StudyMode { train, infer, search };

std::optional<StudyMode> parse_study_mode(std::string_view s);
std::string_view to_string(StudyMode m);

// What a study measures: a result key and whether less of it is better.
struct StudyObjective {
    std::string key;
    bool lower_is_better = true;
};
// A time (`step_time_s`: less is better), not a rate (`tokens_per_s`) or a share (`mfu`).
bool is_duration_key(std::string_view key);
// A duration, an energy (`_j`, not `tokens_per_j`) or a price (`_usd`): less is better.
bool is_lower_better_key(std::string_view key);
// The result keys a mode can be judged by; the first is the default.
std::vector<std::string> objective_names(StudyMode m);
Expected<StudyObjective> parse_study_objective(std::string_view name, StudyMode m, const char* flag = "--objective");

// The searches a study already ran, by what they read: points whose documents differ only in
// what cannot change which layout wins (energy figures and price unless ranked by them, the host
// memory tier without offload) search once; the others re-cost the winner under their own
// figures (cost_in_space), which gives what their own search would. Thread-safe.
class SearchMemo {
public:
    struct Found {
        bool found = false;         // a layout won (else `why` says why none did)
        ParallelConfig layout;
        std::string why;
    };
    [[nodiscard]] std::optional<Found> find(const std::string& key) const;
    void add(std::string key, Found f);
    [[nodiscard]] size_t searches() const;  // searches added (two threads may run one key)

private:
    mutable std::mutex mu_;
    std::map<std::string, Found> kept_;
    size_t searches_ = 0;
};

struct StudyOptions {
    StudyMode mode = StudyMode::train;
    StudyObjective objective{"step_time_s", true};
    int64_t gpus = 0;          // search: the GPU count; 0: the layout's tp*pp*dp*cp
    unsigned threads = 1;      // all of them, split between points or within each search
    bool tp_within_domain = true;
    PlanCache* plans = nullptr;  // search: plans shared by the points (evaluate_points makes one when null)
    SearchMemo* searched = nullptr;  // search: searches shared by the points (likewise)
    const std::atomic<bool>* stop = nullptr;  // set (Ctrl-C): no new point starts
    std::function<void(size_t done, size_t total)> progress;  // ~10 times a second, on the caller's thread
    Cluster cluster;
};

enum class PointStatus { ok, no_fit, error, skipped };
std::string_view to_string(PointStatus s);

struct PointOutcome {
    PointStatus status = PointStatus::skipped;
    Json result;          // ok: the train or infer keys (search: the best layout's parallel + train keys)
    std::string message;  // error: the input error; no_fit: why nothing was found
    double value = 0;     // ok: the objective's value
};

// A point's scenario document, or the error that stops it from being one.
using PointDoc = std::function<Expected<Json>(size_t index)>;

// The points rank `rank` of `ranks` evaluates, ascending: every point on exactly one rank, the
// ranks' counts within one of each other, dealt in a scrambled order. Plain round robin hands
// rank 0 every even point, and a grid whose fastest dimension has an even length (10 HBM sizes)
// would then give one rank all the small sizes and the other all the large.
std::vector<size_t> points_of_rank(size_t count, size_t rank, size_t ranks);
// The twins of a search study (points whose search_key is equal, SearchMemo): for each point the
// first point of its group (itself when it has no twin earlier, or in another mode, or when it
// runs no search). Every rank computes the same.
std::vector<size_t> twin_groups(size_t count, const PointDoc& doc, const StudyOptions& o);
// The points rank `rank` of `ranks` evaluates when whole groups are dealt: the groups (by their
// first points) as points_of_rank deals points, every member with its group; ascending.
std::vector<size_t> points_of_rank(const std::vector<size_t>& group, size_t rank, size_t ranks);

// Evaluates points 0..count-1. On rank 0 returns all outcomes in order; on other ranks, empty.
std::vector<PointOutcome> evaluate_points(size_t count, const PointDoc& doc, const StudyOptions& o);

// One point on the calling thread (search on `search_threads`).
PointOutcome evaluate_point(const Expected<Json>& doc, const StudyOptions& o, unsigned search_threads);

// The scenario of a study's base: model and system with every field resolved (presets and
// defaults filled in), `parallel`, `training` and `inference` as the user gave them (search
// still searches what was left out).
Json study_base_doc(const Scenario& s);

}  // namespace sm
