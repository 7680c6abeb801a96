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

// Reads `technology` from a system's reader (nullopt when absent), checks that the chip can be
// built (area, shoreline, power) and generates it.
std::optional<TechnologyReading> read_technology(ObjectReader& system);

}  // namespace sm
