#include "search/search.hpp"

#include <algorithm>
#include <cmath>
#include <array>
#include <chrono>
#include <condition_variable>
#include <limits>
#include <map>
#include <mutex>
#include <optional>
#include <thread>
#include <tuple>
#include <utility>

#include "hardware/energy.hpp"
#include "io/int_list.hpp"
#include "layout/rules.hpp"
#include "model/ops.hpp"

namespace sm {

namespace {

using Clock = std::chrono::steady_clock;

constexpr int64_t kMaxSearchGpus = int64_t{1} << 24;
constexpr size_t kMaxGpuCounts = 256;

}  // namespace

std::vector<int64_t> divisors(int64_t n) {
    std::vector<int64_t> low, high;
    for (int64_t d = 1; d * d <= n; ++d)
        if (n % d == 0) {
            low.push_back(d);
            if (d != n / d) high.push_back(n / d);
        }
    low.insert(low.end(), high.rbegin(), high.rend());
    return low;
}

namespace {

bool allowed(const std::optional<int64_t>& fixed, int64_t v) { return !fixed || *fixed == v; }

// How the GPUs are cut, without the per-micro-batch and schedule choices: one entry per
// (tp, cp, ep, pp) with dp = gpus / (tp cp pp). Grouped by (tp, cp, ep) so a task walks a
// contiguous range.
struct Shape {
    int64_t tp, tp_rows, cp, ep, pp, dp;
    size_t vp_begin{}, vp_count{};           // into Plan::vps: (vp, split) pairs
    int64_t max_vp{};                        // the largest of them
    size_t place_begin{}, place_count{};     // into Plan::orders: the rank orders kept
    std::array<double, 4> static_bytes{};    // memory lower bound per ZeRO stage
};

// A rank order of a shape and where it puts every group. Orders that place every group of the
// shape as an earlier one does give the same layout in every figure and are not kept (tp-cp-dp-pp
// comes first: the default wins ties).
struct Placement {
    RankOrder order;
    CommSpans spans;
    LayerSpans layer;  // what cost_layers depends on: layouts sharing it share the layer costs
};

// One family of layer keys: every micro-batch of one (tp, cp, ep, sp, CP kind). A layer key is
// everything cost_layers depends on besides the tp, cp and ep groups' spans and which ops are
// re-run (the op lists and each op's cost are the same under every mode, so a key builds them
// once). A family's keys run largest micro-batch first in one task: the tensor time per sample
// only grows as the micro-batch shrinks (every GEMM's efficiency rises with its token dimension),
// so a larger key's bounds a smaller one's before its ops are built. Its layouts are, per
// micro-batch and recompute mode, the shapes in [shape_begin, shape_end) whose dp admits the
// micro-batch, times their placements, times ZeRO stages, times vp.
struct Task {
    size_t shape_begin, shape_end;
    bool sp;
    std::array<bool, 3> recompute;      // by Recompute value: the modes searched
    std::vector<bool> microbatches;     // by index into Plan::microbatches: the layer keys of the family
    CpKind cp_kind;
    int64_t layouts;
};

struct Interleave {
    int64_t vp;
    PipelineSplit split;
};

struct Plan {
    std::vector<Shape> shapes;
    std::vector<Interleave> vps;
    std::vector<RankOrder> orders;  // placed when a task runs (place_shape): a plan keeps few bytes per layout shape
    // The placement of every entry of `orders`, when there are at most SearchOptions::
    // placements_kept of them: a study's points share the plan (PlanCache) and then place each
    // once, not once per search and task. A larger plan (the stress search's 286,519 shapes)
    // places per task.
    std::vector<Placement> places;
    std::vector<int64_t> microbatches;  // every divisor of the global batch, largest first
    std::vector<int64_t> zeros;
    std::vector<int64_t> zeros_pipelined;  // those a framework runs with pipeline parallelism (pp > 1)
    std::vector<Task> tasks;
    int64_t candidates = 0, pruned_domain = 0;
    ParamCount params;  // the model's, counted once for every layout
};

// The ZeRO stages of shape s's layouts.
const std::vector<int64_t>& zeros_of(const Plan& plan, const Shape& s) { return s.pp > 1 ? plan.zeros_pipelined : plan.zeros; }

bool admits(const Shape& s, int64_t global_batch, int64_t microbatch) {
    return (global_batch / s.dp) % microbatch == 0;
}

// The shape's degrees on a layout (the rest of p is the caller's).
void set_degrees(ParallelConfig& p, const Shape& s) {
    p.tp = s.tp;
    p.tp_rows = s.tp_rows;
    p.cp = s.cp;
    p.ep = s.ep;
    p.pp = s.pp;
    p.dp = s.dp;
}

// The pipeline split a search holds (first/last stage layers, a listed layout) onto p.
void hold_split(ParallelConfig& p, const LayoutConstraints& f) {
    p.first_stage_layers = f.first_stage_layers;
    p.last_stage_layers = f.last_stage_layers;
    p.layout = f.layout;
    p.layout_mtp = f.layout_mtp;
}

// A lower bound on every layout of this shape and ZeRO stage: the step model with zero
// per-layer costs keeps weights, gradients, optimizer state and fixed overheads, the parts
// no micro-batch, schedule or recompute choice changes; activations only add to it.
double static_memory_bytes(const TrainContext& c, const ParamCount& params, const Shape& s, int64_t zero, const Interleave& v,
                           const LayoutConstraints& f) {
    ParallelConfig p;
    p.offload = f.offload;
    p.recompute_modules = f.recompute_modules;
    p.vp = v.vp;
    p.split = v.split;
    hold_split(p, f);
    set_degrees(p, s);
    p.zero = zero;
    p.microbatch = 1;
    p.recompute = Recompute::full;
    // Memory does not depend on where the groups sit (no placement needed), nor, without
    // activations, on sequence parallelism.
    return assemble_step(c, p, LayerCosts{}, params, CommSpans{}).memory.peak_bytes_per_gpu;
}

// Where shape s with rank order o puts every group.
Placement place_shape(const TrainContext& c, const Shape& s, RankOrder o) {
    ParallelConfig q;
    set_degrees(q, s);
    q.order = o;
    const CommSpans spans = place_groups(q, c.system);
    return {o, spans,
            {spans.span[idx(CommGroup::tp)], spans.span[idx(CommGroup::cp)], spans.span[idx(CommGroup::ep)],
             spans.span[idx(CommGroup::tp_rows)]}};
}

// The rank orders of shape s that place some group differently from every order before them.
void add_placements(const TrainContext& c, const LayoutConstraints& f, Plan& plan, Shape& s) {
    s.place_begin = plan.orders.size();
    ParallelConfig q;
    set_degrees(q, s);
    std::array<RankStrides, std::size(kRankOrders)> tried{};  // the strides of the orders already placed
    size_t n_tried = 0;
    std::array<CommSpans, std::size(kRankOrders)> kept{};  // the spans of the orders kept
    size_t n_kept = 0;
    for (RankOrder o : kRankOrders) {
        if (f.order && *f.order != o) continue;
        q.order = o;
        // Placement reads the order only through the ranks' strides: an order that strides every
        // dimension as an earlier one does (it moves only digits of size 1) places nothing anew.
        const RankStrides st = rank_strides(q);
        const auto same_strides = [&st](const RankStrides& r) { return r.tp == st.tp && r.cp == st.cp && r.dp == st.dp && r.pp == st.pp; };
        if (std::any_of(tried.begin(), tried.begin() + static_cast<std::ptrdiff_t>(n_tried), same_strides)) continue;
        tried[n_tried++] = st;
        const CommSpans spans = place_groups(q, c.system);
        const auto same = [&spans](const CommSpans& k) { return same_spans(k, spans); };
        if (std::any_of(kept.begin(), kept.begin() + static_cast<std::ptrdiff_t>(n_kept), same)) continue;
        kept[n_kept++] = spans;
        plan.orders.push_back(o);
    }
    s.place_count = plan.orders.size() - s.place_begin;
}

}  // namespace

bool cp_kind_allowed(const ModelSpec& m, const LayoutConstraints& f, int64_t tp, int64_t cp, CpKind k) {
    if (f.cp_kind) return *f.cp_kind == k && (k != CpKind::ulysses || cp == 1 || ulysses_fits(m, tp, cp));
    if (cp == 1) return k == CpKind::ring;
    if ((f.cp_kinds >> static_cast<unsigned>(k) & 1U) == 0) return false;
    return k != CpKind::ulysses || ulysses_fits(m, tp, cp);
}

namespace {

Plan make_plan(const TrainContext& c, const LayoutConstraints& f, const SearchOptions& o) {
    const ModelSpec& m = c.model;
    const int64_t n = o.gpus;
    const int64_t gb = c.training.global_batch;
    Plan plan;
    plan.params = count_params(m, c.training.lora);
    for (int64_t z = 0; z <= 3; ++z)
        if (allowed(f.zero, z) && (f.zero_stages >> z & 1U) != 0) {
            plan.zeros.push_back(z);
            if ((f.zero_stages_pipelined >> z & 1U) != 0) plan.zeros_pipelined.push_back(z);
        }
    const std::vector<int64_t> expert_degrees = m.moe.enabled() ? divisors(m.moe.experts) : std::vector<int64_t>{1};

    struct Group {
        size_t begin, end;
    };
    std::vector<Group> groups;
    // The interleavings of a pipeline depth, listed once and shared by every shape of that depth:
    // each (vp, split) depends on pp alone.
    struct Depth {
        size_t begin, count;
        int64_t max_vp;
    };
    std::map<int64_t, Depth> depths;
    const auto interleavings = [&](int64_t pp) -> const Depth& {
        if (const auto it = depths.find(pp); it != depths.end()) return it->second;
        // Every interleaving the model admits, each with its split: the named one, or what
        // `auto` gives (even, else Megatron's embedding/loss accounting, else DeepSpeed's uniform
        // split).
        Depth d{plan.vps.size(), 0, 0};
        ParallelConfig q;
        hold_split(q, f);
        q.pp = pp;
        for (int64_t vp = 1; vp == 1 || pp * vp <= m.layers + 2; ++vp) {
            if (!allowed(f.vp, vp) || (vp > 1 && pp == 1)) continue;
            q.vp = vp;
            q.split = f.split ? *f.split : default_split(m.layers, q);
            if (split_layers(m.layers, q).ok()) {
                plan.vps.push_back({vp, q.split});
                d.max_vp = vp;
            }
            if (pp == 1) break;
        }
        d.count = plan.vps.size() - d.begin;
        return depths.emplace(pp, d).first->second;
    };
    for (int64_t tp : divisors(n)) {
        if (!allowed(f.tp, tp)) continue;
        for (int64_t cp : divisors(n / tp)) {
            if (!allowed(f.cp, cp) || m.seq_len % cp != 0 || (cp > 1 && m.recurrent())) continue;
            // 1D tensor parallelism (tp_rows 1), then every SUMMA grid of tp ranks that `train` accepts.
            for (int64_t rows : divisors(tp)) {
                if (!allowed(f.tp_rows, rows)) continue;
                if (rows == 1 ? tensor_parallel_misfit(m, tp).has_value() : !summa_fits(m, tp, rows, cp)) continue;
                for (int64_t ep : expert_degrees) {
                    if (!allowed(f.ep, ep)) continue;
                    const size_t begin = plan.shapes.size();
                    for (int64_t pp : divisors(n / (tp * cp))) {
                        const int64_t dp = n / (tp * cp * pp);
                        if (!allowed(f.pp, pp) || !allowed(f.dp, dp) || pp > m.layers + 2 || gb % dp != 0) continue;
                        if ((dp * cp) % ep != 0) continue;
                        const Depth& depth = interleavings(pp);
                        if (depth.count == 0) continue;
                        Shape s{.tp = tp, .tp_rows = rows, .cp = cp, .ep = ep, .pp = pp, .dp = dp,
                                .vp_begin = depth.begin, .vp_count = depth.count, .max_vp = depth.max_vp};
                        add_placements(c, f, plan, s);
                        // A lower bound over the shape's splits: the smallest of theirs. A GPU's
                        // layers under one split do not depend on vp (L/pp even, (L+2)/pp - 1 at the
                        // ends with the slots), so one vp per split is costed.
                        for (int64_t z : plan.zeros) {
                            double low = std::numeric_limits<double>::infinity();
                            uint32_t seen = 0;
                            for (size_t v = 0; v < s.vp_count; ++v) {
                                const Interleave& iv = plan.vps[s.vp_begin + v];
                                const uint32_t bit = 1u << static_cast<unsigned>(iv.split);
                                if (seen & bit) continue;
                                seen |= bit;
                                low = std::min(low, static_memory_bytes(c, plan.params, s, z, iv, f));
                            }
                            s.static_bytes[static_cast<size_t>(z)] = low;
                        }
                        plan.shapes.push_back(s);
                    }
                    if (plan.shapes.size() > begin) groups.push_back({begin, plan.shapes.size()});
                }
            }
        }
    }

    if (plan.orders.size() <= o.placements_kept) {
        plan.places.reserve(plan.orders.size());
        for (const Shape& s : plan.shapes)
            for (size_t pl = s.place_begin; pl < s.place_begin + s.place_count; ++pl) plan.places.push_back(place_shape(c, s, plan.orders[pl]));
    }

    // Largest first: within a family the larger micro-batches bound the smaller ones (run_task).
    plan.microbatches = divisors(gb);
    std::reverse(plan.microbatches.begin(), plan.microbatches.end());
    const std::vector<int64_t>& microbatches = plan.microbatches;
    for (const Group& g : groups) {
        const int64_t tp = plan.shapes[g.begin].tp, cp = plan.shapes[g.begin].cp;
        const int64_t rows = plan.shapes[g.begin].tp_rows;
        // Sequence parallelism splits the tensor-parallel group's activations: no-op at tp 1,
        // implied by SUMMA.
        for (bool sp : {false, true}) {
            if (f.sequence_parallel ? *f.sequence_parallel != sp : (sp && tp == 1)) continue;
            if (rows > 1 && !sp) continue;
            std::array<bool, 3> modes{};
            for (Recompute rc : {Recompute::none, Recompute::selective, Recompute::full})
                modes[static_cast<size_t>(rc)] = !f.recompute || *f.recompute == rc;
            const auto n_modes = static_cast<int64_t>(std::count(modes.begin(), modes.end(), true));
            for (CpKind kind : kCpKinds) {
                if (!cp_kind_allowed(m, f, tp / rows, cp, kind)) continue;
                Task t{g.begin, g.end, sp, modes, std::vector<bool>(microbatches.size()), kind, 0};
                for (size_t k = 0; k < microbatches.size(); ++k) {
                    const int64_t mb = microbatches[k];
                    if (!allowed(f.microbatch, mb)) continue;
                    int64_t layouts = 0;
                    for (size_t i = g.begin; i < g.end; ++i)
                        if (admits(plan.shapes[i], gb, mb))
                            layouts += n_modes * static_cast<int64_t>(zeros_of(plan, plan.shapes[i]).size() * plan.shapes[i].vp_count *
                                                                      plan.shapes[i].place_count);
                    if (layouts == 0) continue;
                    t.microbatches[k] = true;
                    t.layouts += layouts;
                }
                if (t.layouts == 0) continue;
                plan.candidates += t.layouts;
                if (o.tp_within_domain && tp > c.system.used_per_domain(o.gpus)) {
                    plan.pruned_domain += t.layouts;
                    continue;
                }
                plan.tasks.push_back(std::move(t));
            }
        }
    }
    return plan;
}

// The best K of one worker, best first. Storage reserved up front: offering allocates nothing.
class TopK {
public:
    explicit TopK(size_t k) : k_(k) { hits_.reserve(k + 1); }
    [[nodiscard]] bool wants(double score) const { return hits_.size() < k_ || score <= hits_.back().score; }
    void offer(const SearchHit& h) {
        if (hits_.size() == k_) {
            if (!hit_before(h, hits_.back())) return;
            hits_.pop_back();
        }
        hits_.insert(std::upper_bound(hits_.begin(), hits_.end(), h, hit_before), h);
    }
    [[nodiscard]] const std::vector<SearchHit>& hits() const { return hits_; }
    // A layout scoring above this cannot enter (infinite until K are kept).
    [[nodiscard]] double worst() const { return hits_.size() < k_ ? std::numeric_limits<double>::infinity() : hits_.back().score; }

private:
    size_t k_;
    std::vector<SearchHit> hits_;
};

// What the current layer key costs by the placement of the layer's groups: one entry per
// distinct LayerSpans (a few per key). Entries are kept when cleared and refilled in place, so
// a worker neither allocates nor zeroes per key.
template <class T>
class SpanCache {
public:
    SpanCache() { entries_.reserve(64); }
    void clear() { used_ = 0; }
    // nullptr when not yet costed.
    [[nodiscard]] const T* find(const LayerSpans& key) const {
        for (size_t i = 0; i < used_; ++i)
            if (entries_[i].first == key) return &entries_[i].second;
        return nullptr;
    }
    // The entry for `key`, holding an earlier key's figures: the caller fills it.
    T& add(const LayerSpans& key) {
        if (used_ == entries_.size()) entries_.emplace_back();
        auto& e = entries_[used_++];
        e.first = key;
        return e.second;
    }

private:
    std::vector<std::pair<LayerSpans, T>> entries_;
    size_t used_ = 0;
};

// Everything one thread writes, on its own cache lines. The atomics are published once per
// task for the progress bar; the counters themselves are private.
struct alignas(64) Worker {
    explicit Worker(size_t k) : top(k) {}
    TopK top;
    SpanCache<LayerCosts> costs;  // of the current layer key and recompute mode
    SpanCache<LayerComms> comms;  // of the current layer key, for every recompute mode
    LayerOpSet ops;               // the current layer key's op lists and op costs (storage reused)
    LayerCompute compute;         // the current layer key's under the current recompute mode
    std::vector<Placement> places;  // the current task's, by Plan::orders index less its first (plan without them)
    // By places index: lost to the floor under a cheaper recompute mode of the current micro-batch.
    // A layout's step-time floor only grows from none to selective to full (the same passes and
    // collectives plus recomputed work, full's forward collectives twice), so it is lost under
    // every dearer mode too.
    std::vector<uint8_t> lost;
    SearchStats stats;
    std::atomic<int64_t> done{0};
    std::atomic<double> best{std::numeric_limits<double>::infinity()};
};

// What one task's loops share: the context, the worker's counters and best K, and the bound.
struct TaskScope {
    const TrainContext& c;
    const Plan& plan;
    Objective obj;
    Worker& w;
    bool floor_prunes;  // only the best K are wanted and the objective is step time's order
    double gpus, capacity;
    // Whether a step-time floor already loses to the K-th best kept (cost: the floor in dollars);
    // relative slack because the floor sums the step's terms in another order.
    [[nodiscard]] bool beaten(double floor_s) const {
        const double score = obj == Objective::cost ? cost_usd(c.system, floor_s, gpus) : floor_s;
        return score > w.top.worst() * (1.0 + 1e-12);
    }
};

// Counts every ZeRO stage and vp of `placements` placements of shape s as pruned: by memory
// where the stage cannot fit, else by the bound.
void count_pruned(const TaskScope& t, const Shape& s, int64_t placements) {
    const auto per_zero = static_cast<int64_t>(s.vp_count) * placements;
    for (int64_t z : zeros_of(t.plan, s))
        (s.static_bytes[static_cast<size_t>(z)] > t.capacity ? t.w.stats.pruned_memory : t.w.stats.pruned_bound) += per_zero;
}

// Every ZeRO stage and vp of shape s with its groups placed by `place`; `compute` is its layer
// key's (null only when no ZeRO stage of the shape fits in memory). `lost`: the placement lost to
// the floor under a cheaper recompute mode (skipped), or set here when it loses under this one.
void run_placement(const TaskScope& t, const Shape& s, const Placement& place, const LayerCompute* compute, ParallelConfig& p,
                   uint8_t& lost) {
    const TrainContext& c = t.c;
    Worker& w = t.w;
    if (lost) {
        count_pruned(t, s, 1);
        return;
    }
    p.order = place.order;
    const LayerCosts* costs = nullptr;
    double total_s = 0;  // one micro-batch through every stage, collectives included
    double floor_s = 0;  // under the step time of every ZeRO stage and vp of the placement
    for (int64_t z : zeros_of(t.plan, s)) {
        if (s.static_bytes[static_cast<size_t>(z)] > t.capacity) {
            w.stats.pruned_memory += static_cast<int64_t>(s.vp_count);
            continue;
        }
        p.zero = z;
        if (!costs) {
            costs = w.costs.find(place.layer);
            if (!costs) {
                const LayerComms* comms = w.comms.find(place.layer);
                if (!comms) {
                    LayerComms& fresh = w.comms.add(place.layer);
                    layer_comms(c, *compute->ops, place.layer, fresh);
                    comms = &fresh;
                }
                LayerCosts& fresh = w.costs.add(place.layer);
                cost_layers(c, p, place.layer, *compute, *comms, fresh);
                costs = &fresh;
                ++w.stats.layer_costings;
            }
            total_s = micro_batch_total_s(t.plan.params.layers, *costs);
            // The floor at the shape's largest vp holds for every ZeRO stage and vp.
            p.vp = s.max_vp;
            if (t.floor_prunes) floor_s = step_time_floor_s(c, p, total_s);
        }
        if (t.floor_prunes && t.beaten(floor_s)) {
            w.stats.pruned_bound += static_cast<int64_t>(s.vp_count);
            lost = 1;
            continue;
        }
        const StageRates rates = stage_rates(c, t.plan.params, p, *costs, place.spans);  // the same for every vp
        for (size_t v = 0; v < s.vp_count; ++v) {
            p.vp = t.plan.vps[s.vp_begin + v].vp;
            p.split = t.plan.vps[s.vp_begin + v].split;
            // A smaller vp has a longer bubble: its own floor may already lose.
            if (t.floor_prunes && p.vp < s.max_vp && t.beaten(step_time_floor_s(c, p, total_s))) {
                ++w.stats.pruned_bound;
                continue;
            }
            const TrainResult r = assemble_step(c, p, *costs, t.plan.params, place.spans, rates);
            ++w.stats.evaluated;
            if (!r.fits_in_memory) continue;
            ++w.stats.feasible;
            const double score = objective_score(t.obj, r);
            if (w.top.wants(score)) w.top.offer({p, r, score});
        }
    }
}

void run_task(const TrainContext& c, const Plan& plan, const Task& task, const LayoutConstraints& f, Objective obj,
              Worker& w, const std::atomic<bool>* stop, bool prune_by_floor) {
    const Shape& first = plan.shapes[task.shape_begin];
    // The floor bounds step time; only the step-time objective ranks by it directly. Cost is step
    // time times a constant (GPUs x price) at one GPU count, so the floor in dollars prunes it too.
    const TaskScope t{c,
                      plan,
                      obj,
                      w,
                      prune_by_floor && (obj == Objective::step_time || obj == Objective::cost),
                      static_cast<double>(first.tp * first.cp * first.pp * first.dp),
                      c.system.accel.memory_bytes};
    const int64_t gb = c.training.global_batch;
    ParallelConfig p;
    hold_split(p, f);
    p.sequence_parallel = task.sp;
    p.cp_kind = task.cp_kind;
    p.offload = f.offload;
    p.recompute_modules = f.recompute_modules;
    // By recompute mode, the tensor-array time per sample of the smallest micro-batch of this
    // family whose ops were built (0: none yet): no smaller micro-batch needs less per sample.
    std::array<double, 3> tensor_per_sample{};
    // The task's placements by Plan::orders index less its first: the plan's, else each shape's
    // orders placed here once.
    const size_t first_place = first.place_begin;
    const Shape& last = plan.shapes[task.shape_end - 1];
    const size_t n_places = last.place_begin + last.place_count - first_place;
    const Placement* places = nullptr;
    if (!plan.places.empty()) {
        places = plan.places.data() + first_place;
    } else {
        w.places.clear();
        for (size_t i = task.shape_begin; i < task.shape_end; ++i) {
            const Shape& s = plan.shapes[i];
            for (size_t pl = s.place_begin; pl < s.place_begin + s.place_count; ++pl) w.places.push_back(place_shape(c, s, plan.orders[pl]));
        }
        places = w.places.data();
    }
    for (size_t k = 0; k < plan.microbatches.size(); ++k) {
        if (!task.microbatches[k]) continue;
        const int64_t mb = plan.microbatches[k];
        p.microbatch = mb;
        w.comms.clear();
        w.lost.assign(n_places, 0);
        bool ops_built = false;  // w.ops holds this key's op lists and op costs, built at first need
        for (Recompute rc : {Recompute::none, Recompute::selective, Recompute::full}) {
            const auto mode = static_cast<size_t>(rc);
            if (!task.recompute[mode]) continue;
            p.recompute = rc;
            w.costs.clear();  // costed only if some layout needs them
            bool computed_here = false;  // w.compute holds this key's compute under rc
            double compute_total_s = 0;  // one micro-batch's compute through every stage
            auto computed = [&]() -> const LayerCompute& {
                if (!ops_built) {
                    layer_op_set(c, p, w.ops);
                    ops_built = true;
                }
                if (!computed_here) {
                    // Every layer under full: the search refuses parallel.recompute_layers.
                    compute_layers(c, w.ops, {rc, p.recompute_modules}, w.compute);
                    computed_here = true;
                    compute_total_s = micro_batch_total_s(plan.params.layers, w.compute.costs);
                    tensor_per_sample[mode] = micro_batch_tensor_s(plan.params.layers, w.compute.costs) / static_cast<double>(mb);
                }
                return w.compute;
            };
            for (size_t i = task.shape_begin; i < task.shape_end; ++i) {
                const Shape& s = plan.shapes[i];
                if (!admits(s, gb, mb)) continue;
                if (stop && stop->load(std::memory_order_relaxed)) return;
                const auto lost = w.lost.begin() + static_cast<std::ptrdiff_t>(s.place_begin - first_place);
                const auto lost_end = lost + static_cast<std::ptrdiff_t>(s.place_count);
                if (t.floor_prunes && std::all_of(lost, lost_end, [](uint8_t x) { return x != 0; })) {
                    count_pruned(t, s, static_cast<int64_t>(s.place_count));
                    continue;
                }
                set_degrees(p, s);
                p.vp = s.max_vp;  // the floors below hold for every vp of the shape
                // Bounds on every placement, ZeRO stage and vp of the shape, cheapest first: a
                // larger micro-batch's tensor time per sample (before this key's ops are built),
                // then the key's compute (before the placements' collectives are costed).
                const auto lost_before_ops = [&] {
                    return !computed_here && tensor_per_sample[mode] > 0 &&
                           t.beaten(step_time_floor_s(c, p, static_cast<double>(mb) * tensor_per_sample[mode]));
                };
                const auto lost_on_compute = [&] {
                    computed();
                    return t.beaten(step_time_floor_s(c, p, compute_total_s));
                };
                const std::vector<int64_t>& zeros = zeros_of(plan, s);
                if (t.floor_prunes && (lost_before_ops() || lost_on_compute())) {
                    count_pruned(t, s, static_cast<int64_t>(s.place_count));
                    std::fill(lost, lost_end, 1);
                    continue;
                }
                const bool some_zero_fits = std::any_of(zeros.begin(), zeros.end(), [&](int64_t z) {
                    return s.static_bytes[static_cast<size_t>(z)] <= t.capacity;
                });
                const LayerCompute* key = some_zero_fits ? &computed() : nullptr;
                for (size_t pl = s.place_begin; pl < s.place_begin + s.place_count; ++pl)
                    run_placement(t, s, places[pl - first_place], key, p, w.lost[pl - first_place]);
            }
        }
    }
}

// Whether layout p is in this plan's space: not another GPU count or constraint, a tp the domain
// rule cuts, a micro-batch the batch does not admit. The layout is rebuilt from the plan's
// entries as run_task builds it and must equal p.
bool in_space(const Plan& plan, const LayoutConstraints& f, int64_t global_batch, const ParallelConfig& p) {
    const auto mb = std::find(plan.microbatches.begin(), plan.microbatches.end(), p.microbatch);
    if (mb == plan.microbatches.end()) return false;
    const auto k = static_cast<size_t>(mb - plan.microbatches.begin());
    for (const Task& t : plan.tasks) {
        if (t.sp != p.sequence_parallel || t.cp_kind != p.cp_kind || !t.microbatches[k] || !t.recompute.at(static_cast<size_t>(p.recompute)))
            continue;
        for (size_t i = t.shape_begin; i < t.shape_end; ++i) {
            const Shape& s = plan.shapes[i];
            if (s.tp != p.tp || s.tp_rows != p.tp_rows || s.cp != p.cp || s.ep != p.ep || s.pp != p.pp) continue;
            const auto vps = plan.vps.begin() + static_cast<std::ptrdiff_t>(s.vp_begin);
            const auto iv = std::find_if(vps, vps + static_cast<std::ptrdiff_t>(s.vp_count),
                                         [&](const Interleave& v) { return v.vp == p.vp && v.split == p.split; });
            const auto orders = plan.orders.begin() + static_cast<std::ptrdiff_t>(s.place_begin);
            const auto order = std::find(orders, orders + static_cast<std::ptrdiff_t>(s.place_count), p.order);
            // The shape's ZeRO stages (a subset of the plan's) say whether p.zero is searched here.
            const std::vector<int64_t>& zeros = zeros_of(plan, s);
            const auto zero = std::find(zeros.begin(), zeros.end(), p.zero);
            if (!admits(s, global_batch, p.microbatch) || iv == vps + static_cast<std::ptrdiff_t>(s.vp_count) ||
                order == orders + static_cast<std::ptrdiff_t>(s.place_count) || zero == zeros.end())
                return false;
            ParallelConfig q;  // what run_task builds from these entries
            hold_split(q, f);
            q.sequence_parallel = t.sp;
            q.cp_kind = t.cp_kind;
            q.offload = f.offload;
            q.recompute_modules = f.recompute_modules;
            q.microbatch = *mb;
            q.recompute = p.recompute;
            set_degrees(q, s);
            q.order = *order;
            q.zero = *zero;
            q.vp = iv->vp;
            q.split = iv->split;
            return q == p;
        }
    }
    return false;
}

}  // namespace

std::optional<Objective> parse_objective(std::string_view s) {
    for (Objective o : {Objective::step_time, Objective::tokens_per_s_per_gpu, Objective::mfu, Objective::energy, Objective::cost})
        if (s == to_string(o)) return o;
    return std::nullopt;
}

std::string_view to_string(Objective o) {
    switch (o) {
        case Objective::step_time: return "step_time";
        case Objective::tokens_per_s_per_gpu: return "tokens_per_s_per_gpu";
        case Objective::mfu: return "mfu";
        case Objective::energy: return "energy";
        case Objective::cost: return "cost";
    }
    return "step_time";
}

double objective_score(Objective o, const TrainResult& r) {
    switch (o) {
        case Objective::step_time: return r.step_time_s;
        case Objective::tokens_per_s_per_gpu: return -r.tokens_per_s_per_gpu;
        case Objective::mfu: return -r.mfu;
        case Objective::energy: return r.energy.total_j();
        case Objective::cost: return r.cost_usd;
    }
    return r.step_time_s;
}

bool layout_before(const ParallelConfig& a, const ParallelConfig& b) {
    auto key = [](const ParallelConfig& p) {
        return std::tuple(p.tp, p.tp_rows, p.pp, p.dp, p.cp, p.ep, p.vp, p.sequence_parallel, p.microbatch, p.zero,
                          static_cast<int>(p.recompute), static_cast<int>(p.split), static_cast<int>(p.order),
                          static_cast<int>(p.cp_kind));
    };
    return key(a) < key(b);
}

bool hit_before(const SearchHit& a, const SearchHit& b) {
    if (a.score != b.score) return a.score < b.score;
    return layout_before(a.layout, b.layout);
}

std::vector<FoldedHit> fold_twins(const std::vector<SearchHit>& hits, size_t k, double tolerance) {
    // Whether `a` is `b` but for the fields a twin may differ in.
    const auto same_shape = [](ParallelConfig a, const ParallelConfig& b) {
        a.zero = b.zero;
        a.order = b.order;
        a.cp_kind = b.cp_kind;
        return a == b;
    };
    std::vector<FoldedHit> kept;
    for (const SearchHit& h : hits) {
        const auto twin = std::find_if(kept.begin(), kept.end(), [&](const FoldedHit& f) {
            return std::abs(h.score - f.hit.score) <= tolerance * std::abs(f.hit.score) && same_shape(h.layout, f.hit.layout);
        });
        if (twin != kept.end())
            ++twin->twins;
        else if (kept.size() < k)
            kept.push_back({h, 0});
    }
    return kept;
}

LayoutConstraints constraints_from(const ParallelConfig& p, const std::set<std::string>& given) {
    LayoutConstraints f;
    auto held = [&](const char* k) { return given.count(k) > 0; };
    if (held("tp")) f.tp = p.tp;
    if (held("tp_rows")) f.tp_rows = p.tp_rows;
    if (held("pp")) f.pp = p.pp;
    if (held("dp")) f.dp = p.dp;
    if (held("cp")) f.cp = p.cp;
    if (held("ep")) f.ep = p.ep;
    if (held("vp")) f.vp = p.vp;
    if (held("microbatch")) f.microbatch = p.microbatch;
    if (held("zero")) f.zero = p.zero;
    if (held("sequence_parallel")) f.sequence_parallel = p.sequence_parallel;
    if (held("recompute")) f.recompute = p.recompute;
    if (held("order")) f.order = p.order;
    if (held("cp_kind")) f.cp_kind = p.cp_kind;
    f.offload = p.offload;  // held, given or not: searching it would multiply the space by 4
    f.recompute_modules = p.recompute_modules;  // held: what selective recompute means
    if (held("pipeline_split")) f.split = p.split;
    if (held("pipeline_layout")) {
        f.split = PipelineSplit::layout;
        f.layout = p.layout;
        f.layout_mtp = p.layout_mtp;
    } else if (held("first_stage_layers") || held("last_stage_layers")) {
        f.split = PipelineSplit::first_last;
        f.first_stage_layers = p.first_stage_layers;
        f.last_stage_layers = p.last_stage_layers;
    }
    return f;
}

// What make_plan reads (see PlanCache).
struct PlanKey {
    ModelSpec model;
    TrainingSpec training;
    LayoutConstraints constraints;
    int64_t gpus = 0, used_per_domain = 0;
    bool tp_within_domain = true;
    size_t placements_kept = 0;
    bool operator==(const PlanKey&) const = default;
};

struct PlanCache::Impl {
    static constexpr size_t kKept = 8;  // a study varies few of the planning inputs at once
    std::mutex mu;
    std::vector<std::pair<PlanKey, std::shared_ptr<const Plan>>> plans;  // oldest first
};

PlanCache::PlanCache() : impl(std::make_unique<Impl>()) {}
PlanCache::~PlanCache() = default;
size_t PlanCache::size() const {
    std::lock_guard lock(impl->mu);
    return impl->plans.size();
}

namespace {

std::shared_ptr<const Plan> planned(const TrainContext& c, const LayoutConstraints& f, const SearchOptions& o) {
    // With offload the memory bound reads the host tier and the optimizer's time: plan afresh.
    if (!o.plans || f.offload != Offload::none) return std::make_shared<const Plan>(make_plan(c, f, o));
    PlanCache::Impl& cache = *o.plans->impl;
    PlanKey key{c.model, c.training, f, o.gpus, c.system.used_per_domain(o.gpus), o.tp_within_domain, o.placements_kept};
    {
        std::lock_guard lock(cache.mu);
        for (const auto& [k, plan] : cache.plans)
            if (k == key) return plan;
    }
    auto plan = std::make_shared<const Plan>(make_plan(c, f, o));  // outside the lock: searches plan in parallel
    std::lock_guard lock(cache.mu);
    if (cache.plans.size() == PlanCache::Impl::kKept) cache.plans.erase(cache.plans.begin());
    cache.plans.emplace_back(std::move(key), plan);
    return plan;
}

}  // namespace

int64_t candidate_layouts(const TrainContext& c, const LayoutConstraints& fixed, const SearchOptions& o) {
    return planned(c, fixed, o)->candidates;
}

std::optional<SearchHit> cost_in_space(const TrainContext& c, const LayoutConstraints& fixed, const SearchOptions& o,
                                       const ParallelConfig& p) {
    if (!in_space(*planned(c, fixed, o), fixed, c.training.global_batch, p)) return std::nullopt;
    // `train`'s costing of one layout is the search's, step for step (the search only splits it
    // to share each step among the layouts that read the same inputs).
    const TrainResult r = evaluate_training(c, p);
    if (!r.fits_in_memory) return std::nullopt;
    return SearchHit{p, r, objective_score(o.objective, r)};
}

SearchResult search_layouts(const TrainContext& c, const LayoutConstraints& fixed, const SearchOptions& o,
                            const ProgressFn& progress) {
    const Clock::time_point start = Clock::now();
    auto since = [&start] { return std::chrono::duration<double>(Clock::now() - start).count(); };
    const std::shared_ptr<const Plan> planned_here = planned(c, fixed, o);
    const Plan& plan = *planned_here;
    const unsigned n_threads = std::max(1u, o.threads);
    const size_t k = std::max<size_t>(1, o.top_k);

    std::vector<std::unique_ptr<Worker>> workers;
    for (unsigned i = 0; i < n_threads; ++i) workers.push_back(std::make_unique<Worker>(k));
    std::atomic<size_t> next{0};
    std::mutex mu;
    std::condition_variable cv;
    unsigned finished = 0;
    auto work = [&](Worker& w) {
        for (size_t i = next.fetch_add(1); i < plan.tasks.size(); i = next.fetch_add(1)) {
            if (o.stop && o.stop->load(std::memory_order_relaxed)) break;
            run_task(c, plan, plan.tasks[i], fixed, o.objective, w, o.stop, o.prune_by_floor);
            w.done.store(w.stats.evaluated + w.stats.pruned_memory + w.stats.pruned_bound, std::memory_order_relaxed);
            if (!w.top.hits().empty()) w.best.store(w.top.hits().front().score, std::memory_order_relaxed);
        }
        std::lock_guard lock(mu);
        ++finished;
        cv.notify_all();
    };
    std::vector<std::thread> threads;
    for (auto& w : workers) threads.emplace_back(work, std::ref(*w));
    auto snapshot = [&] {
        SearchProgress pr;
        pr.total = plan.candidates - plan.pruned_domain;
        pr.best_score = std::numeric_limits<double>::infinity();
        for (const auto& w : workers) {
            pr.done += w->done.load(std::memory_order_relaxed);
            pr.best_score = std::min(pr.best_score, w->best.load(std::memory_order_relaxed));
        }
        pr.have_best = pr.best_score < std::numeric_limits<double>::infinity();
        if (!pr.have_best) pr.best_score = 0;
        pr.elapsed_s = since();
        return pr;
    };
    {
        std::unique_lock lock(mu);
        while (!cv.wait_for(lock, std::chrono::milliseconds(100), [&] { return finished == n_threads; })) {
            if (!progress) continue;
            lock.unlock();
            progress(snapshot());
            lock.lock();
        }
    }
    for (auto& t : threads) t.join();
    // The final state once more: a search shorter than a tick still reports (and a test of the
    // progress figures does not depend on the clock).
    if (progress) progress(snapshot());

    SearchResult out;
    SearchStats& st = out.stats;
    st.candidates = plan.candidates;
    st.pruned_domain = plan.pruned_domain;
    st.threads = n_threads;
    for (const auto& w : workers) {
        st.pruned_memory += w->stats.pruned_memory;
        st.pruned_bound += w->stats.pruned_bound;
        st.evaluated += w->stats.evaluated;
        st.feasible += w->stats.feasible;
        st.layer_costings += w->stats.layer_costings;
        out.best.insert(out.best.end(), w->top.hits().begin(), w->top.hits().end());
    }
    std::sort(out.best.begin(), out.best.end(), hit_before);
    if (out.best.size() > k) out.best.resize(k);
    st.interrupted = o.stop && o.stop->load();
    st.elapsed_s = since();
    return out;
}

Expected<std::vector<int64_t>> parse_gpu_counts(std::string_view text) {
    return parse_int_list(text, {"--gpus", "256:16384:x2", kMaxSearchGpus, kMaxGpuCounts});
}

}  // namespace sm
