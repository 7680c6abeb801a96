#pragma once
// A layout as the launch settings of the framework that runs it (search/train/serve-search
// --emit): Megatron-LM arguments, NeMo 2 recipe overrides, a TorchTitan TOML, and the serving
// commands of TensorRT-LLM, vLLM and SGLang. The option names are those of each framework's own
// parser at the version named in data/frameworks/NAME.txt (a test checks every name emitted).
#include <string>
#include <string_view>
#include <vector>

#include "core/error.hpp"
#include "inference/serving.hpp"
#include "io/scenario.hpp"

namespace sm {

const std::vector<std::string>& training_launch_targets();  // megatron, nemo, torchtitan, deepspeed
const std::vector<std::string>& serving_launch_targets();   // trtllm, vllm, sglang

// The training layout `p` of scenario `s` for `target`, or an error naming --emit when the layout
// uses what that framework does not ship (SUMMA; a rank order or ZeRO stage it lacks).
Expected<std::string> training_launch(const Scenario& s, const ParallelConfig& p, std::string_view target);
// The serving layout `p` at the steady state `pt` (its concurrency sets the batch) for `target`.
Expected<std::string> serving_launch(const Scenario& s, const ParallelConfig& p, const ServingPoint& pt, std::string_view target);

}  // namespace sm
