#pragma once
// `attribute`: the ratio of an objective between two scenarios split among named factor groups.
// Each subset S of the groups is the base scenario with the fields of the groups in S taken from
// the other one; every subset is evaluated (a sweep over 2^G points) and the Shapley values of
// ln(objective) give each group its share. Shapley values sum to v(all) - v(none), so the
// groups' speedups exp(±phi) multiply exactly to the total ratio, whatever order they are listed in.
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "io/json_reader.hpp"
#include "study/evaluate.hpp"

namespace sm {

inline constexpr size_t kMaxFactorGroups = 16;  // 65,536 subsets
inline constexpr int64_t kMaxShapleyOrders = 100000;  // attribute --samples
inline constexpr uint64_t kShapleySeed = 1;           // the orders attribute --samples draws

// Shapley values of a game over n players given v[mask] for every subset (bit i: player i):
// phi_i = sum over S without i of |S|! (n-|S|-1)! / n! * (v(S + i) - v(S)).
std::vector<double> shapley_values(size_t n, std::span<const double> v);

// Permutation sampling (Castro, Gomez & Tejada 2009, Computers & Operations Research 36(5)):
// `count` orders of the n players, drawn from `seed` alone (a hand-written Fisher-Yates over
// std::mt19937_64, whose output the standard fixes, so every platform draws the same orders).
std::vector<std::vector<size_t>> shapley_orders(size_t n, size_t count, uint64_t seed);
// The coalitions the orders visit (each prefix of each order), the empty and the full one, and
// every player alone (attribute's `alone` column): ascending, once each.
std::vector<uint64_t> sampled_masks(size_t n, const std::vector<std::vector<size_t>>& orders);
// Each player's mean marginal contribution v(S + i) - v(S) over the orders (S: the players
// before it) and the standard error of that mean (sample deviation over sqrt(orders); 0 with one
// order). One order's contributions sum to v(all) - v(none), so the means do too.
struct ShapleyEstimate {
    std::vector<double> value, standard_error;
};
ShapleyEstimate sampled_shapley(size_t n, const std::vector<std::vector<size_t>>& orders, const std::function<double(uint64_t)>& v);

struct FactorGroup {
    std::string name;                 // e.g. "HBM bandwidth", or "other: model.layers, ..."
    std::vector<std::string> fields;  // the dotted paths that differ, in path order
};

// The leaves that differ between two study base documents (names, descriptions and sources
// aside), grouped by the factor table; what no pattern claims is one "other: <fields>" group.
std::vector<FactorGroup> factor_groups(const Json& from, const Json& to);

// Subset `mask` of `groups`: `from` with the fields of every group in the mask taken from `to`
// (removed where `to` lacks them). A math precision the subset's peaks lack runs at the subset's
// peak of the base precision times the speed-up `to` gets from that precision (so "math
// precision" without "matrix peak" is the precision's gain on the base hardware).
Json subset_doc(const Json& from, const Json& to, const std::vector<FactorGroup>& groups, uint64_t mask);

struct Factor {
    std::string name;
    std::vector<std::string> fields;
    double speedup = 1;  // > 1: this group makes `to` better
    double share = 0;    // of the total log speedup
    double alone = 1;    // the speedup of this group alone, from the base (for reference)
    // Sampled (Attribution::orders > 0): the speedup's 95% interval, exp(phi -+ 1.96 standard errors).
    double speedup_low = 0, speedup_high = 0;
};

struct Attribution {
    StudyObjective objective;
    double from_value = 0, to_value = 0;
    double ratio = 1;  // the total speedup: from/to for a time, to/from for a rate
    std::vector<Factor> factors;
    size_t subsets = 0;
    size_t orders = 0;  // 0: exact, every subset; else the random orders the values were estimated from
};

// Attribution from the values of every subset (`values[mask]`, all positive).
Attribution attribution_from(const std::vector<FactorGroup>& groups, std::span<const double> values, const StudyObjective& o);
// Attribution estimated from `orders` (shapley_orders), `value(mask)` positive for every mask
// sampled_masks lists.
Attribution attribution_sampled(const std::vector<FactorGroup>& groups, const std::vector<std::vector<size_t>>& orders,
                                const std::function<double(uint64_t)>& value, const StudyObjective& o);

}  // namespace sm
