#pragma once
// Data files compiled into the binary (presets, validation sets), so the tool works anywhere.
#include <span>
#include <string_view>

namespace sm {

struct EmbeddedFile {
    std::string_view name;  // file stem, e.g. "dgx-h100"
    std::string_view text;
};

std::span<const EmbeddedFile> embedded_model_presets();
std::span<const EmbeddedFile> embedded_system_presets();
// Serving engines' defaults (presets/engines/: trtllm, vllm, sglang), each with its sources.
std::span<const EmbeddedFile> embedded_engine_presets();
std::span<const EmbeddedFile> embedded_validation_sets();
// "<set>.context": overrides shared by every row of a set (its cluster and software).
std::span<const EmbeddedFile> embedded_validation_contexts();
// "analysis": the author's one-line explanations of rows' errors, shown in docs/VALIDATION.md.
std::span<const EmbeddedFile> embedded_validation_analysis();
// "hbm": per-stack bandwidth and capacity of each HBM generation (presets/memory/hbm.json).
std::span<const EmbeddedFile> embedded_memory_presets();
// "nodes" and "serdes": process nodes and SerDes generations for system.technology
// (presets/technology/).
std::span<const EmbeddedFile> embedded_technology_presets();
// The explorer's page (web/: index.html, app.js, style.css), by file name.
std::span<const EmbeddedFile> embedded_web_files();

}  // namespace sm
