#pragma once
// Layout search: every valid parallel layout of a GPU count, pruned by divisibility, the
// network-domain rule and a memory lower bound, costed in parallel, the best K kept.
//
// Speed comes from the split of the step model: the op lists and each op's cost depend only on
// how one layer is cut, (tp, cp, ep, sp, micro-batch), so they are built once per such key and
// summed once per recompute mode; the collectives (cost_layers) once per placement of the key's
// groups; assemble_step (~0.1 us) once per layout. Work is split into tasks, one per family of
// keys (every micro-batch of one tp, cp, ep, sp, CP kind); threads pull tasks, keep their own
// counters and top-K, and the results are merged under a total order, so the answer does not
// depend on the thread count.
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "core/error.hpp"
#include "training/step.hpp"

namespace sm {

// energy: the step's energy (at a fixed batch, per token alike); cost: its price (at a fixed
// GPU count, step time's order). Both need the system's figures (system.energy,
// system.price_per_gpu_hour): scores are 0 without them.
enum class Objective { step_time, tokens_per_s_per_gpu, mfu, energy, cost };

std::optional<Objective> parse_objective(std::string_view s);
std::string_view to_string(Objective o);
// Lower is better: step time as is, throughput and MFU negated.
double objective_score(Objective o, const TrainResult& r);

// The layout fields the user fixed in the scenario's `parallel` section; nullopt: searched.
struct LayoutConstraints {
    std::optional<int64_t> tp, tp_rows, pp, dp, cp, ep, vp, microbatch, zero;
    std::optional<bool> sequence_parallel;
    std::optional<Recompute> recompute;
    std::optional<RankOrder> order;
    std::optional<CpKind> cp_kind;
    Offload offload = Offload::none;  // always held (default none)
    ModuleSet recompute_modules = kDefaultRecomputeModules;  // always held: what selective recompute re-runs
    // What a framework ships (search --framework, search/frameworks.hpp): the ZeRO stages (bit z)
    // and the context-parallel kinds (bit of the CpKind, at cp > 1) it has; all by default.
    unsigned zero_stages = 0xF;
    unsigned zero_stages_pipelined = 0xF;  // of those, the stages it runs with pipeline parallelism (pp > 1)
    unsigned cp_kinds = 0x7;
    // A pipeline split named in the scenario (or first_last with the two counts); nullopt: each
    // (pp, vp) takes the split `auto` gives it, so the space holds every layout `train` runs.
    std::optional<PipelineSplit> split;
    int64_t first_stage_layers = 0, last_stage_layers = 0;
    std::vector<int32_t> layout;  // a held parallel.pipeline_layout: only its pp x vp are searched
    int32_t layout_mtp = 0;       // its 'm's (model.mtp_layers)
    bool operator==(const LayoutConstraints&) const = default;
};
LayoutConstraints constraints_from(const ParallelConfig& p, const std::set<std::string>& given);
// Whether the space holds context parallelism of degree cp exchanging K/V by k on a tp-way
// column split: one kind at cp 1 (they do not differ: ring), Ulysses only where the heads split
// over tp x cp; a kind the user fixed is the only one, Ulysses still only where it fits.
bool cp_kind_allowed(const ModelSpec& m, const LayoutConstraints& f, int64_t tp, int64_t cp, CpKind k);
// The positive divisors of n, ascending: the degrees a dimension of n GPUs can take.
std::vector<int64_t> divisors(int64_t n);

// Plans shared by the searches of one study (a sweep, attribution or sensitivity runs one search
// per point): a search whose planning inputs equal an earlier one's takes its plan instead of
// building it. Planning reads the model, the training section, the constraints, the GPU count,
// the domain rule and, of the system, only how many GPUs of a scale-up domain are used (and,
// with offload, the memory tiers: such searches plan afresh). Thread-safe; it keeps the last few
// plans.
class PlanCache {
public:
    PlanCache();
    ~PlanCache();
    PlanCache(const PlanCache&) = delete;
    PlanCache& operator=(const PlanCache&) = delete;
    [[nodiscard]] size_t size() const;  // plans kept
    struct Impl;
    std::unique_ptr<Impl> impl;
};

struct SearchOptions {
    int64_t gpus = 1;
    size_t top_k = 10;
    unsigned threads = 1;
    Objective objective = Objective::step_time;
    // Network-domain rule: tensor parallelism stays inside one scale-up domain. Its per-layer
    // blocking collectives over the scale-out network never win; off: search them too.
    bool tp_within_domain = true;
    // Set (e.g. by a SIGINT handler) to stop early; the result then holds the best so far.
    const std::atomic<bool>* stop = nullptr;
    // Skip a layout key whose step-time floor (step_time_floor_s: from a larger micro-batch's
    // tensor time per sample before the key's ops are built, from the key's compute before a
    // placement's collectives are costed, then with them) is above the K-th best kept:
    // the same best K, far fewer layouts costed (the counts then say so: pruned_bound). Off by
    // default so that `search` reports every layout's fate; the studies turn it on.
    bool prune_by_floor = false;
    PlanCache* plans = nullptr;  // a study's: plans reused across its searches (nullptr: none)
    // A plan with at most this many placements (layout shapes x the rank orders that place
    // groups apart) keeps them, placed once for every search that reuses it; a larger one
    // places each task's afresh (memory against time: about 300 bytes each). No answer depends on it.
    size_t placements_kept = size_t{1} << 14;
};

struct SearchProgress {
    int64_t done = 0;    // layouts evaluated or pruned by memory
    int64_t total = 0;   // layouts left after the divisibility and domain rules
    double best_score = 0;
    bool have_best = false;
    double elapsed_s = 0;
};
// Called from the coordinating thread about ten times a second while workers run, and once
// more when they are done (done == total unless stopped).
using ProgressFn = std::function<void(const SearchProgress&)>;

struct SearchHit {
    ParallelConfig layout;
    TrainResult result;
    double score = 0;
};

// The total order of results: score, then the layout tuple (a stable tie-break).
bool hit_before(const SearchHit& a, const SearchHit& b);
bool layout_before(const ParallelConfig& a, const ParallelConfig& b);

struct SearchStats {
    int64_t candidates = 0;      // layouts that pass the divisibility rules
    int64_t pruned_domain = 0;   // of which dropped by the network-domain rule
    int64_t pruned_memory = 0;   // dropped: weights + gradients + optimizer state alone overflow
    int64_t pruned_bound = 0;    // skipped: their step-time floor is above the K-th best (prune_by_floor)
    int64_t evaluated = 0;       // costed (assemble_step calls)
    int64_t feasible = 0;        // costed and fitting in memory
    int64_t layer_costings = 0;  // cost_layers calls
    double elapsed_s = 0;
    unsigned threads = 1;
    bool interrupted = false;
};

struct SearchResult {
    SearchStats stats;
    std::vector<SearchHit> best;  // feasible layouts, best first, at most top_k
};

SearchResult search_layouts(const TrainContext& c, const LayoutConstraints& fixed, const SearchOptions& o,
                            const ProgressFn& progress = {});

// A kept result and how many results after it were folded into it: within `tolerance` (relative)
// of its score and differing from it only in what does not change the layout's shape: the ZeRO
// stage, the rank order, the context-parallel kind.
struct FoldedHit {
    SearchHit hit;
    int64_t twins = 0;
};
// The first `k` of `hits` (best first) that are no twin of one before them, each with its twins.
std::vector<FoldedHit> fold_twins(const std::vector<SearchHit>& hits, size_t k, double tolerance);
// The layouts of o.gpus GPUs that pass the divisibility rules (SearchStats::candidates), from the
// search's plan alone: nothing is costed.
int64_t candidate_layouts(const TrainContext& c, const LayoutConstraints& fixed, const SearchOptions& o);

// Layout p costed as search_layouts costs it (evaluate_training, whose steps the search splits):
// bit for bit the hit a search that keeps p reports.
// nullopt when the search's space lacks p (another GPU count, a held field, a tp the domain rule
// cuts) or p does not fit in memory.
std::optional<SearchHit> cost_in_space(const TrainContext& c, const LayoutConstraints& fixed, const SearchOptions& o,
                                       const ParallelConfig& p);

// `--gpus`: a count (4096), a list (1024,2048,4096) or a range START:STOP[:xFACTOR|:+STEP]
// (256:16384:x2; the factor defaults to x2). Ascending order is kept as given.
Expected<std::vector<int64_t>> parse_gpu_counts(std::string_view text);

}  // namespace sm
