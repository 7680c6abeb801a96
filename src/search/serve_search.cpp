#include "search/serve_search.hpp"

#include <algorithm>

#include "search/search.hpp"

namespace sm {

namespace {

// The cuts check_inference_layout accepts (scenario.cpp): tp cuts the model
// (tensor_parallel_misfit); pp divides the layers; ep divides the experts and dp.
bool valid_cut(const ModelSpec& m, const ParallelConfig& p) {
    if (tensor_parallel_misfit(m, p.tp) || m.layers % p.pp != 0) return false;
    if (p.ep > 1 && (!m.moe.enabled() || m.moe.experts % p.ep != 0 || p.dp % p.ep != 0)) return false;
    return true;
}

// Largest concurrency in [1, limit] meeting the targets: TTFT and TPOT never fall as C grows
// (more tokens per step, prompts queue sooner), so the feasible set is a prefix.
int64_t largest_meeting(const InferContext& c, const ParallelConfig& p, const ServeTargets& t, int64_t limit) {
    return largest_on_prefix([&](int64_t n) { return meets(serve_at(c, p, n), t); }, limit);
}

// Keeps the points no other point beats on both tokens/s/GPU and tokens/s/user.
std::vector<ServeHit> pareto_front(std::vector<ServeHit> all) {
    std::sort(all.begin(), all.end(), [](const ServeHit& a, const ServeHit& b) {
        if (a.point.output_tokens_per_s_per_user != b.point.output_tokens_per_s_per_user)
            return a.point.output_tokens_per_s_per_user > b.point.output_tokens_per_s_per_user;
        return better(a, b);
    });
    std::vector<ServeHit> front;
    double best_gpu = -1;
    for (ServeHit& h : all)
        if (h.point.output_tokens_per_s_per_gpu > best_gpu) {
            best_gpu = h.point.output_tokens_per_s_per_gpu;
            front.push_back(h);
        }
    return front;
}

}  // namespace

std::vector<ParallelConfig> serving_layouts(const ModelSpec& m, const SystemSpec& sys, int64_t gpus) {
    std::vector<ParallelConfig> out;
    for (const int64_t tp : divisors(gpus)) {
        if (tp > sys.scale_up_domain) continue;
        for (const int64_t pp : divisors(gpus / tp)) {
            const int64_t dp = gpus / tp / pp;
            for (const int64_t ep : m.moe.enabled() ? divisors(dp) : std::vector<int64_t>{1}) {
                ParallelConfig p;
                p.tp = tp;
                p.pp = pp;
                p.dp = dp;
                p.ep = ep;
                if (valid_cut(m, p)) out.push_back(p);
            }
        }
    }
    return out;
}

bool meets(const ServingPoint& pt, const ServeTargets& t) {
    return pt.fits_in_memory && (t.ttft_s <= 0 || pt.ttft_s <= t.ttft_s) && (t.tpot_s <= 0 || pt.tpot_s <= t.tpot_s);
}

bool better(const ServeHit& a, const ServeHit& b) {
    if (a.point.output_tokens_per_s_per_gpu != b.point.output_tokens_per_s_per_gpu)
        return a.point.output_tokens_per_s_per_gpu > b.point.output_tokens_per_s_per_gpu;
    if (a.point.ttft_s != b.point.ttft_s) return a.point.ttft_s < b.point.ttft_s;
    const int64_t ra = a.layout.tp * a.layout.pp, rb = b.layout.tp * b.layout.pp;
    if (ra != rb) return ra < rb;
    if (a.layout.tp != b.layout.tp) return a.layout.tp < b.layout.tp;
    if (a.layout.ep != b.layout.ep) return a.layout.ep < b.layout.ep;
    return a.point.concurrency < b.point.concurrency;
}

ServeSearchResult serve_search(const InferContext& c, int64_t gpus, const ServeTargets& targets, size_t top_k,
                               const std::function<void(int64_t, int64_t)>& progress) {
    ServeSearchResult r;
    const std::vector<ParallelConfig> layouts = serving_layouts(c.model, c.system, gpus);
    r.layouts = static_cast<int64_t>(layouts.size());
    std::vector<ServeHit> all;
    int64_t done = 0;
    for (const ParallelConfig& p : layouts) {
        const int64_t limit = max_concurrency_that_fits(c, p);
        if (limit > 0) {
            const int64_t feasible = largest_meeting(c, p, targets, limit);
            std::vector<int64_t> tries = concurrency_candidates(c, limit);
            if (feasible > 0) tries.push_back(feasible);
            std::sort(tries.begin(), tries.end());
            tries.erase(std::unique(tries.begin(), tries.end()), tries.end());
            for (const int64_t n : tries) {
                ServeHit h{p, serve_at(c, p, n)};
                ++r.points;
                if (n <= feasible && meets(h.point, targets)) r.best.push_back(h);
                all.push_back(h);
            }
        }
        if (progress) progress(++done, r.layouts);
    }
    std::sort(r.best.begin(), r.best.end(), better);
    if (r.best.size() > top_k) r.best.resize(top_k);
    r.pareto = pareto_front(std::move(all));
    return r;
}

}  // namespace sm
