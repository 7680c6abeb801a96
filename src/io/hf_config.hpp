#pragma once
// model.from_hf: a Hugging Face config.json read into the model schema's fields.
#include <string>

#include "io/json_reader.hpp"

namespace sm {

// The model section a config.json describes: fields of SPEC's model schema, plus name and
// description. Mapped model_types: Llama, Mistral/Mixtral, Qwen2/3 dense and MoE, DeepSeek-V2/V3,
// gpt-oss, Gemma 1-3 (a multimodal wrapper's `text_config` in its place). Throws InputException naming `where` + "." + the config's key for what cannot be
// mapped: an unknown model_type, a missing dimension, or a feature the model schema lacks (a
// window only on some layers, no query compression in MLA, dense layers that are not a prefix).
Json model_from_hf(const Json& config, const std::string& where);

// The config at `path` (a regular file of at most 4 MiB), mapped by model_from_hf.
Json read_hf_model(const std::string& path, const std::string& where);

}  // namespace sm
