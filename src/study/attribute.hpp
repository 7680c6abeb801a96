#pragma once
// `attribute`: the ratio of an objective between two scenarios split among named factor groups.
// Each subset S of the groups is the base scenario with the fields of the groups in S taken from
// the other one; every subset is evaluated (a sweep over 2^G points) and the Shapley values of
// ln(objective) give each group its share. Shapley values sum to v(all) - v(none), so the
// groups' speedups exp(±phi) multiply exactly to the total ratio, whatever order they are listed in.
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "io/json_reader.hpp"
#include "study/evaluate.hpp"

namespace sm {

inline constexpr size_t kMaxFactorGroups = 16;  // 65,536 subsets

// Shapley values of a game over n players given v[mask] for every subset (bit i: player i):
// phi_i = sum over S without i of |S|! (n-|S|-1)! / n! * (v(S + i) - v(S)).
std::vector<double> shapley_values(size_t n, std::span<const double> v);

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
};

struct Attribution {
    StudyObjective objective;
    double from_value = 0, to_value = 0;
    double ratio = 1;  // the total speedup: from/to for a time, to/from for a rate
    std::vector<Factor> factors;
    size_t subsets = 0;
};

// Attribution from the values of every subset (`values[mask]`, all positive).
Attribution attribution_from(const std::vector<FactorGroup>& groups, std::span<const double> values, const StudyObjective& o);

}  // namespace sm
