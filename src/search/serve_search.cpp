#include "search/serve_search.hpp"

#include <algorithm>
#include <cmath>

#include "layout/rules.hpp"
#include "search/search.hpp"

namespace sm {

namespace {

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

std::vector<ParallelConfig> serving_layouts(const InferContext& c, int64_t gpus) {
    const ModelSpec& m = c.model;
    std::vector<ParallelConfig> out;
    for (const int64_t tp : divisors(gpus)) {
        if (tp > c.system.scale_up_domain) continue;
        for (const int64_t pp : divisors(gpus / tp)) {
            const int64_t dp = gpus / tp / pp;
            auto add = [&](int64_t ep, int64_t etp) {
                ParallelConfig p;
                p.tp = tp;
                p.pp = pp;
                p.dp = dp;
                p.ep = ep;
                p.etp = etp;
                if (check_layout(m, c.system, c.inference, p).empty()) out.push_back(p);
            };
            if (!m.moe.enabled()) {
                add(1, 0);
                continue;
            }
            // Experts split like the dense FFN over ep of the replicas, spread over the
            // tensor-parallel GPUs themselves (etp x ep = tp: TP attention with EP experts), or
            // split wider than attention over r of its replicas (etp = tp x r, ep = dp / r: DP
            // attention with TP or TP x EP experts).
            for (const int64_t ep : divisors(dp)) add(ep, 0);
            for (const int64_t etp : divisors(tp))
                if (etp < tp) add(tp / etp, etp);
            for (const int64_t r : divisors(dp))
                if (r > 1) add(dp / r, tp * r);
        }
    }
    return out;
}

bool meets(const ServingPoint& pt, const ServeTargets& t) {
    return pt.fits_in_memory && (t.ttft_s <= 0 || pt.ttft_s <= t.ttft_s) && (t.tpot_s <= 0 || pt.tpot_s <= t.tpot_s);
}

bool better(const ServeHit& a, const ServeHit& b, ServeObjective objective) {
    if (objective == ServeObjective::tokens_per_joule && a.point.energy_per_request_j != b.point.energy_per_request_j)
        return a.point.energy_per_request_j < b.point.energy_per_request_j;
    if (a.point.output_tokens_per_s_per_gpu != b.point.output_tokens_per_s_per_gpu)
        return a.point.output_tokens_per_s_per_gpu > b.point.output_tokens_per_s_per_gpu;
    if (a.point.ttft_s != b.point.ttft_s) return a.point.ttft_s < b.point.ttft_s;
    const int64_t ra = a.layout.tp * a.layout.pp, rb = b.layout.tp * b.layout.pp;
    if (ra != rb) return ra < rb;
    if (a.layout.tp != b.layout.tp) return a.layout.tp < b.layout.tp;
    if (a.layout.ep != b.layout.ep) return a.layout.ep < b.layout.ep;
    if (a.layout.expert_tp() != b.layout.expert_tp()) return a.layout.expert_tp() > b.layout.expert_tp();
    return a.point.concurrency < b.point.concurrency;
}

ServeSearchResult serve_search(const InferContext& c, int64_t gpus, const ServeTargets& targets, size_t top_k,
                               const std::function<void(int64_t, int64_t)>& progress) {
    ServeSearchResult r;
    const std::vector<ParallelConfig> layouts = serving_layouts(c, gpus);
    r.layouts = static_cast<int64_t>(layouts.size());
    std::vector<ServeHit> all;
    int64_t done = 0;
    for (const ParallelConfig& p : layouts) {
        LayoutPoints at(c, p);
        const int64_t limit = at.limit();
        if (limit > 0) {
            // The largest concurrency meeting the targets: TTFT and TPOT never fall as C grows
            // (more tokens per step, prompts queue sooner), so the feasible set is a prefix.
            const int64_t feasible = largest_on_prefix([&](int64_t n) { return meets(at.at(n), targets); }, limit);
            std::vector<int64_t> tries = concurrency_candidates(c, limit);
            if (feasible > 0) tries.push_back(feasible);
            std::sort(tries.begin(), tries.end());
            tries.erase(std::unique(tries.begin(), tries.end()), tries.end());
            for (const int64_t n : tries) {
                ServeHit h{p, with_energy(c.system, p, at.at(n))};
                ++r.points;
                if (n <= feasible && meets(h.point, targets)) r.best.push_back(h);
                all.push_back(h);
            }
        }
        if (progress) progress(++done, r.layouts);
    }
    std::sort(r.best.begin(), r.best.end(), [&](const ServeHit& a, const ServeHit& b) { return better(a, b, targets.objective); });
    if (r.best.size() > top_k) r.best.resize(top_k);
    r.pareto = pareto_front(std::move(all));
    return r;
}

std::vector<int64_t> instance_sizes(int64_t gpus) {
    std::vector<int64_t> out = divisors(gpus);
    for (int64_t g = 1; g < gpus; g *= 2) out.push_back(g);
    std::sort(out.begin(), out.end());
    out.erase(std::unique(out.begin(), out.end()), out.end());
    out.erase(std::remove_if(out.begin(), out.end(), [&](int64_t g) { return g >= gpus; }), out.end());
    return out;
}

namespace {

// Every point of one pool: each layout of each instance size at each concurrency worth trying
// (and the largest meeting the pool's own target), kept when it fits and meets that target.
// `partners`: for a prefill pool, the decode pool's layouts; TTFT includes the KV transfer to
// each, so the largest concurrency meeting what each transfer leaves of the target is tried too.
std::vector<ServeHit> pool_points(const InferContext& c, int64_t gpus, ServeRole role, const ServeTargets& t,
                                  const std::vector<ServeHit>& partners = {}) {
    const bool within = c.system.fits_one_domain(gpus);
    std::vector<ServeHit> out;
    for (const int64_t g : instance_sizes(gpus))
        for (const ParallelConfig& p : serving_layouts(c, g)) {
            LayoutPoints at(c, p, role);
            const int64_t limit = at.limit();
            if (limit == 0) continue;
            auto ok = [&](const ServingPoint& pt) {
                return pt.fits_in_memory && (role == ServeRole::prefill ? t.ttft_s <= 0 || pt.ttft_s <= t.ttft_s
                                                                        : t.tpot_s <= 0 || pt.tpot_s <= t.tpot_s);
            };
            std::vector<int64_t> tries = concurrency_candidates(c, limit, role);
            tries.push_back(largest_on_prefix([&](int64_t n) { return ok(at.at(n)); }, limit));
            if (t.ttft_s > 0) {
                // The TTFT left after each partner's cache transfer; partners of one shape share
                // a transfer time, so each distinct budget is bisected once.
                std::vector<double> budgets;
                budgets.reserve(partners.size());
                for (const ServeHit& partner : partners) budgets.push_back(t.ttft_s - kv_transfer_s(c, p, partner.layout, within));
                std::sort(budgets.begin(), budgets.end());
                budgets.erase(std::unique(budgets.begin(), budgets.end()), budgets.end());
                for (const double budget : budgets)
                    tries.push_back(largest_on_prefix([&](int64_t n) { return at.at(n).ttft_s <= budget; }, limit));
            }
            std::sort(tries.begin(), tries.end());
            tries.erase(std::unique(tries.begin(), tries.end()), tries.end());
            for (const int64_t n : tries) {
                if (n < 1) continue;
                ServeHit h{p, with_energy(c.system, p, at.at(n))};
                if (ok(h.point)) out.push_back(h);
            }
        }
    return out;
}

// A pairing before it is kept: what ranking needs, the pools by index.
struct Pairing {
    size_t prefill = 0, decode = 0;
    int64_t x = 0, y = 0, gpus = 0;
    double transfer_s = 0, requests_per_s = 0, ttft_s = 0, per_gpu = 0;
    Energy energy;  // per request
};

bool pairing_better(const Pairing& a, const Pairing& b, ServeObjective objective) {
    if (objective == ServeObjective::tokens_per_joule && a.energy.total_j() != b.energy.total_j())
        return a.energy.total_j() < b.energy.total_j();
    if (a.per_gpu != b.per_gpu) return a.per_gpu > b.per_gpu;
    if (a.ttft_s != b.ttft_s) return a.ttft_s < b.ttft_s;
    if (a.gpus != b.gpus) return a.gpus < b.gpus;
    if (a.prefill != b.prefill) return a.prefill < b.prefill;
    if (a.decode != b.decode) return a.decode < b.decode;
    return a.x < b.x;
}

// One request's share of a pool point's steady-state energy (a replica's step over the requests
// it finishes in it).
Energy per_request(const ServeHit& h) { return h.point.energy.scaled(1.0 / replica_requests_per_step(h.point, h.layout.dp)); }

// The idle energy per request of n instances of point `pt` serving `rate` requests/s (at most n x
// its rate): their GPUs wait the rest of the time.
Energy waiting(const SystemSpec& sys, const ServingPoint& pt, int64_t n, double rate) {
    const double busy = rate / (static_cast<double>(n) * pt.requests_per_s);
    return energy_of(sys, Work{}, std::max(0.0, 1.0 - busy) / rate, static_cast<double>(n * pt.gpus));
}

}  // namespace

std::array<int64_t, 2> decode_instance_candidates(double prefill_rate, double decode_rate, int64_t most) {
    const double even = prefill_rate / decode_rate;
    auto within = [&](double y) { return std::clamp<int64_t>(static_cast<int64_t>(y), 1, most); };
    return {within(std::floor(even)), within(std::ceil(even))};
}

DisaggResult disaggregated_search(const InferContext& c, int64_t gpus, const ServeTargets& targets, size_t top_k) {
    DisaggResult r;
    std::vector<ServeHit> decode = pool_points(c, gpus, ServeRole::decode, targets);
    // A decode pool is judged by its rate per GPU alone (TTFT does not depend on it beyond the
    // transfer): keep each layout's best point.
    auto same = [](const ServeHit& a, const ServeHit& b) { return !layout_before(a.layout, b.layout) && !layout_before(b.layout, a.layout); };
    std::sort(decode.begin(), decode.end(), [&](const ServeHit& a, const ServeHit& b) {
        if (!same(a, b)) return layout_before(a.layout, b.layout);
        return a.point.requests_per_s > b.point.requests_per_s;
    });
    decode.erase(std::unique(decode.begin(), decode.end(), same), decode.end());
    const std::vector<ServeHit> prefill = pool_points(c, gpus, ServeRole::prefill, targets, decode);
    const bool within = c.system.fits_one_domain(gpus);
    r.prefill_points = static_cast<int64_t>(prefill.size());
    r.decode_points = static_cast<int64_t>(decode.size());
    const double out_len = static_cast<double>(c.inference.output_len);
    // Per request, once per point rather than per pairing: each pool point's own energy, and the
    // decode point's with the prompt's KV move into its layout.
    const bool energy = c.system.energy.known();
    std::vector<Energy> prefill_j(prefill.size()), decode_j(decode.size());
    if (energy) {
        for (size_t i = 0; i < prefill.size(); ++i) prefill_j[i] = per_request(prefill[i]);
        for (size_t j = 0; j < decode.size(); ++j) decode_j[j] = per_request(decode[j]) + kv_transfer_energy(c, decode[j].layout, within);
    }
    std::vector<Pairing> all;
    for (size_t i = 0; i < prefill.size(); ++i)
        for (size_t j = 0; j < decode.size(); ++j) {
            const ServingPoint& pf = prefill[i].point;
            const ServingPoint& dc = decode[j].point;
            const double transfer = kv_transfer_s(c, prefill[i].layout, decode[j].layout, within);
            if (targets.ttft_s > 0 && pf.ttft_s + transfer > targets.ttft_s) continue;
            const Energy own = prefill_j[i] + decode_j[j];  // the pools' own, per request (zero without figures)
            // The best instance counts of this pair: x prefill instances with enough decode
            // instances to keep up with them, or as many as the budget leaves.
            std::optional<Pairing> best;
            for (int64_t x = 1; x * pf.gpus + dc.gpus <= gpus; ++x) {
                const double rate_p = static_cast<double>(x) * pf.requests_per_s;
                for (const int64_t y : decode_instance_candidates(rate_p, dc.requests_per_s, (gpus - x * pf.gpus) / dc.gpus)) {
                    const double rate = std::min(rate_p, static_cast<double>(y) * dc.requests_per_s);
                    const int64_t used = x * pf.gpus + y * dc.gpus;
                    const Pairing q{i, j, x, y, used, transfer, rate, pf.ttft_s + transfer, rate * out_len / static_cast<double>(used),
                                    energy ? own + waiting(c.system, pf, x, rate) + waiting(c.system, dc, y, rate) : Energy{}};
                    if (!best || pairing_better(q, *best, targets.objective)) best = q;
                }
            }
            if (best) all.push_back(*best);
        }
    std::sort(all.begin(), all.end(), [&](const Pairing& a, const Pairing& b) { return pairing_better(a, b, targets.objective); });
    // One row per pool pairing: the same instances at another prefill concurrency only differ in
    // TTFT, and the first (the lowest at the same rate) is kept.
    std::vector<const Pairing*> kept;
    for (const Pairing& q : all) {
        if (kept.size() == top_k) break;
        const bool seen = std::any_of(kept.begin(), kept.end(), [&](const Pairing* k) {
            const ParallelConfig &a = prefill[k->prefill].layout, &b = prefill[q.prefill].layout;
            return k->decode == q.decode && k->x == q.x && k->y == q.y && !layout_before(a, b) && !layout_before(b, a);
        });
        if (!seen) kept.push_back(&q);
    }
    for (const Pairing* k : kept) {
        const Pairing& q = *k;
        const ServeHit& dc = decode[q.decode];
        r.best.push_back({prefill[q.prefill], dc, q.x, q.y, q.gpus, q.transfer_s, q.requests_per_s, q.ttft_s, dc.point.tpot_s,
                          q.per_gpu, dc.point.output_tokens_per_s_per_user, q.energy});
    }
    return r;
}

}  // namespace sm
