#pragma once
// One training prediction as `scalemodel train` computes it; the Python module's train() is the
// same call without the command line around it.
#include <vector>

#include "cli/common.hpp"
#include "training/step.hpp"

namespace sm::cli {

struct TrainRun {
    TrainResult result;
    std::vector<StageReport> stages;
    Json doc;  // what `train --format json` prints, less `overrides`
};

// `ops`: also the per-GPU op list of one micro-batch (doc["ops"]). Notes and the warning that the
// layout does not fit go to io.err.
TrainRun run_train(const Io& io, const Scenario& s, bool ops);

}  // namespace sm::cli
