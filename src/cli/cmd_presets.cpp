#include <iostream>

#include <fmt/format.h>

#include "cli/commands.hpp"
#include "cli/common.hpp"
#include "io/field_table.hpp"
#include "model/model_spec.hpp"

namespace sm::cli {

Runner add_presets(CLI::App& app, const Io& io) {
    struct Opts {
        std::string kind;
        std::string format = "text";
        bool schema = false;
    };
    auto o = std::make_shared<Opts>();
    CLI::App* cmd = app.add_subcommand("presets", "List the built-in models, systems and serving engines");
    cmd->add_option("KIND", o->kind, "models, systems or engines (default: all)")->check(CLI::IsMember({"models", "systems", "engines"}));
    cmd->add_option("--format", o->format, "output format")->check(CLI::IsMember({"text", "json"}));
    cmd->add_flag("--schema", o->schema,
                  "print the system fields (unit, range, default) as the markdown tables docs/PRESET_SCHEMA.md holds");
    return [cmd, o, &io]() -> int {
        if (!cmd->parsed()) return -1;
        if (o->schema) {
            io.out << system_schema_markdown();
            return kExitOk;
        }
        Json out = Json::object();
        std::string text;
        if (o->kind.empty() || o->kind == "models") {
            Json list = Json::array();
            text += fmt::format("{:<16} {:>9} {:>7} {:>7} {:>6} {:>5} {:>8} {:>7}  {}\n", "model", "params", "layers",
                                "hidden", "heads", "kv", "vocab", "seq", "ffn");
            for (const auto& name : model_preset_names()) {
                auto j = model_preset_json(name);
                if (!j) return bad_input(io, j.error());
                auto m = parse_model(j.value(), "presets/models/" + name);
                if (!m) return bad_input(io, m.error());
                const double params = count_params(m.value()).total();
                Json entry = j.value();
                entry["params"] = params;
                list.push_back(entry);
                text += fmt::format("{:<16} {:>8.1f}B {:>7} {:>7} {:>6} {:>5} {:>8} {:>7}  {}{}\n", name, params / 1e9,
                                    m->layers, m->hidden, m->heads, m->kv_heads,
                                    m->kind == ModelKind::vit ? std::string("-") : std::to_string(m->vocab), m->seq_len,
                                    to_string(m->ffn_act),
                                    m->moe.enabled() ? fmt::format(", {} experts top-{}", m->moe.experts, m->moe.top_k)
                                    : m->kind == ModelKind::vit
                                        ? fmt::format(", vit {}x{} patch {}", m->image.height, m->image.width, m->image.patch)
                                        : "");
            }
            out["models"] = list;
        }
        if (o->kind.empty() || o->kind == "systems") {
            Json list = Json::array();
            if (!text.empty()) text += "\n";
            text += fmt::format("{:<16} {:<16} {:>10} {:>9} {:>9} {:>7} {:>10} {:>10}\n", "system", "accelerator",
                                "bf16 TF/s", "HBM GiB", "HBM TB/s", "domain", "up GB/s", "out GB/s");
            for (const auto& name : system_preset_names()) {
                auto j = system_preset_json(name);
                if (!j) return bad_input(io, j.error());
                auto s = parse_system(j.value(), "presets/systems/" + name);
                if (!s) return bad_input(io, s.error());
                list.push_back(j.value());
                text += fmt::format("{:<16} {:<16} {:>10.0f} {:>9.0f} {:>9.2f} {:>7} {:>10.0f} {:>10.0f}\n", name,
                                    s->accel.name, s->accel.matrix_peak(Precision::bf16).value_or(0) / 1e12,
                                    s->accel.memory_bytes / 1073741824.0, s->accel.memory_bw_bytes_per_s / 1e12,
                                    s->scale_up_domain, s->scale_up.bw_bytes_per_s / 1e9, s->scale_out.bw_bytes_per_s / 1e9);
            }
            out["systems"] = list;
        }
        if (o->kind.empty() || o->kind == "engines") {
            // Serving engines' profiles (inference.engine): the inference fields each sets.
            Json list = Json::array();
            if (!text.empty()) text += "\n";
            text += fmt::format("{:<16} {}\n", "engine", "what it sets (inference.*)");
            for (const auto& name : engine_preset_names()) {
                auto j = engine_preset_json(name);
                if (!j) return bad_input(io, j.error());
                list.push_back(j.value());
                std::string sets;
                const Json fields = j.value().value("inference", Json::object());
                for (const auto& [key, value] : fields.items())
                    sets += fmt::format("{}{} {}", sets.empty() ? "" : ", ", key, value.dump());
                text += fmt::format("{:<16} {}\n", name, sets);
            }
            out["engines"] = list;
        }
        if (o->format == "json") return emit_json(io, out);
        io.out << text;
        return kExitOk;
    };
}

}  // namespace sm::cli
