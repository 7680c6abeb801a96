#pragma once
// The layout rules: what a parallel layout must satisfy to train or serve a model on a system.
// Each function returns every rule the layout breaks, in the order a reader should fix them, as
// InputErrors (the field, the value given, what is required); reading a scenario reports the
// first (io/scenario.cpp). Rules that only make sense once an earlier one holds (SUMMA's grid
// after tp_rows divides tp, expert parallelism's groups after ep divides the experts) are
// checked only then, and a layout past the GPU limit is reported alone.
#include <cstdint>
#include <vector>

#include "core/error.hpp"
#include "hardware/system_spec.hpp"
#include "inference/inference_spec.hpp"
#include "model/model_spec.hpp"
#include "parallel/parallel_config.hpp"
#include "training/training_spec.hpp"

namespace sm {

// The most GPUs a layout may span.
inline constexpr int64_t kMaxGpus = int64_t{1} << 24;

// Training: the model's cut (tensor or SUMMA, pipeline split, context, experts and their tensor
// parallelism), the batch the layout consumes, the precision's peak and offload's host tier.
std::vector<InputError> check_layout(const ModelSpec& m, const SystemSpec& sys, const TrainingSpec& t, const ParallelConfig& p);
// Inference (infer, serve, roofline): a decoder cut over tp x pp, dp replicas, experts over ep.
std::vector<InputError> check_layout(const ModelSpec& m, const SystemSpec& sys, const InferenceSpec& s, const ParallelConfig& p);
// Whether DeepSpeed-Ulysses context parallelism can shard the heads over tp x cp ranks: query
// heads and K/V heads (MLA: query heads) divisible by tp * cp.
bool ulysses_fits(const ModelSpec& m, int64_t tp, int64_t cp);
// Whether a SUMMA grid of tp ranks with `rows` (> 1) rows can cut model m at context parallelism
// cp: cp divides seq_len and the grid breaks none of check_layout's SUMMA rules (rows divide tp,
// the columns cut heads and widths as 1D tensor parallelism would, tp divides the hidden width,
// rows divide seq_len / cp; a dense model with multi-head or grouped-query attention, without
// multi-token prediction or Mamba layers).
bool summa_fits(const ModelSpec& m, int64_t tp, int64_t rows, int64_t cp);

// The training rules that do not depend on the layout a search picks: the precision's peak, and
// what a hybrid Mamba model trains without (context parallelism at the `cp` held, LoRA).
std::vector<InputError> check_trainable(const ModelSpec& m, const SystemSpec& sys, const TrainingSpec& t, int64_t cp);

}  // namespace sm
