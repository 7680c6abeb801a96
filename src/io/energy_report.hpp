#pragma once
// Energy and cost result keys (README "Energy and cost"), shared by train, search and infer: each
// present only when the system has the figures (system.energy; system.price_per_gpu_hour > 0).
#include <string>

#include "hardware/energy.hpp"
#include "io/json_reader.hpp"

namespace sm {

// What the keys describe: `e` spent over `seconds` on `gpus` GPUs for `units` of work (training:
// a step's tokens; inference: a replica's output tokens, `requests` of them requests).
struct EnergyScope {
    Energy energy;
    double seconds = 0, gpus = 0, tokens = 0, requests = 0;
};

// Adds energy_per_step_j (or _request_j), energy_per_token_j, tokens_per_j, power_per_gpu_w,
// energy {compute_j, ...}, cost_per_step_usd (or _request_usd), cost_per_million_tokens_usd.
void add_energy_keys(Json& j, const SystemSpec& sys, const EnergyScope& s, bool inference);
std::string energy_text(const SystemSpec& sys, const EnergyScope& s, bool inference);

}  // namespace sm
