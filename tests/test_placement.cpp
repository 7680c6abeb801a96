// Group placement by real rank order: ranks fill scale-up domains in order, `used` per domain.
// Expectations are worked out by hand below, and a brute-force oracle enumerates every rank of
// random layouts, builds each group from the rank's coordinates, and counts members per domain.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "parallel/placement.hpp"
#include "test_helpers.hpp"

namespace sm {
namespace {

SystemSpec domains_of(int64_t domain, int64_t used) {
    SystemSpec s;
    s.scale_up_domain = domain;
    s.gpus_used_per_domain = used;
    return s;
}

ParallelConfig layout(int64_t tp, int64_t cp, int64_t dp, int64_t pp, int64_t ep = 1) {
    ParallelConfig p;
    p.tp = tp;
    p.cp = cp;
    p.dp = dp;
    p.pp = pp;
    p.ep = ep;
    return p;
}

void expect_span(const GroupSpan& g, int64_t size, int64_t local, int64_t remote) {
    EXPECT_EQ(g.size, size);
    EXPECT_EQ(g.local, local);
    EXPECT_EQ(g.remote, remote);
}

const GroupSpan& dp_of(const CommSpans& c) { return c.span[idx(CommGroup::dp)]; }

// Issue 8: tp 2, dp 64 (128 GPUs) on NVL72 racks run as 64 GPUs each. The dp group is every
// second rank of 0-127: ranks 0-63 (32 members) in rack 0, 64-127 (32) in rack 1. The old gcd
// rule gave gcd(72 / 2, 64) = 4 per domain and 16 domains.
TEST(Placement, Nvl72RunAs64) {
    const CommSpans c = place_groups(layout(2, 1, 64, 1), domains_of(72, 64));
    expect_span(dp_of(c), 64, 32, 2);
    expect_span(c.span[idx(CommGroup::tp)], 2, 2, 1);
}

// The same job on all 72 GPUs of each rack: ranks 0-71 (36 even ranks) in rack 0, 72-127 (28)
// in rack 1: the emptier side has 28 NICs for the cross-rack phase.
TEST(Placement, Nvl72RunAs72) {
    expect_span(dp_of(place_groups(layout(2, 1, 64, 1), domains_of(72, 72))), 64, 28, 2);
}

// tp 2, dp 64, pp 4 (512 GPUs) on racks of 72: counted in pairs of ranks (one tp pair each) a
// rack holds 36 pairs and each stage's dp group 64 consecutive pairs starting at pair 0, 64, 128,
// 192, i.e. at 0, 28, 20, 12 within a rack. Splits: 36+28 | 8+36+20 | 16+36+12 | 24+36+4. The
// cross-rack term (remote-1)/(remote local) is largest for 24+36+4: 2/(3x4) = 1/6 (vs 1/56,
// 1/12, 1/18): that group is the slowest and sets the collective.
TEST(Placement, StagesStartAtDifferentOffsetsInARack) {
    expect_span(dp_of(place_groups(layout(2, 1, 64, 4), domains_of(72, 72))), 64, 4, 3);
    // Run as 64 per rack, every stage's group is again 32 + 32.
    expect_span(dp_of(place_groups(layout(2, 1, 64, 4), domains_of(72, 64))), 64, 32, 2);
}

// tp 2 x dp 36 fills a rack of 72 exactly: one domain, whatever pp stacks on top.
TEST(Placement, Tp2Dp36FillsARack) {
    expect_span(dp_of(place_groups(layout(2, 1, 36, 1), domains_of(72, 72))), 36, 36, 1);
    expect_span(dp_of(place_groups(layout(2, 1, 36, 3), domains_of(72, 72))), 36, 36, 1);
    // Stages are 72 ranks apart: one per rack.
    expect_span(place_groups(layout(2, 1, 36, 3), domains_of(72, 72)).span[idx(CommGroup::pp)], 3, 1, 3);
}

// tp 8 divides 72: never split. tp 16 over 144 GPUs: groups at 0, 16, 32, 48 sit in rack 0,
// the one at 64 holds 64-71 and 72-79 (8 + 8), the rest sit in rack 1 (80-143).
TEST(Placement, TensorGroupsAcrossARackEdge) {
    expect_span(place_groups(layout(8, 1, 18, 1), domains_of(72, 72)).span[idx(CommGroup::tp)], 8, 8, 1);
    expect_span(place_groups(layout(16, 1, 9, 1), domains_of(72, 72)).span[idx(CommGroup::tp)], 16, 8, 2);
    // Used as 64 per rack, 16 divides it: no group straddles.
    expect_span(place_groups(layout(16, 1, 8, 1), domains_of(72, 64)).span[idx(CommGroup::tp)], 16, 16, 1);
}

// A job no bigger than one domain never leaves it, whatever the domain's used GPUs (those are how
// a job spanning domains divides among them); 8 GPUs per DGX node, dp across nodes with tp 8: one
// member per node.
TEST(Placement, WholeJobInOneDomainAndOnePerNode) {
    expect_span(dp_of(place_groups(layout(1, 1, 64, 1), domains_of(72, 64))), 64, 64, 1);
    expect_span(dp_of(place_groups(layout(1, 1, 65, 1), domains_of(72, 64))), 65, 65, 1);
    expect_span(dp_of(place_groups(layout(1, 1, 72, 1), domains_of(72, 64))), 72, 72, 1);
    expect_span(dp_of(place_groups(layout(1, 1, 73, 1), domains_of(72, 64))), 73, 9, 2);  // 64 + 9
    expect_span(dp_of(place_groups(layout(8, 1, 16, 1), domains_of(8, 8))), 16, 1, 16);
}

// Context parallelism inside the domain, tp across it (the ERA5 ViT's best order in Subramanian et
// al.): tp 4, cp 4, dp 2 on domains of 4. cp-tp-dp-pp puts cp's ranks 0-3 in one domain, tp's
// {0, 4, 8, 12} one per domain, and the gradients' dp x cp group {0-3, 16-19} as 4 + 4 over two.
// Megatron's tp-cp-dp-pp is the reverse: tp whole, cp and dp x cp (every 4th rank) one per domain.
TEST(Placement, ContextInsideTheDomainTensorAcross) {
    ParallelConfig p = layout(4, 4, 2, 1);
    p.order = RankOrder::cp_tp_dp;
    CommSpans c = place_groups(p, domains_of(4, 4));
    expect_span(c.span[idx(CommGroup::cp)], 4, 4, 1);
    expect_span(c.span[idx(CommGroup::tp)], 4, 1, 4);
    expect_span(dp_of(c), 8, 4, 2);
    p.order = RankOrder::tp_cp_dp;
    c = place_groups(p, domains_of(4, 4));
    expect_span(c.span[idx(CommGroup::tp)], 4, 4, 1);
    expect_span(c.span[idx(CommGroup::cp)], 4, 1, 4);
    expect_span(dp_of(c), 8, 1, 8);
    // tp-dp-cp-pp: dp (stride 4) before cp (stride 8): dp x cp is still every 4th rank.
    p.order = RankOrder::tp_dp_cp;
    expect_span(dp_of(place_groups(p, domains_of(4, 4))), 8, 1, 8);
}

// dp x cp with tp between them and nothing dividing: cp-tp-dp-pp, cp 3, tp 2, dp 2 (12 GPUs) on
// domains of 4. The group of tp rank 0 is {0, 1, 2, 6, 7, 8}: 3 in domain 0, 2 in domain 1
// (6, 7), 1 in domain 2 (8); that of tp rank 1, {3, 4, 5, 9, 10, 11}: 1 + 2 + 3. Both: fewest 1
// over 3 domains.
TEST(Placement, GradientGroupWithTensorRanksBetween) {
    ParallelConfig p = layout(2, 3, 2, 1);
    p.order = RankOrder::cp_tp_dp;
    expect_span(dp_of(place_groups(p, domains_of(4, 4))), 6, 1, 3);
    // Domains of 6: {0, 1, 2 | 6, 7, 8} is 3 + 3, {3, 4, 5 | 9, 10, 11} too.
    expect_span(dp_of(place_groups(p, domains_of(6, 6))), 6, 3, 2);
}

// ---- The brute-force oracle -------------------------------------------------------------------

// Every group of one kind: members listed by enumerating all ranks. Rank coordinates follow the
// order's digits, read from its name, fastest first: tp-cp-dp-pp (Megatron's) is
// r = t + tp (c + cp (d + dp q)), cp-tp-dp-pp is r = c + cp (t + tp (d + dp q)). For the experts
// each stage's tp x dp x cp ranks are re-cut as s = t + tp (e + ep f), whatever the order.
std::vector<std::vector<int64_t>> groups_by_enumeration(const ParallelConfig& p, CommGroup kind) {
    const int64_t n = p.gpus();
    const std::string order(to_string(p.order));
    std::map<std::tuple<int64_t, int64_t, int64_t, int64_t>, std::vector<int64_t>> groups;
    for (int64_t r = 0; r < n; ++r) {
        int64_t t = 0, c = 0, d = 0, q = 0, rest = r;
        for (size_t at = 0; at < order.size(); at += 3) {  // "tp-", "cp-", "dp-", "pp"
            const std::string name = order.substr(at, 2);
            const int64_t size = name == "tp" ? p.tp : name == "cp" ? p.cp : name == "dp" ? p.dp : p.pp;
            (name == "tp" ? t : name == "cp" ? c : name == "dp" ? d : q) = rest % size;
            rest /= size;
        }
        const int64_t stage = p.tp * p.cp * p.dp;
        const int64_t et = (r % stage) % p.tp;
        const int64_t f = (r % stage) / (p.tp * p.ep);
        std::tuple<int64_t, int64_t, int64_t, int64_t> key;
        // Under SUMMA a grid row is tp / tp_rows consecutive tp ranks, a grid column one rank of each row.
        const int64_t cols = p.tp / p.tp_rows;
        switch (kind) {
            case CommGroup::tp: key = {c, d, q, t / cols}; break;
            case CommGroup::tp_rows: key = {c, d, q, t % cols}; break;
            case CommGroup::cp: key = {t, d, q, 0}; break;
            case CommGroup::dp: key = {t, q, 0, 0}; break;  // dp x cp
            case CommGroup::ep: key = {et, f, q, 0}; break;
            case CommGroup::pp: key = {t, c, d, 0}; break;
        }
        groups[key].push_back(r);
    }
    std::vector<std::vector<int64_t>> out;
    for (auto& [k, members] : groups) out.push_back(members);
    return out;
}

// The slowest group: largest cross-domain bandwidth term (domains-1)/(domains x fewest), then
// the most domains.
GroupSpan slowest_by_enumeration(const ParallelConfig& p, CommGroup kind, int64_t used) {
    GroupSpan worst{};
    double worst_term = -1;
    for (const auto& members : groups_by_enumeration(p, kind)) {
        std::map<int64_t, int64_t> per_domain;
        for (int64_t r : members) ++per_domain[r / used];
        int64_t fewest = static_cast<int64_t>(members.size());
        for (const auto& [dom, count] : per_domain) fewest = std::min(fewest, count);
        const auto domains = static_cast<int64_t>(per_domain.size());
        const double term = static_cast<double>(domains - 1) / (static_cast<double>(domains) * static_cast<double>(fewest));
        if (term > worst_term || (term == worst_term && domains > worst.remote)) {
            worst_term = term;
            worst = {static_cast<int64_t>(members.size()), fewest, domains};
        }
    }
    if (worst.size <= 1) return {1, 1, 1};
    return worst;
}

// Every rank order, with sizes that divide neither the domain nor the GPUs used of it.
TEST(Placement, AgreesWithBruteForceOnRandomLayouts) {
    std::mt19937_64 rng(20261122);
    auto pick = [&](std::initializer_list<int64_t> v) { return *(v.begin() + static_cast<long>(rng() % v.size())); };
    for (int trial = 0; trial < 3000; ++trial) {
        ParallelConfig p = layout(pick({1, 2, 3, 4, 6, 8, 16}), pick({1, 2, 3, 4}), pick({1, 2, 3, 4, 5, 8, 12, 16, 36, 64}),
                                  pick({1, 2, 3, 4, 8}));
        p.order = kRankOrders[rng() % std::size(kRankOrders)];
        std::vector<int64_t> eps, rows;
        for (int64_t e = 1; e <= p.dp * p.cp; ++e)
            if (p.dp * p.cp % e == 0) eps.push_back(e);
        p.ep = eps[rng() % eps.size()];
        for (int64_t r = 1; r <= p.tp; ++r)
            if (p.tp % r == 0) rows.push_back(r);
        p.tp_rows = rows[rng() % rows.size()];
        const int64_t domain = pick({1, 2, 4, 8, 16, 18, 36, 64, 72, 80});
        const int64_t used = 1 + static_cast<int64_t>(rng() % static_cast<uint64_t>(domain));
        const CommSpans c = place_groups(p, domains_of(domain, used));
        // A job that fits in one domain fills it; a larger one takes `used` ranks of each.
        const int64_t placed = p.gpus() <= domain ? domain : used;
        for (CommGroup g : {CommGroup::tp, CommGroup::tp_rows, CommGroup::cp, CommGroup::dp, CommGroup::ep, CommGroup::pp}) {
            const GroupSpan want = slowest_by_enumeration(p, g, placed);
            const GroupSpan got = c.span[idx(g)];
            ASSERT_TRUE(got.size == want.size && got.local == want.local && got.remote == want.remote)
                << to_string(p.order) << " tp " << p.tp << " rows " << p.tp_rows << " cp " << p.cp << " dp " << p.dp << " pp " << p.pp << " ep " << p.ep
                << " domain " << domain << " used " << used << " group " << idx(g) << ": got " << got.size << "/" << got.local << "/"
                << got.remote << " want " << want.size << "/" << want.local << "/" << want.remote;
        }
    }
}

// One strided group shape at a time, exhaustively over small sizes: groups of `size` members
// `stride` apart tile `gpus` ranks (runs of stride x size), `used` ranks per domain; the slowest
// group by counting its members per domain.
TEST(Placement, StridedGroupsAgreeWithEnumerationExhaustively) {
    int checked = 0;
    for (int64_t stride = 1; stride <= 7; ++stride)
        for (int64_t size = 2; size <= 16; ++size)
            for (int64_t used = 1; used <= 13; ++used)
                for (int64_t runs = 1; runs <= 3; ++runs) {
                    const int64_t block = stride * size, gpus = block * runs;
                    GroupSpan want{};
                    double worst_term = -1;
                    for (int64_t k = 0; k < runs; ++k)
                        for (int64_t o = 0; o < stride; ++o) {
                            std::map<int64_t, int64_t> per_domain;
                            for (int64_t j = 0; j < size; ++j) ++per_domain[(k * block + o + stride * j) / used];
                            int64_t fewest = size;
                            for (const auto& [dom, count] : per_domain) fewest = std::min(fewest, count);
                            const auto domains = static_cast<int64_t>(per_domain.size());
                            const double term = static_cast<double>(domains - 1) / (static_cast<double>(domains) * static_cast<double>(fewest));
                            if (term > worst_term || (term == worst_term && domains > want.remote)) {
                                worst_term = term;
                                want = {size, fewest, domains};
                            }
                        }
                    const GroupSpan got = place_group(stride, size, gpus, used);
                    ASSERT_TRUE(got.size == want.size && got.local == want.local && got.remote == want.remote)
                        << "stride " << stride << " size " << size << " gpus " << gpus << " used " << used << ": got " << got.local << "/"
                        << got.remote << " want " << want.local << "/" << want.remote;
                    ++checked;
                }
    EXPECT_EQ(checked, 7 * 15 * 13 * 3);
}

// Whole experts (etp 1): the expert-parallel group is ep consecutive ranks of a stage (Megatron's
// expert order with etp 1 in tp's place), its replicas ep ranks apart.
TEST(Placement, FoldedExpertGroupsAreConsecutive) {
    std::mt19937_64 rng(7);
    auto pick = [&](std::initializer_list<int64_t> v) { return *(v.begin() + static_cast<long>(rng() % v.size())); };
    for (int trial = 0; trial < 500; ++trial) {
        ParallelConfig p = layout(pick({2, 4, 8}), pick({1, 2, 3}), pick({1, 2, 4, 8, 16, 32}), pick({1, 2}));
        p.etp = 1;
        p.order = kRankOrders[rng() % std::size(kRankOrders)];  // the expert layout does not depend on it
        const int64_t stage = p.tp * p.cp * p.dp;
        std::vector<int64_t> eps;
        for (int64_t e = 1; e <= stage; ++e)
            if (stage % e == 0) eps.push_back(e);
        p.ep = eps[rng() % eps.size()];
        const int64_t domain = pick({4, 8, 16, 36, 64, 72});
        const int64_t used = 1 + static_cast<int64_t>(rng() % static_cast<uint64_t>(domain));
        const CommSpans c = place_groups(p, domains_of(domain, used));
        const int64_t placed = p.gpus() <= domain ? domain : used;  // a job that fits in one domain fills it
        // Enumerate: rank r of stage q = r / stage; within it s = r % stage; ep group (s / ep, q),
        // expert replicas (s % ep, q).
        auto worst = [&](bool replicas) {
            std::map<std::pair<int64_t, int64_t>, std::map<int64_t, int64_t>> groups;  // key -> domain -> members
            for (int64_t r = 0; r < p.gpus(); ++r) {
                const int64_t s = r % stage, q = r / stage;
                ++groups[{replicas ? s % p.ep : s / p.ep, q}][r / placed];
            }
            GroupSpan w{1, 1, 1};
            double term = -1;
            for (const auto& [k, per] : groups) {
                int64_t size = 0, fewest = INT64_MAX;
                for (const auto& [d, n] : per) size += n, fewest = std::min(fewest, n);
                const auto doms = static_cast<int64_t>(per.size());
                const double t = static_cast<double>(doms - 1) / (static_cast<double>(doms) * static_cast<double>(fewest));
                if (size > 1 && (t > term || (t == term && doms > w.remote))) term = t, w = {size, fewest, doms};
            }
            return w;
        };
        for (const bool replicas : {false, true}) {
            const GroupSpan want = worst(replicas);
            const GroupSpan got = replicas ? c.expert_dp : c.span[idx(CommGroup::ep)];
            if (want.size <= 1) continue;
            ASSERT_TRUE(got.size == want.size && got.local == want.local && got.remote == want.remote)
                << "tp " << p.tp << " cp " << p.cp << " dp " << p.dp << " pp " << p.pp << " ep " << p.ep << " domain " << domain
                << " used " << used << (replicas ? " replicas" : " ep") << ": got " << got.size << "/" << got.local << "/"
                << got.remote << " want " << want.size << "/" << want.local << "/" << want.remote;
        }
    }
}

}  // namespace
}  // namespace sm
