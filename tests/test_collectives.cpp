// Collective costs on one and two network levels against hand arithmetic with the DGX H100
// preset's links: NVLink 450 GB/s x 0.75 = 337.5 GB/s, 2.5 us per hop; InfiniBand 50 GB/s x 0.85 =
// 42.5 GB/s, 5 us per hop; 8 GPUs per scale-up domain. A ring collective over n GPUs moves
// 2 (n-1)/n S (all-reduce) or (n-1)/n S (all-gather, reduce-scatter) per GPU and pays
// min(ring hops, 2 ceil(log2 n)) latencies (NCCL's switch to trees).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "comm/collectives.hpp"
#include "parallel/placement.hpp"
#include "test_helpers.hpp"

namespace sm {
namespace {

constexpr double kUp = 337.5e9, kUpLat = 2.5e-6, kOut = 42.5e9, kOutLat = 5e-6;
constexpr double S = 1e9;

SystemSpec h100() {
    const SystemSpec s = testing::system_preset("dgx-h100");
    EXPECT_DOUBLE_EQ(s.scale_up.effective_bw(), kUp);
    EXPECT_DOUBLE_EQ(s.scale_up.latency_s, kUpLat);
    EXPECT_DOUBLE_EQ(s.scale_out.effective_bw(), kOut);
    EXPECT_DOUBLE_EQ(s.scale_out.latency_s, kOutLat);
    EXPECT_EQ(s.scale_up_domain, 8);
    return s;
}

// 16 GPUs as 2 domains of 8: reduce-scatter S in the domain (7/8 S over NVLink, min(7, 6) = 6
// hops), all-reduce the S/8 shard across the 2 domains (2 x 1/2 x S/8 over InfiniBand, min(2, 2)
// hops), all-gather S back in the domain.
TEST(Collectives, TwoLevelAllReduceByHand) {
    const SystemSpec s = h100();
    const double intra = 7.0 / 8 * S / kUp + 6 * kUpLat;  // 2.5926 ms + 15 us
    const double inter = S / 8 / kOut + 2 * kOutLat;      // 2.9412 ms + 10 us
    EXPECT_NEAR(collective_time_s(Collective::all_reduce, S, {16, 8, 2}, s), 2 * intra + inter, 1e-15);
    // The same 16 GPUs in one flat ring over the NICs: 2 x 15/16 S and min(30, 8) hops.
    EXPECT_NEAR(collective_time_s(Collective::all_reduce, S, {16, 1, 16}, s), 2 * 15.0 / 16 * S / kOut + 8 * kOutLat, 1e-15);
    // Within the domain alone.
    EXPECT_NEAR(collective_time_s(Collective::all_reduce, S, {8, 8, 1}, s), 2 * 7.0 / 8 * S / kUp + 6 * kUpLat, 1e-15);
}

// All-gather (and reduce-scatter) of a gathered size S: 7/8 S in the domain, then the domain's
// S/8 across 2 domains: 1/2 x S/8 and min(1, 2) = 1 hop.
TEST(Collectives, TwoLevelGatherAndScatterByHand) {
    const SystemSpec s = h100();
    const double expected = 7.0 / 8 * S / kUp + 6 * kUpLat + 0.5 * S / 8 / kOut + 1 * kOutLat;
    EXPECT_NEAR(collective_time_s(Collective::all_gather, S, {16, 8, 2}, s), expected, 1e-15);
    EXPECT_NEAR(collective_time_s(Collective::reduce_scatter, S, {16, 8, 2}, s), expected, 1e-15);
    // Ring latency is cheaper than the tree below 4 GPUs: n = 3 takes 2 hops (tree: 2 x 2).
    EXPECT_NEAR(collective_time_s(Collective::all_gather, S, {3, 3, 1}, s), 2.0 / 3 * S / kUp + 2 * kUpLat, 1e-15);
    // n = 6: 5 ring hops, tree 2 x ceil(log2 6) = 6: the ring's 5.
    EXPECT_NEAR(collective_time_s(Collective::reduce_scatter, S, {6, 6, 1}, s), 5.0 / 6 * S / kUp + 5 * kUpLat, 1e-15);
    // n = 6 all-reduce: 10 ring hops against the tree's 6.
    EXPECT_NEAR(collective_time_s(Collective::all_reduce, S, {6, 6, 1}, s), 2 * 5.0 / 6 * S / kUp + 6 * kUpLat, 1e-15);
    // One byte still pays the hops' latency; nothing to move (0 bytes) costs nothing.
    EXPECT_NEAR(collective_time_s(Collective::all_gather, 1.0, {3, 3, 1}, s), 2.0 / 3 / kUp + 2 * kUpLat, 1e-15);
    EXPECT_EQ(collective_time_s(Collective::all_gather, 0.0, {3, 3, 1}, s), 0.0);
}

// All-to-all: each GPU sends (n-1)/n of its buffer, one latency per peer. Over 2 domains of 8,
// 8/16 of it crosses the NIC and 7/16 stays on NVLink; both move at once, so the slower level
// sets the time (the max, not the min), with 15 scale-out latencies.
TEST(Collectives, AllToAllTakesTheSlowerLevel) {
    SystemSpec s = h100();
    EXPECT_NEAR(collective_time_s(Collective::all_to_all, S, {16, 8, 2}, s), 0.5 * S / kOut + 15 * kOutLat, 1e-15);
    // Make the NIC 100x faster: now NVLink's 7/16 S is the slower part.
    s.scale_out.bw_bytes_per_s *= 100;
    EXPECT_NEAR(collective_time_s(Collective::all_to_all, S, {16, 8, 2}, s), 7.0 / 16 * S / kUp + 15 * kOutLat, 1e-15);
    // One level: 7/8 S over NVLink and 7 hops.
    EXPECT_NEAR(collective_time_s(Collective::all_to_all, S, {8, 8, 1}, s), 7.0 / 8 * S / kUp + 7 * kUpLat, 1e-15);
}

// A deduplicating dispatch (DeepEP, HybridEP) of S of token rows with 6 expert copies each. Over
// 2 domains of 8 (16 GPUs): a row reaches the other domain with probability 1 - (1/2)^6 = 63/64
// (S x 63/64 over the NIC) and 16 (1 - (15/16)^6) GPUs, 2 of them by the network: NVLink carries
// 14 (1 - (15/16)^6) S; 7 scale-up and 1 scale-out latencies. The flat all-to-all of the 6
// copies would send 6 x 8/16 S = 3 S over the NIC.
TEST(Collectives, DispatchSendsEachRowOncePerDomainAndGpu) {
    const SystemSpec s = h100();
    CommOp op{"moe_dispatch", Collective::dispatch, CommGroup::ep, Pass::fwd, S, 1, false, 6};
    const double reached = 1.0 - std::pow(15.0 / 16, 6);
    const CollectiveCost k = collective_cost(op, {16, 8, 2}, s);
    EXPECT_NEAR(k.scale_out_bytes, 63.0 / 64 * S, 1e-3);
    EXPECT_NEAR(k.scale_up_bytes, 14 * reached * S, 1e-3);
    EXPECT_NEAR(k.time_s, std::max(63.0 / 64 * S / kOut, 14 * reached * S / kUp) + 7 * kUpLat + kOutLat, 1e-15);
    // In one domain of 8: 7 (1 - (7/8)^6) S over NVLink, 7 hops, nothing over the NIC.
    const CollectiveCost one = collective_cost(op, {8, 8, 1}, s);
    EXPECT_NEAR(one.scale_up_bytes, 7 * (1 - std::pow(7.0 / 8, 6)) * S, 1e-3);
    EXPECT_EQ(one.scale_out_bytes, 0.0);
    EXPECT_NEAR(one.time_s, 7 * (1 - std::pow(7.0 / 8, 6)) * S / kUp + 7 * kUpLat, 1e-15);
    // One GPU in each of 4 domains: nothing over NVLink and no NVLink hop; a row reaches the
    // other 3 domains with probability 1 - (3/4)^6 each, 3 network latencies.
    const CollectiveCost apart = collective_cost(op, {4, 1, 4}, s);
    const double remote = 3 * (1 - std::pow(3.0 / 4, 6)) * S;
    EXPECT_EQ(apart.scale_up_bytes, 0.0);
    EXPECT_NEAR(apart.scale_out_bytes, remote, 1e-3);
    EXPECT_NEAR(apart.time_s, remote / kOut + 3 * kOutLat, 1e-15);
    // Without a fanout a dispatch is of one copy a row: S/2 over the NIC, 14/16 S over NVLink.
    EXPECT_NEAR(collective_time_s(Collective::dispatch, S, {16, 8, 2}, s),
                std::max(0.5 * S / kOut, 14.0 / 16 * S / kUp) + 7 * kUpLat + kOutLat, 1e-15);
    EXPECT_EQ(collective_cost(op, {1, 1, 1}, s).time_s, 0.0);
}

// Deduplication never sends more over the network than the flat all-to-all of every copy, and
// within one domain never more over the scale-up links: (1 - (1 - 1/n)^k) <= k / n, with
// equality at one copy a row. (Across domains the scale-up links also forward what arrived over
// the network, so they may carry more than the flat exchange's local share.)
TEST(Collectives, DispatchNeverSendsMoreThanEveryCopy) {
    const SystemSpec s = h100();
    for (const GroupSpan g : {GroupSpan{8, 8, 1}, GroupSpan{4, 4, 1}, GroupSpan{16, 8, 2}, GroupSpan{64, 8, 8}, GroupSpan{32, 1, 32}})
        for (const double k : {1.0, 2.0, 6.0, 8.0, 22.0}) {
            const CommOp op{"d", Collective::dispatch, CommGroup::ep, Pass::fwd, S, 1, false, k};
            const CollectiveCost dedup = collective_cost(op, g, s), flat = collective_cost(Collective::all_to_all, k * S, g, s);
            EXPECT_LE(dedup.scale_out_bytes, flat.scale_out_bytes * (1 + 1e-12)) << g.size << " " << k;
            const bool one_domain = g.remote == 1;
            if (one_domain) {
                EXPECT_LE(dedup.scale_up_bytes, flat.scale_up_bytes * (1 + 1e-12)) << g.size << " " << k;
            }
            if (k == 1.0) {
                EXPECT_NEAR(dedup.scale_out_bytes, flat.scale_out_bytes, 1e-3) << g.size;
                if (one_domain) {
                    EXPECT_NEAR(dedup.scale_up_bytes, flat.scale_up_bytes, 1e-3) << g.size;
                }
            } else {
                EXPECT_LT(dedup.scale_out_bytes + (one_domain ? dedup.scale_up_bytes : 0.0),
                          flat.scale_out_bytes + (one_domain ? flat.scale_up_bytes : 0.0))
                    << g.size << " " << k;
            }
        }
}

TEST(Collectives, PointToPointUsesTheLinkBetweenItsEnds) {
    const SystemSpec s = h100();
    EXPECT_NEAR(collective_time_s(Collective::p2p, S, {2, 1, 2}, s), S / kOut + kOutLat, 1e-15);
    EXPECT_NEAR(collective_time_s(Collective::p2p, S, {2, 2, 1}, s), S / kUp + kUpLat, 1e-15);
    EXPECT_EQ(collective_time_s(Collective::p2p, S, {1, 1, 1}, s), 0.0);
    EXPECT_EQ(collective_time_s(Collective::all_reduce, 0, {8, 8, 1}, s), 0.0);
}

// Nothing to send costs nothing, latencies included: on one level, on two (where the
// all-to-all would otherwise pay its 15 scale-out latencies), and for a single ring.
TEST(Collectives, ZeroBytesCostNothing) {
    const SystemSpec s = h100();
    for (Collective c : {Collective::all_reduce, Collective::all_gather, Collective::reduce_scatter, Collective::all_to_all}) {
        EXPECT_EQ(collective_time_s(c, 0, {8, 8, 1}, s), 0.0);
        EXPECT_EQ(collective_time_s(c, 0, {16, 8, 2}, s), 0.0);
        EXPECT_EQ(ring_time_s(c, 0, 8, s.scale_up), 0.0);
    }
    EXPECT_EQ(ring_time_s(Collective::p2p, 0, 2, s.scale_out), 0.0);
}

// A level of one GPU moves nothing and waits for no one, whatever the buffer: every collective,
// the point-to-point send included (it has no other end there).
TEST(Collectives, OneGpuCostsNothing) {
    const SystemSpec s = h100();
    for (Collective c : {Collective::all_reduce, Collective::all_gather, Collective::reduce_scatter, Collective::all_to_all,
                         Collective::p2p}) {
        EXPECT_EQ(ring_time_s(c, 1e9, 1, s.scale_up), 0.0);
        EXPECT_EQ(ring_time_s(c, 1e9, 1, s.scale_out), 0.0);
    }
}

// A group whose members sit `stride` ranks apart, over `gpus` ranks filling domains of 8 in order.
TEST(Collectives, PlacementOfUnevenGroups) {
    auto eq = [](GroupSpan g, int64_t size, int64_t l, int64_t r) { return g.size == size && g.local == l && g.remote == r; };
    // Groups 0-11 and 12-23: 8 + 4 and 4 + 8 members: 4 in the emptier domain, 2 domains.
    EXPECT_TRUE(eq(place_group(1, 12, 24, 8), 12, 4, 2));
    // Stride 3 over 12 ranks: {0,3,6 | 9} and {1,4,7 | 10} put 1 member in a domain, {2,5 | 8,11} 2.
    EXPECT_TRUE(eq(place_group(3, 4, 12, 8), 4, 1, 2));
    EXPECT_TRUE(eq(place_group(16, 4, 64, 8), 4, 1, 4));
    EXPECT_TRUE(eq(place_group(2, 2, 8, 8), 2, 2, 1));
}

// Megatron's rank order (tp fastest, then cp, dp with ep inside it, pp) on domains of 8, for
// tp 2, cp 2, dp 4, ep 2, pp 2 (32 GPUs): TP and CP and EP stay inside a domain; the gradient
// group (dp x cp = 8 ranks, every second rank) spans 2 domains of 4; stages are 16 ranks apart.
TEST(Collectives, GroupsOfALayout) {
    ParallelConfig p;
    p.tp = 2;
    p.cp = 2;
    p.dp = 4;
    p.ep = 2;
    p.pp = 2;
    const CommSpans c = place_groups(p, h100());
    auto is = [&](CommGroup g, int64_t size, int64_t l, int64_t r) {
        const GroupSpan x = c.span[idx(g)];
        EXPECT_EQ(x.size, size);
        EXPECT_EQ(x.local, l);
        EXPECT_EQ(x.remote, r);
    };
    is(CommGroup::tp, 2, 2, 1);
    is(CommGroup::cp, 2, 2, 1);
    is(CommGroup::ep, 2, 2, 1);
    is(CommGroup::dp, 8, 4, 2);
    is(CommGroup::pp, 2, 1, 2);
    // Megatron-Core folds dp x cp for the experts and puts ep next to tp: with dp 8, ep 4 is
    // ranks {0, 2, 4, 6} + t, one domain (not every tp x cp = 4th rank over two domains).
    p.dp = 8;
    p.ep = 4;
    EXPECT_EQ(place_groups(p, h100()).span[idx(CommGroup::ep)].local, 4);
    EXPECT_EQ(place_groups(p, h100()).span[idx(CommGroup::ep)].remote, 1);
}

}  // namespace
}  // namespace sm
