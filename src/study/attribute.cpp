#include "study/attribute.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <random>
#include <set>

#include "io/provenance.hpp"

namespace sm {

std::vector<double> shapley_values(size_t n, std::span<const double> v) {
    // Weight of a coalition of size k that player i joins: k! (n-k-1)! / n!.
    std::vector<double> weight(n);
    for (size_t k = 0; k < n; ++k) weight[k] = std::exp(std::lgamma(k + 1.0) + std::lgamma(static_cast<double>(n - k)) - std::lgamma(n + 1.0));
    std::vector<double> phi(n, 0.0);
    for (uint64_t s = 0; s < v.size(); ++s)
        for (size_t i = 0; i < n; ++i) {
            const uint64_t bit = uint64_t{1} << i;
            if (s & bit) continue;
            phi[i] += weight[static_cast<size_t>(std::popcount(s))] * (v[s | bit] - v[s]);
        }
    return phi;
}

std::vector<std::vector<size_t>> shapley_orders(size_t n, size_t count, uint64_t seed) {
    std::mt19937_64 rng(seed);
    std::vector<std::vector<size_t>> out(count, std::vector<size_t>(n));
    for (auto& order : out) {
        for (size_t i = 0; i < n; ++i) order[i] = i;
        for (size_t i = n; i > 1; --i) std::swap(order[i - 1], order[static_cast<size_t>(rng() % i)]);
    }
    return out;
}

std::vector<uint64_t> sampled_masks(size_t n, const std::vector<std::vector<size_t>>& orders) {
    std::vector<uint64_t> masks{0};
    for (size_t i = 0; i < n; ++i) masks.push_back(uint64_t{1} << i);
    for (const auto& order : orders) {
        uint64_t m = 0;
        for (const size_t i : order) masks.push_back(m |= uint64_t{1} << i);
    }
    std::sort(masks.begin(), masks.end());
    masks.erase(std::unique(masks.begin(), masks.end()), masks.end());
    return masks;
}

ShapleyEstimate sampled_shapley(size_t n, const std::vector<std::vector<size_t>>& orders, const std::function<double(uint64_t)>& v) {
    std::vector<double> sum(n, 0.0), sum_sq(n, 0.0);
    for (const auto& order : orders) {
        uint64_t m = 0;
        double before = v(m);
        for (const size_t i : order) {
            const double after = v(m |= uint64_t{1} << i);
            sum[i] += after - before;
            sum_sq[i] += (after - before) * (after - before);
            before = after;
        }
    }
    ShapleyEstimate e{std::vector<double>(n, 0.0), std::vector<double>(n, 0.0)};
    const auto k = static_cast<double>(orders.size());
    for (size_t i = 0; i < n && k > 0; ++i) {
        e.value[i] = sum[i] / k;
        if (k > 1) e.standard_error[i] = std::sqrt(std::max(0.0, (sum_sq[i] - k * e.value[i] * e.value[i]) / (k - 1)) / k);
    }
    return e;
}

namespace {

// The factor table: which fields make up each named cause. A pattern ending in '.' claims the
// whole sub-object.
struct GroupRule {
    const char* name;
    std::vector<std::string> patterns;
};

const std::vector<GroupRule>& group_rules() {
    static const std::vector<GroupRule> rules = {
        {"matrix peak", {"system.accelerator.matrix_flop_per_s.", "system.accelerator.vector_flop_per_s"}},
        {"math precision",
         {"training.precision", "training.grad_precision", "training.fp8_recipe", "inference.precision", "inference.weight_precision",
          "inference.kv_precision"}},
        {"HBM bandwidth", {"system.accelerator.memory_bw_bytes_per_s"}},
        {"HBM capacity", {"system.accelerator.memory_bytes"}},
        {"scale-up bandwidth", {"system.scale_up.bw_bytes_per_s", "system.scale_up.latency_s"}},
        // GPUs used per domain cannot exceed the domain: they move together.
        {"scale-up domain size", {"system.scale_up.domain_gpus", "system.scale_up.gpus_used_per_domain", "system.node_gpus"}},
        {"scale-out bandwidth", {"system.scale_out.bw_bytes_per_s", "system.scale_out.latency_s"}},
        {"calibration efficiencies", {"system.efficiency."}},
        {"host memory (offload tier)", {"system.host_memory."}},
    };
    return rules;
}

bool matches(const std::string& path, const std::string& pattern) {
    return pattern.back() == '.' ? path.rfind(pattern, 0) == 0 : path == pattern;
}

// Labels, not figures: they never change a result.
bool is_label(const std::string& path) {
    const auto dot = path.rfind('.');
    const std::string key = dot == std::string::npos ? path : path.substr(dot + 1);
    return key == "name" || key == "description" || path.find("sources") != std::string::npos;
}

bool same(const Json* a, const Json* b) {
    if (!a || !b) return a == b;
    if (a->is_number() && b->is_number()) return a->get<double>() == b->get<double>();
    return *a == *b;
}

Json::json_pointer pointer_of(const std::string& path) {
    std::string p;
    size_t start = 0;
    while (true) {
        const auto dot = path.find('.', start);
        std::string key = path.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
        p += "/" + key;
        if (dot == std::string::npos) return Json::json_pointer(p);
        start = dot + 1;
    }
}

const Json* find_leaf(const Json& doc, const std::string& path) {
    const auto ptr = pointer_of(path);
    return doc.contains(ptr) ? &doc.at(ptr) : nullptr;
}

void fill_missing_peak(Json& doc, const Json& from, const Json& to, const char* section) {
    const auto at = [](const Json& d, const char* sec) -> std::string {
        return d.contains(sec) && d[sec].contains("precision") ? d[sec]["precision"].get<std::string>() : "";
    };
    const std::string want = at(doc, section), base = at(from, section);
    if (want.empty() || base.empty() || want == base) return;
    Json& peaks = doc["system"]["accelerator"]["matrix_flop_per_s"];
    if (peaks.contains(want) || !peaks.contains(base)) return;
    const Json& to_peaks = to["system"]["accelerator"]["matrix_flop_per_s"];
    if (!to_peaks.contains(want) || !to_peaks.contains(base)) return;  // the parser names what is missing
    peaks[want] = peaks[base].get<double>() * to_peaks[want].get<double>() / to_peaks[base].get<double>();
}

}  // namespace

std::vector<FactorGroup> factor_groups(const Json& from, const Json& to) {
    std::set<std::string> paths;
    for (const Json* d : {&from, &to})
        for_each_leaf(*d, "", [&](const std::string& path, const Json&) {
            if (!is_label(path)) paths.insert(path);
        });
    std::vector<FactorGroup> groups(group_rules().size());
    FactorGroup other;
    for (const std::string& path : paths) {
        if (same(find_leaf(from, path), find_leaf(to, path))) continue;
        bool claimed = false;
        for (size_t g = 0; g < group_rules().size() && !claimed; ++g)
            for (const std::string& pat : group_rules()[g].patterns)
                if (matches(path, pat)) {
                    groups[g].fields.push_back(path);
                    claimed = true;
                    break;
                }
        if (!claimed) other.fields.push_back(path);
    }
    std::vector<FactorGroup> out;
    for (size_t g = 0; g < groups.size(); ++g)
        if (!groups[g].fields.empty()) out.push_back({group_rules()[g].name, std::move(groups[g].fields)});
    if (!other.fields.empty()) {
        other.name = "other:";
        for (size_t i = 0; i < other.fields.size(); ++i) other.name += (i ? ", " : " ") + other.fields[i];
        out.push_back(std::move(other));
    }
    return out;
}

Json subset_doc(const Json& from, const Json& to, const std::vector<FactorGroup>& groups, uint64_t mask) {
    Json doc = from;
    for (size_t g = 0; g < groups.size(); ++g) {
        if (!(mask & (uint64_t{1} << g))) continue;
        for (const std::string& path : groups[g].fields) {
            const auto ptr = pointer_of(path);
            if (to.contains(ptr))
                doc[ptr] = to.at(ptr);
            else if (doc.contains(ptr))
                doc[ptr.parent_pointer()].erase(ptr.back());
        }
    }
    fill_missing_peak(doc, from, to, "training");
    fill_missing_peak(doc, from, to, "inference");
    return doc;
}

namespace {

// The factors from their log-space values `phi` (a time's speedup is ln(from) - ln(to), a rate's
// ln(to) - ln(from): `log_at(mask)` is that signed log of a subset's value).
Attribution assemble(const std::vector<FactorGroup>& groups, const std::vector<double>& phi, const std::function<double(uint64_t)>& value,
                     const StudyObjective& o) {
    const double sign = o.lower_is_better ? -1.0 : 1.0;
    const auto log_at = [&](uint64_t mask) { return sign * std::log(value(mask)); };
    const uint64_t all = (uint64_t{1} << groups.size()) - 1;
    Attribution a;
    a.objective = o;
    a.from_value = value(0);
    a.to_value = value(all);
    const double base = log_at(0), total = log_at(all) - base;
    a.ratio = std::exp(total);
    for (size_t g = 0; g < groups.size(); ++g) {
        Factor f;
        f.name = groups[g].name;
        f.fields = groups[g].fields;
        f.speedup = std::exp(phi[g]);
        f.share = total != 0 ? phi[g] / total : 0.0;
        f.alone = std::exp(log_at(uint64_t{1} << g) - base);
        a.factors.push_back(std::move(f));
    }
    return a;
}

}  // namespace

Attribution attribution_from(const std::vector<FactorGroup>& groups, std::span<const double> values, const StudyObjective& o) {
    std::vector<double> logs(values.size());
    const double sign = o.lower_is_better ? -1.0 : 1.0;
    for (size_t i = 0; i < values.size(); ++i) logs[i] = sign * std::log(values[i]);
    Attribution a = assemble(groups, shapley_values(groups.size(), logs), [&](uint64_t mask) { return values[mask]; }, o);
    a.subsets = values.size();
    return a;
}

Attribution attribution_sampled(const std::vector<FactorGroup>& groups, const std::vector<std::vector<size_t>>& orders,
                                const std::function<double(uint64_t)>& value, const StudyObjective& o) {
    const double sign = o.lower_is_better ? -1.0 : 1.0;
    const ShapleyEstimate e = sampled_shapley(groups.size(), orders, [&](uint64_t mask) { return sign * std::log(value(mask)); });
    Attribution a = assemble(groups, e.value, value, o);
    a.subsets = sampled_masks(groups.size(), orders).size();
    a.orders = orders.size();
    for (size_t g = 0; g < groups.size(); ++g) {
        // 1.96: the normal 97.5% quantile, the mean of many orders' contributions being near normal.
        a.factors[g].speedup_low = std::exp(e.value[g] - 1.96 * e.standard_error[g]);
        a.factors[g].speedup_high = std::exp(e.value[g] + 1.96 * e.standard_error[g]);
    }
    return a;
}

}  // namespace sm
