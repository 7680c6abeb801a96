#pragma once
// The op list of one training micro-batch as a table: the "why is this layer slow" view.
#include <string>

#include "io/json_reader.hpp"
#include "io/scenario.hpp"

namespace sm {

// Per block (layer, embedding, head): every op with its sharded shape, FLOP, bytes, forward,
// activation-gradient and weight-gradient times and saved activations; every collective with its
// group, placement (members per scale-up domain x domains), bytes and time on the wire.
Json training_ops_json(const Scenario& s);
std::string training_ops_text(const Scenario& s);

}  // namespace sm
