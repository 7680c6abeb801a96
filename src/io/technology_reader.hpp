#pragma once
// `system.technology`: reading the technology description and generating its accelerator.
#include <optional>
#include <string>

#include "hardware/technology.hpp"
#include "io/json_reader.hpp"

namespace sm {

struct TechnologyReading {
    TechnologySpec spec;
    GeneratedChip chip;
    std::string summary;  // one line: what was generated and what limits it
};

// One stack of an HBM generation: `generation` (default_generation when absent) with the
// stack's `stack_bw_bytes_per_s` and `stack_bytes`, presets/memory/hbm.json's figures by
// default; `entry` is the generation's row (energy, PHY area, edge). Read by accelerator.hbm
// and technology.hbm alike (`section`, below system: the field table's rows for its figures).
struct HbmStack {
    std::string generation;
    double bw_bytes_per_s = 0, bytes = 0;
    Json entry;
};
HbmStack read_hbm_stack(ObjectReader& h, const std::string& section, const std::optional<std::string>& default_generation);

// Reads `technology` from a system's reader (nullopt when absent), checks that the chip can be
// built (area, shoreline, power) and generates it.
std::optional<TechnologyReading> read_technology(ObjectReader& system);

}  // namespace sm
