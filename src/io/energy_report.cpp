#include "io/energy_report.hpp"

#include <fmt/format.h>

namespace sm {

namespace {

// A GPU's average power over the scope: what its own TDP bounds (the NICs are outside it).
double power_per_gpu_w(const EnergyScope& s) { return s.energy.gpu_j() / (s.seconds * s.gpus); }

std::string joules(double j) {
    if (j >= 1e9) return fmt::format("{:.3f} GJ", j / 1e9);
    if (j >= 1e6) return fmt::format("{:.3f} MJ", j / 1e6);
    if (j >= 1e3) return fmt::format("{:.3f} kJ", j / 1e3);
    return fmt::format("{:.4g} J", j);
}

}  // namespace

void add_energy_keys(Json& j, const SystemSpec& sys, const EnergyScope& s, bool inference) {
    const char* per = inference ? "request" : "step";
    const double per_unit = inference ? s.requests : 1.0;
    if (sys.energy.known()) {
        const Energy& e = s.energy;
        j[fmt::format("energy_per_{}_j", per)] = e.total_j() / per_unit;
        j["energy_per_token_j"] = e.total_j() / s.tokens;
        j["tokens_per_j"] = s.tokens / e.total_j();
        j["power_per_gpu_w"] = power_per_gpu_w(s);
        j["energy"] = Json{{"compute_j", e.compute_j},     {"active_j", e.active_j}, {"sram_j", e.sram_j}, {"hbm_j", e.hbm_j},
                           {"scale_up_j", e.scale_up_j},   {"scale_out_j", e.scale_out_j},
                           {"idle_j", e.idle_j},           {"tdp_w", sys.energy.tdp_w}};
    }
    if (sys.price_per_gpu_hour > 0) {
        const double usd = cost_usd(sys, s.seconds, s.gpus);
        j[fmt::format("cost_per_{}_usd", per)] = usd / per_unit;
        j["cost_per_million_tokens_usd"] = usd / s.tokens * 1e6;
    }
}

std::string energy_text(const SystemSpec& sys, const EnergyScope& s, bool inference) {
    std::string o;
    const char* per = inference ? "request" : "step";
    const double per_unit = inference ? s.requests : 1.0;
    if (sys.energy.known()) {
        const Energy& e = s.energy;
        o += fmt::format("\n  energy per {:<9} {:>12}   {:.4g} J/token   {:.4g} tokens/J\n", per, joules(e.total_j() / per_unit),
                         e.total_j() / s.tokens, s.tokens / e.total_j());
        o += fmt::format("  power per GPU        {:>10.0f} W   (average; TDP {:g} W)\n", power_per_gpu_w(s), sys.energy.tdp_w);
        auto row = [&](const char* name, double x) {
            o += fmt::format("    {:<22} {:>10}   {:5.1f}%\n", name, joules(x / per_unit), 100 * x / e.total_j());
        };
        row("tensor compute", e.compute_j);
        row("active (kernels run)", e.active_j);
        row("on-chip SRAM", e.sram_j);
        row("HBM", e.hbm_j);
        row("scale-up links", e.scale_up_j);
        row("scale-out network", e.scale_out_j);
        row("idle power x time", e.idle_j);
    }
    if (sys.price_per_gpu_hour > 0) {
        const double usd = cost_usd(sys, s.seconds, s.gpus);
        o += fmt::format("  cost per {:<11} ${:>11.4g}   ${:.4g} per million tokens   (${:g} per GPU-hour)\n", per, usd / per_unit,
                         usd / s.tokens * 1e6, sys.price_per_gpu_hour);
    }
    return o;
}

}  // namespace sm
