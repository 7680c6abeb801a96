#pragma once
// `sensitivity`: the elasticity d ln(objective) / d ln(x) of every numeric field x of the system
// (every row of the field table, io/field_table.hpp, that the resolved system holds), by central
// differences over points that are an ordinary sweep.
//  - A real-valued field is moved to x(1-h) and x(1+h), h = kSensitivityStep (5%): the elasticity
//    is ln(T+/T-) / ln((1+h)/(1-h)). A step that would leave the field's range (the field table,
//    io/field_table.hpp) stops at its end; at the end itself (an efficiency of 1 cannot grow), or
//    where a side fails, the other side and x itself give a one-sided difference.
//  - An integer field (GPUs per node, scale-up domain) has no 5% neighbour: it moves to x/2 and 2x
//    (x and 2x when x/2 is not a whole number >= 1), a difference over a factor of 4 (or 2).
//  - A field at zero (a latency of 0) has no relative change: skipped, listed with method "zero".
#include <string>
#include <vector>

#include "io/json_reader.hpp"
#include "study/evaluate.hpp"

namespace sm {

inline constexpr double kSensitivityStep = 0.05;

struct Probe {
    std::string path;  // dotted, e.g. "system.accelerator.memory_bw_bytes_per_s"
    Json value;        // as resolved
    Json low, high;    // the two values tried (low may equal value: one-sided)
};

// The probes of the document's system: every field-table row it holds as a number, in the
// table's order (a peak for each precision it lists).
std::vector<Probe> sensitivity_probes(const Json& base);

struct Elasticity {
    std::string path;
    Json value;
    double elasticity = 0;
    std::string method;  // "central", "forward", "backward", "integer x/2..2x", "zero", or "failed: why"
};

// From the probes and the objective at each probe's low and high point (`low_out`/`high_out`),
// with `base_value` at the base: ranked by |elasticity|, then path.
std::vector<Elasticity> rank_elasticities(const std::vector<Probe>& probes, const std::vector<PointOutcome>& low_out,
                                          const std::vector<PointOutcome>& high_out, double base_value);

}  // namespace sm
