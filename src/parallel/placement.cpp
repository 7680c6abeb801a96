#include "parallel/placement.hpp"

#include <algorithm>
#include <numeric>
#include <vector>

namespace sm {

namespace {

int64_t ceil_div(int64_t a, int64_t b) { return a >= 0 ? (a + b - 1) / b : -((-a) / b); }

// One group, members a + stride j (0 <= j < size), with stride < used and stride coprime to
// used (place_group divides out their gcd): every domain between the first and the last
// member's holds at least one member.
GroupSpan split_of(int64_t a, int64_t stride, int64_t size, int64_t used) {
    const int64_t d0 = a / used;
    const int64_t d1 = (a + stride * (size - 1)) / used;
    if (d0 == d1) return {size, size, 1};
    // Members below rank x, a domain edge past the first member (x > a: at least that one).
    auto below = [&](int64_t x) { return std::min(ceil_div(x - a, stride), size); };
    int64_t fewest = std::min(below((d0 + 1) * used), size - below(d1 * used));
    // A full domain holds q = used / stride members, or q + 1: q + 1 when its first member sits
    // less than used mod stride ranks past its edge. That offset steps by used mod stride from one
    // domain to the next (coprime to stride), so stride domains in a row include a q.
    const int64_t q = used / stride;
    const int64_t middle = d1 - d0 - 1;
    if (middle > 0 && fewest > q) {
        if (stride == 1 || middle >= stride) return {size, q, d1 - d0 + 1};
        for (int64_t m = d0 + 1; m < d1 && fewest > q; ++m)
            fewest = std::min(fewest, below((m + 1) * used) - below(m * used));
    }
    return {size, fewest, d1 - d0 + 1};
}

// Whether group x is slower than group y across domains: each of the `local` NICs carries a
// (remote - 1) / remote share of bytes / local (ring over the domains); ties go to more domains.
bool slower(const GroupSpan& x, const GroupSpan& y) {
    const int64_t lhs = (x.remote - 1) * y.remote * y.local;
    const int64_t rhs = (y.remote - 1) * x.remote * x.local;
    return lhs != rhs ? lhs > rhs : x.remote > y.remote;
}

}  // namespace

GroupSpan place_group(int64_t stride, int64_t size, int64_t gpus, int64_t used) {
    if (size <= 1) return {1, 1, 1};
    if (gpus <= used) return {size, size, 1};    // the whole job in one domain
    if (stride >= used) return {size, 1, size};  // every member in its own domain
    const int64_t span = stride * size;  // ranks one run of groups covers
    if (used % stride == 0) {  // the common case, before any gcd
        if (used % span == 0) return {size, size, 1};                   // runs tile a domain
        if (span % used == 0) return {size, used / stride, span / used};  // runs cover whole domains
    }
    // Domain edges and group starts are multiples of g = gcd(stride, used) apart, so counting in
    // cells of g ranks changes no count: stride and used become coprime.
    const int64_t g = std::gcd(stride, used);
    stride /= g;
    used /= g;
    gpus /= g;
    const int64_t block = stride * size;
    // Uneven: the split depends on where a group starts within a domain, a mod used. Starts are
    // o + block k (0 <= o < stride); block k mod used takes every multiple of G = gcd(block, used)
    // and repeats after used / G runs. When all of them occur, the start farthest into a domain
    // is the slowest group: it spans the most domains and has the smallest possible piece in its
    // first domain (G contiguous ranks, or 1 member when the offsets fill the gaps).
    const int64_t G = std::gcd(block, used);
    const int64_t runs = std::min(gpus / block, used / G);
    if (runs == used / G && (stride == 1 || stride >= G))
        return split_of(stride == 1 ? used - G : used - 1, stride, size, used);
    GroupSpan worst{size, size, 1};
    for (int64_t k = 0; k < runs; ++k)
        for (int64_t o = 0; o < stride; ++o) {
            const GroupSpan s = split_of(o + (block * k) % used, stride, size, used);
            if (slower(s, worst)) worst = s;
        }
    return worst;
}

namespace {

// Runs of `inner` consecutive ranks, `outer` of them `inner x gap` ranks apart: the dp x cp group
// when tp sits between cp and dp in the order (cp-tp-dp-pp: inner cp, gap tp, outer dp). Groups
// start at t inner + q stage (t < gap, q < gpus / stage, stage = inner gap outer). A group's
// members per domain depend only on its start mod `used`, so each such residue is walked once.
// Within one group, a domain strictly between its first and last holds the members of the run
// pattern in [offset, offset + used), offset = (domain start - group start) mod step, and that
// offset repeats every step / gcd(step, used) domains: one period of them says the fewest members
// and how many domains of a period hold none, whatever the group's length.
// Only for inner, gap, outer > 1 (place_groups takes one strided run otherwise).
GroupSpan place_blocks(int64_t inner, int64_t gap, int64_t outer, int64_t gpus, int64_t used) {
    const int64_t size = inner * outer;
    if (gpus <= used) return {size, size, 1};
    const int64_t step = inner * gap;  // from one run to the next
    const int64_t stage = step * outer;
    const int64_t stages = gpus / stage;
    const int64_t period = step / std::gcd(step, used);  // in domains
    GroupSpan worst{size, size, 1};
    std::vector<char> seen(static_cast<size_t>(used), 0);
    const int64_t periods = std::min(stages, used / std::gcd(stage, used));
    for (int64_t q = 0; q < periods; ++q)
        for (int64_t t = 0; t < gap; ++t) {
            const int64_t a = t * inner + q * stage;
            char& mark = seen[static_cast<size_t>(a % used)];
            if (mark) continue;
            mark = 1;
            // Members below rank x.
            auto below = [&](int64_t x) -> int64_t {
                const int64_t y = x - a;
                if (y <= 0) return 0;
                const int64_t j = y / step;
                return j >= outer ? size : j * inner + std::min(y % step, inner);
            };
            auto in = [&](int64_t d) { return below((d + 1) * used) - below(d * used); };
            const int64_t d0 = a / used, d1 = (a + step * (outer - 1) + inner - 1) / used;
            if (d0 == d1) continue;  // one domain: never slower than `worst`'s start
            // The first and last domains hold members (the first and last of the group).
            GroupSpan g{size, std::min(in(d0), in(d1)), 2};
            const int64_t middle = d1 - d0 - 1;
            const int64_t walked = std::min(middle, period);
            int64_t held = 0, held_in_rest = 0;  // domains with members: in the period, in its first middle % period
            for (int64_t k = 0; k < walked; ++k) {
                const int64_t n = in(d0 + 1 + k);
                if (n == 0) continue;
                g.local = std::min(g.local, n);
                ++held;
                if (k < middle % period) ++held_in_rest;
            }
            g.remote += middle > period ? (middle / period) * held + held_in_rest : held;
            if (slower(g, worst)) worst = g;
        }
    return worst;
}

}  // namespace

RankStrides rank_strides(const ParallelConfig& p) {
    // The three inner digits from the fastest; pp is always the outermost.
    CommGroup digits[3] = {CommGroup::tp, CommGroup::cp, CommGroup::dp};
    switch (p.order) {
        case RankOrder::tp_cp_dp: break;
        case RankOrder::tp_dp_cp: digits[1] = CommGroup::dp, digits[2] = CommGroup::cp; break;
        case RankOrder::cp_tp_dp: digits[0] = CommGroup::cp, digits[1] = CommGroup::tp; break;
        case RankOrder::cp_dp_tp: digits[0] = CommGroup::cp, digits[1] = CommGroup::dp, digits[2] = CommGroup::tp; break;
        case RankOrder::dp_tp_cp: digits[0] = CommGroup::dp, digits[1] = CommGroup::tp, digits[2] = CommGroup::cp; break;
        case RankOrder::dp_cp_tp: digits[0] = CommGroup::dp, digits[1] = CommGroup::cp, digits[2] = CommGroup::tp; break;
    }
    auto size_of = [&](CommGroup g) { return g == CommGroup::tp ? p.tp : g == CommGroup::cp ? p.cp : p.dp; };
    RankStrides r;
    int64_t stride = 1;
    for (CommGroup g : digits) {
        (g == CommGroup::tp ? r.tp : g == CommGroup::cp ? r.cp : r.dp) = stride;
        stride *= size_of(g);
    }
    r.pp = stride;
    return r;
}

LayerSpans place_layer_groups(const ParallelConfig& p, const SystemSpec& s) {
    const int64_t n = p.gpus();
    const int64_t u = s.used_per_domain(n);
    const RankStrides st = rank_strides(p);
    LayerSpans l;
    l.tp = place_group(st.tp, p.tp_cols(), n, u);
    l.tp_rows = place_group(st.tp * p.tp_cols(), p.tp_rows, n, u);
    l.cp = place_group(st.cp, p.cp, n, u);
    // Megatron-Core's expert rank generator (parallel_state.py: etp, ep, dp with cp = 1, order
    // tp-cp-ep-dp-pp) folds tp x dp x cp and takes ep next to etp: expert groups are etp ranks
    // apart (tp apart by default; consecutive ranks when experts are whole, etp 1). With pp
    // outermost a stage is a block of contiguous ranks, so whatever the dense order, the expert
    // layers re-cut the same ranks the same way: etp fastest, then ep, then the expert replicas.
    l.ep = place_group(p.expert_tp(), p.ep, n, u);
    return l;
}

CommSpans place_groups(const ParallelConfig& p, const SystemSpec& s) {
    CommSpans c;
    const int64_t n = p.gpus();
    const int64_t u = s.used_per_domain(n);
    const RankStrides st = rank_strides(p);
    const LayerSpans l = place_layer_groups(p, s);
    c.span[idx(CommGroup::tp)] = l.tp;
    c.span[idx(CommGroup::cp)] = l.cp;
    c.span[idx(CommGroup::ep)] = l.ep;
    c.span[idx(CommGroup::tp_rows)] = l.tp_rows;
    // Experts wider than attention's tensor parallelism (inference): the expert rank order's etp
    // digit, fastest, holds etp / tp attention replicas of tp ranks each.
    c.span[idx(CommGroup::etp)] = place_group(p.tp, std::max<int64_t>(1, p.expert_tp() / p.tp), n, u);
    // Gradients reduce over dp x cp: one strided run when either is 1 or the two digits are
    // neighbours, runs of the inner one with tp's ranks between them otherwise.
    const bool tp_between = p.tp > 1 && st.tp > std::min(st.cp, st.dp) && st.tp < std::max(st.cp, st.dp);
    c.span[idx(CommGroup::dp)] = p.cp == 1     ? place_group(st.dp, p.dp, n, u)
                                 : p.dp == 1   ? place_group(st.cp, p.cp, n, u)
                                 : !tp_between ? place_group(std::min(st.cp, st.dp), p.dp * p.cp, n, u)
                                 : st.cp < st.dp ? place_blocks(p.cp, p.tp, p.dp, n, u)
                                                 : place_blocks(p.dp, p.tp, p.cp, n, u);
    c.span[idx(CommGroup::pp)] = place_group(st.pp, p.pp, n, u);
    // Ranks etp x ep apart hold the same experts (Megatron's expert rank order tp-ep-dp-pp).
    c.expert_dp = p.experts_have_own_replicas() ? place_group(p.expert_tp() * p.ep, p.expert_replicas(), n, u)
                                                : c.span[idx(CommGroup::dp)];
    return c;
}

}  // namespace sm
